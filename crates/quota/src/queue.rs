//! Pending workloads per ClusterQueue (Kueue `pkg/cache/queue`): an ordered active set, a
//! parking lot for inadmissible workloads that are only retried when something changes, and
//! a memory of failed workload shapes so identical workloads are not evaluated again.

use std::borrow::Borrow;
use std::cmp::Reverse;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

// foldhash rather than SipHash: these maps are looked up for every pending workload in every
// pass. It is seeded per process like SipHash, if less proof against crafted keys; the keys
// are the names of objects the API server holds.
use foldhash::{HashMap, HashSet};
use jiff::Timestamp;

use super::admission_fair_sharing::{LocalQueueUsage, local_queue_key};
use super::decision::PendingReason;
use super::model::{FlavorResource, PodSet, Quantity, Workload, hash_pod_set_numbers};
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

/// What orders a queue: higher priority first, then the older queue-order timestamp, then
/// UID, then key (so that two different workloads never compare equal).
fn order_key(workload: &Workload) -> (Reverse<i64>, Timestamp, &str, &str) {
    (
        Reverse(workload.priority),
        workload.queue_timestamp,
        &workload.uid,
        &workload.key,
    )
}

/// The order in which a ClusterQueue considers its pending workloads: higher priority first,
/// then the older queue-order timestamp, then UID. The visibility API lists pending workloads
/// in this order, so that the positions it reports are the ones the scheduler follows.
pub fn queue_order(a: &Workload, b: &Workload) -> std::cmp::Ordering {
    order_key(a).cmp(&order_key(b))
}

/// A queued workload, ordered as its queue takes them.
#[derive(Clone, Debug)]
struct InQueueOrder(Arc<Workload>);

impl Ord for InQueueOrder {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        queue_order(&self.0, &other.0)
    }
}

impl PartialOrd for InQueueOrder {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl PartialEq for InQueueOrder {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other).is_eq()
    }
}

impl Eq for InQueueOrder {}

/// A queued workload, found by its key. The queues hold the workloads they are given, shared
/// with the caller, rather than copies keyed by copies of their keys and UIDs: that took about
/// 10% of the admitter's heap with thousands pending.
#[derive(Clone, Debug)]
struct ByKey(Arc<Workload>);

impl std::hash::Hash for ByKey {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.0.key.as_str().hash(state);
    }
}

impl PartialEq for ByKey {
    fn eq(&self, other: &Self) -> bool {
        self.0.key == other.0.key
    }
}

impl Eq for ByKey {}

impl Borrow<str> for ByKey {
    fn borrow(&self) -> &str {
        &self.0.key
    }
}

/// Whether `held` is the same workload as `given`, same version included.
fn same_version(held: &ByKey, given: &Arc<Workload>) -> bool {
    Arc::ptr_eq(&held.0, given) || *held.0 == **given
}

/// What makes two workloads equivalent for scheduling.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Shape {
    priority: i64,
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
        hash_pod_set_numbers(&self.pod_sets, state);
    }
}

/// Why a workload of some shape could not be admitted.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Verdict {
    pub(super) reason: PendingReason,
    pub(super) message: String,
}

type Usage = BTreeMap<FlavorResource, Quantity>;

/// The active workloads of a ClusterQueue under admission fair sharing, per LocalQueue
/// (`namespace/name`), each in queue order: the next one is the first of the LocalQueue that
/// used the least.
#[derive(Clone, Debug, Default)]
struct ByLocalQueue(HashMap<String, BTreeSet<InQueueOrder>>);

impl ByLocalQueue {
    fn of(active: &BTreeSet<InQueueOrder>) -> Self {
        let mut index = Self::default();
        for entry in active {
            index.insert(Arc::clone(&entry.0));
        }
        index
    }

    fn insert(&mut self, workload: Arc<Workload>) {
        self.0
            .entry(local_queue_key(&workload))
            .or_default()
            .insert(InQueueOrder(workload));
    }

    fn remove(&mut self, workload: &Arc<Workload>) {
        let key = local_queue_key(workload);
        if let Some(queued) = self.0.get_mut(&key) {
            queued.remove(&InQueueOrder(Arc::clone(workload)));
            if queued.is_empty() {
                self.0.remove(&key);
            }
        }
    }

