//! The committed table of Kubernetes schema markers (`src/api/kubernetes_markers.json`) must be
//! what Kubernetes' own OpenAPI, in the pinned `k8s.io/kubernetes` module of the test control
//! plane, says about the Kubernetes types Kueue's CRDs embed.
//!
//! Regenerate it with `KUOTA_UPDATE_MARKERS=1 cargo test --test kubernetes_markers`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use kuota::api::kubernetes_schema::{MarkerTable, Markers, NodeKind, ROOTS};
use serde_json::Value;

/// The pinned `k8s.io/kubernetes` module of the control plane (`dev/cluster/go/k8s`).
fn kubernetes_module() -> PathBuf {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("dev/cluster/go/k8s");
    let output = Command::new("go")
        .args(["mod", "download", "k8s.io/kubernetes"])
        .current_dir(&dir)
        .output()
        .expect("run go mod download");
    assert!(
        output.status.success(),
        "go mod download: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let output = Command::new("go")
        .args([
            "list",
            "-m",
            "-f",
            "{{.Dir}} {{.Version}}",
            "k8s.io/kubernetes",
        ])
        .current_dir(&dir)
        .output()
        .expect("run go list");
    assert!(output.status.success(), "go list failed");
    let line = String::from_utf8_lossy(&output.stdout);
    PathBuf::from(line.split_whitespace().next().expect("a module directory"))
}

/// The definition a property schema names, through `$ref` or a one-element `allOf`.
fn reference(schema: &Value) -> Option<&str> {
    fn name(schema: &Value) -> Option<&str> {
        schema["$ref"]
            .as_str()?
            .strip_prefix("#/components/schemas/")
    }
    name(schema).or_else(|| schema["allOf"].as_array()?.first().and_then(name))
}

/// How a node sits in its parent.
#[derive(Clone, Copy, PartialEq)]
enum Place {
    /// The root definition.
    Root,
    /// A field its parent does not require: the only place a default takes effect.
    OptionalField,
    /// A required field, a list item or a map value. Kubernetes' OpenAPI gives these the zero
    /// value of their Go type as `default`; it never applies, and CRD schemas leave it out.
    Other,
}

/// Markers of `schema` (a definition or an inline schema) at `path`, and of everything under it.
fn walk(
    definitions: &serde_json::Map<String, Value>,
    schema: &Value,
    path: &str,
    place: Place,
    table: &mut BTreeMap<String, Markers>,
) {
    let mut markers = Markers {
        default: schema
            .get("default")
            .filter(|v| place == Place::OptionalField && !v.is_object() && !v.is_array())
            .cloned(),
        ..Markers::default()
    };
    let resolved = match reference(schema) {
        Some("io.k8s.apimachinery.pkg.api.resource.Quantity") => {
            markers.kind = Some(NodeKind::Quantity);
            None
        }
        Some("io.k8s.apimachinery.pkg.util.intstr.IntOrString") => {
            markers.kind = Some(NodeKind::IntOrString);
            None
        }
        Some("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta") if place != Place::Root => {
            markers.kind = Some(NodeKind::EmbeddedObjectMeta);
            None
        }
        Some(name) => Some(&definitions[name]),
        None => Some(schema),
    };
    let own = [schema, resolved.unwrap_or(&Value::Null)];
    for source in own {
        if let Some(v) = source["x-kubernetes-list-type"].as_str() {
            markers.list_type = Some(v.to_owned());
        }
        if let Some(v) = source["x-kubernetes-list-map-keys"].as_array() {
            markers.list_map_keys = Some(
                v.iter()
                    .filter_map(|k| k.as_str().map(str::to_owned))
                    .collect(),
            );
        }
        if let Some(v) = source["x-kubernetes-map-type"].as_str() {
            markers.map_type = Some(v.to_owned());
        }
    }
    let Some(node) = resolved else {
        table.insert(path.to_owned(), markers);
        return;
    };
    if let Some(properties) = node["properties"].as_object() {
        let required: Vec<String> = node["required"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|k| k.as_str().map(str::to_owned))
            .collect();
        for (name, property) in properties {
            let place = if required.contains(name) {
                Place::Other
            } else {
                Place::OptionalField
            };
            walk(
                definitions,
                property,
                &format!("{path}.{name}"),
                place,
                table,
            );
        }
        markers.required = Some(required);
    }
    if let Some(items) = node.get("items") {
        walk(
            definitions,
            items,
            &format!("{path}[]"),
            Place::Other,
            table,
        );
    }
    if let Some(values) = node.get("additionalProperties").filter(|v| v.is_object()) {
        walk(
            definitions,
            values,
            &format!("{path}{{}}"),
            Place::Other,
            table,
        );
    }
    if markers != Markers::default() {
        table.insert(path.to_owned(), markers);
    }
}

fn generated() -> MarkerTable {
    let module = kubernetes_module();
    let source = "api/openapi-spec/v3/api__v1_openapi.json";
    let text = std::fs::read_to_string(module.join(source)).expect("Kubernetes' core OpenAPI");
    let openapi: Value = serde_json::from_str(&text).expect("OpenAPI JSON");
    let definitions = openapi["components"]["schemas"]
        .as_object()
        .expect("OpenAPI components");
    let version = module
        .file_name()
        .and_then(|n| n.to_str())
        .and_then(|n| n.split_once('@'))
        .map(|(_, v)| v.to_owned())
        .expect("a versioned module directory");
    let roots = ROOTS
        .iter()
        .map(|root| {
            let mut table = BTreeMap::new();
            walk(
                definitions,
                &definitions[*root],
                "",
                Place::Root,
                &mut table,
            );
            ((*root).to_owned(), table)
        })
        .collect();
    MarkerTable {
        source: format!("k8s.io/kubernetes {version} {source}"),
        roots,
    }
}

#[test]
fn committed_markers_are_kubernetes_own() {
    let expected = generated();
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/api/kubernetes_markers.json");
    if std::env::var_os("KUOTA_UPDATE_MARKERS").is_some_and(|v| v == "1") {
        let text = serde_json::to_string_pretty(&expected).expect("markers as JSON") + "\n";
        std::fs::write(&path, text).expect("write the markers table");
    }
    let text = std::fs::read_to_string(&path).expect("the committed markers table");
    let committed: MarkerTable = serde_json::from_str(&text).expect("committed table");
    assert!(
        committed == expected,
        "src/api/kubernetes_markers.json is out of date with {}; run \
         `KUOTA_UPDATE_MARKERS=1 cargo test --test kubernetes_markers` and commit the result",
        expected.source
    );
}
