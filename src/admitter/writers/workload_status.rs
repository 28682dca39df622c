//! Applies the scheduler's decisions to Workloads: the new `status` (admission, conditions,
//! eviction bookkeeping) applied as Kueue applies it ([`status_apply`]), then the events Kueue
//! emits.
//!
//! Building the new status is pure ([`Update::status`]); [`Applier::apply`] reads the latest
//! object, applies, and on a conflict re-reads and tries again. The scheduling loop runs many
//! applies at once and never waits for one before deciding the next cycle.

use std::sync::Arc;

use jiff::Timestamp;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use kube::api::{Patch, PatchParams};
use kube::runtime::events::EventType;
use kube::runtime::reflector::{ObjectRef, Store};
use kube::{Api, Client, Resource, ResourceExt};
use tokio::sync::Semaphore;

use super::status_apply::apply_status;
use crate::api::constants::{condition, reason};
use crate::api::v1beta2 as api;
use crate::k8s::conditions::{new_condition, set_condition};
use crate::k8s::events::{Event, EventRecorder};
use crate::k8s::quantity::format_quantity;
use crate::metrics::{
    AdmitterMetrics, EventMetrics, EvictionLabels, PreemptionLabels, PriorityLabels, ReplicaRole,
};
use crate::quota::from_api::workload_key;
use crate::quota::model;
use crate::quota::{PendingReason, PreemptionReason};

/// Name the scheduler reports events under, as Kueue's scheduler does.
pub const EVENT_REPORTER: &str = "kueue-admission";
/// Conflicts tolerated before an apply gives up (the next cycle decides again).
const MAX_ATTEMPTS: usize = 5;
/// Admissions and evictions in flight at once.
const MAX_CONCURRENT_WRITES: usize = 64;
/// Pending statuses in flight at once: their own, smaller pool, so that however many wait,
/// admissions and evictions never queue behind them.
const MAX_CONCURRENT_PENDING_WRITES: usize = 8;

/// The preemptor of a preemption, as the victim's events name it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Preemptor {
    /// `namespace/name`.
    pub key: String,
    /// UID.
    pub uid: String,
    /// Its priority, base and boost.
    pub priority: api::WorkloadPriority,
    /// ClusterQueue it is admitted to.
    pub cluster_queue: String,
}

/// Why a victim is preempted.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Preemption {
    /// `Preempted` condition reason.
    pub reason: PreemptionReason,
    /// Who preempts it.
    pub preemptor: Preemptor,
    /// The victim's priority when the scheduler chose it.
    pub victim_priority: api::WorkloadPriority,
}

/// What a pending status sets `status.resourceRequests` to.
#[derive(Clone, Debug, PartialEq)]
pub enum ResourceRequests {
    /// What these PodSets of the quota model request in all. They are shared with the queues
    /// and put in the API's shape only when written: thousands of pending statuses may wait for
    /// the pending budget at once.
    Of(Arc<[model::PodSet]>),
    /// What the workload shows already.
    Unchanged,
}

impl ResourceRequests {
    /// The requests in the API's shape: each PodSet's per-pod requests times its count.
    pub fn of(pod_sets: &[model::PodSet]) -> Vec<api::PodSetRequest> {
        pod_sets
            .iter()
            .map(|pod_set| api::PodSetRequest {
                name: pod_set.name.clone(),
                resources: pod_set
                    .requests
                    .iter()
                    .map(|(resource, value)| {
                        let total = value.saturating_mul(i64::from(pod_set.count));
                        (resource.clone(), format_quantity(resource, total))
                    })
                    .collect(),
            })
            .collect()
    }
}

