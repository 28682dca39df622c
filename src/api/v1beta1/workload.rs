//! Workload v1beta1: the priority class is given as `priorityClassName` + `priorityClassSource`
//! (v1beta2: `priorityClassRef`), topology assignments list every domain (v1beta2 compacts them
//! into slices), and the accumulated execution time keeps its historical misspelling.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::PodTemplateSpec;
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::api::constants::DEFAULT_POD_SET_NAME;
use crate::api::pod_template::PodTemplate;
use crate::api::schema;
use crate::api::v1beta2::{
    self, AdmissionCheckState, DelayedTopologyRequestState, PodSetRequest, ReclaimablePod,
    RequeueState, SchedulingStats, UnhealthyNode,
};

/// Desired state of a Workload (v1beta1).
#[expect(
    clippy::duplicated_attributes,
    reason = "each kube printcolumn repeats keys such as type_ by design"
)]
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, Default, JsonSchema, PartialEq)]
#[kube(
    group = "kueue.x-k8s.io",
    version = "v1beta1",
    kind = "Workload",
    plural = "workloads",
    shortname = "kwl",
    shortname = "kueueworkload",
    shortname = "kueueworkloads",
    namespaced,
    status = "WorkloadStatus",
    derive = "PartialEq",
    derive = "Default",
    served = true,
    storage = false,
    deprecated = "This version is deprecated. Use v1beta2 instead.",
    doc = "The unit of admission: the PodSets of one job, the queue it waits in and its admission.",
    validation = Rule::new("has(self.status) && has(self.status.conditions) && self.status.conditions.exists(c, c.type == 'QuotaReserved' && c.status == 'True') && has(self.status.admission) ? size(self.spec.podSets) == size(self.status.admission.podSetAssignments) : true")
        .message("podSetAssignments must have the same number of podSets as the spec"),
    validation = Rule::new("(has(oldSelf.status) && has(oldSelf.status.conditions) && oldSelf.status.conditions.exists(c, c.type == 'QuotaReserved' && c.status == 'True') && has(oldSelf.spec.priorityClassSource) && has(self.spec.priorityClassSource)) ? (oldSelf.spec.priorityClassSource == self.spec.priorityClassSource) : true")
        .message("priorityClassSource is immutable while workload quota reserved"),
    validation = Rule::new("(has(oldSelf.status) && has(oldSelf.status.conditions) && oldSelf.status.conditions.exists(c, c.type == 'QuotaReserved' && c.status == 'True') && has(oldSelf.spec.priorityClassSource) && has(self.spec.priorityClassSource) && (self.spec.priorityClassSource != 'kueue.x-k8s.io/workloadpriorityclass') && has(oldSelf.spec.priorityClassName) && has(self.spec.priorityClassName)) ? (oldSelf.spec.priorityClassName == self.spec.priorityClassName) : true")
        .message("priorityClassName is immutable while workload quota reserved and priorityClassSource is not equal to kueue.x-k8s.io/workloadpriorityclass"),
    validation = Rule::new("((has(oldSelf.status) && has(oldSelf.status.conditions) && oldSelf.status.conditions.exists(c, c.type == 'QuotaReserved' && c.status == 'True')) && (has(self.status) && has(self.status.conditions) && self.status.conditions.exists(c, c.type == 'QuotaReserved' && c.status == 'True'))) ? ((has(oldSelf.spec.queueName) == has(self.spec.queueName)) && (!has(oldSelf.spec.queueName) || oldSelf.spec.queueName == self.spec.queueName)) : true")
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
    "rule": "has(self.priorityClassName) ? has(self.priority) : true",
    "message": "priority should not be nil when priorityClassName is set",
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

    /// Name of the priority class the priority was taken from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 253), pattern(schema::DNS1123_SUBDOMAIN))]
    pub priority_class_name: Option<String>,

    /// Priority of the workload; higher values are admitted first and may preempt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub priority: Option<i32>,

    /// Kind of priority class `priorityClassName` names.
    #[serde(default, skip_serializing_if = "PriorityClassSource::is_unset")]
    #[schemars(extend("default" = ""))]
    pub priority_class_source: PriorityClassSource,

    /// Whether the workload may be admitted; setting it to false evicts an admitted workload.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = true))]
    pub active: Option<bool>,

    /// Seconds the workload may run admitted before it is deactivated.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub maximum_execution_time_seconds: Option<i32>,
}

