//! Workload: the unit of admission, one per job, holding its PodSets and admission state.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{PodTemplateSpec, Toleration};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::api::constants::{DEFAULT_POD_SET_NAME, PRIORITY_BOOST_ANNOTATION};
use crate::api::pod_template::PodTemplate;
use crate::api::schema;
use crate::k8s::conditions;

/// CEL prefix: the stored object holds a quota reservation.
macro_rules! old_reserved {
    () => {
        "has(oldSelf.status) && has(oldSelf.status.conditions) && oldSelf.status.conditions.exists(c, c.type == 'QuotaReserved' && c.status == 'True')"
    };
}

/// Desired state of a Workload.
#[expect(
    clippy::duplicated_attributes,
    reason = "each kube printcolumn repeats keys such as type_ by design"
)]
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, Default, JsonSchema, PartialEq)]
#[kube(
    group = "kueue.x-k8s.io",
    version = "v1beta2",
    kind = "Workload",
    plural = "workloads",
    shortname = "kwl",
    shortname = "kueueworkload",
    shortname = "kueueworkloads",
    namespaced,
    status = "WorkloadStatus",
    derive = "PartialEq",
    derive = "Default",
    doc = "The unit of admission: the PodSets of one job, the queue it waits in and its admission.",
    selectable = ".status.admission.clusterQueue",
    validation = Rule::new("has(self.status) && has(self.status.conditions) && self.status.conditions.exists(c, c.type == 'QuotaReserved' && c.status == 'True') && has(self.status.admission) ? size(self.spec.podSets) == size(self.status.admission.podSetAssignments) : true")
        .message("podSetAssignments must have the same number of podSets as the spec"),
    validation = Rule::new(concat!("(", old_reserved!(), ") ? (!has(oldSelf.spec.priorityClassRef) && !has(self.spec.priorityClassRef)) || (has(oldSelf.spec.priorityClassRef) && has(self.spec.priorityClassRef)) : true"))
        .message("priorityClassRef is immutable while workload quota reserved"),
    validation = Rule::new(concat!("(", old_reserved!(), " && has(oldSelf.spec.priorityClassRef) && has(self.spec.priorityClassRef)) ? oldSelf.spec.priorityClassRef.group == self.spec.priorityClassRef.group : true"))
        .message("priorityClassRef.group is immutable while workload quota reserved"),
    validation = Rule::new(concat!("(", old_reserved!(), " && has(oldSelf.spec.priorityClassRef) && has(self.spec.priorityClassRef)) ? oldSelf.spec.priorityClassRef.kind == self.spec.priorityClassRef.kind : true"))
        .message("priorityClassRef.kind is immutable while workload quota reserved"),
    validation = Rule::new(concat!("(", old_reserved!(), " && has(oldSelf.spec.priorityClassRef) && has(self.spec.priorityClassRef) && self.spec.priorityClassRef.group == 'scheduling.k8s.io' && self.spec.priorityClassRef.kind == 'PriorityClass') ? oldSelf.spec.priorityClassRef.name == self.spec.priorityClassRef.name : true"))
        .message("priorityClassRef.name is immutable for scheduling.k8s.io/priorityclass while workload quota reserved"),
    validation = Rule::new(concat!("((", old_reserved!(), ") && (has(self.status) && has(self.status.conditions) && self.status.conditions.exists(c, c.type == 'QuotaReserved' && c.status == 'True'))) ? ((has(oldSelf.spec.queueName) == has(self.spec.queueName)) && (!has(oldSelf.spec.queueName) || oldSelf.spec.queueName == self.spec.queueName)) : true"))
        .message("queueName is immutable while workload quota reserved"),
    validation = Rule::new("((has(oldSelf.status) && has(oldSelf.status.conditions) && oldSelf.status.conditions.exists(c, c.type == 'Admitted' && c.status == 'True')) && (has(self.status) && has(self.status.conditions) && self.status.conditions.exists(c, c.type == 'Admitted' && c.status == 'True'))) ? ((has(oldSelf.spec.maximumExecutionTimeSeconds) ? oldSelf.spec.maximumExecutionTimeSeconds : 0) == (has(self.spec.maximumExecutionTimeSeconds) ? self.spec.maximumExecutionTimeSeconds : 0)) : true")
        .message("maximumExecutionTimeSeconds is immutable while workload quota reserved")
)]
#[kube(printcolumn(
    name = "Queue",
    type_ = "string",
    description = "LocalQueue the workload was submitted to",
    json_path = ".spec.queueName"
))]
#[kube(printcolumn(
    name = "Reserved in",
    type_ = "string",
    description = "ClusterQueue holding quota for the workload",
    json_path = ".status.admission.clusterQueue"
))]
#[kube(printcolumn(
    name = "Admitted",
    type_ = "string",
    description = "Whether the workload is admitted",
    json_path = ".status.conditions[?(@.type=='Admitted')].status"
))]
#[kube(printcolumn(
    name = "Finished",
    type_ = "string",
    description = "Whether the workload has finished",
    json_path = ".status.conditions[?(@.type=='Finished')].status"
))]
#[kube(printcolumn(
    name = "Age",
    type_ = "date",
    description = "Time since the workload was created",
    json_path = ".metadata.creationTimestamp"
))]
#[serde(rename_all = "camelCase")]
#[schemars(extend("x-kubernetes-validations" = [{
    "rule": "!has(self.priorityClassRef) || has(self.priority)",
    "message": "priority should not be nil when priorityClassRef is set",
}]))]
pub struct WorkloadSpec {
    /// Groups of identical pods, each with its template and count.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(
        length(min = 1, max = 18),
        extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["name"])
    )]
    pub pod_sets: Vec<PodSet>,

    /// Name of the LocalQueue the workload is submitted to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 253), pattern(schema::DNS1123_SUBDOMAIN))]
    pub queue_name: Option<String>,

    /// The priority class the priority was taken from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub priority_class_ref: Option<PriorityClassRef>,

    /// Priority of the workload; higher values are admitted first and may preempt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub priority: Option<i32>,

    /// Whether the workload may be admitted; setting it to false evicts an admitted workload.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = true))]
    pub active: Option<bool>,

    /// Seconds the workload may run admitted before it is deactivated.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub maximum_execution_time_seconds: Option<i32>,

    /// Gates that must open before the workload may preempt others.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(
        length(max = 8),
        extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["name"])
    )]
    pub preemption_gates: Vec<PreemptionGate>,
}

