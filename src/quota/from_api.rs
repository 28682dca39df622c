//! The one conversion from Kueue's API objects to the quota core's model, shared by the
//! admitter (which reads every object of the cluster) and the webhook's "can this ever fit"
//! check (which reads only the quota objects).
//!
//! Flavors, Cohorts and ClusterQueues convert under a [`QuotaPolicy`] saying what an unreadable
//! quota becomes: the admitter counts it as zero so that it never admits on it
//! ([`CountAsZero`]); the webhook refuses the check with an error naming the object
//! ([`Refuse`]). Workloads convert with the namespace facts their requests depend on
//! ([`WorkloadInputs`]).

use std::collections::{BTreeMap, BTreeSet};
use std::convert::Infallible;
use std::sync::Arc;

use jiff::Timestamp;
use k8s_openapi::api::core::v1::{
    LimitRange, Node, NodeSelectorRequirement as ApiNodeSelectorRequirement, Taint as ApiTaint,
    Toleration as ApiToleration,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity as ApiQuantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector as ApiLabelSelector;
use kube::ResourceExt;

use super::model::{
    self, Admission, BorrowWithinCohort, BorrowWithinCohortPolicy, FlavorFungibility, FlavorQuotas,
    FungibilityPolicy, FungibilityPreference, LabelSelector, LabelSelectorOperator,
    LabelSelectorRequirement, NodeSelectorOperator, NodeSelectorRequirement, NodeSelectorTerm,
    PlacementMode, PodSet, PodSetAssignment, PreemptionConfig, PreemptionPolicy, Quantity,
    QueueingStrategy, ResourceGroup, ResourceQuota, StopPolicy, Taint, TaintEffect, Toleration,
    TolerationOperator, TopologyAssignment, TopologyDomain, TopologyLevel, TopologyRequest,
};
use super::node_usage::NodeUsage;
use super::{
    AdmissionFairSharingConfig, FairSharingConfig, FairSharingStrategy, SchedulerConfig, decay_rate,
};
use crate::api::constants::{JOB_UID_LABEL, condition, reason};
use crate::api::v1beta2 as api;
use crate::config::{Configuration, Feature, PreemptionStrategy, RequeuingTimestamp};
use crate::jobs::requests::pod_requests;
use crate::k8s::conditions::find_true;
use crate::k8s::quantity::{CPU, QuantityError, format_quantity, resource_value};

/// The object whose quotas are being read, for messages.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct QuotaOwner<'a> {
    /// `ClusterQueue` or `Cohort`.
    pub kind: &'static str,
    /// Object name.
    pub name: &'a str,
}

/// What a conversion does with a quota quantity that does not parse.
pub trait QuotaPolicy {
    /// What a bad quota turns into ([`Infallible`] for a policy that never fails).
    type Error;

    /// The canonical value of `quantity` as a quota of `resource` in `owner`.
    fn quota(
        &self,
        owner: &QuotaOwner<'_>,
        resource: &str,
        quantity: &ApiQuantity,
    ) -> Result<Quantity, Self::Error>;
}

/// The admitter's policy: an unreadable quota counts as zero, so that it never admits anything.
#[derive(Clone, Copy, Debug, Default)]
pub struct CountAsZero;

impl QuotaPolicy for CountAsZero {
    type Error = Infallible;

    fn quota(
        &self,
        owner: &QuotaOwner<'_>,
        resource: &str,
        quantity: &ApiQuantity,
    ) -> Result<Quantity, Infallible> {
        Ok(resource_value(resource, quantity).unwrap_or_else(|error| {
            tracing::warn!(%error, resource, kind = owner.kind, name = owner.name, "unreadable quota, counting it as zero");
            0
        }))
    }
}

/// The webhook's policy: an unreadable quota is an error naming the object.
#[derive(Clone, Copy, Debug, Default)]
pub struct Refuse;

/// A quota object whose quantities do not parse.
#[derive(Debug, thiserror::Error)]
#[error("{kind} {name}: {source}")]
pub struct QuotaError {
    /// `ClusterQueue` or `Cohort`.
    pub kind: &'static str,
    /// Object name.
    pub name: String,
    /// The quantity error.
    pub source: QuantityError,
}

impl QuotaPolicy for Refuse {
    type Error = QuotaError;

