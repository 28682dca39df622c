//! Queue order, StrictFIFO vs BestEffortFIFO, parking and requeueing, equivalence, backoff,
//! namespace selection, stop policies, inactive queues, cohort cycles, partial admission.

use std::collections::BTreeMap;
use std::sync::Arc;

use pretty_assertions::assert_eq;

use super::super::model::*;
use super::super::{
    Decision, EvictionReason, PendingCounts, PendingReason, Queues, RequeueScope, SchedulerConfig,
    Snapshot, SnapshotBuilder, cycle,
};
use super::builders::*;
use super::{Scenario, builder, run, snapshot};

fn waiting(name: &str, more: Quantity) -> Decision {
    inadmissible(
        name,
        PendingReason::WaitingForQuota,
        &main_msg(&unused("cpu", "default", more)),
    )
}

fn suspended(name: &str, message: &str) -> Decision {
    inadmissible(name, PendingReason::Suspended, message)
}

fn team_selector() -> LabelSelector {
    LabelSelector {
        match_labels: BTreeMap::from([("team".to_owned(), "ml".to_owned())]),
        ..LabelSelector::default()
    }
}

#[test]
fn queueing_scenarios() {
    let half_used = vec![wl("old", "cq", 0, 5).admitted_in("cq", "default", 1)];
    run(vec![
        Scenario {
            name: "many admissions of one queue in one cycle, never above quota",
            snapshot: snapshot(vec![cq_cpu("cq", 10)], vec![]),
            pending: (1..=5).map(|i| wl(&format!("w{i}"), "cq", i, 3)).collect(),
            want: vec![
                admit_cpu("w1", "cq", "default", 3),
                admit_cpu("w2", "cq", "default", 3),
                admit_cpu("w3", "cq", "default", 3),
                waiting("w4", 2),
                waiting("w5", 2),
            ],
        },
        Scenario {
            name: "higher priority first, then older",
            snapshot: snapshot(vec![cq_cpu("cq", 5)], vec![]),
            pending: vec![
                wl("low-old", "cq", 1, 4),
                wl("high-new", "cq", 3, 4).priority(10),
                wl("high-old", "cq", 2, 1).priority(10),
            ],
            want: vec![
                admit_cpu("high-old", "cq", "default", 1),
                admit_cpu("high-new", "cq", "default", 4),
                waiting("low-old", 4),
            ],
        },
        Scenario {
            name: "StrictFIFO: an inadmissible head blocks the queue",
            snapshot: snapshot(vec![cq_cpu("cq", 10).strict()], half_used.clone()),
            pending: vec![wl("big", "cq", 1, 6), wl("small", "cq", 2, 2)],
            want: vec![waiting("big", 1)],
        },
        Scenario {
            name: "BestEffortFIFO: the next workload is tried",
            snapshot: snapshot(vec![cq_cpu("cq", 10)], half_used.clone()),
            pending: vec![wl("big", "cq", 1, 6), wl("small", "cq", 2, 2)],
            want: vec![waiting("big", 1), admit_cpu("small", "cq", "default", 2)],
        },
        Scenario {
            name: "StrictFIFO: a namespace mismatch does not block",
            snapshot: snapshot(
                vec![cq_cpu("cq", 10).strict().namespaces(Some(team_selector()))],
                vec![],
            ),
            pending: vec![
                wl("stranger", "cq", 1, 1),
                wl("member", "cq", 2, 1).namespace_label("team", "ml"),
            ],
            want: vec![
                inadmissible(
                    "stranger",
                    PendingReason::Misconfigured,
                    "workload namespace doesn't match ClusterQueue selector",
                ),
                admit_cpu("member", "cq", "default", 1),
            ],
        },
        Scenario {
            name: "a nil namespace selector selects nothing",
            snapshot: snapshot(vec![cq_cpu("cq", 10).namespaces(None)], vec![]),
            pending: vec![wl("a", "cq", 1, 1).namespace_label("team", "ml")],
            want: vec![inadmissible(
                "a",
                PendingReason::Misconfigured,
                "workload namespace doesn't match ClusterQueue selector",
            )],
        },
        Scenario {
            name: "equivalent workloads are evaluated once per cycle",
            // b1 takes cohort quota in the first round; evaluating e2 afterwards would report
            // 5 more needed, the verdict remembered from e1 says 2.
            snapshot: snapshot(
                vec![
                    cq_cpu("cq-a", 2).cohort("all"),
                    cq_cpu("cq-b", 10).cohort("all"),
                ],
                vec![wl("b0", "cq-b", 0, 6).admitted_in("cq-b", "default", 1)],
            ),
            pending: vec![
                wl("e1", "cq-a", 1, 8),
                wl("e2", "cq-a", 2, 8),
                wl("b1", "cq-b", 1, 3),
            ],
            want: vec![
                waiting("e1", 2),
                admit_cpu("b1", "cq-b", "default", 3),
                waiting("e2", 2),
            ],
        },
        Scenario {
            name: "different shapes are evaluated separately",
            snapshot: snapshot(
                vec![cq_cpu("cq", 10)],
                vec![wl("old", "cq", 0, 9).admitted_in("cq", "default", 1)],
            ),
            pending: vec![wl("e1", "cq", 1, 3), wl("e2", "cq", 2, 4)],
            want: vec![waiting("e1", 2), waiting("e2", 3)],
        },
        Scenario {
            name: "shapes that differ only in their namespace's labels are evaluated separately",
            snapshot: snapshot(
                vec![cq_cpu("cq", 10).namespaces(Some(team_selector()))],
                vec![wl("old", "cq", 0, 9).admitted_in("cq", "default", 1)],
            ),
            pending: vec![
                wl("e1", "cq", 1, 3).namespace_label("team", "ml"),
                wl("e2", "cq", 2, 3).namespace_label("team", "web"),
            ],
            want: vec![
                waiting("e1", 2),
                inadmissible(
                    "e2",
                    PendingReason::Misconfigured,
                    "workload namespace doesn't match ClusterQueue selector",
                ),
            ],
        },
        Scenario {
            name: "Hold: no admissions, admitted workloads keep running",
            snapshot: snapshot(
                vec![cq_cpu("cq", 10).stop(StopPolicy::Hold)],
                half_used.clone(),
            ),
            pending: vec![wl("a", "cq", 1, 1)],
            want: vec![suspended("a", "ClusterQueue cq is stopped")],
        },
        Scenario {
            name: "HoldAndDrain: admitted workloads are evicted",
            snapshot: snapshot(
                vec![cq_cpu("cq", 10).stop(StopPolicy::HoldAndDrain)],
                vec![
                    wl("old", "cq", 0, 5).admitted_in("cq", "default", 1),
                    wl("leaving", "cq", 0, 1)
                        .admitted_in("cq", "default", 1)
                        .evicted(),
                ],
            ),
            pending: vec![wl("a", "cq", 1, 1)],
            want: vec![
                Decision::Evict {
                    workload: "ns/old".to_owned(),
                    reason: EvictionReason::ClusterQueueStopped,
                    message: "The ClusterQueue is stopped".to_owned(),
                },
                suspended("a", "ClusterQueue cq is stopped"),
            ],
        },
        Scenario {
            name: "inactive queue admits nothing",
            snapshot: snapshot(
                vec![ClusterQueue {
                    active: false,
                    ..cq_cpu("cq", 10)
                }],
                vec![],
            ),
            pending: vec![wl("a", "cq", 1, 1)],
            want: vec![suspended("a", "ClusterQueue cq is inactive")],
        },
        Scenario {
            name: "queue that does not exist",
            snapshot: snapshot(vec![], vec![]),
            pending: vec![wl("a", "ghost", 1, 1)],
            want: vec![inadmissible(
                "a",
                PendingReason::Misconfigured,
                "ClusterQueue ghost doesn't exist",
            )],
        },
        Scenario {
            name: "queues under a cohort cycle are inactive",
            snapshot: builder()
                .cohort(Cohort {
                    parent: Some("c2".to_owned()),
                    ..Cohort::new("c1")
                })
                .cohort(Cohort {
                    parent: Some("c1".to_owned()),
                    ..Cohort::new("c2")
                })
                .cohort(Cohort {
                    parent: Some("c1".to_owned()),
                    ..Cohort::new("below")
                })
                .cluster_queue(cq_cpu("in-cycle", 10).cohort("c1"))
                .cluster_queue(cq_cpu("under-cycle", 10).cohort("below"))
                .cluster_queue(cq_cpu("fine", 10).cohort("elsewhere"))
                .build(),
            pending: vec![
                wl("a", "in-cycle", 1, 1),
                wl("b", "under-cycle", 1, 1),
                wl("c", "fine", 1, 1),
            ],
            want: vec![
                suspended("a", "ClusterQueue in-cycle is inactive"),
                suspended("b", "ClusterQueue under-cycle is inactive"),
                admit_cpu("c", "fine", "default", 1),
            ],
        },
        Scenario {
            name: "partial admission down to what fits",
            snapshot: snapshot(vec![cq_cpu("cq", 6)], vec![]),
            pending: vec![
                wl("a", "cq", 1, 0).pod_sets(vec![pod_set("main", 10).req("cpu", 1).min(4)]),
            ],
            want: vec![admit("a", "cq", &[("main", &[("cpu", "default", 6)], 6)])],
        },
        Scenario {
            name: "partial admission never below minCount",
            snapshot: snapshot(vec![cq_cpu("cq", 6)], vec![]),
            pending: vec![
                wl("a", "cq", 1, 0).pod_sets(vec![pod_set("main", 10).req("cpu", 1).min(8)]),
            ],
            want: vec![inadmissible(
                "a",
                PendingReason::ExceedsMaxQuota,
                &main_msg(
                    "insufficient quota for cpu in flavor default, previously considered podsets requests (0) + current podset request (10) > maximum capacity (6)",
                ),
            )],
        },
        Scenario {
            name: "partial admission disabled",
            snapshot: builder()
                .config(SchedulerConfig {
                    partial_admission: false,
                    ..SchedulerConfig::default()
                })
                .cluster_queue(cq_cpu("cq", 6))
                .build(),
            pending: vec![
                wl("a", "cq", 1, 0).pod_sets(vec![pod_set("main", 10).req("cpu", 1).min(4)]),
            ],
            want: vec![inadmissible(
                "a",
                PendingReason::ExceedsMaxQuota,
                &main_msg(
                    "insufficient quota for cpu in flavor default, previously considered podsets requests (0) + current podset request (10) > maximum capacity (6)",
                ),
            )],
        },
    ]);
}

