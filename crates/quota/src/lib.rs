//! Kuota's pure quota core, shared by the admitter and the webhook: no Kubernetes calls, no
//! Kubernetes types, nothing from the rest of Kuota.
//!
//! The caller mirrors the API into plain [`model`] values, builds a [`Snapshot`] (flavors,
//! cohorts, ClusterQueues and every workload holding quota) and keeps a [`Queues`] of pending
//! workloads. [`cycle`] then decides what to admit, whom to preempt or evict and why the rest
//! waits, following Kueue's algorithms (flavor assignment, borrowing and lending in the cohort
//! tree, classical and fair-sharing preemption, partial admission) but admitting as many
//! workloads per ClusterQueue per cycle as fit.
#![forbid(unsafe_code)]

mod admission_fair_sharing;
mod cycle;
mod decision;
mod fair_sharing;
mod flavor;
pub mod model;
mod preemption;
mod queue;
mod snapshot;
pub mod topology;

#[cfg(test)]
mod tests;

pub use admission_fair_sharing::{
    AdmissionFairSharingConfig, LocalQueueUsage, decay_rate, decayed, entry_penalty,
    local_queue_key, weighted_usage,
};
pub use cycle::cycle;
pub use decision::{Decision, EvictionReason, PendingReason, PreemptionReason, Victim};
pub use queue::{PendingCounts, Queues, RequeueScope, queue_order};
pub use snapshot::{
    FairSharingConfig, FairSharingStrategy, QuantityFormatter, SchedulerConfig, Snapshot,
    SnapshotBuilder, format_plain, max_possible,
};