/// What to write to one Workload.
#[derive(Clone, Debug, PartialEq)]
pub enum Update {
    /// Reserve quota and admit: `status.admission`, `QuotaReserved=True`, and `Admitted=True`
    /// unless AdmissionChecks apply: then each gets a `Pending` state (a state it already has
    /// is kept) and `Admitted` waits for all of them to be `Ready`.
    Admit {
        /// The reservation.
        admission: model::Admission,
        /// `metadata.generation` the decision was made for; a newer spec is not admitted.
        generation: Option<i64>,
        /// The AdmissionChecks of the ClusterQueue that apply to the reservation's flavors.
        checks: Vec<String>,
    },
    /// Every AdmissionCheck of a workload holding quota is `Ready`: `Admitted=True`.
    ChecksReady,
    /// An AdmissionCheck of a workload holding quota asks to retry: evicted (reason
    /// `AdmissionCheck`), and not requeued before `requeue_at` when set.
    RetryChecks {
        /// `Evicted` message.
        message: String,
        /// The new `requeueState.requeueAt`.
        requeue_at: Option<Timestamp>,
    },
    /// An AdmissionCheck rejected a workload holding quota: `DeactivationTarget=True` reason
    /// `AdmissionCheck` with this message (the workload is then deactivated).
    ChecksRejected {
        /// Which checks rejected it.
        message: String,
    },
    /// An admitted workload ran past its `maximumExecutionTimeSeconds` (`seconds`):
    /// `DeactivationTarget=True` reason `MaximumExecutionTimeExceeded`, the accumulated
    /// execution time cleared (the workload is then deactivated).
    ExecutionTimeExceeded {
        /// The limit.
        seconds: i32,
    },
    /// No reservation now: `QuotaReserved=False` with this reason and message.
    Pending {
        /// Condition reason.
        reason: PendingReason,
        /// Condition message.
        message: String,
        /// `status.resourceRequests`.
        resource_requests: ResourceRequests,
    },
    /// Evict a workload holding quota: `Evicted=True` (and `Preempted=True` when preempted).
    Evict {
        /// `Evicted` condition reason, e.g. `Preempted`.
        reason: String,
        /// `Evicted` (and `Preempted`) condition message.
        message: String,
        /// Set when the eviction is a preemption.
        preemption: Option<Preemption>,
    },
    /// A workload whose `spec.active` is false, as Kueue's workload controller handles it:
    /// evicted (see [`deactivation`]) unless it already is, its `DeactivationTarget` condition
    /// and `requeueState` cleared.
    Deactivate,
    /// A workload `Requeued=False` for a reason that no longer holds: `Requeued=True`.
    Requeue(Requeue),
    /// An active workload marked `DeactivationTarget=True` (its requeuing limit reached, an
    /// AdmissionCheck rejected it): `spec.active=false`, written to the spec; its eviction
    /// follows as for any inactive workload.
    MarkInactive,
}

/// Why a workload left `Requeued=False` by an eviction is requeued, once what held it back is
/// gone (Kueue's workload controller).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Requeue {
    /// It is active again after a deactivation.
    Reactivated,
    /// Its LocalQueue is no longer stopped.
    LocalQueueRestarted,
    /// Its ClusterQueue is no longer stopped.
    ClusterQueueRestarted,
}

impl Requeue {
    /// The `Requeued=False` reason this requeue ends.
    pub fn held_by(self) -> &'static str {
        match self {
            Self::Reactivated => reason::DEACTIVATED,
            Self::LocalQueueRestarted => reason::LOCAL_QUEUE_STOPPED,
            Self::ClusterQueueRestarted => reason::CLUSTER_QUEUE_STOPPED,
        }
    }

    fn reason(self) -> &'static str {
        match self {
            Self::Reactivated => reason::REACTIVATED,
            Self::LocalQueueRestarted => reason::LOCAL_QUEUE_RESTARTED,
            Self::ClusterQueueRestarted => reason::CLUSTER_QUEUE_RESTARTED,
        }
    }

    fn message(self) -> &'static str {
        match self {
            Self::Reactivated => "The workload was reactivated",
            Self::LocalQueueRestarted => "The LocalQueue was restarted after being stopped",
            Self::ClusterQueueRestarted => "The ClusterQueue was restarted after being stopped",
        }
    }
}

/// The `Evicted` reason, message and eviction cause of deactivating `workload`: `Deactivated`,
/// "The workload is deactivated", or, when a `DeactivationTarget` condition says why Kueue
/// deactivates it, `DeactivatedDueTo<its reason>` and the message with " due to <its message>".
pub fn deactivation(workload: &api::Workload) -> (String, String, String) {
    let message = "The workload is deactivated";
    match workload.condition(condition::DEACTIVATION_TARGET) {
        Some(target) => (
            format!("{}DueTo{}", reason::DEACTIVATED, target.reason),
            format!("{message} due to {}", target.message),
            target.reason.clone(),
        ),
        None => (
            reason::DEACTIVATED.to_owned(),
            message.to_owned(),
            String::new(),
        ),
    }
}

/// Why an update was not written.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Skip {
    /// The workload was admitted meanwhile.
    #[error("the workload already holds quota")]
    AlreadyAdmitted,
    /// The workload's spec changed since the decision.
    #[error("the workload changed since the decision")]
    SpecChanged,
    /// The workload finished.
    #[error("the workload is finished")]
    Finished,
    /// The workload was deactivated.
    #[error("the workload is deactivated")]
    Deactivated,
    /// The workload no longer holds quota, so there is nothing to evict.
    #[error("the workload holds no quota")]
    NoReservation,
    /// The workload is already evicted.
    #[error("the workload is already evicted")]
    AlreadyEvicted,
    /// The workload was activated again.
    #[error("the workload is active")]
    Active,
    /// The workload is not admitted (any more).
    #[error("the workload is not admitted")]
    NotAdmitted,
}