#[test]
fn parked_workloads_wait_for_a_change() {
    let busy = snapshot(
        vec![cq_cpu("cq", 10)],
        vec![wl("old", "cq", 0, 5).admitted_in("cq", "default", 1)],
    );
    let mut queues = Queues::new();
    queues.push(wl("big", "cq", 1, 6));
    queues.push(wl("small", "cq", 2, 2));

    assert_eq!(
        cycle(&busy, &mut queues),
        vec![waiting("big", 1), admit_cpu("small", "cq", "default", 2)]
    );
    assert_eq!(
        queues.pending("cq"),
        PendingCounts {
            active: 0,
            inadmissible: 1
        }
    );
    assert!(queues.is_inadmissible("ns/big"));
    assert!(!queues.is_inadmissible("ns/small"));
    let mut walked = Vec::new();
    queues.for_each_pending(|workload, parked| walked.push((workload.key.clone(), parked)));
    assert_eq!(
        walked,
        vec![("ns/big".to_owned(), true)],
        "the admitted one left"
    );
    assert!(!queues.has_work(ts(100)));
    assert_eq!(cycle(&busy, &mut queues), vec![]);

    // Pushing the same workload again (e.g. after a status update) keeps it parked.
    queues.push(wl("big", "cq", 1, 6));
    assert_eq!(cycle(&busy, &mut queues), vec![]);
    assert!(queues.is_inadmissible("ns/big"));

    // "old" finished: the caller rebuilds the snapshot and requeues the queue's cohort tree.
    let freed = snapshot(
        vec![cq_cpu("cq", 10)],
        vec![wl("small", "cq", 2, 2).admitted_in("cq", "default", 3)],
    );
    queues.requeue_inadmissible(&freed, RequeueScope::ClusterQueue("cq"));
    assert!(!queues.is_inadmissible("ns/big"));
    let mut walked = Vec::new();
    queues.for_each_pending(|workload, parked| walked.push((workload.key.clone(), parked)));
    assert_eq!(walked, vec![("ns/big".to_owned(), false)]);
    assert!(queues.has_work(ts(100)));
    assert_eq!(
        cycle(&freed, &mut queues),
        vec![admit_cpu("big", "cq", "default", 6)]
    );
    assert_eq!(queues.pending("cq"), PendingCounts::default());
    assert!(!queues.contains("ns/big"));
}

