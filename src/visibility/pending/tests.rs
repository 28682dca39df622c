use std::sync::Arc;

use serde_json::json;

use super::*;
use crate::testing::objects::{cluster_queue, flavor, local_queue, namespace, rfc3339, workload};

fn pending(name: &str, queue: &str, priority: i32, created: i64) -> api::Workload {
    workload("ns", name)
        .queue(queue)
        .priority(priority)
        .created(created)
        .pod_set("main", 1, json!({"cpu": "1"}))
        .build()
}

/// ClusterQueue `cq` fed by `ns/a` and `ns/b`; `ns/orphan` points at a ClusterQueue that does
/// not exist.
fn lists(workloads: Vec<api::Workload>) -> PendingLists {
    lists_with(workloads, &ConversionOptions::default())
}

fn lists_with(workloads: Vec<api::Workload>, options: &ConversionOptions) -> PendingLists {
    let state = ClusterState {
        resource_flavors: vec![Arc::new(flavor("default"))],
        namespaces: vec![Arc::new(namespace("ns", json!({})))],
        local_queues: vec![
            Arc::new(local_queue("ns", "a", "cq")),
            Arc::new(local_queue("ns", "b", "cq")),
            Arc::new(local_queue("ns", "orphan", "gone")),
        ],
        cluster_queues: vec![Arc::new(
            cluster_queue("cq")
                .group(&["cpu"], &[("default", &[("cpu", "1")])])
                .build(),
        )],
        workloads: workloads.into_iter().map(Arc::new).collect(),
        ..ClusterState::default()
    };
    PendingLists::read(&state, options, None)
}

/// `(name, local queue, position in ClusterQueue, position in LocalQueue)` of each item.
fn positions(items: &[PendingWorkload]) -> Vec<(String, String, i32, i32)> {
    items
        .iter()
        .map(|item| {
            (
                item.metadata.name.clone().unwrap_or_default(),
                item.local_queue_name.clone(),
                item.position_in_cluster_queue,
                item.position_in_local_queue,
            )
        })
        .collect()
}

fn row(name: &str, queue: &str, in_cq: i32, in_lq: i32) -> (String, String, i32, i32) {
    (name.to_owned(), queue.to_owned(), in_cq, in_lq)
}

fn five() -> PendingLists {
    lists(vec![
        pending("a-old", "a", 0, 100),
        pending("a-new", "a", 0, 300),
        pending("b-urgent", "b", 10, 400),
        pending("b-mid", "b", 0, 200),
        pending("a-last", "a", 0, 500),
        // Neither holding quota nor inactive workloads are pending.
        workload("ns", "running")
            .queue("a")
            .created(1)
            .pod_set("main", 1, json!({"cpu": "1"}))
            .reserved("cq", json!([]))
            .build(),
        workload("ns", "stopped")
            .queue("a")
            .created(1)
            .inactive()
            .pod_set("main", 1, json!({"cpu": "1"}))
            .build(),
    ])
}

#[test]
fn a_cluster_queue_lists_its_pending_workloads_in_queue_order() {
    let items = five()
        .in_cluster_queue("cq", Page::bounded(None, None))
        .unwrap();
    assert_eq!(
        positions(&items),
        [
            row("b-urgent", "b", 0, 0),
            row("a-old", "a", 1, 0),
            row("b-mid", "b", 2, 1),
            row("a-new", "a", 3, 1),
            row("a-last", "a", 4, 2),
        ]
    );
}

#[test]
fn a_priority_boost_orders_the_list_and_the_priority_shown_is_the_base() {
    let boosted = workload("ns", "boosted")
        .queue("b")
        .created(300)
        .annotation(crate::api::constants::PRIORITY_BOOST_ANNOTATION, "10")
        .pod_set("main", 1, json!({"cpu": "1"}))
        .build();
    let options = ConversionOptions {
        priority_boost: true,
        ..ConversionOptions::default()
    };
    let items = lists_with(vec![pending("plain", "a", 5, 100), boosted], &options)
        .in_cluster_queue("cq", Page::bounded(None, None))
        .unwrap();
    let shown: Vec<(String, i32)> = items
        .iter()
        .map(|item| {
            (
                item.metadata.name.clone().unwrap_or_default(),
                item.priority,
            )
        })
        .collect();
    assert_eq!(
        shown,
        [("boosted".to_owned(), 0), ("plain".to_owned(), 5)],
        "Kueue's visibility API shows spec.priority"
    );
}

#[test]
fn a_page_of_a_cluster_queue_counts_local_positions_from_its_start() {
    let items = five()
        .in_cluster_queue("cq", Page::bounded(Some(2), Some(2)))
        .unwrap();
    assert_eq!(
        positions(&items),
        [row("b-mid", "b", 2, 1), row("a-new", "a", 3, 1)]
    );
    let past_the_end = five()
        .in_cluster_queue("cq", Page::bounded(Some(10), Some(9)))
        .unwrap();
    assert_eq!(past_the_end, []);
}

