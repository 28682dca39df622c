use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::api::resource::Quantity as ApiQuantity;
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use super::*;
use crate::admitter::writers::workload_status::ResourceRequests;
use crate::config::RequeuingTimestamp;
use crate::quota::model::{
    Admission, FlavorResource, NodeSelectorOperator, NodeSelectorRequirement, NodeSelectorTerm,
    PodSet, PodSetAssignment, Toleration, TolerationOperator,
};
use crate::testing::objects::{
    cluster_queue, flavor, labels, limit_range, local_queue, namespace, stopped_local_queue, ts,
    workload,
};

fn state() -> ClusterState {
    ClusterState {
        resource_flavors: vec![Arc::new(flavor("default"))],
        namespaces: vec![Arc::new(namespace("team-a", json!({"team": "a"})))],
        local_queues: vec![Arc::new(local_queue("team-a", "lq", "cq"))],
        cluster_queues: vec![Arc::new(
            cluster_queue("cq")
                .group(&["cpu"], &[("default", &[("cpu", "4")])])
                .build(),
        )],
        ..ClusterState::default()
    }
}

#[test]
fn pending_workload_becomes_the_model_with_limit_range_defaults() {
    let mut state = state();
    state.limit_ranges = vec![Arc::new(limit_range(
        "team-a",
        json!([{"type": "Container", "defaultRequest": {"memory": "1Gi"}}]),
    ))];
    let object = workload("team-a", "wl")
        .queue("lq")
        .priority(7)
        .label("kueue.x-k8s.io/job-uid", "job-1")
        .status("requeueState", json!({"count": 1, "requeueAt": crate::testing::objects::rfc3339(500)}))
        .pod_set_spec(
            "workers",
            3,
            json!({
                "containers": [{"name": "c", "image": "i", "resources": {"requests": {"cpu": "250m", "example.com/ignored": "1"}}}],
                "nodeSelector": {"instance-type": "spot"},
                "tolerations": [{"key": "spot", "operator": "Equal", "value": "true"}],
                "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
                    {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a", "b"]}]}
                ]}}},
            }),
        )
        .pod_set_field("minCount", json!(2))
        .build();
    state.workloads = vec![Arc::new(object)];
    let options = ConversionOptions {
        excluded_resource_prefixes: vec!["example.com/".to_owned()],
        ..ConversionOptions::default()
    };

    let converted = convert(&state, &options);
    let mut want = model::Workload::new("team-a/wl", "cq", ts(100));
    want.uid = "uid-wl".to_owned();
    want.job_uid = Some("job-1".to_owned());
    want.local_queue = "lq".to_owned();
    want.namespace_labels = Arc::new(labels(&[("team", "a")]));
    want.priority = 7;
    want.requeue_at = Some(ts(500));
    want.pod_sets = vec![PodSet {
        name: "workers".to_owned(),
        count: 3,
        min_count: Some(2),
        requests: BTreeMap::from([("cpu".to_owned(), 250), ("memory".to_owned(), 1 << 30)]),
        node_selector: labels(&[("instance-type", "spot")]),
        node_affinity: vec![NodeSelectorTerm {
            match_expressions: vec![NodeSelectorRequirement {
                key: "zone".to_owned(),
                operator: NodeSelectorOperator::In,
                values: vec!["a".to_owned(), "b".to_owned()],
            }],
        }],
        tolerations: vec![Toleration {
            key: "spot".to_owned(),
            operator: TolerationOperator::Equal,
            value: "true".to_owned(),
            effect: None,
        }],
        topology: None,
    }]
    .into();
    assert_eq!(
        converted.pending,
        vec![PendingWorkload {
            workload: Arc::new(want.clone()),
            local_queue: LocalQueueRef::new("team-a", "lq"),
            unchanged: false,
        }]
    );
    assert_eq!(
        ResourceRequests::of(&want.pod_sets),
        vec![api::PodSetRequest {
            name: "workers".to_owned(),
            resources: BTreeMap::from([
                ("cpu".to_owned(), ApiQuantity("750m".to_owned())),
                ("memory".to_owned(), ApiQuantity("3Gi".to_owned())),
            ]),
        }]
    );
}

