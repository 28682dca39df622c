//! What to do next for one job, decided purely from the job, its Workload and the caches
//! (Kueue `ReconcileGenericJob`). Each call returns the single next step; its write triggers the
//! next reconcile through the watches, which decides the step after.

use std::{collections::BTreeMap, time::Duration};

use jiff::{SignedDuration, Timestamp};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::runtime::events::EventType;
use serde_json::Value;

use super::status::{self, PodsReadyTimeout};
use crate::admitter::jobs::workload_builder::{
    self, AdmissionInfoError, BuildError, PriorityClasses, PriorityError,
    job_workload_priority_class_name, pod_set_infos, resolve_priority, workload_matches_job,
    workload_priority_class_name, workload_spec,
};
use crate::api::constants::{RESOURCE_IN_USE_FINALIZER, STOPPING_ANNOTATION, condition, reason};
use crate::api::v1beta2::{
    PodSet as WorkloadPodSet, PriorityClassKind, ReclaimablePod, ResourceFlavorSpec, Workload,
    WorkloadSpec, WorkloadStatus,
};
use crate::config::{Configuration, Feature, NamespaceSelector, WaitForPodsReady};
use crate::jobs::{self, JobError, JobFramework, TopologyGates};
use crate::k8s::conditions::set_condition;
use crate::k8s::events::Event;
use crate::k8s::json;

/// The parts of the configuration the job controllers act on.
#[derive(Clone, Debug, PartialEq)]
pub struct JobSettings {
    /// Manage jobs without a queue-name label.
    pub manage_jobs_without_queue_name: bool,
    /// Namespaces whose jobs are managed.
    pub namespace_selector: NamespaceSelector,
    /// Job label keys copied to the Workload.
    pub label_keys_to_copy: Vec<String>,
    /// `waitForPodsReady`, when on.
    pub wait_for_pods_ready: Option<WaitForPodsReady>,
    /// Feature `ReclaimablePods`: keep `status.reclaimablePods` up to date.
    pub reclaimable_pods: bool,
    /// Feature `PartialAdmission`: keep `minCount` in the Workload's PodSets.
    pub partial_admission: bool,
    /// Which topology annotations go into the Workload's PodSets.
    pub topology: TopologyGates,
    /// Feature `AssignQueueLabelsForPods`: put the queue labels on admitted pod templates.
    pub assign_queue_labels: bool,
    /// Feature `FinishOrphanedWorkloads`: finish Workloads whose job is gone.
    pub finish_orphaned_workloads: bool,
    /// `objectRetentionPolicies.workloads.afterDeactivatedByKueue`: delete the job this long
    /// after its Workload was deactivated by the admitter (not by a user).
    pub after_deactivated_by_kueue: Option<Duration>,
}

impl JobSettings {
    /// The settings of a resolved configuration.
    pub fn from_config(config: &Configuration) -> Self {
        let gates = &config.feature_gates;
        JobSettings {
            manage_jobs_without_queue_name: config.manage_jobs_without_queue_name,
            namespace_selector: config.managed_jobs_namespace_selector.clone(),
            label_keys_to_copy: config.integrations.label_keys_to_copy.clone(),
            wait_for_pods_ready: config.wait_for_pods_ready.clone(),
            reclaimable_pods: gates.enabled(Feature::ReclaimablePods),
            partial_admission: gates.enabled(Feature::PartialAdmission),
            topology: config.topology_gates(),
            assign_queue_labels: gates.enabled(Feature::AssignQueueLabelsForPods),
            finish_orphaned_workloads: gates.enabled(Feature::FinishOrphanedWorkloads),
            after_deactivated_by_kueue: config
                .object_retention_policies
                .workloads
                .after_deactivated_by_kueue,
        }
    }
}

/// The job's controller owner, when that owner is a job of an enabled framework.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Parent {
    /// No owner of an enabled job kind: the job is top-level.
    None,
    /// The owner exists but Kuota does not manage it (no queue-name label).
    Unmanaged,
    /// The owner is managed; the job is its child and never gets its own Workload.
    Managed {
        /// Whether the owner's Workload is admitted (the child may run).
        workload_admitted: bool,
    },
    /// The owner is gone; the child is left alone (garbage collection removes it).
    Missing,
}