    /// The first workload of the LocalQueue with the lowest usage; between equal usages, queue
    /// order decides.
    fn next(&self, usages: &HashMap<String, LocalQueueUsage>) -> Option<&Arc<Workload>> {
        let usage = |local_queue: &str| usages.get(local_queue).map_or(0.0, |usage| usage.usage);
        self.0
            .iter()
            .filter_map(|(local_queue, queued)| Some((usage(local_queue), queued.first()?)))
            .min_by(|a, b| a.0.total_cmp(&b.0).then_with(|| a.1.cmp(b.1)))
            .map(|(_, first)| &first.0)
    }
}

#[derive(Clone, Debug, Default)]
struct ClusterQueueQueue {
    active: BTreeSet<InQueueOrder>,
    // The entries of `active`, looked up by key many times per pass for thousands of
    // workloads, never walked in order.
    active_by_key: HashSet<ByKey>,
    backoff: HashSet<ByKey>,
    inadmissible: HashSet<ByKey>,
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
    /// `active` per LocalQueue, kept while the ClusterQueue uses admission fair sharing.
    by_local_queue: Option<ByLocalQueue>,
}

impl ClusterQueueQueue {
    fn insert_active(&mut self, workload: Arc<Workload>) {
        if let Some(ByKey(previous)) = self.active_by_key.replace(ByKey(Arc::clone(&workload))) {
            if let Some(index) = &mut self.by_local_queue {
                index.remove(&previous);
            }
            self.active.remove(&InQueueOrder(previous));
        }
        if let Some(index) = &mut self.by_local_queue {
            index.insert(Arc::clone(&workload));
        }
        self.active.insert(InQueueOrder(workload));
    }

    fn remove_active(&mut self, key: &str) -> Option<Arc<Workload>> {
        let ByKey(workload) = self.active_by_key.take(key)?;
        if let Some(index) = &mut self.by_local_queue {
            index.remove(&workload);
        }
        self.active
            .take(&InQueueOrder(workload))
            .map(|entry| entry.0)
    }

    fn head_key(&self) -> Option<&str> {
        self.active.first().map(|entry| entry.0.key.as_str())
    }

    fn unblock(&mut self) {
        if let Some(head) = self.blocked.take() {
            self.holds.remove(&head);
        }
    }

    fn remove(&mut self, key: &str) -> Option<Arc<Workload>> {
        if self.blocked.as_deref() == Some(key) {
            self.unblock();
        }
        if self.preemptor.as_deref() == Some(key) {
            self.preemptor = None;
        }
        self.holds.remove(key);
        self.remove_active(key)
            .or_else(|| self.backoff.take(key).map(|entry| entry.0))
            .or_else(|| self.inadmissible.take(key).map(|entry| entry.0))
    }

    /// Whether this version of the workload is already here, active, parked or in backoff. If
    /// so, the given copy takes the held one's place, so that only one copy stays alive.
    fn keep_if_unchanged(&mut self, workload: &Arc<Workload>) -> bool {
        let key = workload.key.as_str();
        let entry = || ByKey(Arc::clone(workload));
        if self
            .inadmissible
            .get(key)
            .is_some_and(|held| same_version(held, workload))
        {
            self.inadmissible.replace(entry());
        } else if self
            .backoff
            .get(key)
            .is_some_and(|held| same_version(held, workload))
        {
            self.backoff.replace(entry());
        } else if self
            .active_by_key
            .get(key)
            .is_some_and(|held| same_version(held, workload))
        {
            self.active_by_key.replace(entry());
            if let Some(index) = &mut self.by_local_queue {
                index.insert(Arc::clone(workload));
            }
            self.active.replace(InQueueOrder(Arc::clone(workload)));
        } else {
            return false;
        }
        true
    }

