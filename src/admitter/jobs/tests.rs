//! Tests of the job reconcile decisions, the status changes and the patch helpers.

use std::{collections::BTreeMap, time::Duration};

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{OwnerReference, Time};
use kube::runtime::events::EventType;
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use super::status;
use super::*;
use crate::admitter::jobs::workload_builder::tests::{
    JobBuilder, NOW, UID, WorkloadBuilder, at, condition, flavors, now,
};
use crate::admitter::jobs::workload_builder::{PodPriorityClass, PriorityClasses, PriorityError};
use crate::api::v1beta2::{RequeueState, Workload, WorkloadStatus};
use crate::config::LoadOptions;
use crate::jobs::{BatchJob, JobFramework, PYTORCH_JOB};
use crate::k8s::conditions::set_condition;

fn settings() -> JobSettings {
    let config = Configuration::from_defaults(&LoadOptions::default()).expect("defaults");
    JobSettings {
        wait_for_pods_ready: None,
        ..JobSettings::from_config(&config)
    }
}

fn settings_waiting_for_pods() -> JobSettings {
    let config = Configuration::from_defaults(&LoadOptions::default()).expect("defaults");
    JobSettings::from_config(&config)
}

fn namespace_labels() -> BTreeMap<String, String> {
    BTreeMap::from([("kubernetes.io/metadata.name".to_string(), "ns".to_string())])
}

/// The inputs of one decision, with defaults for everything but the job.
struct Case<'a> {
    framework: &'a dyn JobFramework,
    job: Value,
    workload: Option<Workload>,
    parent: Parent,
    namespace_labels: Option<BTreeMap<String, String>>,
    priority_classes: PriorityClasses,
    settings: JobSettings,
}

impl<'a> Case<'a> {
    fn new(framework: &'a dyn JobFramework, job: Value) -> Self {
        Case {
            framework,
            job,
            workload: None,
            parent: Parent::None,
            namespace_labels: Some(namespace_labels()),
            priority_classes: PriorityClasses::default(),
            settings: settings(),
        }
    }

    fn batch(job: JobBuilder) -> Self {
        Case::new(&BatchJob, job.build())
    }

    fn workload(mut self, workload: Workload) -> Self {
        self.workload = Some(workload);
        self
    }

    fn decide(&self) -> Result<JobAction, DecisionError> {
        let flavors = flavors();
        reconcile_decision(&JobInput {
            framework: self.framework,
            job: &self.job,
            namespace_labels: self.namespace_labels.as_ref(),
            parent: self.parent,
            workload: self.workload.as_ref(),
            flavors: &flavors,
            priority_classes: &self.priority_classes,
            settings: &self.settings,
            now: now(),
        })
    }

    fn action(&self) -> JobAction {
        self.decide().expect("a decision")
    }
}

fn event(reason: &str, note: &str) -> Option<Event> {
    Some(Event {
        type_: EventType::Normal,
        reason: reason.to_string(),
        note: note.to_string(),
    })
}

fn workload_of(job: &Value) -> WorkloadBuilder {
    WorkloadBuilder::for_job(&BatchJob, job)
}

fn status_of(action: JobAction) -> WorkloadStatus {
    match action {
        JobAction::PatchWorkloadStatus { status, .. } => *status,
        other => panic!("expected a status write, got {other:?}"),
    }
}

fn patched_job(action: JobAction) -> (Value, Option<Event>) {
    match action {
        JobAction::PatchJob { job, event } => (*job, event),
        other => panic!("expected a job patch, got {other:?}"),
    }
}

const EVICTED_MESSAGE: &str = "Preempted to accommodate a workload (UID: u2, JobUID: j2) due to prioritization in the ClusterQueue";

fn evicted() -> k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition {
    condition(
        "Evicted",
        "True",
        "Preempted",
        EVICTED_MESSAGE,
        "2025-06-01T11:30:00Z",
    )
}

/// The admitted batch Job as the decision starts it.
fn started(job: &Value) -> Value {
    JobBuilder(job.clone())
        .suspend(false)
        .set(
            "/spec/template/metadata/labels",
            json!({
                "app": "sample",
                "kueue.x-k8s.io/podset": "main",
                "kueue.x-k8s.io/local-queue-name": "lq",
                "kueue.x-k8s.io/cluster-queue-name": "cq",
            }),
        )
        .set("/spec/template/spec/nodeSelector", json!({"instance-type": "on-demand"}))
        .set(
            "/spec/template/spec/tolerations",
            json!([{"key": "dedicated", "operator": "Equal", "value": "batch", "effect": "NoSchedule"}]),
        )
        .build()
}

// === Which jobs are managed ===

