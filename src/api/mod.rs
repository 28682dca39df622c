//! Kueue-compatible API types of the `kueue.x-k8s.io` group.
//!
//! [`v1beta2`] is the storage version and the one Kuota works with; [`v1beta1`] is still served
//! for older clients and converted by [`conversion::convert`]. [`crds`] builds the
//! CustomResourceDefinitions from these types, and [`constants`] holds Kueue's well-known labels,
//! annotations, condition types and reasons.

pub mod constants;
pub mod conversion;
pub mod crds;
pub mod kubernetes_schema;
pub mod pod_template;
mod schema;
pub mod v1beta1;
pub mod v1beta2;
