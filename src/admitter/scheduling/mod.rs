//! The scheduling loop: whenever the stores change (debounced) or a timer fires, convert the
//! stores into a snapshot, keep the long-lived [`Queues`] in step with the pending workloads,
//! run a [`cycle`] and hand its decisions to the [`Applier`] without waiting for the writes.
//!
//! Writes the stores have not reflected yet are kept in an [`Overlay`]: an admission in flight
//! counts as usage and an eviction in flight marks its victim, until the store shows the
//! update or the write fails. So the next cycle never admits past quota, however far the
//! watch lags behind.

pub mod cluster_state;

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use jiff::Timestamp;
use kube::{Client, ResourceExt};
use tokio::sync::{broadcast, watch};
use tokio::task::JoinSet;

use crate::admitter::scheduling::cluster_state::{
    ClusterState, Converted, LocalQueueRef, PendingWorkload, WorkloadCache, convert_cached,
    resource_requests,
};
use crate::admitter::writers::queue_status::{
    self, ClusterQueueFacts, DesiredStatuses, LocalQueueFacts, QueueUsage,
    cluster_queue_metric_status, inactive_reason,
};
use crate::admitter::writers::workload_status::{
    self, Applier, Outcome, Preemption, Preemptor, Update,
};
use crate::api::constants::{condition, reason};
use crate::api::v1beta2 as api;
use crate::config::Configuration;
use crate::metrics::{
    AdmitterMetrics, AttemptLabels, ClusterQueueLabels, ClusterQueueStatusLabels, Metrics,
    ReplicaRole,
};
use crate::quota::from_api::{ConversionOptions, scheduler_config, workload_key};
use crate::quota::model::{self, FlavorResource, Quantity};
use crate::quota::{Decision, PendingReason, Queues, RequeueScope, SchedulerConfig, cycle};
use crate::stores::{Stores, StoresNotReady};

/// Shortest time to gather store changes before a cycle.
pub const DEBOUNCE: Duration = Duration::from_millis(5);
/// Longest time to gather store changes before a cycle.
pub const MAX_DEBOUNCE: Duration = Duration::from_secs(1);
/// A cycle runs at least this often, even when nothing seems to change.
pub const RESYNC_INTERVAL: Duration = Duration::from_secs(30);
/// How long to wait for the stores' initial lists when the Configuration sets no
/// `controller.cacheSyncTimeout`.
pub const DEFAULT_CACHE_SYNC_TIMEOUT: Duration = Duration::from_secs(120);
/// Longest wait before retrying an admission the API server refused.
const MAX_RETRY_BACKOFF_SECONDS: i64 = 60;

/// Runs the scheduler until `shutdown` completes: waits for the stores, then schedules and
/// writes queue statuses. Fails only when the stores do not sync in time.
pub async fn run_scheduler(
    client: Client,
    config: Arc<Configuration>,
    stores: Stores,
    metrics: Arc<Metrics>,
    shutdown: impl Future<Output = ()>,
) -> Result<(), StoresNotReady> {
    tokio::pin!(shutdown);
    let changes = stores.subscribe();
    let timeout = config
        .controller
        .cache_sync_timeout
        .unwrap_or(DEFAULT_CACHE_SYNC_TIMEOUT);
    tokio::select! {
        () = &mut shutdown => return Ok(()),
        ready = stores.wait_until_ready(timeout) => ready?,
    }
    let role = if config.leader_election.leader_elect {
        ReplicaRole::Leader
    } else {
        ReplicaRole::Standalone
    };
    let (statuses, desired) = watch::channel(DesiredStatuses::default());
    let applier = Applier::new(
        client.clone(),
        stores.workloads.clone(),
        metrics.admitter.clone(),
        role,
    );
    let scheduler = Scheduler::new(&config, applier, metrics.admitter.clone(), role, statuses);
    tracing::info!("scheduler started");
    tokio::select! {
        () = shutdown => {}
        () = scheduler.run(stores.clone(), changes) => {}
        () = queue_status::write_statuses(client, stores, desired) => {}
    }
    tracing::info!("scheduler stopped");
    Ok(())
}

