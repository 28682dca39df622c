//! LocalQueue: the namespaced queue users submit jobs to, backed by one ClusterQueue.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::common::{FairSharing, StopPolicy};
use crate::api::schema;

/// Desired state of a LocalQueue.
#[expect(
    clippy::duplicated_attributes,
    reason = "each kube printcolumn repeats keys such as type_ by design"
)]
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, Default, JsonSchema, PartialEq)]
#[kube(
    group = "kueue.x-k8s.io",
    version = "v1beta2",
    kind = "LocalQueue",
    plural = "localqueues",
    shortname = "queue",
    shortname = "queues",
    shortname = "lq",
    namespaced,
    status = "LocalQueueStatus",
    derive = "PartialEq",
    derive = "Default",
    doc = "A namespaced queue that submits workloads to one ClusterQueue."
)]
#[kube(printcolumn(
    name = "ClusterQueue",
    type_ = "string",
    description = "ClusterQueue this LocalQueue submits to",
    json_path = ".spec.clusterQueue"
))]
#[kube(printcolumn(
    name = "Pending Workloads",
    type_ = "integer",
    description = "Workloads waiting for quota",
    json_path = ".status.pendingWorkloads"
))]
#[kube(printcolumn(
    name = "Admitted Workloads",
    type_ = "integer",
    description = "Admitted workloads that have not finished",
    json_path = ".status.admittedWorkloads"
))]
#[serde(rename_all = "camelCase")]
pub struct LocalQueueSpec {
    /// ClusterQueue this LocalQueue submits to; cannot change once set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(
        length(max = 253),
        pattern(schema::DNS1123_SUBDOMAIN),
        extend("x-kubernetes-validations" = [{"rule": "self == oldSelf", "message": "field is immutable"}])
    )]
    pub cluster_queue: Option<String>,

    /// Stops new reservations (`Hold`) and also evicts admitted workloads (`HoldAndDrain`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = "None"))]
    pub stop_policy: Option<StopPolicy>,

    /// Weight of this LocalQueue under admission fair sharing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fair_sharing: Option<FairSharing>,
}

/// Observed state of a LocalQueue.
#[derive(Serialize, Deserialize, Clone, Debug, Default, JsonSchema, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct LocalQueueStatus {
    /// Latest observations; the `Active` condition tells whether workloads can be submitted.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(
        transform = schema::condition_validations,
        length(max = 16),
        extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["type"])
    )]
    pub conditions: Vec<Condition>,

    /// Workloads of this queue waiting for quota.
    #[serde(default)]
    #[schemars(transform = schema::without_default)]
    pub pending_workloads: i32,

    /// Workloads of this queue holding a quota reservation.
    #[serde(default)]
    #[schemars(transform = schema::without_default)]
    pub reserving_workloads: i32,

    /// Admitted workloads of this queue that have not finished.
    #[serde(default)]
    #[schemars(transform = schema::without_default)]
    pub admitted_workloads: i32,

    /// Quota reserved by workloads of this queue, per flavor and resource.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(
        length(max = 64),
        extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["name"])
    )]
    pub flavors_reservation: Vec<LocalQueueFlavorUsage>,

    /// Quota used by admitted workloads of this queue, per flavor and resource.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(
        length(max = 64),
        extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["name"])
    )]
    pub flavors_usage: Vec<LocalQueueFlavorUsage>,

    /// Fair-sharing state, recorded when fair sharing is enabled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fair_sharing: Option<LocalQueueFairSharingStatus>,
}

/// Fair-sharing state of a LocalQueue.
#[derive(Serialize, Deserialize, Clone, Debug, Default, JsonSchema, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct LocalQueueFairSharingStatus {
    /// Dominant resource share above nominal quota divided by the weight.
    pub weighted_share: i64,

    /// Usage that admission fair sharing orders LocalQueues by.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub admission_fair_sharing_status: Option<AdmissionFairSharingStatus>,
}

/// Resource usage tracked for admission fair sharing.
#[derive(Serialize, Deserialize, Clone, Debug, JsonSchema, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct AdmissionFairSharingStatus {
    /// Decayed usage per resource.
    #[schemars(schema_with = "schema::quantities")]
    pub consumed_resources: BTreeMap<String, Quantity>,

    /// When the usage was last updated.
    pub last_update: Time,
}

/// Usage of the resources of one flavor by a LocalQueue.
#[derive(Serialize, Deserialize, Clone, Debug, Default, JsonSchema, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct LocalQueueFlavorUsage {
    /// Name of the flavor.
    #[schemars(length(max = 253), pattern(schema::DNS1123_SUBDOMAIN))]
    pub name: String,

    /// Usage per resource.
    #[schemars(
        length(max = 64),
        extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["name"])
    )]
    pub resources: Vec<LocalQueueResourceUsage>,
}

/// Usage of one resource by a LocalQueue.
#[derive(Serialize, Deserialize, Clone, Debug, Default, JsonSchema, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct LocalQueueResourceUsage {
    /// Name of the resource.
    pub name: String,

    /// Quantity in use.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("pattern" = schema::QUANTITY_PATTERN))]
    pub total: Option<Quantity>,
}
