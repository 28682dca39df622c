//! Pure conversion from the Kueue API objects in the reflector stores to the scheduler's model:
//! flavors, cohorts and ClusterQueues with integer quotas, workloads with per-pod requests
//! (LimitRange defaults applied), and the split of workloads into those holding quota, those
//! pending in a ClusterQueue and those that cannot be queued at all (missing or stopped
//! LocalQueue).
//!
//! A workload holds quota while `status.admission` is set and it is not finished: that is the
//! state an admitter restarted after a crash rebuilds its usage from. It is pending when it has
//! no admission, is active, is not finished and its LocalQueue exists.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fmt;
use std::hash::{Hash, Hasher};
use std::sync::Arc;

use jiff::Timestamp;
use k8s_openapi::api::core::v1::{
    LimitRange, Namespace, NodeSelectorRequirement as ApiNodeSelectorRequirement, PodSpec,
    Taint as ApiTaint, Toleration as ApiToleration,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity as ApiQuantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{
    Condition, LabelSelector as ApiLabelSelector,
};
use kube::ResourceExt;

use crate::api::constants::{JOB_UID_LABEL, condition, reason};
use crate::api::v1beta2 as api;
use crate::config::{Configuration, Feature, PreemptionStrategy, RequeuingTimestamp};
use crate::jobs::requests::pod_requests;
use crate::k8s::quantity::{QuantityError, format_quantity, resource_value};
use crate::quota::model::{
    self, Admission, BorrowWithinCohort, BorrowWithinCohortPolicy, FlavorFungibility, FlavorQuotas,
    FungibilityPolicy, FungibilityPreference, LabelSelector, LabelSelectorOperator,
    LabelSelectorRequirement, NodeSelectorOperator, NodeSelectorRequirement, NodeSelectorTerm,
    PodSet, PodSetAssignment, PreemptionConfig, PreemptionPolicy, Quantity, QueueingStrategy,
    ResourceGroup, ResourceQuota, StopPolicy, Taint, TaintEffect, Toleration, TolerationOperator,
};
use crate::quota::{
    FairSharingConfig, FairSharingStrategy, PendingReason, SchedulerConfig, Snapshot,
};
use crate::stores::Stores;

/// The objects of every watched kind, read from the stores at one moment.
#[derive(Clone, Debug, Default)]
pub struct ClusterState {
    /// ClusterQueues.
    pub cluster_queues: Vec<Arc<api::ClusterQueue>>,
    /// LocalQueues.
    pub local_queues: Vec<Arc<api::LocalQueue>>,
    /// Cohorts.
    pub cohorts: Vec<Arc<api::Cohort>>,
    /// ResourceFlavors.
    pub resource_flavors: Vec<Arc<api::ResourceFlavor>>,
    /// Workloads.
    pub workloads: Vec<Arc<api::Workload>>,
    /// Namespaces (their labels select ClusterQueues).
    pub namespaces: Vec<Arc<Namespace>>,
    /// LimitRanges (their defaults fill missing requests).
    pub limit_ranges: Vec<Arc<LimitRange>>,
}

impl ClusterState {
    /// Reads the current content of the stores.
    pub fn read(stores: &Stores) -> Self {
        Self {
            cluster_queues: stores.cluster_queues.state(),
            local_queues: stores.local_queues.state(),
            cohorts: stores.cohorts.state(),
            resource_flavors: stores.resource_flavors.state(),
            workloads: stores.workloads.state(),
            namespaces: stores.namespaces.state(),
            limit_ranges: stores.limit_ranges.state(),
        }
    }
}

/// Settings of the conversion taken from the controller Configuration.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ConversionOptions {
    /// Requests of resources with these name prefixes are not counted (`resources.excludeResourcePrefixes`).
    pub excluded_resource_prefixes: Vec<String>,
    /// Which time orders a workload evicted for a PodsReady timeout
    /// (`waitForPodsReady.requeuingStrategy.timestamp`).
    pub requeuing_timestamp: RequeuingTimestamp,
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
        }
    }
}

