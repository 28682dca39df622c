//! ClusterQueue: a cluster-scoped pool of quota that LocalQueues submit workloads to.

use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, LabelSelector};
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::common::{AdmissionScope, FairSharing, FairSharingStatus, ResourceGroup, StopPolicy};
use crate::api::schema;

/// Desired state of a ClusterQueue.
#[expect(
    clippy::duplicated_attributes,
    reason = "each kube printcolumn repeats keys such as type_ by design"
)]
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, Default, JsonSchema, PartialEq)]
#[kube(
    group = "kueue.x-k8s.io",
    version = "v1beta2",
    kind = "ClusterQueue",
    plural = "clusterqueues",
    shortname = "cq",
    status = "ClusterQueueStatus",
    derive = "PartialEq",
    derive = "Default",
    doc = "A cluster-scoped pool of quota, organised in resource groups and flavors."
)]
#[kube(printcolumn(
    name = "Cohort",
    type_ = "string",
    description = "Cohort the ClusterQueue borrows from and lends to",
    json_path = ".spec.cohortName"
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
    "rule": "!has(self.cohortName) && has(self.resourceGroups) ? self.resourceGroups.all(rg, rg.flavors.all(f, f.resources.all(r, !has(r.borrowingLimit)))) : true",
    "message": "borrowingLimit must be nil when cohort is empty",
}]))]
pub struct ClusterQueueSpec {
    /// Groups of resources with their quotas per flavor. A resource and a flavor belong to at
    /// most one group.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 16), extend("x-kubernetes-list-type" = "atomic"))]
    pub resource_groups: Vec<ResourceGroup>,

    /// Cohort this ClusterQueue belongs to; queues of a cohort borrow each other's unused quota.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 253), pattern(schema::DNS1123_SUBDOMAIN))]
    pub cohort_name: Option<String>,

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

    /// Lets a workload pursue several flavors at once and migrate to a preferred one later.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub concurrent_admission_policy: Option<ConcurrentAdmissionPolicy>,
}

/// Ordering of pending workloads in a ClusterQueue.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default, JsonSchema, PartialEq, Eq, Hash)]
pub enum QueueingStrategy {
    /// Strict priority then creation order: a head that does not fit blocks the queue.
    #[serde(rename = "StrictFIFO")]
    StrictFifo,
    /// Priority then creation order, but workloads that do not fit are set aside.
    #[default]
    #[serde(rename = "BestEffortFIFO")]
    BestEffortFifo,
}

/// Which AdmissionChecks a workload of the ClusterQueue must pass.
#[derive(Serialize, Deserialize, Clone, Debug, Default, JsonSchema, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct AdmissionChecksStrategy {
    /// One rule per AdmissionCheck.
    #[schemars(
        length(min = 1, max = 64),
        extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["name"])
    )]
    pub admission_checks: Vec<AdmissionCheckStrategyRule>,
}

/// An AdmissionCheck and the flavors it applies to.
#[derive(Serialize, Deserialize, Clone, Debug, Default, JsonSchema, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct AdmissionCheckStrategyRule {
    /// Name of the AdmissionCheck.
    #[schemars(length(min = 1, max = 316))]
    pub name: String,

    /// Flavors the check runs for; empty means every workload of the ClusterQueue.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(
        length(max = 64),
        inner(length(max = 253), pattern(schema::DNS1123_SUBDOMAIN)),
        extend("x-kubernetes-list-type" = "set")
    )]
    pub on_flavors: Vec<String>,
}

/// Settings of concurrent admission across flavors.
#[derive(Serialize, Deserialize, Clone, Debug, Default, JsonSchema, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ConcurrentAdmissionPolicy {
    /// How admitted workloads migrate to preferred flavors.
    pub migration: ConcurrentAdmissionMigration,
}

/// Migration settings of concurrent admission.
#[derive(Serialize, Deserialize, Clone, Debug, Default, JsonSchema, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ConcurrentAdmissionMigration {
    /// Whether admitted workloads keep trying preferred flavors.
    #[schemars(extend("maxLength" = 253))]
    pub mode: ConcurrentAdmissionMigrationMode,

    /// Limits on the flavors a workload may migrate to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub constraints: Option<ConcurrentAdmissionConstraints>,
}

/// Whether an admitted workload keeps pursuing more preferred flavors.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default, JsonSchema, PartialEq, Eq, Hash)]
pub enum ConcurrentAdmissionMigrationMode {
    /// Keep trying flavors listed before the admitted one.
    #[default]
    TryPreferredFlavors,
    /// Stay on the flavor of the first admission.
    RetainFirstAdmission,
}

/// Limits on flavor migration.
#[derive(Serialize, Deserialize, Clone, Debug, Default, JsonSchema, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ConcurrentAdmissionConstraints {
    /// Last flavor, in ClusterQueue order, a workload may migrate to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 253), pattern(schema::DNS1123_SUBDOMAIN))]
    pub last_acceptable_flavor_name: Option<String>,
}

/// Observed state of a ClusterQueue.
#[derive(Serialize, Deserialize, Clone, Debug, Default, JsonSchema, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ClusterQueueStatus {
    /// Latest observations; the `Active` condition tells whether the queue can admit.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(
        transform = schema::condition_validations,
        length(max = 16),
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

    /// Fair-sharing state, recorded when fair sharing is enabled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fair_sharing: Option<FairSharingStatus>,
}