#[test]
fn retained_workloads_stay_where_they_were_and_the_rest_are_forgotten() {
    let busy = snapshot(
        vec![cq_cpu("cq", 10)],
        vec![wl("old", "cq", 0, 5).admitted_in("cq", "default", 1)],
    );
    let mut queues = Queues::new();
    queues.push(wl("big", "cq", 1, 6));
    queues.push(wl("gone", "cq", 2, 6));
    queues.push(wl("next", "cq", 3, 4));
    assert_eq!(
        cycle(&busy, &mut queues),
        vec![
            waiting("big", 1),
            waiting("gone", 1),
            admit_cpu("next", "cq", "default", 4)
        ]
    );

    queues.retain(|key| key != "ns/gone");
    assert!(queues.is_inadmissible("ns/big"), "parked stays parked");
    assert!(!queues.contains("ns/gone"));
    assert_eq!(
        queues.pending("cq"),
        PendingCounts {
            active: 0,
            inadmissible: 1
        }
    );
}

#[test]
fn strict_fifo_head_stays_blocked_until_a_change() {
    let busy = snapshot(
        vec![cq_cpu("cq", 10).strict()],
        vec![wl("old", "cq", 0, 5).admitted_in("cq", "default", 1)],
    );
    let mut queues = Queues::new();
    queues.push(wl("big", "cq", 1, 6));
    queues.push(wl("small", "cq", 2, 2));
    assert_eq!(cycle(&busy, &mut queues), vec![waiting("big", 1)]);
    assert_eq!(
        queues.pending("cq"),
        PendingCounts {
            active: 2,
            inadmissible: 0
        }
    );
    assert!(!queues.has_work(ts(100)));
    assert_eq!(cycle(&busy, &mut queues), vec![]);

    // A higher priority workload becomes the head and is evaluated; the old head blocks again.
    queues.push(wl("urgent", "cq", 3, 1).priority(5));
    assert_eq!(
        cycle(&busy, &mut queues),
        vec![admit_cpu("urgent", "cq", "default", 1), waiting("big", 2)]
    );

    // Requeueing unblocks the head; with quota released it is admitted, then "small".
    let freed = snapshot(vec![cq_cpu("cq", 10).strict()], vec![]);
    queues.requeue_inadmissible(&freed, RequeueScope::All);
    assert_eq!(
        cycle(&freed, &mut queues),
        vec![
            admit_cpu("big", "cq", "default", 6),
            admit_cpu("small", "cq", "default", 2)
        ]
    );
}

