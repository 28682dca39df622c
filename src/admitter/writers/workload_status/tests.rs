use std::collections::BTreeMap;

use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use super::*;
use crate::admitter::writers::status_apply::status_apply;
use crate::testing::objects::{condition as api_condition, rfc3339, ts, workload};

fn admission(cluster_queue: &str) -> model::Admission {
    model::Admission {
        cluster_queue: cluster_queue.to_owned(),
        pod_set_assignments: vec![model::PodSetAssignment {
            name: "main".to_owned(),
            flavors: BTreeMap::from([
                ("cpu".to_owned(), "default".to_owned()),
                ("memory".to_owned(), "default".to_owned()),
            ]),
            resource_usage: BTreeMap::from([
                ("cpu".to_owned(), 2500),
                ("memory".to_owned(), 2 << 30),
            ]),
            count: 2,
            topology: None,
        }],
    }
}

/// `admission("cq")` as the API has it, quantities as Kueue formats them.
fn admission_json() -> Value {
    json!({
        "clusterQueue": "cq",
        "podSetAssignments": [{
            "name": "main",
            "flavors": {"cpu": "default", "memory": "default"},
            "resourceUsage": {"cpu": "2500m", "memory": "2Gi"},
            "count": 2,
        }],
    })
}

/// The `status` of the apply that writes `update` (`status_apply` has the rest of the body).
fn applied(update: &Update, object: &api::Workload, now: i64) -> Value {
    let status = update
        .status(object, ts(now))
        .expect("applies")
        .expect("changes the status");
    status_apply(object, &status)["status"].take()
}

/// The admission `admitted_workload` holds, as the API has it.
fn victim_admission() -> Value {
    json!({
        "clusterQueue": "cq",
        "podSetAssignments": [{"name": "main", "flavors": {"cpu": "default"}, "resourceUsage": {"cpu": "1"}, "count": 1}],
    })
}

const PREEMPTION_MESSAGE: &str = "Preempted to accommodate a workload (UID: uid-b, JobUID: UNKNOWN) due to prioritization in the ClusterQueue; preemptor path: /cq; preemptee path: /cq";

#[test]
fn admitting_writes_the_admission_and_resets_eviction_conditions() {
    let object = workload("ns", "wl")
        .queue("lq")
        .pod_set("main", 2, json!({"cpu": "1250m", "memory": "1Gi"}))
        .condition("QuotaReserved", "False", "Pending", "waiting", 200)
        .condition("Evicted", "True", "Preempted", PREEMPTION_MESSAGE, 150)
        .condition(
            "Preempted",
            "True",
            "InClusterQueue",
            PREEMPTION_MESSAGE,
            150,
        )
        .condition("Requeued", "True", "Preempted", PREEMPTION_MESSAGE, 160)
        .status(
            "resourceRequests",
            json!([{"name": "main", "resources": {"cpu": "2500m"}}]),
        )
        .build();
    let update = Update::Admit {
        admission: admission("cq"),
        generation: Some(1),
        checks: Vec::new(),
    };
    let previously = format!("Previously: {PREEMPTION_MESSAGE}");
    assert_eq!(
        applied(&update, &object, 300),
        json!({
            "admission": admission_json(),
            "conditions": [
                {"type": "QuotaReserved", "status": "True", "reason": "QuotaReserved", "message": "Quota reserved in ClusterQueue cq", "observedGeneration": 1, "lastTransitionTime": rfc3339(300)},
                {"type": "Evicted", "status": "False", "reason": "QuotaReserved", "message": previously, "observedGeneration": 1, "lastTransitionTime": rfc3339(300)},
                {"type": "Preempted", "status": "False", "reason": "QuotaReserved", "message": previously, "observedGeneration": 1, "lastTransitionTime": rfc3339(300)},
                api_condition("Requeued", "True", "Preempted", PREEMPTION_MESSAGE, 160),
                {"type": "Admitted", "status": "True", "reason": "Admitted", "message": "The workload is admitted", "observedGeneration": 1, "lastTransitionTime": rfc3339(300)},
            ],
        })
    );
}