/// Everything [`reconcile_decision`] looks at.
pub struct JobInput<'a> {
    /// The job's kind.
    pub framework: &'a dyn JobFramework,
    /// The whole job object.
    pub job: &'a Value,
    /// Labels of the job's namespace; `None` when the namespace is not (yet) known.
    pub namespace_labels: Option<&'a BTreeMap<String, String>>,
    /// The job's managed owner, if any.
    pub parent: Parent,
    /// The job's Workload (named by [`jobs::workload_name_for`], controlled by this job).
    pub workload: Option<&'a Workload>,
    /// ResourceFlavor specs by name.
    pub flavors: &'a BTreeMap<String, ResourceFlavorSpec>,
    /// Priority classes by name.
    pub priority_classes: &'a PriorityClasses,
    /// Configuration.
    pub settings: &'a JobSettings,
    /// The current time.
    pub now: Timestamp,
}

/// The next step for a job. Steps that write a Workload refer to [`JobInput::workload`].
#[derive(Clone, Debug, PartialEq)]
pub enum JobAction {
    /// The job is not managed by Kuota.
    Ignore,
    /// Everything is in sync.
    Nothing,
    /// In sync for now; look again after this long (pods-ready timeout, requeue backoff).
    RequeueAfter(Duration),
    /// Create the job's Workload (event `CreatedWorkload` once created).
    CreateWorkload(Box<Workload>),
    /// Replace the Workload's spec.
    UpdateWorkloadSpec {
        /// The new spec.
        spec: Box<WorkloadSpec>,
        /// Event on the job.
        event: Option<Event>,
    },
    /// Remove the finalizer and delete the Workload that no longer matches the job.
    DeleteWorkload {
        /// Event on the job.
        event: Event,
    },
    /// Patch the job to this object.
    PatchJob {
        /// The job as it should be.
        job: Box<Value>,
        /// Event on the job.
        event: Option<Event>,
    },
    /// Clear a stopped batch Job's `status.startTime` so its template may change.
    ClearJobStartTime,
    /// Write the Workload's status.
    PatchWorkloadStatus {
        /// The full new status.
        status: Box<WorkloadStatus>,
        /// Event on the job.
        job_event: Option<Event>,
        /// Event on the Workload.
        workload_event: Option<Event>,
    },
    /// Delete the job (its Workload goes with it), then emit the event on it.
    DeleteJob {
        /// Event on the job.
        event: Event,
    },
    /// Remove the `resource-in-use` finalizer from the Workload.
    RemoveFinalizer {
        /// Event on the job.
        event: Option<Event>,
    },
    /// A priority class the job names is missing; no Workload until it exists.
    MissingPriorityClass(PriorityError),
}

impl JobAction {
    /// The step's name, for logs.
    pub fn name(&self) -> &'static str {
        match self {
            JobAction::Ignore => "Ignore",
            JobAction::Nothing => "Nothing",
            JobAction::RequeueAfter(_) => "RequeueAfter",
            JobAction::CreateWorkload(_) => "CreateWorkload",
            JobAction::UpdateWorkloadSpec { .. } => "UpdateWorkloadSpec",
            JobAction::DeleteWorkload { .. } => "DeleteWorkload",
            JobAction::DeleteJob { .. } => "DeleteJob",
            JobAction::PatchJob { .. } => "PatchJob",
            JobAction::ClearJobStartTime => "ClearJobStartTime",
            JobAction::PatchWorkloadStatus { .. } => "PatchWorkloadStatus",
            JobAction::RemoveFinalizer { .. } => "RemoveFinalizer",
            JobAction::MissingPriorityClass(_) => "MissingPriorityClass",
        }
    }
}