/// Kind of priority class a v1beta1 workload's `priorityClassName` refers to.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default, JsonSchema, PartialEq, Eq, Hash)]
pub enum PriorityClassSource {
    /// Kueue's WorkloadPriorityClass.
    #[serde(rename = "kueue.x-k8s.io/workloadpriorityclass")]
    WorkloadPriorityClass,
    /// Kubernetes' pod PriorityClass.
    #[serde(rename = "scheduling.k8s.io/priorityclass")]
    PodPriorityClass,
    /// No priority class.
    #[default]
    #[serde(rename = "")]
    Unset,
}

impl PriorityClassSource {
    /// Whether no source is given.
    pub fn is_unset(&self) -> bool {
        *self == Self::Unset
    }
}

fn default_pod_set_name() -> String {
    DEFAULT_POD_SET_NAME.to_owned()
}

fn default_pod_set_count() -> i32 {
    1
}

/// A group of identical pods of a workload (v1beta1).
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

/// Topology constraints of a PodSet (v1beta1).
#[derive(Serialize, Deserialize, Clone, Debug, Default, JsonSchema, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct PodSetTopologyRequest {
    /// Topology level all pods must share.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub required: Option<String>,

    /// Topology level the pods should share if possible.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preferred: Option<String>,

    /// Whether the pods may be placed without topology constraints.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unconstrained: Option<bool>,

    /// Label holding the index of a pod in the PodSet.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pod_index_label: Option<String>,

    /// Label holding the index of the sub-group (replicated job) of a pod.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sub_group_index_label: Option<String>,

    /// Number of sub-groups.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sub_group_count: Option<i32>,

    /// PodSets with the same group name are placed together.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pod_set_group_name: Option<String>,

    /// Topology level each slice of the PodSet must share.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pod_set_slice_required_topology: Option<String>,

    /// Number of pods per slice.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pod_set_slice_size: Option<i32>,
}

/// Quota reserved for a workload (v1beta1).
#[derive(Serialize, Deserialize, Clone, Debug, Default, JsonSchema, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Admission {
    /// ClusterQueue holding the quota.
    #[schemars(length(max = 253), pattern(schema::DNS1123_SUBDOMAIN))]
    pub cluster_queue: String,

    /// Flavors and usage assigned to each PodSet.
    #[schemars(
        length(max = 18),
        extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["name"])
    )]
    pub pod_set_assignments: Vec<PodSetAssignment>,
}

/// The flavors, usage and placement assigned to one PodSet (v1beta1).
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
    pub delayed_topology_request: Option<DelayedTopologyRequestState>,
}

/// Topology domains assigned to the pods of a PodSet, one entry per domain.
#[derive(Serialize, Deserialize, Clone, Debug, Default, JsonSchema, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct TopologyAssignment {
    /// Node labels of the topology levels, from the highest to the lowest.
    #[schemars(length(min = 1, max = 16), extend("x-kubernetes-list-type" = "atomic"))]
    pub levels: Vec<String>,

    /// The domains and the number of pods in each.
    pub domains: Vec<TopologyDomainAssignment>,
}

/// A topology domain and the number of pods assigned to it.
#[derive(Serialize, Deserialize, Clone, Debug, Default, JsonSchema, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct TopologyDomainAssignment {
    /// Label value of the domain at each level.
    #[schemars(length(min = 1, max = 16), extend("x-kubernetes-list-type" = "atomic"))]
    pub values: Vec<String>,

    /// Number of pods in the domain.
    #[schemars(range(min = 1))]
    pub count: i32,
}