impl Workload {
    /// The status condition of this type, if present.
    pub fn condition(&self, type_: &str) -> Option<&Condition> {
        conditions::find(&self.status.as_ref()?.conditions, type_)
    }

    /// The status condition of this type when its status is `True`.
    pub fn true_condition(&self, type_: &str) -> Option<&Condition> {
        conditions::find_true(&self.status.as_ref()?.conditions, type_)
    }

    /// Whether the status condition of this type is `True`.
    pub fn is_condition_true(&self, type_: &str) -> bool {
        self.true_condition(type_).is_some()
    }

    /// The quota the workload holds: its `admission` while `QuotaReserved` is `True`. As in
    /// Kueue, the condition decides; an `admission` left beside `QuotaReserved=False` (an
    /// eviction finished by someone who could not remove it) holds nothing.
    pub fn reservation(&self) -> Option<&Admission> {
        let status = self.status.as_ref()?;
        conditions::find_true(
            &status.conditions,
            crate::api::constants::condition::QUOTA_RESERVED,
        )?;
        status.admission.as_ref()
    }

    /// Its priority as Kueue weighs it (`EffectivePriority`): `spec.priority` (0 when unset),
    /// plus, when `boosted` (feature `PriorityBoost`), the signed integer of the
    /// `kueue.x-k8s.io/priority-boost` annotation; a boost that does not parse counts as 0, as
    /// in Kueue (its webhook refuses one on create and update).
    pub fn priority(&self, boosted: bool) -> WorkloadPriority {
        let boost = if boosted {
            self.metadata
                .annotations
                .as_ref()
                .and_then(|annotations| annotations.get(PRIORITY_BOOST_ANNOTATION))
                .and_then(|value| value.parse().ok())
                .unwrap_or(0)
        } else {
            0
        };
        WorkloadPriority {
            base: self.spec.priority.unwrap_or(0),
            boost,
        }
    }
}

