//! Properties of whole runs over random queues, cohorts and workloads: cycles are run until
//! nothing changes, their admissions applied and their victims requeued as the admitter would.
//! No ClusterQueue or cohort is ever over what its quotas allow, no workload is lost or
//! duplicated, and the same input always gives the same decisions.

use std::collections::BTreeMap;

use proptest::prelude::*;

use super::super::model::*;
use super::super::{Decision, Queues, RequeueScope, Snapshot, cycle};
use super::builders::*;

const FLAVORS: [&str; 2] = ["on-demand", "spot"];
const COHORT: &str = "cohort";
/// Cycles per run: enough for every input here to settle.
const MAX_CYCLES: i64 = 60;

/// One ClusterQueue: cpu quota per flavor (nominal, borrowing limit), cohort, policies.
#[derive(Clone, Debug)]
struct QueueSpec {
    quotas: Vec<(Quantity, Option<Quantity>)>,
    in_cohort: bool,
    within: PreemptionPolicy,
    reclaim: PreemptionPolicy,
}

/// One workload: its ClusterQueue (by index), cpu, priority and creation time.
#[derive(Clone, Debug)]
struct WorkloadSpec {
    queue: usize,
    cpu: Quantity,
    priority: i32,
    created: i64,
}

fn policy() -> impl Strategy<Value = PreemptionPolicy> {
    prop_oneof![
        Just(PreemptionPolicy::Never),
        Just(PreemptionPolicy::LowerPriority),
        Just(PreemptionPolicy::LowerOrNewerEqualPriority),
        Just(PreemptionPolicy::Any),
    ]
}

fn queue_spec() -> impl Strategy<Value = QueueSpec> {
    (
        prop::collection::vec((0..=12i64, prop::option::of(0..=6i64)), 1..=FLAVORS.len()),
        any::<bool>(),
        policy(),
        policy(),
    )
        .prop_map(|(quotas, in_cohort, within, reclaim)| QueueSpec {
            quotas,
            in_cohort,
            within,
            reclaim,
        })
}

fn input() -> impl Strategy<Value = (Vec<QueueSpec>, Vec<WorkloadSpec>)> {
    prop::collection::vec(queue_spec(), 1..=4).prop_flat_map(|queues| {
        let count = queues.len();
        let workload = (0..count, 1..=8i64, 0..=3i32, 0..=40i64).prop_map(
            |(queue, cpu, priority, created)| WorkloadSpec {
                queue,
                cpu,
                priority,
                created,
            },
        );
        (Just(queues), prop::collection::vec(workload, 0..=30))
    })
}

fn queue_name(index: usize) -> String {
    format!("cq-{index}")
}

fn cluster_queue(index: usize, spec: &QueueSpec) -> ClusterQueue {
    let flavors = spec
        .quotas
        .iter()
        .zip(FLAVORS)
        .map(|((nominal, borrowing), flavor)| {
            fq(
                flavor,
                vec![rq_limits(
                    "cpu",
                    nominal * 1000,
                    borrowing.map(|b| b * 1000),
                    None,
                )],
            )
        })
        .collect();
    let queue = ClusterQueue::new(&queue_name(index))
        .group(group(&["cpu"], flavors))
        .within(spec.within)
        .reclaim(spec.reclaim);
    if spec.in_cohort {
        queue.cohort(COHORT)
    } else {
        queue
    }
}

fn workload(index: usize, spec: &WorkloadSpec) -> Workload {
    wl(
        &format!("w{index}"),
        &queue_name(spec.queue),
        spec.created,
        spec.cpu * 1000,
    )
    .priority(i64::from(spec.priority))
}

/// Usage of each (queue, flavor) by the admitted workloads.
fn usage(admitted: &BTreeMap<String, Workload>) -> BTreeMap<(String, String), Quantity> {
    let mut used = BTreeMap::new();
    for workload in admitted.values() {
        let admission = workload.admission.as_ref().expect("an admitted workload");
        for (flavor_resource, quantity) in admission.usage() {
            *used
                .entry((
                    admission.cluster_queue.clone(),
                    flavor_resource.flavor.clone(),
                ))
                .or_insert(0) += quantity;
        }
    }
    used
}