#[test]
fn admission_is_refused_when_the_workload_moved_on() {
    let update = Update::Admit {
        admission: admission("cq"),
        generation: Some(1),
        checks: Vec::new(),
    };
    let admitted = admitted_workload().build();
    let finished = workload("ns", "wl")
        .condition("Finished", "True", "Succeeded", "done", 200)
        .build();
    let mut changed = workload("ns", "wl").build();
    changed.metadata.generation = Some(2);
    let deactivated = workload("ns", "wl").inactive().build();
    let cases = [
        (admitted, Skip::AlreadyAdmitted),
        (finished, Skip::Finished),
        (changed, Skip::SpecChanged),
        (deactivated, Skip::Deactivated),
    ];
    for (object, want) in cases {
        assert_eq!(update.status(&object, ts(300)), Err(want.clone()), "{want}");
    }
}

#[test]
fn pending_sets_quota_reserved_false_once() {
    let object = workload("ns", "wl").queue("lq").build();
    let update = Update::Pending {
        reason: PendingReason::WaitingForQuota,
        message: "couldn't assign flavors to pod set main: insufficient unused quota for cpu in flavor default, 1 more needed".to_owned(),
        resource_requests: ResourceRequests::Of(Arc::from([model::PodSet {
            name: "main".to_owned(),
            count: 4,
            requests: BTreeMap::from([("cpu".to_owned(), 500), ("memory".to_owned(), 1 << 30)]),
            ..model::PodSet::default()
        }])),
    };
    assert_eq!(
        applied(&update, &object, 300),
        json!({
            "conditions": [{
                "type": "QuotaReserved", "status": "False", "reason": "WaitingForQuota",
                "message": "couldn't assign flavors to pod set main: insufficient unused quota for cpu in flavor default, 1 more needed",
                "observedGeneration": 1, "lastTransitionTime": rfc3339(300),
            }],
            "resourceRequests": [{"name": "main", "resources": {"cpu": "2", "memory": "4Gi"}}],
        })
    );

    let mut written = object.clone();
    written.status = update.status(&object, ts(300)).unwrap();
    assert_eq!(
        update.status(&written, ts(400)),
        Ok(None),
        "already written"
    );

    let other_message = Update::Pending {
        reason: PendingReason::WaitingForQuota,
        message: "later".to_owned(),
        resource_requests: ResourceRequests::Of(Arc::default()),
    };
    let status = other_message.status(&written, ts(400)).unwrap().unwrap();
    assert_eq!(
        status.conditions[0].last_transition_time,
        Time(ts(300)),
        "the status did not change, so neither does the transition time"
    );
    assert_eq!(status.conditions[0].message, "later");
}

#[test]
fn pending_with_unchanged_requests_keeps_those_the_workload_shows() {
    let mut object = workload("ns", "wl").queue("lq").build();
    let shown = vec![api::PodSetRequest {
        name: "main".to_owned(),
        resources: BTreeMap::from([(
            "cpu".to_owned(),
            k8s_openapi::apimachinery::pkg::api::resource::Quantity("3".to_owned()),
        )]),
    }];
    object.status.get_or_insert_default().resource_requests = shown.clone();
    let update = Update::Pending {
        reason: PendingReason::Misconfigured,
        message: "LocalQueue lq doesn't exist".to_owned(),
        resource_requests: ResourceRequests::Unchanged,
    };
    let status = update.status(&object, ts(300)).unwrap().unwrap();
    assert_eq!(status.resource_requests, shown);
    assert_eq!(status.conditions[0].reason, "Misconfigured");
}

#[test]
fn pending_clears_a_stale_admitted_condition_and_skips_holders() {
    let object = workload("ns", "wl")
        .condition(
            "Admitted",
            "True",
            "Admitted",
            "The workload is admitted",
            100,
        )
        .build();
    let update = Update::Pending {
        reason: PendingReason::Misconfigured,
        message: "LocalQueue lq doesn't exist".to_owned(),
        resource_requests: ResourceRequests::Of(Arc::default()),
    };
    assert_eq!(
        applied(&update, &object, 300)["conditions"],
        json!([
            {"type": "Admitted", "status": "False", "reason": "NoReservation", "message": "The workload has no reservation", "observedGeneration": 1, "lastTransitionTime": rfc3339(300)},
            {"type": "QuotaReserved", "status": "False", "reason": "Misconfigured", "message": "LocalQueue lq doesn't exist", "observedGeneration": 1, "lastTransitionTime": rfc3339(300)},
        ])
    );
    let holder = admitted_workload().build();
    assert_eq!(update.status(&holder, ts(300)), Err(Skip::AlreadyAdmitted));
}

/// A workload with the admission [`victim_admission`] shows, and no conditions.
fn with_victim_admission() -> crate::testing::objects::WorkloadBuilder {
    workload("ns", "victim")
        .queue("lq")
        .priority(1)
        .pod_set("main", 1, json!({"cpu": "1"}))
        .status("admission", victim_admission())
}

