//! Flavor assignment: fit, flavor order, node labels, taints, `pods`, PodSets, messages.

use super::super::model::*;
use super::super::{
    Decision, PendingReason, PreemptionReason, SchedulerConfig, Snapshot, SnapshotBuilder,
};
use super::builders::*;
use super::{Scenario, builder, run, snapshot};

fn cq_flavors(name: &str, flavors: &[(&str, Quantity)]) -> ClusterQueue {
    ClusterQueue::new(name).group(group(
        &["cpu"],
        flavors
            .iter()
            .map(|(f, q)| fq(f, vec![rq("cpu", *q)]))
            .collect(),
    ))
}

fn spot_toleration() -> Toleration {
    toleration("spot", "true", Some(TaintEffect::NoSchedule))
}

fn millicores(resource: &str, value: Quantity) -> String {
    if resource == "cpu" {
        format!("{value}m")
    } else {
        value.to_string()
    }
}

#[test]
fn flavor_assignment_scenarios() {
    run(vec![
        Scenario {
            name: "fits in the only flavor",
            snapshot: snapshot(vec![cq_cpu("cq", 10)], vec![]),
            pending: vec![wl("a", "cq", 1, 3)],
            want: vec![admit_cpu("a", "cq", "default", 3)],
        },
        Scenario {
            name: "quota used by admitted workloads",
            snapshot: snapshot(
                vec![cq_cpu("cq", 10)],
                vec![wl("old", "cq", 0, 8).admitted_in("cq", "default", 1)],
            ),
            pending: vec![wl("a", "cq", 1, 3)],
            want: vec![inadmissible(
                "a",
                PendingReason::WaitingForQuota,
                &main_msg(&unused("cpu", "default", 1)),
            )],
        },
        Scenario {
            name: "request above the maximum capacity",
            snapshot: snapshot(vec![cq_cpu("cq", 10)], vec![]),
            pending: vec![wl("a", "cq", 1, 12)],
            want: vec![inadmissible(
                "a",
                PendingReason::ExceedsMaxQuota,
                &main_msg(
                    "insufficient quota for cpu in flavor default, previously considered podsets requests (0) + current podset request (12) > maximum capacity (10)",
                ),
            )],
        },
        Scenario {
            name: "resource the queue does not cover",
            snapshot: snapshot(vec![cq_cpu("cq", 10)], vec![]),
            pending: vec![wl("a", "cq", 1, 0).pod_sets(vec![pod_set("main", 1).req("gpu", 1)])],
            want: vec![inadmissible(
                "a",
                PendingReason::NoMatchingFlavor,
                &main_msg("resource gpu unavailable in ClusterQueue"),
            )],
        },
        Scenario {
            name: "uncovered resource next to a covered one",
            snapshot: snapshot(vec![cq_cpu("cq", 10)], vec![]),
            pending: vec![
                wl("a", "cq", 1, 0).pod_sets(vec![pod_set("main", 1).req("cpu", 1).req("gpu", 1)]),
            ],
            want: vec![inadmissible(
                "a",
                PendingReason::NoMatchingFlavor,
                &main_msg("resource gpu unavailable in ClusterQueue"),
            )],
        },
        Scenario {
            name: "zero request of an uncovered resource is ignored",
            snapshot: snapshot(vec![cq_cpu("cq", 10)], vec![]),
            pending: vec![
                wl("a", "cq", 1, 0).pod_sets(vec![pod_set("main", 1).req("cpu", 2).req("gpu", 0)]),
            ],
            want: vec![admit_cpu("a", "cq", "default", 2)],
        },
        Scenario {
            name: "first flavor full, second flavor used",
            snapshot: snapshot(
                vec![cq_flavors("cq", &[("on-demand", 5), ("default", 10)])],
                vec![wl("old", "cq", 0, 5).admitted_in("cq", "on-demand", 1)],
            ),
            pending: vec![wl("a", "cq", 1, 3)],
            want: vec![admit_cpu("a", "cq", "default", 3)],
        },
        Scenario {
            name: "node selector picks the matching flavor",
            snapshot: snapshot(
                vec![cq_flavors("cq", &[("on-demand", 10), ("spot", 10)])],
                vec![],
            ),
            pending: vec![wl("a", "cq", 1, 0).pod_sets(vec![
                    pod_set("main", 1)
                        .req("cpu", 3)
                        .selector("instance", "spot")
                        .tolerate(spot_toleration()),
                ])],
            want: vec![admit_cpu("a", "cq", "spot", 3)],
        },
        Scenario {
            name: "required node affinity NotIn skips a flavor",
            snapshot: snapshot(
                vec![cq_flavors("cq", &[("on-demand", 10), ("spot", 10)])],
                vec![],
            ),
            pending: vec![wl("a", "cq", 1, 0).pod_sets(vec![
                    pod_set("main", 1)
                        .req("cpu", 3)
                        .affinity(vec![requirement(
                            "instance",
                            NodeSelectorOperator::NotIn,
                            &["on-demand"],
                        )])
                        .tolerate(spot_toleration()),
                ])],
            want: vec![admit_cpu("a", "cq", "spot", 3)],
        },
        Scenario {
            name: "selectors on keys the flavor does not define are ignored",
            snapshot: snapshot(
                vec![cq_flavors("cq", &[("on-demand", 10), ("spot", 10)])],
                vec![],
            ),
            pending: vec![wl("a", "cq", 1, 0).pod_sets(vec![
                pod_set("main", 1)
                    .req("cpu", 3)
                    .selector("zone", "a")
                    .affinity(vec![requirement("zone", NodeSelectorOperator::In, &["a"])]),
            ])],
            want: vec![admit_cpu("a", "cq", "on-demand", 3)],
        },
        Scenario {
            name: "untolerated NoSchedule taint",
            snapshot: snapshot(vec![cq_flavors("cq", &[("spot", 10)])], vec![]),
            pending: vec![wl("a", "cq", 1, 3)],
            want: vec![inadmissible(
                "a",
                PendingReason::NoMatchingFlavor,
                &main_msg("untolerated taint {spot true NoSchedule <nil>} in flavor spot"),
            )],
        },
        Scenario {
            name: "no flavor matches: reasons of every flavor, sorted",
            snapshot: snapshot(
                vec![cq_flavors("cq", &[("spot", 10), ("on-demand", 10)])],
                vec![],
            ),
            pending: vec![wl("a", "cq", 1, 0).pod_sets(vec![
                pod_set("main", 1).req("cpu", 3).selector("instance", "gpu"),
            ])],
            want: vec![inadmissible(
                "a",
                PendingReason::NoMatchingFlavor,
                &main_msg(
                    "flavor on-demand doesn't match node affinity, untolerated taint {spot true NoSchedule <nil>} in flavor spot",
                ),
            )],
        },
        Scenario {
            name: "flavor that does not exist",
            snapshot: snapshot(vec![cq_flavors("cq", &[("ghost", 10)])], vec![]),
            pending: vec![wl("a", "cq", 1, 3)],
            want: vec![inadmissible(
                "a",
                PendingReason::NoMatchingFlavor,
                &main_msg("flavor ghost not found"),
            )],
        },
        Scenario {
            name: "pods resource counted when covered",
            snapshot: snapshot(
                vec![ClusterQueue::new("cq").group(group(
                    &["cpu", "pods"],
                    vec![fq("default", vec![rq("cpu", 10), rq("pods", 3)])],
                ))],
                vec![],
            ),
            pending: vec![wl("a", "cq", 1, 0).pod_sets(vec![pod_set("main", 2).req("cpu", 1)])],
            want: vec![admit(
                "a",
                "cq",
                &[("main", &[("cpu", "default", 2), ("pods", "default", 2)], 2)],
            )],
        },
        Scenario {
            name: "too many pods",
            snapshot: snapshot(
                vec![ClusterQueue::new("cq").group(group(
                    &["cpu", "pods"],
                    vec![fq("default", vec![rq("cpu", 10), rq("pods", 3)])],
                ))],
                vec![],
            ),
            pending: vec![wl("a", "cq", 1, 0).pod_sets(vec![pod_set("main", 4).req("cpu", 1)])],
            want: vec![inadmissible(
                "a",
                PendingReason::ExceedsMaxQuota,
                &main_msg(
                    "insufficient quota for pods in flavor default, previously considered podsets requests (0) + current podset request (4) > maximum capacity (3)",
                ),
            )],
        },
        Scenario {
            name: "PodSets add up in one flavor",
            snapshot: snapshot(vec![cq_cpu("cq", 10)], vec![]),
            pending: vec![wl("a", "cq", 1, 0).pod_sets(vec![
                pod_set("driver", 1).req("cpu", 4),
                pod_set("workers", 2).req("cpu", 3),
            ])],
            want: vec![admit(
                "a",
                "cq",
                &[
                    ("driver", &[("cpu", "default", 4)], 1),
                    ("workers", &[("cpu", "default", 6)], 2),
                ],
            )],
        },
        Scenario {
            name: "later PodSet exceeds what earlier ones left",
            snapshot: snapshot(vec![cq_cpu("cq", 9)], vec![]),
            pending: vec![wl("a", "cq", 1, 0).pod_sets(vec![
                pod_set("driver", 1).req("cpu", 4),
                pod_set("workers", 2).req("cpu", 3),
            ])],
            want: vec![inadmissible(
                "a",
                PendingReason::ExceedsMaxQuota,
                "couldn't assign flavors to pod set workers: insufficient quota for cpu in flavor default, previously considered podsets requests (4) + current podset request (6) > maximum capacity (9)",
            )],
        },
        Scenario {
            name: "resource groups pick flavors independently",
            snapshot: snapshot(
                vec![
                    ClusterQueue::new("cq")
                        .group(group(
                            &["cpu", "memory"],
                            vec![fq("default", vec![rq("cpu", 10), rq("memory", 100)])],
                        ))
                        .group(group(
                            &["gpu"],
                            vec![
                                fq("on-demand", vec![rq("gpu", 2)]),
                                fq("spot", vec![rq("gpu", 8)]),
                            ],
                        )),
                ],
                vec![],
            ),
            pending: vec![wl("a", "cq", 1, 0).pod_sets(vec![
                    pod_set("main", 1)
                        .req("cpu", 2)
                        .req("memory", 10)
                        .req("gpu", 4)
                        .tolerate(spot_toleration()),
                ])],
            want: vec![admit(
                "a",
                "cq",
                &[(
                    "main",
                    &[
                        ("cpu", "default", 2),
                        ("gpu", "spot", 4),
                        ("memory", "default", 10),
                    ],
                    1,
                )],
            )],
        },
        Scenario {
            name: "quantities rendered by the caller's formatter",
            snapshot: builder()
                .config(SchedulerConfig {
                    format_quantity: millicores,
                    ..SchedulerConfig::default()
                })
                .cluster_queue(cq_cpu("cq", 10_000))
                .admitted(wl("old", "cq", 0, 8_000).admitted_in("cq", "default", 1))
                .build(),
            pending: vec![wl("a", "cq", 1, 3_000)],
            want: vec![inadmissible(
                "a",
                PendingReason::WaitingForQuota,
                &main_msg("insufficient unused quota for cpu in flavor default, 1000m more needed"),
            )],
        },
    ]);
}