#[test]
fn a_local_queue_lists_its_own_workloads_with_their_cluster_queue_positions() {
    let lists = five();
    let items = lists
        .in_local_queue("ns", "a", Page::bounded(None, None))
        .unwrap();
    assert_eq!(
        positions(&items),
        [
            row("a-old", "a", 1, 0),
            row("a-new", "a", 3, 1),
            row("a-last", "a", 4, 2)
        ]
    );
    let page = lists
        .in_local_queue("ns", "a", Page::bounded(Some(1), Some(1)))
        .unwrap();
    assert_eq!(positions(&page), [row("a-new", "a", 3, 1)]);
}

#[test]
fn unknown_queues_are_named_and_a_local_queue_without_its_cluster_queue_is_empty() {
    let lists = five();
    assert_eq!(
        lists.in_cluster_queue("nope", Page::bounded(None, None)),
        Err(UnknownQueue::ClusterQueue("nope".to_owned()))
    );
    assert_eq!(
        lists.in_local_queue("other", "a", Page::bounded(None, None)),
        Err(UnknownQueue::LocalQueue("a".to_owned()))
    );
    assert_eq!(
        lists.in_local_queue("ns", "orphan", Page::bounded(None, None)),
        Ok(vec![])
    );
}

#[test]
fn limits_and_offsets_are_bounded_as_kueue_bounds_them() {
    let page = |limit, offset| Page::bounded(limit, offset);
    assert_eq!(
        page(None, None),
        Page {
            limit: 1000,
            offset: 0
        }
    );
    assert_eq!(
        page(Some(0), Some(-5)),
        Page {
            limit: 1000,
            offset: 0
        }
    );
    assert_eq!(
        page(Some(-1), Some(3)),
        Page {
            limit: 0,
            offset: 3
        }
    );
    assert_eq!(
        page(Some(1_000_000), None),
        Page {
            limit: 100_000,
            offset: 0
        }
    );
}

#[test]
fn an_item_carries_kueues_fields_and_only_the_owners_identity() {
    let owned = workload("ns", "job-x-1a2b3")
        .queue("a")
        .priority(7)
        .created(100)
        .pod_set("main", 1, json!({"cpu": "1"}))
        .build();
    let mut owned = owned;
    owned.metadata.owner_references = Some(vec![OwnerReference {
        api_version: "batch/v1".to_owned(),
        kind: "Job".to_owned(),
        name: "x".to_owned(),
        uid: "job-uid".to_owned(),
        controller: Some(true),
        block_owner_deletion: Some(true),
    }]);
    let items = lists(vec![owned])
        .in_cluster_queue("cq", Page::bounded(None, None))
        .unwrap();
    assert_eq!(
        serde_json::to_value(&items).unwrap(),
        json!([{
            "metadata": {
                "name": "job-x-1a2b3",
                "namespace": "ns",
                "creationTimestamp": rfc3339(100),
                "ownerReferences": [
                    {"apiVersion": "batch/v1", "kind": "Job", "name": "x", "uid": "job-uid"}
                ],
            },
            "priority": 7,
            "localQueueName": "a",
            "positionInClusterQueue": 0,
            "positionInLocalQueue": 0,
        }])
    );
}

#[test]
fn a_fair_sharing_cluster_queue_lists_the_local_queue_that_reported_less_first() {
    let mut used = local_queue("ns", "a", "cq");
    used.status = Some(
        serde_json::from_value(
            json!({"fairSharing": {"weightedShare": 0, "admissionFairSharingStatus": {
                "consumedResources": {"cpu": "2"}, "lastUpdate": rfc3339(0),
            }}}),
        )
        .unwrap(),
    );
    let state = ClusterState {
        resource_flavors: vec![Arc::new(flavor("default"))],
        namespaces: vec![Arc::new(namespace("ns", json!({})))],
        local_queues: vec![Arc::new(used), Arc::new(local_queue("ns", "b", "cq"))],
        cluster_queues: vec![Arc::new(
            cluster_queue("cq")
                .group(&["cpu"], &[("default", &[("cpu", "1")])])
                .spec(
                    "admissionScope",
                    json!({"admissionMode": "UsageBasedAdmissionFairSharing"}),
                )
                .build(),
        )],
        workloads: [pending("a-old", "a", 0, 100), pending("b-new", "b", 0, 200)]
            .into_iter()
            .map(Arc::new)
            .collect(),
        ..ClusterState::default()
    };
    let names = |fair_sharing: Option<&BTreeMap<String, f64>>| {
        PendingLists::read(&state, &ConversionOptions::default(), fair_sharing)
            .in_cluster_queue("cq", Page::bounded(None, None))
            .unwrap()
            .iter()
            .map(|item| item.metadata.name.clone().unwrap_or_default())
            .collect::<Vec<_>>()
    };
    assert_eq!(names(Some(&BTreeMap::new())), ["b-new", "a-old"]);
    assert_eq!(names(None), ["a-old", "b-new"]);
}