// === Overlay of writes in flight ===

#[derive(Clone, Debug, PartialEq)]
struct InFlightAdmission {
    uid: String,
    admission: model::Admission,
    decided_at: Timestamp,
    resource_version: Option<String>,
}

#[derive(Clone, Debug, PartialEq)]
struct InFlightEviction {
    uid: String,
    resource_version: Option<String>,
}

/// Admissions and evictions written (or being written) that the store may not show yet.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Overlay {
    admissions: BTreeMap<String, InFlightAdmission>,
    evictions: BTreeMap<String, InFlightEviction>,
}

/// Whether the store's object is at least as new as the one a write returned.
fn reflects(workload: &api::Workload, written: Option<&str>) -> bool {
    let (Some(seen), Some(written)) = (workload.resource_version(), written) else {
        return false;
    };
    match (seen.parse::<u64>(), written.parse::<u64>()) {
        (Ok(seen), Ok(written)) => seen >= written,
        _ => seen == written,
    }
}

impl Overlay {
    /// Records an admission decided at `now` for the workload `key` with `uid`.
    pub fn admit(&mut self, key: &str, uid: &str, admission: model::Admission, now: Timestamp) {
        self.admissions.insert(
            key.to_owned(),
            InFlightAdmission {
                uid: uid.to_owned(),
                admission,
                decided_at: now,
                resource_version: None,
            },
        );
    }

    /// Records an eviction decided for the workload `key` with `uid`.
    pub fn evict(&mut self, key: &str, uid: &str) {
        self.evictions.insert(
            key.to_owned(),
            InFlightEviction {
                uid: uid.to_owned(),
                resource_version: None,
            },
        );
    }

    /// Notes that the admission of `key` was written as `resource_version`.
    pub fn admission_written(&mut self, key: &str, resource_version: Option<String>) {
        if let Some(entry) = self.admissions.get_mut(key) {
            entry.resource_version = resource_version;
        }
    }

    /// Notes that the eviction of `key` was written as `resource_version`.
    pub fn eviction_written(&mut self, key: &str, resource_version: Option<String>) {
        if let Some(entry) = self.evictions.get_mut(key) {
            entry.resource_version = resource_version;
        }
    }

    /// Forgets the admission of `key` (its write failed or does not apply).
    pub fn forget_admission(&mut self, key: &str) {
        self.admissions.remove(key);
    }

    /// Forgets the eviction of `key`.
    pub fn forget_eviction(&mut self, key: &str) {
        self.evictions.remove(key);
    }

    /// Whether nothing is in flight.
    pub fn is_empty(&self) -> bool {
        self.admissions.is_empty() && self.evictions.is_empty()
    }

    /// Drops the entries the store reflects (or that no longer matter: the workload is gone,
    /// was recreated or finished).
    pub fn reconcile(&mut self, workloads: &HashMap<String, Arc<api::Workload>>) {
        let current = |key: &str, uid: &str| {
            workloads
                .get(key)
                .filter(|workload| workload.uid().as_deref() == Some(uid))
                .filter(|workload| !workload.is_condition_true(condition::FINISHED))
        };
        self.admissions.retain(|key, entry| {
            current(key, &entry.uid).is_some_and(|workload| {
                let admitted = workload
                    .status
                    .as_ref()
                    .is_some_and(|status| status.admission.is_some());
                !admitted && !reflects(workload, entry.resource_version.as_deref())
            })
        });
        self.evictions.retain(|key, entry| {
            current(key, &entry.uid).is_some_and(|workload| {
                let holds = workload
                    .status
                    .as_ref()
                    .is_some_and(|status| status.admission.is_some());
                holds
                    && !workload.is_condition_true(condition::EVICTED)
                    && !reflects(workload, entry.resource_version.as_deref())
            })
        });
    }

