//! Pure changes to a Workload's status, each computing the full new status from the old one
//! with Kueue's condition semantics (`apimeta.SetStatusCondition`: the transition time moves
//! only when the status value changes).

use std::time::Duration;

use jiff::{SignedDuration, Timestamp};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};

use crate::api::constants::{condition, reason};
use crate::api::v1beta2::{
    RequeueState, SchedulingStats, Workload, WorkloadSchedulingStatsEviction, WorkloadStatus,
};
use crate::k8s::conditions::{self, new_condition, set_condition};

/// The `PodsReady` reason of Kueue versions before `WaitForStart`; it counts as waiting to start.
const LEGACY_PODS_READY_REASON: &str = "PodsReady";

/// A condition of the Workload with its generation, transitioning at `now`.
fn workload_condition(
    workload: &Workload,
    condition_type: &str,
    status: bool,
    reason: &str,
    message: &str,
    now: Timestamp,
) -> Condition {
    new_condition(condition_type, status, reason)
        .message(message)
        .generation(workload.metadata.generation)
        .at(now)
}

/// The Workload's status, or an empty one.
pub fn status_of(workload: &Workload) -> WorkloadStatus {
    workload.status.clone().unwrap_or_default()
}

/// `Finished=True` with the reason and message (Kueue `workload.Finish`).
pub fn finish(workload: &Workload, reason: &str, message: &str, now: Timestamp) -> WorkloadStatus {
    let mut status = status_of(workload);
    set_condition(
        &mut status.conditions,
        workload_condition(workload, condition::FINISHED, true, reason, message, now),
    );
    status
}

/// Finishes a Workload whose job is gone or going, as Kueue does with `FinishOrphanedWorkloads`.
pub fn finish_orphaned(workload: &Workload, now: Timestamp) -> WorkloadStatus {
    finish(
        workload,
        reason::OWNER_NOT_FOUND,
        "The workload's owner no longer exists",
        now,
    )
}

/// Releases the quota of an evicted Workload whose job has stopped: `Requeued` (True only for
/// `Preempted` and `NodeFailures` evictions) with the eviction's reason and message,
/// `QuotaReserved=False` reason `Pending`, no `status.admission`, and `Admitted=False` reason
/// `NoReservation` with the admitted time added to `accumulatedPastExecutionTimeSeconds`.
pub fn clear_reservation(
    workload: &Workload,
    evicted: &Condition,
    now: Timestamp,
) -> WorkloadStatus {
    let mut status = status_of(workload);
    let requeued = evicted.reason == reason::PREEMPTED || evicted.reason == reason::NODE_FAILURES;
    set_condition(
        &mut status.conditions,
        workload_condition(
            workload,
            condition::REQUEUED,
            requeued,
            &evicted.reason,
            &evicted.message,
            now,
        ),
    );
    set_condition(
        &mut status.conditions,
        workload_condition(
            workload,
            condition::QUOTA_RESERVED,
            false,
            reason::PENDING,
            &evicted.message,
            now,
        ),
    );
    status.admission = None;
    if let Some(admitted) = conditions::find_true(&status.conditions, condition::ADMITTED) {
        let seconds = now
            .duration_since(admitted.last_transition_time.0)
            .as_secs();
        let seconds = i32::try_from(seconds.max(0)).unwrap_or(i32::MAX);
        status.accumulated_past_execution_time_seconds = Some(
            status
                .accumulated_past_execution_time_seconds
                .unwrap_or(0)
                .saturating_add(seconds),
        );
        set_condition(
            &mut status.conditions,
            workload_condition(
                workload,
                condition::ADMITTED,
                false,
                reason::NO_RESERVATION,
                "The workload has no reservation",
                now,
            ),
        );
    }
    status
}

/// The `PodsReady` condition Kueue derives from the job (`generatePodsReadyCondition`).
pub fn pods_ready_condition(workload: &Workload, pods_ready: bool, now: Timestamp) -> Condition {
    const NOT_READY: &str = "Not all pods are ready or succeeded";
    const WAITING_FOR_RECOVERY: &str = "At least one pod has failed, waiting for recovery";
    const READY: &str = "All pods reached readiness and the workload is running";
    let make = |status, reason, message| {
        workload_condition(
            workload,
            condition::PODS_READY,
            status,
            reason,
            message,
            now,
        )
    };
    if workload.true_condition(condition::ADMITTED).is_none() {
        return make(false, reason::WAIT_FOR_START, NOT_READY);
    }
    let current = workload.condition(condition::PODS_READY);
    let recovering = current
        .is_some_and(|c| c.reason == reason::WAIT_FOR_RECOVERY || c.reason == reason::RECOVERED);
    match current {
        _ if pods_ready && recovering => make(true, reason::RECOVERED, READY),
        _ if pods_ready => make(true, reason::STARTED, READY),
        Some(c) if c.status == "True" || c.reason == reason::WAIT_FOR_RECOVERY => {
            make(false, reason::WAIT_FOR_RECOVERY, WAITING_FOR_RECOVERY)
        }
        _ => make(false, reason::WAIT_FOR_START, NOT_READY),
    }
}

/// Whether the Workload already has a condition of this type with the same status and reason.
pub fn has_condition_like(workload: &Workload, wanted: &Condition) -> bool {
    workload
        .condition(&wanted.type_)
        .is_some_and(|c| c.status == wanted.status && c.reason == wanted.reason)
}

/// Where an admitted Workload stands against the `waitForPodsReady` timeouts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PodsReadyTimeout {
    /// Not counting: not admitted, or all pods are ready.
    NotCounting,
    /// Counting; the timeout is exceeded after this long.
    Remaining(Duration),
    /// Exceeded while waiting for the pods to start (`WaitForStart`) or to recover.
    Exceeded(&'static str),
}