    fn quota(
        &self,
        owner: &QuotaOwner<'_>,
        resource: &str,
        quantity: &ApiQuantity,
    ) -> Result<Quantity, QuotaError> {
        resource_value(resource, quantity).map_err(|source| QuotaError {
            kind: owner.kind,
            name: owner.name.to_owned(),
            source,
        })
    }
}

/// Settings of the workload conversion taken from the controller Configuration.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ConversionOptions {
    /// Requests of resources with these name prefixes are not counted (`resources.excludeResourcePrefixes`).
    pub excluded_resource_prefixes: Vec<String>,
    /// Which time orders a workload evicted for a PodsReady timeout
    /// (`waitForPodsReady.requeuingStrategy.timestamp`).
    pub requeuing_timestamp: RequeuingTimestamp,
    /// Feature `TopologyAwareScheduling`: PodSets' topology requests and flavors' Topologies
    /// take part in choosing flavors, and a ClusterQueue whose flavor names a missing Topology
    /// admits nothing.
    pub topology_aware: bool,
    /// Feature `PriorityBoost`: a workload's `kueue.x-k8s.io/priority-boost` annotation adds
    /// to its priority.
    pub priority_boost: bool,
}

impl ConversionOptions {
    /// The options a Configuration implies.
    pub fn from_config(config: &Configuration) -> Self {
        Self {
            excluded_resource_prefixes: config.resources.exclude_resource_prefixes.clone(),
            requeuing_timestamp: config
                .wait_for_pods_ready
                .as_ref()
                .map_or(RequeuingTimestamp::Eviction, |wait| {
                    wait.requeuing_strategy.timestamp
                }),
            topology_aware: config.topology_gates().enabled,
            priority_boost: config.feature_gates.enabled(Feature::PriorityBoost),
        }
    }
}

impl Default for ConversionOptions {
    fn default() -> Self {
        Self {
            excluded_resource_prefixes: Vec::new(),
            requeuing_timestamp: RequeuingTimestamp::Eviction,
            topology_aware: true,
            priority_boost: false,
        }
    }
}

/// The scheduler settings a Configuration implies.
pub fn scheduler_config(config: &Configuration) -> SchedulerConfig {
    SchedulerConfig {
        fair_sharing: config
            .fair_sharing
            .as_ref()
            .map(|fair_sharing| FairSharingConfig {
                preemption_strategies: fair_sharing
                    .preemption_strategies
                    .iter()
                    .map(|strategy| match strategy {
                        PreemptionStrategy::LessThanOrEqualToFinalShare => {
                            FairSharingStrategy::LessThanOrEqualToFinalShare
                        }
                        PreemptionStrategy::LessThanInitialShare => {
                            FairSharingStrategy::LessThanInitialShare
                        }
                    })
                    .collect(),
            }),
        partial_admission: config.feature_gates.enabled(Feature::PartialAdmission),
        prioritize_preemptors: config
            .feature_gates
            .enabled(Feature::PrioritizePreemptorWorkloads),
        recompute_overlapping_targets: config
            .feature_gates
            .enabled(Feature::RecomputeAssignmentUponPreemptionTargetsOverlap),
        block_admission: config
            .wait_for_pods_ready
            .as_ref()
            .is_some_and(|wait| wait.block_admission),
        format_quantity: format_for_messages,
        admission_fair_sharing: config.admission_fair_sharing.as_ref().map(|fair_sharing| {
            AdmissionFairSharingConfig {
                resource_weights: fair_sharing.resource_weights.clone(),
                entry_penalty_rate: decay_rate(
                    fair_sharing.usage_sampling_interval.as_secs_f64(),
                    fair_sharing.usage_half_life_time.as_secs_f64(),
                ),
                base_units,
            }
        }),
    }
}

/// A canonical quantity in the resource's base unit, as Kueue's admission fair sharing counts
/// it (`cpu` in cores rather than millicores).
pub fn base_units(resource: &str, value: Quantity) -> f64 {
    // Quantities beyond 2^53 lose precision, as they do in Kueue's float arithmetic.
    #[allow(clippy::cast_precision_loss)]
    let value = value as f64;
    if resource == CPU {
        value / 1000.0
    } else {
        value
    }
}

/// Renders a canonical quantity the way Kueue prints it in messages (`500m`, `2`, `1Gi`).
pub fn format_for_messages(resource: &str, value: Quantity) -> String {
    format_quantity(resource, value).0
}