#[test]
fn quota_holders_count_their_admission_minus_reclaimable_pods() {
    let mut state = state();
    state.workloads = vec![Arc::new(
        workload("team-a", "running")
            .queue("lq")
            .pod_set("driver", 1, json!({"cpu": "1"}))
            .pod_set("workers", 4, json!({"cpu": "500m"}))
            .admission(
                "cq",
                json!([
                    {"name": "driver", "flavors": {"cpu": "default"}, "resourceUsage": {"cpu": "1"}},
                    {"name": "workers", "flavors": {"cpu": "default"}, "resourceUsage": {"cpu": "2"}, "count": 4},
                ]),
            )
            .condition("QuotaReserved", "True", "QuotaReserved", "Quota reserved in ClusterQueue cq", 150)
            .condition("Admitted", "True", "Admitted", "The workload is admitted", 150)
            .status("reclaimablePods", json!([{"name": "workers", "count": 3}]))
            .build(),
    )];
    let converted = convert(&state, &ConversionOptions::default());
    assert_eq!(converted.pending, vec![]);
    let [holder] = converted.holders.as_slice() else {
        panic!("one holder: {:?}", converted.holders);
    };
    assert!(holder.admitted);
    assert_eq!(holder.local_queue, Some(LocalQueueRef::new("team-a", "lq")));
    assert_eq!(holder.workload.quota_reserved_at, Some(ts(150)));
    assert_eq!(
        holder.workload.admission,
        Some(Admission {
            cluster_queue: "cq".to_owned(),
            pod_set_assignments: vec![
                PodSetAssignment {
                    name: "driver".to_owned(),
                    flavors: labels(&[("cpu", "default")]),
                    resource_usage: BTreeMap::from([("cpu".to_owned(), 1000)]),
                    count: 1,
                    topology: None,
                },
                PodSetAssignment {
                    name: "workers".to_owned(),
                    flavors: labels(&[("cpu", "default")]),
                    resource_usage: BTreeMap::from([("cpu".to_owned(), 500)]),
                    count: 1,
                    topology: None,
                },
            ],
        })
    );
    let snapshot = converted.snapshot(SchedulerConfig::default(), ts(200));
    assert_eq!(
        snapshot.cluster_queue_usage("cq"),
        Some(&BTreeMap::from([(
            FlavorResource::new("default", "cpu"),
            1500
        )]))
    );
}

#[test]
fn workloads_are_sorted_into_holders_pending_and_unqueued() {
    let mut state = state();
    state.local_queues.push(Arc::new(stopped_local_queue(
        "team-a", "held", "cq", "Hold",
    )));
    state.local_queues.push(Arc::new(stopped_local_queue(
        "team-a",
        "drained",
        "cq",
        "HoldAndDrain",
    )));
    let admitted = |name: &str, queue: &str| {
        workload("team-a", name)
            .queue(queue)
            .pod_set("main", 1, json!({"cpu": "1"}))
            .reserved("cq", json!([{"name": "main", "flavors": {"cpu": "default"}, "resourceUsage": {"cpu": "1"}, "count": 1}]))
    };
    state.workloads = [
        workload("team-a", "pending")
            .queue("lq")
            .pod_set("main", 1, json!({"cpu": "1"})),
        workload("team-a", "finished").queue("lq").condition(
            "Finished",
            "True",
            "Succeeded",
            "done",
            120,
        ),
        admitted("finished-admitted", "lq").condition("Finished", "True", "Succeeded", "done", 120),
        workload("team-a", "deactivated").queue("lq").inactive(),
        workload("team-a", "no-queue"),
        workload("team-a", "lost")
            .queue("missing")
            .pod_set("main", 1, json!({"cpu": "1"})),
        workload("team-a", "held")
            .queue("held")
            .pod_set("main", 1, json!({"cpu": "1"})),
        workload("team-a", "garbage")
            .queue("lq")
            .pod_set("main", 1, json!({"cpu": "lots"})),
        admitted("draining", "drained"),
        admitted("drained", "drained").condition(
            "Evicted",
            "True",
            "LocalQueueStopped",
            "The LocalQueue is stopped",
            130,
        ),
        admitted("running", "lq"),
    ]
    .into_iter()
    .map(|builder| Arc::new(builder.build()))
    .collect();

    let converted = convert(&state, &ConversionOptions::default());
    let keys = |workloads: Vec<&model::Workload>| -> Vec<String> {
        workloads.into_iter().map(|w| w.key.clone()).collect()
    };
    assert_eq!(
        keys(
            converted
                .pending
                .iter()
                .map(|p| p.workload.as_ref())
                .collect()
        ),
        vec!["team-a/pending"]
    );
    assert_eq!(
        keys(converted.holders.iter().map(|h| &*h.workload).collect()),
        vec!["team-a/draining", "team-a/drained", "team-a/running"]
    );
    assert_eq!(converted.local_queue_drains, vec!["team-a/draining"]);
    assert_eq!(
        converted.unqueued,
        vec![
            Unqueued {
                workload: "team-a/lost".to_owned(),
                local_queue: LocalQueueRef::new("team-a", "missing"),
                reason: PendingReason::Misconfigured,
                message: "LocalQueue missing doesn't exist".to_owned(),
            },
            Unqueued {
                workload: "team-a/held".to_owned(),
                local_queue: LocalQueueRef::new("team-a", "held"),
                reason: PendingReason::Suspended,
                message: "LocalQueue held is stopped".to_owned(),
            },
            Unqueued {
                workload: "team-a/garbage".to_owned(),
                local_queue: LocalQueueRef::new("team-a", "lq"),
                reason: PendingReason::Misconfigured,
                message: "invalid quantity \"lots\": unknown suffix".to_owned(),
            },
        ]
    );
    assert!(converted.holders[1].workload.evicted);
}