fn reserved_workload() -> crate::testing::objects::WorkloadBuilder {
    with_victim_admission().condition(
        "QuotaReserved",
        "True",
        "QuotaReserved",
        "Quota reserved in ClusterQueue cq",
        100,
    )
}

fn admitted_workload() -> crate::testing::objects::WorkloadBuilder {
    reserved_workload().condition(
        "Admitted",
        "True",
        "Admitted",
        "The workload is admitted",
        100,
    )
}

#[test]
fn preemption_evicts_with_both_conditions_and_counts_the_eviction() {
    let object = admitted_workload()
        .status(
            "schedulingStats",
            json!({"evictions": [{"reason": "Preempted", "underlyingCause": "", "count": 1}]}),
        )
        .status(
            "admissionChecks",
            json!([{"name": "check", "state": "Retry", "lastTransitionTime": rfc3339(90), "message": "", "retryCount": 1}]),
        )
        .status("clusterName", json!("worker-1"))
        .build();
    let update = Update::Evict {
        reason: "Preempted".to_owned(),
        message: PREEMPTION_MESSAGE.to_owned(),
        preemption: Some(Preemption {
            reason: PreemptionReason::InClusterQueue,
            preemptor: Preemptor {
                key: "ns/b".to_owned(),
                uid: "uid-b".to_owned(),
                priority: api::WorkloadPriority { base: 10, boost: 0 },
                cluster_queue: "cq".to_owned(),
            },
            victim_priority: api::WorkloadPriority { base: 1, boost: 0 },
        }),
    };
    assert_eq!(
        applied(&update, &object, 300),
        json!({
            "admission": victim_admission(),
            "conditions": [
                api_condition("QuotaReserved", "True", "QuotaReserved", "Quota reserved in ClusterQueue cq", 100),
                api_condition("Admitted", "True", "Admitted", "The workload is admitted", 100),
                {"type": "Evicted", "status": "True", "reason": "Preempted", "message": PREEMPTION_MESSAGE, "observedGeneration": 1, "lastTransitionTime": rfc3339(300)},
                {"type": "Preempted", "status": "True", "reason": "InClusterQueue", "message": PREEMPTION_MESSAGE, "lastTransitionTime": rfc3339(300)},
            ],
            "schedulingStats": {"evictions": [{"reason": "Preempted", "underlyingCause": "", "count": 2}]},
            "admissionChecks": [{"name": "check", "state": "Pending", "lastTransitionTime": rfc3339(300), "message": "Reset to Pending after eviction. Previously: Retry", "retryCount": 2}],
        })
    );
}

#[test]
fn eviction_applies_once_and_only_to_holders() {
    let update = Update::Evict {
        reason: "ClusterQueueStopped".to_owned(),
        message: "The ClusterQueue is stopped".to_owned(),
        preemption: None,
    };
    let fresh = admitted_workload().build();
    assert_eq!(
        applied(&update, &fresh, 300),
        json!({
            "admission": victim_admission(),
            "conditions": [
                api_condition("QuotaReserved", "True", "QuotaReserved", "Quota reserved in ClusterQueue cq", 100),
                api_condition("Admitted", "True", "Admitted", "The workload is admitted", 100),
                {"type": "Evicted", "status": "True", "reason": "ClusterQueueStopped", "message": "The ClusterQueue is stopped", "observedGeneration": 1, "lastTransitionTime": rfc3339(300)},
            ],
            "schedulingStats": {"evictions": [{"reason": "ClusterQueueStopped", "underlyingCause": "", "count": 1}]},
        })
    );
    let evicted = admitted_workload()
        .condition("Evicted", "True", "Preempted", "earlier", 200)
        .build();
    assert_eq!(update.status(&evicted, ts(300)), Err(Skip::AlreadyEvicted));
    let released = workload("ns", "victim").build();
    assert_eq!(update.status(&released, ts(300)), Err(Skip::NoReservation));
}

#[test]
fn admission_converts_to_kueue_quantities() {
    assert_eq!(
        serde_json::to_value(api_admission(&admission("cq"))).unwrap(),
        admission_json()
    );
}

#[test]
fn wait_time_counts_from_creation_or_the_last_requeue() {
    let created = workload("ns", "wl").created(100).build();
    assert_eq!(queued_wait_seconds(&created, ts(130)), 30.0);
    let requeued = workload("ns", "wl")
        .created(100)
        .condition("Requeued", "True", "Preempted", "", 120)
        .build();
    assert_eq!(queued_wait_seconds(&requeued, ts(130)), 10.0);
}