/// What a workload's conversion reads besides the workload: its namespace's labels and
/// LimitRanges, and the options.
#[derive(Clone, Copy, Debug)]
pub struct WorkloadInputs<'a> {
    /// Labels of the workload's namespace, shared by its workloads.
    pub namespace_labels: &'a Arc<BTreeMap<String, String>>,
    /// LimitRanges of the workload's namespace (their defaults fill missing requests).
    pub limit_ranges: &'a [LimitRange],
    /// Conversion options.
    pub options: &'a ConversionOptions,
}

/// `namespace/name` of a Workload: its key in the model.
pub fn workload_key(workload: &api::Workload) -> String {
    format!(
        "{}/{}",
        workload.namespace().unwrap_or_default(),
        workload.name_any()
    )
}

/// The workload without PodSets, in no ClusterQueue yet.
pub fn workload_without_pod_sets(
    object: &api::Workload,
    inputs: &WorkloadInputs<'_>,
) -> model::Workload {
    let created = object
        .metadata
        .creation_timestamp
        .as_ref()
        .map_or(Timestamp::UNIX_EPOCH, |time| time.0);
    let mut workload = model::Workload::new(
        &workload_key(object),
        "",
        queue_order_timestamp(object, created, inputs.options.requeuing_timestamp),
    );
    workload.uid = object.uid().unwrap_or_default();
    workload.job_uid = object.labels().get(JOB_UID_LABEL).cloned();
    workload.local_queue = object.spec.queue_name.clone().unwrap_or_default();
    workload.namespace_labels = Arc::clone(inputs.namespace_labels);
    workload.priority = object.priority(inputs.options.priority_boost).effective();
    workload.quota_reserved_at = object
        .true_condition(condition::QUOTA_RESERVED)
        .map(|condition| condition.last_transition_time.0);
    workload.evicted = object.is_condition_true(condition::EVICTED);
    workload.pods_ready = object.is_condition_true(condition::PODS_READY);
    workload.requeue_at = object
        .status
        .as_ref()
        .and_then(|status| status.requeue_state.as_ref())
        .and_then(|state| state.requeue_at.as_ref())
        .map(|time| time.0);
    workload
}

/// Kueue's `GetQueueOrderTimestamp`: the eviction time after a PodsReady timeout (when
/// requeuing by eviction time) or an admission check eviction, else the creation time.
fn queue_order_timestamp(
    workload: &api::Workload,
    created: Timestamp,
    requeuing: RequeuingTimestamp,
) -> Timestamp {
    workload
        .condition(condition::EVICTED)
        .filter(|evicted| evicted.status == "True")
        .filter(|evicted| {
            (evicted.reason == reason::PODS_READY_TIMEOUT
                && requeuing == RequeuingTimestamp::Eviction)
                || evicted.reason == reason::ADMISSION_CHECK
        })
        .map_or(created, |evicted| evicted.last_transition_time.0)
}

/// A workload with its PodSets' per-pod requests, in no ClusterQueue yet.
pub fn workload(
    object: &api::Workload,
    inputs: &WorkloadInputs<'_>,
) -> Result<model::Workload, QuantityError> {
    let mut workload = workload_without_pod_sets(object, inputs);
    workload.pod_sets = object
        .spec
        .pod_sets
        .iter()
        .map(|pod_set| pod_set_model(pod_set, inputs))
        .collect::<Result<_, _>>()?;
    Ok(workload)
}

fn pod_set_model(
    pod_set: &api::PodSet,
    inputs: &WorkloadInputs<'_>,
) -> Result<PodSet, QuantityError> {
    let spec = pod_set.template.decode().spec.unwrap_or_default();
    let requests = pod_requests(&spec, inputs.limit_ranges)?
        .into_iter()
        .filter(|(name, _)| {
            !inputs
                .options
                .excluded_resource_prefixes
                .iter()
                .any(|prefix| name.starts_with(prefix.as_str()))
        })
        .collect();
    let node_affinity = spec
        .affinity
        .as_ref()
        .and_then(|affinity| affinity.node_affinity.as_ref())
        .and_then(|node| {
            node.required_during_scheduling_ignored_during_execution
                .as_ref()
        })
        .map(|selector| {
            selector
                .node_selector_terms
                .iter()
                .map(|term| NodeSelectorTerm {
                    match_expressions: term
                        .match_expressions
                        .iter()
                        .flatten()
                        .filter_map(node_selector_requirement)
                        .collect(),
                })
                .collect()
        })
        .unwrap_or_default();
    Ok(PodSet {
        name: pod_set.name.clone(),
        count: pod_set.count,
        min_count: pod_set.min_count,
        requests,
        node_selector: spec.node_selector.clone().unwrap_or_default(),
        node_affinity,
        tolerations: spec.tolerations.iter().flatten().map(toleration).collect(),
        topology: inputs
            .options
            .topology_aware
            .then(|| topology_request(pod_set.topology_request.as_ref()))
            .flatten(),
    })
}

