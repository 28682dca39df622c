//! ClusterQueue v1beta1: `cohort` instead of `cohortName`, a plain `admissionChecks` list beside
//! `admissionChecksStrategy`, and the deprecated flavor fungibility values `Borrow`/`Preempt`.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, LabelSelector, Time};
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::common::FairSharingStatus;
use crate::api::schema;
use crate::api::v1beta2::{
    self, AdmissionChecksStrategy, AdmissionScope, ClusterQueuePreemption, FairSharing,
    FlavorFungibilityPreference, FlavorUsage, QueueingStrategy, ResourceGroup, StopPolicy,
};

/// Desired state of a ClusterQueue (v1beta1).
#[expect(
    clippy::duplicated_attributes,
    reason = "each kube printcolumn repeats keys such as type_ by design"
)]
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, Default, JsonSchema, PartialEq)]
#[kube(
    group = "kueue.x-k8s.io",
    version = "v1beta1",
    kind = "ClusterQueue",
    plural = "clusterqueues",
    shortname = "cq",
    status = "ClusterQueueStatus",
    derive = "PartialEq",
    derive = "Default",
    served = true,
    storage = false,
    deprecated = "This version is deprecated. Use v1beta2 instead.",
    doc = "A cluster-scoped pool of quota, organised in resource groups and flavors."
)]
#[kube(printcolumn(
    name = "Cohort",
    type_ = "string",
    description = "Cohort the ClusterQueue borrows from and lends to",
    json_path = ".spec.cohort"
))]
#[kube(printcolumn(
    name = "Strategy",
    type_ = "string",
    description = "Queueing strategy of the ClusterQueue",
    json_path = ".spec.queueingStrategy",
    priority = 1
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
    json_path = ".status.admittedWorkloads",
    priority = 1
))]
#[serde(rename_all = "camelCase")]
#[schemars(extend("x-kubernetes-validations" = [{
    "rule": "!has(self.cohort) && has(self.resourceGroups) ? self.resourceGroups.all(rg, rg.flavors.all(f, f.resources.all(r, !has(r.borrowingLimit)))) : true",
    "message": "borrowingLimit must be nil when cohort is empty",
}]))]
pub struct ClusterQueueSpec {
    /// Groups of resources with their quotas per flavor.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 16), extend("x-kubernetes-list-type" = "atomic"))]
    pub resource_groups: Vec<ResourceGroup>,

    /// Cohort this ClusterQueue belongs to (`cohortName` in v1beta2).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 253), pattern(schema::DNS1123_SUBDOMAIN))]
    pub cohort: Option<String>,

    /// How pending workloads are ordered and whether an inadmissible head blocks the others.
    #[serde(default)]
    pub queueing_strategy: QueueingStrategy,

    /// Namespaces allowed to submit workloads; unset allows none, `{}` allows all.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::api::kubernetes_schema::marked::<LabelSelector>")]
    pub namespace_selector: Option<LabelSelector>,

    /// Whether to try the next flavor before borrowing or preempting in the current one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = {}))]
    pub flavor_fungibility: Option<FlavorFungibility>,

    /// Preemption policies.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = {}))]
    pub preemption: Option<ClusterQueuePreemption>,

    /// AdmissionChecks every workload of the queue must pass.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(inner(length(max = 316)))]
    pub admission_checks: Vec<String>,

    /// AdmissionChecks a workload must pass, optionally only for some flavors.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub admission_checks_strategy: Option<AdmissionChecksStrategy>,

    /// Stops new reservations (`Hold`) and also evicts admitted workloads (`HoldAndDrain`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = "None"))]
    pub stop_policy: Option<StopPolicy>,

    /// Weight of this ClusterQueue under fair sharing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fair_sharing: Option<FairSharing>,

    /// Admission fair sharing between the LocalQueues of this ClusterQueue.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub admission_scope: Option<AdmissionScope>,
}

/// Whether a search over flavors stops at the current one, with v1beta1's deprecated names.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, JsonSchema, PartialEq, Eq, Hash)]
pub enum FlavorFungibilityPolicy {
    /// Stop at the current flavor.
    MayStopSearch,
    /// Try the next flavor first.
    TryNextFlavor,
    /// Deprecated name of `MayStopSearch` for `whenCanBorrow`.
    Borrow,
    /// Deprecated name of `MayStopSearch` for `whenCanPreempt`.
    Preempt,
}