    /// Makes `converted` show the writes in flight: admitted workloads hold quota instead of
    /// pending, evicted ones are marked evicted.
    pub fn apply(&self, converted: &mut Converted) {
        if !self.admissions.is_empty() {
            let mut still_pending = Vec::with_capacity(converted.pending.len());
            for pending in std::mem::take(&mut converted.pending) {
                match self.admissions.get(&pending.workload.key) {
                    Some(entry) => {
                        let mut workload = pending.workload;
                        workload.cluster_queue = entry.admission.cluster_queue.clone();
                        workload.admission = Some(entry.admission.clone());
                        workload.quota_reserved_at = Some(entry.decided_at);
                        converted.holders.push(
                            crate::admitter::scheduling::cluster_state::Holder {
                                workload,
                                local_queue: Some(pending.local_queue),
                                admitted: true,
                            },
                        );
                    }
                    None => still_pending.push(pending),
                }
            }
            converted.pending = still_pending;
        }
        if !self.evictions.is_empty() {
            for holder in &mut converted.holders {
                if self.evictions.contains_key(&holder.workload.key) {
                    holder.workload.evicted = true;
                }
            }
            converted
                .local_queue_drains
                .retain(|key| !self.evictions.contains_key(key));
        }
    }
}

// === Requeueing parked workloads ===

/// Which parked workloads a change makes worth retrying.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Requeue {
    /// The cohort tree of this ClusterQueue.
    ClusterQueue(String),
    /// The tree of this Cohort.
    Cohort(String),
    /// Every queue.
    All,
}

/// What the scheduler saw last time, to tell what changed.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Observed {
    cluster_queues: BTreeMap<String, model::ClusterQueue>,
    cohorts: BTreeMap<String, model::Cohort>,
    flavors: BTreeMap<String, model::ResourceFlavor>,
    holders: BTreeMap<String, (String, BTreeMap<FlavorResource, Quantity>)>,
}

impl Observed {
    /// What `converted` shows.
    pub fn of(converted: &Converted) -> Self {
        Self {
            cluster_queues: converted
                .cluster_queues
                .iter()
                .map(|cq| (cq.name.clone(), cq.clone()))
                .collect(),
            cohorts: converted
                .cohorts
                .iter()
                .map(|cohort| (cohort.name.clone(), cohort.clone()))
                .collect(),
            flavors: converted
                .flavors
                .iter()
                .map(|flavor| (flavor.name.clone(), flavor.clone()))
                .collect(),
            holders: converted
                .holders
                .iter()
                .filter_map(|holder| {
                    let admission = holder.workload.admission.as_ref()?;
                    Some((
                        holder.workload.key.clone(),
                        (admission.cluster_queue.clone(), admission.usage()),
                    ))
                })
                .collect(),
        }
    }

    /// The requeues the change from `self` to `current` calls for: a quota holder gone or
    /// using less releases quota in its ClusterQueue; a changed ClusterQueue, Cohort or
    /// ResourceFlavor may make parked workloads admissible.
    pub fn requeues(&self, current: &Observed) -> BTreeSet<Requeue> {
        let mut requeues = BTreeSet::new();
        if self.flavors != current.flavors {
            requeues.insert(Requeue::All);
        }
        for (name, queue) in &self.cluster_queues {
            if current.cluster_queues.get(name) != Some(queue) {
                requeues.insert(Requeue::ClusterQueue(name.clone()));
                if let Some(cohort) = &queue.cohort {
                    requeues.insert(Requeue::Cohort(cohort.clone()));
                }
            }
        }
        for name in current.cluster_queues.keys() {
            if !self.cluster_queues.contains_key(name) {
                requeues.insert(Requeue::ClusterQueue(name.clone()));
            }
        }
        let cohort_names: BTreeSet<&String> =
            self.cohorts.keys().chain(current.cohorts.keys()).collect();
        for name in cohort_names {
            if self.cohorts.get(name) != current.cohorts.get(name) {
                requeues.insert(Requeue::Cohort(name.clone()));
            }
        }
        for (key, (queue, usage)) in &self.holders {
            let released = match current.holders.get(key) {
                None => true,
                Some((now_queue, now_usage)) => {
                    now_queue != queue
                        || usage
                            .iter()
                            .any(|(fr, before)| now_usage.get(fr).copied().unwrap_or(0) < *before)
                }
            };
            if released {
                requeues.insert(Requeue::ClusterQueue(queue.clone()));
            }
        }
        requeues
    }
}

