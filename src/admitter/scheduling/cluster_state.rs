//! The cluster as the scheduler sees it: the objects of every watched kind read from the stores
//! at one moment ([`ClusterState`]), converted to the quota core's model object by object with
//! [`from_api`] (workload conversions cached across passes), and the split of workloads into
//! those holding quota, those pending in a ClusterQueue and those that cannot be queued at all
//! (missing or stopped LocalQueue).
//!
//! A workload holds quota while `QuotaReserved` is `True` with a `status.admission` and it is
//! not finished: that is the state an admitter restarted after a crash rebuilds its usage from.
//! It is pending when it holds no quota, is active, is not finished and its LocalQueue exists.

use std::collections::BTreeMap;
use std::fmt;
use std::hash::{Hash, Hasher};
use std::sync::{Arc, Weak};

use foldhash::HashMapExt;
use jiff::Timestamp;
use k8s_openapi::api::core::v1::{LimitRange, Namespace, Node};
use kube::ResourceExt;

use crate::admitter::writers::workload_status::Requeue;
use crate::api::constants::{condition, reason};
use crate::api::v1beta2 as api;
use crate::k8s::quantity::QuantityError;
use crate::quota::from_api::{
    self, ConversionOptions, CountAsZero, QueueReferences, WorkloadInputs, workload_key,
};
use crate::quota::model::{self, StopPolicy};
use crate::quota::node_usage::NodeUsage;
use crate::quota::topology::TopologyCapacity;
use crate::quota::{PendingReason, SchedulerConfig, Snapshot};
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
    /// AdmissionChecks.
    pub admission_checks: Vec<Arc<api::AdmissionCheck>>,
    /// Workloads.
    pub workloads: Vec<Arc<api::Workload>>,
    /// Namespaces (their labels select ClusterQueues).
    pub namespaces: Vec<Arc<Namespace>>,
    /// LimitRanges (their defaults fill missing requests).
    pub limit_ranges: Vec<Arc<LimitRange>>,
    /// Topologies (TAS flavors name them).
    pub topologies: Vec<Arc<api::Topology>>,
    /// Nodes (the capacity of TAS flavors).
    pub nodes: Vec<Arc<Node>>,
    /// What pods outside topology-aware placement take on the nodes.
    pub node_usage: Arc<NodeUsage>,
}

impl ClusterState {
    /// Reads the current content of the stores.
    pub fn read(stores: &Stores) -> Self {
        Self {
            cluster_queues: stores.cluster_queues.state(),
            local_queues: stores.local_queues.state(),
            cohorts: stores.cohorts.state(),
            resource_flavors: stores.resource_flavors.state(),
            admission_checks: stores.admission_checks.state(),
            workloads: stores.workloads.state(),
            namespaces: stores.namespaces.state(),
            limit_ranges: stores.limit_ranges.state(),
            topologies: stores.topologies.state(),
            nodes: stores.nodes.state(),
            node_usage: Arc::clone(&stores.node_usage.borrow()),
        }
    }

    /// The flavors, AdmissionChecks and (with topology-aware scheduling) Topologies that
    /// ClusterQueues may refer to.
    pub fn references(&self, options: &ConversionOptions) -> QueueReferences {
        let topologies = options.topology_aware.then_some(self.topologies.as_slice());
        QueueReferences::of(&self.resource_flavors, &self.admission_checks, topologies)
    }
}

/// A LocalQueue by namespace and name. The names are shared: every workload of a pass that
/// names an existing LocalQueue holds a copy of that queue's reference.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct LocalQueueRef {
    /// Namespace.
    pub namespace: Arc<str>,
    /// Name.
    pub name: Arc<str>,
}

impl LocalQueueRef {
    /// A reference from borrowed names.
    pub fn new(namespace: &str, name: &str) -> Self {
        Self {
            namespace: namespace.into(),
            name: name.into(),
        }
    }

