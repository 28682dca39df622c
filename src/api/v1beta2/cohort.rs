//! Cohort: a named group of ClusterQueues (and Cohorts) that share unused quota.

use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::common::{FairSharing, FairSharingStatus, ResourceGroup};
use crate::api::schema;

/// Desired state of a Cohort.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, Default, JsonSchema, PartialEq)]
#[kube(
    group = "kueue.x-k8s.io",
    version = "v1beta2",
    kind = "Cohort",
    plural = "cohorts",
    shortname = "co",
    status = "CohortStatus",
    derive = "PartialEq",
    derive = "Default",
    doc = "A node of the cohort tree: ClusterQueues and Cohorts below it share unused quota."
)]
#[serde(rename_all = "camelCase")]
pub struct CohortSpec {
    /// Parent Cohort in the cohort tree; unset for a root.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 253), pattern(schema::DNS1123_SUBDOMAIN))]
    pub parent_name: Option<String>,

    /// Quota the Cohort itself provides to its subtree.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 16), extend("x-kubernetes-list-type" = "atomic"))]
    pub resource_groups: Vec<ResourceGroup>,

    /// Weight of the Cohort under fair sharing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fair_sharing: Option<FairSharing>,
}

/// Observed state of a Cohort.
#[derive(Serialize, Deserialize, Clone, Debug, Default, JsonSchema, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct CohortStatus {
    /// Fair-sharing state, recorded when fair sharing is enabled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fair_sharing: Option<FairSharingStatus>,
}
