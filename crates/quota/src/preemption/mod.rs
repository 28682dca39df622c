//! Preemption target search (Kueue `pkg/scheduler/preemption`): the classical algorithm
//! (remove candidates in order until the preemptor fits, then put back the ones not needed) and
//! the fair-sharing one (preempt from the queues with the highest dominant resource share).

use std::cmp::Ordering;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use super::decision::PreemptionReason;
use super::model::{FlavorResource, PreemptionPolicy, Quantity, Workload};
use super::snapshot::{AdmittedWorkload, NodeId, Snapshot};
use super::topology::TopologyNeed;

mod classical;
mod fair;

use classical::classical_preemptions;
use fair::fair_preemptions;

/// What simulating preemption for one (flavor, resource) found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Possibility {
    /// Preemption would be needed, but no workload may be preempted.
    NoCandidates,
    /// Victims include workloads of the preemptor's own queue.
    Preempt,
    /// All victims are in other queues of the cohort.
    Reclaim,
}

/// A workload to preempt and why.
#[derive(Clone, Debug)]
pub(super) struct Target {
    pub(super) workload: Arc<AdmittedWorkload>,
    pub(super) reason: PreemptionReason,
}

/// The preemptor and what it needs.
struct Preemptor<'a> {
    workload: &'a Workload,
    cq: usize,
    needs_preemption: &'a BTreeSet<FlavorResource>,
    requests: &'a BTreeMap<FlavorResource, Quantity>,
    /// The placements its PodSets need in topology-aware flavors.
    topology: &'a [TopologyNeed],
}

/// Kueue's preemption oracle: can `quantity` of `fr` be freed for `workload` by preemption, and
/// at which borrowing level would it then fit.
pub(super) fn simulate(
    snapshot: &mut Snapshot,
    workload: &Workload,
    cq: usize,
    fr: &FlavorResource,
    quantity: Quantity,
) -> (Possibility, i32) {
    let needs = BTreeSet::from([fr.clone()]);
    let requests = BTreeMap::from([(fr.clone(), quantity)]);
    let targets = targets(snapshot, workload, cq, &needs, &requests, &[]);
    if targets.is_empty() {
        return (
            Possibility::NoCandidates,
            snapshot.lowest_fitting_subtree(cq, fr, quantity).0,
        );
    }
    for target in &targets {
        snapshot.remove_cq_usage(target.workload.cq, &target.workload.usage);
    }
    let (borrow_after, _) = snapshot.lowest_fitting_subtree(cq, fr, quantity);
    for target in &targets {
        snapshot.add_cq_usage(target.workload.cq, &target.workload.usage);
    }
    let possibility = if targets.iter().any(|target| target.workload.cq == cq) {
        Possibility::Preempt
    } else {
        Possibility::Reclaim
    };
    (possibility, borrow_after)
}

/// Workloads to preempt so that `requests` fit in queue `cq` and the `topology` needs find
/// their places; empty if impossible. The snapshot is left as it was found.
pub(super) fn targets(
    snapshot: &mut Snapshot,
    workload: &Workload,
    cq: usize,
    needs_preemption: &BTreeSet<FlavorResource>,
    requests: &BTreeMap<FlavorResource, Quantity>,
    topology: &[TopologyNeed],
) -> Vec<Target> {
    let preemptor = Preemptor {
        workload,
        cq,
        needs_preemption,
        requests,
        topology,
    };
    match snapshot
        .config
        .fair_sharing
        .as_ref()
        .map(|config| config.strategies())
    {
        Some(strategies) => fair_preemptions(snapshot, &preemptor, &strategies),
        None => classical_preemptions(snapshot, &preemptor),
    }
}

/// Kueue's `SatisfiesPreemptionPolicy`.
fn satisfies_policy(policy: PreemptionPolicy, preemptor: &Workload, candidate: &Workload) -> bool {
    let lower_priority = preemptor.priority > candidate.priority;
    match policy {
        PreemptionPolicy::Never => false,
        PreemptionPolicy::LowerPriority => lower_priority,
        PreemptionPolicy::LowerOrNewerEqualPriority => {
            lower_priority
                || (preemptor.priority == candidate.priority
                    && preemptor.queue_timestamp < candidate.queue_timestamp)
        }
        PreemptionPolicy::Any => true,
    }
}

