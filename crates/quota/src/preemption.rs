//! Preemption target search (Kueue `pkg/scheduler/preemption`): the classical algorithm
//! (remove candidates in order until the preemptor fits, then put back the ones not needed) and
//! the fair-sharing one (preempt from the queues with the highest dominant resource share).

use std::cmp::Ordering;
use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::sync::Arc;

use super::decision::PreemptionReason;
use super::fair_sharing::{self, Drs};
use super::model::{
    BorrowWithinCohortPolicy, FlavorResource, PreemptionPolicy, Quantity, Workload,
};
use super::snapshot::{AdmittedWorkload, FairSharingStrategy, NodeId, Snapshot};

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
    let targets = targets(snapshot, workload, cq, &needs, &requests);
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

/// Workloads to preempt so that `requests` fit in queue `cq`; empty if impossible.
/// The snapshot is left as it was found.
pub(super) fn targets(
    snapshot: &mut Snapshot,
    workload: &Workload,
    cq: usize,
    needs_preemption: &BTreeSet<FlavorResource>,
    requests: &BTreeMap<FlavorResource, Quantity>,
) -> Vec<Target> {
    let preemptor = Preemptor {
        workload,
        cq,
        needs_preemption,
        requests,
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

/// Kueue's `CandidatesOrdering`: evicted first, other queues first, lower priority first,
/// most recently admitted first, then UID.
fn candidate_order(
    snapshot: &Snapshot,
    preemptor_cq: usize,
    a: &AdmittedWorkload,
    b: &AdmittedWorkload,
) -> Ordering {
    let reserved_at = |w: &AdmittedWorkload| w.workload.quota_reserved_at.unwrap_or(snapshot.now);
    b.workload
        .evicted
        .cmp(&a.workload.evicted)
        .then_with(|| (a.cq == preemptor_cq).cmp(&(b.cq == preemptor_cq)))
        .then_with(|| a.workload.priority.cmp(&b.workload.priority))
        .then_with(|| reserved_at(b).cmp(&reserved_at(a)))
        .then_with(|| a.workload.uid.cmp(&b.workload.uid))
        .then_with(|| a.workload.key.cmp(&b.workload.key))
}

/// Whether the preemptor, in its current snapshot state, fits; `allow_borrowing` false also
/// requires it to stay within nominal quota.
fn preemptor_fits(snapshot: &Snapshot, preemptor: &Preemptor<'_>, allow_borrowing: bool) -> bool {
    preemptor.requests.iter().all(|(fr, value)| {
        (allow_borrowing || !snapshot.cq_borrowing_with(preemptor.cq, fr, *value))
            && *value <= snapshot.available(preemptor.cq, fr)
    })
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

// === Classical preemption ===

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
            .is_some_and(|threshold| candidate_priority > threshold);
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

fn classical_preemptions(snapshot: &mut Snapshot, preemptor: &Preemptor<'_>) -> Vec<Target> {
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

// === Fair sharing preemption ===

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

fn fair_preemptions(
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