/// A Workload's priority in its two parts.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WorkloadPriority {
    /// `spec.priority`, from its priority class.
    pub base: i32,
    /// The priority-boost annotation's value (0 without `PriorityBoost`).
    pub boost: i32,
}

impl WorkloadPriority {
    /// What queues order and preemption compares: base plus boost, without overflow.
    pub fn effective(self) -> i64 {
        i64::from(self.base) + i64::from(self.boost)
    }
}

impl WorkloadSpec {
    /// Whether the workload may be admitted: `active` defaults to true.
    pub fn is_active(&self) -> bool {
        self.active.unwrap_or(true)
    }
}

/// API group of the priority class a workload refers to.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, JsonSchema, PartialEq, Eq, Hash)]
pub enum PriorityClassGroup {
    /// Kueue's WorkloadPriorityClass.
    #[serde(rename = "kueue.x-k8s.io")]
    Kueue,
    /// Kubernetes' pod PriorityClass.
    #[serde(rename = "scheduling.k8s.io")]
    Scheduling,
}

/// Kind of the priority class a workload refers to.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, JsonSchema, PartialEq, Eq, Hash)]
pub enum PriorityClassKind {
    /// `kueue.x-k8s.io` WorkloadPriorityClass.
    WorkloadPriorityClass,
    /// `scheduling.k8s.io` PriorityClass.
    PriorityClass,
}

/// Reference to the priority class a workload's priority comes from.
#[derive(Serialize, Deserialize, Clone, Debug, JsonSchema, PartialEq)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("x-kubernetes-validations" = [
    {"rule": "(self.group == 'scheduling.k8s.io') ? self.kind == 'PriorityClass' : true", "message": "only the PriorityClass kind is allowed for the scheduling.k8s.io group"},
    {"rule": "(self.group == 'kueue.x-k8s.io') ? self.kind == 'WorkloadPriorityClass' : true", "message": "only the WorkloadPriorityClass kind is allowed for the kueue.x-k8s.io group"},
]))]
pub struct PriorityClassRef {
    /// API group of the class.
    pub group: PriorityClassGroup,
    /// Kind of the class.
    pub kind: PriorityClassKind,
    /// Name of the class.
    #[schemars(length(min = 1, max = 253), pattern(schema::DNS1123_SUBDOMAIN))]
    pub name: String,
}

impl PriorityClassRef {
    /// A reference to the WorkloadPriorityClass `name`.
    pub fn workload_priority_class(name: impl Into<String>) -> Self {
        Self {
            group: PriorityClassGroup::Kueue,
            kind: PriorityClassKind::WorkloadPriorityClass,
            name: name.into(),
        }
    }

    /// A reference to the pod PriorityClass `name`.
    pub fn pod_priority_class(name: impl Into<String>) -> Self {
        Self {
            group: PriorityClassGroup::Scheduling,
            kind: PriorityClassKind::PriorityClass,
            name: name.into(),
        }
    }
}

fn default_pod_set_name() -> String {
    DEFAULT_POD_SET_NAME.to_owned()
}

fn default_pod_set_count() -> i32 {
    1
}

/// A group of identical pods of a workload.
#[derive(Serialize, Deserialize, Clone, Debug, Default, JsonSchema, PartialEq)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("x-kubernetes-validations" = [{
    "rule": "has(self.minCount) ? self.minCount <= self.count : true",
    "message": "minCount should be positive and less or equal to count",
}]))]
pub struct PodSet {
    /// Name of the PodSet, unique in the workload.
    #[serde(default = "default_pod_set_name")]
    #[schemars(length(max = 63), pattern(schema::DNS1123_LABEL))]
    pub name: String,