/// Observed state of a Workload (v1beta1).
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

    /// Seconds the workload ran admitted before its last eviction (the field name's spelling is
    /// Kueue's).
    #[serde(
        default,
        rename = "accumulatedPastExexcutionTimeSeconds",
        skip_serializing_if = "Option::is_none"
    )]
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
}

// === Conversion ===

impl From<WorkloadSpec> for v1beta2::WorkloadSpec {
    /// A priority class name without a source has no v1beta2 equivalent and is dropped, as in
    /// Kueue.
    fn from(spec: WorkloadSpec) -> Self {
        let priority_class_ref =
            spec.priority_class_name
                .and_then(|name| match spec.priority_class_source {
                    PriorityClassSource::WorkloadPriorityClass => {
                        Some(v1beta2::PriorityClassRef::workload_priority_class(name))
                    }
                    PriorityClassSource::PodPriorityClass => {
                        Some(v1beta2::PriorityClassRef::pod_priority_class(name))
                    }
                    PriorityClassSource::Unset => None,
                });
        Self {
            pod_sets: spec.pod_sets.into_iter().map(Into::into).collect(),
            queue_name: spec.queue_name,
            priority_class_ref,
            priority: spec.priority,
            active: spec.active,
            maximum_execution_time_seconds: spec.maximum_execution_time_seconds,
            preemption_gates: Vec::new(),
        }
    }
}

impl From<v1beta2::WorkloadSpec> for WorkloadSpec {
    /// A reference mixing the group of one class kind with the other kind has no v1beta1
    /// equivalent and is dropped, as are preemption gates.
    fn from(spec: v1beta2::WorkloadSpec) -> Self {
        use v1beta2::{PriorityClassGroup as Group, PriorityClassKind as Kind};
        let (priority_class_name, priority_class_source) = match spec.priority_class_ref {
            Some(r) => match (r.group, r.kind) {
                (Group::Kueue, Kind::WorkloadPriorityClass) => {
                    (Some(r.name), PriorityClassSource::WorkloadPriorityClass)
                }
                (Group::Scheduling, Kind::PriorityClass) => {
                    (Some(r.name), PriorityClassSource::PodPriorityClass)
                }
                _ => (None, PriorityClassSource::Unset),
            },
            None => (None, PriorityClassSource::Unset),
        };
        Self {
            pod_sets: spec.pod_sets.into_iter().map(Into::into).collect(),
            queue_name: spec.queue_name,
            priority_class_name,
            priority: spec.priority,
            priority_class_source,
            active: spec.active,
            maximum_execution_time_seconds: spec.maximum_execution_time_seconds,
        }
    }
}

impl From<PodSet> for v1beta2::PodSet {
    fn from(ps: PodSet) -> Self {
        Self {
            name: ps.name,
            template: ps.template,
            count: ps.count,
            min_count: ps.min_count,
            topology_request: ps.topology_request.map(Into::into),
        }
    }
}

impl From<v1beta2::PodSet> for PodSet {
    fn from(ps: v1beta2::PodSet) -> Self {
        Self {
            name: ps.name,
            template: ps.template,
            count: ps.count,
            min_count: ps.min_count,
            topology_request: ps.topology_request.map(Into::into),
        }
    }
}

impl From<PodSetTopologyRequest> for v1beta2::PodSetTopologyRequest {
    fn from(r: PodSetTopologyRequest) -> Self {
        Self {
            required: r.required,
            preferred: r.preferred,
            unconstrained: r.unconstrained,
            pod_index_label: r.pod_index_label,
            sub_group_index_label: r.sub_group_index_label,
            sub_group_count: r.sub_group_count,
            pod_set_group_name: r.pod_set_group_name,
            pod_set_slice_required_topology: r.pod_set_slice_required_topology,
            pod_set_slice_size: r.pod_set_slice_size,
            podset_slice_required_topology_constraints: Vec::new(),
        }
    }
}

