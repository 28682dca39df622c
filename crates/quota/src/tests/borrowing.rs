//! Borrowing and lending in flat and hierarchical cohorts, and `max_possible`.

use pretty_assertions::assert_eq;

use super::super::model::*;
use super::super::{PendingReason, max_possible};
use super::builders::*;
use super::{Scenario, builder, run, snapshot};

fn cpu_quota(name: &str, quota: ResourceQuota) -> ClusterQueue {
    ClusterQueue::new(name).group(group(&["cpu"], vec![fq("default", vec![quota])]))
}

fn exceeds(request: Quantity, maximum: Quantity) -> String {
    main_msg(&format!(
        "insufficient quota for cpu in flavor default, previously considered podsets requests (0) + current podset request ({request}) > maximum capacity ({maximum})"
    ))
}

fn cohort_with_cpu(name: &str, parent: Option<&str>, quota: Option<ResourceQuota>) -> Cohort {
    Cohort {
        parent: parent.map(str::to_owned),
        resource_groups: quota
            .map(|quota| vec![group(&["cpu"], vec![fq("default", vec![quota])])])
            .unwrap_or_default(),
        ..Cohort::new(name)
    }
}

#[test]
fn borrowing_scenarios() {
    run(vec![
        Scenario {
            name: "borrows unused quota of the cohort",
            snapshot: snapshot(
                vec![
                    cq_cpu("cq-a", 5).cohort("all"),
                    cq_cpu("cq-b", 5).cohort("all"),
                ],
                vec![],
            ),
            pending: vec![wl("a", "cq-a", 1, 8)],
            want: vec![admit_cpu("a", "cq-a", "default", 8)],
        },
        Scenario {
            name: "borrowing limit caps the maximum capacity",
            snapshot: snapshot(
                vec![
                    cpu_quota("cq-a", rq_limits("cpu", 5, Some(2), None)).cohort("all"),
                    cq_cpu("cq-b", 5).cohort("all"),
                ],
                vec![],
            ),
            pending: vec![wl("a", "cq-a", 1, 8)],
            want: vec![inadmissible(
                "a",
                PendingReason::ExceedsMaxQuota,
                &exceeds(8, 7),
            )],
        },
        Scenario {
            name: "lending limit keeps quota out of the cohort",
            snapshot: snapshot(
                vec![
                    cq_cpu("cq-a", 5).cohort("all"),
                    cpu_quota("cq-b", rq_limits("cpu", 5, None, Some(1))).cohort("all"),
                ],
                vec![],
            ),
            pending: vec![wl("a", "cq-a", 1, 8)],
            want: vec![inadmissible(
                "a",
                PendingReason::ExceedsMaxQuota,
                &exceeds(8, 6),
            )],
        },
        Scenario {
            name: "lender keeps its local quota while the cohort borrows the rest",
            snapshot: snapshot(
                vec![
                    cq_cpu("cq-a", 5).cohort("all"),
                    cpu_quota("cq-b", rq_limits("cpu", 5, None, Some(1))).cohort("all"),
                ],
                vec![wl("borrower", "cq-a", 0, 6).admitted_in("cq-a", "default", 1)],
            ),
            pending: vec![wl("b", "cq-b", 1, 4)],
            want: vec![admit_cpu("b", "cq-b", "default", 4)],
        },
        Scenario {
            name: "usage of other queues limits borrowing",
            snapshot: snapshot(
                vec![
                    cq_cpu("cq-a", 5).cohort("all"),
                    cq_cpu("cq-b", 5).cohort("all"),
                ],
                vec![wl("other", "cq-b", 0, 5).admitted_in("cq-b", "default", 1)],
            ),
            pending: vec![wl("a", "cq-a", 1, 8)],
            want: vec![inadmissible(
                "a",
                PendingReason::WaitingForQuota,
                &main_msg(&unused("cpu", "default", 3)),
            )],
        },
        Scenario {
            name: "borrowing from an ancestor cohort's own quota",
            snapshot: builder()
                .cohort(cohort_with_cpu("org", None, Some(rq("cpu", 4))))
                .cohort(cohort_with_cpu("team", Some("org"), None))
                .cluster_queue(cq_cpu("cq-a", 2).cohort("team"))
                .build(),
            pending: vec![wl("a", "cq-a", 1, 6)],
            want: vec![admit_cpu("a", "cq-a", "default", 6)],
        },
        Scenario {
            name: "hierarchy capacity is the maximum",
            snapshot: builder()
                .cohort(cohort_with_cpu("org", None, Some(rq("cpu", 4))))
                .cohort(cohort_with_cpu("team", Some("org"), None))
                .cluster_queue(cq_cpu("cq-a", 2).cohort("team"))
                .build(),
            pending: vec![wl("a", "cq-a", 1, 7)],
            want: vec![inadmissible(
                "a",
                PendingReason::ExceedsMaxQuota,
                &exceeds(7, 6),
            )],
        },
        Scenario {
            name: "a cohort's lending limit keeps its quota inside its subtree",
            snapshot: builder()
                .cohort(cohort_with_cpu("org", None, None))
                .cohort(cohort_with_cpu(
                    "team-a",
                    Some("org"),
                    Some(rq_limits("cpu", 4, None, Some(0))),
                ))
                .cohort(cohort_with_cpu("team-b", Some("org"), None))
                .cluster_queue(cq_cpu("cq-a", 0).cohort("team-a"))
                .cluster_queue(cq_cpu("cq-b", 1).cohort("team-b"))
                .build(),
            pending: vec![wl("a", "cq-a", 1, 3), wl("b", "cq-b", 1, 3)],
            // Non-borrowing entries (here the failing one) are processed first.
            want: vec![
                inadmissible("b", PendingReason::ExceedsMaxQuota, &exceeds(3, 1)),
                admit_cpu("a", "cq-a", "default", 3),
            ],
        },
    ]);
}

#[test]
fn max_possible_per_flavor() {
    let snapshot = snapshot(
        vec![
            ClusterQueue::new("cq-a")
                .cohort("all")
                .group(group(
                    &["cpu"],
                    vec![
                        fq("on-demand", vec![rq_limits("cpu", 5, Some(2), None)]),
                        fq("spot", vec![rq("cpu", 1)]),
                    ],
                ))
                .group(group(
                    &["memory"],
                    vec![fq("default", vec![rq("memory", 64)])],
                )),
            ClusterQueue::new("cq-b").cohort("all").group(group(
                &["cpu"],
                vec![
                    fq("on-demand", vec![rq("cpu", 10)]),
                    fq("spot", vec![rq("cpu", 3)]),
                ],
            )),
        ],
        // Usage does not lower the maximum.
        vec![wl("big", "cq-b", 0, 10).admitted_in("cq-b", "on-demand", 1)],
    );
    assert_eq!(
        max_possible(&snapshot, "cq-a", "cpu"),
        Some(vec![("on-demand".to_owned(), 7), ("spot".to_owned(), 4)])
    );
    assert_eq!(
        max_possible(&snapshot, "cq-a", "memory"),
        Some(vec![("default".to_owned(), 64)])
    );
    assert_eq!(max_possible(&snapshot, "cq-a", "gpu"), None);
    assert_eq!(max_possible(&snapshot, "missing", "cpu"), None);
}
