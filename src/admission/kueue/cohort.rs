//! Cohort validation (Kueue `cohort_webhook.go`).

use crate::api::v1beta2::Cohort;
use crate::k8s::field::FieldError;

use super::cluster_queue::{GroupRules, validate_fair_sharing, validate_resource_groups};

/// Kueue `validateCohort` (CREATE and UPDATE).
pub fn validate_cohort(cohort: &Cohort) -> Vec<FieldError> {
    let spec = &cohort.spec;
    let rules = GroupRules {
        has_parent: spec.parent_name.as_deref().is_some_and(|p| !p.is_empty()),
        lending_within_nominal: false,
        parent_word: "parent",
    };
    let mut errors = validate_fair_sharing(spec.fair_sharing.as_ref(), "spec.fairSharing");
    errors.extend(validate_resource_groups(
        &spec.resource_groups,
        &rules,
        "spec.resourceGroups",
    ));
    errors
}