#[test]
fn flavor_tolerations_and_soft_taints() {
    let tolerant = flavor("tolerant")
        .taint("dedicated", "ml", TaintEffect::NoExecute)
        .tolerate(Toleration {
            key: "dedicated".to_owned(),
            operator: TolerationOperator::Exists,
            value: String::new(),
            effect: None,
        });
    let soft = flavor("soft").taint("busy", "", TaintEffect::PreferNoSchedule);
    let hard = flavor("hard").taint("busy", "", TaintEffect::NoSchedule);
    let snapshot = Snapshot::builder(ts(100))
        .flavor(tolerant)
        .flavor(soft)
        .flavor(hard)
        .cluster_queue(cq_flavors("tolerant-cq", &[("tolerant", 10)]))
        .cluster_queue(cq_flavors("soft-cq", &[("soft", 10)]))
        .cluster_queue(cq_flavors("hard-cq", &[("hard", 10)]))
        .build();
    run(vec![Scenario {
        name: "flavor's own tolerations and PreferNoSchedule taints do not block",
        snapshot,
        pending: vec![
            wl("a", "tolerant-cq", 1, 3),
            wl("b", "soft-cq", 1, 3),
            wl("c", "hard-cq", 1, 3),
        ],
        want: vec![
            inadmissible(
                "c",
                PendingReason::NoMatchingFlavor,
                &main_msg("untolerated taint {busy  NoSchedule <nil>} in flavor hard"),
            ),
            admit_cpu("b", "soft-cq", "soft", 3),
            admit_cpu("a", "tolerant-cq", "tolerant", 3),
        ],
    }]);
}