/// How the flavor search treats borrowing and preemption (v1beta1).
#[derive(Serialize, Deserialize, Clone, Debug, JsonSchema, PartialEq)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("x-kubernetes-validations" = [{
    "rule": "!has(self.preference) || (self.whenCanBorrow == 'TryNextFlavor' && self.whenCanPreempt == 'TryNextFlavor')",
    "message": "preference can only be set when both whenCanBorrow and whenCanPreempt are TryNextFlavor",
}]))]
pub struct FlavorFungibility {
    /// What to do when a workload fits the current flavor only by borrowing.
    #[serde(default = "may_stop_search")]
    #[schemars(schema_with = "schema::when_can_borrow_v1beta1")]
    pub when_can_borrow: FlavorFungibilityPolicy,

    /// What to do when a workload fits the current flavor only by preempting.
    #[serde(default = "try_next_flavor")]
    #[schemars(schema_with = "schema::when_can_preempt_v1beta1")]
    pub when_can_preempt: FlavorFungibilityPolicy,

    /// Tie-break between borrowing and preemption when every flavor needs one of them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preference: Option<FlavorFungibilityPreference>,
}

impl Default for FlavorFungibility {
    fn default() -> Self {
        Self {
            when_can_borrow: may_stop_search(),
            when_can_preempt: try_next_flavor(),
            preference: None,
        }
    }
}

fn may_stop_search() -> FlavorFungibilityPolicy {
    FlavorFungibilityPolicy::MayStopSearch
}

fn try_next_flavor() -> FlavorFungibilityPolicy {
    FlavorFungibilityPolicy::TryNextFlavor
}

/// Observed state of a ClusterQueue (v1beta1).
#[derive(Serialize, Deserialize, Clone, Debug, Default, JsonSchema, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ClusterQueueStatus {
    /// Latest observations; the `Active` condition tells whether the queue can admit.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(
        transform = schema::condition_validations,
        extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["type"])
    )]
    pub conditions: Vec<Condition>,

    /// Quota reserved by workloads of this queue, per flavor and resource.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(
        length(max = 64),
        extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["name"])
    )]
    pub flavors_reservation: Vec<FlavorUsage>,

    /// Quota used by admitted workloads of this queue, per flavor and resource.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(
        length(max = 64),
        extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["name"])
    )]
    pub flavors_usage: Vec<FlavorUsage>,

    /// Workloads waiting for quota.
    #[serde(default)]
    #[schemars(transform = schema::without_default)]
    pub pending_workloads: i32,

    /// Workloads holding a quota reservation.
    #[serde(default)]
    #[schemars(transform = schema::without_default)]
    pub reserving_workloads: i32,

    /// Admitted workloads that have not finished.
    #[serde(default)]
    #[schemars(transform = schema::without_default)]
    pub admitted_workloads: i32,

    /// Heads of the pending queue (no longer maintained; dropped by conversion).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pending_workloads_status: Option<ClusterQueuePendingWorkloadsStatus>,

    /// Fair-sharing state, recorded when fair sharing is enabled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fair_sharing: Option<FairSharingStatus>,
}

/// Heads of the pending queue of a ClusterQueue.
#[derive(Serialize, Deserialize, Clone, Debug, JsonSchema, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ClusterQueuePendingWorkloadsStatus {
    /// Pending workloads at the head of the queue.
    #[serde(
        default,
        rename = "clusterQueuePendingWorkload",
        skip_serializing_if = "Vec::is_empty"
    )]
    #[schemars(extend("x-kubernetes-list-type" = "atomic"))]
    pub head: Vec<ClusterQueuePendingWorkload>,

    /// When the list last changed.
    pub last_change_time: Time,
}

/// A pending workload.
#[derive(Serialize, Deserialize, Clone, Debug, Default, JsonSchema, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ClusterQueuePendingWorkload {
    /// Name of the workload.
    pub name: String,
    /// Namespace of the workload.
    pub namespace: String,
}

// === Conversion ===

impl From<FlavorFungibility> for v1beta2::FlavorFungibility {
    /// Maps the deprecated `Borrow` and `Preempt` to `MayStopSearch`, as Kueue does.
    fn from(ff: FlavorFungibility) -> Self {
        let policy = |p: FlavorFungibilityPolicy| match p {
            FlavorFungibilityPolicy::TryNextFlavor => {
                v1beta2::FlavorFungibilityPolicy::TryNextFlavor
            }
            FlavorFungibilityPolicy::MayStopSearch
            | FlavorFungibilityPolicy::Borrow
            | FlavorFungibilityPolicy::Preempt => v1beta2::FlavorFungibilityPolicy::MayStopSearch,
        };
        Self {
            when_can_borrow: policy(ff.when_can_borrow),
            when_can_preempt: policy(ff.when_can_preempt),
            preference: ff.preference,
        }
    }
}