    /// The reference of a LocalQueue object.
    pub fn of(local_queue: &api::LocalQueue) -> Self {
        Self::new(
            &local_queue.namespace().unwrap_or_default(),
            &local_queue.name_any(),
        )
    }
}

impl fmt::Display for LocalQueueRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.namespace, self.name)
    }
}

/// A workload holding quota (`QuotaReserved=True` with an admission, not finished).
#[derive(Clone, Debug, PartialEq)]
pub struct Holder {
    /// The workload, with its admission (shared with the conversion cache while unchanged).
    pub workload: Arc<model::Workload>,
    /// The LocalQueue it was submitted to (`None` without `spec.queueName`).
    pub local_queue: Option<LocalQueueRef>,
    /// Whether it is also `Admitted` (counts in `flavorsUsage`, not only `flavorsReservation`).
    pub admitted: bool,
}

/// A workload waiting in a ClusterQueue.
#[derive(Clone, Debug, PartialEq)]
pub struct PendingWorkload {
    /// The workload; `cluster_queue` is its LocalQueue's ClusterQueue. Shared with the
    /// conversion cache: an unchanged workload costs no copy per pass.
    pub workload: Arc<model::Workload>,
    /// The LocalQueue it was submitted to.
    pub local_queue: LocalQueueRef,
    /// Converted from the same object and inputs as in the previous pass.
    pub unchanged: bool,
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
    /// The Workload objects that are not finished, by key: what the overlay and the writes
    /// of the decisions look up. Finished ones hold nothing and wait for nothing.
    pub objects: foldhash::HashMap<Arc<str>, Arc<api::Workload>>,
    /// ResourceFlavors.
    pub flavors: Vec<model::ResourceFlavor>,
    /// The free capacity of each topology-aware flavor whose Topology exists, by flavor.
    pub topologies: Vec<(String, Arc<TopologyCapacity>)>,
    /// How many times `topologies` changed in the conversion cache's lifetime: a change (a
    /// node added or made Ready, a pod outside Kueue gone) may make parked workloads fit.
    pub topology_version: u64,
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
    /// Keys of inactive workloads not yet evicted for it (or with a requeue state or a
    /// deactivation target left to clear).
    pub deactivations: Vec<String>,
    /// Keys of active workloads marked `DeactivationTarget=True`, to be made inactive.
    pub deactivation_targets: Vec<String>,
    /// Active workloads still `Requeued=False` for a reason that no longer holds.
    pub requeues: Vec<(String, Requeue)>,
    /// Workloads holding quota whose AdmissionChecks decided, with what follows.
    pub check_outcomes: Vec<(String, CheckOutcome)>,
    /// Admitted workloads with a maximum execution time not yet marked for deactivation, with
    /// when it runs out.
    pub execution_deadlines: Vec<(String, ExecutionDeadline)>,
}

/// When an admitted workload's `maximumExecutionTimeSeconds` runs out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ExecutionDeadline {
    /// The limit, in seconds.
    pub seconds: i32,
    /// Its admission time plus what is left of the limit after earlier admissions.
    pub at: Timestamp,
}

/// What the states of a quota holder's AdmissionChecks call for (Kueue's workload controller).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CheckOutcome {
    /// All `Ready`: the workload is admitted.
    Ready,
    /// One is `Retry`: evicted with this message, to be admitted again later, not before
    /// `requeue_at` when a check asked to wait (`requeueAfterSeconds`) beyond the workload's
    /// current `requeueState`.
    Retry {
        /// The `Evicted` message.
        message: String,
        /// The later `requeueState.requeueAt` the checks ask for.
        requeue_at: Option<Timestamp>,
    },
    /// One is `Rejected`: marked for deactivation with this message.
    Rejected(String),
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
        let builder = self
            .topologies
            .iter()
            .fold(builder, |b, (flavor, capacity)| {
                b.topology(flavor, Arc::clone(capacity))
            });
        self.holders
            .iter()
            .map(|holder| Arc::clone(&holder.workload))
            .fold(builder, |b, w| b.admitted(w))
            .build()
    }
}