impl From<v1beta2::PodSetTopologyRequest> for PodSetTopologyRequest {
    /// The additional slice constraints have no v1beta1 equivalent and are dropped.
    fn from(r: v1beta2::PodSetTopologyRequest) -> Self {
        Self {
            required: r.required,
            preferred: r.preferred,
            unconstrained: r.unconstrained,
            pod_index_label: r.pod_index_label,
            sub_group_index_label: r.sub_group_index_label,
            sub_group_count: r.sub_group_count,
            pod_set_group_name: r.pod_set_group_name,
            pod_set_slice_required_topology: r.pod_set_slice_required_topology,
            pod_set_slice_size: r.pod_set_slice_size,
        }
    }
}

impl From<Admission> for v1beta2::Admission {
    fn from(a: Admission) -> Self {
        Self {
            cluster_queue: a.cluster_queue,
            pod_set_assignments: a.pod_set_assignments.into_iter().map(Into::into).collect(),
        }
    }
}

impl From<v1beta2::Admission> for Admission {
    fn from(a: v1beta2::Admission) -> Self {
        Self {
            cluster_queue: a.cluster_queue,
            pod_set_assignments: a.pod_set_assignments.into_iter().map(Into::into).collect(),
        }
    }
}

impl From<PodSetAssignment> for v1beta2::PodSetAssignment {
    fn from(a: PodSetAssignment) -> Self {
        Self {
            name: a.name,
            flavors: a.flavors,
            resource_usage: a.resource_usage,
            count: a.count,
            topology_assignment: a.topology_assignment.map(Into::into),
            delayed_topology_request: a.delayed_topology_request,
        }
    }
}

impl From<v1beta2::PodSetAssignment> for PodSetAssignment {
    fn from(a: v1beta2::PodSetAssignment) -> Self {
        Self {
            name: a.name,
            flavors: a.flavors,
            resource_usage: a.resource_usage,
            count: a.count,
            topology_assignment: a.topology_assignment.map(Into::into),
            delayed_topology_request: a.delayed_topology_request,
        }
    }
}

impl From<TopologyAssignment> for v1beta2::TopologyAssignment {
    /// Encodes all domains as one slice, factoring out the prefix and suffix that the values of
    /// each level share, and a pod count shared by all domains (Kueue's default encoding).
    fn from(ta: TopologyAssignment) -> Self {
        let slices = if ta.domains.is_empty() {
            Vec::new()
        } else {
            vec![compact_slice(ta.levels.len(), &ta.domains)]
        };
        Self {
            levels: ta.levels,
            slices,
        }
    }
}

impl From<v1beta2::TopologyAssignment> for TopologyAssignment {
    /// Lists every domain of every slice. Schema validation guarantees each slice has one entry
    /// per level and per domain; a domain missing any of them is skipped rather than invented.
    fn from(ta: v1beta2::TopologyAssignment) -> Self {
        let domains = ta
            .slices
            .iter()
            .flat_map(|slice| {
                (0..usize::try_from(slice.domain_count).unwrap_or(0)).filter_map(move |i| {
                    let count = match &slice.pod_counts.universal {
                        Some(count) => *count,
                        None => *slice.pod_counts.individual.get(i)?,
                    };
                    let values = slice
                        .values_per_level
                        .iter()
                        .map(|level| level_value(level, i))
                        .collect::<Option<Vec<_>>>()?;
                    Some(TopologyDomainAssignment { values, count })
                })
            })
            .collect();
        Self {
            levels: ta.levels,
            domains,
        }
    }
}

/// The label value of domain `i` in one level of a slice.
fn level_value(level: &v1beta2::TopologyAssignmentSliceLevelValues, i: usize) -> Option<String> {
    if let Some(universal) = &level.universal {
        return Some(universal.clone());
    }
    let individual = level.individual.as_ref()?;
    let root = individual.roots.get(i)?;
    Some(format!(
        "{}{root}{}",
        individual.prefix.as_deref().unwrap_or_default(),
        individual.suffix.as_deref().unwrap_or_default()
    ))
}

