//! ClusterQueue validation (Kueue `clusterqueue_webhook.go`), with the resource group and
//! fair sharing rules Cohorts share.

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::apimachinery::pkg::api::resource::Quantity;

use crate::api::v1beta2::{
    BorrowWithinCohortPolicy, ClusterQueue, FairSharing, FlavorFungibilityPolicy, PreemptionPolicy,
    QueueingStrategy, ResourceGroup,
};
use crate::config::{Feature, FeatureGates};
use crate::k8s::field::FieldError;
use crate::k8s::names;

use super::common::{NEGATIVE, immutable, json, nano, non_negative, validate_label_selector};

/// Kueue `validationConfig`.
pub(super) struct GroupRules {
    pub(super) has_parent: bool,
    pub(super) lending_within_nominal: bool,
    /// "cohort" or "parent", for `must be nil when <x> is empty`.
    pub(super) parent_word: &'static str,
}

/// Kueue `validateResourceGroups`.
pub(super) fn validate_resource_groups(
    groups: &[ResourceGroup],
    rules: &GroupRules,
    field: &str,
) -> Vec<FieldError> {
    let mut errors = Vec::new();
    let mut seen_resources = BTreeSet::new();
    let mut seen_flavors = BTreeSet::new();
    for (i, group) in groups.iter().enumerate() {
        let group_path = format!("{field}[{i}]");
        for (j, name) in group.covered_resources.iter().enumerate() {
            let path = format!("{group_path}.coveredResources[{j}]");
            errors.extend(
                names::qualified_name(name)
                    .into_iter()
                    .map(|message| FieldError::invalid(&path, name.as_str(), message)),
            );
            if !seen_resources.insert(name.as_str()) {
                errors.push(FieldError::duplicate(&path, name.as_str()));
            }
        }
        for (j, flavor) in group.flavors.iter().enumerate() {
            let path = format!("{group_path}.flavors[{j}]");
            for (k, quota) in flavor.resources.iter().enumerate() {
                let Some(covered) = group.covered_resources.get(k) else {
                    break;
                };
                let path = format!("{path}.resources[{k}]");
                if &quota.name != covered {
                    errors.push(FieldError::invalid(
                        format!("{path}.name"),
                        quota.name.as_str(),
                        "must match the name in coveredResources",
                    ));
                }
                errors.extend(non_negative(
                    &quota.nominal_quota,
                    &format!("{path}.nominalQuota"),
                ));
                let limit_without_parent = |limit: &Quantity, field: &str| {
                    (!rules.has_parent).then(|| {
                        FieldError::invalid(
                            field,
                            limit.0.as_str(),
                            format!("must be nil when {} is empty", rules.parent_word),
                        )
                    })
                };
                if let Some(limit) = &quota.borrowing_limit {
                    let limit_path = format!("{path}.borrowingLimit");
                    errors.extend(limit_without_parent(limit, &limit_path));
                    errors.extend(non_negative(limit, &limit_path));
                }
                if let Some(limit) = &quota.lending_limit {
                    let limit_path = format!("{path}.lendingLimit");
                    errors.extend(non_negative(limit, &limit_path));
                    errors.extend(limit_without_parent(limit, &limit_path));
                    if rules.lending_within_nominal
                        && let (Ok(lend), Ok(nominal)) = (nano(limit), nano(&quota.nominal_quota))
                        && lend > nominal
                    {
                        errors.push(FieldError::invalid(
                            &limit_path,
                            limit.0.as_str(),
                            "must be less than or equal to the nominalQuota",
                        ));
                    }
                }
            }
            if !seen_flavors.insert(flavor.name.as_str()) {
                errors.push(FieldError::duplicate(
                    format!("{path}.name"),
                    flavor.name.as_str(),
                ));
            }
        }
    }
    errors
}

/// Kueue `validateFairSharing`.
pub(super) fn validate_fair_sharing(
    fair_sharing: Option<&FairSharing>,
    field: &str,
) -> Vec<FieldError> {
    let Some(weight) = fair_sharing.and_then(|fs| fs.weight.as_ref()) else {
        return Vec::new();
    };
    match nano(weight) {
        Ok(value) if value < 0 => vec![FieldError::invalid(field, weight.0.as_str(), NEGATIVE)],
        Ok(value) if value > 0 && value <= 1 => vec![FieldError::invalid(
            field,
            weight.0.as_str(),
            "When not 0, weight must be > 10e-9",
        )],
        Ok(_) => Vec::new(),
        Err(mut error) => {
            error.field = field.to_owned();
            vec![error]
        }
    }
}

