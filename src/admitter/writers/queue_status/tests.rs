use pretty_assertions::assert_eq;
use serde_json::json;

use super::*;
use crate::quota::model;
use crate::testing::objects::{
    cluster_queue, condition as api_condition, local_queue, stopped_local_queue, ts,
};

fn holder(
    key: &str,
    cluster_queue: &str,
    queue: Option<&str>,
    cpu: Quantity,
    admitted: bool,
) -> Holder {
    let mut workload = model::Workload::new(key, cluster_queue, ts(1));
    workload.admission = Some(model::Admission {
        cluster_queue: cluster_queue.to_owned(),
        pod_set_assignments: vec![model::PodSetAssignment {
            name: "main".to_owned(),
            flavors: BTreeMap::from([("cpu".to_owned(), "default".to_owned())]),
            resource_usage: BTreeMap::from([("cpu".to_owned(), cpu)]),
            count: 1,
            topology: None,
        }],
    });
    Holder {
        workload: workload.into(),
        local_queue: queue.map(|name| LocalQueueRef::new("ns", name)),
        admitted,
    }
}

fn cpu(value: Quantity) -> BTreeMap<FlavorResource, Quantity> {
    BTreeMap::from([(FlavorResource::new("default", "cpu"), value)])
}

#[test]
fn usage_adds_up_holders_per_queue() {
    let usages = usages(&[
        holder("ns/a", "cq", Some("lq"), 2000, true),
        holder("ns/b", "cq", Some("lq"), 1000, false),
        holder("ns/c", "cq", Some("other"), 500, true),
        holder("ns/d", "cq-2", None, 300, true),
    ]);
    assert_eq!(
        usages.cluster_queues["cq"],
        QueueUsage {
            reserving: 3,
            admitted: 2,
            reserved: cpu(3500),
            in_use: cpu(2500),
        }
    );
    assert_eq!(
        usages.local_queues[&LocalQueueRef::new("ns", "lq")],
        QueueUsage {
            reserving: 2,
            admitted: 1,
            reserved: cpu(3000),
            in_use: cpu(2000),
        }
    );
    assert_eq!(usages.cluster_queues["cq-2"].reserving, 1);
    assert_eq!(usages.local_queues.len(), 2);
}

/// These flavors, and the AdmissionChecks `ready` (Active) and `broken` (not); the flavor
/// `tas`, if named, has no Topology `datacenter`.
fn flavors(names: &[&str]) -> QueueReferences {
    QueueReferences {
        flavors: names.iter().map(|name| (*name).to_owned()).collect(),
        admission_checks: BTreeMap::from([
            ("ready".to_owned(), true),
            ("broken".to_owned(), false),
        ]),
        missing_topologies: names
            .iter()
            .filter(|name| **name == "tas")
            .map(|name| ((*name).to_owned(), "datacenter".to_owned()))
            .collect(),
    }
}

#[test]
fn cluster_queue_status_reports_counts_usage_and_borrowing() {
    let cq = cluster_queue("cq")
        .cohort("all")
        .group(
            &["memory", "cpu"],
            &[
                ("default", &[("memory", "1Gi"), ("cpu", "2")]),
                ("spot", &[("memory", "1Gi"), ("cpu", "2")]),
            ],
        )
        .build();
    let usage = QueueUsage {
        reserving: 3,
        admitted: 2,
        reserved: cpu(3500),
        in_use: cpu(1500),
    };
    let facts = ClusterQueueFacts {
        references: &flavors(&["default", "spot"]),
        usage: &usage,
        pending: 4,
        weighted_share: Some(250),
    };
    let status = cluster_queue_status(&cq, &facts, ts(100));
    let usage = |cpu_total: &str, cpu_borrowed: &str| {
        json!([
            {"name": "default", "resources": [
                {"name": "cpu", "total": cpu_total, "borrowed": cpu_borrowed},
                {"name": "memory", "total": "0", "borrowed": "0"},
            ]},
            {"name": "spot", "resources": [
                {"name": "cpu", "total": "0", "borrowed": "0"},
                {"name": "memory", "total": "0", "borrowed": "0"},
            ]},
        ])
    };
    assert_eq!(
        serde_json::to_value(&status).unwrap(),
        json!({
            "conditions": [{
                "type": "Active", "status": "True", "reason": "Ready",
                "message": "Can admit new workloads", "observedGeneration": 1,
                "lastTransitionTime": crate::testing::objects::rfc3339(100),
            }],
            "flavorsReservation": usage("3500m", "1500m"),
            "flavorsUsage": usage("1500m", "0"),
            "pendingWorkloads": 4,
            "reservingWorkloads": 3,
            "admittedWorkloads": 2,
            "fairSharing": {"weightedShare": 250},
        })
    );

    let alone = cluster_queue("alone")
        .group(&["cpu"], &[("default", &[("cpu", "1")])])
        .build();
    let status = cluster_queue_status(&alone, &facts, ts(100));
    assert_eq!(
        serde_json::to_value(&status.flavors_reservation).unwrap(),
        json!([{"name": "default", "resources": [{"name": "cpu", "total": "3500m", "borrowed": "0"}]}]),
        "a queue without a cohort never reports borrowing"
    );
}