impl Default for ConversionOptions {
    fn default() -> Self {
        Self {
            excluded_resource_prefixes: Vec::new(),
            requeuing_timestamp: RequeuingTimestamp::Eviction,
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
        format_quantity: format_for_messages,
    }
}

/// Renders a canonical quantity the way Kueue prints it in messages (`500m`, `2`, `1Gi`).
pub fn format_for_messages(resource: &str, value: Quantity) -> String {
    format_quantity(resource, value).0
}

/// A LocalQueue by namespace and name.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct LocalQueueRef {
    /// Namespace.
    pub namespace: String,
    /// Name.
    pub name: String,
}

impl LocalQueueRef {
    /// A reference from borrowed names.
    pub fn new(namespace: &str, name: &str) -> Self {
        Self {
            namespace: namespace.to_owned(),
            name: name.to_owned(),
        }
    }
}

impl fmt::Display for LocalQueueRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.namespace, self.name)
    }
}

/// A workload holding quota (`status.admission` set, not finished).
#[derive(Clone, Debug, PartialEq)]
pub struct Holder {
    /// The workload, with its admission.
    pub workload: model::Workload,
    /// The LocalQueue it was submitted to (`None` without `spec.queueName`).
    pub local_queue: Option<LocalQueueRef>,
    /// Whether it is also `Admitted` (counts in `flavorsUsage`, not only `flavorsReservation`).
    pub admitted: bool,
}

/// A workload waiting in a ClusterQueue.
#[derive(Clone, Debug, PartialEq)]
pub struct PendingWorkload {
    /// The workload; `cluster_queue` is its LocalQueue's ClusterQueue.
    pub workload: model::Workload,
    /// The LocalQueue it was submitted to.
    pub local_queue: LocalQueueRef,
}

/// A workload that cannot wait in any ClusterQueue, with the `QuotaReserved=False` it gets.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Unqueued {
    /// Workload key (`namespace/name`).
    pub workload: String,
    /// The LocalQueue it names.
    pub local_queue: LocalQueueRef,
    /// Condition reason.
    pub reason: PendingReason,
    /// Condition message.
    pub message: String,
}

/// The cluster converted for the scheduler.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Converted {
    /// ResourceFlavors.
    pub flavors: Vec<model::ResourceFlavor>,
    /// Cohort objects.
    pub cohorts: Vec<model::Cohort>,
    /// ClusterQueues (inactive when they reference missing flavors or are being deleted).
    pub cluster_queues: Vec<model::ClusterQueue>,
    /// Workloads holding quota.
    pub holders: Vec<Holder>,
    /// Workloads waiting in a ClusterQueue.
    pub pending: Vec<PendingWorkload>,
    /// Workloads whose LocalQueue is missing or stopped, or whose requests cannot be read.
    pub unqueued: Vec<Unqueued>,
    /// Keys of workloads holding quota through a LocalQueue with `stopPolicy: HoldAndDrain`
    /// that are not evicted yet.
    pub local_queue_drains: Vec<String>,
}

impl Converted {
    /// A snapshot of flavors, cohorts, ClusterQueues and quota holders taken at `now`.
    pub fn snapshot(&self, config: SchedulerConfig, now: Timestamp) -> Snapshot {
        let builder = Snapshot::builder(now).config(config);
        let builder = self
            .flavors
            .iter()
            .cloned()
            .fold(builder, |b, f| b.flavor(f));
        let builder = self
            .cohorts
            .iter()
            .cloned()
            .fold(builder, |b, c| b.cohort(c));
        let builder = self
            .cluster_queues
            .iter()
            .cloned()
            .fold(builder, |b, cq| b.cluster_queue(cq));
        self.holders
            .iter()
            .map(|holder| holder.workload.clone())
            .fold(builder, |b, w| b.admitted(w))
            .build()
    }
}