impl From<v1beta2::FlavorFungibility> for FlavorFungibility {
    fn from(ff: v1beta2::FlavorFungibility) -> Self {
        let policy = |p: v1beta2::FlavorFungibilityPolicy| match p {
            v1beta2::FlavorFungibilityPolicy::MayStopSearch => {
                FlavorFungibilityPolicy::MayStopSearch
            }
            v1beta2::FlavorFungibilityPolicy::TryNextFlavor => {
                FlavorFungibilityPolicy::TryNextFlavor
            }
        };
        Self {
            when_can_borrow: policy(ff.when_can_borrow),
            when_can_preempt: policy(ff.when_can_preempt),
            preference: ff.preference,
        }
    }
}

impl From<ClusterQueueSpec> for v1beta2::ClusterQueueSpec {
    /// A non-empty `admissionChecks` list becomes an `admissionChecksStrategy` with one rule per
    /// check and no flavor restriction, replacing any strategy given beside it (as Kueue does).
    fn from(spec: ClusterQueueSpec) -> Self {
        let admission_checks_strategy = if spec.admission_checks.is_empty() {
            spec.admission_checks_strategy
        } else {
            Some(AdmissionChecksStrategy {
                admission_checks: spec
                    .admission_checks
                    .into_iter()
                    .map(|name| v1beta2::AdmissionCheckStrategyRule {
                        name,
                        on_flavors: Vec::new(),
                    })
                    .collect(),
            })
        };
        Self {
            resource_groups: spec.resource_groups,
            cohort_name: spec.cohort,
            queueing_strategy: spec.queueing_strategy,
            namespace_selector: spec.namespace_selector,
            flavor_fungibility: spec.flavor_fungibility.map(Into::into),
            preemption: spec.preemption,
            admission_checks_strategy,
            stop_policy: spec.stop_policy,
            fair_sharing: spec.fair_sharing,
            admission_scope: spec.admission_scope,
            concurrent_admission_policy: None,
        }
    }
}

impl From<v1beta2::ClusterQueueSpec> for ClusterQueueSpec {
    /// A strategy whose rules apply to every flavor is written back as the plain
    /// `admissionChecks` list, so that v1beta1 objects using the list survive a round trip.
    /// `concurrentAdmissionPolicy` has no v1beta1 equivalent and is dropped.
    fn from(spec: v1beta2::ClusterQueueSpec) -> Self {
        let (admission_checks, admission_checks_strategy) = match spec.admission_checks_strategy {
            Some(strategy)
                if strategy
                    .admission_checks
                    .iter()
                    .all(|rule| rule.on_flavors.is_empty()) =>
            {
                (
                    strategy
                        .admission_checks
                        .into_iter()
                        .map(|rule| rule.name)
                        .collect(),
                    None,
                )
            }
            strategy => (Vec::new(), strategy),
        };
        Self {
            resource_groups: spec.resource_groups,
            cohort: spec.cohort_name,
            queueing_strategy: spec.queueing_strategy,
            namespace_selector: spec.namespace_selector,
            flavor_fungibility: spec.flavor_fungibility.map(Into::into),
            preemption: spec.preemption,
            admission_checks,
            admission_checks_strategy,
            stop_policy: spec.stop_policy,
            fair_sharing: spec.fair_sharing,
            admission_scope: spec.admission_scope,
        }
    }
}

impl From<ClusterQueueStatus> for v1beta2::ClusterQueueStatus {
    /// `pendingWorkloadsStatus` has no v1beta2 equivalent and is dropped.
    fn from(status: ClusterQueueStatus) -> Self {
        Self {
            conditions: status.conditions,
            flavors_reservation: status.flavors_reservation,
            flavors_usage: status.flavors_usage,
            pending_workloads: status.pending_workloads,
            reserving_workloads: status.reserving_workloads,
            admitted_workloads: status.admitted_workloads,
            fair_sharing: status.fair_sharing.map(Into::into),
        }
    }
}

impl From<v1beta2::ClusterQueueStatus> for ClusterQueueStatus {
    fn from(status: v1beta2::ClusterQueueStatus) -> Self {
        Self {
            conditions: status.conditions,
            flavors_reservation: status.flavors_reservation,
            flavors_usage: status.flavors_usage,
            pending_workloads: status.pending_workloads,
            reserving_workloads: status.reserving_workloads,
            admitted_workloads: status.admitted_workloads,
            pending_workloads_status: None,
            fair_sharing: status.fair_sharing.map(Into::into),
        }
    }
}

impl From<ClusterQueue> for v1beta2::ClusterQueue {
    fn from(cq: ClusterQueue) -> Self {
        Self {
            metadata: cq.metadata,
            spec: cq.spec.into(),
            status: cq.status.map(Into::into),
        }
    }
}

