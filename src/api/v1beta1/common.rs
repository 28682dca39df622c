//! Types shared by several v1beta1 kinds. Sub-types whose shape did not change between the two
//! versions are the v1beta2 ones, re-exported from [`super`].

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::api::v1beta2;

/// Fair-sharing state of a ClusterQueue, Cohort or LocalQueue in v1beta1, which also carries the
/// admission fair sharing usage that v1beta2 keeps only on LocalQueues.
#[derive(Serialize, Deserialize, Clone, Debug, Default, JsonSchema, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct FairSharingStatus {
    /// Dominant resource share above nominal quota divided by the weight; 0 when not borrowing.
    pub weighted_share: i64,

    /// Usage that admission fair sharing orders LocalQueues by.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub admission_fair_sharing_status: Option<v1beta2::AdmissionFairSharingStatus>,
}

/// Drops the admission fair sharing usage, which v1beta2 ClusterQueues and Cohorts do not have.
impl From<FairSharingStatus> for v1beta2::FairSharingStatus {
    fn from(status: FairSharingStatus) -> Self {
        Self {
            weighted_share: status.weighted_share,
        }
    }
}

impl From<v1beta2::FairSharingStatus> for FairSharingStatus {
    fn from(status: v1beta2::FairSharingStatus) -> Self {
        Self {
            weighted_share: status.weighted_share,
            admission_fair_sharing_status: None,
        }
    }
}

impl From<FairSharingStatus> for v1beta2::LocalQueueFairSharingStatus {
    fn from(status: FairSharingStatus) -> Self {
        Self {
            weighted_share: status.weighted_share,
            admission_fair_sharing_status: status.admission_fair_sharing_status,
        }
    }
}

impl From<v1beta2::LocalQueueFairSharingStatus> for FairSharingStatus {
    fn from(status: v1beta2::LocalQueueFairSharingStatus) -> Self {
        Self {
            weighted_share: status.weighted_share,
            admission_fair_sharing_status: status.admission_fair_sharing_status,
        }
    }
}