/// Workloads converted earlier, reused while neither the workload (its `resourceVersion`) nor
/// what its conversion reads (namespace labels, LimitRanges, options) changed.
#[derive(Clone, Debug, Default)]
pub struct WorkloadCache {
    entries: HashMap<String, CachedWorkload>,
}

#[derive(Clone, Debug)]
struct CachedWorkload {
    uid: Option<String>,
    resource_version: Option<String>,
    context: u64,
    workload: Result<model::Workload, QuantityError>,
}

impl WorkloadCache {
    /// An empty cache.
    pub fn new() -> Self {
        Self::default()
    }

    /// The workload with PodSets, converted now or taken from the previous round.
    fn get(
        &self,
        next: &mut HashMap<String, CachedWorkload>,
        key: &str,
        object: &api::Workload,
        context: &WorkloadContext<'_>,
    ) -> Result<model::Workload, QuantityError> {
        let uid = object.uid();
        let resource_version = object.resource_version();
        let reusable = self.entries.get(key).filter(|cached| {
            resource_version.is_some()
                && cached.uid == uid
                && cached.resource_version == resource_version
                && cached.context == context.fingerprint
        });
        let workload = match reusable {
            Some(cached) => cached.workload.clone(),
            None => model_workload(object, "", context),
        };
        next.insert(
            key.to_owned(),
            CachedWorkload {
                uid,
                resource_version,
                context: context.fingerprint,
                workload: workload.clone(),
            },
        );
        workload
    }
}

/// Converts everything the scheduler needs from `state`.
pub fn convert(state: &ClusterState, options: &ConversionOptions) -> Converted {
    convert_cached(state, options, &mut WorkloadCache::new())
}

/// [`convert`], reusing the workloads `cache` holds from the previous call and keeping the
/// ones converted now for the next.
pub fn convert_cached(
    state: &ClusterState,
    options: &ConversionOptions,
    cache: &mut WorkloadCache,
) -> Converted {
    let flavor_names: BTreeSet<String> = state
        .resource_flavors
        .iter()
        .map(|flavor| flavor.name_any())
        .collect();
    let namespace_labels: BTreeMap<String, BTreeMap<String, String>> = state
        .namespaces
        .iter()
        .map(|namespace| (namespace.name_any(), namespace.labels().clone()))
        .collect();
    let mut limit_ranges: BTreeMap<String, Vec<LimitRange>> = BTreeMap::new();
    for range in &state.limit_ranges {
        limit_ranges
            .entry(range.namespace().unwrap_or_default())
            .or_default()
            .push(LimitRange::clone(range));
    }
    let local_queues: BTreeMap<LocalQueueRef, &api::LocalQueue> = state
        .local_queues
        .iter()
        .map(|queue| {
            (
                LocalQueueRef::new(&queue.namespace().unwrap_or_default(), &queue.name_any()),
                queue.as_ref(),
            )
        })
        .collect();

    let mut converted = Converted {
        flavors: state
            .resource_flavors
            .iter()
            .map(|flavor| resource_flavor(flavor))
            .collect(),
        cohorts: state.cohorts.iter().map(|c| cohort(c)).collect(),
        cluster_queues: state
            .cluster_queues
            .iter()
            .map(|cq| cluster_queue(cq, &flavor_names))
            .collect(),
        ..Converted::default()
    };

    let no_labels = BTreeMap::new();
    let mut fingerprints: HashMap<String, u64> = HashMap::new();
    let mut next_cache = HashMap::with_capacity(state.workloads.len());
    for object in &state.workloads {
        let namespace = object.namespace().unwrap_or_default();
        let labels = namespace_labels.get(&namespace).unwrap_or(&no_labels);
        let ranges = limit_ranges.get(&namespace).map_or(&[][..], Vec::as_slice);
        let fingerprint = *fingerprints
            .entry(namespace.clone())
            .or_insert_with(|| context_fingerprint(labels, ranges, options));
        let context = WorkloadContext {
            namespace_labels: labels,
            limit_ranges: ranges,
            options,
            fingerprint,
        };
        let key = workload_key(object);
        let local_queue = object
            .spec
            .queue_name
            .as_deref()
            .map(|name| LocalQueueRef::new(&namespace, name));
        let queue_object = local_queue.as_ref().and_then(|lq| local_queues.get(lq));
        match placement(object) {
            Placement::Ignored => {}
            Placement::HoldsQuota(admission) => {
                let mut workload = cache
                    .get(&mut next_cache, &key, object, &context)
                    // Requests only matter while pending; the admission carries the usage.
                    .unwrap_or_else(|_| bare_workload(object, "", &context));
                workload.cluster_queue = admission.cluster_queue.clone();
                workload.admission = Some(model_admission(object, admission));
                let drained = queue_object
                    .is_some_and(|lq| stop_policy(lq.spec.stop_policy) == StopPolicy::HoldAndDrain);
                if drained && !workload.evicted {
                    converted.local_queue_drains.push(key.clone());
                }
                converted.holders.push(Holder {
                    workload,
                    local_queue,
                    admitted: is_true(object, condition::ADMITTED),
                });
            }
            Placement::Queued(queue_name) => {
                let local_queue = LocalQueueRef::new(&namespace, queue_name);
                let Some(queue_object) = queue_object else {
                    converted.unqueued.push(Unqueued {
                        workload: key,
                        message: format!("LocalQueue {} doesn't exist", local_queue.name),
                        local_queue,
                        reason: PendingReason::Misconfigured,
                    });
                    continue;
                };
                if stop_policy(queue_object.spec.stop_policy) != StopPolicy::None {
                    converted.unqueued.push(Unqueued {
                        workload: key,
                        message: format!("LocalQueue {} is stopped", local_queue.name),
                        local_queue,
                        reason: PendingReason::Suspended,
                    });
                    continue;
                }
                match cache.get(&mut next_cache, &key, object, &context) {
                    Ok(mut workload) => {
                        workload.cluster_queue =
                            queue_object.spec.cluster_queue.clone().unwrap_or_default();
                        converted.pending.push(PendingWorkload {
                            workload,
                            local_queue,
                        });
                    }
                    Err(error) => converted.unqueued.push(Unqueued {
                        workload: key,
                        local_queue,
                        reason: PendingReason::Misconfigured,
                        message: error.to_string(),
                    }),
                }
            }
        }
    }
    cache.entries = next_cache;
    converted
}

