//! Classical preemption: within the ClusterQueue, reclaim in the cohort, borrowWithinCohort,
//! minimal victim sets, fungibility between flavors, overlapping targets.

use pretty_assertions::assert_eq;

use super::super::flavor::{Assignment, assign};
use super::super::model::*;
use super::super::{
    Decision, PendingReason, PreemptionReason, Queues, RequeueScope, SchedulerConfig, Snapshot,
    Victim, cycle,
};
use super::builders::*;
use super::{Scenario, builder, run, snapshot};

fn pending_preemption(reasons: &str, victims: usize) -> String {
    format!(
        "{}. Pending the preemption of {victims} workload(s)",
        main_msg(reasons)
    )
}

fn in_queue(name: &str, preemptor: &str) -> Victim {
    victim(
        name,
        "cq",
        PreemptionReason::InClusterQueue,
        preemptor,
        ("/cq", "/cq"),
    )
}

fn waiting(name: &str, flavor: &str, more: Quantity) -> Decision {
    inadmissible(
        name,
        PendingReason::WaitingForQuota,
        &main_msg(&unused("cpu", flavor, more)),
    )
}

fn overlapping(name: &str) -> Decision {
    inadmissible(
        name,
        PendingReason::WaitingForQuota,
        "Workload has overlapping preemption targets with another workload",
    )
}

fn fits_once_claimed_are_gone(name: &str) -> Decision {
    inadmissible(
        name,
        PendingReason::WaitingForPreemptedWorkloads,
        "Workload has overlapping preemption targets with another workload, but will fit after these preemptions complete",
    )
}

/// Three queues of one cohort: "cq-a" and "cq-c" (5 CPU each) reclaim from "cq-b" (none).
fn reclaiming_queues() -> Vec<ClusterQueue> {
    vec![
        cq_cpu("cq-a", 5)
            .cohort("all")
            .reclaim(PreemptionPolicy::Any),
        cq_cpu("cq-b", 0).cohort("all"),
        cq_cpu("cq-c", 5)
            .cohort("all")
            .reclaim(PreemptionPolicy::Any),
    ]
}

/// `by`, in the queue at `path`, reclaims "b2" (5 CPU in "cq-b") for a 4 CPU workload.
fn reclaims_b2(by: &str, path: &str) -> Decision {
    preempt(
        by,
        vec![victim(
            "b2",
            "cq-b",
            PreemptionReason::InCohortReclamation,
            by,
            (path, "/all/cq-b"),
        )],
        &pending_preemption(&unused("cpu", "default", 4), 1),
    )
}

fn two_flavor_queue(when_can_preempt: FungibilityPolicy) -> ClusterQueue {
    ClusterQueue::new("cq")
        .group(group(
            &["cpu"],
            vec![
                fq("on-demand", vec![rq("cpu", 5)]),
                fq("default", vec![rq("cpu", 5)]),
            ],
        ))
        .within(PreemptionPolicy::LowerPriority)
        .fungibility(FungibilityPolicy::MayStopSearch, when_can_preempt)
}

fn borrowing_queues(threshold: Option<i32>) -> Vec<ClusterQueue> {
    vec![
        cq_cpu("cq-a", 5)
            .cohort("all")
            .reclaim(PreemptionPolicy::LowerPriority)
            .borrow_within_cohort(threshold),
        cq_cpu("cq-b", 5).cohort("all"),
    ]
}