/// Usage of the resources of one flavor.
#[derive(Serialize, Deserialize, Clone, Debug, Default, JsonSchema, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct FlavorUsage {
    /// Name of the flavor.
    #[schemars(length(max = 253), pattern(schema::DNS1123_SUBDOMAIN))]
    pub name: String,

    /// Usage per resource.
    #[schemars(
        length(max = 64),
        extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["name"])
    )]
    pub resources: Vec<ResourceUsage>,
}

/// Usage of one resource.
#[derive(Serialize, Deserialize, Clone, Debug, Default, JsonSchema, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ResourceUsage {
    /// Name of the resource.
    pub name: String,

    /// Quantity in use, including what is borrowed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("pattern" = schema::QUANTITY_PATTERN))]
    pub total: Option<Quantity>,

    /// Quantity in use above the nominal quota, borrowed from the cohort.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("pattern" = schema::QUANTITY_PATTERN))]
    pub borrowed: Option<Quantity>,
}

/// Preemption policy of a ClusterQueue.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default, JsonSchema, PartialEq, Eq, Hash)]
pub enum PreemptionPolicy {
    /// Never preempt.
    #[default]
    Never,
    /// Preempt any workload.
    Any,
    /// Preempt workloads of strictly lower priority.
    LowerPriority,
    /// Preempt workloads of lower priority, or of equal priority queued later.
    LowerOrNewerEqualPriority,
}

/// Whether a search over flavors stops at the current one or tries the next.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, JsonSchema, PartialEq, Eq, Hash)]
pub enum FlavorFungibilityPolicy {
    /// Stop at the current flavor.
    MayStopSearch,
    /// Try the next flavor first.
    TryNextFlavor,
}

/// Choice between borrowing and preemption when every flavor needs one of them.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, JsonSchema, PartialEq, Eq, Hash)]
pub enum FlavorFungibilityPreference {
    /// Prefer borrowing to preempting.
    BorrowingOverPreemption,
    /// Prefer preempting to borrowing.
    PreemptionOverBorrowing,
}

/// How the flavor search treats borrowing and preemption.
#[derive(Serialize, Deserialize, Clone, Debug, JsonSchema, PartialEq)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("x-kubernetes-validations" = [{
    "rule": "!has(self.preference) || (self.whenCanBorrow == 'TryNextFlavor' && self.whenCanPreempt == 'TryNextFlavor')",
    "message": "preference can only be set when both whenCanBorrow and whenCanPreempt are TryNextFlavor",
}]))]
pub struct FlavorFungibility {
    /// What to do when a workload fits the current flavor only by borrowing.
    #[serde(default = "may_stop_search")]
    #[schemars(schema_with = "schema::when_can_borrow")]
    pub when_can_borrow: FlavorFungibilityPolicy,

    /// What to do when a workload fits the current flavor only by preempting.
    #[serde(default = "try_next_flavor")]
    #[schemars(schema_with = "schema::when_can_preempt")]
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

/// Preemption policies of a ClusterQueue.
#[derive(Serialize, Deserialize, Clone, Debug, Default, JsonSchema, PartialEq)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("x-kubernetes-validations" = [{
    "rule": "!(self.reclaimWithinCohort == 'Never' && has(self.borrowWithinCohort) &&  self.borrowWithinCohort.policy != 'Never')",
    "message": "reclaimWithinCohort=Never and borrowWithinCohort.Policy!=Never",
}]))]
pub struct ClusterQueuePreemption {
    /// Whether a workload may preempt workloads of other queues of the cohort that use more than
    /// their nominal quota: `Never`, `LowerPriority` or `Any`.
    #[serde(default)]
    #[schemars(schema_with = "schema::reclaim_within_cohort")]
    pub reclaim_within_cohort: PreemptionPolicy,

    /// Whether a workload that needs to borrow may preempt in other queues of the cohort.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = {}))]
    pub borrow_within_cohort: Option<BorrowWithinCohort>,

    /// Whether a workload that does not fit its nominal quota may preempt in its own queue:
    /// `Never`, `LowerPriority` or `LowerOrNewerEqualPriority`.
    #[serde(default)]
    #[schemars(schema_with = "schema::within_cluster_queue")]
    pub within_cluster_queue: PreemptionPolicy,
}

/// Preemption while borrowing.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default, JsonSchema, PartialEq, Eq, Hash)]
pub enum BorrowWithinCohortPolicy {
    /// A borrowing workload never preempts in other queues.
    #[default]
    Never,
    /// A borrowing workload may preempt lower-priority workloads in other queues.
    LowerPriority,
}

/// Preemption settings for borrowing workloads.
#[derive(Serialize, Deserialize, Clone, Debug, Default, JsonSchema, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct BorrowWithinCohort {
    /// Whether a borrowing workload may preempt in other queues of the cohort.
    #[serde(default)]
    pub policy: BorrowWithinCohortPolicy,

    /// Only workloads with a priority at most this value may be preempted by a borrowing workload.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_priority_threshold: Option<i32>,
}
