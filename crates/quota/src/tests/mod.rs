//! Table-driven scenarios for the scheduling core.

mod admission;
mod admission_fair_sharing;
mod borrowing;
mod builders;
mod fair_sharing;
mod preemption;
mod properties;
mod queueing;
mod topology;

use pretty_assertions::assert_eq;

use super::model::{ClusterQueue, TaintEffect, Workload};
use super::{Decision, Queues, Snapshot, SnapshotBuilder, cycle};
use builders::{FlavorExt, flavor, ts};

/// One cycle over a snapshot and pending workloads, with the decisions it must produce.
struct Scenario {
    name: &'static str,
    snapshot: Snapshot,
    pending: Vec<Workload>,
    want: Vec<Decision>,
}

fn run(scenarios: Vec<Scenario>) {
    for scenario in scenarios {
        let mut queues = Queues::new();
        for workload in scenario.pending {
            queues.push(workload);
        }
        let got = cycle(&scenario.snapshot, &mut queues);
        assert_eq!(got, scenario.want, "scenario: {}", scenario.name);
    }
}

/// A snapshot builder at t=100 with the standard flavors: `default` (no labels), `on-demand`
/// (`instance=on-demand`), `spot` (`instance=spot`, taint `spot=true:NoSchedule`).
fn builder() -> SnapshotBuilder {
    Snapshot::builder(ts(100))
        .flavor(flavor("default"))
        .flavor(flavor("on-demand").label("instance", "on-demand"))
        .flavor(flavor("spot").label("instance", "spot").taint(
            "spot",
            "true",
            TaintEffect::NoSchedule,
        ))
}

/// The standard snapshot with these queues and admitted workloads.
fn snapshot(cluster_queues: Vec<ClusterQueue>, admitted: Vec<Workload>) -> Snapshot {
    let builder = cluster_queues
        .into_iter()
        .fold(builder(), SnapshotBuilder::cluster_queue);
    admitted
        .into_iter()
        .fold(builder, SnapshotBuilder::admitted)
        .build()
}
