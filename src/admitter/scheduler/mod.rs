//! The pure scheduling core of the quota admitter: no Kubernetes calls, no Kubernetes types.
//!
//! The caller mirrors the API into plain [`model`] values, builds a [`Snapshot`] (flavors,
//! cohorts, ClusterQueues and every workload holding quota) and keeps a [`Queues`] of pending
//! workloads. [`cycle`] then decides what to admit, whom to preempt or evict and why the rest
//! waits, following Kueue's algorithms (flavor assignment, borrowing and lending in the cohort
//! tree, classical and fair-sharing preemption, partial admission) but admitting as many
//! workloads per ClusterQueue per cycle as fit.

mod cycle;
mod decision;
mod fair_sharing;
mod flavor;
pub mod model;
mod preemption;
mod queue;
mod snapshot;

#[cfg(test)]
mod tests;

pub use cycle::cycle;
pub use decision::{Decision, EvictionReason, PendingReason, PreemptionReason, Victim};
pub use queue::{PendingCounts, Queues, RequeueScope};
pub use snapshot::{
    FairSharingConfig, FairSharingStrategy, QuantityFormatter, SchedulerConfig, Snapshot,
    SnapshotBuilder, format_plain, max_possible,
};
