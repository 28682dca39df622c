//! One scheduling cycle (Kueue `scheduler.go` `schedule`), generalised to admit many workloads
//! per ClusterQueue: the cycle runs rounds against one working copy of the snapshot; each round
//! takes the head of every ClusterQueue, assigns flavors, orders the heads as Kueue does
//! (classical or fair sharing) and processes them, so later rounds see the quota taken earlier.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use super::decision::{Decision, EvictionReason, PendingReason, Victim};
use super::fair_sharing::{self, Contender};
use super::flavor::{self, Assignment, Mode};
use super::model::{
    FlavorResource, PreemptionPolicy, Quantity, QueueingStrategy, StopPolicy, Workload,
};
use super::preemption::{self, Target};
use super::queue::{Queues, Shape, Verdict};
use super::snapshot::{AdmittedWorkload, Inactive, Snapshot, take_topology};
use super::topology::{TopologyAssignment, TopologyNeed};

/// Kueue's messages for a head skipped for the rest of a cycle.
const OVERLAPPING_TARGETS: &str =
    "Workload has overlapping preemption targets with another workload";
const NO_LONGER_FITS: &str = "Workload no longer fits after processing another workload";
/// Kueue's message for a head assigned again past the victims claimed before it, which then
/// fits: it waits for those preemptions.
const FITS_AFTER_CLAIMED_PREEMPTIONS: &str = "Workload has overlapping preemption targets with another workload, but will fit after these preemptions complete";
/// Kueue's message for a head that fits while `blockAdmission` waits.
const WAITING_FOR_PODS_READY: &str =
    "waiting for all admitted workloads to be in PodsReady condition";

/// A head with its flavor assignment and preemption targets.
struct Entry {
    workload: Arc<Workload>,
    cq: usize,
    /// It issued preemptions in an earlier cycle and waits for its victims.
    preemptor: bool,
    assignment: Assignment,
    targets: Vec<Target>,
}

/// Whether processing an entry settled it, or left the working snapshot as it was: the entry
/// is then retried in the next round, or (skipped) in the next cycle.
#[derive(PartialEq, Eq)]
enum Outcome {
    Settled,
    Retry,
}

/// Runs one scheduling cycle: decides admissions, preemptions, evictions and inadmissibility
/// for the workloads in `queues` against `snapshot`, and updates `queues` accordingly (admitted
/// workloads leave them, inadmissible ones are parked or block a StrictFIFO queue).
pub fn cycle(snapshot: &Snapshot, queues: &mut Queues) -> Vec<Decision> {
    let mut work = snapshot.clone();
    let mut decisions = Vec::new();
    drain_stopped_queues(&work, &mut decisions);
    queues.retry_preemptors();
    queues.apply_backoff(work.now);
    reject_unschedulable_queues(&work, queues, &mut decisions);
    // Blocked StrictFIFO heads wait without re-evaluation: they keep holding back their
    // capacity, as Kueue's heads do by reserving it again every cycle.
    let held: Vec<(usize, BTreeMap<FlavorResource, Quantity>)> = queues
        .holds()
        .filter_map(|(name, held)| work.cq_index.get(name).map(|&cq| (cq, held.clone())))
        .collect();
    for (cq, held) in held {
        work.add_cq_usage(cq, &held);
    }

    // ClusterQueues whose preemptor (evaluated first) issued or renewed preemptions in this
    // cycle: their later heads may still be admitted where they fit, but do not preempt.
    // Kueue evaluates one head per ClusterQueue per cycle, and a preemptor stays the head until
    // admitted, so nothing behind it preempts meanwhile; without this, every later head would
    // see the preemptor's usage on top of its victims' and preempt more, where the capacity
    // that running workloads free by finishing would often have been enough.
    let mut preempting = BTreeSet::new();
    // ClusterQueues done for this cycle: a head that needs preemption lost its targets or its
    // room to an earlier one, and waits for the next cycle as Kueue's skipped entries do.
    let mut skipped = BTreeSet::new();
    // `blockAdmission`: a workload holding quota without `PodsReady`, or one admitted in this
    // cycle, holds back every further admission (preemptions still go ahead, as in Kueue).
    let mut waiting_for_pods = work.config.block_admission
        && work
            .workloads
            .values()
            .any(|admitted| !admitted.workload.pods_ready);
    loop {
        let heads = pop_heads(&work, queues, &skipped, &mut decisions);
        if heads.is_empty() {
            break;
        }
        let mut entries = Vec::with_capacity(heads.len());
        let mut settled_any = false;
        for Head {
            workload,
            cq,
            preemptor,
        } in heads
        {
            if let Some(verdict) = namespace_mismatch(&work, &workload, cq) {
                settled_any = true;
                decisions.push(Decision::Inadmissible {
                    workload: workload.key.clone(),
                    reason: verdict.reason,
                    message: verdict.message,
                });
                queues.park(workload);
                continue;
            }
            let may_preempt = !preempting.contains(&cq);
            let (assignment, targets) = assignments(&mut work, &workload, cq, may_preempt, None);
            entries.push(Entry {
                workload,
                cq,
                preemptor,
                assignment,
                targets,
            });
        }
        let mut round = Round {
            work: &mut work,
            queues,
            decisions: &mut decisions,
            reservations: Vec::new(),
            preempting: &mut preempting,
            skipped: &mut skipped,
            waiting_for_pods: &mut waiting_for_pods,
        };
        if !round.process(entries) && !settled_any {
            break;
        }
    }
    decisions
}