/// The admission in canonical units, each PodSet's usage scaled down to the pods that have
/// not finished yet (`status.reclaimablePods`), as Kueue accounts it.
pub fn admission(object: &api::Workload, admission: &api::Admission) -> Admission {
    let reclaimable: BTreeMap<&str, i32> = object
        .status
        .iter()
        .flat_map(|status| &status.reclaimable_pods)
        .map(|pod| (pod.name.as_str(), pod.count))
        .collect();
    Admission {
        cluster_queue: admission.cluster_queue.clone(),
        pod_set_assignments: admission
            .pod_set_assignments
            .iter()
            .map(|assignment| {
                let count = assignment.count.unwrap_or_else(|| {
                    object
                        .spec
                        .pod_sets
                        .iter()
                        .find(|pod_set| pod_set.name == assignment.name)
                        .map_or(1, |pod_set| pod_set.count)
                });
                let remaining = reclaimable
                    .get(assignment.name.as_str())
                    .map_or(count, |finished| (count - finished).max(0));
                let resource_usage = assignment
                    .resource_usage
                    .iter()
                    .map(|(resource, quantity)| {
                        let total = usage_value(resource, quantity);
                        let value = if remaining < count && count > 0 {
                            total / i64::from(count) * i64::from(remaining)
                        } else {
                            total
                        };
                        (resource.clone(), value)
                    })
                    .collect();
                PodSetAssignment {
                    name: assignment.name.clone(),
                    flavors: assignment.flavors.clone(),
                    resource_usage,
                    count: remaining,
                    topology: assignment
                        .topology_assignment
                        .as_ref()
                        .map(topology_assignment),
                }
            })
            .collect(),
    }
}

/// A stored topology assignment, its runs of domains expanded.
fn topology_assignment(assignment: &api::TopologyAssignment) -> TopologyAssignment {
    let expanded = crate::api::v1beta1::TopologyAssignment::from(assignment.clone());
    TopologyAssignment {
        levels: expanded.levels,
        domains: expanded
            .domains
            .into_iter()
            .map(|domain| TopologyDomain {
                values: domain.values,
                count: domain.count,
            })
            .collect(),
    }
}

/// Reserved usage; an unreadable quantity counts as everything, so that quota is never
/// over-committed because of it.
fn usage_value(resource: &str, quantity: &ApiQuantity) -> Quantity {
    resource_value(resource, quantity).unwrap_or_else(|error| {
        tracing::warn!(%error, resource, "unreadable reserved usage, counting it as unlimited");
        Quantity::MAX
    })
}

fn toleration(toleration: &ApiToleration) -> Toleration {
    Toleration {
        key: toleration.key.clone().unwrap_or_default(),
        operator: if toleration.operator.as_deref() == Some("Exists") {
            TolerationOperator::Exists
        } else {
            TolerationOperator::Equal
        },
        value: toleration.value.clone().unwrap_or_default(),
        effect: toleration.effect.as_deref().and_then(taint_effect),
    }
}

fn taint_effect(effect: &str) -> Option<TaintEffect> {
    match effect {
        "NoSchedule" => Some(TaintEffect::NoSchedule),
        "PreferNoSchedule" => Some(TaintEffect::PreferNoSchedule),
        "NoExecute" => Some(TaintEffect::NoExecute),
        _ => None,
    }
}

fn taint(taint: &ApiTaint) -> Option<Taint> {
    Some(Taint {
        key: taint.key.clone(),
        value: taint.value.clone().unwrap_or_default(),
        effect: taint_effect(&taint.effect)?,
    })
}

fn node_selector_requirement(
    requirement: &ApiNodeSelectorRequirement,
) -> Option<NodeSelectorRequirement> {
    let operator = match requirement.operator.as_str() {
        "In" => NodeSelectorOperator::In,
        "NotIn" => NodeSelectorOperator::NotIn,
        "Exists" => NodeSelectorOperator::Exists,
        "DoesNotExist" => NodeSelectorOperator::DoesNotExist,
        "Gt" => NodeSelectorOperator::Gt,
        "Lt" => NodeSelectorOperator::Lt,
        _ => return None,
    };
    Some(NodeSelectorRequirement {
        key: requirement.key.clone(),
        operator,
        values: requirement.values.clone().unwrap_or_default(),
    })
}