pub(super) fn all_flavors(groups: &[ResourceGroup]) -> BTreeSet<&str> {
    groups
        .iter()
        .flat_map(|group| group.flavors.iter().map(|flavor| flavor.name.as_str()))
        .collect()
}

/// Kueue `ValidateClusterQueue` (`old` is `None` on CREATE) and `ValidateClusterQueueUpdate`.
pub fn validate_cluster_queue(
    cluster_queue: &ClusterQueue,
    old: Option<&ClusterQueue>,
    gates: &FeatureGates,
) -> Vec<FieldError> {
    let spec = &cluster_queue.spec;
    let mut errors = Vec::new();
    let rules = GroupRules {
        has_parent: spec.cohort_name.as_deref().is_some_and(|c| !c.is_empty()),
        lending_within_nominal: true,
        parent_word: "cohort",
    };
    errors.extend(validate_resource_groups(
        &spec.resource_groups,
        &rules,
        "spec.resourceGroups",
    ));
    errors.extend(validate_label_selector(
        spec.namespace_selector.as_ref(),
        "spec.namespaceSelector",
    ));
    if let Some(preemption) = &spec.preemption
        && preemption.reclaim_within_cohort == PreemptionPolicy::Never
        && preemption
            .borrow_within_cohort
            .as_ref()
            .is_some_and(|borrow| borrow.policy != BorrowWithinCohortPolicy::Never)
    {
        errors.push(FieldError::invalid(
            "spec.preemption",
            json(preemption),
            "reclaimWithinCohort=Never and borrowWithinCohort.Policy!=Never",
        ));
    }
    if let Some(fungibility) = &spec.flavor_fungibility
        && let Some(preference) = fungibility.preference
        && (fungibility.when_can_borrow != FlavorFungibilityPolicy::TryNextFlavor
            || fungibility.when_can_preempt != FlavorFungibilityPolicy::TryNextFlavor)
    {
        let name = json(&preference);
        let text = name.as_str().unwrap_or_default().to_owned();
        errors.push(FieldError::invalid(
            "spec.flavorFungibility.preference",
            name,
            format!("preference {text:?} requires both whenCanBorrow and whenCanPreempt to be TryNextFlavor"),
        ));
    }
    errors.extend(validate_fair_sharing(
        spec.fair_sharing.as_ref(),
        "spec.fairSharing",
    ));

    let total_flavors: usize = spec.resource_groups.iter().map(|g| g.flavors.len()).sum();
    if total_flavors > 256 {
        errors.push(FieldError::invalid(
            "spec.resourceGroups",
            total_flavors,
            format!("total number of flavors across all resourceGroups must be ≤ 256, got {total_flavors}"),
        ));
    }
    let total_resources: usize = spec
        .resource_groups
        .iter()
        .map(|g| g.covered_resources.len())
        .sum();
    if total_resources > 256 {
        errors.push(FieldError::invalid(
            "spec.resourceGroups",
            total_resources,
            format!("total number of covered resources across all resourceGroups must be ≤ 256, got {total_resources}"),
        ));
    }
    for (i, group) in spec.resource_groups.iter().enumerate() {
        let combinations: usize = group.flavors.iter().map(|f| f.resources.len()).sum();
        if combinations > 512 {
            errors.push(FieldError::invalid(
                format!("spec.resourceGroups[{i}]"),
                combinations,
                format!("number of flavor-resource combinations in a resourceGroup must be ≤ 512, got {combinations}"),
            ));
        }
    }
    if gates.enabled(Feature::ConcurrentAdmission) {
        errors.extend(validate_concurrent_admission(cluster_queue));
    }
    errors.extend(validate_admission_check_flavors(cluster_queue, old, gates));
    if let Some(old) = old {
        errors.extend(immutable(
            &spec.concurrent_admission_policy,
            &old.spec.concurrent_admission_policy,
            "spec.concurrentAdmissionPolicy",
        ));
    }
    errors
}

