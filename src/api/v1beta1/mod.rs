//! `kueue.x-k8s.io/v1beta1`: the deprecated version still served for older clients.
//!
//! Only the types whose shape differs from v1beta2 are defined here; the others are re-exported
//! from [`super::v1beta2`]. Each kind that differs converts to and from its v1beta2 form with
//! `From`, in the same way as Kueue's conversion webhook; fields without a counterpart in the
//! other version are dropped, as Kueue drops them.

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

pub use super::v1beta2::{
    AdmissionCheckParametersReference, AdmissionCheckState, AdmissionCheckStatus,
    AdmissionCheckStrategyRule, AdmissionChecksStrategy, AdmissionFairSharingStatus, AdmissionMode,
    AdmissionScope, BorrowWithinCohort, BorrowWithinCohortPolicy, CheckState,
    ClusterProfileReference, ClusterQueuePreemption, DelayedTopologyRequestState, FairSharing,
    FlavorFungibilityPreference, FlavorQuotas, FlavorUsage, LocalQueueFlavorUsage,
    LocalQueueResourceUsage, LocationType, PodSetMergePolicy, PodSetRequest, PodSetUpdate,
    PreemptionPolicy, ProvisioningRequestPodSetUpdates,
    ProvisioningRequestPodSetUpdatesNodeSelector, ProvisioningRequestRetryStrategy,
    QueueingStrategy, ReclaimablePod, RequeueState, ResourceGroup, ResourceQuota, ResourceUsage,
    SchedulingStats, StopPolicy, TopologyLevel, UnhealthyNode, WorkloadSchedulingStatsEviction,
};

/// The `apiVersion` of this version.
pub const API_VERSION: &str = "kueue.x-k8s.io/v1beta1";