#[test]
fn preemption_within_cluster_queue() {
    let within = |policy| cq_cpu("cq", 10).within(policy);
    run(vec![
        Scenario {
            name: "LowerPriority preempts the most recently admitted lower priority workload",
            snapshot: snapshot(
                vec![within(PreemptionPolicy::LowerPriority)],
                vec![
                    wl("low-new", "cq", 0, 6).admitted_in("cq", "default", 2),
                    wl("low-old", "cq", 0, 4).admitted_in("cq", "default", 1),
                ],
            ),
            pending: vec![wl("high", "cq", 5, 5).priority(10)],
            want: vec![preempt(
                "high",
                vec![in_queue("low-new", "high")],
                &pending_preemption(&unused("cpu", "default", 5), 1),
            )],
        },
        Scenario {
            name: "minimal victim set: removed candidates that are not needed are put back",
            snapshot: snapshot(
                vec![within(PreemptionPolicy::LowerPriority)],
                vec![
                    wl("c", "cq", 0, 1).admitted_in("cq", "default", 2),
                    wl("b", "cq", 0, 5).admitted_in("cq", "default", 1),
                    wl("a", "cq", 0, 4)
                        .priority(1)
                        .admitted_in("cq", "default", 3),
                ],
            ),
            pending: vec![wl("high", "cq", 5, 5).priority(5)],
            want: vec![preempt(
                "high",
                vec![in_queue("b", "high")],
                &pending_preemption(&unused("cpu", "default", 5), 1),
            )],
        },
        Scenario {
            name: "victims across several candidates",
            snapshot: snapshot(
                vec![within(PreemptionPolicy::LowerPriority)],
                vec![
                    wl("c", "cq", 0, 2).admitted_in("cq", "default", 3),
                    wl("b", "cq", 0, 3).admitted_in("cq", "default", 2),
                    wl("a", "cq", 0, 5)
                        .priority(1)
                        .admitted_in("cq", "default", 1),
                ],
            ),
            pending: vec![wl("high", "cq", 5, 5).priority(5)],
            want: vec![preempt(
                "high",
                vec![in_queue("c", "high"), in_queue("b", "high")],
                &pending_preemption(&unused("cpu", "default", 5), 2),
            )],
        },
        Scenario {
            name: "LowerPriority does not preempt equal priority",
            snapshot: snapshot(
                vec![within(PreemptionPolicy::LowerPriority)],
                vec![
                    wl("peer", "cq", 0, 10)
                        .priority(5)
                        .admitted_in("cq", "default", 1),
                ],
            ),
            pending: vec![wl("a", "cq", 5, 5).priority(5)],
            want: vec![waiting("a", "default", 5)],
        },
        Scenario {
            name: "LowerOrNewerEqualPriority preempts newer workloads of equal priority",
            snapshot: snapshot(
                vec![within(PreemptionPolicy::LowerOrNewerEqualPriority)],
                vec![wl("newer", "cq", 50, 10).admitted_in("cq", "default", 51)],
            ),
            pending: vec![wl("older", "cq", 10, 5)],
            want: vec![preempt(
                "older",
                vec![in_queue("newer", "older")],
                &pending_preemption(&unused("cpu", "default", 5), 1),
            )],
        },
        Scenario {
            name: "LowerOrNewerEqualPriority spares older workloads of equal priority",
            snapshot: snapshot(
                vec![within(PreemptionPolicy::LowerOrNewerEqualPriority)],
                vec![wl("older", "cq", 10, 10).admitted_in("cq", "default", 11)],
            ),
            pending: vec![wl("newer", "cq", 50, 5)],
            want: vec![waiting("newer", "default", 5)],
        },
        Scenario {
            name: "Never preempts nothing",
            snapshot: snapshot(
                vec![within(PreemptionPolicy::Never)],
                vec![wl("low", "cq", 0, 10).admitted_in("cq", "default", 1)],
            ),
            pending: vec![wl("high", "cq", 5, 5).priority(10)],
            want: vec![waiting("high", "default", 5)],
        },
        Scenario {
            name: "workloads already being evicted are preempted first",
            snapshot: snapshot(
                vec![within(PreemptionPolicy::LowerPriority)],
                vec![
                    wl("leaving", "cq", 0, 5)
                        .admitted_in("cq", "default", 1)
                        .evicted(),
                    wl("newest", "cq", 0, 5).admitted_in("cq", "default", 2),
                ],
            ),
            pending: vec![wl("high", "cq", 5, 5).priority(10)],
            want: vec![preempt(
                "high",
                vec![in_queue("leaving", "high")],
                &pending_preemption(&unused("cpu", "default", 5), 1),
            )],
        },
    ]);
}