// === Retry backoff for refused admissions ===

#[derive(Clone, Debug, Default)]
struct Backoff {
    waiting: HashMap<String, (u32, Timestamp)>,
}

impl Backoff {
    fn failed(&mut self, key: &str, now: Timestamp) {
        let failures = self.waiting.get(key).map_or(0, |(count, _)| *count) + 1;
        let seconds = 2_i64
            .saturating_pow(failures.saturating_sub(1))
            .min(MAX_RETRY_BACKOFF_SECONDS);
        let until = now
            .checked_add(jiff::SignedDuration::from_secs(seconds))
            .unwrap_or(now);
        self.waiting.insert(key.to_owned(), (failures, until));
    }

    fn succeeded(&mut self, key: &str) {
        self.waiting.remove(key);
    }

    fn is_waiting(&self, key: &str, now: Timestamp) -> bool {
        self.waiting.get(key).is_some_and(|(_, until)| *until > now)
    }

    fn next_retry(&self, now: Timestamp) -> Option<Timestamp> {
        self.waiting
            .values()
            .map(|(_, until)| *until)
            .filter(|until| *until > now)
            .min()
    }
}

// === Writes in flight, one at a time per workload ===

/// Which kind of update a finished write was.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum UpdateKind {
    Admit,
    Pending,
    Evict,
}

impl UpdateKind {
    fn of(update: &Update) -> Self {
        match update {
            Update::Admit { .. } => Self::Admit,
            Update::Pending { .. } => Self::Pending,
            Update::Evict { .. } => Self::Evict,
        }
    }
}

type Finished = (String, UpdateKind, Outcome);

struct Dispatcher {
    applier: Arc<Applier>,
    tasks: JoinSet<Finished>,
    /// Workload of each running task, to free its slot even if the task panicked.
    task_keys: HashMap<tokio::task::Id, String>,
    busy: HashSet<String>,
    queued: HashMap<String, Update>,
}

impl Dispatcher {
    fn new(applier: Applier) -> Self {
        Self {
            applier: Arc::new(applier),
            tasks: JoinSet::new(),
            task_keys: HashMap::new(),
            busy: HashSet::new(),
            queued: HashMap::new(),
        }
    }

    /// Starts writing `update`, or queues it behind the write in flight for the same
    /// workload (replacing an older queued one), so writes to one workload stay in order.
    fn dispatch(&mut self, key: String, update: Update) {
        if self.busy.contains(&key) {
            self.queued.insert(key, update);
            return;
        }
        self.busy.insert(key.clone());
        let applier = Arc::clone(&self.applier);
        let task_key = key.clone();
        let task = self.tasks.spawn(async move {
            let kind = UpdateKind::of(&update);
            let outcome = applier.apply(&key, &update).await;
            (key, kind, outcome)
        });
        self.task_keys.insert(task.id(), task_key);
    }

    /// Notes that the write for `key` ended and starts the queued one, if any.
    fn done(&mut self, key: &str) {
        self.busy.remove(key);
        if let Some(update) = self.queued.remove(key) {
            self.dispatch(key.to_owned(), update);
        }
    }
}

// === The scheduler ===