/// What a workload's conversion reads besides the workload, as one number.
fn context_fingerprint(
    labels: &BTreeMap<String, String>,
    limit_ranges: &[LimitRange],
    options: &ConversionOptions,
) -> u64 {
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    labels.hash(&mut hasher);
    for range in limit_ranges {
        range.uid().hash(&mut hasher);
        range.resource_version().hash(&mut hasher);
    }
    options.hash(&mut hasher);
    hasher.finish()
}

/// `namespace/name` of a namespaced object.
pub fn workload_key(workload: &api::Workload) -> String {
    format!(
        "{}/{}",
        workload.namespace().unwrap_or_default(),
        workload.name_any()
    )
}

/// Where a workload stands for the scheduler.
enum Placement<'a> {
    /// Finished, deactivated, or without a queue name: nothing to do.
    Ignored,
    /// Holds quota with this admission.
    HoldsQuota(&'a api::Admission),
    /// Waits for quota from the LocalQueue of this name.
    Queued(&'a str),
}

fn placement(workload: &api::Workload) -> Placement<'_> {
    if is_true(workload, condition::FINISHED) {
        return Placement::Ignored;
    }
    if let Some(admission) = workload
        .status
        .as_ref()
        .and_then(|status| status.admission.as_ref())
    {
        return Placement::HoldsQuota(admission);
    }
    match workload.spec.queue_name.as_deref() {
        Some(queue) if workload.spec.is_active() && !queue.is_empty() => Placement::Queued(queue),
        _ => Placement::Ignored,
    }
}