#[test]
fn preemption_in_the_cohort() {
    let reclaim_any = vec![
        cq_cpu("cq-a", 5)
            .cohort("all")
            .reclaim(PreemptionPolicy::Any),
        cq_cpu("cq-b", 5).cohort("all"),
    ];
    run(vec![
        Scenario {
            name: "reclaim quota a cohort member borrowed",
            snapshot: snapshot(
                reclaim_any.clone(),
                vec![wl("b1", "cq-b", 0, 8).admitted_in("cq-b", "default", 1)],
            ),
            pending: vec![wl("a", "cq-a", 5, 4)],
            want: vec![preempt(
                "a",
                vec![victim(
                    "b1",
                    "cq-b",
                    PreemptionReason::InCohortReclamation,
                    "a",
                    ("/all/cq-a", "/all/cq-b"),
                )],
                &pending_preemption(&unused("cpu", "default", 2), 1),
            )],
        },
        Scenario {
            name: "reclaim LowerPriority spares higher priority borrowers",
            snapshot: snapshot(
                vec![
                    cq_cpu("cq-a", 5)
                        .cohort("all")
                        .reclaim(PreemptionPolicy::LowerPriority),
                    cq_cpu("cq-b", 5).cohort("all"),
                ],
                vec![
                    wl("b1", "cq-b", 0, 8)
                        .priority(10)
                        .admitted_in("cq-b", "default", 1),
                ],
            ),
            pending: vec![wl("a", "cq-a", 5, 4)],
            want: vec![waiting("a", "default", 2)],
        },
        Scenario {
            name: "borrowWithinCohort preempts below the priority threshold while borrowing",
            snapshot: snapshot(
                borrowing_queues(Some(5)),
                vec![
                    wl("b-low", "cq-b", 0, 6)
                        .priority(3)
                        .admitted_in("cq-b", "default", 1),
                ],
            ),
            pending: vec![wl("a", "cq-a", 5, 7).priority(10)],
            want: vec![preempt(
                "a",
                vec![victim(
                    "b-low",
                    "cq-b",
                    PreemptionReason::InCohortReclaimWhileBorrowing,
                    "a",
                    ("/all/cq-a", "/all/cq-b"),
                )],
                &pending_preemption(&unused("cpu", "default", 3), 1),
            )],
        },
        Scenario {
            name: "borrowWithinCohort spares priorities above the threshold",
            snapshot: snapshot(
                borrowing_queues(Some(5)),
                vec![
                    wl("b-high", "cq-b", 0, 6)
                        .priority(6)
                        .admitted_in("cq-b", "default", 1),
                ],
            ),
            pending: vec![wl("a", "cq-a", 5, 7).priority(10)],
            want: vec![waiting("a", "default", 3)],
        },
        Scenario {
            name: "no preemption while borrowing without borrowWithinCohort",
            snapshot: snapshot(
                vec![
                    cq_cpu("cq-a", 5)
                        .cohort("all")
                        .reclaim(PreemptionPolicy::LowerPriority),
                    cq_cpu("cq-b", 5).cohort("all"),
                ],
                vec![
                    wl("b-low", "cq-b", 0, 6)
                        .priority(3)
                        .admitted_in("cq-b", "default", 1),
                ],
            ),
            pending: vec![wl("a", "cq-a", 5, 7).priority(10)],
            want: vec![waiting("a", "default", 3)],
        },
        Scenario {
            name: "reclaim across cohort levels",
            snapshot: builder()
                .cohort(Cohort {
                    parent: Some("org".to_owned()),
                    ..Cohort::new("team-a")
                })
                .cohort(Cohort {
                    parent: Some("org".to_owned()),
                    ..Cohort::new("team-b")
                })
                .cluster_queue(
                    cq_cpu("cq-a", 4)
                        .cohort("team-a")
                        .reclaim(PreemptionPolicy::Any),
                )
                .cluster_queue(cq_cpu("cq-b", 4).cohort("team-b"))
                .admitted(wl("b1", "cq-b", 0, 6).admitted_in("cq-b", "default", 1))
                .build(),
            pending: vec![wl("a", "cq-a", 5, 4)],
            want: vec![preempt(
                "a",
                vec![victim(
                    "b1",
                    "cq-b",
                    PreemptionReason::InCohortReclamation,
                    "a",
                    ("/org/team-a/cq-a", "/org/team-b/cq-b"),
                )],
                &pending_preemption(&unused("cpu", "default", 2), 1),
            )],
        },
        Scenario {
            name: "a head whose victim another claimed fits once that preemption is done",
            snapshot: snapshot(
                reclaiming_queues(),
                vec![wl("b1", "cq-b", 0, 10).admitted_in("cq-b", "default", 1)],
            ),
            pending: vec![wl("a", "cq-a", 1, 4), wl("c", "cq-c", 2, 4)],
            want: vec![
                preempt(
                    "a",
                    vec![victim(
                        "b1",
                        "cq-b",
                        PreemptionReason::InCohortReclamation,
                        "a",
                        ("/all/cq-a", "/all/cq-b"),
                    )],
                    &pending_preemption(&unused("cpu", "default", 4), 1),
                ),
                fits_once_claimed_are_gone("c"),
            ],
        },
    ]);
}