/// A namespace selector; `None` (selecting nothing) when it has an unknown operator.
fn label_selector(selector: &ApiLabelSelector) -> Option<LabelSelector> {
    let match_expressions = selector
        .match_expressions
        .iter()
        .flatten()
        .map(|requirement| {
            let operator = match requirement.operator.as_str() {
                "In" => LabelSelectorOperator::In,
                "NotIn" => LabelSelectorOperator::NotIn,
                "Exists" => LabelSelectorOperator::Exists,
                "DoesNotExist" => LabelSelectorOperator::DoesNotExist,
                _ => return None,
            };
            Some(LabelSelectorRequirement {
                key: requirement.key.clone(),
                operator,
                values: requirement.values.clone().unwrap_or_default(),
            })
        })
        .collect::<Option<Vec<_>>>()?;
    Some(LabelSelector {
        match_labels: selector.match_labels.clone().unwrap_or_default(),
        match_expressions,
    })
}

/// A ResourceFlavor.
pub fn resource_flavor(
    flavor: &api::ResourceFlavor,
    topologies: Option<&[Arc<api::Topology>]>,
) -> model::ResourceFlavor {
    model::ResourceFlavor {
        name: flavor.name_any(),
        node_labels: flavor.spec.node_labels.clone(),
        node_taints: flavor.spec.node_taints.iter().filter_map(taint).collect(),
        tolerations: flavor.spec.tolerations.iter().map(toleration).collect(),
        topology_levels: topologies.and_then(|topologies| topology_levels(flavor, topologies)),
    }
}

/// The free capacity of a topology-aware flavor: its `levels` (highest first) over the nodes
/// that are Ready, schedulable and carry the flavor's node labels, each node's allocatable,
/// less what `usage` counts on it, by its value of every level (a node missing a level label
/// is not in the Topology).
pub fn topology_capacity(
    flavor: &api::ResourceFlavor,
    topology: &str,
    levels: &[String],
    nodes: &[Arc<Node>],
    usage: &NodeUsage,
) -> crate::quota::topology::TopologyCapacity {
    let mut capacity = crate::quota::topology::TopologyCapacity::new(topology, levels.to_vec());
    for node in nodes {
        let labels = node.labels();
        let of_flavor = flavor
            .spec
            .node_labels
            .iter()
            .all(|(key, value)| labels.get(key) == Some(value));
        let schedulable = !node
            .spec
            .as_ref()
            .and_then(|spec| spec.unschedulable)
            .unwrap_or(false);
        let status = node.status.as_ref();
        let ready = status
            .and_then(|status| status.conditions.as_ref())
            .is_some_and(|conditions| {
                conditions
                    .iter()
                    .any(|condition| condition.type_ == "Ready" && condition.status == "True")
            });
        let values: Option<Vec<String>> = levels
            .iter()
            .map(|level| labels.get(level).cloned())
            .collect();
        let (true, true, true, Some(values)) = (of_flavor, schedulable, ready, values) else {
            continue;
        };
        let used = usage.on(&node.name_any());
        let free: BTreeMap<String, Quantity> = status
            .and_then(|status| status.allocatable.as_ref())
            .into_iter()
            .flatten()
            .filter_map(|(resource, quantity)| {
                let allocatable = resource_value(resource, quantity).ok()?;
                let taken = used.and_then(|used| used.get(resource)).copied();
                let free = allocatable.saturating_sub(taken.unwrap_or(0)).max(0);
                Some((resource.clone(), free))
            })
            .collect();
        capacity.add_node(values, &free);
    }
    capacity
}

/// The level node labels of the flavor's Topology (empty while it does not exist); `None`
/// for a flavor without one.
fn topology_levels(
    flavor: &api::ResourceFlavor,
    topologies: &[Arc<api::Topology>],
) -> Option<Vec<String>> {
    let name = flavor.spec.topology_name.as_ref()?;
    let topology = topologies
        .iter()
        .find(|topology| topology.name_any() == *name);
    Some(topology.map_or_else(Vec::new, |topology| {
        topology
            .spec
            .levels
            .iter()
            .map(|level| level.node_label.clone())
            .collect()
    }))
}