fn compact_slice(
    level_count: usize,
    domains: &[TopologyDomainAssignment],
) -> v1beta2::TopologyAssignmentSlice {
    let values_per_level = (0..level_count)
        .map(|level| {
            let values: Vec<&str> = domains
                .iter()
                .map(|d| d.values.get(level).map_or("", String::as_str))
                .collect();
            compact_level(&values)
        })
        .collect();
    let first_count = domains.first().map_or(0, |d| d.count);
    let pod_counts = if domains.iter().all(|d| d.count == first_count) {
        v1beta2::TopologyAssignmentSlicePodCounts {
            universal: Some(first_count),
            individual: Vec::new(),
        }
    } else {
        v1beta2::TopologyAssignmentSlicePodCounts {
            universal: None,
            individual: domains.iter().map(|d| d.count).collect(),
        }
    };
    v1beta2::TopologyAssignmentSlice {
        domain_count: i32::try_from(domains.len()).unwrap_or(i32::MAX),
        values_per_level,
        pod_counts,
    }
}

/// Encodes the values of one level: one universal value if all are equal, else the common
/// prefix and suffix (never overlapping) and the differing middle parts.
fn compact_level(values: &[&str]) -> v1beta2::TopologyAssignmentSliceLevelValues {
    let Some((first, rest)) = values.split_first() else {
        return v1beta2::TopologyAssignmentSliceLevelValues::default();
    };
    if rest.iter().all(|v| v == first) {
        return v1beta2::TopologyAssignmentSliceLevelValues {
            universal: Some((*first).to_owned()),
            individual: None,
        };
    }
    let shortest = values.iter().map(|v| v.len()).min().unwrap_or(0);
    let mut prefix_len = rest
        .iter()
        .fold(first.len(), |len, v| common_prefix_len(&first[..len], v));
    let suffix_len = rest.iter().fold(first.len(), |len, v| {
        common_suffix_len(&first[first.len() - len..], v)
    });
    if prefix_len + suffix_len > shortest {
        prefix_len = floor_char_boundary(first, shortest - suffix_len);
    }
    let prefix = &first[..prefix_len];
    let suffix = &first[first.len() - suffix_len..];
    v1beta2::TopologyAssignmentSliceLevelValues {
        universal: None,
        individual: Some(v1beta2::TopologyAssignmentSliceLevelIndividualValues {
            prefix: (!prefix.is_empty()).then(|| prefix.to_owned()),
            suffix: (!suffix.is_empty()).then(|| suffix.to_owned()),
            roots: values
                .iter()
                .map(|v| v[prefix_len..v.len() - suffix_len].to_owned())
                .collect(),
        }),
    }
}

/// Length in bytes of the longest common prefix of `a` and `b`, on a character boundary.
fn common_prefix_len(a: &str, b: &str) -> usize {
    a.char_indices()
        .zip(b.chars())
        .find(|((_, ca), cb)| ca != cb)
        .map_or(a.len().min(b.len()), |((i, _), _)| i)
}

/// Length in bytes of the longest common suffix of `a` and `b`, on a character boundary.
fn common_suffix_len(a: &str, b: &str) -> usize {
    a.chars()
        .rev()
        .zip(b.chars().rev())
        .take_while(|(ca, cb)| ca == cb)
        .map(|(c, _)| c.len_utf8())
        .sum()
}

fn floor_char_boundary(s: &str, mut index: usize) -> usize {
    while !s.is_char_boundary(index) {
        index -= 1;
    }
    index
}