/// Kueue `validateConcurrentAdmissionPolicy` (gate `ConcurrentAdmission`).
pub(super) fn validate_concurrent_admission(cluster_queue: &ClusterQueue) -> Vec<FieldError> {
    let spec = &cluster_queue.spec;
    let Some(policy) = &spec.concurrent_admission_policy else {
        return Vec::new();
    };
    let mut errors = Vec::new();
    if spec.resource_groups.len() != 1 {
        errors.push(FieldError::invalid(
            "spec.resourceGroups",
            spec.resource_groups.len(),
            "must have exactly one ResourceGroup when ConcurrentAdmissionPolicy is defined",
        ));
    }
    if let [group] = spec.resource_groups.as_slice()
        && group.flavors.len() > 16
    {
        errors.push(FieldError::invalid(
            "spec.resourceGroups[0].flavors",
            group.flavors.len(),
            "cannot have more than 16 resource flavors in the ResourceGroup when ConcurrentAdmissionPolicy is defined",
        ));
    }
    if let Some(constraints) = &policy.migration.constraints {
        let mode = json(&policy.migration.mode);
        let mode = mode.as_str().unwrap_or_default();
        if mode != "TryPreferredFlavors" {
            errors.push(FieldError::forbidden(
                "spec.concurrentAdmissionPolicy.migration.constraints",
                format!(
                    "may only be set when migration.mode is \"TryPreferredFlavors\" (got {mode:?})"
                ),
            ));
        } else if let Some(last) = &constraints.last_acceptable_flavor_name {
            let flavors = all_flavors(&spec.resource_groups);
            if !flavors.contains(last.as_str()) {
                let list: Vec<&str> = flavors.into_iter().collect();
                errors.push(FieldError::invalid(
                    "spec.concurrentAdmissionPolicy.migration.constraints.lastAcceptableFlavorName",
                    last.as_str(),
                    format!(
                        "must be one of the flavors defined in the ClusterQueue: [{}]",
                        list.join(" ")
                    ),
                ));
            }
        }
    }
    if spec.queueing_strategy == QueueingStrategy::StrictFifo {
        errors.push(FieldError::invalid(
            "spec.queueingStrategy",
            "StrictFIFO",
            "StrictFIFO queueing strategy cannot be used when ConcurrentAdmissionPolicy is defined",
        ));
    }
    errors
}

/// Kueue `validateAdmissionCheckOnFlavors`; on UPDATE with gate
/// `RejectUpdatesToCQWithInvalidOnFlavors` off, checks whose `onFlavors` did not change (with
/// the same flavors) are left alone so old objects stay editable.
pub(super) fn validate_admission_check_flavors(
    cluster_queue: &ClusterQueue,
    old: Option<&ClusterQueue>,
    gates: &FeatureGates,
) -> Vec<FieldError> {
    let Some(strategy) = &cluster_queue.spec.admission_checks_strategy else {
        return Vec::new();
    };
    let flavors = all_flavors(&cluster_queue.spec.resource_groups);
    let mut unchanged: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
    if let Some(old) = old
        && !gates.enabled(Feature::RejectUpdatesToCQWithInvalidOnFlavors)
        && all_flavors(&old.spec.resource_groups) == flavors
        && let Some(old_strategy) = &old.spec.admission_checks_strategy
    {
        for check in &old_strategy.admission_checks {
            unchanged.insert(
                check.name.as_str(),
                check.on_flavors.iter().map(String::as_str).collect(),
            );
        }
    }
    let supported: Vec<&str> = flavors.iter().copied().collect();
    let mut errors = Vec::new();
    for (i, check) in strategy.admission_checks.iter().enumerate() {
        let on_flavors: BTreeSet<&str> = check.on_flavors.iter().map(String::as_str).collect();
        if unchanged.get(check.name.as_str()) == Some(&on_flavors) {
            continue;
        }
        for (j, flavor) in check.on_flavors.iter().enumerate() {
            if !flavors.contains(flavor.as_str()) {
                errors.push(FieldError::not_supported(
                    format!("spec.admissionChecksStrategy.admissionChecks[{i}].onFlavors[{j}]"),
                    flavor.as_str(),
                    &supported,
                ));
            }
        }
    }
    errors
}