impl From<v1beta2::ClusterQueue> for ClusterQueue {
    fn from(cq: v1beta2::ClusterQueue) -> Self {
        Self {
            metadata: cq.metadata,
            spec: cq.spec.into(),
            status: cq.status.map(Into::into),
        }
    }
}

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;

    use super::*;
    use crate::testing::api_versions::{v1beta1_cluster_queue, v1beta2_cluster_queue};

    #[test]
    fn converts_to_the_equivalent_v1beta2_object() {
        assert_eq!(
            v1beta2::ClusterQueue::from(v1beta1_cluster_queue()),
            v1beta2_cluster_queue()
        );
        assert_eq!(
            ClusterQueue::from(v1beta2_cluster_queue()),
            v1beta1_cluster_queue()
        );
    }

    #[test]
    fn round_trips_through_the_other_version() {
        let v1 = v1beta1_cluster_queue();
        assert_eq!(
            ClusterQueue::from(v1beta2::ClusterQueue::from(v1.clone())),
            v1
        );
        let v2 = v1beta2_cluster_queue();
        assert_eq!(
            v1beta2::ClusterQueue::from(ClusterQueue::from(v2.clone())),
            v2
        );
    }

    #[test]
    fn keeps_a_strategy_that_restricts_flavors() {
        let mut v2 = v1beta2_cluster_queue();
        let strategy = AdmissionChecksStrategy {
            admission_checks: vec![
                v1beta2::AdmissionCheckStrategyRule {
                    name: "provisioning".to_owned(),
                    on_flavors: vec!["spot".to_owned()],
                },
                v1beta2::AdmissionCheckStrategyRule {
                    name: "budget".to_owned(),
                    on_flavors: Vec::new(),
                },
            ],
        };
        v2.spec.admission_checks_strategy = Some(strategy.clone());
        let v1 = ClusterQueue::from(v2.clone());
        assert_eq!(v1.spec.admission_checks, Vec::<String>::new());
        assert_eq!(v1.spec.admission_checks_strategy, Some(strategy));
        assert_eq!(v1beta2::ClusterQueue::from(v1), v2);
    }

    #[test]
    fn admission_checks_list_replaces_a_strategy_given_beside_it() {
        let mut v1 = v1beta1_cluster_queue();
        v1.spec.admission_checks = vec!["budget".to_owned()];
        v1.spec.admission_checks_strategy = Some(AdmissionChecksStrategy {
            admission_checks: vec![v1beta2::AdmissionCheckStrategyRule {
                name: "provisioning".to_owned(),
                on_flavors: vec!["spot".to_owned()],
            }],
        });
        let v2 = v1beta2::ClusterQueue::from(v1);
        assert_eq!(
            v2.spec.admission_checks_strategy,
            Some(AdmissionChecksStrategy {
                admission_checks: vec![v1beta2::AdmissionCheckStrategyRule {
                    name: "budget".to_owned(),
                    on_flavors: Vec::new(),
                }],
            })
        );
    }

    #[test]
    fn deprecated_fungibility_values_become_may_stop_search() {
        let cases = [
            (
                FlavorFungibilityPolicy::Borrow,
                v1beta2::FlavorFungibilityPolicy::MayStopSearch,
            ),
            (
                FlavorFungibilityPolicy::Preempt,
                v1beta2::FlavorFungibilityPolicy::MayStopSearch,
            ),
            (
                FlavorFungibilityPolicy::MayStopSearch,
                v1beta2::FlavorFungibilityPolicy::MayStopSearch,
            ),
            (
                FlavorFungibilityPolicy::TryNextFlavor,
                v1beta2::FlavorFungibilityPolicy::TryNextFlavor,
            ),
        ];
        for (v1, v2) in cases {
            let converted = v1beta2::FlavorFungibility::from(FlavorFungibility {
                when_can_borrow: v1,
                when_can_preempt: v1,
                preference: None,
            });
            assert_eq!(
                (converted.when_can_borrow, converted.when_can_preempt),
                (v2, v2),
                "{v1:?}"
            );
        }
    }

    #[test]
    fn drops_fields_without_counterpart() {
        let mut v1 = v1beta1_cluster_queue();
        let status = v1.status.as_mut().expect("fixture has a status");
        status.pending_workloads_status = Some(ClusterQueuePendingWorkloadsStatus {
            head: vec![ClusterQueuePendingWorkload {
                name: "wl".to_owned(),
                namespace: "ns".to_owned(),
            }],
            last_change_time: crate::testing::api_versions::time("2025-03-01T10:00:00Z"),
        });
        assert_eq!(v1beta2::ClusterQueue::from(v1), v1beta2_cluster_queue());

        let mut v2 = v1beta2_cluster_queue();
        v2.spec.concurrent_admission_policy = Some(v1beta2::ConcurrentAdmissionPolicy::default());
        assert_eq!(ClusterQueue::from(v2), v1beta1_cluster_queue());
    }
}