impl Update {
    /// The workload's new status, `Ok(None)` when it already is that, or why it must not be
    /// written any more.
    pub fn status(
        &self,
        workload: &api::Workload,
        now: Timestamp,
    ) -> Result<Option<api::WorkloadStatus>, Skip> {
        if workload.is_condition_true(condition::FINISHED) {
            return Err(Skip::Finished);
        }
        let current = workload.status.clone().unwrap_or_default();
        // Kueue's `HasQuotaReservation`: the condition, not `admission`, says who holds quota.
        let reserved = workload.is_condition_true(condition::QUOTA_RESERVED);
        let generation = workload.metadata.generation;
        let mut status = current.clone();
        match self {
            Update::Admit {
                admission,
                generation: decided_for,
                checks,
            } => {
                if reserved {
                    return Err(Skip::AlreadyAdmitted);
                }
                if !workload.spec.is_active() {
                    return Err(Skip::Deactivated);
                }
                if *decided_for != generation {
                    return Err(Skip::SpecChanged);
                }
                let admission = api_admission(admission);
                let reserved_message =
                    format!("Quota reserved in ClusterQueue {}", admission.cluster_queue);
                status.admission = Some(admission);
                let conditions = &mut status.conditions;
                set_condition(
                    conditions,
                    new_condition(condition::QUOTA_RESERVED, true, reason::QUOTA_RESERVED)
                        .message(&reserved_message)
                        .generation(generation)
                        .at(now),
                );
                reset_active_condition(conditions, condition::EVICTED, generation, now);
                reset_active_condition(conditions, condition::PREEMPTED, generation, now);
                status.admission_checks = check_states(&current.admission_checks, checks, now);
                let admitted = status
                    .admission_checks
                    .iter()
                    .all(|check| check.state == api::CheckState::Ready);
                let (admitted_reason, message) = if admitted {
                    (reason::ADMITTED, "The workload is admitted")
                } else {
                    (
                        reason::UNSATISFIED_ADMISSION_CHECKS,
                        "The workload has not all checks ready",
                    )
                };
                set_condition(
                    &mut status.conditions,
                    new_condition(condition::ADMITTED, admitted, admitted_reason)
                        .message(message)
                        .generation(generation)
                        .at(now),
                );
                status.resource_requests = Vec::new();
            }
            Update::RetryChecks {
                message,
                requeue_at,
            } => {
                if !reserved {
                    return Err(Skip::NoReservation);
                }
                if workload.is_condition_true(condition::EVICTED) {
                    return Err(Skip::AlreadyEvicted);
                }
                mark_evicted(
                    &mut status,
                    reason::ADMISSION_CHECK,
                    message,
                    generation,
                    now,
                );
                count_eviction(&mut status, reason::ADMISSION_CHECK, "");
                if let Some(at) = requeue_at {
                    status.requeue_state.get_or_insert_default().requeue_at = Some(Time(*at));
                }
            }
            Update::ChecksRejected { message } => {
                if !reserved {
                    return Err(Skip::NoReservation);
                }
                set_condition(
                    &mut status.conditions,
                    new_condition(
                        condition::DEACTIVATION_TARGET,
                        true,
                        reason::ADMISSION_CHECK,
                    )
                    .message(message)
                    .generation(generation)
                    .at(now),
                );
            }
            Update::ExecutionTimeExceeded { .. } => {
                if !workload.is_condition_true(condition::ADMITTED) {
                    return Err(Skip::NotAdmitted);
                }
                set_condition(
                    &mut status.conditions,
                    new_condition(
                        condition::DEACTIVATION_TARGET,
                        true,
                        reason::MAXIMUM_EXECUTION_TIME_EXCEEDED,
                    )
                    .message("exceeding the maximum execution time")
                    .generation(generation)
                    .at(now),
                );
                status.accumulated_past_execution_time_seconds = None;
            }
            Update::ChecksReady => {
                if !reserved {
                    return Err(Skip::NoReservation);
                }
                if workload.is_condition_true(condition::EVICTED) {
                    return Err(Skip::AlreadyEvicted);
                }
                let ready = current
                    .admission_checks
                    .iter()
                    .all(|check| check.state == api::CheckState::Ready);
                if ready {
                    set_condition(
                        &mut status.conditions,
                        new_condition(condition::ADMITTED, true, reason::ADMITTED)
                            .message("The workload is admitted")
                            .generation(generation)
                            .at(now),
                    );
                }
            }
            Update::Pending {
                reason: pending_reason,
                message,
                resource_requests,
            } => {
                if reserved {
                    return Err(Skip::AlreadyAdmitted);
                }
                set_condition(
                    &mut status.conditions,
                    new_condition(condition::QUOTA_RESERVED, false, pending_reason.as_str())
                        .message(message)
                        .generation(generation)
                        .at(now),
                );
                if workload
                    .condition(condition::ADMITTED)
                    .is_some_and(|admitted| admitted.status == "True")
                {
                    set_condition(
                        &mut status.conditions,
                        new_condition(condition::ADMITTED, false, reason::NO_RESERVATION)
                            .message("The workload has no reservation")
                            .generation(generation)
                            .at(now),
                    );
                }
                // What an eviction finished elsewhere left behind (see `Workload::reservation`).
                status.admission = None;
                if let ResourceRequests::Of(pod_sets) = resource_requests {
                    status.resource_requests = ResourceRequests::of(pod_sets);
                }
            }
            Update::Evict {
                reason: evicted_reason,
                message,
                preemption,
            } => {
                if !reserved {
                    return Err(Skip::NoReservation);
                }
                if workload.is_condition_true(condition::EVICTED) {
                    return Err(Skip::AlreadyEvicted);
                }
                mark_evicted(&mut status, evicted_reason, message, generation, now);
                count_eviction(&mut status, evicted_reason, "");
                if let Some(preemption) = preemption {
                    set_condition(
                        &mut status.conditions,
                        new_condition(condition::PREEMPTED, true, preemption.reason.as_str())
                            .message(message)
                            .at(now),
                    );
                }
            }
            Update::Deactivate => {
                if workload.spec.is_active() {
                    return Err(Skip::Active);
                }
                if !workload.is_condition_true(condition::EVICTED) {
                    let (evicted_reason, message, cause) = deactivation(workload);
                    mark_evicted(&mut status, &evicted_reason, &message, generation, now);
                    count_eviction(&mut status, reason::DEACTIVATED, &cause);
                }
                status
                    .conditions
                    .retain(|c| c.type_ != condition::DEACTIVATION_TARGET);
                status.requeue_state = None;
            }
            // Not a status change: see `Applier::mark_inactive`.
            Update::MarkInactive => {}
            Update::Requeue(requeue) => {
                if !workload.spec.is_active() {
                    return Err(Skip::Deactivated);
                }
                let held = workload
                    .condition(condition::REQUEUED)
                    .is_some_and(|c| c.status == "False" && c.reason == requeue.held_by());
                if held {
                    set_condition(
                        &mut status.conditions,
                        new_condition(condition::REQUEUED, true, requeue.reason())
                            .message(requeue.message())
                            .generation(generation)
                            .at(now),
                    );
                }
            }
        }
        Ok((status != current).then_some(status))
    }
}

