//! Topology-aware placement, including the examples of Kueue's design document.

use std::collections::BTreeMap;

use pretty_assertions::assert_eq;

use crate::model::Quantity;
use crate::topology::{
    HOSTNAME_LABEL, PlacementMode, PlacementRequest, SliceRequest, TopologyAssignment,
    TopologyCapacity, TopologyDomain,
};

const BLOCK: &str = "cloud.provider.com/topology-block";
const RACK: &str = "cloud.provider.com/topology-rack";

fn cpu(millis: Quantity) -> BTreeMap<String, Quantity> {
    BTreeMap::from([("cpu".to_owned(), millis)])
}

/// A Topology of block, rack and hostname; each node `(block, rack, name, free millicores)`.
fn three_levels(nodes: &[(&str, &str, &str, Quantity)]) -> TopologyCapacity {
    let mut capacity = TopologyCapacity::new(
        "default",
        vec![BLOCK.to_owned(), RACK.to_owned(), HOSTNAME_LABEL.to_owned()],
    );
    for (block, rack, name, free) in nodes {
        capacity.add_node(
            vec![(*block).to_owned(), (*rack).to_owned(), (*name).to_owned()],
            &cpu(*free),
        );
    }
    capacity
}

/// A rack of nodes by name and free millicores, under the hostname level alone below it.
fn one_rack(nodes: &[(&str, Quantity)]) -> TopologyCapacity {
    let mut capacity =
        TopologyCapacity::new("default", vec![RACK.to_owned(), HOSTNAME_LABEL.to_owned()]);
    for (name, free) in nodes {
        capacity.add_node(vec!["r1".to_owned(), (*name).to_owned()], &cpu(*free));
    }
    capacity
}

fn request(level: usize, mode: PlacementMode, count: i32) -> PlacementRequest {
    PlacementRequest {
        level,
        mode,
        count,
        per_pod: cpu(1000),
        slices: None,
    }
}

fn on_hosts(domains: &[(&str, i32)]) -> TopologyAssignment {
    TopologyAssignment {
        levels: vec![HOSTNAME_LABEL.to_owned()],
        domains: domains
            .iter()
            .map(|(name, count)| TopologyDomain {
                values: vec![(*name).to_owned()],
                count: *count,
            })
            .collect(),
    }
}

/// Rack r1 has room for 4 pods of 1 CPU (2 + 2), rack r2 for 3 (1 + 2), both in block b1.
fn two_racks() -> TopologyCapacity {
    three_levels(&[
        ("b1", "r1", "n1", 2000),
        ("b1", "r1", "n2", 2500),
        ("b1", "r2", "n3", 1000),
        ("b1", "r2", "n4", 2000),
    ])
}

#[test]
fn required_rack_takes_the_only_rack_with_room_for_all() {
    let placed = two_racks().place(&request(1, PlacementMode::Required, 4));
    assert_eq!(placed, Ok(on_hosts(&[("n1", 2), ("n2", 2)])));
}

#[test]
fn required_rack_takes_the_tightest_rack_that_fits() {
    let placed = two_racks().place(&request(1, PlacementMode::Required, 3));
    assert_eq!(placed, Ok(on_hosts(&[("n3", 1), ("n4", 2)])));
}

