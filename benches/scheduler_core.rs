//! The pure scheduling core at scale: 5,000 pending workloads in 30 ClusterQueues (15 cohorts of
//! two), cycles run until nothing more is admitted. Prints wall time per cycle and in total, and
//! how many workloads were admitted. Run: `cargo bench --bench scheduler_core`.

use std::{collections::BTreeMap, time::Instant};

use jiff::Timestamp;
use kuota::quota::{
    Decision, Queues, Snapshot, cycle,
    model::{
        ClusterQueue, FlavorQuotas, PodSet, ResourceFlavor, ResourceGroup, ResourceQuota, Workload,
    },
};

const QUEUES: usize = 30;
const WORKLOADS: usize = 5_000;

fn cluster_queue(index: usize) -> ClusterQueue {
    let mut cq = ClusterQueue::new(&format!("cq-{index}"));
    cq.cohort = Some(format!("cohort-{}", index / 2));
    cq.namespace_selector = Some(Default::default());
    let quota = |name: &str, nominal| ResourceQuota {
        name: name.to_owned(),
        nominal,
        borrowing_limit: None,
        lending_limit: None,
    };
    cq.resource_groups = vec![ResourceGroup {
        covered_resources: vec!["cpu".into(), "memory".into()],
        flavors: ["on-demand", "spot"]
            .iter()
            .map(|flavor| FlavorQuotas {
                name: (*flavor).to_owned(),
                resources: vec![quota("cpu", 40_000), quota("memory", 160 << 30)],
            })
            .collect(),
    }];
    cq
}

fn workload(index: usize, now: Timestamp) -> Workload {
    let cq = index % QUEUES;
    let mut wl = Workload::new(&format!("ns-{cq}/wl-{index}"), &format!("cq-{cq}"), now);
    wl.uid = format!("uid-{index}");
    wl.priority = (index % 3) as i64 * 100;
    wl.pod_sets = vec![PodSet {
        name: "main".into(),
        count: 1 + (index % 4) as i32,
        min_count: None,
        requests: BTreeMap::from([("cpu".into(), 1_000), ("memory".into(), 2 << 30)]),
        node_selector: BTreeMap::new(),
        node_affinity: Vec::new(),
        tolerations: Vec::new(),
        topology: None,
    }]
    .into();
    wl
}

fn main() {
    let now = Timestamp::now();
    let mut admitted: Vec<Workload> = Vec::new();
    let mut queues = Queues::new();
    let mut pending = std::collections::HashMap::new();
    for index in 0..WORKLOADS {
        let wl = workload(index, now);
        pending.insert(wl.key.clone(), wl.clone());
        queues.push(wl);
    }
    let started = Instant::now();
    let mut cycles = 0;
    loop {
        let mut builder = Snapshot::builder(now)
            .flavor(ResourceFlavor {
                name: "on-demand".into(),
                ..Default::default()
            })
            .flavor(ResourceFlavor {
                name: "spot".into(),
                ..Default::default()
            });
        for index in 0..QUEUES {
            builder = builder.cluster_queue(cluster_queue(index));
        }
        for wl in &admitted {
            builder = builder.admitted(wl.clone());
        }
        let snapshot = builder.build();
        let cycle_started = Instant::now();
        let decisions = cycle(&snapshot, &mut queues);
        cycles += 1;
        let mut new = 0;
        for decision in decisions {
            if let Decision::Admit {
                workload,
                admission,
            } = decision
            {
                let mut wl = pending
                    .remove(&workload)
                    .expect("admitted a pending workload");
                wl.admission = Some(admission);
                admitted.push(wl);
                new += 1;
            }
        }
        println!(
            "cycle {cycles}: {new} admitted in {:.1} ms",
            cycle_started.elapsed().as_secs_f64() * 1e3
        );
        if new == 0 {
            break;
        }
    }
    println!(
        "{WORKLOADS} pending in {QUEUES} ClusterQueues: {} admitted after {cycles} cycles in {:.1} ms",
        admitted.len(),
        started.elapsed().as_secs_f64() * 1e3
    );
}
