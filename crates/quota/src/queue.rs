//! Pending workloads per ClusterQueue (Kueue `pkg/cache/queue`): an ordered active set, a
//! parking lot for inadmissible workloads that are only retried when something changes, and
//! a memory of failed workload shapes so identical workloads are not evaluated again.

use std::cmp::Reverse;
use std::collections::BTreeMap;
use std::sync::Arc;

// foldhash rather than SipHash: these maps are looked up for every pending workload in every
// pass. It is seeded per process like SipHash, if less proof against crafted keys; the keys
// are the names of objects the API server holds.
use foldhash::HashMap;
use jiff::Timestamp;

use super::decision::PendingReason;
use super::model::{FlavorResource, PodSet, Quantity, Workload};
use super::snapshot::Snapshot;

/// Which parked workloads to retry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RequeueScope<'a> {
    /// Quota or spec changed in this ClusterQueue: retry every queue of its cohort tree.
    ClusterQueue(&'a str),
    /// This Cohort changed: retry every queue of its tree.
    Cohort(&'a str),
    /// A ResourceFlavor (or anything global) changed.
    All,
}

/// Numbers of pending workloads of one ClusterQueue.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PendingCounts {
    /// Waiting to be scheduled (including those in requeue backoff).
    pub active: usize,
    /// Parked until something changes.
    pub inadmissible: usize,
}

/// Queue order: higher priority first, then older, then UID.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct OrderKey {
    priority: Reverse<i32>,
    timestamp: Timestamp,
    uid: String,
    key: String,
}

impl OrderKey {
    fn of(workload: &Workload) -> Self {
        Self {
            priority: Reverse(workload.priority),
            timestamp: workload.queue_timestamp,
            uid: workload.uid.clone(),
            key: workload.key.clone(),
        }
    }
}

/// The order in which a ClusterQueue considers its pending workloads: higher priority first,
/// then the older queue-order timestamp, then UID. The visibility API lists pending workloads
/// in this order, so that the positions it reports are the ones the scheduler follows.
pub fn queue_order(a: &Workload, b: &Workload) -> std::cmp::Ordering {
    OrderKey::of(a).cmp(&OrderKey::of(b))
}

/// What makes two workloads equivalent for scheduling.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Shape {
    priority: i32,
    namespace_labels: Arc<BTreeMap<String, String>>,
    pod_sets: Arc<[PodSet]>,
}

impl Shape {
    pub(super) fn of(workload: &Workload) -> Self {
        Self {
            priority: workload.priority,
            namespace_labels: Arc::clone(&workload.namespace_labels),
            pod_sets: Arc::clone(&workload.pod_sets),
        }
    }
}

/// Hashes the numbers of a shape only: every popped workload is looked up by its shape, and
/// hashing the strings of its namespace labels and PodSets (names, resource names, selectors)
/// took most of that lookup. Shapes that differ in those strings alone land in the same bucket
/// and are told apart by `Eq`, which compares shared PodSets by address first.
impl std::hash::Hash for Shape {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.priority.hash(state);
        self.namespace_labels.len().hash(state);
        self.pod_sets.len().hash(state);
        for pod_set in self.pod_sets.iter() {
            pod_set.count.hash(state);
            pod_set.min_count.hash(state);
            for quantity in pod_set.requests.values() {
                quantity.hash(state);
            }
        }
    }
}

/// Why a workload of some shape could not be admitted.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Verdict {
    pub(super) reason: PendingReason,
    pub(super) message: String,
}

type Usage = BTreeMap<FlavorResource, Quantity>;

#[derive(Clone, Debug, Default)]
struct ClusterQueueQueue {
    active: BTreeMap<OrderKey, Workload>,
    // Looked up by key many times per pass for thousands of workloads, never walked in order.
    order: HashMap<String, OrderKey>,
    backoff: HashMap<String, Workload>,
    inadmissible: HashMap<String, Workload>,
    failed_shapes: HashMap<Shape, Verdict>,
    /// The workload that issued preemptions and waits for its victims to go. Like Kueue's
    /// preemptor, which stays at the head of its queue, it is evaluated again in every cycle,
    /// before the others of its queue, until it is admitted or no longer preempts.
    preemptor: Option<String>,
    /// The StrictFIFO head that could not be admitted and blocks the queue until a change.
    blocked: Option<String>,
    /// Capacity held back by blocked StrictFIFO heads that wait for quota without being
    /// evaluated again until a change.
    holds: BTreeMap<String, Usage>,
}

