//! The quota admitter: queues pending workloads and reserves ClusterQueue quota for them.

pub mod apply;
pub mod leader;
pub mod queue_status;
pub mod scheduler;
pub mod scheduling_loop;
pub mod snapshot;

pub use scheduling_loop::run_scheduler;

#[cfg(test)]
mod fixtures;