/// The API form of an admission, quantities as Kueue formats them.
pub fn api_admission(admission: &model::Admission) -> api::Admission {
    api::Admission {
        cluster_queue: admission.cluster_queue.clone(),
        pod_set_assignments: admission
            .pod_set_assignments
            .iter()
            .map(|assignment| api::PodSetAssignment {
                name: assignment.name.clone(),
                flavors: assignment.flavors.clone(),
                resource_usage: assignment
                    .resource_usage
                    .iter()
                    .map(|(resource, value)| (resource.clone(), format_quantity(resource, *value)))
                    .collect(),
                count: Some(assignment.count),
                topology_assignment: assignment.topology.as_ref().map(api_topology_assignment),
                delayed_topology_request: None,
            })
            .collect(),
    }
}

/// The compact v1beta2 form of a topology assignment (runs of domains sharing values).
fn api_topology_assignment(assignment: &model::TopologyAssignment) -> api::TopologyAssignment {
    crate::api::v1beta1::TopologyAssignment {
        levels: assignment.levels.clone(),
        domains: assignment
            .domains
            .iter()
            .map(|domain| crate::api::v1beta1::TopologyDomainAssignment {
                values: domain.values.clone(),
                count: domain.count,
            })
            .collect(),
    }
    .into()
}

/// Kueue's `syncAdmissionCheckConditions`: one state per check, sorted by name, `Pending` for
/// a check the workload had no state for.
fn check_states(
    current: &[api::AdmissionCheckState],
    checks: &[String],
    now: Timestamp,
) -> Vec<api::AdmissionCheckState> {
    let mut states: Vec<api::AdmissionCheckState> = checks
        .iter()
        .map(|name| {
            current
                .iter()
                .find(|state| &state.name == name)
                .cloned()
                .unwrap_or_else(|| api::AdmissionCheckState {
                    name: name.clone(),
                    state: api::CheckState::Pending,
                    last_transition_time: Time(now),
                    message: String::new(),
                    requeue_after_seconds: None,
                    retry_count: None,
                    pod_set_updates: Vec::new(),
                })
        })
        .collect();
    states.sort_by(|a, b| a.name.cmp(&b.name));
    states
}