impl ClusterQueueQueue {
    fn insert_active(&mut self, workload: Workload) {
        let order = OrderKey::of(&workload);
        self.order.insert(workload.key.clone(), order.clone());
        self.active.insert(order, workload);
    }

    fn remove_active(&mut self, key: &str) -> Option<Workload> {
        let order = self.order.remove(key)?;
        self.active.remove(&order)
    }

    fn head_key(&self) -> Option<&str> {
        self.active
            .values()
            .next()
            .map(|workload| workload.key.as_str())
    }

    fn unblock(&mut self) {
        if let Some(head) = self.blocked.take() {
            self.holds.remove(&head);
        }
    }

    fn remove(&mut self, key: &str) -> Option<Workload> {
        if self.blocked.as_deref() == Some(key) {
            self.unblock();
        }
        if self.preemptor.as_deref() == Some(key) {
            self.preemptor = None;
        }
        self.holds.remove(key);
        self.remove_active(key)
            .or_else(|| self.backoff.remove(key))
            .or_else(|| self.inadmissible.remove(key))
    }

    fn is_unchanged(&self, workload: &Workload) -> bool {
        let key = &workload.key;
        self.inadmissible
            .get(key)
            .is_some_and(|parked| parked == workload)
            || self
                .order
                .get(key)
                .is_some_and(|order| self.active.get(order) == Some(workload))
            || self.backoff.get(key) == Some(workload)
    }

    fn requeue_all(&mut self) {
        self.unblock();
        self.holds.clear();
        self.failed_shapes.clear();
        for parked in std::mem::take(&mut self.inadmissible).into_values() {
            self.insert_active(parked);
        }
    }
}

/// Pending workloads of every ClusterQueue. The caller pushes workloads that have no quota
/// reservation, removes them when they are deleted or admitted outside a cycle, and calls
/// [`Queues::requeue_inadmissible`] when capacity may have appeared.
#[derive(Clone, Debug, Default)]
pub struct Queues {
    // Hashed rather than ordered: a pass looks a queue up by name for every workload it pops,
    // parks or counts; the few walks that need an order sort the names.
    queues: HashMap<String, ClusterQueueQueue>,
    /// ClusterQueue of every known workload.
    location: HashMap<String, String>,
}

impl Queues {
    /// Empty queues.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a pending workload or replaces its previous version. An unchanged workload keeps
    /// its state (parked stays parked); a changed one becomes active again.
    pub fn push(&mut self, workload: Workload) {
        let key = workload.key.clone();
        if let Some(previous_cq) = self.location.get(&key)
            && *previous_cq != workload.cluster_queue
            && let Some(queue) = self.queues.get_mut(previous_cq)
        {
            queue.remove(&key);
        }
        self.location
            .insert(key.clone(), workload.cluster_queue.clone());
        let queue = self
            .queues
            .entry(workload.cluster_queue.clone())
            .or_default();
        if queue.is_unchanged(&workload) {
            return;
        }
        queue.remove(&key);
        queue.insert_active(workload);
        // A new or changed head may be admissible where the blocking one was not.
        if queue.head_key() == Some(key.as_str()) {
            queue.unblock();
        }
    }

    /// Forgets a workload (deleted, or no longer pending).
    pub fn remove(&mut self, key: &str) -> Option<Workload> {
        let cq = self.location.remove(key)?;
        self.queues.get_mut(&cq).and_then(|queue| queue.remove(key))
    }

    /// Forgets every workload whose key `keep` refuses.
    pub fn retain(&mut self, mut keep: impl FnMut(&str) -> bool) {
        let gone: Vec<String> = self
            .location
            .keys()
            .filter(|key| !keep(key))
            .cloned()
            .collect();
        for key in gone {
            self.remove(&key);
        }
    }

    /// Whether the workload is pending in some queue.
    pub fn contains(&self, key: &str) -> bool {
        self.location.contains_key(key)
    }