/// Evicts the workloads admitted to queues with `stopPolicy: HoldAndDrain`.
fn drain_stopped_queues(work: &Snapshot, decisions: &mut Vec<Decision>) {
    for cq in work
        .cqs
        .iter()
        .filter(|cq| cq.spec.stop_policy == StopPolicy::HoldAndDrain)
    {
        for workload in cq
            .workloads
            .iter()
            .filter_map(|key| work.workloads.get(key))
        {
            if !workload.workload.evicted {
                decisions.push(Decision::Evict {
                    workload: workload.workload.key.clone(),
                    reason: EvictionReason::ClusterQueueStopped,
                    message: "The ClusterQueue is stopped".to_owned(),
                });
            }
        }
    }
}

/// Parks the workloads of queues that are missing, stopped or inactive.
fn reject_unschedulable_queues(
    work: &Snapshot,
    queues: &mut Queues,
    decisions: &mut Vec<Decision>,
) {
    for name in queues.active_queue_names() {
        let verdict = match work.cq_index.get(&name).map(|&cq| work.cqs[cq].inactive) {
            None => Verdict {
                reason: PendingReason::Misconfigured,
                message: format!("ClusterQueue {name} doesn't exist"),
            },
            Some(Some(Inactive::Stopped)) => Verdict {
                reason: PendingReason::Suspended,
                message: format!("ClusterQueue {name} is stopped"),
            },
            Some(Some(Inactive::NotActive)) => Verdict {
                reason: PendingReason::Suspended,
                message: format!("ClusterQueue {name} is inactive"),
            },
            Some(None) => continue,
        };
        for workload in queues.drain_active(&name) {
            decisions.push(Decision::Inadmissible {
                workload: workload.key.clone(),
                reason: verdict.reason,
                message: verdict.message.clone(),
            });
            queues.park(workload);
        }
    }
}

/// A workload popped from its queue.
struct Head {
    workload: Arc<Workload>,
    cq: usize,
    preemptor: bool,
}

/// Pops one head per schedulable queue; under BestEffortFIFO, workloads shaped like one that
/// already failed are parked with the same verdict instead of being evaluated again.
fn pop_heads(
    work: &Snapshot,
    queues: &mut Queues,
    skipped: &BTreeSet<usize>,
    decisions: &mut Vec<Decision>,
) -> Vec<Head> {
    let mut heads = Vec::new();
    for name in queues.active_queue_names() {
        if queues.is_blocked(&name) {
            continue;
        }
        let Some(&cq) = work.cq_index.get(&name) else {
            continue;
        };
        if skipped.contains(&cq) {
            continue;
        }
        let best_effort = work.cqs[cq].spec.queueing_strategy == QueueingStrategy::BestEffortFifo;
        while let Some((workload, preemptor)) = queues.pop(&name, work.admission_fair_sharing(cq)) {
            if workload.admission.is_some() {
                queues.forget(&workload.key);
                continue;
            }
            if best_effort
                && let Some(verdict) = queues.failed_shape(&name, &Shape::of(&workload)).cloned()
            {
                decisions.push(Decision::Inadmissible {
                    workload: workload.key.clone(),
                    reason: verdict.reason,
                    message: verdict.message,
                });
                queues.park(workload);
                continue;
            }
            heads.push(Head {
                workload,
                cq,
                preemptor,
            });
            break;
        }
    }
    heads
}

