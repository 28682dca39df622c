//! Kueue's own webhooks: defaulting and validation of ClusterQueue, Cohort, ResourceFlavor and
//! Workload, one file per kind as Kueue's `pkg/webhooks/`, with the rules they share in
//! `common` and the admission-gated-by annotation (also checked on jobs) in
//! `admission_gated_by`.
//!
//! Messages are Kueue's, in apimachinery's field error shape. Where Go prints a struct with
//! `%#v` (immutable admissions and PodSets, a preemption block) the value is shown as JSON, and
//! quantities are shown as written rather than re-canonicalized. Map keys are visited in sorted
//! order, so the order of several errors is stable (Go's is random).

mod admission_gated_by;
mod cluster_queue;
mod cohort;
mod common;
mod resource_flavor;
mod workload;

pub use admission_gated_by::{admission_gated_by_on_create, admission_gated_by_on_update};
pub use cluster_queue::validate_cluster_queue;
pub use cohort::validate_cohort;
pub use common::{IMMUTABLE, add_resource_in_use_finalizer, immutable, validate_label_name};
pub use resource_flavor::validate_resource_flavor;
pub use workload::{default_workload, validate_workload};

#[cfg(test)]
mod tests;