    /// Whether a pending workload is parked as inadmissible (until something changes), rather
    /// than active or in backoff; false for a workload that is not pending.
    pub fn is_inadmissible(&self, key: &str) -> bool {
        self.location.get(key).is_some_and(|cq| {
            self.queues
                .get(cq)
                .is_some_and(|queue| queue.inadmissible.contains_key(key))
        })
    }

    /// Visits every pending workload with whether it is parked (`true`) rather than active or
    /// in backoff: a walk of the queues, with no lookup per workload.
    pub fn for_each_pending<'a>(&'a self, mut visit: impl FnMut(&'a Workload, bool)) {
        for queue in self.queues.values() {
            for workload in queue.active.values().chain(queue.backoff.values()) {
                visit(workload, false);
            }
            for workload in queue.inadmissible.values() {
                visit(workload, true);
            }
        }
    }

    /// The ClusterQueue a pending workload sits in (active, parked or in backoff).
    pub fn cluster_queue_of(&self, key: &str) -> Option<&str> {
        self.location.get(key).map(String::as_str)
    }

    /// Moves parked workloads back to their active queues, unblocks StrictFIFO heads, and
    /// forgets failed shapes and held capacity, for the queues `scope` affects in `snapshot`
    /// (the state after the change).
    pub fn requeue_inadmissible(&mut self, snapshot: &Snapshot, scope: RequeueScope<'_>) {
        let names: Vec<String> = match scope {
            RequeueScope::ClusterQueue(name) => {
                let mut names = snapshot.cohort_tree_queues(name);
                if !names.iter().any(|known| known == name) {
                    names.push(name.to_owned());
                }
                names
            }
            RequeueScope::Cohort(name) => snapshot.cohort_queues(name),
            RequeueScope::All => self.queues.keys().cloned().collect(),
        };
        for name in names {
            if let Some(queue) = self.queues.get_mut(&name) {
                queue.requeue_all();
            }
        }
    }

    /// Pending workload counts of a ClusterQueue.
    pub fn pending(&self, cluster_queue: &str) -> PendingCounts {
        self.queues
            .get(cluster_queue)
            .map(|queue| PendingCounts {
                active: queue.active.len() + queue.backoff.len(),
                inadmissible: queue.inadmissible.len(),
            })
            .unwrap_or_default()
    }

    /// Whether a cycle at `now` has anything to evaluate.
    pub fn has_work(&self, now: Timestamp) -> bool {
        self.queues.values().any(|queue| {
            (queue.blocked.is_none() && !queue.active.is_empty())
                || queue
                    .backoff
                    .values()
                    .any(|workload| workload.requeue_at.is_none_or(|at| at <= now))
        })
    }

    /// Earliest time a workload in requeue backoff becomes eligible again.
    pub fn next_requeue_at(&self) -> Option<Timestamp> {
        self.queues
            .values()
            .flat_map(|queue| queue.backoff.values().chain(queue.active.values()))
            .filter_map(|workload| workload.requeue_at)
            .min()
    }

    // === Used by the cycle ===

    /// Names of the queues holding active workloads.
    pub(super) fn active_queue_names(&self) -> Vec<String> {
        let mut names: Vec<String> = self
            .queues
            .iter()
            .filter(|(_, queue)| !queue.active.is_empty())
            .map(|(name, _)| name.clone())
            .collect();
        names.sort_unstable();
        names
    }

    /// Moves workloads whose `requeueAt` is in the future out of the active set, and those whose
    /// time has come back into it.
    pub(super) fn apply_backoff(&mut self, now: Timestamp) {
        for queue in self.queues.values_mut() {
            let waiting: Vec<String> = queue
                .active
                .values()
                .filter(|workload| workload.requeue_at.is_some_and(|at| at > now))
                .map(|workload| workload.key.clone())
                .collect();
            for key in waiting {
                if let Some(workload) = queue.remove_active(&key) {
                    queue.backoff.insert(key, workload);
                }
            }
            let ready: Vec<String> = queue
                .backoff
                .values()
                .filter(|workload| workload.requeue_at.is_none_or(|at| at <= now))
                .map(|workload| workload.key.clone())
                .collect();
            for key in ready {
                if let Some(workload) = queue.backoff.remove(&key) {
                    queue.insert_active(workload);
                }
            }
        }
    }

    pub(super) fn is_blocked(&self, cluster_queue: &str) -> bool {
        self.queues
            .get(cluster_queue)
            .is_some_and(|queue| queue.blocked.is_some())
    }

