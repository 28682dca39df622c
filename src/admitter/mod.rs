//! The quota admitter: queues pending workloads and reserves ClusterQueue quota for them.

pub mod scheduler;
