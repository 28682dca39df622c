//! ProvisioningRequestConfig: parameters of the ProvisioningRequest admission check.

use std::collections::BTreeMap;

use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::api::schema;

/// Desired state of a ProvisioningRequestConfig.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, Default, JsonSchema, PartialEq)]
#[kube(
    group = "kueue.x-k8s.io",
    version = "v1beta2",
    kind = "ProvisioningRequestConfig",
    plural = "provisioningrequestconfigs",
    shortname = "prc",
    derive = "PartialEq",
    derive = "Default",
    doc = "Parameters of the ProvisioningRequest admission check (cluster-autoscaler capacity requests)."
)]
#[serde(rename_all = "camelCase")]
pub struct ProvisioningRequestConfigSpec {
    /// ProvisioningClass of the ProvisioningRequests created for workloads.
    #[schemars(length(min = 1, max = 253), pattern(schema::DNS1123_SUBDOMAIN))]
    pub provisioning_class_name: String,

    /// Parameters passed to the ProvisioningRequests.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    #[schemars(schema_with = "schema::provisioning_parameters")]
    pub parameters: BTreeMap<String, String>,

    /// Resources taken into account when building ProvisioningRequests; empty means all.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 100), extend("x-kubernetes-list-type" = "set"))]
    pub managed_resources: Vec<String>,

    /// Backoff when a ProvisioningRequest fails.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = {"backoffLimitCount": 3, "backoffBaseSeconds": 60, "backoffMaxSeconds": 1800}))]
    pub retry_strategy: Option<ProvisioningRequestRetryStrategy>,

    /// Node selector entries copied from the provisioning class details into the pods.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pod_set_updates: Option<ProvisioningRequestPodSetUpdates>,

    /// How PodSets are merged into the pod sets of one ProvisioningRequest.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pod_set_merge_policy: Option<PodSetMergePolicy>,
}

/// How PodSets of a workload are merged in a ProvisioningRequest.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, JsonSchema, PartialEq, Eq, Hash)]
pub enum PodSetMergePolicy {
    /// Merge PodSets whose pod templates are identical.
    IdenticalPodTemplates,
    /// Merge PodSets whose scheduling requirements are identical.
    IdenticalWorkloadSchedulingRequirements,
}

/// Retry backoff of a ProvisioningRequest.
#[derive(Serialize, Deserialize, Clone, Debug, Default, JsonSchema, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ProvisioningRequestRetryStrategy {
    /// Retries before the workload is rejected.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = 3))]
    pub backoff_limit_count: Option<i32>,

    /// Base of the exponential backoff, in seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = 60))]
    pub backoff_base_seconds: Option<i32>,

    /// Upper bound of the backoff, in seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = 1800))]
    pub backoff_max_seconds: Option<i32>,
}

/// Pod template updates taken from the ProvisioningRequest.
#[derive(Serialize, Deserialize, Clone, Debug, Default, JsonSchema, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ProvisioningRequestPodSetUpdates {
    /// Node selector entries to add.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(
        length(max = 8),
        extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["key"])
    )]
    pub node_selector: Vec<ProvisioningRequestPodSetUpdatesNodeSelector>,
}

/// A node selector entry whose value comes from the provisioning class details.
#[derive(Serialize, Deserialize, Clone, Debug, Default, JsonSchema, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ProvisioningRequestPodSetUpdatesNodeSelector {
    /// Node selector key.
    #[schemars(length(min = 1, max = 317), pattern(schema::QUALIFIED_NAME))]
    pub key: String,

    /// Key of the provisioning class detail holding the value.
    #[schemars(length(min = 1, max = 32768))]
    pub value_from_provisioning_class_detail: String,
}
