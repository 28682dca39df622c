//! Classical preemption (Kueue `pkg/scheduler/preemption/classical`): candidates within the
//! ClusterQueue and, by the policies, across the cohort tree, removed in order until the
//! preemptor fits.

use std::collections::BTreeMap;
use std::sync::Arc;

use crate::decision::PreemptionReason;
use crate::model::{BorrowWithinCohortPolicy, FlavorResource, PreemptionPolicy, Quantity};
use crate::snapshot::{AdmittedWorkload, NodeId, Snapshot};

use super::{
    Preemptor, Target, candidate_order, fill_back, preemptor_fits, restore, satisfies_policy,
    uses_resources,
};

/// How a candidate may be preempted (Kueue `preemptionVariant`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Variant {
    WithinClusterQueue,
    HierarchicalReclaim,
    ReclaimWithoutBorrowing,
    ReclaimWhileBorrowing,
}

impl Variant {
    fn reason(self) -> PreemptionReason {
        match self {
            Self::WithinClusterQueue => PreemptionReason::InClusterQueue,
            Self::HierarchicalReclaim | Self::ReclaimWithoutBorrowing => {
                PreemptionReason::InCohortReclamation
            }
            Self::ReclaimWhileBorrowing => PreemptionReason::InCohortReclaimWhileBorrowing,
        }
    }
}

struct Candidate {
    workload: Arc<AdmittedWorkload>,
    /// Root of the subtree in which the candidate was found.
    lca: Option<usize>,
    variant: Variant,
}

fn classify(
    snapshot: &Snapshot,
    preemptor: &Preemptor<'_>,
    candidate: &AdmittedWorkload,
    hierarchical_advantage: bool,
) -> Option<Variant> {
    if !uses_resources(candidate, preemptor.needs_preemption) {
        return None;
    }
    let preemption = &snapshot.cqs[preemptor.cq].spec.preemption;
    let same_queue = candidate.cq == preemptor.cq;
    let policy = if same_queue {
        preemption.within_cluster_queue
    } else {
        preemption.reclaim_within_cohort
    };
    if !satisfies_policy(policy, preemptor.workload, &candidate.workload) {
        return None;
    }
    if same_queue {
        return Some(Variant::WithinClusterQueue);
    }
    if hierarchical_advantage {
        return Some(Variant::HierarchicalReclaim);
    }
    let borrow_within_cohort = preemption.borrow_within_cohort;
    if borrow_within_cohort.policy == BorrowWithinCohortPolicy::Never {
        return Some(Variant::ReclaimWithoutBorrowing);
    }
    let candidate_priority = candidate.workload.priority;
    let above_threshold = candidate_priority >= preemptor.workload.priority
        || borrow_within_cohort
            .max_priority_threshold
            .is_some_and(|threshold| candidate_priority > i64::from(threshold));
    Some(if above_threshold {
        Variant::ReclaimWithoutBorrowing
    } else {
        Variant::ReclaimWhileBorrowing
    })
}

fn candidates_from_queue(
    snapshot: &Snapshot,
    preemptor: &Preemptor<'_>,
    cq: usize,
    lca: Option<usize>,
    hierarchical_advantage: bool,
) -> Vec<Candidate> {
    snapshot.cqs[cq]
        .workloads
        .iter()
        .filter(|key| !snapshot.claimed.contains(*key))
        .filter_map(|key| snapshot.workloads.get(key))
        .filter_map(|workload| {
            classify(snapshot, preemptor, workload, hierarchical_advantage).map(|variant| {
                Candidate {
                    workload: Arc::clone(workload),
                    lca,
                    variant,
                }
            })
        })
        .collect()
}

/// Kueue's `QuantitiesFitInQuota`: whether `requests` fit in the node's subtree quota, and what
/// remains to be found higher up after its local capacity.
fn fits_in_quota(
    snapshot: &Snapshot,
    id: NodeId,
    requests: &BTreeMap<FlavorResource, Quantity>,
) -> (bool, BTreeMap<FlavorResource, Quantity>) {
    let node = snapshot.node(id);
    let mut fits = true;
    let mut remaining = BTreeMap::new();
    for (fr, value) in requests {
        if node.subtree(fr) < node.used(fr).saturating_add(*value) {
            fits = false;
        }
        remaining.insert(
            fr.clone(),
            value.saturating_sub(node.local_available(fr)).max(0),
        );
    }
    (fits, remaining)
}

fn collect_in_subtree(
    snapshot: &Snapshot,
    preemptor: &Preemptor<'_>,
    cohort: usize,
    subtree_root: usize,
    skip: Option<usize>,
    hierarchical_advantage: bool,
    out: &mut Vec<Candidate>,
) {
    for &child in &snapshot.cohorts[cohort].child_cohorts {
        if Some(child) == skip
            || snapshot.within_nominal(NodeId::Cohort(child), preemptor.needs_preemption)
        {
            continue;
        }
        collect_in_subtree(
            snapshot,
            preemptor,
            child,
            subtree_root,
            skip,
            hierarchical_advantage,
            out,
        );
    }
    for child in snapshot.schedulable_child_cqs(cohort) {
        if child == preemptor.cq
            || snapshot.within_nominal(NodeId::ClusterQueue(child), preemptor.needs_preemption)
        {
            continue;
        }
        out.extend(candidates_from_queue(
            snapshot,
            preemptor,
            child,
            Some(subtree_root),
            hierarchical_advantage,
        ));
    }
}