/// A PodSet's explicit topology request (Kueue `IsExplicitlyRequestingTAS`), if it makes one.
fn topology_request(request: Option<&api::PodSetTopologyRequest>) -> Option<TopologyRequest> {
    let request = request?;
    let slice_only = request.pod_set_slice_required_topology.is_some()
        || request.pod_set_slice_size.is_some()
        || !request
            .podset_slice_required_topology_constraints
            .is_empty();
    let level = match (&request.required, &request.preferred, request.unconstrained) {
        (Some(level), _, _) | (None, Some(level), _) => TopologyLevel::Named(level.clone()),
        (None, None, _) if slice_only => TopologyLevel::Highest,
        (None, None, Some(true)) => TopologyLevel::Lowest,
        (None, None, Some(false)) => TopologyLevel::Unresolvable,
        (None, None, None) => return None,
    };
    let slice_levels = request
        .pod_set_slice_required_topology
        .iter()
        .cloned()
        .chain(
            request
                .podset_slice_required_topology_constraints
                .iter()
                .map(|layer| layer.topology.clone()),
        )
        .collect();
    let mode = match (&request.required, &request.preferred) {
        (Some(_), _) => PlacementMode::Required,
        (None, Some(_)) => PlacementMode::Preferred,
        (None, None) if slice_only => PlacementMode::Preferred,
        (None, None) => PlacementMode::Unconstrained,
    };
    let slice_size = request.pod_set_slice_size.or_else(|| {
        request
            .podset_slice_required_topology_constraints
            .first()
            .map(|layer| layer.size)
    });
    Some(TopologyRequest {
        level,
        mode,
        slice_levels,
        slice_size,
    })
}

fn resource_groups<P: QuotaPolicy>(
    owner: &QuotaOwner<'_>,
    groups: &[api::ResourceGroup],
    policy: &P,
) -> Result<Vec<ResourceGroup>, P::Error> {
    let quota = |resource: &str, quantity: &ApiQuantity| policy.quota(owner, resource, quantity);
    groups
        .iter()
        .map(|group| {
            let flavors = group
                .flavors
                .iter()
                .map(|flavor| {
                    let resources = flavor
                        .resources
                        .iter()
                        .map(|limits| {
                            Ok(ResourceQuota {
                                name: limits.name.clone(),
                                nominal: quota(&limits.name, &limits.nominal_quota)?,
                                borrowing_limit: limits
                                    .borrowing_limit
                                    .as_ref()
                                    .map(|limit| quota(&limits.name, limit))
                                    .transpose()?,
                                lending_limit: limits
                                    .lending_limit
                                    .as_ref()
                                    .map(|limit| quota(&limits.name, limit))
                                    .transpose()?,
                            })
                        })
                        .collect::<Result<_, P::Error>>()?;
                    Ok(FlavorQuotas {
                        name: flavor.name.clone(),
                        resources,
                    })
                })
                .collect::<Result<_, P::Error>>()?;
            Ok(ResourceGroup {
                covered_resources: group.covered_resources.clone(),
                flavors,
            })
        })
        .collect()
}

/// A fair sharing weight (default 1), read with milli precision.
pub fn fair_weight(fair_sharing: Option<&api::FairSharing>) -> f64 {
    fair_sharing
        .and_then(|fair_sharing| fair_sharing.weight.as_ref())
        .and_then(|weight| resource_value("cpu", weight).ok())
        .map_or(1.0, |milli| milli as f64 / 1000.0)
}

/// A Cohort object.
pub fn cohort<P: QuotaPolicy>(cohort: &api::Cohort, policy: &P) -> Result<model::Cohort, P::Error> {
    let name = cohort.name_any();
    let owner = QuotaOwner {
        kind: "Cohort",
        name: &name,
    };
    let resource_groups = resource_groups(&owner, &cohort.spec.resource_groups, policy)?;
    Ok(model::Cohort {
        parent: cohort
            .spec
            .parent_name
            .clone()
            .filter(|parent| !parent.is_empty()),
        resource_groups,
        fair_sharing_weight: fair_weight(cohort.spec.fair_sharing.as_ref()),
        name,
    })
}

/// A stop policy, `None` when unset.
pub fn stop_policy(policy: Option<api::StopPolicy>) -> StopPolicy {
    match policy.unwrap_or_default() {
        api::StopPolicy::None => StopPolicy::None,
        api::StopPolicy::Hold => StopPolicy::Hold,
        api::StopPolicy::HoldAndDrain => StopPolicy::HoldAndDrain,
    }
}