#[test]
fn preemption_events_give_each_priority_with_its_parts() {
    let priority = |base, boost| api::WorkloadPriority { base, boost };
    assert_eq!(
        priorities(priority(10, 0), priority(1, 0)),
        "preemptor effective priority: 10 (base: 10, boost: 0); preemptee effective priority: 1 (base: 1, boost: 0)"
    );
    assert_eq!(
        priorities(priority(i32::MAX, 5), priority(100, -150)),
        "preemptor effective priority: 2147483652 (base: 2147483647, boost: 5); preemptee effective priority: -50 (base: 100, boost: -150)"
    );
}

/// What an eviction finished by a Kueue-compatible tool that could not remove `admission`
/// leaves: `QuotaReserved=False` beside a stale admission.
fn released_with_stale_admission() -> api::Workload {
    with_victim_admission()
        .condition(
            "QuotaReserved",
            "False",
            "Pending",
            "Evicted by the test runner",
            200,
        )
        .condition("Evicted", "True", "Preempted", "preempted", 150)
        .build()
}

#[test]
fn a_stale_admission_holds_no_quota() {
    let stale = released_with_stale_admission();
    assert_eq!(stale.reservation(), None);

    let admit = Update::Admit {
        admission: admission("other-cq"),
        generation: Some(1),
        checks: Vec::new(),
    };
    let status = applied(&admit, &stale, 300);
    assert_eq!(status["admission"]["clusterQueue"], json!("other-cq"));
    assert_eq!(
        status["conditions"][0],
        json!({"type": "QuotaReserved", "status": "True", "reason": "QuotaReserved", "message": "Quota reserved in ClusterQueue other-cq", "observedGeneration": 1, "lastTransitionTime": rfc3339(300)})
    );

    let pending = Update::Pending {
        reason: PendingReason::WaitingForQuota,
        message: "waiting".to_owned(),
        resource_requests: ResourceRequests::Of(Arc::default()),
    };
    assert_eq!(applied(&pending, &stale, 300).get("admission"), None);

    let evict = Update::Evict {
        reason: "Preempted".to_owned(),
        message: "again".to_owned(),
        preemption: None,
    };
    assert_eq!(evict.status(&stale, ts(300)), Err(Skip::NoReservation));
}

const REQUEUING_LIMIT: &str = "exceeding the maximum number of re-queuing retries";

#[test]
fn deactivation_evicts_with_the_target_s_cause_and_clears_the_target_and_requeue_state() {
    let object = admitted_workload()
        .inactive()
        .condition(
            "DeactivationTarget",
            "True",
            "RequeuingLimitExceeded",
            REQUEUING_LIMIT,
            200,
        )
        .status("requeueState", json!({"count": 3}))
        .build();
    let message = format!("The workload is deactivated due to {REQUEUING_LIMIT}");
    assert_eq!(
        applied(&Update::Deactivate, &object, 300),
        json!({
            "admission": victim_admission(),
            "conditions": [
                api_condition("QuotaReserved", "True", "QuotaReserved", "Quota reserved in ClusterQueue cq", 100),
                api_condition("Admitted", "True", "Admitted", "The workload is admitted", 100),
                {"type": "Evicted", "status": "True", "reason": "DeactivatedDueToRequeuingLimitExceeded", "message": message, "observedGeneration": 1, "lastTransitionTime": rfc3339(300)},
            ],
            "schedulingStats": {"evictions": [{"reason": "Deactivated", "underlyingCause": "RequeuingLimitExceeded", "count": 1}]},
        })
    );
}

#[test]
fn deactivation_by_a_user_evicts_pending_and_admitted_workloads_once() {
    let evicted = json!({"type": "Evicted", "status": "True", "reason": "Deactivated", "message": "The workload is deactivated", "observedGeneration": 1, "lastTransitionTime": rfc3339(300)});
    let stats =
        json!({"evictions": [{"reason": "Deactivated", "underlyingCause": "", "count": 1}]});
    let pending = workload("ns", "wl")
        .queue("lq")
        .inactive()
        .condition("QuotaReserved", "False", "Pending", "waiting", 100)
        .build();
    assert_eq!(
        applied(&Update::Deactivate, &pending, 300),
        json!({
            "conditions": [api_condition("QuotaReserved", "False", "Pending", "waiting", 100), evicted],
            "schedulingStats": stats,
        })
    );
    let deactivated = workload("ns", "wl")
        .queue("lq")
        .inactive()
        .condition(
            "Evicted",
            "True",
            "Deactivated",
            "The workload is deactivated",
            300,
        )
        .build();
    assert_eq!(Update::Deactivate.status(&deactivated, ts(400)), Ok(None));
    let active = admitted_workload().build();
    assert_eq!(
        Update::Deactivate.status(&active, ts(300)),
        Err(Skip::Active)
    );
}