    /// Template of the pods.
    #[schemars(schema_with = "crate::api::kubernetes_schema::marked::<PodTemplateSpec>")]
    pub template: PodTemplate,

    /// Number of pods.
    #[serde(default = "default_pod_set_count")]
    #[schemars(range(min = 0))]
    pub count: i32,

    /// Smallest number of pods the workload can run with (partial admission).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub min_count: Option<i32>,

    /// Topology-aware scheduling request.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub topology_request: Option<PodSetTopologyRequest>,
}

/// Topology constraints of a PodSet for topology-aware scheduling.
#[derive(Serialize, Deserialize, Clone, Debug, Default, JsonSchema, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct PodSetTopologyRequest {
    /// Topology level all pods must share.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 63))]
    pub required: Option<String>,

    /// Topology level the pods should share if possible.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 63))]
    pub preferred: Option<String>,

    /// Whether the pods may be placed without topology constraints.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unconstrained: Option<bool>,

    /// Label holding the index of a pod in the PodSet.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 317))]
    pub pod_index_label: Option<String>,

    /// Label holding the index of the sub-group (replicated job) of a pod.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 317))]
    pub sub_group_index_label: Option<String>,

    /// Number of sub-groups.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sub_group_count: Option<i32>,

    /// PodSets with the same group name are placed together.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 256))]
    pub pod_set_group_name: Option<String>,

    /// Topology level each slice of the PodSet must share.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 63))]
    pub pod_set_slice_required_topology: Option<String>,

    /// Number of pods per slice.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pod_set_slice_size: Option<i32>,

    /// Additional required slice levels with their sizes.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 3), extend("x-kubernetes-list-type" = "atomic"))]
    pub podset_slice_required_topology_constraints: Vec<PodsetSliceRequiredTopologyConstraint>,
}

/// A slice level and size of a PodSet.
#[derive(Serialize, Deserialize, Clone, Debug, Default, JsonSchema, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct PodsetSliceRequiredTopologyConstraint {
    /// Topology level of the slice.
    #[schemars(length(min = 1, max = 63))]
    pub topology: String,
    /// Pods per slice.
    #[schemars(range(min = 1))]
    pub size: i32,
}

/// A gate that must be open before the workload may preempt.
#[derive(Serialize, Deserialize, Clone, Debug, Default, JsonSchema, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct PreemptionGate {
    /// Name of the gate.
    #[schemars(length(min = 1, max = 63))]
    pub name: String,
}

/// Quota reserved for a workload.
#[derive(Serialize, Deserialize, Clone, Debug, Default, JsonSchema, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Admission {
    /// ClusterQueue holding the quota.
    #[serde(default)]
    #[schemars(
        transform = schema::without_default,
        length(max = 253),
        pattern(schema::DNS1123_SUBDOMAIN)
    )]
    pub cluster_queue: String,

    /// Flavors and usage assigned to each PodSet.
    #[serde(default)]
    #[schemars(
        transform = schema::without_default,
        length(max = 18),
        extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["name"])
    )]
    pub pod_set_assignments: Vec<PodSetAssignment>,
}

/// The flavors, usage and placement assigned to one PodSet.
#[derive(Serialize, Deserialize, Clone, Debug, Default, JsonSchema, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct PodSetAssignment {
    /// Name of the PodSet.
    #[serde(default = "default_pod_set_name")]
    #[schemars(length(max = 63), pattern(schema::DNS1123_LABEL))]
    pub name: String,

    /// Flavor assigned to each resource.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    #[schemars(schema_with = "schema::flavor_names")]
    pub flavors: BTreeMap<String, String>,

    /// Total quota used by the PodSet, per resource.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    #[schemars(schema_with = "schema::quantities")]
    pub resource_usage: BTreeMap<String, Quantity>,

    /// Number of pods admitted, when smaller than the PodSet's count (partial admission).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0))]
    pub count: Option<i32>,

    /// Topology domains assigned to the pods.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub topology_assignment: Option<TopologyAssignment>,

    /// State of a topology assignment computed after the quota reservation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("maxLength" = 7))]
    pub delayed_topology_request: Option<DelayedTopologyRequestState>,
}