#[test]
fn inactive_workloads_are_deactivated_until_evicted_and_reactivated_ones_requeued() {
    let mut state = state();
    let deactivated = "The workload is deactivated";
    let admitted = |name: &str| {
        workload("team-a", name)
            .queue("lq")
            .pod_set("main", 1, json!({"cpu": "1"}))
            .reserved("cq", json!([{"name": "main", "flavors": {"cpu": "default"}, "resourceUsage": {"cpu": "1"}, "count": 1}]))
    };
    state.workloads = [
        workload("team-a", "stopped-pending").queue("lq").inactive(),
        admitted("stopped-running").inactive(),
        admitted("stopped-evicted").inactive().condition(
            "Evicted",
            "True",
            "Deactivated",
            deactivated,
            120,
        ),
        workload("team-a", "stopped-backing-off")
            .queue("lq")
            .inactive()
            .condition("Evicted", "True", "Deactivated", deactivated, 120)
            .status("requeueState", json!({"count": 1})),
        workload("team-a", "stopped-targeted")
            .queue("lq")
            .inactive()
            .condition("Evicted", "True", "PodsReadyTimeout", "timeout", 120)
            .condition(
                "DeactivationTarget",
                "True",
                "RequeuingLimitExceeded",
                "limit",
                130,
            ),
        workload("team-a", "resumed")
            .queue("lq")
            .condition("Evicted", "True", "Deactivated", deactivated, 120)
            .condition("Requeued", "False", "Deactivated", deactivated, 120),
        workload("team-a", "requeued").queue("lq").condition(
            "Requeued",
            "False",
            "PodsReadyTimeout",
            "timeout",
            120,
        ),
        workload("team-a", "stopped-finished")
            .queue("lq")
            .inactive()
            .condition("Finished", "True", "Succeeded", "done", 120),
        workload("team-a", "targeted").queue("lq").condition(
            "DeactivationTarget",
            "True",
            "RequeuingLimitExceeded",
            "limit",
            130,
        ),
    ]
    .into_iter()
    .map(|builder| Arc::new(builder.build()))
    .collect();

    let converted = convert(&state, &ConversionOptions::default());
    assert_eq!(
        converted.deactivations,
        vec![
            "team-a/stopped-pending",
            "team-a/stopped-running",
            "team-a/stopped-backing-off",
            "team-a/stopped-targeted",
        ]
    );
    assert_eq!(converted.deactivation_targets, vec!["team-a/targeted"]);
    assert_eq!(
        converted.requeues,
        vec![("team-a/resumed".to_owned(), Requeue::Reactivated)]
    );
    // Deactivated workloads hold their quota until their jobs stop; inactive ones never wait.
    let holders: Vec<&str> = converted
        .holders
        .iter()
        .map(|holder| holder.workload.key.as_str())
        .collect();
    assert_eq!(
        holders,
        vec!["team-a/stopped-running", "team-a/stopped-evicted"]
    );
    let pending: Vec<&str> = converted
        .pending
        .iter()
        .map(|pending| pending.workload.key.as_str())
        .collect();
    assert_eq!(
        pending,
        vec!["team-a/resumed", "team-a/requeued", "team-a/targeted"]
    );
}