/// A snapshot with the standard flavors plus `tas` (a Topology of `block` and `rack`) and
/// `tas-unknown` (its Topology not known yet), and these queues.
fn topology_snapshot(cluster_queues: Vec<ClusterQueue>) -> Snapshot {
    let tas = |name: &str, levels: &[&str]| ResourceFlavor {
        topology_levels: Some(levels.iter().map(|level| (*level).to_owned()).collect()),
        ..flavor(name)
    };
    cluster_queues
        .into_iter()
        .fold(
            builder()
                .flavor(tas("tas", &["block", "rack"]))
                .flavor(tas("tas-unknown", &[])),
            SnapshotBuilder::cluster_queue,
        )
        .build()
}

fn asking(level: TopologyLevel, slices: &[&str]) -> Workload {
    wl("a", "cq", 1, 3).pod_sets(vec![PodSet {
        topology: Some(TopologyRequest {
            level,
            mode: PlacementMode::Required,
            slice_levels: slices.iter().map(|level| (*level).to_owned()).collect(),
            slice_size: None,
        }),
        ..pod_set("main", 1).req("cpu", 3)
    }])
}

#[test]
fn topology_requests_pick_flavors_that_have_the_levels() {
    let rack = || TopologyLevel::Named("rack".to_owned());
    let mixed = || cq_flavors("cq", &[("default", 10), ("tas", 10)]);
    run(vec![
        Scenario {
            name: "a required level skips the flavor without topology",
            snapshot: topology_snapshot(vec![mixed()]),
            pending: vec![asking(rack(), &[])],
            want: vec![admit_cpu("a", "cq", "tas", 3)],
        },
        Scenario {
            name: "no request: the topology flavor is not for it",
            snapshot: topology_snapshot(vec![cq_flavors("cq", &[("tas", 10), ("default", 10)])]),
            pending: vec![wl("a", "cq", 1, 3)],
            want: vec![admit_cpu("a", "cq", "default", 3)],
        },
        Scenario {
            name: "a queue of topology flavors only implies the request",
            snapshot: topology_snapshot(vec![cq_flavors("cq", &[("tas", 10)])]),
            pending: vec![wl("a", "cq", 1, 3)],
            want: vec![admit_cpu("a", "cq", "tas", 3)],
        },
        Scenario {
            name: "a level the Topology lacks, a slice level it has",
            snapshot: topology_snapshot(vec![mixed()]),
            pending: vec![asking(TopologyLevel::Named("zone".to_owned()), &["rack"])],
            want: vec![inadmissible(
                "a",
                PendingReason::NoMatchingFlavor,
                &main_msg(
                    "Flavor \"default\" does not support TopologyAwareScheduling, Flavor \"tas\" does not contain the requested level",
                ),
            )],
        },
        Scenario {
            name: "a slice level the Topology lacks",
            snapshot: topology_snapshot(vec![cq_flavors("cq", &[("tas", 10)])]),
            pending: vec![asking(TopologyLevel::Highest, &["block", "host"])],
            want: vec![inadmissible(
                "a",
                PendingReason::NoMatchingFlavor,
                &main_msg("Flavor \"tas\" does not contain the requested level"),
            )],
        },
        Scenario {
            name: "unconstrained, the Topology not known yet",
            snapshot: topology_snapshot(vec![cq_flavors(
                "cq",
                &[("tas-unknown", 10), ("tas", 10)],
            )]),
            pending: vec![asking(TopologyLevel::Lowest, &[])],
            want: vec![admit_cpu("a", "cq", "tas", 3)],
        },
        Scenario {
            name: "no request in a mixed queue whose other flavor does not match",
            snapshot: topology_snapshot(vec![cq_flavors("cq", &[("on-demand", 10), ("tas", 10)])]),
            pending: vec![wl("a", "cq", 1, 3).pod_sets(vec![
                pod_set("main", 1).req("cpu", 3).selector("instance", "gpu"),
            ])],
            want: vec![inadmissible(
                "a",
                PendingReason::NoMatchingFlavor,
                &main_msg(
                    "Flavor \"tas\" supports only TopologyAwareScheduling, flavor on-demand doesn't match node affinity",
                ),
            )],
        },
    ]);
}