#[test]
fn preemption_and_queueing_strategy() {
    let full = vec![wl("low", "cq", 0, 10).admitted_in("cq", "default", 1)];
    let pending = vec![
        wl("high", "cq", 1, 5).priority(10),
        wl("tiny", "cq", 2, 1).priority(10),
    ];
    let preempted = preempt(
        "high",
        vec![in_queue("low", "high")],
        &pending_preemption(&unused("cpu", "default", 5), 1),
    );
    run(vec![
        Scenario {
            name: "StrictFIFO: the preemptor blocks the queue",
            snapshot: snapshot(
                vec![
                    cq_cpu("cq", 10)
                        .within(PreemptionPolicy::LowerPriority)
                        .strict(),
                ],
                full.clone(),
            ),
            pending: pending.clone(),
            want: vec![preempted.clone()],
        },
        Scenario {
            name: "BestEffortFIFO: the next workload cannot use the capacity the preemptor waits for",
            snapshot: snapshot(
                vec![cq_cpu("cq", 10).within(PreemptionPolicy::LowerPriority)],
                full,
            ),
            pending,
            want: vec![preempted, waiting("tiny", "default", 1)],
        },
    ]);
}

#[test]
fn flavor_fungibility() {
    let low_on_demand = vec![wl("low", "cq", 0, 5).admitted_in("cq", "on-demand", 1)];
    let lender = ClusterQueue::new("cq-b")
        .cohort("all")
        .group(group(&["cpu"], vec![fq("on-demand", vec![rq("cpu", 10)])]));
    let borrower = |when_can_borrow| {
        ClusterQueue::new("cq-a")
            .cohort("all")
            .group(group(
                &["cpu"],
                vec![
                    fq("on-demand", vec![rq("cpu", 2)]),
                    fq("default", vec![rq("cpu", 5)]),
                ],
            ))
            .fungibility(when_can_borrow, FungibilityPolicy::TryNextFlavor)
    };
    run(vec![
        Scenario {
            name: "whenCanPreempt TryNextFlavor: a later flavor that fits wins over preemption",
            snapshot: snapshot(
                vec![two_flavor_queue(FungibilityPolicy::TryNextFlavor)],
                low_on_demand.clone(),
            ),
            pending: vec![wl("high", "cq", 5, 3).priority(10)],
            want: vec![admit_cpu("high", "cq", "default", 3)],
        },
        Scenario {
            name: "whenCanPreempt MayStopSearch: preempt in the first flavor",
            snapshot: snapshot(
                vec![two_flavor_queue(FungibilityPolicy::MayStopSearch)],
                low_on_demand,
            ),
            pending: vec![wl("high", "cq", 5, 3).priority(10)],
            want: vec![preempt(
                "high",
                vec![in_queue("low", "high")],
                &pending_preemption(&unused("cpu", "on-demand", 3), 1),
            )],
        },
        Scenario {
            name: "whenCanBorrow MayStopSearch: borrow in the first flavor",
            snapshot: snapshot(
                vec![borrower(FungibilityPolicy::MayStopSearch), lender.clone()],
                vec![],
            ),
            pending: vec![wl("a", "cq-a", 1, 4)],
            want: vec![admit_cpu("a", "cq-a", "on-demand", 4)],
        },
        Scenario {
            name: "whenCanBorrow TryNextFlavor: a later flavor without borrowing wins",
            snapshot: snapshot(
                vec![borrower(FungibilityPolicy::TryNextFlavor), lender],
                vec![],
            ),
            pending: vec![wl("a", "cq-a", 1, 4)],
            want: vec![admit_cpu("a", "cq-a", "default", 4)],
        },
    ]);
}