#[test]
fn inactive_cluster_queues_say_why() {
    let flavor_set = flavors(&["default", "tas"]);
    let group = |builder: crate::testing::objects::ClusterQueueBuilder| {
        builder.group(
            &["cpu"],
            &[
                ("default", &[("cpu", "1")]),
                ("x", &[("cpu", "1")]),
                ("y", &[("cpu", "1")]),
            ],
        )
    };
    let cases = [
        (
            group(cluster_queue("cq")).build(),
            Some((
                "FlavorNotFound",
                "Can't admit new workloads: references missing ResourceFlavor(s): x,y.",
            )),
            "pending",
        ),
        (
            group(cluster_queue("cq"))
                .spec("stopPolicy", json!("Hold"))
                .build(),
            Some((
                "Stopped",
                "Can't admit new workloads: is stopped, references missing ResourceFlavor(s): x,y.",
            )),
            "pending",
        ),
        (
            cluster_queue("cq")
                .spec(
                    "admissionChecksStrategy",
                    json!({"admissionChecks": [{"name": "ready"}, {"name": "gone"}, {"name": "broken", "onFlavors": ["default"]}, {"name": "lost"}]}),
                )
                .build(),
            Some((
                "AdmissionCheckNotFound",
                "Can't admit new workloads: references missing AdmissionCheck(s): gone,lost, references inactive AdmissionCheck(s): broken.",
            )),
            "pending",
        ),
        (
            cluster_queue("cq")
                .spec(
                    "admissionChecksStrategy",
                    json!({"admissionChecks": [{"name": "broken"}]}),
                )
                .build(),
            Some((
                "AdmissionCheckInactive",
                "Can't admit new workloads: references inactive AdmissionCheck(s): broken.",
            )),
            "pending",
        ),
        (
            cluster_queue("cq")
                .group(&["cpu"], &[("tas", &[("cpu", "1")])])
                .build(),
            Some((
                "TopologyNotFound",
                "Can't admit new workloads: there is no Topology \"datacenter\" for TAS flavor \"tas\".",
            )),
            "pending",
        ),
        (
            cluster_queue("cq")
                .spec("stopPolicy", json!("HoldAndDrain"))
                .build(),
            Some(("Stopped", "Can't admit new workloads: is stopped.")),
            "pending",
        ),
        (
            cluster_queue("cq").deleting().build(),
            Some((
                "Terminating",
                "Can't admit new workloads; clusterQueue is terminating",
            )),
            "terminated",
        ),
        (
            cluster_queue("cq")
                .spec("stopPolicy", json!("None"))
                .build(),
            None,
            "active",
        ),
    ];
    for (cq, want, metric) in cases {
        let got = inactive_reason(&cq, &flavor_set);
        assert_eq!(
            got.as_ref()
                .map(|(reason, message)| (*reason, message.as_str())),
            want
        );
        assert_eq!(cluster_queue_metric_status(&cq, &flavor_set), metric);
        if let Some((reason, message)) = want {
            let facts = ClusterQueueFacts {
                references: &flavor_set,
                usage: &QueueUsage::default(),
                pending: 0,
                weighted_share: None,
            };
            let status = cluster_queue_status(&cq, &facts, ts(5));
            assert_eq!(status.conditions.len(), 1);
            assert_eq!(status.conditions[0].status, "False");
            assert_eq!(status.conditions[0].reason, reason);
            assert_eq!(status.conditions[0].message, message);
        }
    }
}

#[test]
fn the_active_condition_keeps_its_transition_time() {
    let cq = cluster_queue("cq")
        .status(json!({"conditions": [api_condition("Active", "True", "Ready", "Can admit new workloads", 50)]}))
        .build();
    let facts = ClusterQueueFacts {
        references: &flavors(&[]),
        usage: &QueueUsage::default(),
        pending: 0,
        weighted_share: None,
    };
    let status = cluster_queue_status(&cq, &facts, ts(100));
    assert_eq!(status.conditions[0].last_transition_time.0, ts(50));
    assert_eq!(status.conditions[0].observed_generation, Some(1));
}