/// The `tas` flavor with known nodes: rack r1 has room for 4 CPUs, rack r2 for 3, in block b1.
fn placing_snapshot(cluster_queues: Vec<ClusterQueue>, admitted: Vec<Workload>) -> Snapshot {
    let mut capacity =
        crate::topology::TopologyCapacity::new("t", vec!["block".to_owned(), "rack".to_owned()]);
    for (rack, cpu) in [("r1", 4), ("r2", 3)] {
        let free = std::collections::BTreeMap::from([("cpu".to_owned(), cpu)]);
        capacity.add_node(vec!["b1".to_owned(), rack.to_owned()], &free);
    }
    let with_queues = cluster_queues.into_iter().fold(
        builder().flavor(ResourceFlavor {
            topology_levels: Some(vec!["block".to_owned(), "rack".to_owned()]),
            ..flavor("tas")
        }),
        SnapshotBuilder::cluster_queue,
    );
    admitted
        .into_iter()
        .fold(with_queues, SnapshotBuilder::admitted)
        .topology("tas", capacity)
        .build()
}

/// A Workload created at `created` asking for `pods` pods of 1 CPU in one rack.
fn one_rack(name: &str, created: i64, pods: i32) -> Workload {
    wl(name, "cq", created, 1).pod_sets(vec![PodSet {
        topology: Some(TopologyRequest {
            level: TopologyLevel::Named("rack".to_owned()),
            mode: PlacementMode::Required,
            slice_levels: Vec::new(),
            slice_size: None,
        }),
        ..pod_set("main", pods).req("cpu", 1)
    }])
}