/// The free capacity of every topology-aware flavor whose Topology exists, with
/// topology-aware scheduling on.
fn topology_capacities(
    state: &ClusterState,
    options: &ConversionOptions,
) -> Vec<(String, Arc<TopologyCapacity>)> {
    if !options.topology_aware {
        return Vec::new();
    }
    state
        .resource_flavors
        .iter()
        .filter_map(|flavor| {
            let name = flavor.spec.topology_name.as_ref()?;
            let topology = state.topologies.iter().find(|t| t.name_any() == *name)?;
            let levels: Vec<String> = topology
                .spec
                .levels
                .iter()
                .map(|level| level.node_label.clone())
                .collect();
            let capacity =
                from_api::topology_capacity(flavor, name, &levels, &state.nodes, &state.node_usage);
            Some((flavor.name_any(), Arc::new(capacity)))
        })
        .collect()
}

/// What the previous conversion worked out, for the next to reuse.
///
/// Workloads converted earlier are reused while neither the workload nor what its conversion
/// reads (namespace labels, LimitRanges, options) changed. Entries are found by the address of
/// the stored object: the store gives a changed object a new `Arc`, and each entry holds a
/// `Weak` of it, so an address seen again is the very same object, found without hashing its
/// name. `Weak` keeps the address reserved but not the object's contents: a version the store
/// has replaced frees its PodSets at once rather than at the next pass.
///
/// The free capacity of topology-aware flavors is reused while the Nodes, ResourceFlavors,
/// Topologies and pods' node usage it was worked out from are the very same objects: they
/// change far less often than passes run, and reading hundreds of nodes is most of a TAS
/// pass's conversion.
#[derive(Clone, Debug, Default)]
pub struct ConversionCache {
    entries: foldhash::HashMap<usize, CachedWorkload>,
    capacities: CachedCapacities,
    /// Each namespace's labels as the workloads converted lately share them, kept while they
    /// stay the same so that workloads converted in different passes share them too.
    namespace_labels: foldhash::HashMap<String, Arc<BTreeMap<String, String>>>,
    /// The PodSets of pending workloads, one `Arc` per distinct value held by some workload:
    /// workloads made from one template share theirs, and the queues, which look every
    /// popped workload's shape up among the shapes that failed, compare them by address
    /// instead of by every name and request.
    pod_sets: foldhash::HashSet<SharedPodSets>,
    /// How many workloads the previous conversion found pending and holding quota: this one's
    /// lists are sized from them rather than grown (and copied) a dozen times per pass.
    lengths: (usize, usize),
}

/// Topology capacities and the objects they were worked out from, held (so that none is freed
/// and its address given to another) to tell whether they are still the store's.
#[derive(Clone, Debug, Default)]
struct CachedCapacities {
    topology_aware: bool,
    nodes: Vec<Arc<Node>>,
    flavors: Vec<Arc<api::ResourceFlavor>>,
    topologies: Vec<Arc<api::Topology>>,
    node_usage: Arc<NodeUsage>,
    capacities: Vec<(String, Arc<TopologyCapacity>)>,
    /// Bumped each time the capacities worked out again differ from the ones before.
    version: u64,
}

impl CachedCapacities {
    /// The capacities for `state`, worked out again only if its inputs changed, and their
    /// version.
    fn get(
        &mut self,
        state: &ClusterState,
        options: &ConversionOptions,
    ) -> (&[(String, Arc<TopologyCapacity>)], u64) {
        let unchanged = self.topology_aware == options.topology_aware
            && same_objects(&self.nodes, &state.nodes)
            && same_objects(&self.flavors, &state.resource_flavors)
            && same_objects(&self.topologies, &state.topologies)
            && Arc::ptr_eq(&self.node_usage, &state.node_usage);
        if !unchanged {
            let capacities = topology_capacities(state, options);
            let version = self.version + u64::from(capacities != self.capacities);
            *self = Self {
                topology_aware: options.topology_aware,
                nodes: state.nodes.clone(),
                flavors: state.resource_flavors.clone(),
                topologies: state.topologies.clone(),
                node_usage: Arc::clone(&state.node_usage),
                capacities,
                version,
            };
        }
        (&self.capacities, self.version)
    }
}