struct Scheduler {
    options: ConversionOptions,
    cache: WorkloadCache,
    scheduler_config: SchedulerConfig,
    queues: Queues,
    pushed: BTreeSet<String>,
    overlay: Overlay,
    observed: Observed,
    backoff: Backoff,
    dispatcher: Dispatcher,
    metrics: AdmitterMetrics,
    role: ReplicaRole,
    statuses: watch::Sender<DesiredStatuses>,
    known_cluster_queues: BTreeSet<String>,
}

impl Scheduler {
    fn new(
        config: &Configuration,
        applier: Applier,
        metrics: AdmitterMetrics,
        role: ReplicaRole,
        statuses: watch::Sender<DesiredStatuses>,
    ) -> Self {
        Self {
            options: ConversionOptions::from_config(config),
            cache: WorkloadCache::new(),
            scheduler_config: scheduler_config(config),
            queues: Queues::new(),
            pushed: BTreeSet::new(),
            overlay: Overlay::default(),
            observed: Observed::default(),
            backoff: Backoff::default(),
            dispatcher: Dispatcher::new(applier),
            metrics,
            role,
            statuses,
            known_cluster_queues: BTreeSet::new(),
        }
    }

    async fn run(
        mut self,
        stores: Stores,
        mut changes: broadcast::Receiver<crate::stores::Changed>,
    ) {
        let mut dirty = true;
        // Gathering changes for as long as the last cycle took keeps the loop from spending
        // more than about half a core on cycles while writes stream in.
        let mut debounce = DEBOUNCE;
        loop {
            let now = workload_status::now();
            if dirty {
                let started = std::time::Instant::now();
                self.run_cycle(&stores, now);
                debounce = started.elapsed().clamp(DEBOUNCE, MAX_DEBOUNCE);
                dirty = false;
            }
            let wake = self.until_next_wake(now);
            tokio::select! {
                received = changes.recv() => {
                    if matches!(received, Err(broadcast::error::RecvError::Closed)) {
                        return;
                    }
                    tokio::time::sleep(debounce).await;
                    while !matches!(
                        changes.try_recv(),
                        Err(broadcast::error::TryRecvError::Empty | broadcast::error::TryRecvError::Closed)
                    ) {}
                    dirty = true;
                }
                Some(joined) = self.dispatcher.tasks.join_next_with_id() => {
                    dirty |= self.finished(joined);
                    while let Some(joined) = self.dispatcher.tasks.try_join_next_with_id() {
                        dirty |= self.finished(joined);
                    }
                }
                () = tokio::time::sleep(wake) => dirty = true,
            }
        }
    }

    fn until_next_wake(&self, now: Timestamp) -> Duration {
        [
            self.queues.next_requeue_at().filter(|at| *at > now),
            self.backoff.next_retry(now),
        ]
        .into_iter()
        .flatten()
        .map(|at| Duration::try_from(at.duration_since(now)).unwrap_or(Duration::ZERO))
        .fold(RESYNC_INTERVAL, Duration::min)
    }

    /// Handles a finished write; returns whether a cycle should run.
    fn finished(
        &mut self,
        joined: Result<(tokio::task::Id, Finished), tokio::task::JoinError>,
    ) -> bool {
        let (id, (key, kind, outcome)) = match joined {
            Ok(finished) => finished,
            Err(error) => {
                tracing::error!(%error, "a status write task failed");
                if let Some(key) = self.dispatcher.task_keys.remove(&error.id()) {
                    self.overlay.forget_admission(&key);
                    self.overlay.forget_eviction(&key);
                    self.dispatcher.done(&key);
                }
                return true;
            }
        };
        self.dispatcher.task_keys.remove(&id);
        self.dispatcher.done(&key);
        match (&kind, &outcome) {
            (_, Outcome::Failed(error)) => {
                tracing::warn!(workload = key, ?kind, error, "cannot write workload status");
            }
            (_, Outcome::Skipped(why)) => {
                tracing::debug!(workload = key, ?kind, why, "workload status not written");
            }
            _ => {}
        }
        match (kind, outcome) {
            (UpdateKind::Admit, Outcome::Written { resource_version }) => {
                self.backoff.succeeded(&key);
                self.overlay.admission_written(&key, resource_version);
                false
            }
            (UpdateKind::Admit, outcome) => {
                self.overlay.forget_admission(&key);
                if matches!(outcome, Outcome::Failed(_)) {
                    self.backoff.failed(&key, workload_status::now());
                }
                true
            }
            (UpdateKind::Evict, Outcome::Written { resource_version }) => {
                self.overlay.eviction_written(&key, resource_version);
                false
            }
            (UpdateKind::Evict, _) => {
                self.overlay.forget_eviction(&key);
                true
            }
            (UpdateKind::Pending, _) => false,
        }
    }