#[test]
fn only_selected_jobs_are_managed() {
    let without_queue = || {
        JobBuilder::batch()
            .set("/metadata/labels", json!({}))
            .build()
    };
    let cases: Vec<(&str, Case, bool)> = vec![
        (
            "a job with a queue name",
            Case::batch(JobBuilder::batch()),
            true,
        ),
        (
            "a job without a queue name",
            Case::new(&BatchJob, without_queue()),
            false,
        ),
        (
            "a job without a queue name with manageJobsWithoutQueueName",
            Case {
                settings: JobSettings {
                    manage_jobs_without_queue_name: true,
                    ..settings()
                },
                ..Case::new(&BatchJob, without_queue())
            },
            true,
        ),
        (
            "a job in kube-system",
            Case {
                namespace_labels: Some(BTreeMap::from([(
                    "kubernetes.io/metadata.name".to_string(),
                    "kube-system".to_string(),
                )])),
                ..Case::batch(JobBuilder::batch())
            },
            false,
        ),
        (
            "a job in a namespace not known",
            Case {
                namespace_labels: None,
                ..Case::batch(JobBuilder::batch())
            },
            false,
        ),
        (
            "a job whose owner is gone",
            Case {
                parent: Parent::Missing,
                ..Case::batch(JobBuilder::batch())
            },
            false,
        ),
        (
            "a job with a queue name under an unmanaged owner",
            Case {
                parent: Parent::Unmanaged,
                ..Case::batch(JobBuilder::batch())
            },
            true,
        ),
    ];
    for (name, case, managed) in cases {
        let action = case.action();
        assert_eq!(
            matches!(action, JobAction::CreateWorkload(_)),
            managed,
            "{name}: {action:?}"
        );
        if !managed {
            assert_eq!(action, JobAction::Ignore, "{name}");
        }
    }
}

#[test]
fn a_child_of_a_managed_job_runs_only_while_its_parent_is_admitted() {
    let running_child = || {
        JobBuilder::batch()
            .set("/metadata/labels", json!({}))
            .suspend(false)
    };
    let child = Case {
        parent: Parent::Managed {
            workload_admitted: false,
        },
        ..Case::batch(running_child())
    };
    assert_eq!(
        child.action(),
        JobAction::PatchJob {
            job: Box::new(running_child().suspend(true).build()),
            event: event("Suspended", "Kueue managed child job suspended"),
        }
    );
    let admitted_parent = Case {
        parent: Parent::Managed {
            workload_admitted: true,
        },
        ..Case::batch(running_child())
    };
    assert_eq!(admitted_parent.action(), JobAction::Ignore);
}

// === Creating the Workload ===

#[test]
fn a_suspended_job_gets_its_workload() {
    let job = JobBuilder::batch().build();
    let expected = workload_of(&job).build();
    let JobAction::CreateWorkload(created) = Case::new(&BatchJob, job).action() else {
        panic!("expected a Workload to be created");
    };
    // The builder's fixture only adds what the API server would.
    let mut created = *created;
    created.metadata.generation = Some(1);
    created.metadata.resource_version = Some("11".to_string());
    assert_eq!(created, expected);
}

#[test]
fn a_running_job_without_workload_is_stopped_before_one_is_created() {
    let running = JobBuilder::batch().suspend(false).build();
    let (stopping, event_) = patched_job(Case::new(&BatchJob, running.clone()).action());
    assert_eq!(
        stopping,
        JobBuilder(running)
            .suspend(true)
            .annotation("kueue.x-k8s.io/stopping", "true")
            .build()
    );
    assert_eq!(
        event_,
        event(
            "Stopped",
            "Missing Workload; unable to restore pod templates"
        )
    );

    let still_terminating = JobBuilder::batch().set("/status/active", json!(1)).build();
    assert_eq!(
        Case::new(&BatchJob, still_terminating).action(),
        JobAction::Nothing
    );
}

#[test]
fn a_missing_priority_class_holds_the_workload_back() {
    let job = JobBuilder::batch()
        .label("kueue.x-k8s.io/priority-class", "urgent")
        .build();
    assert_eq!(
        Case::new(&BatchJob, job).action(),
        JobAction::MissingPriorityClass(PriorityError::WorkloadPriorityClassNotFound(
            "urgent".to_string()
        ))
    );
}

#[test]
fn a_new_workload_priority_class_label_reaches_the_workload() {
    let job = JobBuilder::batch().build();
    let workload = workload_of(&job).build();
    let relabelled = JobBuilder(job)
        .label("kueue.x-k8s.io/priority-class", "high")
        .build();
    let case = Case {
        priority_classes: PriorityClasses {
            workload: BTreeMap::from([("high".to_string(), 1000)]),
            pod: BTreeMap::from([(
                "ignored".to_string(),
                PodPriorityClass {
                    value: 5,
                    global_default: true,
                },
            )]),
        },
        ..Case::new(&BatchJob, relabelled).workload(workload.clone())
    };
    let mut spec = workload.spec.clone();
    spec.priority_class_ref =
        Some(crate::api::v1beta2::PriorityClassRef::workload_priority_class("high"));
    spec.priority = Some(1000);
    assert_eq!(
        case.action(),
        JobAction::UpdateWorkloadSpec {
            spec: Box::new(spec),
            event: event(
                "UpdatedWorkload",
                "Updated workload priority class: ns/job-sample-4742f"
            ),
        }
    );
}