#[test]
fn workloads_held_back_by_a_stopped_queue_are_requeued_once_it_runs_again() {
    let mut state = state();
    state.local_queues.push(Arc::new(stopped_local_queue(
        "team-a", "held", "cq", "Hold",
    )));
    state
        .local_queues
        .push(Arc::new(local_queue("team-a", "to-stopped", "stopped")));
    state.cluster_queues.push(Arc::new(
        cluster_queue("stopped")
            .spec("stopPolicy", json!("HoldAndDrain"))
            .build(),
    ));
    let held = |name: &str, queue: &str, reason: &str| {
        workload("team-a", name)
            .queue(queue)
            .pod_set("main", 1, json!({"cpu": "1"}))
            .condition("Requeued", "False", reason, "stopped", 120)
    };
    state.workloads = [
        held("lq-restarted", "lq", "LocalQueueStopped"),
        held("lq-still-held", "held", "LocalQueueStopped"),
        held("cq-restarted", "lq", "ClusterQueueStopped"),
        held("cq-still-stopped", "to-stopped", "ClusterQueueStopped"),
        held("preempted", "lq", "Preempted"),
        held("lq-restarted-inactive", "lq", "LocalQueueStopped").inactive(),
    ]
    .into_iter()
    .map(|builder| Arc::new(builder.build()))
    .collect();
    let converted = convert(&state, &ConversionOptions::default());
    assert_eq!(
        converted.requeues,
        vec![
            (
                "team-a/lq-restarted".to_owned(),
                Requeue::LocalQueueRestarted
            ),
            (
                "team-a/cq-restarted".to_owned(),
                Requeue::ClusterQueueRestarted
            ),
        ]
    );
}