fn preemption_policy(policy: api::PreemptionPolicy) -> PreemptionPolicy {
    match policy {
        api::PreemptionPolicy::Never => PreemptionPolicy::Never,
        api::PreemptionPolicy::Any => PreemptionPolicy::Any,
        api::PreemptionPolicy::LowerPriority => PreemptionPolicy::LowerPriority,
        api::PreemptionPolicy::LowerOrNewerEqualPriority => {
            PreemptionPolicy::LowerOrNewerEqualPriority
        }
    }
}

fn fungibility_policy(policy: api::FlavorFungibilityPolicy) -> FungibilityPolicy {
    match policy {
        api::FlavorFungibilityPolicy::MayStopSearch => FungibilityPolicy::MayStopSearch,
        api::FlavorFungibilityPolicy::TryNextFlavor => FungibilityPolicy::TryNextFlavor,
    }
}

/// The objects a ClusterQueue refers to by name and that may be missing: ResourceFlavors,
/// AdmissionChecks with whether each is `Active`, and the Topologies of TAS flavors.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct QueueReferences {
    /// Names of the ResourceFlavors that exist.
    pub flavors: BTreeSet<String>,
    /// AdmissionChecks that exist, by name: whether their `Active` condition is true.
    pub admission_checks: BTreeMap<String, bool>,
    /// Existing flavors whose Topology does not exist, by name: the Topology they name.
    pub missing_topologies: BTreeMap<String, String>,
}

impl QueueReferences {
    /// The references that exist among these objects; flavors' Topologies are checked only
    /// when `topologies` is given (topology-aware scheduling on).
    pub fn of(
        flavors: &[Arc<api::ResourceFlavor>],
        checks: &[Arc<api::AdmissionCheck>],
        topologies: Option<&[Arc<api::Topology>]>,
    ) -> Self {
        let missing_topologies = topologies.map_or_else(BTreeMap::new, |topologies| {
            let existing: BTreeSet<String> = topologies.iter().map(|t| t.name_any()).collect();
            flavors
                .iter()
                .filter_map(|flavor| {
                    let topology = flavor.spec.topology_name.as_ref()?;
                    (!existing.contains(topology)).then(|| (flavor.name_any(), topology.clone()))
                })
                .collect()
        });
        Self {
            missing_topologies,
            flavors: flavors.iter().map(|flavor| flavor.name_any()).collect(),
            admission_checks: checks
                .iter()
                .map(|check| {
                    let active = check.status.as_ref().is_some_and(|status| {
                        find_true(&status.conditions, condition::ACTIVE).is_some()
                    });
                    (check.name_any(), active)
                })
                .collect(),
        }
    }
}

/// AdmissionChecks a ClusterQueue names that do not exist, and those that are not `Active`,
/// each in the order it names them.
pub fn unusable_admission_checks(
    cluster_queue: &api::ClusterQueue,
    references: &QueueReferences,
) -> (Vec<String>, Vec<String>) {
    let (mut missing, mut inactive) = (Vec::new(), Vec::new());
    for name in admission_check_names(cluster_queue) {
        match references.admission_checks.get(name) {
            None => missing.push(name.to_owned()),
            Some(false) => inactive.push(name.to_owned()),
            Some(true) => {}
        }
    }
    (missing, inactive)
}

fn admission_check_names(cluster_queue: &api::ClusterQueue) -> impl Iterator<Item = &str> {
    cluster_queue
        .spec
        .admission_checks_strategy
        .iter()
        .flat_map(|strategy| &strategy.admission_checks)
        .map(|rule| rule.name.as_str())
}

/// The AdmissionChecks a workload admitted with these flavors must pass (Kueue's
/// `AdmissionChecksForWorkload`): the rules without flavors, and those naming one of them;
/// sorted by name.
pub fn admission_checks_for(
    cluster_queue: &api::ClusterQueue,
    admitted_flavors: &BTreeSet<&str>,
) -> Vec<String> {
    let mut checks: Vec<String> = cluster_queue
        .spec
        .admission_checks_strategy
        .iter()
        .flat_map(|strategy| &strategy.admission_checks)
        .filter(|rule| {
            rule.on_flavors.is_empty()
                || rule
                    .on_flavors
                    .iter()
                    .any(|flavor| admitted_flavors.contains(flavor.as_str()))
        })
        .map(|rule| rule.name.clone())
        .collect();
    checks.sort();
    checks.dedup();
    checks
}

