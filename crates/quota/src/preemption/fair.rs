//! Fair-sharing preemption (Kueue `pkg/scheduler/preemption/fairsharing`): candidates taken
//! from the ClusterQueues with the highest dominant resource share first, under the
//! configured strategies.

use std::cmp::Ordering;
use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::sync::Arc;

use crate::decision::PreemptionReason;
use crate::fair_sharing::{self, Drs};
use crate::model::PreemptionPolicy;
use crate::snapshot::{AdmittedWorkload, FairSharingStrategy, NodeId, Snapshot};

use super::{
    Preemptor, Target, candidate_order, fill_back, preemptor_fits, restore, satisfies_policy,
    uses_resources,
};

fn find_fair_candidates(
    snapshot: &Snapshot,
    preemptor: &Preemptor<'_>,
) -> Vec<Arc<AdmittedWorkload>> {
    let spec = &snapshot.cqs[preemptor.cq].spec;
    let eligible = |cq: usize, policy: PreemptionPolicy| {
        snapshot.cqs[cq]
            .workloads
            .iter()
            .filter(|key| !snapshot.claimed.contains(*key))
            .filter_map(|key| snapshot.workloads.get(key))
            .filter(move |candidate| {
                satisfies_policy(policy, preemptor.workload, &candidate.workload)
                    && uses_resources(candidate, preemptor.needs_preemption)
            })
            .cloned()
            .collect::<Vec<_>>()
    };
    let mut candidates = Vec::new();
    if spec.preemption.within_cluster_queue != PreemptionPolicy::Never {
        candidates.extend(eligible(preemptor.cq, spec.preemption.within_cluster_queue));
    }
    if let Some(parent) = snapshot.cqs[preemptor.cq].node.parent
        && spec.preemption.reclaim_within_cohort != PreemptionPolicy::Never
    {
        for cq in snapshot.subtree_queues(snapshot.root_of(parent)) {
            let borrowing = preemptor
                .needs_preemption
                .iter()
                .any(|fr| snapshot.cq_borrowing_with(cq, fr, 0));
            if cq != preemptor.cq && borrowing {
                candidates.extend(eligible(cq, spec.preemption.reclaim_within_cohort));
            }
        }
    }
    candidates.sort_by(|a, b| candidate_order(snapshot, preemptor.cq, a, b));
    candidates
}

/// Kueue's `TargetClusterQueueOrdering`: yields the queue to preempt from next, descending the
/// cohort tree towards the highest dominant resource share.
struct TargetOrdering {
    preemptor_cq: usize,
    preemptor_ancestors: BTreeSet<usize>,
    per_queue: BTreeMap<usize, VecDeque<Arc<AdmittedWorkload>>>,
    pruned_queues: BTreeSet<usize>,
    pruned_cohorts: BTreeSet<usize>,
}

impl TargetOrdering {
    fn new(
        snapshot: &Snapshot,
        preemptor_cq: usize,
        candidates: Vec<Arc<AdmittedWorkload>>,
    ) -> Self {
        let mut per_queue: BTreeMap<usize, VecDeque<Arc<AdmittedWorkload>>> = BTreeMap::new();
        for candidate in candidates {
            per_queue
                .entry(candidate.cq)
                .or_default()
                .push_back(candidate);
        }
        Self {
            preemptor_cq,
            preemptor_ancestors: snapshot
                .ancestors(NodeId::ClusterQueue(preemptor_cq))
                .into_iter()
                .collect(),
            per_queue,
            pruned_queues: BTreeSet::new(),
            pruned_cohorts: BTreeSet::new(),
        }
    }

    fn has_workload(&self, cq: usize) -> bool {
        self.per_queue
            .get(&cq)
            .is_some_and(|queue| !queue.is_empty())
    }

    fn pop(&mut self, cq: usize) -> Option<Arc<AdmittedWorkload>> {
        self.per_queue.get_mut(&cq).and_then(VecDeque::pop_front)
    }

    fn next(&mut self, snapshot: &Snapshot) -> Option<usize> {
        let Some(parent) = snapshot.cqs[self.preemptor_cq].node.parent else {
            let cq = self.preemptor_cq;
            return (!self.pruned_queues.contains(&cq) && self.has_workload(cq)).then_some(cq);
        };
        let root = snapshot.root_of(parent);
        while !self.pruned_cohorts.contains(&root) {
            if let Some(target) = self.next_target(snapshot, root) {
                return Some(target);
            }
        }
        None
    }