/// Why the admitted workloads are over some quota, if they are.
fn over_quota(queues: &[QueueSpec], admitted: &BTreeMap<String, Workload>) -> Option<String> {
    let used = usage(admitted);
    for (flavor_index, flavor) in FLAVORS.iter().enumerate() {
        let mut cohort_nominal = 0;
        let mut cohort_used = 0;
        for (index, spec) in queues.iter().enumerate() {
            let (nominal, borrowing) = spec
                .quotas
                .get(flavor_index)
                .map_or((0, Some(0)), |(n, b)| (n * 1000, b.map(|b| b * 1000)));
            let queue_used = used
                .get(&(queue_name(index), (*flavor).to_owned()))
                .copied()
                .unwrap_or(0);
            let limit = match (spec.in_cohort, borrowing) {
                (false, _) => Some(nominal),
                (true, Some(borrowing)) => Some(nominal + borrowing),
                (true, None) => None,
            };
            if limit.is_some_and(|limit| queue_used > limit) {
                return Some(format!(
                    "{} uses {queue_used} of {flavor}, over {limit:?}",
                    queue_name(index)
                ));
            }
            if spec.in_cohort {
                cohort_nominal += nominal;
                cohort_used += queue_used;
            }
        }
        if cohort_used > cohort_nominal {
            return Some(format!(
                "the cohort uses {cohort_used} of {flavor}, over its {cohort_nominal}"
            ));
        }
    }
    None
}

/// Runs cycles until nothing changes, checking the invariants after each; returns every
/// decision made, in order.
fn simulate(queues: &[QueueSpec], workloads: &[WorkloadSpec]) -> Result<Vec<Decision>, String> {
    let cluster_queues: Vec<ClusterQueue> = queues
        .iter()
        .enumerate()
        .map(|(index, spec)| cluster_queue(index, spec))
        .collect();
    let mut known: BTreeMap<String, Workload> = workloads
        .iter()
        .enumerate()
        .map(|(index, spec)| {
            let workload = workload(index, spec);
            (workload.key.clone(), workload)
        })
        .collect();
    let mut pending = Queues::new();
    for workload in known.values() {
        pending.push(workload.clone());
    }
    let mut admitted: BTreeMap<String, Workload> = BTreeMap::new();
    let mut history = Vec::new();
    for step in 0..MAX_CYCLES {
        let now = 100 + step;
        let snapshot = admitted.values().cloned().fold(
            cluster_queues.iter().cloned().fold(
                FLAVORS
                    .iter()
                    .fold(Snapshot::builder(ts(now)), |builder, name| {
                        builder.flavor(flavor(name))
                    }),
                |builder, queue| builder.cluster_queue(queue),
            ),
            |builder, workload| builder.admitted(workload),
        );
        let snapshot = snapshot.build();
        let decisions = cycle(&snapshot, &mut pending);
        let mut changed = false;
        for decision in &decisions {
            match decision {
                Decision::Admit {
                    workload: key,
                    admission,
                } => {
                    if admitted.contains_key(key) {
                        return Err(format!("{key} admitted twice"));
                    }
                    let mut workload = known
                        .get(key)
                        .cloned()
                        .ok_or_else(|| format!("{key} admitted, but no such workload"))?;
                    workload.admission = Some(admission.clone());
                    workload.quota_reserved_at = Some(ts(now));
                    // As the planner does when the workload is no longer pending.
                    pending.remove(key);
                    admitted.insert(key.clone(), workload);
                    changed = true;
                }
                Decision::Preempt { victims, .. } => {
                    for victim in victims {
                        let Some(mut workload) = admitted.remove(&victim.workload) else {
                            return Err(format!("{} preempted, but not admitted", victim.workload));
                        };
                        // The job side finishes the eviction; the workload queues again.
                        workload.admission = None;
                        workload.quota_reserved_at = None;
                        workload.queue_timestamp = ts(now);
                        known.insert(workload.key.clone(), workload.clone());
                        pending.push(workload);
                        changed = true;
                    }
                }
                Decision::Evict { workload: key, .. } => {
                    return Err(format!("{key} evicted without a preemptor"));
                }
                Decision::Inadmissible { .. } => {}
            }
        }
        if let Some(over) = over_quota(queues, &admitted) {
            return Err(format!("after cycle {step}: {over}"));
        }
        for key in known.keys() {
            let queued = pending.contains(key);
            if queued == admitted.contains_key(key) {
                return Err(format!(
                    "after cycle {step}: {key} is {}",
                    if queued {
                        "both queued and admitted"
                    } else {
                        "neither queued nor admitted"
                    }
                ));
            }
        }
        history.extend(decisions);
        if changed {
            pending.requeue_inadmissible(&snapshot, RequeueScope::All);
        } else if !pending.has_work(ts(now)) {
            break;
        }
    }
    Ok(history)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn runs_never_exceed_quota_lose_a_workload_or_differ((queues, workloads) in input()) {
        let first = simulate(&queues, &workloads);
        prop_assert!(first.is_ok(), "{}", first.unwrap_err());
        let second = simulate(&queues, &workloads);
        prop_assert_eq!(first, second);
    }
}
