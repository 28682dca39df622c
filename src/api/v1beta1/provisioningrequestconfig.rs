//! ProvisioningRequestConfig v1beta1: same fields as v1beta2.

use std::collections::BTreeMap;

use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::api::schema;
use crate::api::v1beta2::{
    PodSetMergePolicy, ProvisioningRequestPodSetUpdates, ProvisioningRequestRetryStrategy,
};

/// Desired state of a ProvisioningRequestConfig (v1beta1).
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, Default, JsonSchema, PartialEq)]
#[kube(
    group = "kueue.x-k8s.io",
    version = "v1beta1",
    kind = "ProvisioningRequestConfig",
    plural = "provisioningrequestconfigs",
    shortname = "prc",
    derive = "PartialEq",
    derive = "Default",
    served = true,
    storage = false,
    deprecated = "This version is deprecated. Use v1beta2 instead.",
    doc = "Parameters of the ProvisioningRequest admission check (cluster-autoscaler capacity requests)."
)]
#[serde(rename_all = "camelCase")]
pub struct ProvisioningRequestConfigSpec {
    /// ProvisioningClass of the ProvisioningRequests created for workloads.
    #[schemars(length(max = 253), pattern(schema::DNS1123_SUBDOMAIN))]
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