#[test]
fn equivalent_workloads_pushed_later_reuse_the_verdict_until_requeued() {
    let busy = snapshot(
        vec![cq_cpu("cq", 10)],
        vec![wl("old", "cq", 0, 9).admitted_in("cq", "default", 1)],
    );
    let mut queues = Queues::new();
    queues.push(wl("e1", "cq", 1, 3));
    assert_eq!(cycle(&busy, &mut queues), vec![waiting("e1", 2)]);

    // Evaluating e2 now would say 2 more needed too; with less usage it would still be the
    // remembered verdict because nothing was requeued.
    let less_busy = snapshot(
        vec![cq_cpu("cq", 10)],
        vec![wl("old", "cq", 0, 8).admitted_in("cq", "default", 1)],
    );
    queues.push(wl("e2", "cq", 2, 3));
    assert_eq!(cycle(&less_busy, &mut queues), vec![waiting("e2", 2)]);

    queues.requeue_inadmissible(&less_busy, RequeueScope::Cohort("none-such"));
    assert_eq!(cycle(&less_busy, &mut queues), vec![]);
    queues.requeue_inadmissible(&less_busy, RequeueScope::ClusterQueue("cq"));
    assert_eq!(
        cycle(&less_busy, &mut queues),
        vec![waiting("e1", 1), waiting("e2", 1)]
    );
}

#[test]
fn requeue_scope_covers_the_cohort_tree() {
    let tree = snapshot(
        vec![
            cq_cpu("cq-a", 1).cohort("all"),
            cq_cpu("cq-b", 1).cohort("all"),
            cq_cpu("alone", 1),
        ],
        vec![
            wl("a0", "cq-a", 0, 1).admitted_in("cq-a", "default", 1),
            wl("b0", "cq-b", 0, 1).admitted_in("cq-b", "default", 1),
            wl("x0", "alone", 0, 1).admitted_in("alone", "default", 1),
        ],
    );
    let mut queues = Queues::new();
    for (name, cq) in [("a", "cq-a"), ("b", "cq-b"), ("x", "alone")] {
        queues.push(wl(name, cq, 1, 1));
    }
    assert_eq!(cycle(&tree, &mut queues).len(), 3);
    queues.requeue_inadmissible(&tree, RequeueScope::ClusterQueue("cq-b"));
    assert_eq!(
        queues.pending("cq-a"),
        PendingCounts {
            active: 1,
            inadmissible: 0
        }
    );
    assert_eq!(
        queues.pending("cq-b"),
        PendingCounts {
            active: 1,
            inadmissible: 0
        }
    );
    assert_eq!(
        queues.pending("alone"),
        PendingCounts {
            active: 0,
            inadmissible: 1
        }
    );
}