#[test]
fn a_waiting_preemptor_is_evaluated_first_in_every_cycle() {
    let queue = || cq_cpu("cq", 10).within(PreemptionPolicy::LowerPriority);
    let low = || wl("low", "cq", 0, 10).admitted_in("cq", "default", 1);
    let mut queues = Queues::new();
    queues.push(wl("high", "cq", 5, 5).priority(10));
    assert_eq!(
        cycle(&snapshot(vec![queue()], vec![low()]), &mut queues),
        vec![preempt(
            "high",
            vec![in_queue("low", "high")],
            &pending_preemption(&unused("cpu", "default", 5), 1)
        )]
    );

    // While "low" is being evicted, "high" renews its preemption before anything else of its
    // queue is looked at, and a newcomer cannot count on the capacity "high" waits for.
    let evicting = snapshot(vec![queue()], vec![low().evicted()]);
    queues.push(wl("other", "cq", 0, 6).priority(10));
    let renewed = || {
        preempt(
            "high",
            vec![in_queue("low", "high")],
            &pending_preemption(&unused("cpu", "default", 5), 1),
        )
    };
    assert_eq!(
        cycle(&evicting, &mut queues),
        vec![renewed(), waiting("other", "default", 6)]
    );
    assert_eq!(cycle(&evicting, &mut queues), vec![renewed()]);

    // "low" is gone: the preemptor is retried first although "other" is older.
    let freed = snapshot(vec![queue()], vec![]);
    queues.requeue_inadmissible(&freed, RequeueScope::ClusterQueue("cq"));
    assert_eq!(
        cycle(&freed, &mut queues),
        vec![
            admit_cpu("high", "cq", "default", 5),
            waiting("other", "default", 1)
        ]
    );
}

#[test]
fn nothing_behind_a_preemptor_preempts_in_the_same_cycle() {
    let queue = || cq_cpu("cq", 10).within(PreemptionPolicy::LowerPriority);
    let low = |i: i64| wl(&format!("low-{i}"), "cq", 0, 2).admitted_in("cq", "default", i);
    let mut queues = Queues::new();
    queues.push(wl("high", "cq", 5, 4).priority(10));
    queues.push(wl("mid", "cq", 6, 2).priority(5));
    // The head preempts the two newest; "mid" would count the preemptor's usage on top of its
    // victims' and preempt three more, where Kueue lets it wait its turn.
    assert_eq!(
        cycle(
            &snapshot(vec![queue()], (1..=5).map(low).collect()),
            &mut queues
        ),
        vec![
            preempt(
                "high",
                vec![in_queue("low-5", "high"), in_queue("low-4", "high")],
                &pending_preemption(&unused("cpu", "default", 4), 2)
            ),
            waiting("mid", "default", 2),
        ]
    );
    // Once the preemptor is in, "mid" may preempt in turn.
    let mut after: Vec<Workload> = (1..=3).map(low).collect();
    after.push(
        wl("high", "cq", 5, 4)
            .priority(10)
            .admitted_in("cq", "default", 6),
    );
    let after = snapshot(vec![queue()], after);
    queues.remove("ns/high");
    queues.requeue_inadmissible(&after, RequeueScope::ClusterQueue("cq"));
    assert_eq!(
        cycle(&after, &mut queues),
        vec![preempt(
            "mid",
            vec![in_queue("low-3", "mid")],
            &pending_preemption(&unused("cpu", "default", 2), 1)
        )]
    );
}

#[test]
fn nothing_behind_a_waiting_preemptor_preempts_in_later_cycles() {
    let queue = || cq_cpu("cq", 10).within(PreemptionPolicy::LowerPriority);
    let low = |i: i64| wl(&format!("low-{i}"), "cq", 0, 2).admitted_in("cq", "default", i);
    let mut queues = Queues::new();
    queues.push(wl("high", "cq", 5, 4).priority(10));
    assert_eq!(
        cycle(
            &snapshot(vec![queue()], (1..=5).map(low).collect()),
            &mut queues
        ),
        vec![preempt(
            "high",
            vec![in_queue("low-5", "high"), in_queue("low-4", "high")],
            &pending_preemption(&unused("cpu", "default", 4), 2)
        )]
    );
    // A later cycle, the victims still being evicted: "mid" waits behind the preemptor (the
    // running workloads may well finish before its turn) instead of preempting "low-3".
    let evicting: Vec<Workload> = (1..=5)
        .map(|i| if i >= 4 { low(i).evicted() } else { low(i) })
        .collect();
    queues.push(wl("mid", "cq", 6, 2).priority(5));
    assert_eq!(
        cycle(&snapshot(vec![queue()], evicting), &mut queues),
        vec![
            preempt(
                "high",
                vec![in_queue("low-5", "high"), in_queue("low-4", "high")],
                &pending_preemption(&unused("cpu", "default", 4), 2)
            ),
            waiting("mid", "default", 2)
        ]
    );
}