    fn requeue_all(&mut self) {
        self.unblock();
        self.holds.clear();
        self.failed_shapes.clear();
        for ByKey(parked) in std::mem::take(&mut self.inadmissible) {
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
    /// Every known workload, whose `cluster_queue` says which queue holds it.
    location: HashSet<ByKey>,
}

impl Queues {
    /// Empty queues.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a pending workload or replaces its previous version. An unchanged workload keeps
    /// its state (parked stays parked); a changed one becomes active again.
    pub fn push(&mut self, workload: impl Into<Arc<Workload>>) {
        let workload = workload.into();
        if let Some(ByKey(previous)) = self.location.replace(ByKey(Arc::clone(&workload)))
            && previous.cluster_queue != workload.cluster_queue
            && let Some(queue) = self.queues.get_mut(&previous.cluster_queue)
        {
            queue.remove(&workload.key);
        }
        let queue = match self.queues.get_mut(&workload.cluster_queue) {
            Some(queue) => queue,
            None => self
                .queues
                .entry(workload.cluster_queue.clone())
                .or_default(),
        };
        if queue.keep_if_unchanged(&workload) {
            return;
        }
        queue.remove(&workload.key);
        let pushed = Arc::clone(&workload);
        queue.insert_active(workload);
        // A new or changed head may be admissible where the blocking one was not.
        if queue.head_key() == Some(pushed.key.as_str()) {
            queue.unblock();
        }
    }

    /// Forgets a workload (deleted, or no longer pending).
    pub fn remove(&mut self, key: &str) -> Option<Arc<Workload>> {
        let ByKey(workload) = self.location.take(key)?;
        self.queues
            .get_mut(&workload.cluster_queue)
            .and_then(|queue| queue.remove(key))
    }

    /// Forgets every workload whose key `keep` refuses.
    pub fn retain(&mut self, mut keep: impl FnMut(&str) -> bool) {
        let gone: Vec<Arc<Workload>> = self
            .location
            .iter()
            .filter(|entry| !keep(&entry.0.key))
            .map(|entry| Arc::clone(&entry.0))
            .collect();
        for workload in gone {
            self.remove(&workload.key);
        }
    }

    /// Whether the workload is pending in some queue.
    pub fn contains(&self, key: &str) -> bool {
        self.location.contains(key)
    }

    /// Whether a pending workload is parked as inadmissible (until something changes), rather
    /// than active or in backoff; false for a workload that is not pending.
    pub fn is_inadmissible(&self, key: &str) -> bool {
        self.location.get(key).is_some_and(|entry| {
            self.queues
                .get(&entry.0.cluster_queue)
                .is_some_and(|queue| queue.inadmissible.contains(key))
        })
    }

    /// Visits every pending workload with whether it is parked (`true`) rather than active or
    /// in backoff: a walk of the queues, with no lookup per workload.
    pub fn for_each_pending<'a>(&'a self, mut visit: impl FnMut(&'a Workload, bool)) {
        for queue in self.queues.values() {
            for entry in &queue.active {
                visit(&entry.0, false);
            }
            for entry in &queue.backoff {
                visit(&entry.0, false);
            }
            for entry in &queue.inadmissible {
                visit(&entry.0, true);
            }
        }
    }

    /// The ClusterQueue a pending workload sits in (active, parked or in backoff).
    pub fn cluster_queue_of(&self, key: &str) -> Option<&str> {
        self.location
            .get(key)
            .map(|entry| entry.0.cluster_queue.as_str())
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
                    .iter()
                    .any(|entry| entry.0.requeue_at.is_none_or(|at| at <= now))
        })
    }