#[test]
fn admission_check_states_of_quota_holders_call_for_admission_eviction_or_deactivation() {
    let mut state = state();
    let check = |name: &str, state: &str, message: &str| json!({"name": name, "state": state, "lastTransitionTime": "2025-01-01T00:00:00Z", "message": message});
    let holding = |name: &str, checks: Value| {
        workload("team-a", name)
            .queue("lq")
            .pod_set("main", 1, json!({"cpu": "1"}))
            .reserved("cq", json!([{"name": "main", "flavors": {"cpu": "default"}, "resourceUsage": {"cpu": "1"}, "count": 1}]))
            .status("admissionChecks", checks)
    };
    state.workloads = [
        holding(
            "all-ready",
            json!([check("a", "Ready", ""), check("b", "Ready", "")]),
        ),
        holding(
            "one-pending",
            json!([check("a", "Ready", ""), check("b", "Pending", "")]),
        ),
        holding(
            "retrying",
            json!([check("b", "Retry", "later"), check("a", "Retry", "")]),
        ),
        holding(
            "waiting-to-retry",
            json!([
                {"name": "a", "state": "Retry", "lastTransitionTime": "2025-01-01T00:00:00Z", "message": "", "requeueAfterSeconds": 30},
                {"name": "b", "state": "Retry", "lastTransitionTime": "2025-01-01T00:00:10Z", "message": "", "requeueAfterSeconds": 5},
            ]),
        ),
        holding(
            "already-waiting",
            json!([{"name": "a", "state": "Retry", "lastTransitionTime": "2025-01-01T00:00:00Z", "message": "", "requeueAfterSeconds": 30}]),
        )
        .status("requeueState", json!({"count": 1, "requeueAt": "2025-01-01T00:01:00Z"})),
        holding(
            "rejected",
            json!([check("a", "Retry", ""), check("b", "Rejected", "no")]),
        ),
        holding("rejected-marked", json!([check("b", "Rejected", "no")])).condition(
            "DeactivationTarget",
            "True",
            "AdmissionCheck",
            "marked",
            120,
        ),
        holding("retry-evicted", json!([check("a", "Retry", "")])).condition(
            "Evicted",
            "True",
            "AdmissionCheck",
            "evicted",
            120,
        ),
        holding("unchecked", json!([])),
    ]
    .into_iter()
    .map(|builder| Arc::new(builder.build()))
    .collect();
    let converted = convert(&state, &ConversionOptions::default());
    assert_eq!(
        converted.check_outcomes,
        vec![
            ("team-a/all-ready".to_owned(), CheckOutcome::Ready),
            (
                "team-a/retrying".to_owned(),
                CheckOutcome::Retry {
                    message: r#"Evicted due to AdmissionChecks in Retry state: "a"; "b" (later)"#
                        .to_owned(),
                    requeue_at: None,
                }
            ),
            (
                "team-a/waiting-to-retry".to_owned(),
                CheckOutcome::Retry {
                    message: r#"Evicted due to AdmissionChecks in Retry state: "a"; "b""#
                        .to_owned(),
                    requeue_at: Some(ts(1_735_689_630)),
                }
            ),
            (
                "team-a/already-waiting".to_owned(),
                CheckOutcome::Retry {
                    message: r#"Evicted due to AdmissionCheck in Retry state: "a""#.to_owned(),
                    requeue_at: None,
                }
            ),
            (
                "team-a/rejected".to_owned(),
                CheckOutcome::Rejected(r#"AdmissionCheck in Rejected state: "b" (no)"#.to_owned())
            ),
        ]
    );
}

#[test]
fn admitted_workloads_with_a_maximum_execution_time_run_out_after_what_is_left_of_it() {
    let mut state = state();
    let holding = |name: &str| {
        workload("team-a", name)
            .queue("lq")
            .pod_set("main", 1, json!({"cpu": "1"}))
            .reserved("cq", json!([{"name": "main", "flavors": {"cpu": "default"}, "resourceUsage": {"cpu": "1"}, "count": 1}]))
    };
    let limited = |name: &str| {
        holding(name)
            .spec_field("maximumExecutionTimeSeconds", json!(60))
            .condition("Admitted", "True", "Admitted", "", 1_000)
    };
    state.workloads = [
        limited("fresh"),
        limited("ran-before").status("accumulatedPastExecutionTimeSeconds", json!(45)),
        limited("marked").condition(
            "DeactivationTarget",
            "True",
            "MaximumExecutionTimeExceeded",
            "",
            1_070,
        ),
        holding("unlimited").condition("Admitted", "True", "Admitted", "", 1_000),
        holding("waiting-for-checks").spec_field("maximumExecutionTimeSeconds", json!(60)),
    ]
    .into_iter()
    .map(|builder| Arc::new(builder.build()))
    .collect();
    let converted = convert(&state, &ConversionOptions::default());
    assert_eq!(
        converted.execution_deadlines,
        vec![
            (
                "team-a/fresh".to_owned(),
                ExecutionDeadline {
                    seconds: 60,
                    at: ts(1_060)
                }
            ),
            (
                "team-a/ran-before".to_owned(),
                ExecutionDeadline {
                    seconds: 60,
                    at: ts(1_015)
                }
            ),
        ]
    );
}

#[test]
fn queue_order_follows_kueue_eviction_timestamps() {
    let evicted = |reason: &str| {
        workload("team-a", "wl")
            .queue("lq")
            .created(100)
            .condition("Evicted", "True", reason, "evicted", 300)
            .build()
    };
    let cases = [
        (
            evicted("PodsReadyTimeout"),
            RequeuingTimestamp::Eviction,
            ts(300),
        ),
        (
            evicted("PodsReadyTimeout"),
            RequeuingTimestamp::Creation,
            ts(100),
        ),
        (
            evicted("AdmissionCheck"),
            RequeuingTimestamp::Creation,
            ts(300),
        ),
        (evicted("Preempted"), RequeuingTimestamp::Eviction, ts(100)),
    ];
    for (object, requeuing, want) in cases {
        let mut state = state();
        state.workloads = vec![Arc::new(object)];
        let options = ConversionOptions {
            requeuing_timestamp: requeuing,
            ..ConversionOptions::default()
        };
        let converted = convert(&state, &options);
        assert_eq!(
            converted.pending[0].workload.queue_timestamp, want,
            "{requeuing:?}"
        );
    }
}

#[test]
fn cached_conversions_follow_what_they_read() {
    let mut state = state();
    let object = |version: &str, cpu: &str| {
        Arc::new(
            workload("team-a", "wl")
                .queue("lq")
                .resource_version(version)
                .pod_set("main", 1, json!({"cpu": cpu}))
                .build(),
        )
    };
    state.workloads = vec![object("1", "1")];
    let options = ConversionOptions::default();
    let mut cache = ConversionCache::new();
    let requests =
        |converted: &Converted| converted.pending[0].workload.pod_sets[0].requests.clone();
    let labels_of = |converted: &Converted| converted.pending[0].workload.namespace_labels.clone();

    let unchanged = |converted: &Converted| converted.pending[0].unchanged;

    let first = convert_cached(&state, &options, &mut cache);
    assert_eq!(first, convert(&state, &options));
    assert!(!unchanged(&first));
    let mut again = convert_cached(&state, &options, &mut cache);
    assert!(unchanged(&again), "reused");
    assert!(
        Arc::ptr_eq(&first.pending[0].workload, &again.pending[0].workload),
        "an unchanged workload is shared with the cache, not copied"
    );
    again.pending[0].unchanged = false;
    assert_eq!(again, first);

    state.workloads = vec![object("2", "2")];
    let changed = convert_cached(&state, &options, &mut cache);
    assert!(!unchanged(&changed));
    assert_eq!(
        requests(&changed),
        BTreeMap::from([("cpu".to_owned(), 2000)])
    );

    state.namespaces = vec![Arc::new(namespace("team-a", json!({"team": "b"})))];
    let relabelled = convert_cached(&state, &options, &mut cache);
    assert!(!unchanged(&relabelled));
    assert_eq!(*labels_of(&relabelled), labels(&[("team", "b")]));

    let mut range = limit_range(
        "team-a",
        json!([{"type": "Container", "defaultRequest": {"memory": "1Gi"}}]),
    );
    range.metadata.resource_version = Some("5".to_owned());
    state.limit_ranges = vec![Arc::new(range)];
    let defaulted = convert_cached(&state, &options, &mut cache);
    assert_eq!(
        requests(&defaulted),
        BTreeMap::from([("cpu".to_owned(), 2000), ("memory".to_owned(), 1 << 30)])
    );
    assert_eq!(defaulted, convert(&state, &options));

    state.local_queues = vec![Arc::new(local_queue("team-a", "lq", "elsewhere"))];
    let moved = convert_cached(&state, &options, &mut cache);
    assert_eq!(moved.pending[0].workload.cluster_queue, "elsewhere");
    let after_the_move = convert_cached(&state, &options, &mut cache);
    assert!(
        Arc::ptr_eq(
            &moved.pending[0].workload,
            &after_the_move.pending[0].workload
        ),
        "the cache keeps the workload pointed at its new ClusterQueue"
    );
}

#[test]
fn equal_pod_sets_and_namespace_labels_are_shared_across_passes_while_held() {
    let mut state = state();
    let object = |name: &str, cpu: &str| {
        Arc::new(
            workload("team-a", name)
                .queue("lq")
                .pod_set("main", 1, json!({"cpu": cpu}))
                .build(),
        )
    };
    let options = ConversionOptions::default();
    let mut cache = ConversionCache::new();
    state.workloads = vec![object("first", "1")];
    let first = convert_cached(&state, &options, &mut cache);
    // Arrives a pass later, from the same template, with a namespace the store sent again.
    state.workloads.push(object("second", "1"));
    state.namespaces = vec![Arc::new(namespace("team-a", json!({"team": "a"})))];
    let both = convert_cached(&state, &options, &mut cache);
    let (held, arrived) = (&first.pending[0].workload, &both.pending[1].workload);
    assert_eq!(arrived.key, "team-a/second");
    assert!(Arc::ptr_eq(&held.pod_sets, &arrived.pod_sets));
    assert!(Arc::ptr_eq(
        &held.namespace_labels,
        &arrived.namespace_labels
    ));
    assert_eq!(arrived, &convert(&state, &options).pending[1].workload);

    // Different requests are not shared, and PodSets no workload holds any more are let go.
    state.workloads = vec![object("third", "2")];
    let other = convert_cached(&state, &options, &mut cache);
    assert!(!Arc::ptr_eq(
        &held.pod_sets,
        &other.pending[0].workload.pod_sets
    ));
    assert_eq!(
        cache.pod_sets.len(),
        2,
        "the passes above still hold the first"
    );
    drop((first, both));
    convert_cached(&state, &options, &mut cache);
    assert_eq!(cache.pod_sets.len(), 1);
}

#[test]
fn cached_quota_holders_are_shared_until_their_object_changes() {
    let mut state = state();
    let holder = |version: &str, cpu: &str| {
        let usage = json!([{
            "name": "main", "flavors": {"cpu": "default"}, "resourceUsage": {"cpu": cpu}, "count": 1,
        }]);
        Arc::new(
            workload("team-a", "wl")
                .queue("lq")
                .resource_version(version)
                .pod_set("main", 1, json!({"cpu": cpu}))
                .reserved("cq", usage)
                .build(),
        )
    };
    let usage = |converted: &Converted| {
        let admission = converted.holders[0].workload.admission.as_ref();
        admission.expect("admission").usage()
    };
    state.workloads = vec![holder("1", "1")];
    let options = ConversionOptions::default();
    let mut cache = ConversionCache::new();

    let first = convert_cached(&state, &options, &mut cache);
    assert_eq!(first, convert(&state, &options));
    let again = convert_cached(&state, &options, &mut cache);
    assert!(
        Arc::ptr_eq(&first.holders[0].workload, &again.holders[0].workload),
        "an unchanged holder, admission included, is shared with the cache, not copied"
    );

    state.workloads = vec![holder("2", "2")];
    let changed = convert_cached(&state, &options, &mut cache);
    assert_eq!(changed, convert(&state, &options));
    let cpu = FlavorResource::new("default", "cpu");
    assert_eq!(usage(&changed), BTreeMap::from([(cpu, 2000)]));
}

#[test]
fn cached_topology_capacities_follow_the_nodes_and_what_pods_take_on_them() {
    let node = |cpu: &str| {
        Arc::new(
            serde_json::from_value::<Node>(json!({
                "metadata": {"name": "n1", "labels": {"kubernetes.io/hostname": "n1"}},
                "status": {
                    "allocatable": {"cpu": cpu},
                    "conditions": [{"type": "Ready", "status": "True"}],
                },
            }))
            .expect("a Node"),
        )
    };
    let mut state = state();
    state.resource_flavors = vec![Arc::new(
        serde_json::from_value(json!({
            "metadata": {"name": "tas"},
            "spec": {"topologyName": "hosts"},
        }))
        .expect("a flavor"),
    )];
    state.topologies = vec![Arc::new(
        serde_json::from_value(json!({
            "metadata": {"name": "hosts"},
            "spec": {"levels": [{"nodeLabel": "kubernetes.io/hostname"}]},
        }))
        .expect("a Topology"),
    )];
    state.nodes = vec![node("2")];
    let options = ConversionOptions {
        topology_aware: true,
        ..ConversionOptions::default()
    };
    let mut cache = ConversionCache::new();

    let two = convert_cached(&state, &options, &mut cache).topologies;
    assert_eq!(two, convert(&state, &options).topologies);
    assert_eq!(
        convert_cached(&state, &options, &mut cache).topologies,
        two,
        "the same nodes: the capacities kept"
    );
    state.nodes = vec![node("4")];
    let four = convert_cached(&state, &options, &mut cache).topologies;
    assert_ne!(four, two);
    assert_eq!(
        four,
        convert(&state, &options).topologies,
        "a changed node: worked out again"
    );
    state.node_usage = Arc::new(crate::quota::node_usage::NodeUsage::of_pods(vec![
        crate::testing::objects::bound_pod("daemon", "n1", "2"),
    ]));
    assert_eq!(
        convert_cached(&state, &options, &mut cache).topologies,
        two,
        "a pod taking 2 of the node's 4 CPUs: worked out again"
    );
}