#[test]
fn a_workload_holding_quota_keeps_its_priority_source() {
    let job = JobBuilder::batch().build();
    let admitted = workload_of(&job).admitted().build();
    let relabelled = JobBuilder(started(&job))
        .label("kueue.x-k8s.io/priority-class", "high")
        .build();
    let case = Case {
        priority_classes: PriorityClasses {
            workload: BTreeMap::from([("high".to_string(), 1000)]),
            pod: BTreeMap::new(),
        },
        ..Case::new(&BatchJob, relabelled).workload(admitted)
    };
    assert_eq!(case.action(), JobAction::Nothing);
}

// === A Workload that no longer matches ===

#[test]
fn a_changed_suspended_job_updates_its_pending_workload_in_place() {
    let job = JobBuilder::batch().build();
    let workload = workload_of(&job).build();
    let bigger = JobBuilder(job)
        .set("/spec/parallelism", json!(3))
        .set("/spec/completions", json!(3))
        .build();
    let JobAction::UpdateWorkloadSpec { spec, event: note } =
        Case::new(&BatchJob, bigger).workload(workload).action()
    else {
        panic!("expected an update");
    };
    assert_eq!(spec.pod_sets[0].count, 3);
    assert_eq!(spec.priority, Some(0));
    assert_eq!(
        note,
        event(
            "UpdatedWorkload",
            "Updated not matching Workload for suspended job: ns/job-sample-4742f"
        )
    );
}

#[test]
fn a_changed_job_with_reserved_quota_replaces_its_workload() {
    let job = JobBuilder::batch().build();
    let admitted = workload_of(&job).admitted().build();
    let bigger = JobBuilder(job)
        .set("/spec/parallelism", json!(3))
        .set("/spec/completions", json!(3))
        .build();
    assert_eq!(
        Case::new(&BatchJob, bigger).workload(admitted).action(),
        JobAction::DeleteWorkload {
            event: Event {
                type_: EventType::Normal,
                reason: "DeletedWorkload".to_string(),
                note: "Deleted not matching Workload: ns/job-sample-4742f".to_string(),
            }
        }
    );
}

// === Finishing ===

#[test]
fn a_finished_job_finishes_its_workload() {
    let job = JobBuilder::batch().build();
    let admitted = workload_of(&job).admitted().build();
    let cases = [
        (
            "Complete",
            "Succeeded",
            "Reached expected number of succeeded pods",
        ),
        (
            "Failed",
            "Failed",
            "Job has reached the specified backoff limit",
        ),
    ];
    for (job_condition, reason, message) in cases {
        let finished = JobBuilder(job.clone())
            .suspend(false)
            .set(
                "/status/conditions",
                json!([{"type": job_condition, "status": "True", "message": message}]),
            )
            .build();
        let status = status_of(
            Case::new(&BatchJob, finished)
                .workload(admitted.clone())
                .action(),
        );
        let finished_condition = status
            .conditions
            .iter()
            .find(|c| c.type_ == "Finished")
            .expect("Finished condition");
        assert_eq!(
            finished_condition,
            &condition("Finished", "True", reason, message, NOW),
            "{job_condition}"
        );
        assert_eq!(
            status.admission,
            admitted.status.as_ref().and_then(|s| s.admission.clone())
        );
    }
}

#[test]
fn a_finished_workload_lets_go_of_its_finalizer_once() {
    let job = JobBuilder::batch().suspend(false).build();
    let finished = workload_of(&job)
        .admitted()
        .condition(condition("Finished", "True", "Succeeded", "", NOW))
        .build();
    assert_eq!(
        Case::new(&BatchJob, job.clone())
            .workload(finished.clone())
            .action(),
        JobAction::RemoveFinalizer {
            event: event(
                "FinishedWorkload",
                "Workload 'ns/job-sample-4742f' is declared finished"
            ),
        }
    );
    let mut released = finished;
    released.metadata.finalizers = None;
    assert_eq!(
        Case::new(&BatchJob, job).workload(released).action(),
        JobAction::Nothing
    );
}