#[test]
fn reactivation_requeues_a_workload_requeued_false_by_its_deactivation() {
    let object = workload("ns", "wl")
        .queue("lq")
        .condition(
            "Evicted",
            "True",
            "Deactivated",
            "The workload is deactivated",
            200,
        )
        .condition(
            "Requeued",
            "False",
            "Deactivated",
            "The workload is deactivated",
            210,
        )
        .build();
    assert_eq!(
        applied(&Update::Requeue(Requeue::Reactivated), &object, 300),
        json!({
            "conditions": [
                api_condition("Evicted", "True", "Deactivated", "The workload is deactivated", 200),
                {"type": "Requeued", "status": "True", "reason": "Reactivated", "message": "The workload was reactivated", "observedGeneration": 1, "lastTransitionTime": rfc3339(300)},
            ],
        })
    );
    let preempted = workload("ns", "wl")
        .queue("lq")
        .condition("Requeued", "False", "PodsReadyTimeout", "Exceeded", 210)
        .build();
    assert_eq!(
        Update::Requeue(Requeue::Reactivated).status(&preempted, ts(300)),
        Ok(None)
    );
    let still_inactive = workload("ns", "wl").queue("lq").inactive().build();
    assert_eq!(
        Update::Requeue(Requeue::Reactivated).status(&still_inactive, ts(300)),
        Err(Skip::Deactivated)
    );
}

fn check(name: &str, state: &str, message: &str) -> Value {
    json!({"name": name, "state": state, "lastTransitionTime": rfc3339(90), "message": message})
}

#[test]
fn admission_with_admission_checks_reserves_quota_and_waits_for_them() {
    let object = workload("ns", "wl")
        .queue("lq")
        .pod_set("main", 2, json!({"cpu": "1250m", "memory": "1Gi"}))
        .status(
            "admissionChecks",
            json!([check("old", "Ready", ""), check("kept", "Pending", "asked")]),
        )
        .build();
    let update = Update::Admit {
        admission: admission("cq"),
        generation: Some(1),
        checks: vec!["kept".to_owned(), "a-new".to_owned()],
    };
    assert_eq!(
        applied(&update, &object, 300),
        json!({
            "admission": admission_json(),
            "conditions": [
                {"type": "QuotaReserved", "status": "True", "reason": "QuotaReserved", "message": "Quota reserved in ClusterQueue cq", "observedGeneration": 1, "lastTransitionTime": rfc3339(300)},
                {"type": "Admitted", "status": "False", "reason": "UnsatisfiedAdmissionChecks", "message": "The workload has not all checks ready", "observedGeneration": 1, "lastTransitionTime": rfc3339(300)},
            ],
            "admissionChecks": [
                {"name": "a-new", "state": "Pending", "lastTransitionTime": rfc3339(300), "message": ""},
                check("kept", "Pending", "asked"),
            ],
        })
    );
}

#[test]
fn ready_checks_admit_and_rejected_ones_mark_the_workload_for_deactivation() {
    let reserved = |checks: Value| {
        reserved_workload()
            .condition(
                "Admitted",
                "False",
                "UnsatisfiedAdmissionChecks",
                "The workload has not all checks ready",
                100,
            )
            .status("admissionChecks", checks)
            .build()
    };
    let ready = reserved(json!([
        check("a", "Ready", ""),
        check("b", "Ready", "provisioned")
    ]));
    assert_eq!(
        applied(&Update::ChecksReady, &ready, 300)["conditions"][1],
        json!({"type": "Admitted", "status": "True", "reason": "Admitted", "message": "The workload is admitted", "observedGeneration": 1, "lastTransitionTime": rfc3339(300)})
    );
    let waiting = reserved(json!([check("a", "Ready", ""), check("b", "Pending", "")]));
    assert_eq!(Update::ChecksReady.status(&waiting, ts(300)), Ok(None));

    let message = r#"AdmissionCheck in Rejected state: "b" (no capacity)"#;
    let rejected = Update::ChecksRejected {
        message: message.to_owned(),
    };
    assert_eq!(
        applied(&rejected, &waiting, 300)["conditions"][2],
        json!({"type": "DeactivationTarget", "status": "True", "reason": "AdmissionCheck", "message": message, "observedGeneration": 1, "lastTransitionTime": rfc3339(300)})
    );
    let released = workload("ns", "victim").build();
    assert_eq!(
        rejected.status(&released, ts(300)),
        Err(Skip::NoReservation)
    );
}

