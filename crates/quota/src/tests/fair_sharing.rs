//! Fair sharing: tournament order by dominant resource share, fair preemption, weighted shares.

use pretty_assertions::assert_eq;

use super::super::model::*;
use super::super::{FairSharingConfig, PendingReason, PreemptionReason, SchedulerConfig, Snapshot};
use super::builders::*;
use super::{Scenario, builder, run};

fn fair() -> SchedulerConfig {
    SchedulerConfig {
        fair_sharing: Some(FairSharingConfig {
            preemption_strategies: Vec::new(),
        }),
        ..SchedulerConfig::default()
    }
}

fn with(config: SchedulerConfig, queues: Vec<ClusterQueue>, admitted: Vec<Workload>) -> Snapshot {
    let builder = queues
        .into_iter()
        .fold(builder().config(config), |b, cq| b.cluster_queue(cq));
    admitted
        .into_iter()
        .fold(builder, |b, w| b.admitted(w))
        .build()
}

/// cq-a and cq-b own 2 each, a lender owns 6; cq-a already borrows 4, cq-b nothing; 2 are free.
fn contested(config: SchedulerConfig, b_weight: f64) -> Snapshot {
    with(
        config,
        vec![
            cq_cpu("cq-a", 2).cohort("all"),
            cq_cpu("cq-b", 2).cohort("all").weight(b_weight),
            cq_cpu("lender", 6).cohort("all"),
        ],
        vec![
            wl("a0", "cq-a", 0, 6).admitted_in("cq-a", "default", 1),
            wl("b0", "cq-b", 0, 2).admitted_in("cq-b", "default", 1),
        ],
    )
}

fn waiting(name: &str, more: Quantity) -> super::super::Decision {
    inadmissible(
        name,
        PendingReason::WaitingForQuota,
        &main_msg(&unused("cpu", "default", more)),
    )
}

fn pending_preemption(more: Quantity) -> String {
    format!(
        "{}. Pending the preemption of 1 workload(s)",
        main_msg(&unused("cpu", "default", more))
    )
}

#[test]
fn fair_sharing_order() {
    let heads = vec![wl("a-head", "cq-a", 1, 2), wl("b-head", "cq-b", 2, 2)];
    run(vec![
        Scenario {
            name: "classical order: older head first",
            snapshot: contested(SchedulerConfig::default(), 1.0),
            pending: heads.clone(),
            want: vec![
                admit_cpu("a-head", "cq-a", "default", 2),
                waiting("b-head", 2),
            ],
        },
        Scenario {
            name: "fair sharing: the queue with the lower share goes first",
            snapshot: contested(fair(), 1.0),
            pending: heads.clone(),
            want: vec![
                admit_cpu("b-head", "cq-b", "default", 2),
                waiting("a-head", 2),
            ],
        },
        Scenario {
            name: "fair sharing weights scale the share",
            snapshot: contested(fair(), 0.25),
            pending: heads,
            want: vec![
                admit_cpu("a-head", "cq-a", "default", 2),
                waiting("b-head", 2),
            ],
        },
    ]);
}

#[test]
fn fair_sharing_preemption() {
    run(vec![
        Scenario {
            name: "a queue within its nominal quota reclaims from the borrower, minimal set",
            snapshot: with(
                fair(),
                vec![
                    cq_cpu("cq-a", 5)
                        .cohort("all")
                        .reclaim(PreemptionPolicy::Any),
                    cq_cpu("cq-b", 5).cohort("all"),
                ],
                vec![
                    wl("b1", "cq-b", 0, 3).admitted_in("cq-b", "default", 1),
                    wl("b2", "cq-b", 0, 3).admitted_in("cq-b", "default", 2),
                    wl("b3", "cq-b", 0, 2).admitted_in("cq-b", "default", 3),
                    wl("a1", "cq-a", 0, 2).admitted_in("cq-a", "default", 1),
                ],
            ),
            pending: vec![wl("a-new", "cq-a", 5, 3)],
            want: vec![preempt(
                "a-new",
                vec![victim(
                    "b2",
                    "cq-b",
                    PreemptionReason::InCohortReclamation,
                    "a-new",
                    ("/all/cq-a", "/all/cq-b"),
                )],
                &pending_preemption(3),
            )],
        },
        Scenario {
            name: "a borrowing queue preempts from one with a higher share",
            snapshot: with(
                fair(),
                vec![
                    cq_cpu("cq-a", 2)
                        .cohort("all")
                        .reclaim(PreemptionPolicy::Any),
                    cq_cpu("cq-b", 2).cohort("all"),
                    cq_cpu("lender", 6).cohort("all"),
                ],
                vec![
                    wl("b1", "cq-b", 0, 3).admitted_in("cq-b", "default", 1),
                    wl("b2", "cq-b", 0, 3).admitted_in("cq-b", "default", 2),
                    wl("a1", "cq-a", 0, 2).admitted_in("cq-a", "default", 1),
                ],
            ),
            pending: vec![wl("a-new", "cq-a", 5, 3)],
            want: vec![preempt(
                "a-new",
                vec![victim(
                    "b2",
                    "cq-b",
                    PreemptionReason::InCohortFairSharing,
                    "a-new",
                    ("/all/cq-a", "/all/cq-b"),
                )],
                &pending_preemption(1),
            )],
        },
        Scenario {
            name: "no fair preemption from a queue with a lower share",
            snapshot: with(
                fair(),
                vec![
                    cq_cpu("cq-a", 2)
                        .cohort("all")
                        .reclaim(PreemptionPolicy::Any),
                    cq_cpu("cq-b", 2).cohort("all"),
                    cq_cpu("lender", 6).cohort("all"),
                ],
                vec![
                    wl("b1", "cq-b", 0, 3).admitted_in("cq-b", "default", 1),
                    wl("a1", "cq-a", 0, 6).admitted_in("cq-a", "default", 1),
                ],
            ),
            pending: vec![wl("a-new", "cq-a", 5, 2)],
            want: vec![waiting("a-new", 1)],
        },
    ]);
}

#[test]
fn weighted_shares() {
    let snapshot = with(
        fair(),
        vec![
            cq_cpu("cq-a", 2).cohort("all"),
            cq_cpu("cq-b", 2).cohort("all").weight(2.0),
            cq_cpu("cq-c", 2).cohort("all").weight(0.0),
            cq_cpu("lender", 4).cohort("all"),
        ],
        vec![
            wl("a1", "cq-a", 0, 2).admitted_in("cq-a", "default", 1),
            wl("b1", "cq-b", 0, 5).admitted_in("cq-b", "default", 1),
            wl("c1", "cq-c", 0, 3).admitted_in("cq-c", "default", 1),
        ],
    );
    // Lendable cpu is 10: cq-b borrows 3 (300 per mille, weight 2), cq-c borrows 1 with weight 0.
    assert_eq!(snapshot.cluster_queue_weighted_share("cq-a"), Some(0));
    assert_eq!(snapshot.cluster_queue_weighted_share("cq-b"), Some(150));
    assert_eq!(
        snapshot.cluster_queue_weighted_share("cq-c"),
        Some(i64::MAX)
    );
    assert_eq!(snapshot.cohort_weighted_share("all"), Some(0));
    assert_eq!(snapshot.cluster_queue_weighted_share("missing"), None);
}
