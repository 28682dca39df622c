use serde_json::json;

use super::*;
use crate::quota::from_api::format_for_messages;
use crate::testing::objects::{
    cluster_queue, one_queue_cluster, stopped_local_queue, ts, workload,
};

fn cpu(amount: &str) -> serde_json::Value {
    json!({"cpu": amount})
}

/// ClusterQueue `cq` with 2 cpu of flavor `default`, LocalQueue `ns/lq`, and `workloads`.
fn state_with(workloads: Vec<api::Workload>) -> ClusterState {
    one_queue_cluster("2", workloads)
}

fn pending(name: &str, priority: i32, created: i64, amount: &str) -> api::Workload {
    workload("ns", name)
        .queue("lq")
        .priority(priority)
        .created(created)
        .pod_set("main", 1, cpu(amount))
        .build()
}

/// Holds 1 cpu of `default` in `cq`.
fn running() -> api::Workload {
    workload("ns", "running")
        .queue("lq")
        .created(1)
        .pod_set("main", 1, cpu("1"))
        .reserved(
            "cq",
            json!([{"name": "main", "flavors": {"cpu": "default"}, "resourceUsage": {"cpu": "1"}, "count": 1}]),
        )
        .condition("Admitted", "True", "Admitted", "The workload is admitted", 1)
        .build()
}

fn subject(workload: Option<api::Workload>) -> Subject {
    Subject {
        label: "job/train".to_owned(),
        queue_label: Some("lq".to_owned()),
        workload: workload.map(Arc::new),
    }
}

fn explained(subject: &Subject, state: &ClusterState) -> String {
    explain(
        subject,
        state,
        &ConversionOptions::default(),
        SchedulerConfig {
            format_quantity: format_for_messages,
            ..SchedulerConfig::default()
        },
        ts(1000),
    )
}

#[test]
fn targets_name_a_kind_kuota_knows() {
    for text in [
        "job/train",
        "jobs/train",
        "Job.batch/train",
        "jobs.batch/train",
    ] {
        let (kind, name) = parse_target(text).unwrap();
        assert!(
            matches!(kind, Kind::Job(f) if f.kind().kind == "Job"),
            "{text}"
        );
        assert_eq!(name, "train");
    }
    assert!(
        matches!(parse_target("rayjob/r").unwrap().0, Kind::Job(f) if f.kind().kind == "RayJob")
    );
    assert!(matches!(parse_target("wl/w").unwrap().0, Kind::Workload));
    let error = parse_target("deployment/web").unwrap_err().to_string();
    assert!(
        error
            .starts_with("\"deployment/web\": expected KIND/NAME with KIND one of workload, job, "),
        "{error}"
    );
    assert!(parse_target("job/").is_err());
    assert!(parse_target("train").is_err());
}

#[test]
fn a_job_kuota_does_not_queue_says_why() {
    let state = state_with(vec![]);
    let unlabelled = Subject {
        queue_label: None,
        ..subject(None)
    };
    assert_eq!(
        explained(&unlabelled, &state),
        "job/train is not queued: it has no kueue.x-k8s.io/queue-name label"
    );
    assert_eq!(
        explained(&subject(None), &state),
        "job/train has no Workload yet: Kuota creates it when it sees the job"
    );
}

#[test]
fn a_missing_or_stopped_queue_is_named_with_the_command_that_restarts_it() {
    let train = pending("train", 0, 100, "1");
    let mut state = state_with(vec![train.clone()]);
    state.local_queues.clear();
    assert_eq!(
        explained(&subject(Some(train.clone())), &state),
        "job/train waits for LocalQueue \"lq\", which does not exist in namespace \"ns\""
    );

    state.local_queues = vec![Arc::new(stopped_local_queue(
        "ns",
        "lq",
        "cq",
        "HoldAndDrain",
    ))];
    assert_eq!(
        explained(&subject(Some(train.clone())), &state),
        "job/train waits: LocalQueue \"lq\" is stopped (HoldAndDrain); `kubectl kueue resume localqueue lq` restarts it"
    );

    let mut state = state_with(vec![train.clone()]);
    state.cluster_queues.clear();
    assert_eq!(
        explained(&subject(Some(train.clone())), &state),
        "job/train waits: ClusterQueue \"cq\" of LocalQueue \"lq\" does not exist"
    );

    let mut state = state_with(vec![train.clone()]);
    state.cluster_queues = vec![Arc::new(
        cluster_queue("cq")
            .group(&["cpu"], &[("default", &[("cpu", "2")])])
            .spec("stopPolicy", json!("Hold"))
            .build(),
    )];
    assert_eq!(
        explained(&subject(Some(train)), &state),
        "job/train waits: ClusterQueue \"cq\" is stopped (Hold); `kubectl kueue resume clusterqueue cq` restarts it"
    );
}