/// Whether both lists hold the very same objects in the same order.
fn same_objects<T>(held: &[Arc<T>], current: &[Arc<T>]) -> bool {
    held.len() == current.len()
        && held
            .iter()
            .zip(current)
            .all(|(held, current)| Arc::ptr_eq(held, current))
}

#[derive(Clone, Debug)]
struct CachedWorkload {
    /// Held so that its address is not reused while the entry lives.
    object: Weak<api::Workload>,
    key: Arc<str>,
    context: u64,
    workload: Result<Arc<model::Workload>, QuantityError>,
}

fn address(object: &Arc<api::Workload>) -> usize {
    Arc::as_ptr(object).addr()
}

/// PodSets hashed by their numbers alone, as the queues hash shapes; equal by value.
#[derive(Clone, Debug, PartialEq, Eq)]
struct SharedPodSets(Arc<[model::PodSet]>);

impl std::hash::Hash for SharedPodSets {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        model::hash_pod_set_numbers(&self.0, state);
    }
}

/// Replaces `pod_sets` with the equal ones `shared` holds, or makes them the shared ones.
fn share_pod_sets(
    shared: &mut foldhash::HashSet<SharedPodSets>,
    pod_sets: &mut Arc<[model::PodSet]>,
) {
    let candidate = SharedPodSets(Arc::clone(pod_sets));
    match shared.get(&candidate) {
        Some(held) => *pod_sets = Arc::clone(&held.0),
        None => {
            shared.insert(candidate);
        }
    }
}

impl ConversionCache {
    /// An empty cache.
    pub fn new() -> Self {
        Self::default()
    }

    /// The workload with PodSets in its `role`, taken from the previous round's `cached` entry
    /// (`true`) or converted now, moved into `next` for the round after. A pending entry is kept
    /// pointed at its LocalQueue's ClusterQueue, so that the next round shares it as is.
    fn get(
        cached: Option<CachedWorkload>,
        (next, shared_pod_sets): (
            &mut foldhash::HashMap<usize, CachedWorkload>,
            &mut foldhash::HashSet<SharedPodSets>,
        ),
        key: &Arc<str>,
        object: &Arc<api::Workload>,
        context: &WorkloadContext<'_>,
        role: Role<'_>,
    ) -> (Result<Arc<model::Workload>, QuantityError>, bool) {
        let reusable = cached.filter(|cached| {
            std::ptr::eq(cached.object.as_ptr(), Arc::as_ptr(object))
                && cached.context == context.fingerprint
        });
        let reused = reusable.is_some();
        let mut cached = reusable.unwrap_or_else(|| CachedWorkload {
            object: Arc::downgrade(object),
            key: Arc::clone(key),
            context: context.fingerprint,
            workload: from_api::workload(object, &context.inputs).map(|mut workload| {
                Arc::new(match role {
                    Role::Pending { .. } => {
                        share_pod_sets(shared_pod_sets, &mut workload.pod_sets);
                        workload
                    }
                    Role::Holder(admission) => holding(workload, object, admission),
                })
            }),
        });
        if let (Role::Pending { cluster_queue }, Ok(workload)) = (role, cached.workload.as_mut())
            && workload.cluster_queue != cluster_queue
        {
            Arc::make_mut(workload).cluster_queue = cluster_queue.to_owned();
        }
        let workload = cached.workload.clone();
        next.insert(address(object), cached);
        (workload, reused)
    }
}