/// State of a delayed topology request.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, JsonSchema, PartialEq, Eq, Hash)]
pub enum DelayedTopologyRequestState {
    /// The topology assignment is not computed yet.
    Pending,
    /// The topology assignment is computed.
    Ready,
}

/// Topology domains assigned to the pods of a PodSet, in a compact form.
#[derive(Serialize, Deserialize, Clone, Debug, Default, JsonSchema, PartialEq)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("x-kubernetes-validations" = [{
    "rule": "self.slices.all(x, size(x.valuesPerLevel) == size(self.levels))",
    "message": "valuesPerLevel must have the same length as the number of levels in this TopologyAssignment",
}]))]
pub struct TopologyAssignment {
    /// Node labels of the topology levels, from the highest to the lowest.
    #[schemars(length(min = 1, max = 16), inner(length(max = 317)), extend("x-kubernetes-list-type" = "atomic"))]
    pub levels: Vec<String>,

    /// Groups of domains encoded together.
    #[schemars(length(max = 1000), extend("x-kubernetes-list-type" = "atomic"))]
    pub slices: Vec<TopologyAssignmentSlice>,
}

/// A run of topology domains with their label values and pod counts.
#[derive(Serialize, Deserialize, Clone, Debug, Default, JsonSchema, PartialEq)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("x-kubernetes-validations" = [
    {"rule": "!has(self.podCounts.individual) || size(self.podCounts.individual) == self.domainCount", "message": "podCounts.individual must have length equal to domainCount"},
    {"rule": "self.valuesPerLevel.all(x, !has(x.individual) || size(x.individual.roots) == self.domainCount)", "message": "valuesPerLevel.individual, if set, must have roots of length equal to domainCount of this TopologyAssignmentSlice"},
]))]
pub struct TopologyAssignmentSlice {
    /// Number of domains in the slice.
    #[schemars(range(min = 1))]
    pub domain_count: i32,

    /// Label values of the domains, one entry per level.
    #[schemars(length(min = 1, max = 16), extend("x-kubernetes-list-type" = "atomic"))]
    pub values_per_level: Vec<TopologyAssignmentSliceLevelValues>,

    /// Number of pods in each domain.
    pub pod_counts: TopologyAssignmentSlicePodCounts,
}

/// Label values of one level for all domains of a slice.
#[derive(Serialize, Deserialize, Clone, Debug, Default, JsonSchema, PartialEq)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("x-kubernetes-validations" = [{
    "rule": "has(self.universal) != has(self.individual)",
    "message": "exactly one of the fields in [universal individual] must be set",
}]))]
pub struct TopologyAssignmentSliceLevelValues {
    /// The value shared by every domain.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 63))]
    pub universal: Option<String>,

    /// One value per domain.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub individual: Option<TopologyAssignmentSliceLevelIndividualValues>,
}

/// Per-domain label values as `prefix + root + suffix`.
#[derive(Serialize, Deserialize, Clone, Debug, Default, JsonSchema, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct TopologyAssignmentSliceLevelIndividualValues {
    /// Common prefix of the values.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 63))]
    pub prefix: Option<String>,

    /// Common suffix of the values.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 63))]
    pub suffix: Option<String>,

    /// The varying middle part of each value.
    #[schemars(length(min = 1, max = 100000), inner(length(max = 63)), extend("x-kubernetes-list-type" = "atomic"))]
    pub roots: Vec<String>,
}

/// Pod counts of the domains of a slice.
#[derive(Serialize, Deserialize, Clone, Debug, Default, JsonSchema, PartialEq)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("x-kubernetes-validations" = [{
    "rule": "[has(self.universal),has(self.individual)].filter(x,x==true).size() == 1",
    "message": "exactly one of the fields in [universal individual] must be set",
}]))]
pub struct TopologyAssignmentSlicePodCounts {
    /// The count shared by every domain.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub universal: Option<i32>,

