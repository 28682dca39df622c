//! What a scheduling cycle decided, for the status writer to apply.

use super::model::Admission;

/// Reason of a `QuotaReserved=False` condition (Kueue, `UnadmittedWorkloadsObservability` on).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PendingReason {
    /// No flavor matches the workload's node selectors, affinity or tolerations.
    NoMatchingFlavor,
    /// Quota is in use; the workload waits for it to be released.
    WaitingForQuota,
    /// The request exceeds what the queue could ever provide.
    ExceedsMaxQuota,
    /// Preemptions were issued; the workload waits for the victims to release quota.
    WaitingForPreemptedWorkloads,
    /// The workload or its queue is misconfigured (e.g. namespace not selected).
    Misconfigured,
    /// The ClusterQueue is stopped or inactive.
    Suspended,
    /// It would fit, but `blockAdmission` waits for admitted workloads to be `PodsReady`.
    WaitingForPodsReady,
    /// Kueue's generic fallback reason.
    Pending,
    /// The PodSets fit the quota but not the free capacity of their flavor's Topology.
    TopologyPlacementFailed,
}

impl PendingReason {
    /// The condition reason string.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::NoMatchingFlavor => "NoMatchingFlavor",
            Self::WaitingForQuota => "WaitingForQuota",
            Self::ExceedsMaxQuota => "ExceedsMaxQuota",
            Self::WaitingForPreemptedWorkloads => "WaitingForPreemptedWorkloads",
            Self::Misconfigured => "Misconfigured",
            Self::Suspended => "Suspended",
            Self::WaitingForPodsReady => "WaitingForPodsReady",
            Self::Pending => "Pending",
            Self::TopologyPlacementFailed => "TopologyPlacementFailed",
        }
    }

    /// Kueue's ranking when several reasons apply (higher wins).
    pub(super) fn severity(reason: Option<Self>) -> u8 {
        match reason {
            Some(Self::NoMatchingFlavor) => 4,
            Some(Self::ExceedsMaxQuota) => 3,
            Some(Self::WaitingForQuota) => 2,
            Some(Self::TopologyPlacementFailed) => 1,
            _ => 0,
        }
    }

    /// The more severe of two reasons, `a` on ties.
    pub(super) fn most_severe(a: Option<Self>, b: Option<Self>) -> Option<Self> {
        if Self::severity(a) >= Self::severity(b) {
            a
        } else {
            b
        }
    }
}

/// Reason of a `Preempted` condition.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PreemptionReason {
    /// Preempted by a higher priority workload of the same ClusterQueue.
    InClusterQueue,
    /// Its ClusterQueue borrowed quota that a cohort member reclaimed.
    InCohortReclamation,
    /// Preempted to even out fair shares in the cohort.
    InCohortFairSharing,
    /// Reclaimed by a cohort member that itself borrows.
    InCohortReclaimWhileBorrowing,
}

impl PreemptionReason {
    /// The condition reason string.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::InClusterQueue => "InClusterQueue",
            Self::InCohortReclamation => "InCohortReclamation",
            Self::InCohortFairSharing => "InCohortFairSharing",
            Self::InCohortReclaimWhileBorrowing => "InCohortReclaimWhileBorrowing",
        }
    }

    /// The wording Kueue uses inside preemption messages.
    pub fn human_readable(self) -> &'static str {
        match self {
            Self::InClusterQueue => "prioritization in the ClusterQueue",
            Self::InCohortReclamation => "reclamation within the cohort",
            Self::InCohortFairSharing => "Fair Sharing within the cohort",
            Self::InCohortReclaimWhileBorrowing => "reclamation within the cohort while borrowing",
        }
    }
}

/// Reason of an eviction issued by the scheduler.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum EvictionReason {
    /// The ClusterQueue has `stopPolicy: HoldAndDrain`.
    ClusterQueueStopped,
}

impl EvictionReason {
    /// The `Evicted` condition reason string.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::ClusterQueueStopped => "ClusterQueueStopped",
        }
    }
}

/// A workload to preempt so that a preemptor fits.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Victim {
    /// Victim key (`namespace/name`).
    pub workload: String,
    /// The victim's ClusterQueue.
    pub cluster_queue: String,
    /// `Preempted` condition reason.
    pub reason: PreemptionReason,
    /// `Preempted`/`Evicted` condition message.
    pub message: String,
}

/// One outcome of a scheduling cycle.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Decision {
    /// Reserve quota: write `status.admission` and `QuotaReserved=True`.
    Admit {
        /// Workload key.
        workload: String,
        /// The reservation.
        admission: Admission,
    },
    /// Evict the victims (skipping those already evicted) and set the preemptor's
    /// `QuotaReserved=False` with `reason`/`message`; it is retried once quota is released.
    Preempt {
        /// Preemptor key.
        workload: String,
        /// Workloads to evict.
        victims: Vec<Victim>,
        /// Always [`PendingReason::WaitingForPreemptedWorkloads`].
        reason: PendingReason,
        /// Assignment message plus `. Pending the preemption of N workload(s)`.
        message: String,
    },
    /// The workload cannot be admitted now: set `QuotaReserved=False` and emit a Warning event.
    Inadmissible {
        /// Workload key.
        workload: String,
        /// Condition reason.
        reason: PendingReason,
        /// Condition message.
        message: String,
    },
    /// Evict an admitted workload.
    Evict {
        /// Workload key.
        workload: String,
        /// `Evicted` condition reason.
        reason: EvictionReason,
        /// `Evicted` condition message.
        message: String,
    },
}