    fn next_target(&mut self, snapshot: &Snapshot, cohort: usize) -> Option<usize> {
        let mut highest_cq: Option<(usize, Drs)> = None;
        let children: Vec<usize> = snapshot.schedulable_child_cqs(cohort).collect();
        for cq in children {
            if self.pruned_queues.contains(&cq) {
                continue;
            }
            let drs = fair_sharing::dominant_resource_share(snapshot, NodeId::ClusterQueue(cq));
            if (!drs.borrowing && cq != self.preemptor_cq) || !self.has_workload(cq) {
                self.pruned_queues.insert(cq);
                continue;
            }
            let replace = match &highest_cq {
                None => true,
                Some((current, current_drs)) => match drs.compare(current_drs) {
                    Ordering::Greater => true,
                    Ordering::Less => false,
                    Ordering::Equal => {
                        let (Some(new_head), Some(current_head)) =
                            (self.per_queue[&cq].front(), self.per_queue[current].front())
                        else {
                            continue;
                        };
                        candidate_order(snapshot, self.preemptor_cq, new_head, current_head)
                            == Ordering::Less
                    }
                },
            };
            if replace {
                highest_cq = Some((cq, drs));
            }
        }

        let mut highest_cohort: Option<(usize, Drs)> = None;
        for &child in &snapshot.cohorts[cohort].child_cohorts {
            if self.pruned_cohorts.contains(&child) {
                continue;
            }
            let drs = fair_sharing::dominant_resource_share(snapshot, NodeId::Cohort(child));
            if !drs.borrowing && !self.preemptor_ancestors.contains(&child) {
                self.pruned_cohorts.insert(child);
            } else if highest_cohort
                .as_ref()
                .is_none_or(|(_, current)| drs.compare(current) != Ordering::Less)
            {
                highest_cohort = Some((child, drs));
            }
        }

        match (highest_cohort, highest_cq) {
            (None, None) => {
                self.pruned_cohorts.insert(cohort);
                None
            }
            (Some((child, cohort_drs)), Some((cq, cq_drs))) => {
                if cohort_drs.compare(&cq_drs) == Ordering::Less {
                    Some(cq)
                } else {
                    self.next_target(snapshot, child)
                }
            }
            (Some((child, _)), None) => self.next_target(snapshot, child),
            (None, Some((cq, _))) => Some(cq),
        }
    }
}

/// The children of the lowest common ancestor that lead to the preemptor and to the target.
fn almost_lcas(
    snapshot: &Snapshot,
    ordering: &TargetOrdering,
    target_cq: usize,
) -> Option<(NodeId, NodeId)> {
    let lca = snapshot
        .ancestors(NodeId::ClusterQueue(target_cq))
        .into_iter()
        .find(|ancestor| ordering.preemptor_ancestors.contains(ancestor))?;
    let below = |cq: usize| {
        let mut node = NodeId::ClusterQueue(cq);
        for ancestor in snapshot.ancestors(NodeId::ClusterQueue(cq)) {
            if ancestor == lca {
                return Some(node);
            }
            node = NodeId::Cohort(ancestor);
        }
        None
    };
    Some((below(ordering.preemptor_cq)?, below(target_cq)?))
}

fn fair_share_strategy_passes(
    strategy: FairSharingStrategy,
    preemptor_new: &Drs,
    target_old: &Drs,
    target_new: &Drs,
) -> bool {
    match strategy {
        FairSharingStrategy::LessThanOrEqualToFinalShare => {
            preemptor_new.compare(target_new) != Ordering::Greater
        }
        FairSharingStrategy::LessThanInitialShare => {
            preemptor_new.compare(target_old) == Ordering::Less
        }
    }
}

/// Whether the preemptor fits once its simulated usage is taken out again.
fn fits_for_fair_sharing(snapshot: &mut Snapshot, preemptor: &Preemptor<'_>) -> bool {
    snapshot.remove_cq_usage(preemptor.cq, preemptor.requests);
    let fits = preemptor_fits(snapshot, preemptor, true);
    snapshot.add_cq_usage(preemptor.cq, preemptor.requests);
    fits
}

struct FairRun {
    fits: bool,
    targets: Vec<Target>,
    retry: Vec<Arc<AdmittedWorkload>>,
}

fn remove_target(
    snapshot: &mut Snapshot,
    targets: &mut Vec<Target>,
    workload: Arc<AdmittedWorkload>,
    reason: PreemptionReason,
) {
    snapshot.remove_workload(&workload);
    targets.push(Target { workload, reason });
}