/// Kueue's `resetActiveCondition`: a `True` condition becomes `False`, reason `QuotaReserved`,
/// its message prefixed with `Previously: `.
fn reset_active_condition(
    conditions: &mut Vec<Condition>,
    type_: &str,
    generation: Option<i64>,
    now: Timestamp,
) {
    let Some(previous) = conditions
        .iter()
        .find(|c| c.type_ == type_ && c.status == "True")
        .map(|c| format!("Previously: {}", c.message))
    else {
        return;
    };
    set_condition(
        conditions,
        new_condition(type_, false, reason::QUOTA_RESERVED)
            .message(&previous)
            .generation(generation)
            .at(now),
    );
}

/// Kueue's `prepareForEviction`: `Evicted=True`, no cluster nomination or unhealthy nodes,
/// admission checks back to Pending.
fn mark_evicted(
    status: &mut api::WorkloadStatus,
    evicted_reason: &str,
    message: &str,
    generation: Option<i64>,
    now: Timestamp,
) {
    set_condition(
        &mut status.conditions,
        new_condition(condition::EVICTED, true, evicted_reason)
            .message(message)
            .generation(generation)
            .at(now),
    );
    status.cluster_name = None;
    status.nominated_cluster_names = Vec::new();
    status.unhealthy_nodes = Vec::new();
    reset_admission_checks(&mut status.admission_checks, now);
}

/// Adds one to `schedulingStats.evictions` for this reason and underlying cause.
fn count_eviction(status: &mut api::WorkloadStatus, evicted_reason: &str, cause: &str) {
    let stats = status.scheduling_stats.get_or_insert_with(Default::default);
    match stats
        .evictions
        .iter_mut()
        .find(|e| e.reason == evicted_reason && e.underlying_cause == cause)
    {
        Some(eviction) => eviction.count = eviction.count.saturating_add(1),
        None => stats.evictions.push(api::WorkloadSchedulingStatsEviction {
            reason: evicted_reason.to_owned(),
            underlying_cause: cause.to_owned(),
            count: 1,
        }),
    }
}

/// Kueue's `resetChecksOnEviction`: every decided admission check goes back to Pending.
fn reset_admission_checks(checks: &mut [api::AdmissionCheckState], now: Timestamp) {
    for check in checks
        .iter_mut()
        .filter(|c| c.state != api::CheckState::Pending)
    {
        let previous = check.state;
        if previous == api::CheckState::Retry {
            check.retry_count = Some(check.retry_count.unwrap_or(0).saturating_add(1));
        } else {
            check.retry_count = None;
        }
        check.message = format!("Reset to Pending after eviction. Previously: {previous:?}");
        check.state = api::CheckState::Pending;
        check.last_transition_time = Time(now);
        check.pod_set_updates = Vec::new();
    }
}

/// The current time at the precision Kubernetes stores in conditions (whole seconds).
pub fn now() -> Timestamp {
    let now = Timestamp::now();
    Timestamp::from_second(now.as_second()).unwrap_or(now)
}

/// Sets `spec.active=false` on a workload still active with `DeactivationTarget=True`, guarded
/// by its `resourceVersion` (a conflict is retried by the next pass).
async fn mark_inactive(api: &Api<api::Workload>, workload: &api::Workload) -> Outcome {
    let targeted = workload
        .true_condition(condition::DEACTIVATION_TARGET)
        .is_some();
    if !workload.spec.is_active() || !targeted {
        return Outcome::Unchanged;
    }
    let body = serde_json::json!({
        "metadata": {"resourceVersion": workload.resource_version()},
        "spec": {"active": false},
    });
    match api
        .patch(
            &workload.name_any(),
            &PatchParams::default(),
            &Patch::Merge(&body),
        )
        .await
    {
        Ok(written) => Outcome::Written {
            resource_version: written.resource_version(),
        },
        Err(kube::Error::Api(status)) if status.code == 404 => {
            Outcome::Skipped("the workload is gone".to_owned())
        }
        Err(error) => Outcome::Failed(error.to_string()),
    }
}