impl From<WorkloadStatus> for v1beta2::WorkloadStatus {
    fn from(status: WorkloadStatus) -> Self {
        Self {
            conditions: status.conditions,
            admission: status.admission.map(Into::into),
            requeue_state: status.requeue_state,
            reclaimable_pods: status.reclaimable_pods,
            admission_checks: status.admission_checks,
            resource_requests: status.resource_requests,
            accumulated_past_execution_time_seconds: status.accumulated_past_execution_time_seconds,
            scheduling_stats: status.scheduling_stats,
            nominated_cluster_names: status.nominated_cluster_names,
            cluster_name: status.cluster_name,
            unhealthy_nodes: status.unhealthy_nodes,
            preemption_gates: Vec::new(),
        }
    }
}

impl From<v1beta2::WorkloadStatus> for WorkloadStatus {
    /// Preemption gate states have no v1beta1 equivalent and are dropped.
    fn from(status: v1beta2::WorkloadStatus) -> Self {
        Self {
            conditions: status.conditions,
            admission: status.admission.map(Into::into),
            requeue_state: status.requeue_state,
            reclaimable_pods: status.reclaimable_pods,
            admission_checks: status.admission_checks,
            resource_requests: status.resource_requests,
            accumulated_past_execution_time_seconds: status.accumulated_past_execution_time_seconds,
            scheduling_stats: status.scheduling_stats,
            nominated_cluster_names: status.nominated_cluster_names,
            cluster_name: status.cluster_name,
            unhealthy_nodes: status.unhealthy_nodes,
        }
    }
}

impl From<Workload> for v1beta2::Workload {
    fn from(wl: Workload) -> Self {
        Self {
            metadata: wl.metadata,
            spec: wl.spec.into(),
            status: wl.status.map(Into::into),
        }
    }
}

