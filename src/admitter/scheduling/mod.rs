//! The scheduling loop: whenever the stores change (debounced) or a timer fires, run a pass of
//! the [`Planner`] (convert the stores into a snapshot, keep the long-lived queues in step with
//! the pending workloads, run the quota core's cycle) and hand its decisions to the [`Applier`]
//! without waiting for the writes.
//!
//! Writes the stores have not reflected yet are kept in an [`Overlay`]: an admission in flight
//! counts as usage and an eviction in flight marks its victim, until the store shows the
//! update or the write fails. So the next cycle never admits past quota, however far the
//! watch lags behind.

pub mod cluster_state;
mod dispatch;
pub mod fair_usage;
mod local_queue_metrics;
mod overlay;
mod pending_budget;
mod planner;
mod requeue;

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use jiff::Timestamp;
use kube::{Client, ResourceExt};
use tokio::sync::{broadcast, watch};

use crate::admitter::scheduling::cluster_state::{
    CheckOutcome, ClusterState, Converted, LocalQueueRef, PendingWorkload,
};
use crate::admitter::writers::in_use;
use crate::admitter::writers::queue_status::{
    self, ClusterQueueFacts, DesiredStatuses, LocalQueueFacts, QueueUsage,
    cluster_queue_metric_status, inactive_reason,
};
use crate::admitter::writers::workload_status::{
    self, Applier, Outcome, Preemption, Preemptor, ResourceRequests, Update,
};
use crate::api::constants::{condition, reason};
use crate::api::v1beta2 as api;
use crate::config::Configuration;
use crate::metrics::{
    AdmitterMetrics, AttemptLabels, ClusterQueueLabels, ClusterQueueStatusLabels, MetricsRegistry,
    ReplicaRole,
};
use crate::quota::from_api::{
    ConversionOptions, QueueReferences, admission_checks_for, scheduler_config,
};
use crate::quota::model::{self};
use crate::quota::{Decision, PendingReason};
use crate::stores::{Stores, StoresNotReady};
use dispatch::{Dispatcher, Finished, UpdateKind};
use local_queue_metrics::{LocalQueueSelection, local_queue_gauges, pending_by_local_queue};
pub use overlay::Overlay;
pub use pending_budget::{
    BURST as PENDING_STATUS_BURST, WRITES_PER_SECOND as PENDING_STATUSES_PER_SECOND,
};
use pending_budget::{Change, HandledVerdicts, PendingBudget};
pub use planner::{Plan, Planner};
pub use requeue::{Observed, Requeue};

/// Shortest time to gather store changes before a cycle: at most 20 passes a second, however
/// fast writes stream in. A change waits this long at worst before a pass sees it.
pub const DEBOUNCE: Duration = Duration::from_millis(50);
/// A cycle is followed by this many times its duration of gathering changes, so that passes
/// take at most a fifth of a core while writes stream in.
const DEBOUNCE_PER_PASS: u32 = 4;
/// Longest time to gather store changes before a cycle.
pub const MAX_DEBOUNCE: Duration = Duration::from_secs(1);
/// A cycle runs at least this often, even when nothing seems to change.
pub const RESYNC_INTERVAL: Duration = Duration::from_secs(30);
/// How long to wait for the stores' initial lists when the Configuration sets no
/// `controller.cacheSyncTimeout`.
pub const DEFAULT_CACHE_SYNC_TIMEOUT: Duration = Duration::from_secs(120);

/// Runs the scheduler until `shutdown` completes: waits for the stores, then schedules and
/// writes queue statuses. Fails only when the stores do not sync in time.
pub async fn run_scheduler(
    client: Client,
    config: Arc<Configuration>,
    stores: Stores,
    metrics: Arc<MetricsRegistry>,
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
        &metrics.events,
        role,
    );
    let scheduler = Scheduler::new(&config, applier, metrics.admitter.clone(), role, statuses);
    tracing::info!("scheduler started");
    tokio::select! {
        () = shutdown => {}
        () = scheduler.run(stores.clone(), changes) => {}
        () = queue_status::write_statuses(client.clone(), stores.clone(), desired) => {}
        () = in_use::release_unused(client, stores) => {}
    }
    tracing::info!("scheduler stopped");
    Ok(())
}

struct Scheduler {
    planner: Planner,
    dispatcher: Dispatcher,
    metrics: AdmitterMetrics,
    role: ReplicaRole,
    local_queue_selection: LocalQueueSelection,
    statuses: watch::Sender<DesiredStatuses>,
    known_cluster_queues: BTreeSet<String>,
    pending_budget: PendingBudget<Update>,
    handled_verdicts: HandledVerdicts,
    /// When the first admitted workload's maximum execution time runs out.
    next_execution_deadline: Option<Timestamp>,
}