    fn run_cycle(&mut self, stores: &Stores, now: Timestamp) {
        let state = ClusterState::read(stores);
        let objects: HashMap<String, Arc<api::Workload>> = state
            .workloads
            .iter()
            .map(|workload| (workload_key(workload), Arc::clone(workload)))
            .collect();
        self.overlay.reconcile(&objects);
        let mut converted = convert_cached(&state, &self.options, &mut self.cache);
        self.overlay.apply(&mut converted);
        let snapshot = converted.snapshot(self.scheduler_config.clone(), now);

        let observed = Observed::of(&converted);
        for requeue in self.observed.requeues(&observed) {
            let scope = match &requeue {
                Requeue::ClusterQueue(name) => RequeueScope::ClusterQueue(name),
                Requeue::Cohort(name) => RequeueScope::Cohort(name),
                Requeue::All => RequeueScope::All,
            };
            self.queues.requeue_inadmissible(&snapshot, scope);
        }
        self.observed = observed;

        let mut pending_keys = BTreeSet::new();
        for pending in &converted.pending {
            let key = &pending.workload.key;
            if self.backoff.is_waiting(key, now) {
                continue;
            }
            pending_keys.insert(key.clone());
            self.queues.push(pending.workload.clone());
        }
        for stale in self.pushed.difference(&pending_keys) {
            self.queues.remove(stale);
        }
        self.pushed = pending_keys;

        let decisions = cycle(&snapshot, &mut self.queues);
        let context = CycleContext {
            objects: &objects,
            pending: converted
                .pending
                .iter()
                .map(|pending| (pending.workload.key.as_str(), pending))
                .collect(),
            holders: converted
                .holders
                .iter()
                .map(|holder| (holder.workload.key.as_str(), &holder.workload))
                .collect(),
            now,
        };
        for decision in decisions {
            self.decide(decision, &context);
        }
        for unqueued in &converted.unqueued {
            let Some(object) = objects.get(&unqueued.workload) else {
                continue;
            };
            let requests = object
                .status
                .as_ref()
                .map(|status| status.resource_requests.clone())
                .unwrap_or_default();
            self.write_pending(
                &unqueued.workload,
                object,
                unqueued.reason,
                &unqueued.message,
                requests,
                now,
            );
        }
        for key in &converted.local_queue_drains {
            let Some(holder) = context.holders.get(key.as_str()) else {
                continue;
            };
            self.overlay.evict(key, &holder.uid);
            self.dispatcher.dispatch(
                key.clone(),
                Update::Evict {
                    reason: reason::LOCAL_QUEUE_STOPPED.to_owned(),
                    message: "The LocalQueue is stopped".to_owned(),
                    preemption: None,
                },
            );
        }
        self.publish_statuses(&state, &converted, &snapshot, now);
    }

    fn attempt(&self, result: &'static str) {
        self.metrics
            .admission_attempts
            .get_or_create(&AttemptLabels {
                result,
                replica_role: self.role,
            })
            .inc();
    }