#[test]
fn strict_fifo_preemptor_keeps_its_capacity_while_it_waits() {
    let queues_of = || {
        vec![
            cq_cpu("cq-a", 10)
                .cohort("all")
                .strict()
                .within(PreemptionPolicy::LowerPriority),
            cq_cpu("cq-b", 0).cohort("all"),
        ]
    };
    let low = || wl("low", "cq-a", 0, 8).admitted_in("cq-a", "default", 1);
    let preempting = || {
        preempt(
            "high",
            vec![victim(
                "low",
                "cq-a",
                PreemptionReason::InClusterQueue,
                "high",
                ("/all/cq-a", "/all/cq-a"),
            )],
            &pending_preemption(&unused("cpu", "default", 3), 1),
        )
    };
    let mut queues = Queues::new();
    queues.push(wl("high", "cq-a", 5, 5).priority(10));
    queues.push(wl("next", "cq-a", 6, 1).priority(10));
    // Nothing behind it is looked at.
    assert_eq!(
        cycle(&snapshot(queues_of(), vec![low()]), &mut queues),
        vec![preempting()]
    );
    // The 2 free units are part of what "high" waits for: a borrower cannot take them.
    queues.push(wl("b-new", "cq-b", 6, 1));
    assert_eq!(
        cycle(&snapshot(queues_of(), vec![low().evicted()]), &mut queues),
        vec![preempting(), waiting("b-new", "default", 1)]
    );
}

/// [`reclaiming_queues`] holding `admitted`, with or without
/// `RecomputeAssignmentUponPreemptionTargetsOverlap`.
fn reclaiming(recompute: bool, admitted: Vec<Workload>) -> Snapshot {
    let builder = reclaiming_queues()
        .into_iter()
        .fold(builder(), |builder, cq| builder.cluster_queue(cq))
        .config(SchedulerConfig {
            recompute_overlapping_targets: recompute,
            ..SchedulerConfig::default()
        });
    admitted
        .into_iter()
        .fold(builder, |builder, workload| builder.admitted(workload))
        .build()
}

#[test]
fn a_head_whose_victims_another_claimed_waits_until_they_are_gone() {
    let b1 = || wl("b1", "cq-b", 0, 5).admitted_in("cq-b", "default", 1);
    let b2 = || wl("b2", "cq-b", 0, 5).admitted_in("cq-b", "default", 2);
    for recompute in [false, true] {
        let mut queues = Queues::new();
        queues.push(wl("a", "cq-a", 1, 4));
        queues.push(wl("c", "cq-c", 2, 1));
        // "c" would also take "b2", which "a" claimed first. Assigned again as if "b2" were
        // gone, it fits beside "a"; without that, it waits for the next cycle.
        let c = if recompute {
            fits_once_claimed_are_gone("c")
        } else {
            overlapping("c")
        };
        assert_eq!(
            cycle(&reclaiming(recompute, vec![b1(), b2()]), &mut queues),
            vec![reclaims_b2("a", "/all/cq-a"), c.clone()],
            "recompute: {recompute}"
        );
        assert_eq!(
            cycle(
                &reclaiming(recompute, vec![b1(), b2().evicted()]),
                &mut queues
            ),
            vec![reclaims_b2("a", "/all/cq-a"), c],
            "recompute: {recompute}"
        );
        let freed = reclaiming(recompute, vec![b1()]);
        queues.requeue_inadmissible(&freed, RequeueScope::All);
        assert_eq!(
            cycle(&freed, &mut queues),
            vec![
                admit_cpu("a", "cq-a", "default", 4),
                admit_cpu("c", "cq-c", "default", 1)
            ],
            "recompute: {recompute}"
        );
    }
}

#[test]
fn a_head_whose_victims_another_claimed_preempts_others_in_the_same_cycle() {
    let admitted = || {
        vec![
            wl("b1", "cq-b", 0, 5).admitted_in("cq-b", "default", 1),
            wl("b2", "cq-b", 0, 5).admitted_in("cq-b", "default", 2),
        ]
    };
    // "c" would also take "b2", which "a" claimed first. Assigned again as if "b2" were gone
    // and "a" in, it still needs 3 more: it reclaims "b1" in the same cycle.
    let mut queues = Queues::new();
    queues.push(wl("a", "cq-a", 1, 4));
    queues.push(wl("c", "cq-c", 2, 4));
    assert_eq!(
        cycle(&reclaiming(true, admitted()), &mut queues),
        vec![
            reclaims_b2("a", "/all/cq-a"),
            preempt(
                "c",
                vec![victim(
                    "b1",
                    "cq-b",
                    PreemptionReason::InCohortReclamation,
                    "c",
                    ("/all/cq-c", "/all/cq-b"),
                )],
                &pending_preemption(&unused("cpu", "default", 3), 1),
            ),
        ]
    );
    let mut queues = Queues::new();
    queues.push(wl("a", "cq-a", 1, 4));
    queues.push(wl("c", "cq-c", 2, 4));
    assert_eq!(
        cycle(&reclaiming(false, admitted()), &mut queues),
        vec![reclaims_b2("a", "/all/cq-a"), overlapping("c")],
        "without the recomputation it waits for the next cycle"
    );
}

