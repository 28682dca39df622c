//! Admission fair sharing: LocalQueues that used less go first within a ClusterQueue that asks
//! for it, each admission charges its LocalQueue for the rest of the cycle, and preemption in
//! the ClusterQueue takes from the LocalQueue that used more first.

use pretty_assertions::assert_eq;

use super::super::model::*;
use super::super::{
    AdmissionFairSharingConfig, Decision, LocalQueueUsage, PendingReason, PreemptionReason, Queues,
    SchedulerConfig, Snapshot, cycle,
};
use super::builder;
use super::builders::*;

fn base_units(_resource: &str, value: Quantity) -> f64 {
    value as f64
}

/// Half of a workload's requests charged to its LocalQueue on admission.
fn config() -> SchedulerConfig {
    SchedulerConfig {
        admission_fair_sharing: Some(AdmissionFairSharingConfig {
            resource_weights: [("cpu".to_owned(), 2.0)].into(),
            entry_penalty_rate: 0.5,
            base_units,
        }),
        ..SchedulerConfig::default()
    }
}

fn fair_queue(name: &str, cpu: Quantity) -> ClusterQueue {
    ClusterQueue {
        admission_fair_sharing: true,
        ..cq_cpu(name, cpu)
    }
}

fn in_queue(name: &str, local_queue: &str, created: i64) -> Workload {
    wl(name, "cq", created, 1).local_queue(local_queue)
}

fn usages(pairs: &[(&str, f64)]) -> foldhash::HashMap<String, LocalQueueUsage> {
    pairs
        .iter()
        .map(|(local_queue, usage)| {
            (
                format!("ns/{local_queue}"),
                LocalQueueUsage {
                    usage: *usage,
                    weight: 1.0,
                },
            )
        })
        .collect()
}

fn run_cycle(snapshot: &Snapshot, pending: Vec<Workload>) -> Vec<Decision> {
    let mut queues = Queues::new();
    for workload in pending {
        queues.push(workload);
    }
    cycle(snapshot, &mut queues)
}

fn waits(name: &str) -> Decision {
    inadmissible(
        name,
        PendingReason::WaitingForQuota,
        &main_msg(&unused("cpu", "default", 1)),
    )
}

#[test]
fn the_local_queue_that_used_less_goes_first_and_each_admission_counts_at_once() {
    let pending = || {
        vec![
            in_queue("a1", "lq-a", 1),
            in_queue("a2", "lq-a", 2),
            in_queue("b1", "lq-b", 3),
        ]
    };
    let fair = |cq: ClusterQueue, config: SchedulerConfig, used: &[(&str, f64)]| {
        builder()
            .config(config)
            .cluster_queue(cq)
            .build()
            .with_local_queue_usage(usages(used))
    };

    // Neither LocalQueue used anything: a1 goes first by queue order, its charge (1 CPU at
    // half, weighed 2) puts lq-a behind lq-b.
    assert_eq!(
        run_cycle(&fair(fair_queue("cq", 2), config(), &[]), pending()),
        vec![
            admit_cpu("a1", "cq", "default", 1),
            admit_cpu("b1", "cq", "default", 1),
            waits("a2"),
        ]
    );
    // lq-a used more before the cycle: lq-b's workload goes first.
    assert_eq!(
        run_cycle(
            &fair(
                fair_queue("cq", 2),
                config(),
                &[("lq-a", 5.0), ("lq-b", 0.5)]
            ),
            pending()
        ),
        vec![
            admit_cpu("b1", "cq", "default", 1),
            admit_cpu("a1", "cq", "default", 1),
            waits("a2"),
        ]
    );
    // Without the ClusterQueue's admission scope, or without the configuration, queue order.
    let queue_order = vec![
        admit_cpu("a1", "cq", "default", 1),
        admit_cpu("a2", "cq", "default", 1),
        waits("b1"),
    ];
    assert_eq!(
        run_cycle(
            &fair(cq_cpu("cq", 2), config(), &[("lq-a", 5.0)]),
            pending()
        ),
        queue_order
    );
    assert_eq!(
        run_cycle(
            &fair(
                fair_queue("cq", 2),
                SchedulerConfig::default(),
                &[("lq-a", 5.0)]
            ),
            pending()
        ),
        queue_order
    );
}

#[test]
fn preemption_in_the_queue_takes_from_the_local_queue_that_used_more_first() {
    let victims_of = |cq: ClusterQueue, used: &[(&str, f64)]| {
        let snapshot = builder()
            .config(config())
            .cluster_queue(cq.within(PreemptionPolicy::LowerPriority))
            .admitted(in_queue("a-low", "lq-a", 0).admitted_in("cq", "default", 1))
            .admitted(in_queue("b-low", "lq-b", 0).admitted_in("cq", "default", 2))
            .build()
            .with_local_queue_usage(usages(used));
        run_cycle(&snapshot, vec![in_queue("high", "lq-c", 5).priority(10)])
    };
    let preempts = |victim_name: &str| {
        vec![preempt(
            "high",
            vec![victim(
                victim_name,
                "cq",
                PreemptionReason::InClusterQueue,
                "high",
                ("/cq", "/cq"),
            )],
            &format!(
                "{}. Pending the preemption of 1 workload(s)",
                main_msg(&unused("cpu", "default", 1))
            ),
        )]
    };
    // The most recently admitted goes first, unless its LocalQueue used less.
    assert_eq!(victims_of(fair_queue("cq", 2), &[]), preempts("b-low"));
    assert_eq!(
        victims_of(fair_queue("cq", 2), &[("lq-a", 3.0), ("lq-b", 1.0)]),
        preempts("a-low")
    );
    assert_eq!(
        victims_of(cq_cpu("cq", 2), &[("lq-a", 3.0), ("lq-b", 1.0)]),
        preempts("b-low")
    );
}

#[test]
fn usage_decays_toward_the_current_use_and_weighs_per_resource() {
    use super::super::{decay_rate, decayed, entry_penalty, weighted_usage};

    assert_eq!(decay_rate(60.0, 60.0), 0.5);
    assert_eq!(decay_rate(60.0, 0.0), 0.0);
    let history = [("cpu".to_owned(), 8.0), ("memory".to_owned(), 4.0)].into();
    let current = [("cpu".to_owned(), 2.0)].into();
    assert_eq!(
        decayed(&history, &current, 120.0, 60.0),
        [("cpu".to_owned(), 3.5), ("memory".to_owned(), 1.0)].into()
    );
    let weights = [("cpu".to_owned(), 2.0), ("memory".to_owned(), 0.0)].into();
    assert_eq!(weighted_usage(&history, &weights, 4.0), 4.0);
    assert_eq!(weighted_usage(&history, &weights, 0.0), f64::INFINITY);
    let usage = [
        (FlavorResource::new("a", "cpu"), 3),
        (FlavorResource::new("b", "cpu"), 1),
    ]
    .into();
    assert_eq!(
        entry_penalty(&usage, config().admission_fair_sharing.as_ref().unwrap()),
        [("cpu".to_owned(), 2.0)].into()
    );
}