/// Flavors a ClusterQueue names that do not exist, in the order it names them.
pub fn missing_flavors(
    cluster_queue: &api::ClusterQueue,
    flavors: &BTreeSet<String>,
) -> Vec<String> {
    let mut missing: Vec<String> = Vec::new();
    for flavor in flavor_names(cluster_queue) {
        if !flavors.contains(flavor) && !missing.iter().any(|name| name == flavor) {
            missing.push(flavor.to_owned());
        }
    }
    missing
}

/// The queue's TAS flavors whose Topology does not exist, in the queue's order, each with the
/// Topology it names.
pub fn missing_topologies<'a>(
    cluster_queue: &'a api::ClusterQueue,
    references: &'a QueueReferences,
) -> Vec<(&'a str, &'a str)> {
    flavor_names(cluster_queue)
        .filter_map(|flavor| {
            let topology = references.missing_topologies.get(flavor)?;
            Some((flavor, topology.as_str()))
        })
        .collect()
}

fn flavor_names(cluster_queue: &api::ClusterQueue) -> impl Iterator<Item = &str> {
    cluster_queue
        .spec
        .resource_groups
        .iter()
        .flat_map(|group| &group.flavors)
        .map(|flavor| flavor.name.as_str())
}

/// A ClusterQueue; inactive when it references flavors or AdmissionChecks that are missing
/// (or inactive) among `references`, or is being deleted.
pub fn cluster_queue<P: QuotaPolicy>(
    cq: &api::ClusterQueue,
    references: &QueueReferences,
    policy: &P,
) -> Result<model::ClusterQueue, P::Error> {
    let spec = &cq.spec;
    let name = cq.name_any();
    let owner = QuotaOwner {
        kind: "ClusterQueue",
        name: &name,
    };
    let resource_groups = resource_groups(&owner, &spec.resource_groups, policy)?;
    let preemption = spec.preemption.clone().unwrap_or_default();
    let fungibility = spec.flavor_fungibility.clone().unwrap_or_default();
    let borrow_within_cohort = preemption.borrow_within_cohort.unwrap_or_default();
    Ok(model::ClusterQueue {
        name,
        cohort: spec.cohort_name.clone().filter(|name| !name.is_empty()),
        resource_groups,
        queueing_strategy: match spec.queueing_strategy {
            api::QueueingStrategy::StrictFifo => QueueingStrategy::StrictFifo,
            api::QueueingStrategy::BestEffortFifo => QueueingStrategy::BestEffortFifo,
        },
        namespace_selector: spec.namespace_selector.as_ref().and_then(label_selector),
        preemption: PreemptionConfig {
            within_cluster_queue: preemption_policy(preemption.within_cluster_queue),
            reclaim_within_cohort: preemption_policy(preemption.reclaim_within_cohort),
            borrow_within_cohort: BorrowWithinCohort {
                policy: match borrow_within_cohort.policy {
                    api::BorrowWithinCohortPolicy::Never => BorrowWithinCohortPolicy::Never,
                    api::BorrowWithinCohortPolicy::LowerPriority => {
                        BorrowWithinCohortPolicy::LowerPriority
                    }
                },
                max_priority_threshold: borrow_within_cohort.max_priority_threshold,
            },
        },
        flavor_fungibility: FlavorFungibility {
            when_can_borrow: fungibility_policy(fungibility.when_can_borrow),
            when_can_preempt: fungibility_policy(fungibility.when_can_preempt),
            preference: fungibility.preference.map(|preference| match preference {
                api::FlavorFungibilityPreference::BorrowingOverPreemption => {
                    FungibilityPreference::BorrowingOverPreemption
                }
                api::FlavorFungibilityPreference::PreemptionOverBorrowing => {
                    FungibilityPreference::PreemptionOverBorrowing
                }
            }),
        },
        stop_policy: stop_policy(spec.stop_policy),
        fair_sharing_weight: fair_weight(spec.fair_sharing.as_ref()),
        admission_fair_sharing: spec.admission_scope.as_ref().is_some_and(|scope| {
            scope.admission_mode == api::AdmissionMode::UsageBasedAdmissionFairSharing
        }),
        active: cq.metadata.deletion_timestamp.is_none()
            && missing_flavors(cq, &references.flavors).is_empty()
            && unusable_admission_checks(cq, references) == (Vec::new(), Vec::new())
            && missing_topologies(cq, references).is_empty(),
    })
}

#[cfg(test)]
mod tests;