#[test]
fn a_pending_job_is_told_what_is_short_and_who_is_ahead() {
    let train = pending("train", 0, 300, "2");
    let state = state_with(vec![
        running(),
        pending("urgent", 10, 400, "1"),
        pending("older", 0, 200, "1"),
        train.clone(),
    ]);
    assert_eq!(
        explained(&subject(Some(train)), &state),
        "job/train is pending in ClusterQueue \"cq\", behind 2 (1 of higher priority: ns/urgent): couldn't assign flavors to pod set main: insufficient unused quota for cpu in flavor default, 1 more needed"
    );

    let small = pending("train", 0, 300, "1");
    let state = state_with(vec![running(), small.clone()]);
    assert_eq!(
        explained(&subject(Some(small.clone())), &state),
        "job/train is pending in ClusterQueue \"cq\", first: it fits in the free quota and is admitted in the next scheduling cycle"
    );
    let state = state_with(vec![
        running(),
        pending("older", 0, 200, "1"),
        small.clone(),
    ]);
    assert_eq!(
        explained(&subject(Some(small)), &state),
        "job/train is pending in ClusterQueue \"cq\", behind 1 of the same or lower priority: it fits in the free quota once the workloads ahead of it are admitted"
    );
}

#[test]
fn a_job_past_the_queue_says_what_it_waits_for_or_that_it_does_not() {
    let state = state_with(vec![]);
    let checked = workload("ns", "train")
        .queue("lq")
        .pod_set("main", 1, cpu("1"))
        .reserved("cq", json!([]))
        .status(
            "admissionChecks",
            json!([
                {"name": "budget", "state": "Ready", "message": "", "lastTransitionTime": "2026-01-01T00:00:00Z"},
                {"name": "prov", "state": "Pending", "message": "Waiting for capacity", "lastTransitionTime": "2026-01-01T00:00:00Z"},
            ]),
        )
        .build();
    assert_eq!(
        explained(&subject(Some(checked)), &state),
        "job/train holds quota in ClusterQueue \"cq\" and waits for admission check \"prov\" (Pending: Waiting for capacity)"
    );
    assert_eq!(
        explained(&subject(Some(running())), &state),
        "job/train is admitted in ClusterQueue \"cq\": Kuota holds nothing back"
    );
    let stopped = workload("ns", "train").queue("lq").inactive().build();
    assert_eq!(
        explained(&subject(Some(stopped)), &state),
        "job/train is deactivated: its Workload train is inactive; `kubectl kueue resume workload train` queues it again"
    );
    let finished = workload("ns", "train")
        .queue("lq")
        .condition(
            "Finished",
            "True",
            "Succeeded",
            "Job finished successfully",
            5,
        )
        .build();
    assert_eq!(
        explained(&subject(Some(finished)), &state),
        "job/train has finished: Job finished successfully"
    );
}

#[test]
fn a_long_line_of_higher_priority_workloads_names_the_first_three() {
    let train = pending("train", 0, 900, "2");
    let mut workloads: Vec<api::Workload> = (0..5)
        .map(|i| pending(&format!("vip-{i}"), 10, 100 + i, "2"))
        .collect();
    workloads.push(train.clone());
    let state = state_with(workloads);
    assert_eq!(
        explained(&subject(Some(train)), &state),
        "job/train is pending in ClusterQueue \"cq\", behind 5 (5 of higher priority: ns/vip-0, ns/vip-1, ns/vip-2 and 2 more): it fits in the free quota once the workloads ahead of it are admitted"
    );
}

#[test]
fn a_running_workload_with_a_maximum_execution_time_tells_when_quota_frees_up() {
    let bounded = workload("ns", "bounded")
        .queue("lq")
        .created(1)
        .spec_field("maximumExecutionTimeSeconds", json!(600))
        .pod_set("main", 1, cpu("1"))
        .reserved(
            "cq",
            json!([{"name": "main", "flavors": {"cpu": "default"}, "resourceUsage": {"cpu": "1"}, "count": 1}]),
        )
        .condition("Admitted", "True", "Admitted", "The workload is admitted", 900)
        .build();
    let train = pending("train", 0, 950, "2");
    let state = state_with(vec![running(), bounded, train.clone()]);
    assert_eq!(
        explained(&subject(Some(train)), &state),
        "job/train is pending in ClusterQueue \"cq\", first: couldn't assign flavors to pod set main: insufficient unused quota for cpu in flavor default, 2 more needed; ns/bounded, running here, ends within 9 min (its maximum execution time)"
    );
}