/// The condition of this type, if any.
pub fn find_condition<'a>(workload: &'a api::Workload, type_: &str) -> Option<&'a Condition> {
    workload
        .status
        .as_ref()?
        .conditions
        .iter()
        .find(|condition| condition.type_ == type_)
}

/// Whether the condition of this type is `True`.
pub fn is_true(workload: &api::Workload, type_: &str) -> bool {
    find_condition(workload, type_).is_some_and(|condition| condition.status == "True")
}

fn true_since(workload: &api::Workload, type_: &str) -> Option<Timestamp> {
    find_condition(workload, type_)
        .filter(|condition| condition.status == "True")
        .map(|condition| condition.last_transition_time.0)
}

/// What a workload's conversion reads besides the workload.
struct WorkloadContext<'a> {
    namespace_labels: &'a BTreeMap<String, String>,
    limit_ranges: &'a [LimitRange],
    options: &'a ConversionOptions,
    /// Identifies the values above, for [`WorkloadCache`].
    fingerprint: u64,
}

/// The workload without PodSets.
fn bare_workload(
    object: &api::Workload,
    cluster_queue: &str,
    context: &WorkloadContext<'_>,
) -> model::Workload {
    let created = object
        .metadata
        .creation_timestamp
        .as_ref()
        .map_or(Timestamp::UNIX_EPOCH, |time| time.0);
    let mut workload = model::Workload::new(
        &workload_key(object),
        cluster_queue,
        queue_order_timestamp(object, created, context.options.requeuing_timestamp),
    );
    workload.uid = object.uid().unwrap_or_default();
    workload.job_uid = object.labels().get(JOB_UID_LABEL).cloned();
    workload.namespace_labels = context.namespace_labels.clone();
    workload.priority = object.spec.priority.unwrap_or(0);
    workload.quota_reserved_at = true_since(object, condition::QUOTA_RESERVED);
    workload.evicted = is_true(object, condition::EVICTED);
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
    find_condition(workload, condition::EVICTED)
        .filter(|evicted| evicted.status == "True")
        .filter(|evicted| {
            (evicted.reason == reason::PODS_READY_TIMEOUT
                && requeuing == RequeuingTimestamp::Eviction)
                || evicted.reason == reason::ADMISSION_CHECK
        })
        .map_or(created, |evicted| evicted.last_transition_time.0)
}

/// A workload with its PodSets' per-pod requests.
fn model_workload(
    object: &api::Workload,
    cluster_queue: &str,
    context: &WorkloadContext<'_>,
) -> Result<model::Workload, QuantityError> {
    let mut workload = bare_workload(object, cluster_queue, context);
    workload.pod_sets = object
        .spec
        .pod_sets
        .iter()
        .map(|pod_set| model_pod_set(pod_set, context))
        .collect::<Result<_, _>>()?;
    Ok(workload)
}

fn model_pod_set(
    pod_set: &api::PodSet,
    context: &WorkloadContext<'_>,
) -> Result<PodSet, QuantityError> {
    let empty = PodSpec::default();
    let spec = pod_set.template.spec.as_ref().unwrap_or(&empty);
    let requests = pod_requests(spec, context.limit_ranges)?
        .into_iter()
        .filter(|(name, _)| {
            !context
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
    })
}

/// The admission in canonical units, each PodSet's usage scaled down to the pods that have
/// not finished yet (`status.reclaimablePods`), as Kueue accounts it.
fn model_admission(object: &api::Workload, admission: &api::Admission) -> Admission {
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
                }
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