impl From<v1beta2::Workload> for Workload {
    fn from(wl: v1beta2::Workload) -> Self {
        Self {
            metadata: wl.metadata,
            spec: wl.spec.into(),
            status: wl.status.map(Into::into),
        }
    }
}

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;

    use super::*;
    use crate::testing::api_versions::{v1beta1_workload, v1beta2_workload};

    #[test]
    fn converts_to_the_equivalent_v1beta2_object() {
        assert_eq!(
            v1beta2::Workload::from(v1beta1_workload()),
            v1beta2_workload()
        );
        assert_eq!(Workload::from(v1beta2_workload()), v1beta1_workload());
    }

    #[test]
    fn round_trips_through_the_other_version() {
        let v1 = v1beta1_workload();
        assert_eq!(Workload::from(v1beta2::Workload::from(v1.clone())), v1);
        let v2 = v1beta2_workload();
        assert_eq!(v1beta2::Workload::from(Workload::from(v2.clone())), v2);
    }

    #[test]
    fn priority_class_source_and_name_map_to_a_reference() {
        let cases = [
            (
                PriorityClassSource::WorkloadPriorityClass,
                Some(v1beta2::PriorityClassRef::workload_priority_class("high")),
            ),
            (
                PriorityClassSource::PodPriorityClass,
                Some(v1beta2::PriorityClassRef::pod_priority_class("high")),
            ),
            (PriorityClassSource::Unset, None),
        ];
        for (source, expected) in cases {
            let spec = WorkloadSpec {
                priority_class_name: Some("high".to_owned()),
                priority_class_source: source,
                priority: Some(1),
                ..WorkloadSpec::default()
            };
            assert_eq!(
                v1beta2::WorkloadSpec::from(spec).priority_class_ref,
                expected,
                "{source:?}"
            );
        }
    }

    #[test]
    fn inconsistent_priority_class_reference_is_dropped() {
        let spec = v1beta2::WorkloadSpec {
            priority_class_ref: Some(v1beta2::PriorityClassRef {
                group: v1beta2::PriorityClassGroup::Scheduling,
                kind: v1beta2::PriorityClassKind::WorkloadPriorityClass,
                name: "high".to_owned(),
            }),
            ..v1beta2::WorkloadSpec::default()
        };
        let v1 = WorkloadSpec::from(spec);
        assert_eq!(
            (v1.priority_class_name, v1.priority_class_source),
            (None, PriorityClassSource::Unset)
        );
    }

    fn domain(values: &[&str], count: i32) -> TopologyDomainAssignment {
        TopologyDomainAssignment {
            values: values.iter().map(|v| (*v).to_owned()).collect(),
            count,
        }
    }

    fn individual(
        prefix: Option<&str>,
        suffix: Option<&str>,
        roots: &[&str],
    ) -> v1beta2::TopologyAssignmentSliceLevelValues {
        v1beta2::TopologyAssignmentSliceLevelValues {
            universal: None,
            individual: Some(v1beta2::TopologyAssignmentSliceLevelIndividualValues {
                prefix: prefix.map(str::to_owned),
                suffix: suffix.map(str::to_owned),
                roots: roots.iter().map(|r| (*r).to_owned()).collect(),
            }),
        }
    }

    #[test]
    fn compacts_level_values_with_prefix_and_suffix() {
        let cases: [(&[&str], v1beta2::TopologyAssignmentSliceLevelValues); 5] = [
            (
                &["rack-a", "rack-a"],
                v1beta2::TopologyAssignmentSliceLevelValues {
                    universal: Some("rack-a".to_owned()),
                    individual: None,
                },
            ),
            (
                &["pool-1-node", "pool-22-node"],
                individual(Some("pool-"), Some("-node"), &["1", "22"]),
            ),
            (&["a1", "b2"], individual(None, None, &["a1", "b2"])),
            // Prefix "aba" and suffix "aba" overlap in "aba": the prefix gives way.
            (
                &["ababa", "aba"],
                individual(None, Some("aba"), &["ab", ""]),
            ),
            (
                &["zone-ä1", "zone-ä2"],
                individual(Some("zone-ä"), None, &["1", "2"]),
            ),
        ];
        for (values, expected) in cases {
            assert_eq!(compact_level(values), expected, "{values:?}");
        }
    }

    #[test]
    fn topology_assignment_round_trips_through_slices() {
        let cases = [
            vec![domain(&["b1", "h1"], 4)],
            vec![
                domain(&["b1", "host-a-1"], 2),
                domain(&["b2", "host-b-1"], 2),
            ],
            vec![
                domain(&["b1", "ababa"], 1),
                domain(&["b1", "aba"], 3),
                domain(&["b1", "abba"], 3),
            ],
            Vec::new(),
        ];
        for domains in cases {
            let v1 = TopologyAssignment {
                levels: vec!["block".to_owned(), "kubernetes.io/hostname".to_owned()],
                domains,
            };
            let v2 = v1beta2::TopologyAssignment::from(v1.clone());
            assert!(v2.slices.len() <= 1, "one slice at most: {v2:?}");
            assert_eq!(TopologyAssignment::from(v2), v1);
        }
    }

    #[test]
    fn malformed_slices_skip_domains_instead_of_panicking() {
        let v2 = v1beta2::TopologyAssignment {
            levels: vec!["kubernetes.io/hostname".to_owned()],
            slices: vec![v1beta2::TopologyAssignmentSlice {
                domain_count: 3,
                values_per_level: vec![individual(Some("n-"), None, &["1", "2", "3"])],
                pod_counts: v1beta2::TopologyAssignmentSlicePodCounts {
                    universal: None,
                    individual: vec![5],
                },
            }],
        };
        assert_eq!(
            TopologyAssignment::from(v2).domains,
            vec![domain(&["n-1"], 5)]
        );
    }

    #[test]
    fn accumulated_execution_time_keeps_kueues_v1beta1_spelling() {
        let status = WorkloadStatus {
            accumulated_past_execution_time_seconds: Some(42),
            ..WorkloadStatus::default()
        };
        let json = serde_json::to_value(&status).expect("status serializes");
        assert_eq!(json["accumulatedPastExexcutionTimeSeconds"], 42);
        let v2 =
            serde_json::to_value(v1beta2::WorkloadStatus::from(status)).expect("status serializes");
        assert_eq!(v2["accumulatedPastExecutionTimeSeconds"], 42);
    }
}
