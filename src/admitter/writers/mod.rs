//! The admitter's writes of status: a Workload's admission, eviction and pending state
//! ([`workload_status`]), written as Kueue writes it ([`status_apply`]), and the status of
//! ClusterQueues and LocalQueues ([`queue_status`]), and the `resource-in-use` finalizer off
//! deleted ClusterQueues and ResourceFlavors nothing uses ([`in_use`]).

pub mod in_use;
pub mod queue_status;
pub mod status_apply;
pub mod workload_status;