/// Kueue `admittedNotReadyWorkload`: start timeout counted from the `Admitted` transition,
/// recovery timeout from the `PodsReady=False` (`WaitForRecovery`) transition.
pub fn pods_ready_timeout(
    workload: &Workload,
    timeout: Duration,
    recovery_timeout: Duration,
    now: Timestamp,
) -> PodsReadyTimeout {
    let Some(admitted) = workload.true_condition(condition::ADMITTED) else {
        return PodsReadyTimeout::NotCounting;
    };
    let pods_ready = workload.condition(condition::PODS_READY);
    let (since, limit, cause) = match pods_ready {
        Some(c) if c.status == "True" => return PodsReadyTimeout::NotCounting,
        Some(c) if c.reason == reason::WAIT_FOR_RECOVERY => (
            c.last_transition_time.0,
            recovery_timeout,
            reason::WAIT_FOR_RECOVERY,
        ),
        Some(c) if c.reason != reason::WAIT_FOR_START && c.reason != LEGACY_PODS_READY_REASON => {
            return PodsReadyTimeout::NotCounting;
        }
        _ => (
            admitted.last_transition_time.0,
            timeout,
            reason::WAIT_FOR_START,
        ),
    };
    let elapsed = now.duration_since(since);
    let limit = SignedDuration::try_from(limit).unwrap_or(SignedDuration::MAX);
    match limit.checked_sub(elapsed) {
        Some(left) if left > SignedDuration::ZERO => {
            PodsReadyTimeout::Remaining(Duration::try_from(left).unwrap_or_default())
        }
        _ => PodsReadyTimeout::Exceeded(cause),
    }
}

/// Backoff before a Workload evicted `count` times is requeued: `base·2^(count−1)` capped at
/// `max` (Kueue's jitter of 0.01% is left out).
pub fn requeue_backoff(count: i32, base_seconds: u32, max_seconds: u32) -> Duration {
    let exponent = u32::try_from(count.saturating_sub(1).max(0))
        .unwrap_or(0)
        .min(32);
    let seconds = u64::from(base_seconds).saturating_mul(1u64 << exponent);
    Duration::from_secs(seconds.min(u64::from(max_seconds)))
}

/// Evicts a Workload whose pods were not ready in time: `Evicted=True` reason
/// `PodsReadyTimeout`, the requeue count incremented with `requeueAt` pushed out by the backoff,
/// and the eviction counted in `schedulingStats`.
pub fn evict_for_pods_ready_timeout(
    workload: &Workload,
    message: &str,
    underlying_cause: &str,
    backoff: (u32, u32),
    now: Timestamp,
) -> WorkloadStatus {
    let mut status = status_of(workload);
    set_condition(
        &mut status.conditions,
        workload_condition(
            workload,
            condition::EVICTED,
            true,
            reason::PODS_READY_TIMEOUT,
            message,
            now,
        ),
    );
    let requeue = status
        .requeue_state
        .get_or_insert_with(RequeueState::default);
    let count = requeue.count.unwrap_or(0).saturating_add(1);
    let wait = requeue_backoff(count, backoff.0, backoff.1);
    let requeue_at = now
        .checked_add(SignedDuration::try_from(wait).unwrap_or(SignedDuration::MAX))
        .unwrap_or(Timestamp::MAX);
    if requeue
        .requeue_at
        .as_ref()
        .is_none_or(|at| at.0 < requeue_at)
    {
        requeue.requeue_at = Some(Time(requeue_at));
    }
    requeue.count = Some(count);
    count_eviction(&mut status, reason::PODS_READY_TIMEOUT, underlying_cause);
    status
}

fn count_eviction(status: &mut WorkloadStatus, eviction_reason: &str, underlying_cause: &str) {
    let stats = status
        .scheduling_stats
        .get_or_insert_with(SchedulingStats::default);
    match stats
        .evictions
        .iter_mut()
        .find(|e| e.reason == eviction_reason && e.underlying_cause == underlying_cause)
    {
        Some(eviction) => eviction.count = eviction.count.saturating_add(1),
        None => stats.evictions.push(WorkloadSchedulingStatsEviction {
            reason: eviction_reason.to_string(),
            underlying_cause: underlying_cause.to_string(),
            count: 1,
        }),
    }
}

/// Marks a Workload to be deactivated because it was requeued too often
/// (`DeactivationTarget=True` reason `RequeuingLimitExceeded`).
pub fn deactivation_target(workload: &Workload, now: Timestamp) -> WorkloadStatus {
    let mut status = status_of(workload);
    set_condition(
        &mut status.conditions,
        workload_condition(
            workload,
            condition::DEACTIVATION_TARGET,
            true,
            reason::REQUEUING_LIMIT_EXCEEDED,
            "exceeding the maximum number of re-queuing retries",
            now,
        ),
    );
    status
}

/// Ends the requeue backoff: clears `requeueAt` and sets `Requeued=True` reason
/// `BackoffFinished`.
pub fn backoff_finished(workload: &Workload, now: Timestamp) -> WorkloadStatus {
    let mut status = status_of(workload);
    if let Some(requeue) = status.requeue_state.as_mut() {
        requeue.requeue_at = None;
    }
    set_condition(
        &mut status.conditions,
        workload_condition(
            workload,
            condition::REQUEUED,
            true,
            reason::BACKOFF_FINISHED,
            "The workload backoff was finished",
            now,
        ),
    );
    status
}