#[test]
fn required_rack_that_no_rack_holds_reports_the_largest_fit() {
    let placed = two_racks().place(&request(1, PlacementMode::Required, 5));
    assert_eq!(
        placed,
        Err(r#"topology "default" allows to fit only 4 out of 5 pod(s)"#.to_owned())
    );
    let placed = two_racks().place(&PlacementRequest {
        per_pod: cpu(3000),
        ..request(1, PlacementMode::Required, 1)
    });
    assert_eq!(
        placed,
        Err(concat!(
            r#"topology "default" doesn't allow to fit any of 1 pod(s). "#,
            r#"Total nodes: 4; excluded: resource "cpu": 4"#
        )
        .to_owned())
    );
}

#[test]
fn preferred_rack_falls_back_to_two_racks_of_the_block() {
    let placed = two_racks().place(&request(1, PlacementMode::Preferred, 5));
    assert_eq!(placed, Ok(on_hosts(&[("n1", 2), ("n2", 2), ("n3", 1)])));
}

#[test]
fn preferred_across_blocks_when_no_block_holds_all() {
    let capacity = three_levels(&[
        ("b1", "r1", "n1", 2000),
        ("b2", "r2", "n2", 3000),
        ("b3", "r3", "n3", 1000),
    ]);
    let placed = capacity.place(&request(1, PlacementMode::Preferred, 4));
    assert_eq!(placed, Ok(on_hosts(&[("n2", 3), ("n3", 1)])));
    let placed = capacity.place(&request(1, PlacementMode::Preferred, 7));
    assert_eq!(
        placed,
        Err(r#"topology "default" allows to fit only 6 out of 7 pod(s)"#.to_owned())
    );
}

#[test]
fn best_fit_takes_the_largest_nodes_then_the_tightest_last() {
    // Kueue's design example: nodes for 3, 3, 2 and 1 pods, 7 pods.
    let rack = one_rack(&[("a", 3000), ("b", 3000), ("c", 2000), ("d", 1000)]);
    let placed = rack.place(&request(0, PlacementMode::Required, 7));
    assert_eq!(placed, Ok(on_hosts(&[("a", 3), ("b", 3), ("d", 1)])));
}

#[test]
fn unconstrained_fills_the_least_free_nodes_first() {
    let rack = one_rack(&[("a", 3000), ("b", 3000), ("c", 2000), ("d", 1000)]);
    let placed = rack.place(&request(1, PlacementMode::Unconstrained, 7));
    // Kueue's design example: the nodes for 1, 2, 3 and 3 pods, in that order.
    assert_eq!(
        placed,
        Ok(on_hosts(&[("a", 3), ("b", 1), ("c", 2), ("d", 1)]))
    );
    let placed = rack.place(&request(1, PlacementMode::Unconstrained, 2));
    assert_eq!(placed, Ok(on_hosts(&[("c", 2)])));
}

#[test]
fn slices_count_whole_slices_per_node_and_prefer_the_fuller_on_ties() {
    // Kueue's design example: nodes for 6, 5, 4, 3 and 2 pods, slices of 2 on one host.
    let rack = one_rack(&[
        ("n6", 6000),
        ("n5", 5000),
        ("n4", 4000),
        ("n3", 3000),
        ("n2", 2000),
    ]);
    let sliced = |mode, count| PlacementRequest {
        slices: Some(SliceRequest { level: 1, size: 2 }),
        ..request(0, mode, count)
    };
    assert_eq!(
        rack.place(&sliced(PlacementMode::Required, 12)),
        Ok(on_hosts(&[("n2", 2), ("n4", 4), ("n6", 6)]))
    );
    assert_eq!(
        rack.place(&sliced(PlacementMode::Unconstrained, 10)),
        Ok(on_hosts(&[("n2", 2), ("n3", 2), ("n4", 4), ("n5", 2)]))
    );
}

#[test]
fn slices_stay_whole_within_their_rack() {
    // Racks with room for 3 pods each: slices of 2 fit once per rack.
    let capacity = three_levels(&[
        ("b1", "r1", "n1", 2000),
        ("b1", "r1", "n2", 1000),
        ("b1", "r2", "n3", 3000),
    ]);
    let placed = capacity.place(&PlacementRequest {
        slices: Some(SliceRequest { level: 1, size: 2 }),
        ..request(0, PlacementMode::Required, 4)
    });
    assert_eq!(placed, Ok(on_hosts(&[("n1", 2), ("n3", 2)])));
    let placed = capacity.place(&PlacementRequest {
        slices: Some(SliceRequest { level: 1, size: 2 }),
        ..request(0, PlacementMode::Required, 6)
    });
    assert_eq!(
        placed,
        Err(r#"topology "default" allows to fit only 2 out of 3 slice(s)"#.to_owned())
    );
}

#[test]
fn taking_an_assignment_leaves_its_domains_that_much_less_room() {
    let mut capacity = two_racks();
    let first = capacity
        .place(&request(1, PlacementMode::Required, 4))
        .unwrap();
    assert!(capacity.has_room(&first, &cpu(1000)));
    capacity.take(&first, &cpu(1000));
    // Its nodes are taken, all but 500m of n2; a node the Topology lacks has no room.
    assert!(!capacity.has_room(&first, &cpu(1000)));
    assert!(!capacity.has_room(&on_hosts(&[("n1", 1)]), &cpu(1000)));
    assert!(capacity.has_room(&on_hosts(&[("n2", 1)]), &cpu(500)));
    assert!(!capacity.has_room(&on_hosts(&[("n9", 1)]), &cpu(1000)));
    assert_eq!(
        capacity.place(&request(1, PlacementMode::Required, 4)),
        Err(concat!(
            r#"topology "default" allows to fit only 3 out of 4 pod(s). "#,
            r#"Total nodes: 4; excluded: resource "cpu": 2"#
        )
        .to_owned())
    );
    assert_eq!(
        capacity.place(&request(1, PlacementMode::Required, 3)),
        Ok(on_hosts(&[("n3", 1), ("n4", 2)]))
    );
    // Giving it back, as when its workload is preempted, leaves the Topology as it was.
    capacity.give_back(&first, &cpu(1000));
    assert_eq!(capacity, two_racks());
}

#[test]
fn without_a_hostname_level_domains_are_named_by_every_level() {
    let mut capacity = TopologyCapacity::new("blocks", vec![BLOCK.to_owned(), RACK.to_owned()]);
    // Two nodes in one rack: the rack's capacity is theirs summed.
    capacity.add_node(vec!["b1".to_owned(), "r1".to_owned()], &cpu(1500));
    capacity.add_node(vec!["b1".to_owned(), "r1".to_owned()], &cpu(1500));
    capacity.add_node(vec!["b1".to_owned()], &cpu(8000));
    let placed = capacity.place(&request(1, PlacementMode::Required, 3));
    assert_eq!(
        placed,
        Ok(TopologyAssignment {
            levels: vec![BLOCK.to_owned(), RACK.to_owned()],
            domains: vec![TopologyDomain {
                values: vec!["b1".to_owned(), "r1".to_owned()],
                count: 3,
            }],
        })
    );
}

#[test]
fn the_pod_count_a_node_reports_limits_it() {
    let mut capacity = one_rack(&[]);
    let free = BTreeMap::from([("cpu".to_owned(), 8000), ("pods".to_owned(), 2)]);
    capacity.add_node(vec!["r1".to_owned(), "a".to_owned()], &free);
    assert_eq!(
        capacity.place(&request(0, PlacementMode::Required, 3)),
        Err(r#"topology "default" allows to fit only 2 out of 3 pod(s)"#.to_owned())
    );
}