/// `admit_cpu` with the PodSet placed in racks of block b1.
fn admit_in_racks(name: &str, racks: &[(&str, i32)]) -> Decision {
    let pods = racks.iter().map(|(_, count)| count).sum();
    let mut decision = admit(
        name,
        "cq",
        &[("main", &[("cpu", "tas", Quantity::from(pods))], pods)],
    );
    if let Decision::Admit { admission, .. } = &mut decision {
        admission.pod_set_assignments[0].topology = Some(TopologyAssignment {
            levels: vec!["block".to_owned(), "rack".to_owned()],
            domains: racks
                .iter()
                .map(|(rack, count)| TopologyDomain {
                    values: vec!["b1".to_owned(), (*rack).to_owned()],
                    count: *count,
                })
                .collect(),
        });
    }
    decision
}

/// Four pods of one rack, pending while rack r1 is taken and r2 holds three: r1 would hold
/// them were its holder gone, and the queue preempts nothing, so they wait.
fn four_pods_wait_for_a_rack(name: &str) -> Decision {
    inadmissible(
        name,
        PendingReason::WaitingForQuota,
        &main_msg(concat!(
            r#"topology "t" allows to fit only 3 out of 4 pod(s). "#,
            r#"Total nodes: 2; excluded: resource "cpu": 1"#
        )),
    )
}

#[test]
fn topology_capacity_places_pods_and_is_used_up_within_the_cycle() {
    let queue = || cq_flavors("cq", &[("tas", 20)]);
    run(vec![
        Scenario {
            name: "the only rack with room for all, then the rack left is too small",
            snapshot: placing_snapshot(vec![queue()], Vec::new()),
            pending: vec![
                one_rack("a", 1, 4),
                one_rack("b", 2, 4),
                one_rack("c", 3, 3),
            ],
            want: vec![
                admit_in_racks("a", &[("r1", 4)]),
                four_pods_wait_for_a_rack("b"),
                admit_in_racks("c", &[("r2", 3)]),
            ],
        },
        Scenario {
            name: "what admitted workloads were placed on is not free",
            snapshot: placing_snapshot(
                vec![queue()],
                vec![{
                    let mut holder = one_rack("held", 0, 3);
                    let Decision::Admit { admission, .. } = admit_in_racks("held", &[("r1", 3)])
                    else {
                        unreachable!()
                    };
                    holder.admission = Some(admission);
                    holder
                }],
            ),
            pending: vec![one_rack("a", 1, 3)],
            want: vec![admit_in_racks("a", &[("r2", 3)])],
        },
    ]);
}

