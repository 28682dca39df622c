//! WorkloadPriorityClass v1beta1: same schema as v1beta2.

use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The fields of a WorkloadPriorityClass (v1beta1), which sit at the top level of the object.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, Default, JsonSchema, PartialEq)]
#[kube(
    group = "kueue.x-k8s.io",
    version = "v1beta1",
    kind = "WorkloadPriorityClass",
    plural = "workloadpriorityclasses",
    shortname = "wpc",
    no_spec,
    derive = "PartialEq",
    derive = "Default",
    served = true,
    storage = false,
    deprecated = "This version is deprecated. Use v1beta2 instead.",
    doc = "A named priority value for workloads, independent of the pods' priority.",
    printcolumn(
        name = "Value",
        type_ = "integer",
        description = "Priority of the workloads of this class",
        json_path = ".value"
    )
)]
#[serde(rename_all = "camelCase")]
pub struct WorkloadPriorityClassFields {
    /// Priority of the workloads of this class; higher is admitted first.
    pub value: i32,

    /// What the class is for.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    #[schemars(length(max = 2048))]
    pub description: String,
}