/// A pass's admission attempts by result.
#[derive(Debug, Default)]
struct AttemptCounts {
    success: u64,
    inadmissible: u64,
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
            planner: Planner::new(
                ConversionOptions::from_config(config),
                scheduler_config(config),
            )
            .with_admission_fair_sharing(config.admission_fair_sharing.clone()),
            dispatcher: Dispatcher::new(applier),
            metrics,
            role,
            local_queue_selection: LocalQueueSelection::from_config(config),
            statuses,
            known_cluster_queues: BTreeSet::new(),
            pending_budget: PendingBudget::default(),
            handled_verdicts: HandledVerdicts::default(),
            next_execution_deadline: None,
        }
    }

    async fn run(
        mut self,
        stores: Stores,
        mut changes: broadcast::Receiver<crate::stores::Changed>,
    ) {
        let mut dirty = true;
        // On a small control plane every cycle's CPU is taken from the API server; on Kueue's
        // scheduler benchmark (3,000 workloads in one cohort) gathering for 4x the last pass
        // and at least 50 ms, rather than 2x and 5 ms, halved the passes and cut the
        // admitter's CPU by a third, with the same usage and times to admission.
        let mut debounce = DEBOUNCE;
        loop {
            let now = workload_status::now();
            if dirty {
                let started = std::time::Instant::now();
                let admitted = off_the_runtime(|| self.run_cycle(&stores, now));
                let took = started.elapsed();
                self.metrics
                    .admission_attempt_duration
                    .get_or_create(&AttemptLabels {
                        result: if admitted { "success" } else { "inadmissible" },
                        replica_role: self.role,
                    })
                    .observe(took.as_secs_f64());
                debounce = (took * DEBOUNCE_PER_PASS).clamp(DEBOUNCE, MAX_DEBOUNCE);
                tracing::debug!(took_us = took.as_micros(), admitted, "scheduling pass");
                dirty = false;
            }
            for (key, update) in self.pending_budget.take_due(now) {
                self.dispatcher.dispatch(key, update);
            }
            let wake = self.until_next_wake(now);
            let pending_wake = self
                .pending_budget
                .next_due(now)
                .map(|at| Duration::try_from(at.duration_since(now)).unwrap_or(Duration::ZERO));
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
                // Pending statuses go out at the top of the loop; no cycle is needed for them.
                () = tokio::time::sleep(pending_wake.unwrap_or(RESYNC_INTERVAL)), if pending_wake.is_some() => {}
            }
        }
    }

    fn until_next_wake(&self, now: Timestamp) -> Duration {
        [
            self.planner.queues.next_requeue_at().filter(|at| *at > now),
            self.planner.backoff.next_retry(now),
            self.next_execution_deadline.filter(|at| *at > now),
            self.planner
                .fair_usage
                .next_sample_at()
                .filter(|at| *at > now),
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
                let cancelled = error.is_cancelled();
                let Some(key) = self.dispatcher.done(error.id()) else {
                    // Cancelled for a newer write to the same workload.
                    return false;
                };
                if !cancelled {
                    tracing::error!(%error, workload = key, "a status write task failed");
                }
                self.planner.fair_usage.refund(&key);
                self.planner.overlay.forget_admission(&key);
                self.planner.overlay.forget_eviction(&key);
                return true;
            }
        };
        if self.dispatcher.done(id).is_none() {
            return false;
        }
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
                self.planner.backoff.succeeded(&key);
                self.planner.fair_usage.written(&key);
                self.planner
                    .overlay
                    .admission_written(&key, resource_version);
                false
            }
            (UpdateKind::Admit, outcome) => {
                self.planner.fair_usage.refund(&key);
                self.planner.overlay.forget_admission(&key);
                if matches!(outcome, Outcome::Failed(_)) {
                    self.planner.backoff.failed(&key, workload_status::now());
                }
                true
            }
            (UpdateKind::Evict, Outcome::Written { resource_version }) => {
                self.planner
                    .overlay
                    .eviction_written(&key, resource_version);
                false
            }
            (UpdateKind::Evict, _) => {
                self.planner.overlay.forget_eviction(&key);
                true
            }
            (UpdateKind::Pending, Outcome::Failed(_)) => {
                // Written again when a pass reaches the verdict again.
                self.handled_verdicts.forget(&key);
                false
            }
            (UpdateKind::Pending | UpdateKind::Checks, _) => false,
        }
    }

    /// One pass; returns whether it admitted a workload.
    fn run_cycle(&mut self, stores: &Stores, now: Timestamp) -> bool {
        let state = ClusterState::read(stores);
        // Before the decisions, whose writes count admissions and evictions per LocalQueue.
        let exposed = self.local_queue_selection.exposed(&state.local_queues);
        self.metrics
            .local_queues
            .expose_only(exposed.clone(), self.role);
        let Plan {
            converted,
            snapshot,
            decisions,
        } = self.planner.plan(&state, now);
        let objects = &converted.objects;
        let context = CycleContext {
            objects,
            cluster_queues: state
                .cluster_queues
                .iter()
                .map(|cq| (cq.name_any(), cq.as_ref()))
                .collect(),
            pending: converted
                .pending
                .iter()
                .map(|pending| (pending.workload.key.as_str(), pending))
                .collect(),
            holders: converted
                .holders
                .iter()
                .map(|holder| (holder.workload.key.as_str(), &*holder.workload))
                .collect(),
            now,
        };
        let admitted = decisions
            .iter()
            .any(|decision| matches!(decision, Decision::Admit { .. }));
        let mut attempts = AttemptCounts::default();
        for decision in decisions {
            self.decide(decision, &context, &mut attempts);
        }
        self.count_attempts(attempts);
        for unqueued in &converted.unqueued {
            let Some(object) = objects.get(unqueued.workload.as_str()) else {
                continue;
            };
            self.write_pending(
                &unqueued.workload,
                object,
                (unqueued.reason, &unqueued.message),
                (true, ResourceRequests::Unchanged),
                now,
            );
        }
        for key in &converted.local_queue_drains {
            let Some(holder) = context.holders.get(key.as_str()) else {
                continue;
            };
            self.planner.overlay.evict(key, &holder.uid);
            self.dispatcher.dispatch(
                key.clone(),
                Update::Evict {
                    reason: reason::LOCAL_QUEUE_STOPPED.to_owned(),
                    message: "The LocalQueue is stopped".to_owned(),
                    preemption: None,
                },
            );
        }
        for key in &converted.deactivations {
            if let Some(holder) = context.holders.get(key.as_str()) {
                self.planner.overlay.evict(key, &holder.uid);
            }
            self.dispatcher.dispatch(key.clone(), Update::Deactivate);
        }
        for key in &converted.deactivation_targets {
            self.dispatcher.dispatch(key.clone(), Update::MarkInactive);
        }
        for (key, requeue) in &converted.requeues {
            self.dispatcher
                .dispatch(key.clone(), Update::Requeue(*requeue));
        }
        for (key, outcome) in &converted.check_outcomes {
            let update = match outcome {
                CheckOutcome::Ready => Update::ChecksReady,
                CheckOutcome::Rejected(message) => Update::ChecksRejected {
                    message: message.clone(),
                },
                CheckOutcome::Retry {
                    message,
                    requeue_at,
                } => {
                    if let Some(holder) = context.holders.get(key.as_str()) {
                        self.planner.overlay.evict(key, &holder.uid);
                    }
                    Update::RetryChecks {
                        message: message.clone(),
                        requeue_at: *requeue_at,
                    }
                }
            };
            self.dispatcher.dispatch(key.clone(), update);
        }
        let (due, running): (Vec<_>, Vec<_>) = converted
            .execution_deadlines
            .iter()
            .partition(|(_, deadline)| deadline.at <= now);
        for (key, deadline) in due {
            let update = Update::ExecutionTimeExceeded {
                seconds: deadline.seconds,
            };
            self.dispatcher.dispatch(key.clone(), update);
        }
        self.next_execution_deadline = running.iter().map(|(_, deadline)| deadline.at).min();
        // An admission a later write replaced before it was sent never lands: the workload is
        // pending again, and its LocalQueue was not charged for it.
        for key in self.dispatcher.take_superseded_admissions() {
            self.planner.fair_usage.refund(&key);
            self.planner.overlay.forget_admission(&key);
        }
        // The verdicts of deleted workloads only take memory (a workload made again under the
        // same name has another resourceVersion), so they go once the verdicts outnumber the
        // workloads twice over, not with a lookup per verdict every pass.
        if self.handled_verdicts.count() > objects.len() * 2 + 64 {
            self.handled_verdicts
                .retain(|key| objects.contains_key(key));
        }
        self.publish_statuses(&state, &converted, &snapshot, &exposed, now);
        admitted
    }

    /// Adds the pass's attempts to `kueue_admission_attempts_total`, once per result rather
    /// than once per decision: a pass can decide on thousands of waiting workloads.
    fn count_attempts(&self, attempts: AttemptCounts) {
        for (result, count) in [
            ("success", attempts.success),
            ("inadmissible", attempts.inadmissible),
        ] {
            if count > 0 {
                self.metrics
                    .admission_attempts
                    .get_or_create(&AttemptLabels {
                        result,
                        replica_role: self.role,
                    })
                    .inc_by(count);
            }
        }
    }

    fn decide(
        &mut self,
        decision: Decision,
        context: &CycleContext<'_>,
        attempts: &mut AttemptCounts,
    ) {
        match decision {
            Decision::Admit {
                workload: key,
                admission,
            } => {
                let Some(pending) = context.pending.get(key.as_str()) else {
                    return;
                };
                attempts.success += 1;
                self.pending_budget.forget(&key);
                self.handled_verdicts.forget(&key);
                let generation = context
                    .objects
                    .get(key.as_str())
                    .and_then(|object| object.metadata.generation);
                let flavors: BTreeSet<&str> = admission
                    .pod_set_assignments
                    .iter()
                    .flat_map(|assignment| assignment.flavors.values())
                    .map(String::as_str)
                    .collect();
                let checks = context
                    .cluster_queues
                    .get(&admission.cluster_queue)
                    .map(|cq| admission_checks_for(cq, &flavors))
                    .unwrap_or_default();
                self.planner.overlay.admit(
                    &key,
                    &pending.workload.uid,
                    admission.clone(),
                    context.now,
                );
                self.dispatcher.dispatch(
                    key,
                    Update::Admit {
                        admission,
                        generation,
                        checks,
                    },
                );
            }
            Decision::Inadmissible {
                workload: key,
                reason,
                message,
            } => {
                attempts.inadmissible += 1;
                self.write_pending_decision(&key, reason, &message, context);
            }
            Decision::Preempt {
                workload: key,
                victims,
                reason,
                message,
            } => {
                attempts.inadmissible += 1;
                let boosted = self.planner.options().priority_boost;
                if let (Some(pending), Some(object)) = (
                    context.pending.get(key.as_str()),
                    context.objects.get(key.as_str()),
                ) {
                    let preemptor = Preemptor {
                        key: key.clone(),
                        uid: pending.workload.uid.clone(),
                        priority: object.priority(boosted),
                        cluster_queue: pending.workload.cluster_queue.clone(),
                    };
                    for victim in victims {
                        let (Some(holder), Some(victim_object)) = (
                            context.holders.get(victim.workload.as_str()),
                            context.objects.get(victim.workload.as_str()),
                        ) else {
                            continue;
                        };
                        if holder.evicted {
                            continue;
                        }
                        self.planner.overlay.evict(&victim.workload, &holder.uid);
                        self.dispatcher.dispatch(
                            victim.workload,
                            Update::Evict {
                                reason: reason::PREEMPTED.to_owned(),
                                message: victim.message,
                                preemption: Some(Preemption {
                                    reason: victim.reason,
                                    preemptor: preemptor.clone(),
                                    victim_priority: victim_object.priority(boosted),
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
                self.planner.overlay.evict(&key, &holder.uid);
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
        self.write_pending(
            key,
            object,
            (reason, message),
            (
                pending.unchanged,
                ResourceRequests::Of(pending.workload.pod_sets.clone()),
            ),
            context.now,
        );
    }

    /// Writes `QuotaReserved=False`, at the pending budget's pace, unless the workload already
    /// shows exactly that. `same_requests` says whether the workload's requests are the same as in
    /// the previous pass (when the object is too).
    fn write_pending(
        &mut self,
        key: &str,
        object: &api::Workload,
        (reason, message): (PendingReason, &str),
        (same_requests, resource_requests): (bool, ResourceRequests),
        now: Timestamp,
    ) {
        let resource_version = object.metadata.resource_version.as_deref();
        if same_requests
            && self
                .handled_verdicts
                .contains(key, resource_version, reason, message)
        {
            return;
        }
        let update = Update::Pending {
            reason,
            message: message.to_owned(),
            resource_requests,
        };
        if matches!(update.status(object, now), Ok(Some(_))) {
            let same_reason = object
                .condition(condition::QUOTA_RESERVED)
                .is_some_and(|shown| shown.status == "False" && shown.reason == reason.as_str());
            let change = if same_reason {
                Change::Message
            } else {
                Change::Verdict
            };
            self.pending_budget.offer(key, update, change, now);
        } else {
            // What waited is outdated: the workload shows this verdict already.
            self.pending_budget.forget(key);
        }
        self.handled_verdicts
            .record(key, resource_version, reason, message);
    }

    fn publish_statuses(
        &mut self,
        state: &ClusterState,
        converted: &Converted,
        snapshot: &crate::quota::Snapshot,
        exposed_local_queues: &BTreeSet<(String, String)>,
        now: Timestamp,
    ) {
        let references = state.references(self.planner.options());
        let usages = queue_status::usages(&converted.holders);
        let no_usage = QueueUsage::default();
        let fair_sharing = self.planner.fair_sharing();
        let mut desired = DesiredStatuses::default();
        let mut queue_names = BTreeSet::new();
        let mut cluster_queues: BTreeMap<String, (&api::ClusterQueue, bool)> = BTreeMap::new();
        for cluster_queue in &state.cluster_queues {
            let name = cluster_queue.name_any();
            let usage = usages.cluster_queues.get(&name).unwrap_or(&no_usage);
            let pending = self.planner.queues.pending(&name);
            let facts = ClusterQueueFacts {
                references: &references,
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
            self.report_cluster_queue(&name, cluster_queue, &references, usage, pending);
            cluster_queues.insert(
                name.clone(),
                (
                    cluster_queue.as_ref(),
                    inactive_reason(cluster_queue, &references).is_none(),
                ),
            );
            queue_names.insert(name);
        }
        for gone in self.known_cluster_queues.difference(&queue_names) {
            self.metrics.forget_cluster_queue(gone, self.role);
        }
        self.known_cluster_queues = queue_names;

        // Hashed: thousands of workloads are counted into a few dozen LocalQueues per pass.
        let mut pending_per_queue: foldhash::HashMap<&LocalQueueRef, i32> =
            foldhash::HashMap::default();
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
        let pending_for_metrics = if exposed_local_queues.is_empty() {
            BTreeMap::new()
        } else {
            pending_by_local_queue(converted, &self.planner.queues)
        };
        for local_queue in &state.local_queues {
            let reference = LocalQueueRef::of(local_queue);
            let facts = LocalQueueFacts {
                cluster_queue: local_queue
                    .spec
                    .cluster_queue
                    .as_ref()
                    .and_then(|name| cluster_queues.get(name).copied()),
                usage: usages.local_queues.get(&reference).unwrap_or(&no_usage),
                pending: pending_per_queue.get(&reference).copied().unwrap_or(0),
                admission_fair_sharing: self.planner.fair_usage.status(&reference),
            };
            let status = queue_status::local_queue_status(local_queue, &facts, now);
            if exposed_local_queues
                .contains(&(reference.namespace.to_string(), reference.name.to_string()))
            {
                let pending = pending_for_metrics
                    .get(&reference)
                    .copied()
                    .unwrap_or_default();
                let mut gauges =
                    local_queue_gauges(&status, facts.cluster_queue, facts.usage, pending);
                gauges.admission_fair_sharing = local_queue
                    .spec
                    .cluster_queue
                    .clone()
                    .zip(self.planner.fair_usage.usage(local_queue));
                self.metrics.local_queues.report(
                    &reference.namespace,
                    &reference.name,
                    self.role,
                    &gauges,
                );
            }
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
        references: &QueueReferences,
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
            cluster_queue_metric_status(cluster_queue, references),
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

/// Runs `pass` on this thread after handing the runtime's other tasks to another worker: a
/// pass over thousands of workloads is CPU work that would otherwise hold up the webhook's
/// requests scheduled on the same worker.
fn off_the_runtime<T>(pass: impl FnOnce() -> T) -> T {
    use tokio::runtime::{Handle, RuntimeFlavor};
    match Handle::try_current().map(|handle| handle.runtime_flavor()) {
        Ok(RuntimeFlavor::MultiThread) => tokio::task::block_in_place(pass),
        _ => pass(),
    }
}

/// Lookups a cycle's decisions are applied with.
struct CycleContext<'a> {
    objects: &'a foldhash::HashMap<Arc<str>, Arc<api::Workload>>,
    cluster_queues: HashMap<String, &'a api::ClusterQueue>,
    pending: foldhash::HashMap<&'a str, &'a PendingWorkload>,
    holders: foldhash::HashMap<&'a str, &'a model::Workload>,
    now: Timestamp,
}

#[cfg(test)]
mod tests;