    fn decide(&mut self, decision: Decision, context: &CycleContext<'_>) {
        match decision {
            Decision::Admit {
                workload: key,
                admission,
            } => {
                let Some(pending) = context.pending.get(key.as_str()) else {
                    return;
                };
                self.attempt("success");
                let generation = context
                    .objects
                    .get(&key)
                    .and_then(|object| object.metadata.generation);
                self.overlay
                    .admit(&key, &pending.workload.uid, admission.clone(), context.now);
                self.dispatcher.dispatch(
                    key,
                    Update::Admit {
                        admission,
                        generation,
                    },
                );
            }
            Decision::Inadmissible {
                workload: key,
                reason,
                message,
            } => {
                self.attempt("inadmissible");
                self.write_pending_decision(&key, reason, &message, context);
            }
            Decision::Preempt {
                workload: key,
                victims,
                reason,
                message,
            } => {
                self.attempt("inadmissible");
                if let Some(pending) = context.pending.get(key.as_str()) {
                    let preemptor = Preemptor {
                        key: key.clone(),
                        uid: pending.workload.uid.clone(),
                        priority: pending.workload.priority,
                        cluster_queue: pending.workload.cluster_queue.clone(),
                    };
                    for victim in victims {
                        let Some(holder) = context.holders.get(victim.workload.as_str()) else {
                            continue;
                        };
                        if holder.evicted {
                            continue;
                        }
                        self.overlay.evict(&victim.workload, &holder.uid);
                        self.dispatcher.dispatch(
                            victim.workload,
                            Update::Evict {
                                reason: reason::PREEMPTED.to_owned(),
                                message: victim.message,
                                preemption: Some(Preemption {
                                    reason: victim.reason,
                                    preemptor: preemptor.clone(),
                                }),
                            },
                        );
                    }
                }
                self.write_pending_decision(&key, reason, &message, context);
            }
            Decision::Evict {
                workload: key,
                reason,
                message,
            } => {
                let Some(holder) = context.holders.get(key.as_str()) else {
                    return;
                };
                if holder.evicted {
                    return;
                }
                self.overlay.evict(&key, &holder.uid);
                self.dispatcher.dispatch(
                    key,
                    Update::Evict {
                        reason: reason.as_str().to_owned(),
                        message,
                        preemption: None,
                    },
                );
            }
        }
    }

    fn write_pending_decision(
        &mut self,
        key: &str,
        reason: PendingReason,
        message: &str,
        context: &CycleContext<'_>,
    ) {
        let (Some(object), Some(pending)) = (context.objects.get(key), context.pending.get(key))
        else {
            return;
        };
        let requests = resource_requests(&pending.workload);
        self.write_pending(key, object, reason, message, requests, context.now);
    }

    /// Writes `QuotaReserved=False` unless the workload already shows exactly that.
    fn write_pending(
        &mut self,
        key: &str,
        object: &api::Workload,
        reason: PendingReason,
        message: &str,
        resource_requests: Vec<api::PodSetRequest>,
        now: Timestamp,
    ) {
        let update = Update::Pending {
            reason,
            message: message.to_owned(),
            resource_requests,
        };
        if matches!(update.status(object, now), Ok(Some(_))) {
            self.dispatcher.dispatch(key.to_owned(), update);
        }
    }