#[test]
fn local_queue_status_follows_its_cluster_queue() {
    let cq = cluster_queue("cq")
        .group(&["cpu"], &[("default", &[("cpu", "4")])])
        .build();
    let usage = QueueUsage {
        reserving: 2,
        admitted: 1,
        reserved: cpu(2000),
        in_use: cpu(1000),
    };
    let lq = local_queue("ns", "lq", "cq");
    let sampled = api::AdmissionFairSharingStatus {
        consumed_resources: [(
            "cpu".to_owned(),
            k8s_openapi::apimachinery::pkg::api::resource::Quantity("1500m".to_owned()),
        )]
        .into(),
        last_update: k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(ts(90)),
    };
    let status = local_queue_status(
        &lq,
        &LocalQueueFacts {
            cluster_queue: Some((&cq, true)),
            usage: &usage,
            pending: 3,
            admission_fair_sharing: Some(&sampled),
        },
        ts(100),
    );
    assert_eq!(
        serde_json::to_value(&status).unwrap(),
        json!({
            "conditions": [{
                "type": "Active", "status": "True", "reason": "Ready",
                "message": "Can submit new workloads to localQueue", "observedGeneration": 1,
                "lastTransitionTime": crate::testing::objects::rfc3339(100),
            }],
            "pendingWorkloads": 3,
            "reservingWorkloads": 2,
            "admittedWorkloads": 1,
            "flavorsReservation": [{"name": "default", "resources": [{"name": "cpu", "total": "2"}]}],
            "flavorsUsage": [{"name": "default", "resources": [{"name": "cpu", "total": "1"}]}],
            "fairSharing": {
                "weightedShare": 0,
                "admissionFairSharingStatus": {
                    "consumedResources": {"cpu": "1500m"},
                    "lastUpdate": crate::testing::objects::rfc3339(90),
                },
            },
        })
    );

    let cases = [
        (
            lq.clone(),
            None,
            (
                "ClusterQueueDoesNotExist",
                "Can't submit new workloads to clusterQueue",
            ),
        ),
        (
            lq.clone(),
            Some((&cq, false)),
            (
                "ClusterQueueIsInactive",
                "Can't submit new workloads to clusterQueue",
            ),
        ),
        (
            stopped_local_queue("ns", "lq", "cq", "Hold"),
            Some((&cq, true)),
            ("Stopped", "LocalQueue is stopped"),
        ),
    ];
    for (queue, cluster_queue, (reason, message)) in cases {
        let status = local_queue_status(
            &queue,
            &LocalQueueFacts {
                cluster_queue,
                usage: &QueueUsage::default(),
                pending: 0,
                admission_fair_sharing: None,
            },
            ts(100),
        );
        let active = &status.conditions[0];
        assert_eq!(
            (
                active.status.as_str(),
                active.reason.as_str(),
                active.message.as_str()
            ),
            ("False", reason, message)
        );
        assert_eq!(status.flavors_usage.is_empty(), cluster_queue.is_none());
    }
}

#[test]
fn status_patches_are_skipped_when_nothing_changed() {
    let status = api::ClusterQueueStatus {
        pending_workloads: 2,
        ..Default::default()
    };
    assert_eq!(status_patch(Some(&status), &status), None);
    assert_eq!(
        status_patch::<api::ClusterQueueStatus>(None, &status),
        Some(
            json!({"status": {"pendingWorkloads": 2, "reservingWorkloads": 0, "admittedWorkloads": 0}})
        ),
        "a queue without status gets every counter, zeros included"
    );
    let changed = api::ClusterQueueStatus {
        pending_workloads: 1,
        admitted_workloads: 1,
        ..Default::default()
    };
    assert_eq!(
        status_patch(Some(&status), &changed),
        Some(json!({"status": {"pendingWorkloads": 1, "admittedWorkloads": 1}}))
    );
}

#[tokio::test]
async fn a_round_writes_the_desired_statuses_as_they_stand_at_each_queues_turn() {
    let pending = |count| api::ClusterQueueStatus {
        pending_workloads: count,
        ..Default::default()
    };
    let local_queue = LocalQueueRef::new("ns", "lq");
    let (statuses, desired) = watch::channel(DesiredStatuses {
        cluster_queues: BTreeMap::from([
            ("a".to_owned(), pending(1)),
            ("b".to_owned(), pending(1)),
            ("c".to_owned(), pending(1)),
        ]),
        local_queues: BTreeMap::from([(
            local_queue.clone(),
            api::LocalQueueStatus {
                pending_workloads: 1,
                ..Default::default()
            },
        )]),
    });
    let cluster = |name: &str| QueueName::Cluster(name.to_owned());
    let local = QueueName::Local(local_queue);
    let queues = round_order(&desired.borrow());
    assert_eq!(
        queues,
        [cluster("a"), cluster("b"), cluster("c"), local.clone()],
        "ClusterQueues first"
    );

    let mut written = Vec::new();
    let all_written = write_round(
        queues,
        &desired,
        |queue, statuses| match queue {
            QueueName::Cluster(name) => statuses
                .cluster_queues
                .get(name)
                .map(|status| json!(status.pending_workloads)),
            QueueName::Local(queue) => statuses
                .local_queues
                .get(queue)
                .map(|status| json!(status.pending_workloads)),
        },
        |queue, patch| {
            // While the first queue is written, a pass changes the second and drops the third.
            if queue == cluster("a") {
                statuses.send_modify(|statuses| {
                    statuses.cluster_queues.insert("b".to_owned(), pending(2));
                    statuses.cluster_queues.remove("c");
                });
            }
            let succeeded = !matches!(queue, QueueName::Local(_));
            written.push((queue, patch));
            std::future::ready(succeeded)
        },
    )
    .await;
    assert_eq!(
        written,
        [
            (cluster("a"), json!(1)),
            (cluster("b"), json!(2)),
            (local, json!(1)),
        ]
    );
    assert!(!all_written, "the LocalQueue's write failed");
}