/// How applying an update ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// The patch was accepted; the object now has this `resourceVersion`.
    Written {
        /// `resourceVersion` in the response.
        resource_version: Option<String>,
    },
    /// The workload already had that status.
    Unchanged,
    /// The update no longer applies, or the workload is gone.
    Skipped(String),
    /// The API server refused the patch.
    Failed(String),
}

/// Seconds since the workload was queued: creation, or its last `Requeued` transition.
fn queued_wait_seconds(workload: &api::Workload, now: Timestamp) -> f64 {
    let queued = workload
        .condition(condition::REQUEUED)
        .map(|requeued| requeued.last_transition_time.0)
        .or_else(|| workload.metadata.creation_timestamp.as_ref().map(|t| t.0))
        .unwrap_or(now);
    now.duration_since(queued).as_secs_f64().max(0.0)
}

/// The (namespace, name) of the LocalQueue a workload was submitted to.
fn local_queue_of(workload: &api::Workload) -> Option<(&str, &str)> {
    let namespace = workload.metadata.namespace.as_deref()?;
    let name = workload.spec.queue_name.as_deref()?;
    Some((namespace, name))
}

/// Name in the workload's `priorityClassRef`, empty without one.
fn priority_class(workload: &api::Workload) -> String {
    workload
        .spec
        .priority_class_ref
        .as_ref()
        .map(|class| class.name.clone())
        .unwrap_or_default()
}

/// Kueue's rendering of both priorities in preemption events.
fn priorities(preemptor: api::WorkloadPriority, preemptee: api::WorkloadPriority) -> String {
    format!(
        "preemptor effective priority: {} (base: {}, boost: {}); preemptee effective priority: {} (base: {}, boost: {})",
        preemptor.effective(),
        preemptor.base,
        preemptor.boost,
        preemptee.effective(),
        preemptee.base,
        preemptee.boost
    )
}

/// Writes updates to Workloads and emits their events and metrics.
#[derive(Clone)]
pub struct Applier {
    client: Client,
    workloads: Store<api::Workload>,
    recorder: EventRecorder,
    metrics: AdmitterMetrics,
    role: ReplicaRole,
    permits: Arc<Semaphore>,
    pending_permits: Arc<Semaphore>,
}

impl Applier {
    /// An applier reading the latest objects from `workloads` first.
    pub fn new(
        client: Client,
        workloads: Store<api::Workload>,
        metrics: AdmitterMetrics,
        events: &EventMetrics,
        role: ReplicaRole,
    ) -> Self {
        let recorder = EventRecorder::new(
            client.clone(),
            EVENT_REPORTER,
            events.dropped(EVENT_REPORTER),
        );
        Self {
            client,
            workloads,
            recorder,
            metrics,
            role,
            permits: Arc::new(Semaphore::new(MAX_CONCURRENT_WRITES)),
            pending_permits: Arc::new(Semaphore::new(MAX_CONCURRENT_PENDING_WRITES)),
        }
    }

    /// Writes `update` to the workload `key` (`namespace/name`), re-reading it on conflicts,
    /// then records its metrics and queues its events.
    pub async fn apply(&self, key: &str, update: &Update) -> Outcome {
        let (outcome, written) = self.write(key, update).await;
        if let Some((before, written, now)) = written {
            self.report(&before, &written, update, now);
        }
        outcome
    }

    /// Writes the status; on success also returns the object before and after, and the time.
    async fn write(
        &self,
        key: &str,
        update: &Update,
    ) -> (Outcome, Option<(api::Workload, api::Workload, Timestamp)>) {
        let Some((namespace, name)) = key.split_once('/') else {
            return (
                Outcome::Skipped(format!("{key} is not namespace/name")),
                None,
            );
        };
        let permits = match update {
            Update::Pending { .. } => &self.pending_permits,
            Update::Admit { .. }
            | Update::ChecksReady
            | Update::ChecksRejected { .. }
            | Update::ExecutionTimeExceeded { .. }
            | Update::RetryChecks { .. }
            | Update::Evict { .. }
            | Update::Deactivate
            | Update::Requeue(_)
            | Update::MarkInactive => &self.permits,
        };
        let Ok(_permit) = permits.acquire().await else {
            return (
                Outcome::Skipped("the applier is shutting down".to_owned()),
                None,
            );
        };
        let api: Api<api::Workload> = Api::namespaced(self.client.clone(), namespace);
        let gone = || (Outcome::Skipped("the workload is gone".to_owned()), None);
        let cached = self.workloads.get(&ObjectRef::new(name).within(namespace));
        let mut workload = match cached {
            Some(workload) => api::Workload::clone(&workload),
            None => match api.get_opt(name).await {
                Ok(Some(workload)) => workload,
                Ok(None) => return gone(),
                Err(error) => return (Outcome::Failed(error.to_string()), None),
            },
        };
        if *update == Update::MarkInactive {
            return (mark_inactive(&api, &workload).await, None);
        }
        for _ in 0..MAX_ATTEMPTS {
            let now = now();
            let status = match update.status(&workload, now) {
                Ok(Some(status)) => status,
                Ok(None) => return (Outcome::Unchanged, None),
                Err(skip) => return (Outcome::Skipped(skip.to_string()), None),
            };
            match apply_status(&api, &workload, &status).await {
                Ok(written) => {
                    let outcome = Outcome::Written {
                        resource_version: written.resource_version(),
                    };
                    return (outcome, Some((workload, written, now)));
                }
                Err(kube::Error::Api(status)) if status.code == 409 => {
                    match api.get_opt(name).await {
                        Ok(Some(latest)) => workload = latest,
                        Ok(None) => return gone(),
                        Err(error) => return (Outcome::Failed(error.to_string()), None),
                    }
                }
                Err(kube::Error::Api(status)) if status.code == 404 => return gone(),
                Err(error) => return (Outcome::Failed(error.to_string()), None),
            }
        }
        let conflicts = format!("conflicting writes {MAX_ATTEMPTS} times in a row");
        (Outcome::Failed(conflicts), None)
    }