    fn publish_statuses(
        &mut self,
        state: &ClusterState,
        converted: &Converted,
        snapshot: &crate::quota::Snapshot,
        now: Timestamp,
    ) {
        let flavors: BTreeSet<String> = state
            .resource_flavors
            .iter()
            .map(|flavor| flavor.name_any())
            .collect();
        let usages = queue_status::usages(&converted.holders);
        let no_usage = QueueUsage::default();
        let fair_sharing = self.scheduler_config.fair_sharing.is_some();
        let mut desired = DesiredStatuses::default();
        let mut queue_names = BTreeSet::new();
        let mut cluster_queues: BTreeMap<String, (&api::ClusterQueue, bool)> = BTreeMap::new();
        for cluster_queue in &state.cluster_queues {
            let name = cluster_queue.name_any();
            let usage = usages.cluster_queues.get(&name).unwrap_or(&no_usage);
            let pending = self.queues.pending(&name);
            let facts = ClusterQueueFacts {
                flavors: &flavors,
                usage,
                pending: i32::try_from(pending.active + pending.inadmissible).unwrap_or(i32::MAX),
                weighted_share: fair_sharing
                    .then(|| snapshot.cluster_queue_weighted_share(&name))
                    .flatten(),
            };
            desired.cluster_queues.insert(
                name.clone(),
                queue_status::cluster_queue_status(cluster_queue, &facts, now),
            );
            self.report_cluster_queue(&name, cluster_queue, &flavors, usage, pending);
            cluster_queues.insert(
                name.clone(),
                (
                    cluster_queue.as_ref(),
                    inactive_reason(cluster_queue, &flavors).is_none(),
                ),
            );
            queue_names.insert(name);
        }
        for gone in self.known_cluster_queues.difference(&queue_names) {
            self.metrics.forget_cluster_queue(gone, self.role);
        }
        self.known_cluster_queues = queue_names;

        let mut pending_per_queue: BTreeMap<&LocalQueueRef, i32> = BTreeMap::new();
        let waiting = converted
            .pending
            .iter()
            .map(|pending: &PendingWorkload| &pending.local_queue)
            .chain(
                converted
                    .unqueued
                    .iter()
                    .map(|unqueued| &unqueued.local_queue),
            );
        for local_queue in waiting {
            *pending_per_queue.entry(local_queue).or_default() += 1;
        }
        for local_queue in &state.local_queues {
            let reference = LocalQueueRef::new(
                &local_queue.namespace().unwrap_or_default(),
                &local_queue.name_any(),
            );
            let facts = LocalQueueFacts {
                cluster_queue: local_queue
                    .spec
                    .cluster_queue
                    .as_ref()
                    .and_then(|name| cluster_queues.get(name).copied()),
                usage: usages.local_queues.get(&reference).unwrap_or(&no_usage),
                pending: pending_per_queue.get(&reference).copied().unwrap_or(0),
            };
            let status = queue_status::local_queue_status(local_queue, &facts, now);
            desired.local_queues.insert(reference, status);
        }
        self.statuses.send_if_modified(|current| {
            let changed = *current != desired;
            if changed {
                *current = desired;
            }
            changed
        });
    }

    fn report_cluster_queue(
        &self,
        name: &str,
        cluster_queue: &api::ClusterQueue,
        flavors: &BTreeSet<String>,
        usage: &QueueUsage,
        pending: crate::quota::PendingCounts,
    ) {
        let metrics = &self.metrics;
        for (status, count) in [
            ("active", pending.active),
            ("inadmissible", pending.inadmissible),
        ] {
            metrics
                .pending_workloads
                .get_or_create(&ClusterQueueStatusLabels {
                    cluster_queue: name.to_owned(),
                    status,
                    replica_role: self.role,
                })
                .set(i64::try_from(count).unwrap_or(i64::MAX));
        }
        metrics.set_cluster_queue_status(
            name,
            cluster_queue_metric_status(cluster_queue, flavors),
            self.role,
        );
        let labels = ClusterQueueLabels {
            cluster_queue: name.to_owned(),
            replica_role: self.role,
        };
        metrics
            .reserving_active_workloads
            .get_or_create(&labels)
            .set(i64::from(usage.reserving));
        metrics
            .admitted_active_workloads
            .get_or_create(&labels)
            .set(i64::from(usage.admitted));
    }
}

/// Lookups a cycle's decisions are applied with.
struct CycleContext<'a> {
    objects: &'a HashMap<String, Arc<api::Workload>>,
    pending: HashMap<&'a str, &'a PendingWorkload>,
    holders: HashMap<&'a str, &'a model::Workload>,
    now: Timestamp,
}

#[cfg(test)]
mod tests;
