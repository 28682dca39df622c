//! Types shared by several v1beta2 kinds: quota groups, fair sharing and stop policies.

use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::api::schema::{self, DNS1123_SUBDOMAIN};

/// Whether a queue accepts new reservations, and what happens to workloads already admitted.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default, JsonSchema, PartialEq, Eq, Hash)]
pub enum StopPolicy {
    /// The queue works normally.
    #[default]
    None,
    /// No new reservations; admitted workloads run to completion.
    Hold,
    /// No new reservations, and admitted workloads are evicted.
    HoldAndDrain,
}

/// Resources whose quotas are given together, flavor by flavor.
///
/// All resources of one group are assigned the same flavor for a PodSet.
#[derive(Serialize, Deserialize, Clone, Debug, Default, JsonSchema, PartialEq)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("x-kubernetes-validations" = [{
    "rule": "self.flavors.all(x, size(x.resources) == size(self.coveredResources))",
    "message": "flavors must have the same number of resources as the coveredResources",
}]))]
pub struct ResourceGroup {
    /// Names of the resources (`cpu`, `memory`, `nvidia.com/gpu`, ...) the flavors of this group provide.
    #[schemars(length(min = 1, max = 64), extend("x-kubernetes-list-type" = "atomic"))]
    pub covered_resources: Vec<String>,

    /// Flavors in order of preference; each lists a quota for every covered resource, in the
    /// same order as `coveredResources`.
    #[schemars(
        length(min = 1, max = 64),
        extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["name"])
    )]
    pub flavors: Vec<FlavorQuotas>,
}

/// The quotas one ResourceFlavor contributes to a resource group.
#[derive(Serialize, Deserialize, Clone, Debug, Default, JsonSchema, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct FlavorQuotas {
    /// Name of the ResourceFlavor.
    #[schemars(length(max = 253), pattern(DNS1123_SUBDOMAIN))]
    pub name: String,

    /// One quota per covered resource.
    #[schemars(
        length(min = 1, max = 64),
        extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["name"])
    )]
    pub resources: Vec<ResourceQuota>,
}

/// Quota of one resource in one flavor.
#[derive(Serialize, Deserialize, Clone, Debug, Default, JsonSchema, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ResourceQuota {
    /// Name of the resource.
    pub name: String,

    /// Amount of the resource available to workloads of this queue at any time.
    #[schemars(extend("pattern" = schema::QUANTITY_PATTERN))]
    pub nominal_quota: Quantity,

    /// How much more than the nominal quota may be borrowed from the cohort; unset means no limit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("pattern" = schema::QUANTITY_PATTERN))]
    pub borrowing_limit: Option<Quantity>,

    /// How much of the unused nominal quota may be lent to the cohort; unset means all of it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("pattern" = schema::QUANTITY_PATTERN))]
    pub lending_limit: Option<Quantity>,
}

/// Fair-sharing settings of a ClusterQueue, Cohort or LocalQueue.
#[derive(Serialize, Deserialize, Clone, Debug, Default, JsonSchema, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct FairSharing {
    /// Relative weight when competing for unused cohort resources; 0 means always last.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = 1))]
    #[schemars(extend("pattern" = schema::QUANTITY_PATTERN))]
    pub weight: Option<Quantity>,
}

/// Fair-sharing state of a ClusterQueue or Cohort.
#[derive(Serialize, Deserialize, Clone, Debug, Default, JsonSchema, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct FairSharingStatus {
    /// Dominant resource share above nominal quota divided by the weight; 0 when not borrowing.
    pub weighted_share: i64,
}

/// Admission fair sharing settings of a ClusterQueue.
#[derive(Serialize, Deserialize, Clone, Debug, Default, JsonSchema, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct AdmissionScope {
    /// Which admission fair sharing mode applies.
    pub admission_mode: AdmissionMode,
}

/// Admission fair sharing mode.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default, JsonSchema, PartialEq, Eq, Hash)]
pub enum AdmissionMode {
    /// Order workloads by the recent resource usage of their LocalQueue.
    UsageBasedAdmissionFairSharing,
    /// Admission fair sharing is off for this ClusterQueue.
    #[default]
    NoAdmissionFairSharing,
}
