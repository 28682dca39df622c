//! The admitter's writes of status: a Workload's admission, eviction and pending state
//! ([`workload_status`]), and the status of ClusterQueues and LocalQueues ([`queue_status`]).

pub mod queue_status;
pub mod workload_status;