#[test]
fn a_workloads_later_pod_set_is_placed_around_its_earlier_ones() {
    // Two PodSets of three pods, each required in a rack: the first takes the tightest rack
    // (r2, room for 3); the second must not be placed there again.
    let rack = |name: &str| PodSet {
        topology: Some(TopologyRequest {
            level: TopologyLevel::Named("rack".to_owned()),
            mode: PlacementMode::Required,
            slice_levels: Vec::new(),
            slice_size: None,
        }),
        ..pod_set(name, 3).req("cpu", 1)
    };
    let mut want = admit(
        "a",
        "cq",
        &[
            ("first", &[("cpu", "tas", 3)], 3),
            ("second", &[("cpu", "tas", 3)], 3),
        ],
    );
    if let Decision::Admit { admission, .. } = &mut want {
        for (assignment, rack) in admission.pod_set_assignments.iter_mut().zip(["r2", "r1"]) {
            assignment.topology = Some(TopologyAssignment {
                levels: vec!["block".to_owned(), "rack".to_owned()],
                domains: vec![TopologyDomain {
                    values: vec!["b1".to_owned(), rack.to_owned()],
                    count: 3,
                }],
            });
        }
    }
    run(vec![Scenario {
        name: "two PodSets, two racks",
        snapshot: placing_snapshot(vec![cq_flavors("cq", &[("tas", 20)])], Vec::new()),
        pending: vec![wl("a", "cq", 1, 1).pod_sets(vec![rack("first"), rack("second")])],
        want: vec![want],
    }]);
}

/// `high` preempts `low` within queue `cq`, for the reason `message` gives.
fn high_preempts_low(message: &str) -> Decision {
    preempt(
        "high",
        vec![victim(
            "low",
            "cq",
            PreemptionReason::InClusterQueue,
            "high",
            ("/cq", "/cq"),
        )],
        &main_msg(&format!(
            "{message}. Pending the preemption of 1 workload(s)"
        )),
    )
}

#[test]
fn a_topology_request_preempts_lower_priority_workloads_for_quota() {
    // Placement waits for the victims to be gone; the decision to preempt does not.
    let queue = cq_flavors("cq", &[("tas", 4)]).within(PreemptionPolicy::LowerPriority);
    let low = wl("low", "cq", 0, 4).admitted_in("cq", "tas", 1);
    run(vec![Scenario {
        name: "quota held by a lower priority workload",
        snapshot: placing_snapshot(vec![queue], vec![low]),
        pending: vec![one_rack("high", 5, 3).priority(10)],
        want: vec![high_preempts_low(
            "insufficient unused quota for cpu in flavor tas, 3 more needed",
        )],
    }]);
}

/// `one_rack` admitted at `created` with its pods placed in `racks` of block b1.
fn placed_in_racks(name: &str, created: i64, racks: &[(&str, i32)]) -> Workload {
    let pods = racks.iter().map(|(_, count)| count).sum();
    let mut workload = one_rack(name, created, pods);
    let Decision::Admit { admission, .. } = admit_in_racks(name, racks) else {
        unreachable!("admit_in_racks admits")
    };
    workload.admission = Some(admission);
    workload.quota_reserved_at = Some(ts(created));
    workload
}