    /// Earliest time a workload in requeue backoff becomes eligible again.
    pub fn next_requeue_at(&self) -> Option<Timestamp> {
        self.queues
            .values()
            .flat_map(|queue| {
                let backoff = queue.backoff.iter().map(|entry| &entry.0);
                backoff.chain(queue.active.iter().map(|entry| &entry.0))
            })
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
            let waiting: Vec<Arc<Workload>> = queue
                .active
                .iter()
                .filter(|entry| entry.0.requeue_at.is_some_and(|at| at > now))
                .map(|entry| Arc::clone(&entry.0))
                .collect();
            for workload in waiting {
                if let Some(workload) = queue.remove_active(&workload.key) {
                    queue.backoff.replace(ByKey(workload));
                }
            }
            let ready: Vec<Arc<Workload>> = queue
                .backoff
                .iter()
                .filter(|entry| entry.0.requeue_at.is_none_or(|at| at <= now))
                .map(|entry| Arc::clone(&entry.0))
                .collect();
            for workload in ready {
                if let Some(ByKey(workload)) = queue.backoff.take(workload.key.as_str()) {
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

    /// Takes the next workload of a queue: a waiting preemptor first, then, under admission
    /// fair sharing (`fair`: the usage of each LocalQueue), the first of the LocalQueue that
    /// used the least, else queue order; says whether it is that preemptor.
    pub(super) fn pop(
        &mut self,
        cluster_queue: &str,
        fair: Option<&HashMap<String, LocalQueueUsage>>,
    ) -> Option<(Arc<Workload>, bool)> {
        let queue = self.queues.get_mut(cluster_queue)?;
        // A parked preemptor stays one; it is only taken here once retried.
        if let Some(preemptor) = queue.preemptor.clone()
            && let Some(workload) = queue.remove_active(&preemptor)
        {
            queue.preemptor = None;
            return Some((workload, true));
        }
        let Some(usages) = fair else {
            queue.by_local_queue = None;
            let InQueueOrder(workload) = queue.active.pop_first()?;
            queue.active_by_key.remove(workload.key.as_str());
            return Some((workload, false));
        };
        let index = queue
            .by_local_queue
            .get_or_insert_with(|| ByLocalQueue::of(&queue.active));
        let key = index.next(usages)?.key.clone();
        let workload = queue.remove_active(&key)?;
        Some((workload, false))
    }

    /// Takes every active workload of a queue.
    pub(super) fn drain_active(&mut self, cluster_queue: &str) -> Vec<Arc<Workload>> {
        let Some(queue) = self.queues.get_mut(cluster_queue) else {
            return Vec::new();
        };
        queue.unblock();
        queue.active_by_key.clear();
        queue.by_local_queue = None;
        std::mem::take(&mut queue.active)
            .into_iter()
            .map(|entry| entry.0)
            .collect()
    }

    /// Puts a popped workload back in its place.
    pub(super) fn restore(&mut self, workload: Arc<Workload>) {
        if let Some(queue) = self.queues.get_mut(&workload.cluster_queue) {
            queue.insert_active(workload);
        }
    }

    /// Puts a popped workload back and blocks its queue (StrictFIFO) while it holds back `held`.
    pub(super) fn block(&mut self, workload: Arc<Workload>, held: Usage) {
        if let Some(queue) = self.queues.get_mut(&workload.cluster_queue) {
            if !held.is_empty() {
                queue.holds.insert(workload.key.clone(), held);
            }
            queue.blocked = Some(workload.key.clone());
            queue.insert_active(workload);
        }
    }

    /// Parks a popped workload until its queue is requeued.
    pub(super) fn park(&mut self, workload: Arc<Workload>) {
        if let Some(queue) = self.queues.get_mut(&workload.cluster_queue) {
            queue.inadmissible.replace(ByKey(workload));
        }
    }

    /// Sets aside a popped workload that issued preemptions until the next cycle, which
    /// evaluates it first; under StrictFIFO nothing behind it is evaluated meanwhile.
    pub(super) fn wait_for_preemption(&mut self, workload: Arc<Workload>, strict_fifo: bool) {
        if let Some(queue) = self.queues.get_mut(&workload.cluster_queue) {
            queue.preemptor = Some(workload.key.clone());
            if strict_fifo {
                queue.blocked = Some(workload.key.clone());
                queue.insert_active(workload);
            } else {
                queue.inadmissible.replace(ByKey(workload));
            }
        }
    }

    /// Makes every waiting preemptor the next workload its queue gives out.
    pub(super) fn retry_preemptors(&mut self) {
        for queue in self.queues.values_mut() {
            let Some(preemptor) = queue.preemptor.clone() else {
                continue;
            };
            if let Some(ByKey(workload)) = queue.inadmissible.take(preemptor.as_str()) {
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
