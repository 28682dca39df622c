//! The quota admitter: queues pending workloads and reserves ClusterQueue quota for them.

pub mod events;
pub mod job_controller;
pub mod scheduler;
pub mod workload_builder;