    /// Takes the next workload of a queue: a waiting preemptor first, then queue order; says
    /// whether it is that preemptor.
    pub(super) fn pop(&mut self, cluster_queue: &str) -> Option<(Workload, bool)> {
        let queue = self.queues.get_mut(cluster_queue)?;
        // A parked preemptor stays one; it is only taken here once retried.
        if let Some(preemptor) = queue.preemptor.clone()
            && let Some(workload) = queue.remove_active(&preemptor)
        {
            queue.preemptor = None;
            return Some((workload, true));
        }
        let (order, workload) = queue.active.pop_first()?;
        queue.order.remove(&order.key);
        Some((workload, false))
    }

    /// Takes every active workload of a queue.
    pub(super) fn drain_active(&mut self, cluster_queue: &str) -> Vec<Workload> {
        let Some(queue) = self.queues.get_mut(cluster_queue) else {
            return Vec::new();
        };
        queue.unblock();
        queue.order.clear();
        std::mem::take(&mut queue.active).into_values().collect()
    }

    /// Puts a popped workload back in its place.
    pub(super) fn restore(&mut self, workload: Workload) {
        if let Some(queue) = self.queues.get_mut(&workload.cluster_queue) {
            queue.insert_active(workload);
        }
    }

    /// Puts a popped workload back and blocks its queue (StrictFIFO) while it holds back `held`.
    pub(super) fn block(&mut self, workload: Workload, held: Usage) {
        if let Some(queue) = self.queues.get_mut(&workload.cluster_queue) {
            if !held.is_empty() {
                queue.holds.insert(workload.key.clone(), held);
            }
            queue.blocked = Some(workload.key.clone());
            queue.insert_active(workload);
        }
    }

    /// Parks a popped workload until its queue is requeued.
    pub(super) fn park(&mut self, workload: Workload) {
        if let Some(queue) = self.queues.get_mut(&workload.cluster_queue) {
            queue.inadmissible.insert(workload.key.clone(), workload);
        }
    }

    /// Sets aside a popped workload that issued preemptions until the next cycle, which
    /// evaluates it first; under StrictFIFO nothing behind it is evaluated meanwhile.
    pub(super) fn wait_for_preemption(&mut self, workload: Workload, strict_fifo: bool) {
        if let Some(queue) = self.queues.get_mut(&workload.cluster_queue) {
            queue.preemptor = Some(workload.key.clone());
            if strict_fifo {
                queue.blocked = Some(workload.key.clone());
                queue.insert_active(workload);
            } else {
                queue.inadmissible.insert(workload.key.clone(), workload);
            }
        }
    }

    /// Makes every waiting preemptor the next workload its queue gives out.
    pub(super) fn retry_preemptors(&mut self) {
        for queue in self.queues.values_mut() {
            let Some(preemptor) = queue.preemptor.clone() else {
                continue;
            };
            if let Some(workload) = queue.inadmissible.remove(&preemptor) {
                queue.insert_active(workload);
            }
            if queue.blocked.as_ref() == Some(&preemptor) {
                queue.blocked = None;
            }
        }
    }

    /// Capacity held back by blocked StrictFIFO heads, with their ClusterQueue.
    pub(super) fn holds(&self) -> impl Iterator<Item = (&str, &Usage)> {
        self.queues
            .iter()
            .flat_map(|(name, queue)| queue.holds.values().map(move |held| (name.as_str(), held)))
    }

    /// Forgets a popped workload that got admitted.
    pub(super) fn forget(&mut self, key: &str) {
        self.location.remove(key);
    }

    /// The verdict of an earlier workload of the same shape in this queue, if it failed.
    pub(super) fn failed_shape(&self, cluster_queue: &str, shape: &Shape) -> Option<&Verdict> {
        self.queues
            .get(cluster_queue)
            .and_then(|queue| queue.failed_shapes.get(shape))
    }

    /// Remembers that workloads of `shape` cannot be admitted until the queue is requeued.
    pub(super) fn record_failed_shape(
        &mut self,
        cluster_queue: &str,
        shape: Shape,
        verdict: Verdict,
    ) {
        if let Some(queue) = self.queues.get_mut(cluster_queue) {
            queue.failed_shapes.insert(shape, verdict);
        }
    }
}