/// A quota; an unreadable quantity counts as zero, so that it never admits anything.
fn quota_value(resource: &str, quantity: &ApiQuantity) -> Quantity {
    resource_value(resource, quantity).unwrap_or_else(|error| {
        tracing::warn!(%error, resource, "unreadable quota, counting it as zero");
        0
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
pub fn resource_flavor(flavor: &api::ResourceFlavor) -> model::ResourceFlavor {
    model::ResourceFlavor {
        name: flavor.name_any(),
        node_labels: flavor.spec.node_labels.clone(),
        node_taints: flavor.spec.node_taints.iter().filter_map(taint).collect(),
        tolerations: flavor.spec.tolerations.iter().map(toleration).collect(),
    }
}

fn resource_groups(groups: &[api::ResourceGroup]) -> Vec<ResourceGroup> {
    groups
        .iter()
        .map(|group| ResourceGroup {
            covered_resources: group.covered_resources.clone(),
            flavors: group
                .flavors
                .iter()
                .map(|flavor| FlavorQuotas {
                    name: flavor.name.clone(),
                    resources: flavor
                        .resources
                        .iter()
                        .map(|quota| ResourceQuota {
                            name: quota.name.clone(),
                            nominal: quota_value(&quota.name, &quota.nominal_quota),
                            borrowing_limit: quota
                                .borrowing_limit
                                .as_ref()
                                .map(|limit| quota_value(&quota.name, limit)),
                            lending_limit: quota
                                .lending_limit
                                .as_ref()
                                .map(|limit| quota_value(&quota.name, limit)),
                        })
                        .collect(),
                })
                .collect(),
        })
        .collect()
}

/// A fair sharing weight (default 1), read with milli precision.
fn fair_weight(fair_sharing: Option<&api::FairSharing>) -> f64 {
    fair_sharing
        .and_then(|fair_sharing| fair_sharing.weight.as_ref())
        .and_then(|weight| resource_value("cpu", weight).ok())
        .map_or(1.0, |milli| milli as f64 / 1000.0)
}

/// A Cohort object.
pub fn cohort(cohort: &api::Cohort) -> model::Cohort {
    model::Cohort {
        name: cohort.name_any(),
        parent: cohort.spec.parent_name.clone(),
        resource_groups: resource_groups(&cohort.spec.resource_groups),
        fair_sharing_weight: fair_weight(cohort.spec.fair_sharing.as_ref()),
    }
}

fn stop_policy(policy: Option<api::StopPolicy>) -> StopPolicy {
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

/// Flavors a ClusterQueue names that do not exist, in the order it names them.
pub fn missing_flavors(
    cluster_queue: &api::ClusterQueue,
    flavors: &BTreeSet<String>,
) -> Vec<String> {
    let mut missing: Vec<String> = Vec::new();
    for flavor in cluster_queue
        .spec
        .resource_groups
        .iter()
        .flat_map(|group| &group.flavors)
    {
        if !flavors.contains(&flavor.name) && !missing.contains(&flavor.name) {
            missing.push(flavor.name.clone());
        }
    }
    missing
}

/// A ClusterQueue; inactive when it references missing flavors or is being deleted.
pub fn cluster_queue(cq: &api::ClusterQueue, flavors: &BTreeSet<String>) -> model::ClusterQueue {
    let spec = &cq.spec;
    let preemption = spec.preemption.clone().unwrap_or_default();
    let fungibility = spec.flavor_fungibility.clone().unwrap_or_default();
    let borrow_within_cohort = preemption.borrow_within_cohort.unwrap_or_default();
    model::ClusterQueue {
        name: cq.name_any(),
        cohort: spec.cohort_name.clone().filter(|name| !name.is_empty()),
        resource_groups: resource_groups(&spec.resource_groups),
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
        active: cq.metadata.deletion_timestamp.is_none() && missing_flavors(cq, flavors).is_empty(),
    }
}

/// `status.resourceRequests` of a pending workload: each PodSet's per-pod requests × count.
pub fn resource_requests(workload: &model::Workload) -> Vec<api::PodSetRequest> {
    workload
        .pod_sets
        .iter()
        .map(|pod_set| api::PodSetRequest {
            name: pod_set.name.clone(),
            resources: pod_set
                .requests
                .iter()
                .map(|(resource, value)| {
                    (
                        resource.clone(),
                        format_quantity(resource, value.saturating_mul(i64::from(pod_set.count))),
                    )
                })
                .collect(),
        })
        .collect()
}

#[cfg(test)]
mod tests;
