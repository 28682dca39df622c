//! The quota core and its feed from the API.
//!
//! The core itself (model, quota tree, queues, scheduling cycle, flavor assignment, preemption,
//! fair sharing) is the crate `kuota-quota`, re-exported here whole: a crate of its own so that
//! the compiler, not a convention, keeps it free of Kubernetes types and of the rest of Kuota.
//! [`from_api`] turns Kueue's API objects into its model, for the admitter and the webhook alike;
//! [`node_usage`] sums what pods outside topology-aware placement take on each node.

pub use kuota_quota::*;

pub mod from_api;
pub mod node_usage;