    /// One count per domain.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(min = 1, max = 100000), inner(range(min = 1)), extend("x-kubernetes-list-type" = "atomic"))]
    pub individual: Vec<i32>,
}

/// Observed state of a Workload.
#[derive(Serialize, Deserialize, Clone, Debug, Default, JsonSchema, PartialEq)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("x-kubernetes-validations" = [
    {"rule": "!has(oldSelf.clusterName) || !has(self.clusterName) || oldSelf.clusterName == self.clusterName", "message": "clusterName is immutable once set"},
    {"rule": "!has(self.clusterName) || (!has(self.nominatedClusterNames) || (has(self.nominatedClusterNames) && size(self.nominatedClusterNames) == 0))", "message": "clusterName and nominatedClusterNames are mutually exclusive"},
]))]
pub struct WorkloadStatus {
    /// Latest observations: QuotaReserved, Admitted, PodsReady, Evicted, Finished, ...
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(
        transform = schema::condition_validations,
        length(max = 16),
        extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["type"])
    )]
    pub conditions: Vec<Condition>,

    /// Quota reserved for the workload, while it holds a reservation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub admission: Option<Admission>,

    /// Requeue backoff state after evictions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requeue_state: Option<RequeueState>,

    /// Pods per PodSet that finished and no longer need quota.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(
        length(max = 18),
        extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["name"])
    )]
    pub reclaimable_pods: Vec<ReclaimablePod>,

    /// State of each AdmissionCheck of the workload's ClusterQueue.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(
        length(max = 8),
        extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["name"])
    )]
    pub admission_checks: Vec<AdmissionCheckState>,

    /// Requests per PodSet used for admission, recorded while the workload is not admitted.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(
        length(max = 18),
        extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["name"])
    )]
    pub resource_requests: Vec<PodSetRequest>,

    /// Seconds the workload ran admitted before its last eviction.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub accumulated_past_execution_time_seconds: Option<i32>,

    /// Scheduling statistics such as eviction counts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scheduling_stats: Option<SchedulingStats>,

    /// MultiKueue worker clusters the workload is being dispatched to.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 20), inner(length(max = 256)), extend("x-kubernetes-list-type" = "atomic"))]
    pub nominated_cluster_names: Vec<String>,

    /// MultiKueue worker cluster the workload was admitted on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 256))]
    pub cluster_name: Option<String>,

    /// Nodes of the topology assignment that became unhealthy.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(
        length(max = 8),
        extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["name"])
    )]
    pub unhealthy_nodes: Vec<UnhealthyNode>,

    /// Positions of the workload's preemption gates.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(
        length(max = 8),
        extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["name"])
    )]
    pub preemption_gates: Vec<PreemptionGateState>,
}

/// Scheduling statistics of a workload.
#[derive(Serialize, Deserialize, Clone, Debug, Default, JsonSchema, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct SchedulingStats {
    /// Eviction counts per reason and underlying cause.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(
        length(max = 256),
        extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["reason", "underlyingCause"])
    )]
    pub evictions: Vec<WorkloadSchedulingStatsEviction>,
}

/// Number of evictions for one reason and underlying cause.
#[derive(Serialize, Deserialize, Clone, Debug, Default, JsonSchema, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct WorkloadSchedulingStatsEviction {
    /// Eviction reason, such as `Preempted` or `PodsReadyTimeout`.
    #[schemars(length(max = 316))]
    pub reason: String,
    /// Underlying cause of the eviction; empty when there is none.
    #[schemars(length(max = 316))]
    pub underlying_cause: String,
    /// Number of evictions.
    #[schemars(range(min = 0))]
    pub count: i32,
}

/// A node of the topology assignment that became unhealthy.
#[derive(Serialize, Deserialize, Clone, Debug, Default, JsonSchema, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct UnhealthyNode {
    /// Name of the node.
    #[schemars(length(max = 63))]
    pub name: String,
}

