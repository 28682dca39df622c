//! Schema fragments that `#[derive(JsonSchema)]` cannot express on its own.
//!
//! Kueue's CRDs restrict some string fields to a subset of a shared Go enum type (for example
//! `reclaimWithinCohort` accepts `Never`, `LowerPriority` and `Any`, while `withinClusterQueue`
//! accepts `LowerOrNewerEqualPriority` instead of `Any`). The Rust types keep Kueue's shared enum;
//! the functions here give each field its exact schema, including the apiserver-applied default.

use schemars::{Schema, SchemaGenerator, json_schema};

/// Pattern of a DNS-1123 subdomain: the name of most Kubernetes objects.
pub(crate) const DNS1123_SUBDOMAIN: &str =
    r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$";

/// Pattern of a DNS-1123 label: PodSet names and other single-segment names.
pub(crate) const DNS1123_LABEL: &str = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$";

/// Pattern of a qualified name with an optional DNS prefix, as label keys use.
pub(crate) const QUALIFIED_NAME: &str = r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$";

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