    /// Events and metrics of a written update.
    fn report(
        &self,
        before: &api::Workload,
        written: &api::Workload,
        update: &Update,
        now: Timestamp,
    ) {
        let priority_class = priority_class(written);
        match update {
            Update::Admit { admission, .. } => {
                let wait = queued_wait_seconds(before, now);
                let labels = PriorityLabels {
                    cluster_queue: admission.cluster_queue.clone(),
                    priority_class: priority_class.clone(),
                    replica_role: self.role,
                };
                if let Some((namespace, local_queue)) = local_queue_of(written) {
                    self.metrics.local_queues.reserved_quota(
                        namespace,
                        local_queue,
                        &priority_class,
                        self.role,
                        wait,
                    );
                }
                self.metrics.reserved_quota(&labels, wait);
                self.publish(
                    written,
                    EventType::Normal,
                    "QuotaReserved",
                    format!(
                        "Quota reserved in ClusterQueue {}, wait time since queued was {wait:.0}s",
                        admission.cluster_queue
                    ),
                );
                if written.is_condition_true(condition::ADMITTED) {
                    self.report_admission(written, &labels, wait, now);
                }
            }
            Update::RetryChecks { message, .. } => {
                let event_reason = format!("EvictedDueTo{}", reason::ADMISSION_CHECK);
                self.report_eviction(
                    (before, written),
                    (reason::ADMISSION_CHECK, ""),
                    &event_reason,
                    message,
                );
            }
            Update::ChecksRejected { message } => {
                self.publish(
                    written,
                    EventType::Warning,
                    "AdmissionCheckRejected",
                    format!("Deactivated due to {message}"),
                );
            }
            Update::ExecutionTimeExceeded { seconds } => {
                self.publish(
                    written,
                    EventType::Warning,
                    reason::MAXIMUM_EXECUTION_TIME_EXCEEDED,
                    format!("The maximum execution time ({seconds}s) exceeded"),
                );
            }
            Update::ChecksReady => {
                let Some(admission) = written.reservation() else {
                    return;
                };
                if before.is_condition_true(condition::ADMITTED)
                    || !written.is_condition_true(condition::ADMITTED)
                {
                    return;
                }
                let labels = PriorityLabels {
                    cluster_queue: admission.cluster_queue.clone(),
                    priority_class,
                    replica_role: self.role,
                };
                let wait = queued_wait_seconds(before, now);
                self.report_admission(written, &labels, wait, now);
            }
            Update::Pending {
                reason: pending_reason,
                message,
                ..
            } => {
                self.publish(
                    written,
                    EventType::Warning,
                    pending_reason.as_str(),
                    message.clone(),
                );
            }
            Update::Evict {
                reason: evicted_reason,
                message,
                preemption,
            } => {
                let cluster_queue = self.report_eviction(
                    (before, written),
                    (evicted_reason, ""),
                    &format!("EvictedDueTo{evicted_reason}"),
                    message,
                );
                if let Some(preemption) = preemption {
                    self.report_preemption(written, &cluster_queue, preemption, message);
                }
            }
            // Kueue reports a deactivation only for a workload that had an admission.
            Update::Deactivate => {
                let had_admission = before
                    .status
                    .as_ref()
                    .is_some_and(|status| status.admission.is_some());
                if had_admission && !before.is_condition_true(condition::EVICTED) {
                    let (evicted_reason, message, cause) = deactivation(before);
                    self.report_eviction(
                        (before, written),
                        (reason::DEACTIVATED, &cause),
                        &format!("EvictedDueTo{evicted_reason}"),
                        &message,
                    );
                }
            }
            Update::Requeue(_) | Update::MarkInactive => {}
        }
    }