#[test]
fn requeue_backoff_delays_evaluation() {
    let mut queues = Queues::new();
    queues.push(wl("a", "cq", 1, 3).requeue_at(200));
    let early = Snapshot::builder(ts(100))
        .flavor(flavor("default"))
        .cluster_queue(cq_cpu("cq", 10))
        .build();
    assert_eq!(cycle(&early, &mut queues), vec![]);
    assert!(!queues.has_work(ts(100)));
    assert!(queues.has_work(ts(200)));
    assert_eq!(queues.next_requeue_at(), Some(ts(200)));
    assert_eq!(
        queues.pending("cq"),
        PendingCounts {
            active: 1,
            inadmissible: 0
        }
    );

    let later = Snapshot::builder(ts(200))
        .flavor(flavor("default"))
        .cluster_queue(cq_cpu("cq", 10))
        .build();
    assert_eq!(
        cycle(&later, &mut queues),
        vec![admit_cpu("a", "cq", "default", 3)]
    );
    assert_eq!(queues.next_requeue_at(), None);
}

#[test]
fn moving_and_removing_pending_workloads() {
    let snapshot = snapshot(vec![cq_cpu("cq-a", 10), cq_cpu("cq-b", 10)], vec![]);
    let mut queues = Queues::new();
    queues.push(wl("a", "cq-a", 1, 3));
    queues.push(wl("gone", "cq-a", 2, 3));
    // The LocalQueue was repointed: the workload now belongs to cq-b.
    queues.push(wl("a", "cq-b", 1, 3));
    assert_eq!(
        queues.remove("ns/gone").map(|w| w.key.clone()),
        Some("ns/gone".to_owned())
    );
    assert_eq!(queues.remove("ns/gone"), None);
    assert_eq!(
        cycle(&snapshot, &mut queues),
        vec![admit_cpu("a", "cq-b", "default", 3)]
    );
}

/// The address of every pending workload the queues hold.
fn held_addresses(queues: &Queues) -> Vec<*const Workload> {
    let mut held = Vec::new();
    queues.for_each_pending(|workload, _| held.push(std::ptr::from_ref(workload)));
    held
}

#[test]
fn queues_hold_the_pushed_workload_and_keep_one_copy_of_an_unchanged_one() {
    let snapshot = snapshot(
        vec![cq_cpu("cq", 4)],
        vec![wl("old", "cq", 0, 2).admitted_in("cq", "default", 1)],
    );
    let mut queues = Queues::new();
    let first = Arc::new(wl("big", "cq", 1, 3));
    queues.push(Arc::clone(&first));
    assert_eq!(held_addresses(&queues), vec![Arc::as_ptr(&first)]);

    // Parked as inadmissible; an equal copy pushed later takes the held one's place and
    // stays parked.
    assert_eq!(cycle(&snapshot, &mut queues), vec![waiting("big", 1)]);
    let copy = Arc::new(wl("big", "cq", 1, 3));
    queues.push(Arc::clone(&copy));
    assert_eq!(held_addresses(&queues), vec![Arc::as_ptr(&copy)]);
    assert_eq!(Arc::strong_count(&first), 1);
    assert!(queues.is_inadmissible("ns/big"));
    assert_eq!(cycle(&snapshot, &mut queues), vec![]);
}

#[test]
fn strict_fifo_head_holds_the_capacity_it_waits_for() {
    // cq-a owns all 5 units of the cohort and uses 2; cq-b owns nothing and may only borrow.
    let tree = snapshot(
        vec![
            cq_cpu("cq-a", 5).cohort("all").strict(),
            cq_cpu("cq-b", 0).cohort("all"),
        ],
        vec![wl("a0", "cq-a", 0, 2).admitted_in("cq-a", "default", 1)],
    );
    let mut queues = Queues::new();
    queues.push(wl("big", "cq-a", 1, 4));
    queues.push(wl("small", "cq-b", 2, 2));
    // "big" waits for 1 unit and holds back the 3 that are free, so "small" cannot borrow them.
    assert_eq!(
        cycle(&tree, &mut queues),
        vec![waiting("big", 1), waiting("small", 2)]
    );

    // The hold lasts across cycles while the head stays blocked.
    queues.push(wl("small2", "cq-b", 3, 1));
    assert_eq!(cycle(&tree, &mut queues), vec![waiting("small2", 1)]);

    // Requeueing the tree re-evaluates everything; the head blocks and holds again.
    queues.requeue_inadmissible(&tree, RequeueScope::ClusterQueue("cq-a"));
    assert_eq!(
        cycle(&tree, &mut queues),
        vec![waiting("big", 1), waiting("small", 2), waiting("small2", 1)]
    );

    // Once the head is gone, the capacity is free for the borrowers.
    queues.remove("ns/big");
    queues.requeue_inadmissible(&tree, RequeueScope::ClusterQueue("cq-b"));
    assert_eq!(
        cycle(&tree, &mut queues),
        vec![
            admit_cpu("small", "cq-b", "default", 2),
            admit_cpu("small2", "cq-b", "default", 1)
        ]
    );
}

