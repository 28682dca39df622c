//! Schemas of the Kubernetes types Kueue's CRDs embed (pod templates, label selectors), with the markers Kubernetes itself declares for them.
//!
//! The schemas `k8s-openapi` derives carry the fields and types but not Kubernetes' list and map
//! semantics (`x-kubernetes-list-type`, its keys, `x-kubernetes-map-type`), its scalar defaults
//! (`protocol: TCP`), which fields are required, or the quantity format. Without them the API
//! server would merge a Workload's pod template differently under server-side apply, store it
//! undefaulted and refuse templates Kubernetes accepts. The table `kubernetes_markers.json` is
//! generated from Kubernetes' own OpenAPI (`tests/kubernetes_markers.rs` checks it is current).

use std::collections::BTreeMap;
use std::sync::LazyLock;

use schemars::{JsonSchema, Schema, SchemaGenerator};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// The Kubernetes definitions whose markers the table holds.
pub const ROOTS: [&str; 2] = [
    "io.k8s.api.core.v1.PodTemplateSpec",
    "io.k8s.apimachinery.pkg.apis.meta.v1.LabelSelector",
];

/// The committed table of markers.
const MARKERS_JSON: &str = include_str!("kubernetes_markers.json");

/// Pattern of a resource quantity, as the API server's CRD schemas for `resource.Quantity` have it.
pub const QUANTITY_PATTERN: &str = r"^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$";

/// Fields of an object's metadata embedded in another object (a template's): the only ones the
/// API server keeps there.
const EMBEDDED_METADATA_FIELDS: [&str; 5] =
    ["annotations", "finalizers", "labels", "name", "namespace"];

/// Markers of every root definition, by the path of each node under it (`.field`, `[]` for list
/// items, `{}` for map values; `""` for the root itself).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct MarkerTable {
    /// Where the table was generated from.
    pub source: String,
    /// Markers by root definition, then by path.
    pub roots: BTreeMap<String, BTreeMap<String, Markers>>,
}

/// What Kubernetes declares about one node of a schema.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Markers {
    /// A node of a special kind.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<NodeKind>,
    /// The scalar default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default: Option<Value>,
    /// The required fields of an object node (empty: none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub required: Option<Vec<String>>,
    /// `x-kubernetes-list-type`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub list_type: Option<String>,
    /// `x-kubernetes-list-map-keys`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub list_map_keys: Option<Vec<String>>,
    /// `x-kubernetes-map-type`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub map_type: Option<String>,
}

/// Nodes whose schema is a well-known type rather than their own fields.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum NodeKind {
    /// A `resource.Quantity`: an integer or a string of the quantity pattern.
    Quantity,
    /// An `intstr.IntOrString`.
    IntOrString,
    /// The metadata of an embedded object.
    EmbeddedObjectMeta,
}

static TABLE: LazyLock<MarkerTable> = LazyLock::new(|| {
    // The committed table is checked by tests/kubernetes_markers.rs, so it always parses.
    serde_json::from_str(MARKERS_JSON).expect("src/api/kubernetes_markers.json is a marker table")
});

/// The schema of `T` with Kubernetes' markers, for `#[schemars(schema_with = ...)]`.
pub fn marked<T: JsonSchema>(generator: &mut SchemaGenerator) -> Schema {
    let mut schema = generator.subschema_for::<T>();
    if let Some(markers) = TABLE.roots.get(T::schema_name().as_ref()) {
        apply(&mut schema, markers);
    }
    schema
}

/// Sets `markers` on the nodes of `schema` they name; a path `schema` does not have is skipped
/// (the crate's tests check that every path of the table exists).
fn apply(schema: &mut Schema, markers: &BTreeMap<String, Markers>) {
    for (path, node_markers) in markers {
        if let Some(node) = node_at(schema.as_object_mut(), path) {
            mark(node, node_markers);
        }
    }
}

/// The node at `path` (`.a.b[]{}.c`) under `node`.
fn node_at<'a>(
    node: Option<&'a mut Map<String, Value>>,
    path: &str,
) -> Option<&'a mut Map<String, Value>> {
    let mut node = node?;
    let mut rest = path;
    while !rest.is_empty() {
        let (next, remaining) = if let Some(after) = rest.strip_prefix("[]") {
            (node.get_mut("items")?, after)
        } else if let Some(after) = rest.strip_prefix("{}") {
            (node.get_mut("additionalProperties")?, after)
        } else {
            let after = rest.strip_prefix('.')?;
            let end = after.find(['.', '[', '{']).unwrap_or(after.len());
            let (name, remaining) = after.split_at(end);
            (node.get_mut("properties")?.get_mut(name)?, remaining)
        };
        node = next.as_object_mut()?;
        rest = remaining;
    }
    Some(node)
}