/// Requeue backoff state of a workload.
#[derive(Serialize, Deserialize, Clone, Debug, Default, JsonSchema, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct RequeueState {
    /// Number of requeues after an eviction.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0))]
    pub count: Option<i32>,

    /// Time before which the workload is not requeued.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requeue_at: Option<Time>,
}

/// State of an AdmissionCheck for a workload.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default, JsonSchema, PartialEq, Eq, Hash)]
pub enum CheckState {
    /// The check has not decided yet.
    #[default]
    Pending,
    /// The check passed.
    Ready,
    /// The check asks to release the quota and retry later.
    Retry,
    /// The check failed; the workload is deactivated.
    Rejected,
}

/// Result of one AdmissionCheck for a workload.
#[derive(Serialize, Deserialize, Clone, Debug, JsonSchema, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct AdmissionCheckState {
    /// Name of the AdmissionCheck.
    #[schemars(length(min = 1, max = 316))]
    pub name: String,

    /// Current state of the check.
    pub state: CheckState,

    /// When the state last changed.
    pub last_transition_time: Time,

    /// Human-readable detail of the state.
    #[schemars(length(max = 32768))]
    pub message: String,

    /// Seconds to wait before retrying after a `Retry`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0))]
    pub requeue_after_seconds: Option<i32>,

    /// Number of retries so far.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0))]
    pub retry_count: Option<i32>,

    /// Changes the check requires in the pod templates once it is `Ready`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 18), extend("x-kubernetes-list-type" = "atomic"))]
    pub pod_set_updates: Vec<PodSetUpdate>,
}

/// Changes an AdmissionCheck requires in the template of one PodSet.
#[derive(Serialize, Deserialize, Clone, Debug, Default, JsonSchema, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct PodSetUpdate {
    /// Name of the PodSet.
    #[schemars(length(max = 63), pattern(schema::DNS1123_LABEL))]
    pub name: String,

    /// Labels to add.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub labels: BTreeMap<String, String>,

    /// Annotations to add.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub annotations: BTreeMap<String, String>,

    /// Node selector entries to add.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub node_selector: BTreeMap<String, String>,

    /// Tolerations to add.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(
        length(max = 8),
        extend("x-kubernetes-list-type" = "atomic", "x-kubernetes-validations" = schema::toleration_rules())
    )]
    pub tolerations: Vec<Toleration>,
}

/// Pods of a PodSet that no longer need quota.
#[derive(Serialize, Deserialize, Clone, Debug, Default, JsonSchema, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ReclaimablePod {
    /// Name of the PodSet.
    #[schemars(length(max = 63), pattern(schema::DNS1123_LABEL))]
    pub name: String,

    /// Number of pods that finished.
    #[schemars(range(min = 0))]
    pub count: i32,
}

/// Resource requests of one PodSet.
#[derive(Serialize, Deserialize, Clone, Debug, Default, JsonSchema, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct PodSetRequest {
    /// Name of the PodSet.
    #[schemars(length(max = 63), pattern(schema::DNS1123_LABEL))]
    pub name: String,

    /// Total requests of the PodSet per resource.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    #[schemars(schema_with = "schema::quantities")]
    pub resources: BTreeMap<String, Quantity>,
}

/// Position of a preemption gate.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default, JsonSchema, PartialEq, Eq, Hash)]
pub enum PreemptionGatePosition {
    /// The workload may not preempt yet.
    #[default]
    Closed,
    /// The gate no longer holds the workload back.
    Open,
}

/// Observed position of a preemption gate.
#[derive(Serialize, Deserialize, Clone, Debug, JsonSchema, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct PreemptionGateState {
    /// Name of the gate.
    #[schemars(length(min = 1, max = 63))]
    pub name: String,

    /// Position of the gate.
    pub position: PreemptionGatePosition,

    /// When the position last changed.
    pub last_transition_time: Time,
}