#[test]
fn a_topology_request_preempts_what_takes_its_place_where_the_quota_fits() {
    // Rack r1 holds 4 pods when empty and r2 3; `low` takes 2 of r1, `newer` 1 of r2. Four
    // pods in one rack fit only once `low` is gone: `newer`, tried first as the most recently
    // admitted, frees a rack too small and is put back.
    let queue = || cq_flavors("cq", &[("tas", 20)]).within(PreemptionPolicy::LowerPriority);
    let admitted = || {
        vec![
            placed_in_racks("low", 1, &[("r1", 2)]),
            placed_in_racks("newer", 2, &[("r2", 1)]),
        ]
    };
    run(vec![
        Scenario {
            name: "four pods in one rack",
            snapshot: placing_snapshot(vec![queue()], admitted()),
            pending: vec![one_rack("high", 5, 4).priority(10)],
            want: vec![high_preempts_low(
                r#"topology "t" allows to fit only 2 out of 4 pod(s)"#,
            )],
        },
        Scenario {
            name: "five pods in one rack, which no rack holds even empty",
            snapshot: placing_snapshot(vec![queue()], admitted()),
            pending: vec![one_rack("high", 5, 5).priority(10)],
            want: vec![inadmissible(
                "high",
                PendingReason::TopologyPlacementFailed,
                &main_msg(r#"topology "t" allows to fit only 2 out of 5 pod(s)"#),
            )],
        },
        Scenario {
            name: "preemption for quota, in a rack that no rack holds even empty",
            snapshot: placing_snapshot(
                vec![cq_flavors("cq", &[("tas", 5)]).within(PreemptionPolicy::LowerPriority)],
                admitted(),
            ),
            pending: vec![one_rack("high", 5, 5).priority(10)],
            want: vec![inadmissible(
                "high",
                PendingReason::TopologyPlacementFailed,
                &main_msg(concat!(
                    "insufficient unused quota for cpu in flavor tas, 3 more needed, ",
                    r#"topology "t" allows to fit only 4 out of 5 pod(s)"#
                )),
            )],
        },
        Scenario {
            name: "the same pods, of no higher priority",
            snapshot: placing_snapshot(vec![queue()], admitted()),
            pending: vec![one_rack("high", 5, 4)],
            want: vec![inadmissible(
                "high",
                PendingReason::WaitingForQuota,
                &main_msg(r#"topology "t" allows to fit only 2 out of 4 pod(s)"#),
            )],
        },
    ]);
}

#[test]
fn a_topology_request_borrows_from_the_cohort() {
    run(vec![Scenario {
        name: "three pods on a nominal quota of one",
        snapshot: placing_snapshot(
            vec![
                cq_flavors("cq", &[("tas", 1)]).cohort("all"),
                cq_flavors("lender", &[("tas", 10)]).cohort("all"),
            ],
            Vec::new(),
        ),
        pending: vec![one_rack("a", 1, 3)],
        want: vec![admit_in_racks("a", &[("r2", 3)])],
    }]);
}

/// `one_rack` in ClusterQueue `cq2`.
fn one_rack_in_cq2(name: &str, created: i64, pods: i32) -> Workload {
    Workload {
        cluster_queue: "cq2".to_owned(),
        ..one_rack(name, created, pods)
    }
}

/// `admit_in_racks` to ClusterQueue `cq2`.
fn admit_in_racks_of_cq2(name: &str, racks: &[(&str, i32)]) -> Decision {
    let mut decision = admit_in_racks(name, racks);
    if let Decision::Admit { admission, .. } = &mut decision {
        admission.cluster_queue = "cq2".to_owned();
    }
    decision
}

#[test]
fn heads_of_two_queues_are_not_placed_on_the_same_domain_in_one_cycle() {
    // Both heads are assigned at the start of the round, against the same free capacity; the
    // second is assigned again once the first has taken its rack.
    let queues = || {
        vec![
            cq_flavors("cq", &[("tas", 20)]),
            cq_flavors("cq2", &[("tas", 20)]),
        ]
    };
    run(vec![
        Scenario {
            name: "the tightest rack for both, the other rack holds the second",
            snapshot: placing_snapshot(queues(), Vec::new()),
            pending: vec![one_rack("a", 1, 3), one_rack_in_cq2("b", 2, 3)],
            want: vec![
                admit_in_racks("a", &[("r2", 3)]),
                admit_in_racks_of_cq2("b", &[("r1", 3)]),
            ],
        },
        Scenario {
            name: "the only rack for both",
            snapshot: placing_snapshot(queues(), Vec::new()),
            pending: vec![one_rack("a", 1, 4), one_rack_in_cq2("b", 2, 4)],
            want: vec![
                admit_in_racks("a", &[("r1", 4)]),
                four_pods_wait_for_a_rack("b"),
            ],
        },
    ]);
}

#[test]
fn a_preemptor_holds_the_places_it_waits_for_within_the_cycle() {
    // `low` takes 2 pods of r1 (4 when empty), `newer` 2 of r2 (3): `high` preempts `low` for
    // r1. `c`, of another ClusterQueue, was assigned r1's 2 free pods at the start of the round;
    // it is assigned again around `high`'s claim, and r2 is left with room for one pod.
    let queues = vec![
        cq_flavors("cq", &[("tas", 20)]).within(PreemptionPolicy::LowerPriority),
        cq_flavors("cq2", &[("tas", 20)]),
    ];
    let admitted = vec![
        placed_in_racks("low", 1, &[("r1", 2)]),
        placed_in_racks("newer", 2, &[("r2", 2)]),
    ];
    run(vec![Scenario {
        name: "a head of another queue, assigned the rack the preemptor frees",
        snapshot: placing_snapshot(queues, admitted),
        pending: vec![
            one_rack("high", 5, 4).priority(10),
            one_rack_in_cq2("c", 6, 2),
        ],
        want: vec![
            high_preempts_low(r#"topology "t" allows to fit only 2 out of 4 pod(s)"#),
            inadmissible(
                "c",
                PendingReason::WaitingForQuota,
                &main_msg(concat!(
                    r#"topology "t" allows to fit only 1 out of 2 pod(s). "#,
                    r#"Total nodes: 2; excluded: resource "cpu": 1"#
                )),
            ),
        ],
    }]);
}