fn mark(node: &mut Map<String, Value>, markers: &Markers) {
    match markers.kind {
        Some(NodeKind::Quantity) => {
            node.insert("pattern".to_owned(), QUANTITY_PATTERN.into());
        }
        Some(NodeKind::EmbeddedObjectMeta) => {
            if let Some(Value::Object(properties)) = node.get_mut("properties") {
                properties.retain(|name, _| EMBEDDED_METADATA_FIELDS.contains(&name.as_str()));
            }
        }
        Some(NodeKind::IntOrString) | None => {}
    }
    if let Some(default) = &markers.default {
        node.insert("default".to_owned(), default.clone());
    }
    match markers.required.as_deref() {
        Some([]) => {
            node.remove("required");
        }
        Some(required) => {
            node.insert("required".to_owned(), required.into());
        }
        None => {}
    }
    let extensions = [
        (
            "x-kubernetes-list-type",
            markers.list_type.clone().map(Value::from),
        ),
        (
            "x-kubernetes-list-map-keys",
            markers.list_map_keys.clone().map(Value::from),
        ),
        (
            "x-kubernetes-map-type",
            markers.map_type.clone().map(Value::from),
        ),
    ];
    for (key, value) in extensions {
        if let Some(value) = value {
            node.insert(key.to_owned(), value);
        }
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::PodTemplateSpec;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
    use pretty_assertions::assert_eq;

    use super::*;

    fn unmarked<T: JsonSchema>() -> Schema {
        let mut settings = schemars::generate::SchemaSettings::openapi3();
        settings.inline_subschemas = true;
        settings.into_generator().subschema_for::<T>()
    }

    fn missing_paths<T: JsonSchema>() -> Vec<String> {
        let mut schema = unmarked::<T>();
        TABLE.roots[T::schema_name().as_ref()]
            .keys()
            .filter(|path| node_at(schema.as_object_mut(), path).is_none())
            .cloned()
            .collect()
    }

    #[test]
    fn every_path_of_the_table_is_in_the_derived_schema() {
        assert_eq!(missing_paths::<PodTemplateSpec>(), Vec::<String>::new());
        assert_eq!(missing_paths::<LabelSelector>(), Vec::<String>::new());
        assert_eq!(
            TABLE.roots.keys().map(String::as_str).collect::<Vec<_>>(),
            {
                let mut roots = ROOTS.to_vec();
                roots.sort_unstable();
                roots
            }
        );
    }

    #[test]
    fn a_pod_template_gets_kubernetes_merge_keys_defaults_and_quantities() {
        let mut settings = schemars::generate::SchemaSettings::openapi3();
        settings.inline_subschemas = true;
        let mut schema = marked::<PodTemplateSpec>(&mut settings.into_generator());
        let node = |schema: &mut Schema, path: &str| {
            Value::Object(node_at(schema.as_object_mut(), path).expect(path).clone())
        };
        let containers = node(&mut schema, ".spec.containers");
        assert_eq!(containers["x-kubernetes-list-type"], "map");
        assert_eq!(
            containers["x-kubernetes-list-map-keys"],
            serde_json::json!(["name"])
        );
        assert_eq!(
            node(&mut schema, ".spec.containers[].ports[].protocol")["default"],
            "TCP"
        );
        assert_eq!(
            node(&mut schema, ".spec.containers[].resources.limits{}")["pattern"],
            QUANTITY_PATTERN
        );
        let metadata = node(&mut schema, ".metadata");
        assert_eq!(
            metadata["properties"]
                .as_object()
                .expect("metadata properties")
                .keys()
                .collect::<Vec<_>>(),
            EMBEDDED_METADATA_FIELDS.to_vec()
        );
        assert_eq!(
            node(&mut schema, ".spec.imagePullSecrets[]").get("required"),
            None,
            "a LocalObjectReference's name may be left out, as Kubernetes allows"
        );
    }
}