/// Kueue's namespace admissibility check.
fn namespace_mismatch(work: &Snapshot, workload: &Workload, cq: usize) -> Option<Verdict> {
    let selector = work.cqs[cq].spec.namespace_selector.as_ref();
    if selector.is_some_and(|selector| selector.matches(&workload.namespace_labels)) {
        return None;
    }
    Some(Verdict {
        reason: PendingReason::Misconfigured,
        message: "workload namespace doesn't match ClusterQueue selector".to_owned(),
    })
}

/// Kueue's `getInitialAssignments`: the full assignment if it fits or can preempt, otherwise
/// the largest partial admission that does (when allowed), otherwise the failing full one.
/// Without `may_preempt` no preemption targets are looked for; with `nominated`, only the
/// flavors that assignment chose are tried.
fn assignments(
    work: &mut Snapshot,
    workload: &Workload,
    cq: usize,
    may_preempt: bool,
    nominated: Option<&Assignment>,
) -> (Assignment, Vec<Target>) {
    let full = flavor::assign(work, workload, cq, None, nominated);
    match full.mode() {
        Mode::Fit => return (full, Vec::new()),
        Mode::Preempt if !may_preempt => return (full, Vec::new()),
        Mode::Preempt => {
            let targets = targets_for(work, workload, cq, &full);
            if !targets.is_empty() {
                return (full, targets);
            }
        }
        Mode::NoFit => {}
    }
    if work.config.partial_admission
        && let Some(partial) = partial_assignment(work, workload, cq, nominated)
    {
        return partial;
    }
    (full, Vec::new())
}

fn targets_for(
    work: &mut Snapshot,
    workload: &Workload,
    cq: usize,
    assignment: &Assignment,
) -> Vec<Target> {
    preemption::targets(
        work,
        workload,
        cq,
        &assignment.needs_preemption(),
        &assignment.usage,
        &assignment.topology_needs(),
    )
}

/// Kueue's `PodSetReducer`: binary search for the largest counts between `minCount` and `count`
/// that fit or can preempt.
fn partial_assignment(
    work: &mut Snapshot,
    workload: &Workload,
    cq: usize,
    nominated: Option<&Assignment>,
) -> Option<(Assignment, Vec<Target>)> {
    let full_counts: Vec<i64> = workload
        .pod_sets
        .iter()
        .map(|pod_set| i64::from(pod_set.count))
        .collect();
    let deltas: Vec<i64> = workload
        .pod_sets
        .iter()
        .map(|pod_set| i64::from(pod_set.count - pod_set.min_count.unwrap_or(pod_set.count)).max(0))
        .collect();
    let total: i64 = deltas.iter().sum();
    if total == 0 {
        return None;
    }

    let (mut low, mut high) = (0, total + 1);
    let mut last_good: Option<(i64, Assignment, Vec<Target>)> = None;
    while low < high {
        let step = low + (high - low) / 2;
        let counts: Vec<i32> = full_counts
            .iter()
            .zip(&deltas)
            .map(|(count, delta)| i32::try_from(count - delta * step / total).unwrap_or(0))
            .collect();
        let assignment = flavor::assign(work, workload, cq, Some(&counts), nominated);
        let candidate = match assignment.mode() {
            Mode::Fit => Some((assignment, Vec::new())),
            Mode::Preempt => {
                let targets = targets_for(work, workload, cq, &assignment);
                (!targets.is_empty()).then_some((assignment, targets))
            }
            Mode::NoFit => None,
        };
        match candidate {
            Some((assignment, targets)) => {
                last_good = Some((step, assignment, targets));
                high = step;
            }
            None => low = step + 1,
        }
    }
    last_good
        .filter(|(step, _, _)| *step == low)
        .map(|(_, assignment, targets)| (assignment, targets))
}