#[test]
fn prioritize_preemptor_workloads_lets_a_waiting_preemptor_keep_its_victims() {
    let snapshot_of = |b2: Workload, prioritize_preemptors: bool| {
        reclaiming_queues()
            .into_iter()
            .fold(builder(), |builder, cq| builder.cluster_queue(cq))
            .config(SchedulerConfig {
                prioritize_preemptors,
                recompute_overlapping_targets: false,
                ..SchedulerConfig::default()
            })
            .admitted(wl("b1", "cq-b", 0, 5).admitted_in("cq-b", "default", 1))
            .admitted(b2)
            .build()
    };
    let b2 = || wl("b2", "cq-b", 0, 5).admitted_in("cq-b", "default", 2);
    for prioritize_preemptors in [false, true] {
        let mut queues = Queues::new();
        queues.push(wl("a", "cq-a", 1, 4));
        assert_eq!(
            cycle(&snapshot_of(b2(), prioritize_preemptors), &mut queues),
            vec![reclaims_b2("a", "/all/cq-a")]
        );
        // "c" is older than "a", so without the gate it goes first and takes "b2" over.
        queues.push(wl("c", "cq-c", 0, 4));
        let want = if prioritize_preemptors {
            vec![reclaims_b2("a", "/all/cq-a"), overlapping("c")]
        } else {
            vec![reclaims_b2("c", "/all/cq-c"), overlapping("a")]
        };
        assert_eq!(
            cycle(
                &snapshot_of(b2().evicted(), prioritize_preemptors),
                &mut queues
            ),
            want,
            "prioritize_preemptors: {prioritize_preemptors}"
        );
    }
}

#[test]
fn block_admission_does_not_hold_back_preemption() {
    let snapshot = builder()
        .config(SchedulerConfig {
            block_admission: true,
            ..SchedulerConfig::default()
        })
        .cluster_queue(cq_cpu("cq", 10).within(PreemptionPolicy::LowerPriority))
        .admitted(wl("low", "cq", 0, 10).admitted_in("cq", "default", 1))
        .build();
    let mut queues = Queues::new();
    queues.push(wl("high", "cq", 5, 5).priority(10));
    assert_eq!(
        cycle(&snapshot, &mut queues),
        vec![preempt(
            "high",
            vec![in_queue("low", "high")],
            &pending_preemption(&unused("cpu", "default", 5), 1),
        )]
    );
}

#[test]
fn an_assignment_made_again_keeps_to_the_flavors_first_chosen() {
    let two_flavors = || {
        ClusterQueue::new("cq").group(group(
            &["cpu"],
            vec![
                fq("default", vec![rq("cpu", 5)]),
                fq("on-demand", vec![rq("cpu", 5)]),
            ],
        ))
    };
    let full = |flavor: &str| {
        snapshot(
            vec![two_flavors()],
            vec![wl("big", "cq", 0, 5).admitted_in("cq", flavor, 1)],
        )
    };
    let workload = wl("w", "cq", 1, 3);
    let assign = |mut work: Snapshot, nominated: Option<&Assignment>| {
        let cq = work.cq_index["cq"];
        assign(&mut work, &workload, cq, None, nominated)
    };
    let flavor_of = |assignment: &Assignment| {
        assignment.to_admission("cq").pod_set_assignments[0].flavors["cpu"].clone()
    };

    let first = assign(full("default"), None);
    assert_eq!(flavor_of(&first), "on-demand");
    assert_eq!(flavor_of(&assign(full("on-demand"), None)), "default");
    let again = assign(full("on-demand"), Some(&first));
    assert_eq!(
        again.message(),
        main_msg(&format!(
            "{}, skipping flavor default as it is not found in the nomination mapping for resource cpu",
            unused("cpu", "on-demand", 3)
        )),
        "default has room, but on-demand was chosen first"
    );
}
