//! Schema fragments that `#[derive(JsonSchema)]` cannot express on its own.
//!
//! Kueue's CRDs restrict some string fields to a subset of a shared Go enum type (for example
//! `reclaimWithinCohort` accepts `Never`, `LowerPriority` and `Any`, while `withinClusterQueue`
//! accepts `LowerOrNewerEqualPriority` instead of `Any`). The Rust types keep Kueue's shared enum;
//! the functions here give each field its exact schema, including the apiserver-applied default.

use schemars::{Schema, SchemaGenerator, json_schema};

pub(crate) use super::kubernetes_schema::QUANTITY_PATTERN;

/// Pattern of a DNS-1123 subdomain: the name of most Kubernetes objects.
pub(crate) const DNS1123_SUBDOMAIN: &str =
    r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$";

/// Pattern of a DNS-1123 label: PodSet names and other single-segment names.
pub(crate) const DNS1123_LABEL: &str = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$";

/// Pattern of a qualified name with an optional DNS prefix, as label keys use.
pub(crate) const QUALIFIED_NAME: &str = r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$";

/// Drops the default the schema generator derives from `#[serde(default)]` where Kueue's schema
/// has none (the counters of a queue's status), for `#[schemars(transform = ...)]`.
pub(crate) fn without_default(schema: &mut Schema) {
    schema.remove("default");
}

/// Adds to a list of `metav1.Condition` the validation apimachinery declares for each condition,
/// for `#[schemars(transform = ...)]`.
pub(crate) fn condition_validations(schema: &mut Schema) {
    let Some(properties) = schema
        .get_mut("items")
        .and_then(|items| items.get_mut("properties"))
        .and_then(serde_json::Value::as_object_mut)
    else {
        return;
    };
    let rules = [
        ("message", json_schema!({"maxLength": 32768})),
        ("observedGeneration", json_schema!({"minimum": 0})),
        (
            "reason",
            json_schema!({
                "maxLength": 1024,
                "minLength": 1,
                "pattern": "^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$",
            }),
        ),
        (
            "status",
            json_schema!({"enum": ["True", "False", "Unknown"]}),
        ),
        (
            "type",
            json_schema!({"maxLength": 316, "pattern": QUALIFIED_NAME}),
        ),
    ];
    for (field, rule) in rules {
        if let Some(property) = properties
            .get_mut(field)
            .and_then(serde_json::Value::as_object_mut)
        {
            property.extend(
                rule.as_object()
                    .into_iter()
                    .flatten()
                    .map(|(k, v)| (k.clone(), v.clone())),
            );
        }
    }
}

/// A map of PodSet resources to the names of the flavors assigned to them.
pub(crate) fn flavor_names(_: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "type": "object",
        "additionalProperties": {
            "type": "string",
            "maxLength": 253,
            "pattern": DNS1123_SUBDOMAIN,
        },
    })
}

/// A ProvisioningRequestConfig's parameters: at most 100, each value at most 255 characters.
pub(crate) fn provisioning_parameters(_: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "type": "object",
        "maxProperties": 100,
        "additionalProperties": {
            "type": "string",
            "maxLength": 255,
        },
    })
}

/// A map of resource names to quantities.
pub(crate) fn quantities(_: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "type": "object",
        "additionalProperties": {
            "x-kubernetes-int-or-string": true,
            "pattern": QUANTITY_PATTERN,
        },
    })
}

fn string_enum(values: &[&str], default: &str) -> Schema {
    json_schema!({
        "type": "string",
        "enum": values,
        "default": default,
    })
}

/// `preemption.reclaimWithinCohort`: `Never` (default), `LowerPriority` or `Any`.
pub(crate) fn reclaim_within_cohort(_: &mut SchemaGenerator) -> Schema {
    string_enum(&["Never", "LowerPriority", "Any"], "Never")
}

/// `preemption.withinClusterQueue`: `Never` (default), `LowerPriority` or `LowerOrNewerEqualPriority`.
pub(crate) fn within_cluster_queue(_: &mut SchemaGenerator) -> Schema {
    string_enum(
        &["Never", "LowerPriority", "LowerOrNewerEqualPriority"],
        "Never",
    )
}

/// `flavorFungibility.whenCanBorrow` in v1beta2: `MayStopSearch` (default) or `TryNextFlavor`.
pub(crate) fn when_can_borrow(_: &mut SchemaGenerator) -> Schema {
    string_enum(&["MayStopSearch", "TryNextFlavor"], "MayStopSearch")
}

/// `flavorFungibility.whenCanPreempt` in v1beta2: `MayStopSearch` or `TryNextFlavor` (default).
pub(crate) fn when_can_preempt(_: &mut SchemaGenerator) -> Schema {
    string_enum(&["MayStopSearch", "TryNextFlavor"], "TryNextFlavor")
}

/// `flavorFungibility.whenCanBorrow` in v1beta1, which still accepts the deprecated `Borrow`.
pub(crate) fn when_can_borrow_v1beta1(_: &mut SchemaGenerator) -> Schema {
    string_enum(
        &["MayStopSearch", "TryNextFlavor", "Borrow"],
        "MayStopSearch",
    )
}

/// `flavorFungibility.whenCanPreempt` in v1beta1, which still accepts the deprecated `Preempt`.
pub(crate) fn when_can_preempt_v1beta1(_: &mut SchemaGenerator) -> Schema {
    string_enum(
        &["MayStopSearch", "TryNextFlavor", "Preempt"],
        "TryNextFlavor",
    )
}

/// CEL rules Kueue puts on every list of tolerations it copies into pod templates.
pub(crate) fn toleration_rules() -> serde_json::Value {
    serde_json::json!([
        {
            "rule": "self.all(x, !has(x.key) ? x.operator == 'Exists' : true)",
            "message": "operator must be Exists when 'key' is empty, which means 'match all values and all keys'",
        },
        {
            "rule": "self.all(x, has(x.tolerationSeconds) ? x.effect == 'NoExecute' : true)",
            "message": "effect must be 'NoExecute' when 'tolerationSeconds' is set",
        },
        {
            "rule": "self.all(x, !has(x.operator) || x.operator in ['Equal', 'Exists'])",
            "message": "supported toleration values: 'Equal'(default), 'Exists'",
        },
        {
            "rule": "self.all(x, has(x.operator) && x.operator == 'Exists' ? !has(x.value) : true)",
            "message": "a value must be empty when 'operator' is 'Exists'",
        },
        {
            "rule": "self.all(x, !has(x.effect) || x.effect in ['NoSchedule', 'PreferNoSchedule', 'NoExecute'])",
            "message": "supported taint effect values: 'NoSchedule', 'PreferNoSchedule', 'NoExecute'",
        },
    ])
}