/// Kueue's `quotaResourcesToReserve`: what a workload that needs preemption but found no
/// victims holds back, so that lower entries cannot take the capacity it waits for.
fn resources_to_reserve(
    work: &Snapshot,
    cq: usize,
    assignment: &Assignment,
) -> BTreeMap<FlavorResource, Quantity> {
    let node = &work.cqs[cq].node;
    assignment
        .usage
        .iter()
        .map(|(fr, usage)| {
            let quota = node.quota(fr);
            let used = node.used(fr);
            let reserved = if assignment.borrowing > 0 {
                match quota.borrowing_limit {
                    None => *usage,
                    Some(limit) => {
                        (*usage).min(quota.nominal.saturating_add(limit).saturating_sub(used))
                    }
                }
            } else {
                (*usage).min(quota.nominal.saturating_sub(used)).max(0)
            };
            (fr.clone(), reserved)
        })
        .collect()
}

/// The state one round of a cycle works on.
struct Round<'a> {
    work: &'a mut Snapshot,
    queues: &'a mut Queues,
    decisions: &'a mut Vec<Decision>,
    /// Capacity held back for heads that wait for quota, released when the round ends (a round
    /// is what a whole cycle is in Kueue).
    reservations: Vec<(usize, BTreeMap<FlavorResource, Quantity>)>,
    /// ClusterQueues that issued preemptions in this cycle.
    preempting: &'a mut BTreeSet<usize>,
    /// ClusterQueues whose heads wait for the next cycle.
    skipped: &'a mut BTreeSet<usize>,
    /// `blockAdmission` holds back admissions for the rest of the cycle.
    waiting_for_pods: &'a mut bool,
}

