//! LocalQueue v1beta1: usage is reported as `flavorUsage` (v1beta2: `flavorsUsage`), and the
//! status also lists the flavors of the ClusterQueue, which v1beta2 dropped.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::Taint;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::common::FairSharingStatus;
use crate::api::schema;
use crate::api::v1beta2::{self, FairSharing, LocalQueueFlavorUsage, StopPolicy};

/// Desired state of a LocalQueue (v1beta1).
#[expect(
    clippy::duplicated_attributes,
    reason = "each kube printcolumn repeats keys such as type_ by design"
)]
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, Default, JsonSchema, PartialEq)]
#[kube(
    group = "kueue.x-k8s.io",
    version = "v1beta1",
    kind = "LocalQueue",
    plural = "localqueues",
    shortname = "queue",
    shortname = "queues",
    shortname = "lq",
    namespaced,
    status = "LocalQueueStatus",
    derive = "PartialEq",
    derive = "Default",
    served = true,
    storage = false,
    deprecated = "This version is deprecated. Use v1beta2 instead.",
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

/// Observed state of a LocalQueue (v1beta1).
#[derive(Serialize, Deserialize, Clone, Debug, Default, JsonSchema, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct LocalQueueStatus {
    /// Latest observations; the `Active` condition tells whether workloads can be submitted.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(
        transform = schema::condition_validations,
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
    pub flavor_usage: Vec<LocalQueueFlavorUsage>,

    /// Flavors of the ClusterQueue (deprecated; dropped by conversion).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(
        length(max = 64),
        extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["name"])
    )]
    pub flavors: Vec<LocalQueueFlavorStatus>,

    /// Fair-sharing state, recorded when fair sharing is enabled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fair_sharing: Option<FairSharingStatus>,
}

/// A flavor of the ClusterQueue behind a LocalQueue.
#[derive(Serialize, Deserialize, Clone, Debug, Default, JsonSchema, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct LocalQueueFlavorStatus {
    /// Name of the flavor.
    #[schemars(length(max = 253), pattern(schema::DNS1123_SUBDOMAIN))]
    pub name: String,

    /// Resources the flavor provides.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 64), extend("x-kubernetes-list-type" = "set"))]
    pub resources: Vec<String>,

    /// Node labels of the flavor.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    #[schemars(extend("maxProperties" = 8, "x-kubernetes-map-type" = "atomic"))]
    pub node_labels: BTreeMap<String, String>,

    /// Node taints of the flavor.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 8), extend("x-kubernetes-list-type" = "atomic"))]
    pub node_taints: Vec<Taint>,

    /// Topology of the flavor.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub topology: Option<TopologyInfo>,
}

/// Name and levels of a topology.
#[derive(Serialize, Deserialize, Clone, Debug, Default, JsonSchema, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct TopologyInfo {
    /// Name of the Topology.
    #[schemars(length(max = 253), pattern(schema::DNS1123_SUBDOMAIN))]
    pub name: String,

    /// Node labels of the levels.
    #[schemars(length(min = 1, max = 16), extend("x-kubernetes-list-type" = "atomic"))]
    pub levels: Vec<String>,
}

// === Conversion ===

impl From<LocalQueueSpec> for v1beta2::LocalQueueSpec {
    fn from(spec: LocalQueueSpec) -> Self {
        Self {
            cluster_queue: spec.cluster_queue,
            stop_policy: spec.stop_policy,
            fair_sharing: spec.fair_sharing,
        }
    }
}

impl From<v1beta2::LocalQueueSpec> for LocalQueueSpec {
    fn from(spec: v1beta2::LocalQueueSpec) -> Self {
        Self {
            cluster_queue: spec.cluster_queue,
            stop_policy: spec.stop_policy,
            fair_sharing: spec.fair_sharing,
        }
    }
}

impl From<LocalQueueStatus> for v1beta2::LocalQueueStatus {
    /// `flavors` has no v1beta2 equivalent and is dropped.
    fn from(status: LocalQueueStatus) -> Self {
        Self {
            conditions: status.conditions,
            pending_workloads: status.pending_workloads,
            reserving_workloads: status.reserving_workloads,
            admitted_workloads: status.admitted_workloads,
            flavors_reservation: status.flavors_reservation,
            flavors_usage: status.flavor_usage,
            fair_sharing: status.fair_sharing.map(Into::into),
        }
    }
}

impl From<v1beta2::LocalQueueStatus> for LocalQueueStatus {
    fn from(status: v1beta2::LocalQueueStatus) -> Self {
        Self {
            conditions: status.conditions,
            pending_workloads: status.pending_workloads,
            reserving_workloads: status.reserving_workloads,
            admitted_workloads: status.admitted_workloads,
            flavors_reservation: status.flavors_reservation,
            flavor_usage: status.flavors_usage,
            flavors: Vec::new(),
            fair_sharing: status.fair_sharing.map(Into::into),
        }
    }
}

impl From<LocalQueue> for v1beta2::LocalQueue {
    fn from(lq: LocalQueue) -> Self {
        Self {
            metadata: lq.metadata,
            spec: lq.spec.into(),
            status: lq.status.map(Into::into),
        }
    }
}

impl From<v1beta2::LocalQueue> for LocalQueue {
    fn from(lq: v1beta2::LocalQueue) -> Self {
        Self {
            metadata: lq.metadata,
            spec: lq.spec.into(),
            status: lq.status.map(Into::into),
        }
    }
}

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;

    use super::*;
    use crate::testing::api_versions::{v1beta1_local_queue, v1beta2_local_queue};

    #[test]
    fn converts_to_the_equivalent_v1beta2_object() {
        assert_eq!(
            v1beta2::LocalQueue::from(v1beta1_local_queue()),
            v1beta2_local_queue()
        );
        assert_eq!(
            LocalQueue::from(v1beta2_local_queue()),
            v1beta1_local_queue()
        );
    }

    #[test]
    fn round_trips_through_the_other_version() {
        let v1 = v1beta1_local_queue();
        assert_eq!(LocalQueue::from(v1beta2::LocalQueue::from(v1.clone())), v1);
        let v2 = v1beta2_local_queue();
        assert_eq!(v1beta2::LocalQueue::from(LocalQueue::from(v2.clone())), v2);
    }

    #[test]
    fn drops_the_deprecated_flavor_list() {
        let mut v1 = v1beta1_local_queue();
        v1.status.as_mut().expect("fixture has a status").flavors = vec![LocalQueueFlavorStatus {
            name: "spot".to_owned(),
            resources: vec!["cpu".to_owned()],
            ..LocalQueueFlavorStatus::default()
        }];
        assert_eq!(v1beta2::LocalQueue::from(v1), v1beta2_local_queue());
    }
}