/// Candidates in other queues of the cohort tree: those reclaimable thanks to quota the
/// preemptor's subtree owns ("hierarchy"), and the rest ("priority").
fn hierarchical_candidates(
    snapshot: &Snapshot,
    preemptor: &Preemptor<'_>,
) -> (Vec<Candidate>, Vec<Candidate>) {
    let mut hierarchy = Vec::new();
    let mut priority = Vec::new();
    let spec = &snapshot.cqs[preemptor.cq].spec;
    if snapshot.cqs[preemptor.cq].node.parent.is_none()
        || spec.preemption.reclaim_within_cohort == PreemptionPolicy::Never
    {
        return (hierarchy, priority);
    }
    let (mut advantage, mut remaining) = fits_in_quota(
        snapshot,
        NodeId::ClusterQueue(preemptor.cq),
        preemptor.requests,
    );
    let mut previous = None;
    for cohort in snapshot.ancestors(NodeId::ClusterQueue(preemptor.cq)) {
        let out = if advantage {
            &mut hierarchy
        } else {
            &mut priority
        };
        collect_in_subtree(
            snapshot, preemptor, cohort, cohort, previous, advantage, out,
        );
        let (fits, still_remaining) = fits_in_quota(snapshot, NodeId::Cohort(cohort), &remaining);
        remaining = still_remaining;
        advantage = advantage || fits;
        previous = Some(cohort);
    }
    (hierarchy, priority)
}

fn candidate_is_valid(
    snapshot: &Snapshot,
    preemptor: &Preemptor<'_>,
    candidate: &Candidate,
    borrowing: bool,
) -> bool {
    let cq = candidate.workload.cq;
    if cq == preemptor.cq {
        return true;
    }
    if borrowing && candidate.variant == Variant::ReclaimWithoutBorrowing {
        return false;
    }
    if snapshot.within_nominal(NodeId::ClusterQueue(cq), preemptor.needs_preemption) {
        return false;
    }
    for ancestor in snapshot.ancestors(NodeId::ClusterQueue(cq)) {
        if Some(ancestor) == candidate.lca {
            break;
        }
        if snapshot.within_nominal(NodeId::Cohort(ancestor), preemptor.needs_preemption) {
            return false;
        }
    }
    true
}

/// Kueue's `queueUnderNominalInResourcesNeedingPreemption`.
fn under_nominal(snapshot: &Snapshot, preemptor: &Preemptor<'_>) -> bool {
    let node = &snapshot.cqs[preemptor.cq].node;
    preemptor
        .needs_preemption
        .iter()
        .all(|fr| node.quota(fr).nominal > node.used(fr))
}

pub(super) fn classical_preemptions(
    snapshot: &mut Snapshot,
    preemptor: &Preemptor<'_>,
) -> Vec<Target> {
    let spec = Arc::clone(&snapshot.cqs[preemptor.cq].spec);
    let mut same_queue = if spec.preemption.within_cluster_queue == PreemptionPolicy::Never {
        Vec::new()
    } else {
        candidates_from_queue(snapshot, preemptor, preemptor.cq, None, false)
    };
    let (mut hierarchy, mut priority) = hierarchical_candidates(snapshot, preemptor);
    for list in [&mut same_queue, &mut priority, &mut hierarchy] {
        list.sort_by(|a, b| candidate_order(snapshot, preemptor.cq, &a.workload, &b.workload));
    }
    let no_candidates_from_other_queues = hierarchy.is_empty() && priority.is_empty();
    let no_candidates_for_hierarchical_reclaim = hierarchy.is_empty();

    // Evicted candidates of every kind come first, keeping the kind order.
    let lists = [hierarchy, priority, same_queue];
    let (evicted, running): (Vec<Vec<Candidate>>, Vec<Vec<Candidate>>) = lists
        .into_iter()
        .map(|list| list.into_iter().partition(|c| c.workload.workload.evicted))
        .unzip();
    let candidates: Vec<Candidate> = evicted
        .into_iter()
        .flatten()
        .chain(running.into_iter().flatten())
        .collect();

    let borrowing_forbidden =
        spec.preemption.borrow_within_cohort.policy == BorrowWithinCohortPolicy::Never;
    let attempts: &[bool] = if no_candidates_from_other_queues
        || (borrowing_forbidden && !under_nominal(snapshot, preemptor))
    {
        &[true]
    } else if borrowing_forbidden && no_candidates_for_hierarchical_reclaim {
        &[false, true]
    } else {
        &[true, false]
    };

    for &allow_borrowing in attempts {
        let mut targets = Vec::new();
        for candidate in &candidates {
            if !candidate_is_valid(snapshot, preemptor, candidate, allow_borrowing) {
                continue;
            }
            snapshot.remove_workload(&candidate.workload);
            targets.push(Target {
                workload: Arc::clone(&candidate.workload),
                reason: candidate.variant.reason(),
            });
            if preemptor_fits(snapshot, preemptor, allow_borrowing) {
                let targets = fill_back(snapshot, preemptor, targets, allow_borrowing);
                restore(snapshot, &targets);
                return targets;
            }
        }
        restore(snapshot, &targets);
    }
    Vec::new()
}