fn uses_resources(workload: &AdmittedWorkload, frs: &BTreeSet<FlavorResource>) -> bool {
    workload.usage.keys().any(|fr| frs.contains(fr))
}

/// Kueue's `CandidatesOrdering`: evicted first, other queues first, (under admission fair
/// sharing, between LocalQueues of one ClusterQueue) the LocalQueue that used more first, lower
/// priority first, most recently admitted first, then UID.
fn candidate_order(
    snapshot: &Snapshot,
    preemptor_cq: usize,
    a: &AdmittedWorkload,
    b: &AdmittedWorkload,
) -> Ordering {
    let reserved_at = |w: &AdmittedWorkload| w.workload.quota_reserved_at.unwrap_or(snapshot.now);
    let local_queue_usage = || {
        if a.cq != b.cq || a.workload.local_queue == b.workload.local_queue {
            return Ordering::Equal;
        }
        match (
            snapshot.local_queue_usage_of(a.cq, &a.workload),
            snapshot.local_queue_usage_of(b.cq, &b.workload),
        ) {
            (Some(usage_a), Some(usage_b)) => usage_b.total_cmp(&usage_a),
            _ => Ordering::Equal,
        }
    };
    b.workload
        .evicted
        .cmp(&a.workload.evicted)
        .then_with(|| (a.cq == preemptor_cq).cmp(&(b.cq == preemptor_cq)))
        .then_with(local_queue_usage)
        .then_with(|| a.workload.priority.cmp(&b.workload.priority))
        .then_with(|| reserved_at(b).cmp(&reserved_at(a)))
        .then_with(|| a.workload.uid.cmp(&b.workload.uid))
        .then_with(|| a.workload.key.cmp(&b.workload.key))
}

/// Whether the preemptor, in its current snapshot state, fits, in quota and in the topology
/// (Kueue's `workloadFits`); `allow_borrowing` false also requires it to stay within nominal
/// quota.
fn preemptor_fits(snapshot: &Snapshot, preemptor: &Preemptor<'_>, allow_borrowing: bool) -> bool {
    preemptor.requests.iter().all(|(fr, value)| {
        (allow_borrowing || !snapshot.cq_borrowing_with(preemptor.cq, fr, *value))
            && *value <= snapshot.available(preemptor.cq, fr)
    }) && snapshot.topology_fits(preemptor.topology)
}

/// Puts removed targets back one by one (newest first) and drops those not needed for the fit.
fn fill_back(
    snapshot: &mut Snapshot,
    preemptor: &Preemptor<'_>,
    mut targets: Vec<Target>,
    allow_borrowing: bool,
) -> Vec<Target> {
    for index in (0..targets.len().saturating_sub(1)).rev() {
        snapshot.add_workload(&targets[index].workload);
        if preemptor_fits(snapshot, preemptor, allow_borrowing) {
            targets.swap_remove(index);
        } else {
            snapshot.remove_workload(&targets[index].workload);
        }
    }
    targets
}

fn restore(snapshot: &mut Snapshot, targets: &[Target]) {
    for target in targets {
        snapshot.add_workload(&target.workload);
    }
}

/// Kueue's preemption message for a victim.
pub(super) fn victim_message(
    snapshot: &Snapshot,
    preemptor: &Workload,
    preemptor_cq: usize,
    target: &Target,
) -> String {
    let or_unknown = |value: &str| {
        if value.is_empty() {
            "UNKNOWN".to_owned()
        } else {
            value.to_owned()
        }
    };
    format!(
        "Preempted to accommodate a workload (UID: {uid}, JobUID: {job_uid}) due to {reason}; preemptor path: {preemptor_path}; preemptee path: {preemptee_path}",
        uid = or_unknown(&preemptor.uid),
        job_uid = or_unknown(preemptor.job_uid.as_deref().unwrap_or_default()),
        reason = target.reason.human_readable(),
        preemptor_path = queue_path(snapshot, preemptor_cq),
        preemptee_path = queue_path(snapshot, target.workload.cq),
    )
}

/// `/root/.../parent/queue`.
fn queue_path(snapshot: &Snapshot, cq: usize) -> String {
    let mut parts: Vec<&str> = snapshot
        .ancestors(NodeId::ClusterQueue(cq))
        .into_iter()
        .rev()
        .map(|cohort| snapshot.cohorts[cohort].name.as_str())
        .collect();
    parts.push(&snapshot.cqs[cq].spec.name);
    format!("/{}", parts.join("/"))
}
