//! Cohort v1beta1: same spec as v1beta2; the status' fair sharing also carries admission fair
//! sharing usage, which v1beta2 Cohorts do not have.

use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::common::FairSharingStatus;
use crate::api::schema;
use crate::api::v1beta2::{self, FairSharing, ResourceGroup};

/// Desired state of a Cohort (v1beta1).
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, Default, JsonSchema, PartialEq)]
#[kube(
    group = "kueue.x-k8s.io",
    version = "v1beta1",
    kind = "Cohort",
    plural = "cohorts",
    shortname = "co",
    status = "CohortStatus",
    derive = "PartialEq",
    derive = "Default",
    served = true,
    storage = false,
    deprecated = "This version is deprecated. Use v1beta2 instead.",
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

/// Observed state of a Cohort (v1beta1).
#[derive(Serialize, Deserialize, Clone, Debug, Default, JsonSchema, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct CohortStatus {
    /// Fair-sharing state, recorded when fair sharing is enabled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fair_sharing: Option<FairSharingStatus>,
}

// === Conversion ===

impl From<Cohort> for v1beta2::Cohort {
    /// The admission fair sharing usage of the status is dropped.
    fn from(cohort: Cohort) -> Self {
        Self {
            metadata: cohort.metadata,
            spec: v1beta2::CohortSpec {
                parent_name: cohort.spec.parent_name,
                resource_groups: cohort.spec.resource_groups,
                fair_sharing: cohort.spec.fair_sharing,
            },
            status: cohort.status.map(|status| v1beta2::CohortStatus {
                fair_sharing: status.fair_sharing.map(Into::into),
            }),
        }
    }
}

impl From<v1beta2::Cohort> for Cohort {
    fn from(cohort: v1beta2::Cohort) -> Self {
        Self {
            metadata: cohort.metadata,
            spec: CohortSpec {
                parent_name: cohort.spec.parent_name,
                resource_groups: cohort.spec.resource_groups,
                fair_sharing: cohort.spec.fair_sharing,
            },
            status: cohort.status.map(|status| CohortStatus {
                fair_sharing: status.fair_sharing.map(Into::into),
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;

    use super::*;
    use crate::testing::api_versions::{quantities, time, v1beta1_cohort, v1beta2_cohort};

    #[test]
    fn converts_to_the_equivalent_v1beta2_object() {
        assert_eq!(v1beta2::Cohort::from(v1beta1_cohort()), v1beta2_cohort());
        assert_eq!(Cohort::from(v1beta2_cohort()), v1beta1_cohort());
    }

    #[test]
    fn round_trips_through_the_other_version() {
        let v1 = v1beta1_cohort();
        assert_eq!(Cohort::from(v1beta2::Cohort::from(v1.clone())), v1);
        let v2 = v1beta2_cohort();
        assert_eq!(v1beta2::Cohort::from(Cohort::from(v2.clone())), v2);
    }

    #[test]
    fn drops_admission_fair_sharing_usage() {
        let mut v1 = v1beta1_cohort();
        v1.status = Some(CohortStatus {
            fair_sharing: Some(FairSharingStatus {
                weighted_share: 7,
                admission_fair_sharing_status: Some(v1beta2::AdmissionFairSharingStatus {
                    consumed_resources: quantities(&[("cpu", "1")]),
                    last_update: time("2025-03-01T10:00:00Z"),
                }),
            }),
        });
        assert_eq!(v1beta2::Cohort::from(v1), v1beta2_cohort());
    }
}