fn run_first_strategy(
    snapshot: &mut Snapshot,
    preemptor: &Preemptor<'_>,
    candidates: Vec<Arc<AdmittedWorkload>>,
    strategy: FairSharingStrategy,
) -> FairRun {
    let mut ordering = TargetOrdering::new(snapshot, preemptor.cq, candidates);
    let mut run = FairRun {
        fits: false,
        targets: Vec::new(),
        retry: Vec::new(),
    };
    let within_nominal = preemptor
        .needs_preemption
        .iter()
        .all(|fr| !snapshot.cq_borrowing_with(preemptor.cq, fr, 0));

    while let Some(target_cq) = ordering.next(snapshot) {
        if target_cq == preemptor.cq || within_nominal {
            let reason = if target_cq == preemptor.cq {
                PreemptionReason::InClusterQueue
            } else {
                PreemptionReason::InCohortReclamation
            };
            let Some(workload) = ordering.pop(target_cq) else {
                continue;
            };
            remove_target(snapshot, &mut run.targets, workload, reason);
            if fits_for_fair_sharing(snapshot, preemptor) {
                run.fits = true;
                return run;
            }
            continue;
        }

        let Some((preemptor_node, target_node)) = almost_lcas(snapshot, &ordering, target_cq)
        else {
            ordering.pruned_queues.insert(target_cq);
            continue;
        };
        let preemptor_new = fair_sharing::dominant_resource_share(snapshot, preemptor_node);
        let target_old = fair_sharing::dominant_resource_share(snapshot, target_node);
        if preemptor_new.precise_weighted_share().is_infinite()
            && !target_old.precise_weighted_share().is_infinite()
        {
            while let Some(workload) = ordering.pop(target_cq) {
                run.retry.push(workload);
            }
            continue;
        }
        while let Some(workload) = ordering.pop(target_cq) {
            snapshot.remove_cq_usage(target_cq, &workload.usage);
            let target_new = fair_sharing::dominant_resource_share(snapshot, target_node);
            snapshot.add_cq_usage(target_cq, &workload.usage);
            if fair_share_strategy_passes(strategy, &preemptor_new, &target_old, &target_new) {
                remove_target(
                    snapshot,
                    &mut run.targets,
                    workload,
                    PreemptionReason::InCohortFairSharing,
                );
                if fits_for_fair_sharing(snapshot, preemptor) {
                    run.fits = true;
                    return run;
                }
                break;
            }
            run.retry.push(workload);
        }
    }
    run
}

fn run_second_strategy(
    snapshot: &mut Snapshot,
    preemptor: &Preemptor<'_>,
    retry: Vec<Arc<AdmittedWorkload>>,
    targets: &mut Vec<Target>,
) -> bool {
    let mut ordering = TargetOrdering::new(snapshot, preemptor.cq, retry);
    while let Some(target_cq) = ordering.next(snapshot) {
        let passed = almost_lcas(snapshot, &ordering, target_cq).is_some_and(
            |(preemptor_node, target_node)| {
                let preemptor_new = fair_sharing::dominant_resource_share(snapshot, preemptor_node);
                let target_old = fair_sharing::dominant_resource_share(snapshot, target_node);
                preemptor_new.compare(&target_old) == Ordering::Less
            },
        );
        if let Some(workload) = ordering.pop(target_cq)
            && passed
        {
            remove_target(
                snapshot,
                targets,
                workload,
                PreemptionReason::InCohortFairSharing,
            );
            if fits_for_fair_sharing(snapshot, preemptor) {
                return true;
            }
        }
        ordering.pruned_queues.insert(target_cq);
    }
    false
}

pub(super) fn fair_preemptions(
    snapshot: &mut Snapshot,
    preemptor: &Preemptor<'_>,
    strategies: &[FairSharingStrategy],
) -> Vec<Target> {
    let candidates = find_fair_candidates(snapshot, preemptor);
    if candidates.is_empty() {
        return Vec::new();
    }
    snapshot.add_cq_usage(preemptor.cq, preemptor.requests);
    let first = strategies
        .first()
        .copied()
        .unwrap_or(FairSharingStrategy::LessThanOrEqualToFinalShare);
    let FairRun {
        mut fits,
        mut targets,
        retry,
    } = run_first_strategy(snapshot, preemptor, candidates, first);
    if !fits && strategies.len() > 1 {
        fits = run_second_strategy(snapshot, preemptor, retry, &mut targets);
    }
    snapshot.remove_cq_usage(preemptor.cq, preemptor.requests);
    if !fits {
        restore(snapshot, &targets);
        return Vec::new();
    }
    let targets = fill_back(snapshot, preemptor, targets, true);
    restore(snapshot, &targets);
    targets
}
