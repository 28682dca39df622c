//! `kueue.x-k8s.io/v1beta2`: the storage version, used everywhere inside Kuota.

mod admissioncheck;
mod clusterqueue;
mod cohort;
mod common;
mod localqueue;
mod multikueue;
mod provisioningrequestconfig;
mod resourceflavor;
mod topology;
mod workload;
mod workloadpriorityclass;

pub use admissioncheck::*;
pub use clusterqueue::*;
pub use cohort::*;
pub use common::*;
pub use localqueue::*;
pub use multikueue::*;
pub use provisioningrequestconfig::*;
pub use resourceflavor::*;
pub use topology::*;
pub use workload::*;
pub use workloadpriorityclass::*;

/// The `apiVersion` of this version.
pub const API_VERSION: &str = "kueue.x-k8s.io/v1beta2";