#[test]
fn a_deleted_job_finishes_its_workload_then_releases_the_finalizer() {
    let job = JobBuilder::batch()
        .set("/metadata/deletionTimestamp", json!(NOW))
        .build();
    let workload = workload_of(&job).admitted().build();
    let status = status_of(
        Case::new(&BatchJob, job.clone())
            .workload(workload.clone())
            .action(),
    );
    assert_eq!(
        status.conditions.iter().find(|c| c.type_ == "Finished"),
        Some(&condition(
            "Finished",
            "True",
            "OwnerNotFound",
            "The workload's owner no longer exists",
            NOW
        ))
    );

    let mut finished = workload.clone();
    finished.status = Some(status);
    assert_eq!(
        Case::new(&BatchJob, job.clone())
            .workload(finished)
            .action(),
        JobAction::RemoveFinalizer { event: None }
    );

    // Without `FinishOrphanedWorkloads` the Workload is only let go of, as in Kueue.
    let mut case = Case::new(&BatchJob, job).workload(workload);
    case.settings.finish_orphaned_workloads = false;
    assert_eq!(case.action(), JobAction::RemoveFinalizer { event: None });
}

#[test]
fn a_deleted_workload_stops_its_job_and_releases_the_finalizer() {
    let running = JobBuilder::batch().suspend(false).build();
    let mut deleting = workload_of(&running).admitted().build();
    deleting.metadata.deletion_timestamp = Some(at(NOW));
    let (stopping, note) = patched_job(
        Case::new(&BatchJob, running.clone())
            .workload(deleting.clone())
            .action(),
    );
    assert_eq!(stopping["spec"]["suspend"], json!(true));
    assert_eq!(note, event("Stopped", "Workload is deleted"));
    assert_eq!(
        Case::new(&BatchJob, JobBuilder::batch().build())
            .workload(deleting)
            .action(),
        JobAction::RemoveFinalizer { event: None }
    );
}

// === Starting ===

#[test]
fn an_admitted_job_starts_with_its_flavor() {
    let job = JobBuilder::batch().build();
    let admitted = workload_of(&job).admitted().build();
    assert_eq!(
        Case::new(&BatchJob, job.clone())
            .workload(admitted)
            .action(),
        JobAction::PatchJob {
            job: Box::new(started(&job)),
            event: event("Started", "Admitted by clusterQueue cq"),
        }
    );
}

#[test]
fn an_admitted_pytorch_job_starts_every_replica_type() {
    let job = JobBuilder::pytorch().build();
    let admitted = WorkloadBuilder::for_job(&PYTORCH_JOB, &job)
        .admitted()
        .build();
    let (running, note) = patched_job(Case::new(&PYTORCH_JOB, job).workload(admitted).action());
    assert_eq!(running["spec"]["runPolicy"]["suspend"], json!(false));
    for (replica, pod_set) in [("Master", "master"), ("Worker", "worker")] {
        let template = &running["spec"]["pytorchReplicaSpecs"][replica]["template"];
        assert_eq!(
            template["spec"]["nodeSelector"],
            json!({"instance-type": "on-demand"})
        );
        assert_eq!(
            template["metadata"]["labels"]["kueue.x-k8s.io/podset"],
            json!(pod_set)
        );
    }
    assert_eq!(note, event("Started", "Admitted by clusterQueue cq"));
}

#[test]
fn an_admission_that_cannot_apply_fails_to_start() {
    let job = JobBuilder::batch()
        .set(
            "/spec/template/spec/nodeSelector",
            json!({"instance-type": "spot"}),
        )
        .build();
    let admitted = workload_of(&job).admitted().build();
    let status = status_of(Case::new(&BatchJob, job).workload(admitted).action());
    let finished = status.conditions.iter().find(|c| c.type_ == "Finished");
    assert_eq!(
        finished,
        Some(&condition(
            "Finished",
            "True",
            "FailedToStart",
            "invalid admission check PodSetUpdate: conflict for nodeSelector: conflict for key=instance-type, value1=spot, value2=on-demand",
            NOW,
        ))
    );
}