#[test]
fn a_restarted_queue_requeues_what_its_stop_held_back() {
    let object = workload("ns", "wl")
        .queue("lq")
        .condition(
            "Requeued",
            "False",
            "ClusterQueueStopped",
            "The ClusterQueue is stopped",
            210,
        )
        .build();
    let restarted = Update::Requeue(Requeue::ClusterQueueRestarted);
    assert_eq!(
        applied(&restarted, &object, 300)["conditions"],
        json!([{"type": "Requeued", "status": "True", "reason": "ClusterQueueRestarted", "message": "The ClusterQueue was restarted after being stopped", "observedGeneration": 1, "lastTransitionTime": rfc3339(300)}])
    );
    assert_eq!(
        Update::Requeue(Requeue::LocalQueueRestarted).status(&object, ts(300)),
        Ok(None)
    );
}

#[test]
fn a_retrying_check_evicts_and_holds_the_workload_back_until_it_asked() {
    let object = reserved_workload()
        .status("admissionChecks", json!([check("a", "Retry", "later")]))
        .build();
    let update = Update::RetryChecks {
        message: r#"Evicted due to AdmissionCheck in Retry state: "a" (later)"#.to_owned(),
        requeue_at: Some(ts(400)),
    };
    let status = applied(&update, &object, 300);
    assert_eq!(
        status["conditions"][1],
        json!({"type": "Evicted", "status": "True", "reason": "AdmissionCheck", "message": r#"Evicted due to AdmissionCheck in Retry state: "a" (later)"#, "observedGeneration": 1, "lastTransitionTime": rfc3339(300)})
    );
    assert_eq!(
        status["admissionChecks"],
        json!([{"name": "a", "state": "Pending", "lastTransitionTime": rfc3339(300), "message": "Reset to Pending after eviction. Previously: Retry", "retryCount": 1}])
    );
    assert_eq!(status["requeueState"], json!({"requeueAt": rfc3339(400)}));
    assert_eq!(
        status["schedulingStats"],
        json!({"evictions": [{"reason": "AdmissionCheck", "underlyingCause": "", "count": 1}]})
    );
}

#[test]
fn a_workload_past_its_maximum_execution_time_is_marked_for_deactivation() {
    let object = admitted_workload()
        .status("accumulatedPastExecutionTimeSeconds", json!(30))
        .build();
    let exceeded = Update::ExecutionTimeExceeded { seconds: 60 };
    let status = applied(&exceeded, &object, 300);
    assert_eq!(
        status["conditions"][2],
        json!({"type": "DeactivationTarget", "status": "True", "reason": "MaximumExecutionTimeExceeded", "message": "exceeding the maximum execution time", "observedGeneration": 1, "lastTransitionTime": rfc3339(300)})
    );
    assert_eq!(status.get("accumulatedPastExecutionTimeSeconds"), None);
    assert_eq!(
        exceeded.status(&reserved_workload().build(), ts(300)),
        Err(Skip::NotAdmitted)
    );
}

#[test]
fn a_topology_assignment_is_written_in_the_compact_form() {
    let mut placed = admission("cq");
    placed.pod_set_assignments[0].topology = Some(model::TopologyAssignment {
        levels: vec!["kubernetes.io/hostname".to_owned()],
        domains: ["node-1", "node-2"]
            .into_iter()
            .map(|node| model::TopologyDomain {
                values: vec![node.to_owned()],
                count: 1,
            })
            .collect(),
    });
    let written = serde_json::to_value(api_admission(&placed)).unwrap();
    assert_eq!(
        written["podSetAssignments"][0]["topologyAssignment"],
        json!({
            "levels": ["kubernetes.io/hostname"],
            "slices": [{
                "domainCount": 2,
                "valuesPerLevel": [{"individual": {"prefix": "node-", "roots": ["1", "2"]}}],
                "podCounts": {"universal": 1},
            }],
        })
    );
}