/// The standard snapshot with `waitForPodsReady.blockAdmission` on.
fn blocking_admission(cluster_queues: Vec<ClusterQueue>, admitted: Vec<Workload>) -> Snapshot {
    let builder = builder().config(SchedulerConfig {
        block_admission: true,
        ..SchedulerConfig::default()
    });
    let builder = cluster_queues
        .into_iter()
        .fold(builder, SnapshotBuilder::cluster_queue);
    admitted
        .into_iter()
        .fold(builder, SnapshotBuilder::admitted)
        .build()
}

fn waiting_for_pods(name: &str) -> Decision {
    inadmissible(
        name,
        PendingReason::WaitingForPodsReady,
        "waiting for all admitted workloads to be in PodsReady condition",
    )
}

fn with_pods_ready(mut workload: Workload) -> Workload {
    workload.pods_ready = true;
    workload
}

#[test]
fn block_admission_admits_one_workload_at_a_time_until_its_pods_are_ready() {
    let queues = || vec![cq_cpu("cq", 10), cq_cpu("other", 10)];
    let pending = || {
        vec![
            wl("w1", "cq", 1, 2),
            wl("w2", "cq", 2, 2),
            wl("w3", "other", 3, 2),
        ]
    };
    let one_admitted = || {
        vec![
            admit_cpu("w1", "cq", "default", 2),
            waiting_for_pods("w3"),
            waiting_for_pods("w2"),
        ]
    };
    run(vec![
        Scenario {
            name: "the first admission holds back every other queue's and its own next head",
            snapshot: blocking_admission(queues(), vec![]),
            pending: pending(),
            want: one_admitted(),
        },
        Scenario {
            name: "a workload holding quota without PodsReady holds back all admissions",
            snapshot: blocking_admission(
                queues(),
                vec![wl("starting", "other", 0, 1).admitted_in("other", "default", 0)],
            ),
            pending: pending(),
            want: vec![waiting_for_pods("w1"), waiting_for_pods("w3")],
        },
        Scenario {
            name: "once every admitted workload is PodsReady the next one is admitted",
            snapshot: blocking_admission(
                queues(),
                vec![with_pods_ready(
                    wl("running", "other", 0, 1).admitted_in("other", "default", 0),
                )],
            ),
            pending: pending(),
            want: one_admitted(),
        },
        Scenario {
            name: "without blockAdmission nothing waits for pods",
            snapshot: snapshot(
                queues(),
                vec![wl("starting", "other", 0, 1).admitted_in("other", "default", 0)],
            ),
            pending: pending(),
            want: vec![
                admit_cpu("w1", "cq", "default", 2),
                admit_cpu("w3", "other", "default", 2),
                admit_cpu("w2", "cq", "default", 2),
            ],
        },
    ]);
}

#[test]
fn a_head_held_back_for_pods_stays_first_in_its_queue() {
    let snapshot = blocking_admission(
        vec![cq_cpu("cq", 10)],
        vec![wl("starting", "cq", 0, 1).admitted_in("cq", "default", 0)],
    );
    let mut queues = Queues::new();
    queues.push(wl("w1", "cq", 1, 2));
    assert_eq!(cycle(&snapshot, &mut queues), vec![waiting_for_pods("w1")]);
    assert!(queues.contains("ns/w1") && !queues.is_inadmissible("ns/w1"));
    let ready = blocking_admission(
        vec![cq_cpu("cq", 10)],
        vec![with_pods_ready(
            wl("starting", "cq", 0, 1).admitted_in("cq", "default", 0),
        )],
    );
    assert_eq!(
        cycle(&ready, &mut queues),
        vec![admit_cpu("w1", "cq", "default", 2)]
    );
}
