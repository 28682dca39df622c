//! One scheduling pass of the admitter (`Planner::plan`: conversion of the stores, overlay,
//! requeueing, queues and the quota cycle; no API server) on a cluster shaped like Kueue's
//! baseline scenario: 5 cohorts of 6 ClusterQueues, each full with 20 quota holders and 100
//! Workloads pending behind them. Prints min / median / max of the first pass, of a pass with
//! nothing changed, and of a pass after one holder finished (its ClusterQueue admits the head
//! into the freed quota, which the next pass sees as held, as the store would show it). A pass's
//! time includes dropping its plan, as the loop does, and the admitter's allocator.
//! Run: `cargo bench --bench scheduling_pass`.

use std::{
    sync::Arc,
    time::{Duration, Instant},
};

use jiff::Timestamp;
use kuota::admitter::scheduling::{Planner, cluster_state::ClusterState};
use kuota::api::v1beta2::Workload;
use kuota::quota::{Decision, SchedulerConfig, from_api::ConversionOptions};
use kuota::testing::objects::{
    WorkloadBuilder, cluster_queue, flavor, local_queue, namespace, workload,
};
use serde_json::json;

/// As the admitter runs: see the allocator's comment in src/main.rs.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

const COHORTS: usize = 5;
const QUEUES_PER_COHORT: usize = 6;
const HOLDERS_PER_QUEUE: usize = 20;
const PENDING_PER_QUEUE: usize = 100;
const PASSES: usize = 200;

fn queues() -> usize {
    COHORTS * QUEUES_PER_COHORT
}

/// One pod of one CPU, in LocalQueue `lq-{queue}` of namespace `ns`.
fn one_cpu(name: &str, queue: usize, created: i64) -> WorkloadBuilder {
    workload("ns", name)
        .queue(&format!("lq-{queue}"))
        .created(created)
        .pod_set("main", 1, json!({"cpu": "1"}))
}

/// Holds one CPU of flavor `default` in ClusterQueue `cq-{queue}`.
fn reserved(name: &str, queue: usize, created: i64) -> WorkloadBuilder {
    let assignment = json!([{
        "name": "main", "flavors": {"cpu": "default"}, "resourceUsage": {"cpu": "1"}, "count": 1,
    }]);
    one_cpu(name, queue, created).reserved(&format!("cq-{queue}"), assignment)
}

fn holding(name: &str, queue: usize, created: i64) -> Workload {
    reserved(name, queue, created).build()
}

fn finished(name: &str, queue: usize, created: i64) -> Workload {
    reserved(name, queue, created)
        .condition("Finished", "True", "Succeeded", "done", 1)
        .build()
}

fn cluster() -> ClusterState {
    let nominal = HOLDERS_PER_QUEUE.to_string();
    let cluster_queues = (0..queues())
        .map(|queue| {
            Arc::new(
                cluster_queue(&format!("cq-{queue}"))
                    .cohort(&format!("cohort-{}", queue / QUEUES_PER_COHORT))
                    .group(&["cpu"], &[("default", &[("cpu", nominal.as_str())])])
                    .spec(
                        "preemption",
                        json!({"withinClusterQueue": "LowerPriority", "reclaimWithinCohort": "Any"}),
                    )
                    .build(),
            )
        })
        .collect();
    let local_queues = (0..queues())
        .map(|queue| {
            Arc::new(local_queue(
                "ns",
                &format!("lq-{queue}"),
                &format!("cq-{queue}"),
            ))
        })
        .collect();
    let mut workloads = Vec::new();
    for queue in 0..queues() {
        for index in 0..HOLDERS_PER_QUEUE {
            workloads.push(Arc::new(holding(
                &format!("held-{queue}-{index}"),
                queue,
                index as i64,
            )));
        }
        for index in 0..PENDING_PER_QUEUE {
            let created = (HOLDERS_PER_QUEUE + index) as i64;
            let name = format!("pending-{queue}-{index}");
            workloads.push(Arc::new(one_cpu(&name, queue, created).build()));
        }
    }
    ClusterState {
        resource_flavors: vec![Arc::new(flavor("default"))],
        namespaces: vec![Arc::new(namespace("ns", json!({})))],
        cluster_queues,
        local_queues,
        workloads,
        ..Default::default()
    }
}