/// Why no decision could be made; the reconcile is retried.
#[derive(Debug, thiserror::Error)]
pub enum DecisionError {
    /// The job's PodSets cannot be read.
    #[error(transparent)]
    Job(#[from] JobError),
    /// The Workload cannot be built.
    #[error(transparent)]
    Build(#[from] BuildError),
    /// The admission cannot be applied yet (for example a flavor is not cached yet).
    #[error(transparent)]
    AdmissionInfo(#[from] AdmissionInfoError),
}

/// Decides the next step for a job (Kueue `ReconcileGenericJob`, in its order).
pub fn reconcile_decision(input: &JobInput<'_>) -> Result<JobAction, DecisionError> {
    let JobInput {
        framework,
        job,
        workload,
        settings,
        now,
        ..
    } = *input;

    // A deleted job first finishes its Workload, which releases the quota even when the
    // Workload outlives the job (`--cascade=orphan`), then lets go of it.
    if is_deleting(job) {
        return Ok(match workload {
            Some(workload)
                if settings.finish_orphaned_workloads
                    && workload.metadata.deletion_timestamp.is_none()
                    && !workload.is_condition_true(condition::FINISHED) =>
            {
                JobAction::PatchWorkloadStatus {
                    status: Box::new(status::finish_orphaned(workload, now)),
                    job_event: None,
                    workload_event: None,
                }
            }
            Some(workload) if has_finalizer(workload) => JobAction::RemoveFinalizer { event: None },
            _ => JobAction::Nothing,
        });
    }
    if framework.skip(job) || !is_managed(input) {
        return Ok(JobAction::Ignore);
    }
    let suspended = framework.is_suspended(job);
    let finished = framework.finished(job);
    match input.parent {
        Parent::Managed { workload_admitted } => {
            if finished.is_none() && !suspended && !workload_admitted {
                let mut stopped = job.clone();
                framework.set_suspended(&mut stopped, true);
                return Ok(patch_job(
                    stopped,
                    Some(normal("Suspended", "Kueue managed child job suspended")),
                ));
            }
            return Ok(JobAction::Ignore);
        }
        Parent::Missing => return Ok(JobAction::Ignore),
        Parent::None | Parent::Unmanaged => {}
    }

    let pod_sets = workload_builder::job_pod_sets(
        framework,
        job,
        settings.partial_admission,
        settings.topology,
    )?;

    // 1. The Workload must match the job.
    let workload = match workload {
        Some(workload)
            if !workload_matches_job(job, &pod_sets, suspended, workload, input.flavors) =>
        {
            let key = key(workload);
            if suspended && !workload.is_condition_true(condition::QUOTA_RESERVED) {
                let priority =
                    match resolve_priority(framework, job, &pod_sets, input.priority_classes) {
                        Ok(priority) => priority,
                        Err(missing) => return Ok(JobAction::MissingPriorityClass(missing)),
                    };
                let mut spec = workload_spec(job, &pod_sets, &priority);
                spec.active = workload.spec.active;
                return Ok(JobAction::UpdateWorkloadSpec {
                    spec: Box::new(spec),
                    event: Some(normal(
                        "UpdatedWorkload",
                        format!("Updated not matching Workload for suspended job: {key}"),
                    )),
                });
            }
            if !suspended && finished.is_none() {
                let message =
                    "No matching Workload; restoring pod templates according to existent Workload";
                if let Some(step) =
                    stop_step(framework, job, Some(&workload.spec.pod_sets), message)
                {
                    return Ok(step);
                }
            }
            return Ok(JobAction::DeleteWorkload {
                event: normal(
                    "DeletedWorkload",
                    format!("Deleted not matching Workload: {key}"),
                ),
            });
        }
        Some(workload) => Some(workload),
        None => {
            if !suspended && finished.is_none() {
                let message = "Missing Workload; unable to restore pod templates";
                if let Some(step) = stop_step(framework, job, None, message) {
                    return Ok(step);
                }
            }
            None
        }
    };

    // 1.1 The WorkloadPriorityClass label follows the job. A Workload whose priority came from
    // a WorkloadPriorityClass follows it; one without a class only while it holds no quota (the
    // API refuses to add a class reference to a Workload with reserved quota).
    if let Some(workload) = workload {
        let from_label = job_workload_priority_class_name(job);
        let current = workload_priority_class_name(workload);
        let follows_label = match &workload.spec.priority_class_ref {
            Some(class) => class.kind == PriorityClassKind::WorkloadPriorityClass,
            None => !workload.is_condition_true(condition::QUOTA_RESERVED),
        };
        if follows_label && from_label != current {
            let priority = match resolve_priority(framework, job, &pod_sets, input.priority_classes)
            {
                Ok(priority) => priority,
                Err(missing) => return Ok(JobAction::MissingPriorityClass(missing)),
            };
            let mut spec = workload.spec.clone();
            spec.priority_class_ref = priority.class_ref;
            spec.priority = Some(priority.value);
            return Ok(JobAction::UpdateWorkloadSpec {
                spec: Box::new(spec),
                event: Some(normal(
                    "UpdatedWorkload",
                    format!("Updated workload priority class: {}", key(workload)),
                )),
            });
        }
    }

    // 2. A finished Workload lets go of the job.
    if let Some(workload) = workload
        && workload.is_condition_true(condition::FINISHED)
    {
        return Ok(if has_finalizer(workload) {
            JobAction::RemoveFinalizer {
                event: Some(normal(
                    "FinishedWorkload",
                    format!("Workload '{}' is declared finished", key(workload)),
                )),
            }
        } else {
            JobAction::Nothing
        });
    }

    // 3. A Workload being deleted stops the job, then lets go.
    if let Some(workload) = workload
        && workload.metadata.deletion_timestamp.is_some()
    {
        if let Some(step) = stop_step(
            framework,
            job,
            Some(&workload.spec.pod_sets),
            "Workload is deleted",
        ) {
            return Ok(step);
        }
        return Ok(if has_finalizer(workload) {
            JobAction::RemoveFinalizer { event: None }
        } else {
            JobAction::Nothing
        });
    }

    // 4. A finished job finishes its Workload, which releases the quota.
    if let Some(done) = finished {
        return Ok(match workload {
            Some(workload) => {
                let why = if done.success {
                    reason::SUCCEEDED
                } else {
                    reason::FAILED
                };
                JobAction::PatchWorkloadStatus {
                    status: Box::new(status::finish(workload, why, &done.message, now)),
                    job_event: None,
                    workload_event: None,
                }
            }
            None => JobAction::Nothing,
        });
    }

    // 5. No Workload: create one once no pods are left.
    let Some(workload) = workload else {
        if framework.is_active(job) {
            return Ok(JobAction::Nothing);
        }
        let priority = match resolve_priority(framework, job, &pod_sets, input.priority_classes) {
            Ok(priority) => priority,
            Err(missing) => return Ok(JobAction::MissingPriorityClass(missing)),
        };
        let workload = workload_builder::build_workload(
            framework,
            job,
            &pod_sets,
            &priority,
            &settings.label_keys_to_copy,
        )?;
        return Ok(JobAction::CreateWorkload(Box::new(workload)));
    };

    // 6. Pods that finished early release their quota.
    if settings.reclaimable_pods {
        let reclaimable: Vec<_> = framework
            .reclaimable_pods(job)
            .into_iter()
            .map(|pods| ReclaimablePod {
                name: pods.name,
                count: pods.count,
            })
            .collect();
        let current = workload
            .status
            .as_ref()
            .map(|status| status.reclaimable_pods.clone())
            .unwrap_or_default();
        if !same_reclaimable(&current, &reclaimable) {
            let mut new_status = status::status_of(workload);
            new_status.reclaimable_pods = reclaimable;
            return Ok(write_status(new_status));
        }
    }

    // 7. waitForPodsReady: the PodsReady condition, then the timeout.
    let mut recheck_after = None;
    if let Some(wait) = &settings.wait_for_pods_ready {
        let wanted = status::pods_ready_condition(workload, framework.pods_ready(job), now);
        if !status::has_condition_like(workload, &wanted) {
            let mut new_status = status::status_of(workload);
            set_condition(&mut new_status.conditions, wanted);
            return Ok(write_status(new_status));
        }
        if workload.spec.is_active() && workload.true_condition(condition::EVICTED).is_none() {
            match status::pods_ready_timeout(workload, wait.timeout, wait.recovery_timeout, now) {
                PodsReadyTimeout::NotCounting => {}
                PodsReadyTimeout::Remaining(left) => recheck_after = Some(left),
                PodsReadyTimeout::Exceeded(cause) => {
                    return Ok(pods_ready_timeout(workload, wait, cause, now));
                }
            }
        }
    }

    // 8. An evicted Workload stops the job; once no pods are left the quota is released.
    if let Some(evicted) = workload.true_condition(condition::EVICTED) {
        if let Some(step) = stop_step(
            framework,
            job,
            Some(&workload.spec.pod_sets),
            &evicted.message,
        ) {
            return Ok(step);
        }
        if workload.is_condition_true(condition::QUOTA_RESERVED) {
            if framework.is_active(job) {
                return Ok(JobAction::Nothing);
            }
            return Ok(write_status(status::clear_reservation(
                workload, evicted, now,
            )));
        }
        if let Some(step) = deactivation_retention(workload, evicted, settings, now) {
            return Ok(step);
        }
        return Ok(backoff_step(workload, now).unwrap_or(JobAction::Nothing));
    }

    // 9. A suspended job starts once admitted, and carries queue-name changes over.
    if suspended {
        if workload.is_condition_true(condition::ADMITTED) {
            return start_job(input, workload);
        }
        let queue_name = jobs::queue_name(job).map(str::to_string);
        if workload.spec.queue_name != queue_name
            && !workload.is_condition_true(condition::QUOTA_RESERVED)
        {
            let mut spec = workload.spec.clone();
            spec.queue_name = queue_name;
            return Ok(JobAction::UpdateWorkloadSpec {
                spec: Box::new(spec),
                event: None,
            });
        }
        return Ok(done(recheck_after));
    }

    // 10. A running job without admission is stopped.
    if !workload.is_condition_true(condition::ADMITTED)
        && let Some(step) = stop_step(
            framework,
            job,
            Some(&workload.spec.pod_sets),
            "Not admitted by cluster queue",
        )
    {
        return Ok(step);
    }
    Ok(done(recheck_after))
}

/// Whether the job is Kuota's to manage: its namespace is selected, and it has a queue name
/// (or `manageJobsWithoutQueueName`) or a managed owner.
fn is_managed(input: &JobInput<'_>) -> bool {
    let Some(labels) = input.namespace_labels else {
        return false;
    };
    if !input.settings.namespace_selector.matches(labels) {
        return false;
    }
    input.settings.manage_jobs_without_queue_name
        || jobs::queue_name(input.job).is_some()
        || matches!(input.parent, Parent::Managed { .. })
}

/// Unsuspends an admitted job with the admission merged into its pod templates; errors that
/// retrying cannot fix finish the Workload with `FailedToStart`.
fn start_job(input: &JobInput<'_>, workload: &Workload) -> Result<JobAction, DecisionError> {
    let failed_to_start = |message: String| JobAction::PatchWorkloadStatus {
        status: Box::new(status::finish(
            workload,
            reason::FAILED_TO_START,
            &message,
            input.now,
        )),
        job_event: None,
        workload_event: None,
    };
    let infos = match pod_set_infos(workload, input.flavors, input.settings.assign_queue_labels) {
        Ok(infos) => infos,
        Err(error) if error.is_permanent() => return Ok(failed_to_start(error.to_string())),
        Err(error) => return Err(error.into()),
    };
    let mut started = input.job.clone();
    match input.framework.run(&mut started, &infos) {
        Ok(()) => {}
        Err(error) if error.is_permanent() => return Ok(failed_to_start(error.to_string())),
        Err(error) => return Err(error.into()),
    }
    let cluster_queue = workload
        .status
        .as_ref()
        .and_then(|status| status.admission.as_ref())
        .map(|admission| admission.cluster_queue.as_str())
        .unwrap_or_default();
    Ok(patch_job(
        started,
        Some(normal(
            "Started",
            format!("Admitted by clusterQueue {cluster_queue}"),
        )),
    ))
}

/// The next step of stopping a job, `None` once it is stopped (Kueue `stopJob`). Templates are
/// restored from the Workload's PodSets when given. A batch Job is stopped in Kueue's three
/// steps: suspend it with the `stopping` annotation, clear `status.startTime`, then restore the
/// templates and drop the annotation.
pub fn stop_step(
    framework: &dyn JobFramework,
    job: &Value,
    originals: Option<&[WorkloadPodSet]>,
    message: &str,
) -> Option<JobAction> {
    let restore = |target: &mut Value| match originals {
        Some(pod_sets) => {
            let pod_sets: Vec<_> = pod_sets
                .iter()
                .map(workload_builder::from_workload_pod_set)
                .collect();
            framework.restore(target, &pod_sets);
        }
        None => framework.set_suspended(target, true),
    };
    if framework.kind() != jobs::BatchJob.kind() {
        if framework.is_suspended(job) {
            return None;
        }
        let mut stopped = job.clone();
        restore(&mut stopped);
        return Some(patch_job(stopped, Some(normal("Stopped", message))));
    }

    if !framework.is_suspended(job) {
        let mut stopping = job.clone();
        framework.set_suspended(&mut stopping, true);
        set_annotation(&mut stopping, STOPPING_ANNOTATION, "true");
        if stopping != *job {
            return Some(patch_job(stopping, Some(normal("Stopped", message))));
        }
    }
    if json::at(job, "/status/startTime").is_some_and(|time| !time.is_null()) {
        return Some(JobAction::ClearJobStartTime);
    }
    let mut restored = job.clone();
    if originals.is_some() {
        restore(&mut restored);
    }
    if let Some(annotations) = restored
        .pointer_mut("/metadata/annotations")
        .and_then(Value::as_object_mut)
    {
        annotations.remove(STOPPING_ANNOTATION);
    }
    (restored != *job).then(|| patch_job(restored, None))
}

/// Evicts the Workload for exceeding the pods-ready timeout, or marks it for deactivation once
/// it was requeued `backoffLimitCount` times.
fn pods_ready_timeout(
    workload: &Workload,
    wait: &WaitForPodsReady,
    cause: &str,
    now: Timestamp,
) -> JobAction {
    let strategy = &wait.requeuing_strategy;
    let count = workload
        .status
        .as_ref()
        .and_then(|status| status.requeue_state.as_ref())
        .and_then(|state| state.count)
        .unwrap_or(0);
    if let Some(limit) = strategy.backoff_limit_count
        && i64::from(count) + 1 > i64::from(limit)
    {
        if workload
            .true_condition(condition::DEACTIVATION_TARGET)
            .is_some()
        {
            return JobAction::Nothing;
        }
        return write_status(status::deactivation_target(workload, now));
    }
    let message = format!("Exceeded the PodsReady timeout {}", key(workload));
    let new_status = status::evict_for_pods_ready_timeout(
        workload,
        &message,
        cause,
        (strategy.backoff_base_seconds, strategy.backoff_max_seconds),
        now,
    );
    JobAction::PatchWorkloadStatus {
        status: Box::new(new_status),
        job_event: None,
        workload_event: Some(normal(
            format!("EvictedDueTo{}", reason::PODS_READY_TIMEOUT),
            message,
        )),
    }
}

/// `afterDeactivatedByKueue`: the job of a Workload the admitter deactivated (eviction reason
/// `DeactivatedDueTo<cause>`, unlike a user's plain `Deactivated`) is deleted once the
/// retention has passed since the eviction.
fn deactivation_retention(
    workload: &Workload,
    evicted: &Condition,
    settings: &JobSettings,
    now: Timestamp,
) -> Option<JobAction> {
    let retention = settings.after_deactivated_by_kueue?;
    let by_kuota = format!("{}DueTo", reason::DEACTIVATED);
    if workload.spec.is_active() || !evicted.reason.starts_with(&by_kuota) {
        return None;
    }
    let retention = SignedDuration::try_from(retention).unwrap_or(SignedDuration::MAX);
    let due = evicted
        .last_transition_time
        .0
        .checked_add(retention)
        .unwrap_or(Timestamp::MAX);
    if due > now {
        let left = Duration::try_from(due.duration_since(now)).unwrap_or_default();
        return Some(JobAction::RequeueAfter(left));
    }
    Some(JobAction::DeleteJob {
        event: normal(
            "Deleted",
            "Deleted job: deactivation retention period expired",
        ),
    })
}

/// After a `PodsReadyTimeout` (or admission check) eviction the Workload waits out its backoff,
/// then becomes `Requeued=True` reason `BackoffFinished`.
fn backoff_step(workload: &Workload, now: Timestamp) -> Option<JobAction> {
    let requeued = workload.condition(condition::REQUEUED)?;
    let backing_off = requeued.status == "False"
        && (requeued.reason == reason::PODS_READY_TIMEOUT
            || requeued.reason == reason::ADMISSION_CHECK);
    if !backing_off || !workload.spec.is_active() {
        return None;
    }
    let requeue_at = workload
        .status
        .as_ref()
        .and_then(|status| status.requeue_state.as_ref())
        .and_then(|state| state.requeue_at.as_ref());
    if let Some(at) = requeue_at
        && at.0 > now
    {
        let left = Duration::try_from(at.0.duration_since(now)).unwrap_or_default();
        return Some(JobAction::RequeueAfter(left));
    }
    Some(write_status(status::backoff_finished(workload, now)))
}

fn done(recheck_after: Option<Duration>) -> JobAction {
    recheck_after.map_or(JobAction::Nothing, JobAction::RequeueAfter)
}

fn write_status(status: WorkloadStatus) -> JobAction {
    JobAction::PatchWorkloadStatus {
        status: Box::new(status),
        job_event: None,
        workload_event: None,
    }
}

fn patch_job(job: Value, event: Option<Event>) -> JobAction {
    JobAction::PatchJob {
        job: Box::new(job),
        event,
    }
}

fn normal(reason: impl Into<String>, note: impl Into<String>) -> Event {
    Event {
        type_: EventType::Normal,
        reason: reason.into(),
        note: note.into(),
    }
}

fn same_reclaimable(current: &[ReclaimablePod], wanted: &[ReclaimablePod]) -> bool {
    current.len() == wanted.len()
        && wanted.iter().all(|pods| {
            current
                .iter()
                .any(|kept| kept.name == pods.name && kept.count == pods.count)
        })
}

/// `namespace/name` of a Workload, as Kueue prints it.
fn key(workload: &Workload) -> String {
    format!(
        "{}/{}",
        workload.metadata.namespace.as_deref().unwrap_or_default(),
        workload.metadata.name.as_deref().unwrap_or_default()
    )
}

fn has_finalizer(workload: &Workload) -> bool {
    workload
        .metadata
        .finalizers
        .as_ref()
        .is_some_and(|finalizers| finalizers.iter().any(|f| f == RESOURCE_IN_USE_FINALIZER))
}

fn set_annotation(object: &mut Value, key: &str, value: &str) {
    let Some(metadata) = object.get_mut("metadata").and_then(Value::as_object_mut) else {
        return;
    };
    let annotations = metadata
        .entry("annotations")
        .or_insert_with(|| Value::Object(Default::default()));
    if !annotations.is_object() {
        *annotations = Value::Object(Default::default());
    }
    if let Some(annotations) = annotations.as_object_mut() {
        annotations.insert(key.to_string(), Value::String(value.to_string()));
    }
}

fn is_deleting(job: &Value) -> bool {
    json::at(job, "/metadata/deletionTimestamp").is_some_and(|time| !time.is_null())
}