    /// Counts an admission `wait` seconds after queueing and emits its event, which says how
    /// long it waited since its quota was reserved.
    fn report_admission(
        &self,
        written: &api::Workload,
        labels: &PriorityLabels,
        wait: f64,
        now: Timestamp,
    ) {
        if let Some((namespace, local_queue)) = local_queue_of(written) {
            self.metrics.local_queues.admitted(
                namespace,
                local_queue,
                &labels.priority_class,
                self.role,
                wait,
            );
        }
        self.metrics.admitted(labels, wait);
        let since_reservation =
            written
                .true_condition(condition::QUOTA_RESERVED)
                .map_or(0.0, |reserved| {
                    now.duration_since(reserved.last_transition_time.0)
                        .as_secs_f64()
                        .max(0.0)
                });
        let checked = written
            .status
            .as_ref()
            .is_some_and(|status| !status.admission_checks.is_empty());
        if checked {
            if let Some((namespace, local_queue)) = local_queue_of(written) {
                self.metrics.local_queues.waited_for_checks(
                    namespace,
                    local_queue,
                    &labels.priority_class,
                    self.role,
                    since_reservation,
                );
            }
            self.metrics.waited_for_checks(labels, since_reservation);
        }
        self.publish(
            written,
            EventType::Normal,
            "Admitted",
            format!(
                "Admitted by ClusterQueue {}, wait time since reservation was {since_reservation:.0}s",
                labels.cluster_queue
            ),
        );
    }

    /// Counts an eviction (reason and underlying cause) in the ClusterQueue's and the
    /// LocalQueue's metrics and emits its event; returns the ClusterQueue.
    fn report_eviction(
        &self,
        (before, written): (&api::Workload, &api::Workload),
        (evicted_reason, cause): (&str, &str),
        event_reason: &str,
        message: &str,
    ) -> String {
        let priority_class = priority_class(written);
        let cluster_queue = before
            .status
            .as_ref()
            .and_then(|status| status.admission.as_ref())
            .map(|admission| admission.cluster_queue.clone())
            .unwrap_or_default();
        if let Some((namespace, local_queue)) = local_queue_of(before) {
            self.metrics.local_queues.evicted(
                namespace,
                local_queue,
                (evicted_reason, cause),
                &priority_class,
                self.role,
            );
        }
        self.metrics
            .evicted_workloads
            .get_or_create(&EvictionLabels {
                cluster_queue: cluster_queue.clone(),
                reason: evicted_reason.to_owned(),
                underlying_cause: cause.to_owned(),
                priority_class,
                replica_role: self.role,
            })
            .inc();
        self.publish(written, EventType::Normal, event_reason, message.to_owned());
        cluster_queue
    }

    fn report_preemption(
        &self,
        victim: &api::Workload,
        victim_queue: &str,
        preemption: &Preemption,
        message: &str,
    ) {
        let preemptor = &preemption.preemptor;
        let victim_priority = preemption.victim_priority;
        self.metrics
            .preempted_workloads
            .get_or_create(&PreemptionLabels {
                preempting_cluster_queue: preemptor.cluster_queue.clone(),
                reason: preemption.reason.as_str().to_owned(),
                replica_role: self.role,
            })
            .inc();
        self.publish(
            victim,
            EventType::Normal,
            "Preempted",
            format!(
                "{message}; {}",
                priorities(preemptor.priority, victim_priority)
            ),
        );
        let preemptor_object = preemptor.key.split_once('/').and_then(|(namespace, name)| {
            self.workloads.get(&ObjectRef::new(name).within(namespace))
        });
        if let Some(preemptor_object) = preemptor_object {
            self.publish(
                &preemptor_object,
                EventType::Normal,
                "PreemptedWorkload",
                format!(
                    "Preempted workload {} (UID: {}) in ClusterQueue {victim_queue}; {}",
                    workload_key(victim),
                    victim.uid().unwrap_or_default(),
                    priorities(preemptor.priority, victim_priority)
                ),
            );
        }
    }

    fn publish(
        &self,
        workload: &api::Workload,
        type_: EventType,
        event_reason: &str,
        note: String,
    ) {
        let event = Event {
            type_,
            reason: event_reason.to_owned(),
            note,
        };
        self.recorder.record(&workload.object_ref(&()), &event);
    }
}

#[cfg(test)]
mod tests;