/// What a workload is converted for.
#[derive(Clone, Copy)]
enum Role<'a> {
    /// Waiting in this ClusterQueue, its LocalQueue's (which may change while the object does not).
    Pending { cluster_queue: &'a str },
    /// Holding quota with this admission, the object's own.
    Holder(&'a api::Admission),
}

/// `workload` holding quota with `admission`, `object`'s.
fn holding(
    mut workload: model::Workload,
    object: &api::Workload,
    admission: &api::Admission,
) -> model::Workload {
    workload.cluster_queue = admission.cluster_queue.clone();
    workload.admission = Some(from_api::admission(object, admission));
    workload
}

/// Converts everything the scheduler needs from `state`.
pub fn convert(state: &ClusterState, options: &ConversionOptions) -> Converted {
    convert_cached(state, options, &mut ConversionCache::new())
}

/// [`convert`], reusing what `cache` holds from the previous call (workloads, topology
/// capacities) and keeping what it works out now for the next.
pub fn convert_cached(
    state: &ClusterState,
    options: &ConversionOptions,
    cache: &mut ConversionCache,
) -> Converted {
    let references = state.references(options);
    // Hashed: the maps below are looked up for every workload of every pass.
    let stopped_cluster_queues: foldhash::HashMap<String, bool> = state
        .cluster_queues
        .iter()
        .map(|cq| {
            let stopped = from_api::stop_policy(cq.spec.stop_policy) != StopPolicy::None;
            (cq.name_any(), stopped)
        })
        .collect();
    let namespace_labels: foldhash::HashMap<String, Arc<BTreeMap<String, String>>> = state
        .namespaces
        .iter()
        .map(|namespace| {
            let name = namespace.name_any();
            let labels = match cache.namespace_labels.get(&name) {
                Some(held) if **held == *namespace.labels() => Arc::clone(held),
                _ => Arc::new(namespace.labels().clone()),
            };
            (name, labels)
        })
        .collect();
    let mut limit_ranges: BTreeMap<String, Vec<LimitRange>> = BTreeMap::new();
    for range in &state.limit_ranges {
        limit_ranges
            .entry(range.namespace().unwrap_or_default())
            .or_default()
            .push(LimitRange::clone(range));
    }
    // By borrowed names: looked up for every workload of every pass.
    let local_queues: foldhash::HashMap<(&str, &str), (LocalQueueRef, &api::LocalQueue)> = state
        .local_queues
        .iter()
        .map(|queue| {
            let namespace = queue.metadata.namespace.as_deref().unwrap_or_default();
            let name = queue.metadata.name.as_deref().unwrap_or_default();
            let reference = LocalQueueRef::new(namespace, name);
            ((namespace, name), (reference, queue.as_ref()))
        })
        .collect();

    let (topologies, topology_version) = cache.capacities.get(state, options);
    let mut converted = Converted {
        objects: foldhash::HashMap::with_capacity(state.workloads.len()),
        topologies: topologies.to_vec(),
        topology_version,
        flavors: state
            .resource_flavors
            .iter()
            .map(|flavor| {
                let topologies = options
                    .topology_aware
                    .then_some(state.topologies.as_slice());
                from_api::resource_flavor(flavor, topologies)
            })
            .collect(),
        cohorts: state
            .cohorts
            .iter()
            .map(|cohort| {
                let Ok(cohort) = from_api::cohort(cohort, &CountAsZero);
                cohort
            })
            .collect(),
        cluster_queues: state
            .cluster_queues
            .iter()
            .map(|cq| {
                let Ok(cq) = from_api::cluster_queue(cq, &references, &CountAsZero);
                cq
            })
            .collect(),
        pending: Vec::with_capacity(cache.lengths.0),
        holders: Vec::with_capacity(cache.lengths.1),
        ..Converted::default()
    };

    let no_labels = Arc::default();
    let mut fingerprints: foldhash::HashMap<String, u64> = foldhash::HashMap::new();
    let mut previous = std::mem::take(&mut cache.entries);
    let mut next_cache = foldhash::HashMap::with_capacity(state.workloads.len());
    for object in &state.workloads {
        let targeted = object.spec.is_active()
            && object
                .true_condition(condition::DEACTIVATION_TARGET)
                .is_some();
        let deactivation = targeted || needs_deactivation(object);
        // Finished workloads never reach the store; what is left costs only this check.
        let finished = object.is_condition_true(condition::FINISHED);
        if finished && !deactivation {
            continue;
        }
        let cached = previous.remove(&address(object));
        // Shared with the cache entry: most passes see most workloads unchanged.
        let key: Arc<str> = cached.as_ref().map_or_else(
            || workload_key(object).into(),
            |cached| Arc::clone(&cached.key),
        );
        if targeted {
            converted.deactivation_targets.push(key.to_string());
        } else if deactivation {
            converted.deactivations.push(key.to_string());
        }
        if finished {
            continue;
        }
        converted
            .objects
            .insert(Arc::clone(&key), Arc::clone(object));
        let placement = placement(object);
        if matches!(placement, Placement::Ignored) {
            continue;
        }
        let namespace = object.metadata.namespace.as_deref().unwrap_or_default();
        let labels = namespace_labels.get(namespace).unwrap_or(&no_labels);
        let ranges = limit_ranges.get(namespace).map_or(&[][..], Vec::as_slice);
        let fingerprint = match fingerprints.get(namespace) {
            Some(fingerprint) => *fingerprint,
            None => *fingerprints
                .entry(namespace.to_owned())
                .or_insert_with(|| context_fingerprint(labels, ranges, options)),
        };
        let context = WorkloadContext {
            inputs: WorkloadInputs {
                namespace_labels: labels,
                limit_ranges: ranges,
                options,
            },
            fingerprint,
        };
        let queue_name = object.spec.queue_name.as_deref();
        let known = queue_name.and_then(|name| local_queues.get(&(namespace, name)));
        let queue_object = known.map(|(_, queue)| *queue);
        let local_queue = queue_name.map(|name| {
            known.map_or_else(
                || LocalQueueRef::new(namespace, name),
                |(reference, _)| reference.clone(),
            )
        });
        if let Some(requeue) = requeue_step(object, queue_object, &stopped_cluster_queues) {
            converted.requeues.push((key.to_string(), requeue));
        }
        match placement {
            Placement::Ignored => {}
            Placement::HoldsQuota(admission) => {
                let role = Role::Holder(admission);
                let workload = match ConversionCache::get(
                    cached,
                    (&mut next_cache, &mut cache.pod_sets),
                    &key,
                    object,
                    &context,
                    role,
                )
                .0
                {
                    Ok(workload) => workload,
                    // Requests only matter while pending; the admission carries the usage.
                    Err(_) => Arc::new(holding(
                        from_api::workload_without_pod_sets(object, &context.inputs),
                        object,
                        admission,
                    )),
                };
                let drained = queue_object.is_some_and(|lq| {
                    from_api::stop_policy(lq.spec.stop_policy) == StopPolicy::HoldAndDrain
                });
                if drained && !workload.evicted {
                    converted.local_queue_drains.push(key.to_string());
                }
                if let Some(outcome) = check_outcome(object) {
                    converted.check_outcomes.push((key.to_string(), outcome));
                }
                if let Some(deadline) = execution_deadline(object) {
                    converted
                        .execution_deadlines
                        .push((key.to_string(), deadline));
                }
                converted.holders.push(Holder {
                    workload,
                    local_queue,
                    admitted: object.is_condition_true(condition::ADMITTED),
                });
            }
            Placement::Queued(queue_name) => {
                // Built above from the same queue name.
                let local_queue =
                    local_queue.unwrap_or_else(|| LocalQueueRef::new(namespace, queue_name));
                let Some(queue_object) = queue_object else {
                    converted.unqueued.push(Unqueued {
                        workload: key.to_string(),
                        message: format!("LocalQueue {} doesn't exist", local_queue.name),
                        local_queue,
                        reason: PendingReason::Misconfigured,
                    });
                    continue;
                };
                if from_api::stop_policy(queue_object.spec.stop_policy) != StopPolicy::None {
                    converted.unqueued.push(Unqueued {
                        workload: key.to_string(),
                        message: format!("LocalQueue {} is stopped", local_queue.name),
                        local_queue,
                        reason: PendingReason::Suspended,
                    });
                    continue;
                }
                let cluster_queue = queue_object
                    .spec
                    .cluster_queue
                    .as_deref()
                    .unwrap_or_default();
                match ConversionCache::get(
                    cached,
                    (&mut next_cache, &mut cache.pod_sets),
                    &key,
                    object,
                    &context,
                    Role::Pending { cluster_queue },
                ) {
                    (Ok(workload), unchanged) => {
                        converted.pending.push(PendingWorkload {
                            workload,
                            local_queue,
                            unchanged,
                        });
                    }
                    (Err(error), _) => converted.unqueued.push(Unqueued {
                        workload: key.to_string(),
                        local_queue,
                        reason: PendingReason::Misconfigured,
                        message: error.to_string(),
                    }),
                }
            }
        }
    }
    cache.entries = next_cache;
    cache.lengths = (converted.pending.len(), converted.holders.len());
    cache.namespace_labels = namespace_labels;
    // PodSets no workload holds any more.
    cache
        .pod_sets
        .retain(|shared| Arc::strong_count(&shared.0) > 1);
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
    if workload.is_condition_true(condition::FINISHED) {
        return Placement::Ignored;
    }
    if let Some(admission) = workload.reservation() {
        return Placement::HoldsQuota(admission);
    }
    match workload.spec.queue_name.as_deref() {
        Some(queue) if workload.spec.is_active() && !queue.is_empty() => Placement::Queued(queue),
        _ => Placement::Ignored,
    }
}

/// What the AdmissionCheck states of a workload holding quota call for, if anything: nothing
/// for an evicted workload, or one without checks; a rejection already marked needs nothing.
fn check_outcome(workload: &api::Workload) -> Option<CheckOutcome> {
    let checks = &workload.status.as_ref()?.admission_checks;
    if checks.is_empty() || workload.is_condition_true(condition::EVICTED) {
        return None;
    }
    let in_state = |state: api::CheckState| -> Vec<&api::AdmissionCheckState> {
        checks.iter().filter(|check| check.state == state).collect()
    };
    let rejected = in_state(api::CheckState::Rejected);
    if !rejected.is_empty() {
        let marked = workload
            .true_condition(condition::DEACTIVATION_TARGET)
            .is_some();
        return (!marked).then(|| CheckOutcome::Rejected(checks_message(&rejected, "Rejected")));
    }
    let retry = in_state(api::CheckState::Retry);
    if !retry.is_empty() {
        let message = format!("Evicted due to {}", checks_message(&retry, "Retry"));
        return Some(CheckOutcome::Retry {
            message,
            requeue_at: retry_time(workload, &retry),
        });
    }
    let ready = in_state(api::CheckState::Ready).len() == checks.len();
    (ready && !workload.is_condition_true(condition::ADMITTED)).then_some(CheckOutcome::Ready)
}

/// Kueue's `reconcileMaxExecutionTime`: an admitted workload with a maximum execution time
/// runs out at its `Admitted` transition plus the limit less the time it ran before
/// (`accumulatedPastExecutionTimeSeconds`); none once it is marked for deactivation.
fn execution_deadline(workload: &api::Workload) -> Option<ExecutionDeadline> {
    let seconds = workload.spec.maximum_execution_time_seconds?;
    let admitted = workload.true_condition(condition::ADMITTED)?;
    if workload.is_condition_true(condition::DEACTIVATION_TARGET) {
        return None;
    }
    let past = workload
        .status
        .as_ref()
        .and_then(|status| status.accumulated_past_execution_time_seconds)
        .unwrap_or(0);
    let left = jiff::SignedDuration::from_secs(i64::from(seconds) - i64::from(past));
    let at = admitted.last_transition_time.0.checked_add(left).ok()?;
    Some(ExecutionDeadline { seconds, at })
}

/// Kueue's `GetMaxRetryTime`: the latest time a `Retry` check asks to wait until
/// (`lastTransitionTime + requeueAfterSeconds`), when later than the workload's `requeueAt`.
fn retry_time(workload: &api::Workload, retry: &[&api::AdmissionCheckState]) -> Option<Timestamp> {
    let latest = retry
        .iter()
        .filter_map(|check| {
            let seconds = check.requeue_after_seconds?;
            let wait = jiff::SignedDuration::from_secs(i64::from(seconds));
            check.last_transition_time.0.checked_add(wait).ok()
        })
        .max()?;
    let current = workload
        .status
        .as_ref()
        .and_then(|status| status.requeue_state.as_ref())
        .and_then(|state| state.requeue_at.as_ref())
        .map(|time| time.0);
    current
        .is_none_or(|current| current < latest)
        .then_some(latest)
}

/// Kueue's `buildAdmissionChecksMessage`: `AdmissionCheck(s) in <state> state: "a" (why); "b"`.
fn checks_message(checks: &[&api::AdmissionCheckState], state: &str) -> String {
    let mut checks = checks.to_vec();
    checks.sort_by(|a, b| a.name.cmp(&b.name));
    let parts: Vec<String> = checks
        .iter()
        .map(|check| {
            if check.message.is_empty() {
                format!("{:?}", check.name)
            } else {
                format!("{:?} ({})", check.name, check.message)
            }
        })
        .collect();
    let noun = if checks.len() > 1 {
        "AdmissionChecks"
    } else {
        "AdmissionCheck"
    };
    format!("{noun} in {state} state: {}", parts.join("; "))
}

/// Whether an inactive workload is still to be evicted for it, or has a requeue state or a
/// deactivation target left to clear (Kueue's workload controller).
fn needs_deactivation(workload: &api::Workload) -> bool {
    if workload.spec.is_active() || workload.is_condition_true(condition::FINISHED) {
        return false;
    }
    let requeue_state = workload
        .status
        .as_ref()
        .is_some_and(|status| status.requeue_state.is_some());
    !workload.is_condition_true(condition::EVICTED)
        || requeue_state
        || workload.condition(condition::DEACTIVATION_TARGET).is_some()
}

/// The requeue due to an active workload whose `Requeued=False` reason no longer holds: it
/// was deactivated, or its LocalQueue or that queue's ClusterQueue (`stopped_cluster_queues`:
/// whether each is stopped) was stopped and is no longer.
fn requeue_step(
    workload: &api::Workload,
    local_queue: Option<&api::LocalQueue>,
    stopped_cluster_queues: &foldhash::HashMap<String, bool>,
) -> Option<Requeue> {
    if !workload.spec.is_active() || workload.is_condition_true(condition::FINISHED) {
        return None;
    }
    let requeued = workload
        .condition(condition::REQUEUED)
        .filter(|requeued| requeued.status == "False")?;
    let running = |policy| from_api::stop_policy(policy) == StopPolicy::None;
    match requeued.reason.as_str() {
        reason::DEACTIVATED => Some(Requeue::Reactivated),
        reason::LOCAL_QUEUE_STOPPED => local_queue
            .filter(|lq| running(lq.spec.stop_policy))
            .map(|_| Requeue::LocalQueueRestarted),
        reason::CLUSTER_QUEUE_STOPPED => {
            let cluster_queue = local_queue?.spec.cluster_queue.as_deref()?;
            (stopped_cluster_queues.get(cluster_queue) == Some(&false))
                .then_some(Requeue::ClusterQueueRestarted)
        }
        _ => None,
    }
}

/// What a workload's conversion reads besides the workload.
struct WorkloadContext<'a> {
    inputs: WorkloadInputs<'a>,
    /// Identifies the inputs, for [`ConversionCache`].
    fingerprint: u64,
}

#[cfg(test)]
mod tests;