#[test]
fn an_admission_with_an_uncached_flavor_is_retried() {
    let job = JobBuilder::batch().build();
    let mut admitted = workload_of(&job).admitted().build();
    if let Some(admission) = admitted.status.as_mut().and_then(|s| s.admission.as_mut()) {
        admission.pod_set_assignments[0]
            .flavors
            .insert("cpu".to_string(), "reserved".to_string());
    }
    let error = Case::new(&BatchJob, job)
        .workload(admitted)
        .decide()
        .expect_err("retry");
    assert_eq!(error.to_string(), r#"ResourceFlavor "reserved" not found"#);
}

#[test]
fn a_queue_change_of_a_pending_job_moves_its_workload() {
    let job = JobBuilder::batch().build();
    let workload = workload_of(&job).build();
    let moved = JobBuilder(job)
        .label("kueue.x-k8s.io/queue-name", "other")
        .build();
    let mut spec = workload.spec.clone();
    spec.queue_name = Some("other".to_string());
    assert_eq!(
        Case::new(&BatchJob, moved).workload(workload).action(),
        JobAction::UpdateWorkloadSpec {
            spec: Box::new(spec),
            event: None
        }
    );
}

// === Stopping ===

#[test]
fn a_running_job_without_admission_is_stopped() {
    let job = JobBuilder::batch().build();
    let pending = workload_of(&job).build();
    let running = JobBuilder(job).suspend(false).build();
    let (_, note) = patched_job(Case::new(&BatchJob, running).workload(pending).action());
    assert_eq!(note, event("Stopped", "Not admitted by cluster queue"));
}

#[test]
fn an_evicted_batch_job_is_stopped_in_kueues_three_steps() {
    let job = JobBuilder::batch().build();
    let evicted_workload = workload_of(&job).admitted().condition(evicted()).build();
    let running = JobBuilder(started(&job))
        .set("/status/startTime", json!("2025-06-01T11:01:00Z"))
        .set("/status/active", json!(2))
        .build();
    let decide = |job: &Value| {
        Case::new(&BatchJob, job.clone())
            .workload(evicted_workload.clone())
            .action()
    };

    // 1. Suspend and mark as stopping.
    let (stopping, note) = patched_job(decide(&running));
    assert_eq!(
        stopping,
        JobBuilder(running.clone())
            .suspend(true)
            .annotation("kueue.x-k8s.io/stopping", "true")
            .build()
    );
    assert_eq!(note, event("Stopped", EVICTED_MESSAGE));

    // 2. Clear the start time so the template may change.
    assert_eq!(decide(&stopping), JobAction::ClearJobStartTime);

    // 3. Restore the template exactly and drop the annotation.
    let mut no_start_time = stopping.clone();
    no_start_time["status"]
        .as_object_mut()
        .expect("status")
        .remove("startTime");
    let (restored, note) = patched_job(decide(&no_start_time));
    let mut expected = JobBuilder(job.clone())
        .set("/status/active", json!(2))
        .set("/metadata/annotations", json!({}))
        .build();
    expected["spec"]["suspend"] = json!(true);
    assert_eq!(restored, expected);
    assert_eq!(note, None);

    // 4. While pods are left, wait; then release the quota.
    assert_eq!(decide(&restored), JobAction::Nothing);
    let mut gone = restored.clone();
    gone["status"] = json!({});
    let status = status_of(decide(&gone));
    let mut expected = evicted_workload.status.clone().expect("status");
    expected.admission = None;
    expected.accumulated_past_execution_time_seconds = Some(3600);
    expected.conditions = vec![
        condition("QuotaReserved", "False", "Pending", EVICTED_MESSAGE, NOW),
        condition(
            "Admitted",
            "False",
            "NoReservation",
            "The workload has no reservation",
            NOW,
        ),
        evicted(),
        condition("Requeued", "True", "Preempted", EVICTED_MESSAGE, NOW),
    ];
    assert_eq!(status, expected);
}

#[test]
fn an_evicted_pytorch_job_is_suspended_and_restored_in_one_patch() {
    let job = JobBuilder::pytorch().build();
    let evicted_workload = WorkloadBuilder::for_job(&PYTORCH_JOB, &job)
        .admitted()
        .condition(evicted())
        .build();
    let admitted = WorkloadBuilder::for_job(&PYTORCH_JOB, &job)
        .admitted()
        .build();
    let (running, _) = patched_job(
        Case::new(&PYTORCH_JOB, job.clone())
            .workload(admitted)
            .action(),
    );
    let (stopped, note) = patched_job(
        Case::new(&PYTORCH_JOB, running)
            .workload(evicted_workload)
            .action(),
    );
    // The templates are back as they were; only their emptied `metadata` maps remain.
    let restored = JobBuilder(job)
        .set(
            "/spec/pytorchReplicaSpecs/Master/template/metadata",
            json!({}),
        )
        .set(
            "/spec/pytorchReplicaSpecs/Worker/template/metadata",
            json!({}),
        )
        .build();
    assert_eq!(stopped, restored);
    assert_eq!(note, event("Stopped", EVICTED_MESSAGE));
}

#[test]
fn an_evicted_workload_without_quota_waits_for_readmission() {
    let job = JobBuilder::batch().build();
    let requeued = workload_of(&job)
        .condition(evicted())
        .condition(condition(
            "QuotaReserved",
            "False",
            "Pending",
            EVICTED_MESSAGE,
            NOW,
        ))
        .condition(condition(
            "Requeued",
            "True",
            "Preempted",
            EVICTED_MESSAGE,
            NOW,
        ))
        .build();
    assert_eq!(
        Case::new(&BatchJob, job).workload(requeued).action(),
        JobAction::Nothing
    );
}

// === Reclaimable pods ===

#[test]
fn finished_pods_of_a_running_job_become_reclaimable() {
    let job = JobBuilder::batch()
        .set("/spec/parallelism", json!(3))
        .set("/spec/completions", json!(4))
        .build();
    let admitted = workload_of(&job).admitted().build();
    let running = JobBuilder(started(&job))
        .set("/status/succeeded", json!(2))
        .build();
    let status = status_of(Case::new(&BatchJob, running).workload(admitted).action());
    assert_eq!(
        status.reclaimable_pods,
        vec![crate::api::v1beta2::ReclaimablePod {
            name: "main".to_string(),
            count: 1
        }]
    );
}

// === waitForPodsReady ===

#[test]
fn pods_ready_follows_the_job() {
    let job = JobBuilder::batch().build();
    let admitted = workload_of(&job).admitted().build();
    let running = started(&job);
    let ready = JobBuilder(running.clone())
        .set("/status/ready", json!(2))
        .build();
    let waiting =
        |condition_now: Option<k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition>,
         job: &Value| {
            let mut workload = admitted.clone();
            if let Some(c) = condition_now {
                workload = WorkloadBuilder(workload).condition(c).build();
            }
            Case {
                settings: settings_waiting_for_pods(),
                ..Case::new(&BatchJob, job.clone()).workload(workload)
            }
            .action()
        };
    let pods_ready = |action: JobAction| {
        status_of(action)
            .conditions
            .into_iter()
            .find(|c| c.type_ == "PodsReady")
            .expect("PodsReady")
    };
    let not_ready = "Not all pods are ready or succeeded";
    let all_ready = "All pods reached readiness and the workload is running";
    assert_eq!(
        pods_ready(waiting(None, &running)),
        condition("PodsReady", "False", "WaitForStart", not_ready, NOW)
    );
    assert_eq!(
        pods_ready(waiting(None, &ready)),
        condition("PodsReady", "True", "Started", all_ready, NOW)
    );
    let was_ready = condition(
        "PodsReady",
        "True",
        "Started",
        all_ready,
        "2025-06-01T11:10:00Z",
    );
    assert_eq!(
        pods_ready(waiting(Some(was_ready.clone()), &running)),
        condition(
            "PodsReady",
            "False",
            "WaitForRecovery",
            "At least one pod has failed, waiting for recovery",
            NOW
        )
    );
    assert_eq!(waiting(Some(was_ready), &ready), JobAction::Nothing);
    let recovering = condition(
        "PodsReady",
        "False",
        "WaitForRecovery",
        "",
        "2025-06-01T11:50:00Z",
    );
    assert_eq!(
        pods_ready(waiting(Some(recovering), &ready)),
        condition("PodsReady", "True", "Recovered", all_ready, NOW)
    );
}

/// The job's Workload, admitted at `admitted_at` and waiting for its pods since.
fn waiting_for_pods(job: &Value, admitted_at: &str) -> Workload {
    workload_of(job)
        .admitted()
        .condition(condition(
            "Admitted",
            "True",
            "Admitted",
            "The workload is admitted",
            admitted_at,
        ))
        .condition(condition(
            "PodsReady",
            "False",
            "WaitForStart",
            "Not all pods are ready or succeeded",
            admitted_at,
        ))
        .build()
}

#[test]
fn pods_not_ready_in_time_evict_the_workload_with_backoff() {
    let job = JobBuilder::batch().build();
    let waiting_since = |admitted_at: &str| waiting_for_pods(&job, admitted_at);
    let decide = |workload: Workload| {
        Case {
            settings: settings_waiting_for_pods(),
            ..Case::new(&BatchJob, started(&job)).workload(workload)
        }
        .action()
    };
    // Admitted 20 minutes ago with the default 30 minute timeout.
    assert_eq!(
        decide(waiting_since("2025-06-01T11:40:00Z")),
        JobAction::RequeueAfter(Duration::from_secs(600))
    );
    let JobAction::PatchWorkloadStatus {
        status,
        workload_event,
        ..
    } = decide(waiting_since("2025-06-01T11:20:00Z"))
    else {
        panic!("expected an eviction");
    };
    let message = "Exceeded the PodsReady timeout ns/job-sample-4742f";
    assert!(status.conditions.contains(&condition(
        "Evicted",
        "True",
        "PodsReadyTimeout",
        message,
        NOW
    )));
    assert_eq!(
        status.requeue_state,
        Some(RequeueState {
            count: Some(1),
            requeue_at: Some(at("2025-06-01T12:01:00Z")),
        })
    );
    let evictions = status.scheduling_stats.expect("stats").evictions;
    assert_eq!(
        (
            evictions[0].reason.as_str(),
            evictions[0].underlying_cause.as_str(),
            evictions[0].count
        ),
        ("PodsReadyTimeout", "WaitForStart", 1)
    );
    assert_eq!(
        workload_event,
        event("EvictedDueToPodsReadyTimeout", message)
    );
}

#[test]
fn the_requeue_backoff_ends_with_backoff_finished() {
    let job = JobBuilder::batch().build();
    let backing_off = |requeue_at: &str| {
        let mut workload = workload_of(&job)
            .condition(condition(
                "Evicted",
                "True",
                "PodsReadyTimeout",
                "timeout",
                NOW,
            ))
            .condition(condition(
                "Requeued",
                "False",
                "PodsReadyTimeout",
                "timeout",
                NOW,
            ))
            .build();
        workload.status.get_or_insert_default().requeue_state = Some(RequeueState {
            count: Some(1),
            requeue_at: Some(at(requeue_at)),
        });
        Case::new(&BatchJob, job.clone())
            .workload(workload)
            .action()
    };
    assert_eq!(
        backing_off("2025-06-01T12:00:45Z"),
        JobAction::RequeueAfter(Duration::from_secs(45))
    );
    let status = status_of(backing_off("2025-06-01T11:59:00Z"));
    assert_eq!(
        status.requeue_state,
        Some(RequeueState {
            count: Some(1),
            requeue_at: None
        })
    );
    assert!(status.conditions.contains(&condition(
        "Requeued",
        "True",
        "BackoffFinished",
        "The workload backoff was finished",
        NOW
    )));
}

#[test]
fn the_requeuing_limit_marks_the_workload_for_deactivation_and_its_eviction_requeues_nothing() {
    let job = JobBuilder::batch().build();
    let limit = "exceeding the maximum number of re-queuing retries";
    let mut settings = settings_waiting_for_pods();
    if let Some(wait) = settings.wait_for_pods_ready.as_mut() {
        wait.requeuing_strategy.backoff_limit_count = Some(2);
    }
    let decide = |workload: Workload, job: Value| {
        Case {
            settings: settings.clone(),
            ..Case::new(&BatchJob, job).workload(workload)
        }
        .action()
    };
    let mut timed_out = waiting_for_pods(&job, "2025-06-01T11:00:00Z");
    timed_out.status.get_or_insert_default().requeue_state = Some(RequeueState {
        count: Some(2),
        requeue_at: None,
    });
    // The third timeout is past the limit of two requeues: marked, not evicted.
    let marked = status_of(decide(timed_out.clone(), started(&job)));
    let target = condition(
        "DeactivationTarget",
        "True",
        "RequeuingLimitExceeded",
        limit,
        NOW,
    );
    assert!(marked.conditions.contains(&target));
    assert!(!marked.conditions.iter().any(|c| c.type_ == "Evicted"));

    // Marked, the Workload is made inactive and evicted by the admitter's pass; then stopped,
    // its quota is released and it is not requeued.
    let mut targeted = timed_out.clone();
    targeted.status = Some(marked);
    let message = format!("The workload is deactivated due to {limit}");
    let mut evicted = targeted;
    evicted.spec.active = Some(false);
    let conditions = &mut evicted.status.get_or_insert_default().conditions;
    conditions.retain(|c| c.type_ != "DeactivationTarget");
    set_condition(
        conditions,
        condition(
            "Evicted",
            "True",
            "DeactivatedDueToRequeuingLimitExceeded",
            &message,
            NOW,
        ),
    );
    let released = status_of(decide(evicted, job.clone()));
    assert!(released.conditions.contains(&condition(
        "Requeued",
        "False",
        "DeactivatedDueToRequeuingLimitExceeded",
        &message,
        NOW
    )));
    assert!(released.conditions.contains(&condition(
        "QuotaReserved",
        "False",
        "Pending",
        &message,
        NOW
    )));
    assert_eq!(released.admission, None);
}

#[test]
fn after_deactivated_by_kueue_the_job_of_a_workload_kuota_deactivated_is_deleted() {
    let job = JobBuilder::batch().build();
    let decide = |reason: &str, evicted_at: &str, retention: Option<u64>| {
        let mut workload = workload_of(&job)
            .condition(condition(
                "Evicted",
                "True",
                reason,
                "deactivated",
                evicted_at,
            ))
            .build();
        workload.spec.active = Some(false);
        Case {
            settings: JobSettings {
                after_deactivated_by_kueue: retention.map(Duration::from_secs),
                ..settings()
            },
            ..Case::new(&BatchJob, job.clone()).workload(workload)
        }
        .action()
    };
    let by_kuota = "DeactivatedDueToRequeuingLimitExceeded";
    assert_eq!(
        decide(by_kuota, "2025-06-01T11:59:30Z", Some(60)),
        JobAction::RequeueAfter(Duration::from_secs(30))
    );
    assert_eq!(
        decide(by_kuota, "2025-06-01T11:59:00Z", Some(60)),
        JobAction::DeleteJob {
            event: Event {
                type_: EventType::Normal,
                reason: "Deleted".to_owned(),
                note: "Deleted job: deactivation retention period expired".to_owned(),
            }
        }
    );
    // A user's deactivation, or no retention, keeps the job.
    assert_eq!(
        decide("Deactivated", "2025-06-01T11:00:00Z", Some(60)),
        JobAction::Nothing
    );
    assert_eq!(
        decide(by_kuota, "2025-06-01T11:00:00Z", None),
        JobAction::Nothing
    );
}

#[test]
fn requeue_backoff_doubles_up_to_the_cap() {
    let cases = [(1, 60), (2, 120), (3, 240), (7, 3600), (40, 3600), (0, 60)];
    for (count, seconds) in cases {
        assert_eq!(
            status::requeue_backoff(count, 60, 3600),
            Duration::from_secs(seconds),
            "count {count}"
        );
    }
}

// === Status helpers and patches ===

#[test]
fn set_condition_moves_the_transition_time_only_with_the_status() {
    let mut status = WorkloadStatus {
        conditions: vec![condition(
            "PodsReady",
            "False",
            "WaitForStart",
            "a",
            "2025-06-01T10:00:00Z",
        )],
        ..WorkloadStatus::default()
    };
    let unchanged_status = condition("PodsReady", "False", "WaitForRecovery", "b", NOW);
    assert!(set_condition(&mut status.conditions, unchanged_status));
    assert_eq!(
        status.conditions,
        vec![condition(
            "PodsReady",
            "False",
            "WaitForRecovery",
            "b",
            "2025-06-01T10:00:00Z"
        )]
    );
    assert!(!set_condition(
        &mut status.conditions,
        condition("PodsReady", "False", "WaitForRecovery", "b", NOW)
    ));
    assert!(set_condition(
        &mut status.conditions,
        condition("PodsReady", "True", "Started", "c", NOW)
    ));
    assert_eq!(status.conditions[0].last_transition_time, Time(now()));
}

#[test]
fn job_patches_are_guarded_by_the_resource_version() {
    let job = JobBuilder::batch().build();
    let started = JobBuilder(job.clone()).suspend(false).build();
    assert_eq!(
        serde_json::to_value(guarded_patch(&job, &started)).expect("json"),
        json!([
            {"op": "test", "path": "/metadata/resourceVersion", "value": "7"},
            {"op": "replace", "path": "/spec/suspend", "value": false},
        ])
    );
}

#[test]
fn the_job_uid_matches_the_owner_reference() {
    let job = JobBuilder::batch().build();
    let workload = workload_of(&job).build();
    assert!(is_controlled_by(&workload, UID));
    assert!(!is_controlled_by(&workload, "other"));
}

fn running(
    framework: &'static dyn JobFramework,
) -> (
    RunningFramework,
    mpsc::UnboundedReceiver<ObjectRef<DynamicObject>>,
) {
    let api_resource = framework.kind().api_resource();
    let (wake, woken) = mpsc::unbounded();
    let jobs = reflector::store::Writer::new(api_resource.clone()).as_reader();
    let framework = RunningFramework {
        jobs,
        api_resource,
        wake,
    };
    (framework, woken)
}

fn owner(api_version: &str, kind: &str, name: &str) -> OwnerReference {
    OwnerReference {
        api_version: api_version.to_owned(),
        kind: kind.to_owned(),
        name: name.to_owned(),
        uid: format!("{name}-uid"),
        controller: Some(true),
        ..OwnerReference::default()
    }
}

fn woken(receiver: &mut mpsc::UnboundedReceiver<ObjectRef<DynamicObject>>) -> Vec<String> {
    std::iter::from_fn(|| receiver.try_recv().ok())
        .map(|job| format!("{}/{}", job.namespace.unwrap_or_default(), job.name))
        .collect()
}

#[test]
fn a_workload_change_wakes_only_the_controller_of_its_owners_kind() {
    let (batch, mut batch_woken) = running(&BatchJob);
    let (pytorch, mut pytorch_woken) = running(&PYTORCH_JOB);
    let running = BTreeMap::from([(BatchJob.name(), batch), (PYTORCH_JOB.name(), pytorch)]);
    let mut workload = Workload::new("job-sample-3f0e1", Default::default());
    workload.metadata.namespace = Some("team-a".to_owned());
    workload.metadata.owner_references = Some(vec![
        owner("batch/v1", "Job", "sample"),
        // Same kind, another version: not what the Job controller watches.
        owner("batch/v2", "Job", "other-version"),
        owner("example.com/v1", "Widget", "foreign"),
    ]);

    wake_owners(&running, &workload);

    assert_eq!(woken(&mut batch_woken), ["team-a/sample"]);
    assert_eq!(woken(&mut pytorch_woken), Vec::<String>::new());
}
