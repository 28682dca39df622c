//! WorkloadPriorityClass: a named priority for workloads, independent of pod priority.

use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The fields of a WorkloadPriorityClass, which sit at the top level of the object.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, Default, JsonSchema, PartialEq)]
#[kube(
    group = "kueue.x-k8s.io",
    version = "v1beta2",
    kind = "WorkloadPriorityClass",
    plural = "workloadpriorityclasses",
    shortname = "wpc",
    no_spec,
    derive = "PartialEq",
    derive = "Default",
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
