use std::collections::BTreeMap;

use pretty_assertions::assert_eq;

use super::*;
use crate::api::v1beta1::TopologyDomainAssignment;

const HOST: &str = "kubernetes.io/hostname";

/// Pods per host, in the order given.
fn on_hosts(hosts: &[(&str, i32)]) -> TopologyAssignment {
    TopologyAssignment {
        levels: vec![HOST.to_string()],
        domains: hosts
            .iter()
            .map(|(host, count)| TopologyDomainAssignment {
                values: vec![host.to_string()],
                count: *count,
            })
            .collect(),
    }
}

fn host(name: &str) -> BTreeMap<String, String> {
    BTreeMap::from([(HOST.to_string(), name.to_string())])
}

fn gated<'a>(name: &'a str, index: Option<i64>, none: &'a BTreeMap<String, String>) -> PodView<'a> {
    PodView {
        name,
        gated: true,
        index,
        sub_group: None,
        node_selector: none,
    }
}

fn to(pod: &str, node: &str) -> Ungate {
    Ungate {
        pod: pod.to_string(),
        node_selector: host(node),
    }
}

#[test]
fn indexed_pods_take_the_domain_their_rank_falls_in() {
    let none = BTreeMap::new();
    let pods = [
        gated("job-3", Some(3), &none),
        gated("job-0", Some(0), &none),
        gated("job-2", Some(2), &none),
        gated("job-1", Some(1), &none),
    ];
    assert_eq!(
        ungate(&on_hosts(&[("a", 2), ("b", 2)]), &pods, None),
        [
            to("job-0", "a"),
            to("job-1", "a"),
            to("job-2", "b"),
            to("job-3", "b")
        ]
    );
}

#[test]
fn a_recreated_indexed_pod_goes_back_to_its_ranks_domain() {
    let none = BTreeMap::new();
    let (a, b) = (host("a"), host("b"));
    let pods = [
        PodView {
            name: "job-0",
            gated: false,
            index: Some(0),
            sub_group: None,
            node_selector: &a,
        },
        PodView {
            name: "job-2",
            gated: false,
            index: Some(2),
            sub_group: None,
            node_selector: &b,
        },
        gated("job-1-again", Some(1), &none),
    ];
    assert_eq!(
        ungate(&on_hosts(&[("a", 2), ("b", 1)]), &pods, None),
        [to("job-1-again", "a")]
    );
}

#[test]
fn pods_without_indexes_fill_the_places_left_in_order() {
    let none = BTreeMap::new();
    let a = host("a");
    let pods = [
        gated("p-c", None, &none),
        PodView {
            name: "p-a",
            gated: false,
            index: None,
            sub_group: None,
            node_selector: &a,
        },
        gated("p-b", None, &none),
        gated("p-d", None, &none),
        gated("p-e", None, &none),
    ];
    // `a` has one place left, `b` two; the fourth gated pod has none and waits.
    assert_eq!(
        ungate(&on_hosts(&[("a", 2), ("b", 2)]), &pods, None),
        [to("p-b", "a"), to("p-c", "b"), to("p-d", "b")]
    );
}

#[test]
fn indexes_that_repeat_or_overflow_are_not_ranks() {
    let none = BTreeMap::new();
    let twice = [gated("x", Some(0), &none), gated("y", Some(0), &none)];
    assert_eq!(
        ungate(&on_hosts(&[("a", 1), ("b", 1)]), &twice, None),
        [to("x", "a"), to("y", "b")]
    );
    let beyond = [gated("x", Some(5), &none), gated("y", Some(0), &none)];
    assert_eq!(
        ungate(&on_hosts(&[("a", 1), ("b", 1)]), &beyond, None),
        [to("x", "a"), to("y", "b")]
    );
}

#[test]
fn every_level_of_the_domain_joins_the_node_selector() {
    let none = BTreeMap::new();
    let assignment = TopologyAssignment {
        levels: vec!["block".to_string(), "rack".to_string()],
        domains: vec![TopologyDomainAssignment {
            values: vec!["b1".to_string(), "r2".to_string()],
            count: 1,
        }],
    };
    assert_eq!(
        ungate(&assignment, &[gated("p", None, &none)], None),
        [Ungate {
            pod: "p".to_string(),
            node_selector: BTreeMap::from([
                ("block".to_string(), "b1".to_string()),
                ("rack".to_string(), "r2".to_string()),
            ]),
        }]
    );
}

#[test]
fn copies_repeating_indexes_are_ranked_by_copy_then_index() {
    let none = BTreeMap::new();
    // Two copies of a 2-pod Job, both holding indexes 0 and 1; names in the reverse order of
    // ranks.
    let pod = |name, sub_group, index| PodView {
        sub_group: Some(sub_group),
        ..gated(name, Some(index), &none)
    };
    let pods = [
        pod("pod-a", 1, 1),
        pod("pod-d", 0, 0),
        pod("pod-b", 1, 0),
        pod("pod-c", 0, 1),
    ];
    let assignment = on_hosts(&[("x", 1), ("y", 2), ("z", 1)]);
    assert_eq!(
        ungate(&assignment, &pods, Some(2)),
        [
            to("pod-a", "z"),
            to("pod-b", "y"),
            to("pod-c", "y"),
            to("pod-d", "x"),
        ]
    );
    // Without the copies' count the indexes repeat, so they rank nothing: name order.
    assert_eq!(
        ungate(&assignment, &pods, None),
        [
            to("pod-a", "x"),
            to("pod-b", "y"),
            to("pod-c", "y"),
            to("pod-d", "z"),
        ]
    );
}
