//! The pure part of a scheduling pass: from the cluster as the stores show it to the quota
//! core's decisions, keeping the queues, the overlay of writes in flight, the requeue
//! detection and the retry backoff from one pass to the next. The loop in [`super`] runs it and
//! dispatches the decisions; tests run it without an API server.

use std::sync::Arc;

use foldhash::HashSetExt;
use jiff::Timestamp;

use super::cluster_state::{ClusterState, ConversionCache, Converted, convert_cached};
use super::dispatch::Backoff;
use super::fair_usage::UsageLedger;
use super::overlay::Overlay;
use super::requeue::{Observed, Requeue};
use crate::config::AdmissionFairSharing;
use crate::quota::from_api::ConversionOptions;
use crate::quota::{
    Decision, Queues, RequeueScope, SchedulerConfig, Snapshot, cycle, entry_penalty,
};

/// What one pass decided, with what it decided on.
pub struct Plan {
    /// The cluster converted to the model, with the overlay applied.
    pub converted: Converted,
    /// The snapshot the cycle ran on.
    pub snapshot: Snapshot,
    /// The cycle's decisions.
    pub decisions: Vec<Decision>,
}

/// The scheduler's state between passes.
pub struct Planner {
    options: ConversionOptions,
    cache: ConversionCache,
    scheduler_config: SchedulerConfig,
    /// Pending workloads, long-lived so that parked ones stay parked.
    pub queues: Queues,
    /// Writes in flight.
    pub overlay: Overlay,
    observed: Observed,
    /// Admissions the API server refused, waiting to be retried.
    pub(super) backoff: Backoff,
    /// What each LocalQueue consumed, for admission fair sharing.
    pub fair_usage: UsageLedger,
}

impl Planner {
    /// A planner converting with `options` and scheduling with `scheduler_config`.
    pub fn new(options: ConversionOptions, scheduler_config: SchedulerConfig) -> Self {
        Self {
            options,
            cache: ConversionCache::new(),
            scheduler_config,
            queues: Queues::new(),
            overlay: Overlay::default(),
            observed: Observed::default(),
            backoff: Backoff::default(),
            fair_usage: UsageLedger::default(),
        }
    }

    /// Keeps each LocalQueue's consumption for admission fair sharing with `settings` (the
    /// Configuration's `admissionFairSharing` with its gate on).
    #[must_use]
    pub fn with_admission_fair_sharing(mut self, settings: Option<AdmissionFairSharing>) -> Self {
        self.fair_usage = UsageLedger::new(settings);
        self
    }

    /// How the stores are converted.
    pub fn options(&self) -> &ConversionOptions {
        &self.options
    }

    /// Whether the scheduler runs with fair sharing.
    pub fn fair_sharing(&self) -> bool {
        self.scheduler_config.fair_sharing.is_some()
    }

    /// One pass over `state` at `now`: reconciles the overlay with the store, converts,
    /// requeues the parked workloads a change concerns, refreshes the queues (leaving out
    /// workloads in backoff and dropping those no longer pending) and runs the cycle.
    pub fn plan(&mut self, state: &ClusterState, now: Timestamp) -> Plan {
        let mut converted = convert_cached(state, &self.options, &mut self.cache);
        self.overlay.reconcile(&converted.objects);
        self.overlay.apply(&mut converted);
        self.fair_usage
            .sample(&state.local_queues, &converted.holders, now);
        let snapshot = converted
            .snapshot(self.scheduler_config.clone(), now)
            .with_local_queue_usage(self.fair_usage.usages(&state.local_queues));

        let observed = Observed::of(&converted);
        for requeue in self.observed.requeues(&observed) {
            let scope = match &requeue {
                Requeue::ClusterQueue(name) => RequeueScope::ClusterQueue(name),
                Requeue::Cohort(name) => RequeueScope::Cohort(name),
                Requeue::All => RequeueScope::All,
            };
            self.queues.requeue_inadmissible(&snapshot, scope);
        }
        self.observed = observed;

        let mut pending_keys = foldhash::HashSet::with_capacity(converted.pending.len());
        for pending in &converted.pending {
            let key = pending.workload.key.as_str();
            if self.backoff.is_waiting(key, now) {
                continue;
            }
            pending_keys.insert(key);
            // Pushing an unchanged workload is a no-op, but costs a deep compare per pending
            // workload per pass.
            let in_place = pending.unchanged
                && self.queues.cluster_queue_of(key)
                    == Some(pending.workload.cluster_queue.as_str());
            if !in_place {
                self.queues.push(Arc::clone(&pending.workload));
            }
        }
        // Deleted, admitted elsewhere, moved to a stopped LocalQueue, or waiting out a backoff.
        self.queues.retain(|key| pending_keys.contains(key));

        let decisions = cycle(&snapshot, &mut self.queues);
        self.charge_admissions(&converted, &snapshot, &decisions);
        // What this cycle admitted holds quota from now on: observed as held, its release is
        // seen even when the workload finishes before any pass shows it admitted, so what
        // waits for that quota is requeued rather than left parked.
        self.observed.note_admissions(&decisions);
        Plan {
            converted,
            snapshot,
            decisions,
        }
    }

    /// Charges the entry penalty of each admission in a ClusterQueue with admission fair
    /// sharing to its LocalQueue, as the cycle did for its later heads.
    fn charge_admissions(
        &mut self,
        converted: &Converted,
        snapshot: &Snapshot,
        decisions: &[Decision],
    ) {
        let Some(config) = &self.scheduler_config.admission_fair_sharing else {
            return;
        };
        let mut local_queues = None;
        for decision in decisions {
            let Decision::Admit {
                workload,
                admission,
            } = decision
            else {
                continue;
            };
            if !snapshot
                .cluster_queue(&admission.cluster_queue)
                .is_some_and(|cq| cq.admission_fair_sharing)
            {
                continue;
            }
            let local_queues = local_queues.get_or_insert_with(|| {
                converted
                    .pending
                    .iter()
                    .map(|pending| (pending.workload.key.as_str(), &pending.local_queue))
                    .collect::<foldhash::HashMap<_, _>>()
            });
            if let Some(local_queue) = local_queues.get(workload.as_str()) {
                self.fair_usage.charge(
                    workload,
                    local_queue,
                    entry_penalty(&admission.usage(), config),
                );
            }
        }
    }
}