impl Round<'_> {
    /// Processes the entries in Kueue's order; returns whether any of them was settled.
    fn process(&mut self, mut entries: Vec<Entry>) -> bool {
        let mut settled_any = false;
        let prioritize_preemptors = self.work.config.prioritize_preemptors;
        if self.work.config.fair_sharing.is_some() {
            while !entries.is_empty() {
                let contenders: Vec<Contender<'_>> = entries
                    .iter()
                    .map(|entry| Contender {
                        cq: entry.cq,
                        preemptor: prioritize_preemptors && entry.preemptor,
                        usage: &entry.assignment.usage,
                        priority: entry.workload.priority,
                        timestamp: entry.workload.queue_timestamp,
                    })
                    .collect();
                let next = fair_sharing::next_contender(self.work, &contenders).unwrap_or(0);
                let entry = entries.remove(next);
                settled_any |= self.process_entry(entry) == Outcome::Settled;
            }
        } else {
            // Waiting preemptors first if so configured, then non-borrowing, higher priority,
            // older.
            entries.sort_by(|a, b| {
                (prioritize_preemptors && b.preemptor)
                    .cmp(&(prioritize_preemptors && a.preemptor))
                    .then_with(|| a.assignment.borrowing.cmp(&b.assignment.borrowing))
                    .then_with(|| b.workload.priority.cmp(&a.workload.priority))
                    .then_with(|| a.workload.queue_timestamp.cmp(&b.workload.queue_timestamp))
            });
            for entry in entries {
                settled_any |= self.process_entry(entry) == Outcome::Settled;
            }
        }
        for (cq, reserved) in std::mem::take(&mut self.reservations) {
            self.work.remove_cq_usage(cq, &reserved);
        }
        settled_any
    }

    fn process_entry(&mut self, entry: Entry) -> Outcome {
        let Entry {
            workload,
            cq,
            mut assignment,
            preemptor: _,
            mut targets,
        } = entry;
        let spec = Arc::clone(&self.work.cqs[cq].spec);
        // Earlier entries of this cycle may have claimed the victims. Kueue (its
        // `RecomputeAssignmentUponPreemptionTargetsOverlap`) assigns such a head again as if
        // those preemptions were done; one that fits then waits for them.
        let past_claimed =
            self.work.config.recompute_overlapping_targets && self.claims_any(&targets);
        if past_claimed {
            (assignment, targets) = self.assign_past_claimed(&workload, cq, &assignment);
        }
        let fits_once_claimed_are_gone = past_claimed && assignment.mode() == Mode::Fit;
        let mode = assignment.mode();

        if mode == Mode::NoFit {
            let verdict = Verdict {
                reason: assignment.no_fit_reason.unwrap_or(PendingReason::Pending),
                message: assignment.message(),
            };
            self.reject(workload, cq, verdict, BTreeMap::new());
            return Outcome::Settled;
        }
        if mode == Mode::Preempt && targets.is_empty() {
            // Kueue holds back the capacity such a head waits for, unless it can always reclaim.
            let reserved = if spec.preemption.reclaim_within_cohort == PreemptionPolicy::Any {
                BTreeMap::new()
            } else {
                resources_to_reserve(self.work, cq, &assignment)
            };
            self.work.add_cq_usage(cq, &reserved);
            let verdict = Verdict {
                reason: PendingReason::WaitingForQuota,
                message: assignment.message(),
            };
            self.reject(workload, cq, verdict, reserved);
            return Outcome::Settled;
        }

        if fits_once_claimed_are_gone {
            let reserved = assignment.usage;
            self.work.add_cq_usage(cq, &reserved);
            self.reservations.push((cq, reserved));
            self.skip(
                workload,
                cq,
                PendingReason::WaitingForPreemptedWorkloads,
                FITS_AFTER_CLAIMED_PREEMPTIONS,
            );
            return Outcome::Retry;
        }

        // Without that recomputation, a head whose victims were claimed waits for the next
        // cycle, when they are gone or still count as evicted. A head that no longer fits is
        // assigned again in the next round, or waits for the next cycle if it preempts.
        if self.claims_any(&targets) {
            self.skip(
                workload,
                cq,
                PendingReason::WaitingForQuota,
                OVERLAPPING_TARGETS,
            );
            return Outcome::Retry;
        }
        let needs = assignment.topology_needs();
        let Some(placements) =
            self.fits_after_preemption(cq, &assignment, &needs, &targets, past_claimed)
        else {
            if mode == Mode::Preempt {
                self.skip(workload, cq, PendingReason::WaitingForQuota, NO_LONGER_FITS);
            } else {
                self.queues.restore(workload);
            }
            return Outcome::Retry;
        };

        if mode == Mode::Fit && *self.waiting_for_pods {
            let reason = PendingReason::WaitingForPodsReady;
            self.skip(workload, cq, reason, WAITING_FOR_PODS_READY);
            return Outcome::Retry;
        }
        self.work.add_cq_usage(cq, &assignment.usage);
        if mode == Mode::Preempt {
            let victims: Vec<Victim> = targets
                .iter()
                .map(|target| Victim {
                    workload: target.workload.workload.key.clone(),
                    cluster_queue: self.work.cqs[target.workload.cq].spec.name.clone(),
                    reason: target.reason,
                    message: preemption::victim_message(self.work, &workload, cq, target),
                })
                .collect();
            // Victims keep their quota and places until they are gone; the preemptor's usage
            // and placements are taken on top so that nothing else in this cycle takes the
            // capacity it waits for (Kueue adds its topology usage as well).
            self.work.take_placements(&needs, &placements);
            self.work.claimed.extend(
                targets
                    .iter()
                    .map(|target| Arc::clone(&target.workload.key)),
            );
            self.preempting.insert(cq);
            self.decisions.push(Decision::Preempt {
                workload: workload.key.clone(),
                reason: PendingReason::WaitingForPreemptedWorkloads,
                message: format!(
                    "{}. Pending the preemption of {} workload(s)",
                    assignment.message(),
                    victims.len()
                ),
                victims,
            });
            self.queues.wait_for_preemption(
                workload,
                spec.queueing_strategy == QueueingStrategy::StrictFifo,
            );
            return Outcome::Settled;
        }

        self.queues.forget(&workload.key);
        *self.waiting_for_pods |= self.work.config.block_admission;
        let admission = assignment.to_admission(&spec.name);
        take_topology(&mut self.work.topologies, &workload, &admission);
        self.work
            .charge_entry_penalty(cq, &workload, &admission.usage());
        self.decisions.push(Decision::Admit {
            workload: workload.key.clone(),
            admission,
        });
        Outcome::Settled
    }

    /// Whether any of the targets is the victim of a preemption decided earlier in the cycle.
    fn claims_any(&self, targets: &[Target]) -> bool {
        targets
            .iter()
            .any(|target| self.work.claimed.contains(&target.workload.key))
    }

    /// The victims of the preemptions decided so far in the cycle.
    fn claimed_victims(&self) -> Vec<Arc<AdmittedWorkload>> {
        self.work
            .claimed
            .iter()
            .filter_map(|key| self.work.workloads.get(key).cloned())
            .collect()
    }

    /// The workload's assignment and targets as if the victims claimed so far were gone,
    /// limited to the flavors of its first assignment (Kueue's nomination mapping).
    fn assign_past_claimed(
        &mut self,
        workload: &Workload,
        cq: usize,
        first: &Assignment,
    ) -> (Assignment, Vec<Target>) {
        let gone = self.claimed_victims();
        for victim in &gone {
            self.work.remove_workload(victim);
        }
        let reassigned = assignments(self.work, workload, cq, true, Some(first));
        for victim in &gone {
            self.work.add_workload(victim);
        }
        reassigned
    }

    /// Whether the assignment's usage fits once the targets are gone, and with `past_claimed`
    /// (an assignment made past them) the victims claimed earlier in the cycle; and where its
    /// PodSets' topology `needs` then go in their flavors' Topologies. Only a preemption is decided on the
    /// latter: admissions count every victim until it is gone, so no ClusterQueue ever holds
    /// more than it may. A workload that fits keeps the placements it was assigned (none are
    /// returned), if decisions made since in this cycle left them free; `None` when the
    /// usage or the placements no longer fit.
    fn fits_after_preemption(
        &mut self,
        cq: usize,
        assignment: &Assignment,
        needs: &[TopologyNeed],
        targets: &[Target],
        past_claimed: bool,
    ) -> Option<Vec<TopologyAssignment>> {
        if assignment.mode() == Mode::Fit {
            let fits = assignment
                .usage
                .iter()
                .all(|(fr, quantity)| *quantity <= self.work.available(cq, fr))
                && self
                    .work
                    .has_room_for(needs, &assignment.topology_placements());
            return fits.then(Vec::new);
        }
        let mut gone: Vec<Arc<AdmittedWorkload>> = targets
            .iter()
            .map(|target| Arc::clone(&target.workload))
            .collect();
        if past_claimed {
            gone.extend(self.claimed_victims());
        }
        for victim in &gone {
            self.work.remove_workload(victim);
        }
        let fits = assignment
            .usage
            .iter()
            .all(|(fr, quantity)| *quantity <= self.work.available(cq, fr));
        let placements = if fits {
            self.work.place_all(needs)
        } else {
            None
        };
        for victim in &gone {
            self.work.add_workload(victim);
        }
        placements
    }

    /// Reports an inadmissible workload that holds back `reserved` (already added to the
    /// working snapshot). StrictFIFO keeps it at the head, blocking the queue and holding the
    /// capacity until the queue is requeued; BestEffortFIFO parks it, remembers its shape and
    /// releases the capacity when the round ends.
    fn reject(
        &mut self,
        workload: Arc<Workload>,
        cq: usize,
        verdict: Verdict,
        reserved: BTreeMap<FlavorResource, Quantity>,
    ) {
        self.decisions.push(Decision::Inadmissible {
            workload: workload.key.clone(),
            reason: verdict.reason,
            message: verdict.message.clone(),
        });
        if self.work.cqs[cq].spec.queueing_strategy == QueueingStrategy::StrictFifo {
            self.queues.block(workload, reserved);
            return;
        }
        if !reserved.is_empty() {
            self.reservations.push((cq, reserved));
        }
        let shape = Shape::of(&workload);
        self.queues
            .record_failed_shape(&workload.cluster_queue, shape, verdict);
        self.queues.park(workload);
    }

    /// Puts a head back for the next cycle and reports why, as Kueue's skipped entries.
    fn skip(&mut self, workload: Arc<Workload>, cq: usize, reason: PendingReason, message: &str) {
        self.decisions.push(Decision::Inadmissible {
            workload: workload.key.clone(),
            reason,
            message: message.to_owned(),
        });
        self.skipped.insert(cq);
        self.queues.restore(workload);
    }
}