/// The queue index of a benchmark workload's name (`held-3-7`, `pending-3-42`).
fn queue_of(name: &str) -> usize {
    name.split('-')
        .nth(1)
        .and_then(|q| q.parse().ok())
        .expect("bench name")
}

fn position(state: &ClusterState, name: &str) -> usize {
    state
        .workloads
        .iter()
        .position(|object| object.metadata.name.as_deref() == Some(name))
        .expect("bench workload")
}

struct Timings(Vec<Duration>);

impl Timings {
    fn row(mut self, what: &str) -> String {
        self.0.sort();
        let ms = |d: &Duration| d.as_secs_f64() * 1e3;
        let (min, median, max) = (
            ms(&self.0[0]),
            ms(&self.0[self.0.len() / 2]),
            ms(&self.0[self.0.len() - 1]),
        );
        format!("| {what} | {min:.2} / {median:.2} / {max:.2} |")
    }
}

fn main() {
    let now = Timestamp::from_second(1_000_000).expect("time");
    let mut state = cluster();
    let mut planner = Planner::new(ConversionOptions::default(), SchedulerConfig::default());

    let started = Instant::now();
    let first = planner.plan(&state, now);
    let first_pass = started.elapsed();
    let admitted_first = first
        .decisions
        .iter()
        .filter(|decision| matches!(decision, Decision::Admit { .. }))
        .count();
    drop(first);

    let steady = Timings(
        (0..PASSES)
            .map(|_| {
                let started = Instant::now();
                let plan = planner.plan(&state, now);
                let decided = plan.decisions.len();
                // The loop drops each pass's plan too.
                drop(plan);
                let elapsed = started.elapsed();
                assert_eq!(decided, 0, "nothing changed, nothing decided");
                elapsed
            })
            .collect(),
    );

    // Each holder finishes once; what its ClusterQueue admits holds quota from the next pass.
    let mut admitted_after_finish = 0;
    let mut churn = Vec::with_capacity(PASSES);
    for step in 0..PASSES {
        let queue = step % queues();
        let name = format!("held-{queue}-{}", step / queues());
        let at = position(&state, &name);
        state.workloads[at] = Arc::new(finished(&name, queue, 0));
        let started = Instant::now();
        let plan = planner.plan(&state, now);
        let admitted: Vec<String> = plan
            .decisions
            .iter()
            .filter_map(|decision| match decision {
                Decision::Admit { workload, .. } => Some(workload.clone()),
                _ => None,
            })
            .collect();
        drop(plan);
        churn.push(started.elapsed());
        for workload in admitted {
            let name = workload.trim_start_matches("ns/");
            let at = position(&state, name);
            state.workloads[at] = Arc::new(holding(name, queue_of(name), 0));
            admitted_after_finish += 1;
        }
    }

    let total = state.workloads.len();
    println!(
        "{total} Workloads in {} ClusterQueues ({COHORTS} cohorts)",
        queues()
    );
    println!(
        "first pass admitted {admitted_first}; {admitted_after_finish} admitted in {PASSES} passes after a holder finished"
    );
    println!();
    println!("| pass | wall time, min / median / max (ms) |");
    println!("|---|---|");
    println!("{}", Timings(vec![first_pass]).row("first (empty caches)"));
    println!(
        "{}",
        steady.row(&format!("nothing changed ({PASSES} passes)"))
    );
    println!(
        "{}",
        Timings(churn).row(&format!("one holder finished ({PASSES} passes)"))
    );
}
