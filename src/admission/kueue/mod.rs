//! Kueue's own webhooks: defaulting and validation of ClusterQueue, Cohort, ResourceFlavor and
//! Workload (Kueue `pkg/webhooks/`), plus the apimachinery name and label rules they (and the
//! job webhooks) use.
//!
//! Messages are Kueue's, in apimachinery's field error shape. Where Go prints a struct with
//! `%#v` (immutable admissions and PodSets, a preemption block) the value is shown as JSON, and
//! quantities are shown as written rather than re-canonicalized. Map keys are visited in sorted
//! order, so the order of several errors is stable (Go's is random).

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::api::core::v1::{ResourceRequirements, Taint, Toleration};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, LabelSelector};
use serde::Serialize;
use serde_json::Value;

use crate::api::constants::{
    ADMISSION_GATED_BY_ANNOTATION, PRIORITY_BOOST_ANNOTATION, RESOURCE_IN_USE_FINALIZER, condition,
};
use crate::api::v1beta2::{
    AdmissionCheckState, BorrowWithinCohortPolicy, CheckState, ClusterQueue, Cohort, FairSharing,
    FlavorFungibilityPolicy, PodSet, PodSetTopologyRequest, PreemptionPolicy, QueueingStrategy,
    ReclaimablePod, ResourceFlavor, ResourceGroup, Workload,
};
use crate::config::{Feature, FeatureGates};
use crate::k8s::field::{BadValue, FieldError};
use crate::k8s::json::annotation;
use crate::k8s::names;
use crate::k8s::quantity::{parse_nano, resource_value};

/// apimachinery's `FieldImmutableErrorMsg`.
pub const IMMUTABLE: &str = "field is immutable";
/// apimachinery's `IsNegativeErrorMsg`.
const NEGATIVE: &str = "must be greater than or equal to 0";
/// Longest gate name in the admission-gated-by annotation (as `spec.managedBy` of Jobs).
const MAX_GATE_NAME_LENGTH: usize = 63;
/// apimachinery's `TotalAnnotationSizeLimitB`.
const TOTAL_ANNOTATION_SIZE_LIMIT: usize = 256 * 1024;

/// `Invalid value: <new>: field is immutable` when `new != old` (apimachinery
/// `ValidateImmutableField`).
pub fn immutable<T: Serialize + PartialEq>(new: &T, old: &T, field: &str) -> Vec<FieldError> {
    if new == old {
        return Vec::new();
    }
    vec![FieldError::invalid(field, json(new), IMMUTABLE)]
}

fn json<T: Serialize>(value: &T) -> Value {
    serde_json::to_value(value).unwrap_or(Value::Null)
}

/// apimachinery `ValidateLabelName`.
pub fn validate_label_name(name: &str, field: &str) -> Vec<FieldError> {
    names::qualified_name(name)
        .into_iter()
        .map(|message| FieldError::invalid(field, name, message))
        .collect()
}

/// apimachinery `ValidateLabels`.
fn validate_labels(labels: &BTreeMap<String, String>, field: &str) -> Vec<FieldError> {
    let mut errors = Vec::new();
    for (key, value) in labels {
        errors.extend(validate_label_name(key, field));
        errors.extend(
            names::label_value(value)
                .into_iter()
                .map(|message| FieldError::invalid(field, value.as_str(), message)),
        );
    }
    errors
}

/// apimachinery `ValidateAnnotations`.
fn validate_annotations(annotations: &BTreeMap<String, String>, field: &str) -> Vec<FieldError> {
    let mut errors: Vec<FieldError> = Vec::new();
    for key in annotations.keys() {
        errors.extend(
            names::qualified_name(&key.to_lowercase())
                .into_iter()
                .map(|message| FieldError::invalid(field, key.as_str(), message)),
        );
    }
    let size: usize = annotations.iter().map(|(k, v)| k.len() + v.len()).sum();
    if size > TOTAL_ANNOTATION_SIZE_LIMIT {
        errors.push(FieldError::too_long(
            field.to_owned(),
            TOTAL_ANNOTATION_SIZE_LIMIT,
        ));
    }
    errors
}

/// apimachinery `ValidateLabelSelector` (label values must be valid).
fn validate_label_selector(selector: Option<&LabelSelector>, field: &str) -> Vec<FieldError> {
    let Some(selector) = selector else {
        return Vec::new();
    };
    let mut errors = validate_labels(
        &selector.match_labels.clone().unwrap_or_default(),
        &format!("{field}.matchLabels"),
    );
    for (index, requirement) in selector.match_expressions.iter().flatten().enumerate() {
        let path = format!("{field}.matchExpressions[{index}]");
        let values = requirement.values.clone().unwrap_or_default();
        match requirement.operator.as_str() {
            "In" | "NotIn" if values.is_empty() => errors.push(FieldError::required(
                format!("{path}.values"),
                "must be specified when `operator` is 'In' or 'NotIn'",
            )),
            "Exists" | "DoesNotExist" if !values.is_empty() => errors.push(FieldError::forbidden(
                format!("{path}.values"),
                "may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
            )),
            "In" | "NotIn" | "Exists" | "DoesNotExist" => {}
            operator => errors.push(FieldError::invalid(
                format!("{path}.operator"),
                operator,
                "not a valid selector operator",
            )),
        }
        errors.extend(validate_label_name(
            &requirement.key,
            &format!("{path}.key"),
        ));
        for (value_index, value) in values.iter().enumerate() {
            errors.extend(names::label_value(value).into_iter().map(|message| {
                FieldError::invalid(
                    format!("{path}.values[{value_index}]"),
                    value.as_str(),
                    message,
                )
            }));
        }
    }
    errors
}

// === admission-gated-by annotation (Kueue `pkg/util/webhook`) ===

fn gated_by_path() -> String {
    format!("metadata.annotations[{ADMISSION_GATED_BY_ANNOTATION}]")
}

fn parse_gates(value: &str) -> Vec<&str> {
    if value.trim().is_empty() {
        return Vec::new();
    }
    value.split(',').map(str::trim).collect()
}

/// Kueue `ValidateAdmissionGatedByAnnotationOnCreate`.
pub fn admission_gated_by_on_create(object: &Value) -> Vec<FieldError> {
    gated_by_format(annotation(object, ADMISSION_GATED_BY_ANNOTATION).unwrap_or(""))
}

/// Kueue `ValidateAdmissionGatedByAnnotationOnUpdate`: gates can only be removed.
pub fn admission_gated_by_on_update(old: &Value, new: &Value) -> Vec<FieldError> {
    let old_value = annotation(old, ADMISSION_GATED_BY_ANNOTATION).unwrap_or("");
    let new_value = annotation(new, ADMISSION_GATED_BY_ANNOTATION).unwrap_or("");
    let mut errors = Vec::new();
    if old_value.is_empty() && !new_value.is_empty() {
        errors.push(FieldError::forbidden(
            gated_by_path(),
            "cannot add admission gate after creation",
        ));
    }
    if !old_value.is_empty() && !new_value.is_empty() {
        let old_gates = parse_gates(old_value);
        if parse_gates(new_value)
            .iter()
            .any(|gate| !old_gates.contains(gate))
        {
            errors.push(FieldError::forbidden(
                gated_by_path(),
                "can only remove gates, not add new ones",
            ));
        }
    }
    errors.extend(gated_by_format(new_value));
    errors
}

fn gated_by_format(value: &str) -> Vec<FieldError> {
    let path = gated_by_path();
    let mut errors = Vec::new();
    let mut seen = BTreeSet::new();
    for gate in parse_gates(value) {
        if gate.is_empty() {
            errors.push(FieldError::invalid(
                &path,
                value,
                "cannot contain empty gate names",
            ));
            continue;
        }
        if !seen.insert(gate) {
            errors.push(FieldError::invalid(
                &path,
                value,
                format!("duplicate gate name: {gate}"),
            ));
            continue;
        }
        errors.extend(domain_prefixed_path_errors(&path, gate));
        if gate.len() > MAX_GATE_NAME_LENGTH {
            errors.push(FieldError::too_long(path.clone(), MAX_GATE_NAME_LENGTH));
        }
    }
    errors
}

/// apimachinery `IsDomainPrefixedPath`.
fn domain_prefixed_path_errors(field: &str, value: &str) -> Vec<FieldError> {
    let Some((host, path)) = value
        .split_once('/')
        .filter(|(h, p)| !h.is_empty() && !p.is_empty())
    else {
        return vec![FieldError::invalid(
            field,
            value,
            "must be a domain-prefixed path (such as \"acme.io/foo\")",
        )];
    };
    let mut errors: Vec<FieldError> = names::dns1123_subdomain(host)
        .into_iter()
        .map(|message| FieldError::invalid(field, host, message))
        .collect();
    let valid_path = path
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || b"/-._~%!$&'()*+,;=:".contains(&b));
    if !valid_path {
        errors.push(FieldError::invalid(
            field,
            path,
            names::regex_error("Invalid path", r"[A-Za-z0-9/\-._~%!$&'()*+,;=:]+", &[]),
        ));
    }
    errors
}

// === Quantities ===

fn nano(quantity: &Quantity) -> Result<i128, FieldError> {
    parse_nano(&quantity.0).map_err(|_| {
        FieldError::invalid(
            "",
            quantity.0.as_str(),
            "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'",
        )
    })
}

/// Kueue `validateResourceQuantity`: non-negative (and parseable).
fn non_negative(quantity: &Quantity, field: &str) -> Vec<FieldError> {
    match nano(quantity) {
        Ok(value) if value < 0 => vec![FieldError::invalid(field, quantity.0.as_str(), NEGATIVE)],
        Ok(_) => Vec::new(),
        Err(mut error) => {
            error.field = field.to_owned();
            vec![error]
        }
    }
}

// === ClusterQueue and Cohort ===

/// Kueue `validationConfig`.
struct GroupRules {
    has_parent: bool,
    lending_within_nominal: bool,
    /// "cohort" or "parent", for `must be nil when <x> is empty`.
    parent_word: &'static str,
}

/// Kueue `validateResourceGroups`.
fn validate_resource_groups(
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
fn validate_fair_sharing(fair_sharing: Option<&FairSharing>, field: &str) -> Vec<FieldError> {
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

fn all_flavors(groups: &[ResourceGroup]) -> BTreeSet<&str> {
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
fn validate_concurrent_admission(cluster_queue: &ClusterQueue) -> Vec<FieldError> {
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
fn validate_admission_check_flavors(
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

// === ResourceFlavor ===

/// Kueue `ValidateResourceFlavor` (CREATE and UPDATE).
pub fn validate_resource_flavor(flavor: &ResourceFlavor) -> Vec<FieldError> {
    let spec = &flavor.spec;
    let mut errors: Vec<FieldError> = validate_labels(&spec.node_labels, "spec.nodeLabels");
    errors.extend(validate_node_taints(&spec.node_taints, "spec.nodeTaints"));
    errors.extend(validate_tolerations(&spec.tolerations, "spec.tolerations"));
    errors
}

fn validate_node_taints(taints: &[Taint], field: &str) -> Vec<FieldError> {
    let mut errors = Vec::new();
    let mut seen: BTreeSet<(&str, &str)> = BTreeSet::new();
    for (i, taint) in taints.iter().enumerate() {
        let path = format!("{field}[{i}]");
        errors.extend(validate_label_name(&taint.key, &format!("{path}.key")));
        let value = taint.value.as_deref().unwrap_or("");
        let value_errors = names::label_value(value);
        if !value_errors.is_empty() {
            errors.push(FieldError::invalid(
                format!("{path}.value"),
                value,
                value_errors.join(";"),
            ));
        }
        if !seen.insert((taint.effect.as_str(), taint.key.as_str())) {
            errors.push(
                FieldError::duplicate(path, BadValue::rendered(go_taint(taint)))
                    .with_detail("taints must be unique by key and effect pair".to_owned()),
            );
        }
    }
    errors
}

/// The taint as Go's `%#v` prints a `corev1.Taint`.
fn go_taint(taint: &Taint) -> String {
    let time_added = match &taint.time_added {
        None => "(*v1.Time)(nil)".to_owned(),
        Some(time) => format!("&v1.Time{{Time:{:?}}}", time.0.to_string()),
    };
    format!(
        "v1.Taint{{Key:{:?}, Value:{:?}, Effect:{:?}, TimeAdded:{time_added}}}",
        taint.key,
        taint.value.as_deref().unwrap_or(""),
        taint.effect
    )
}

fn validate_tolerations(tolerations: &[Toleration], field: &str) -> Vec<FieldError> {
    tolerations
        .iter()
        .enumerate()
        .filter_map(|(i, toleration)| {
            toleration
                .key
                .as_deref()
                .filter(|key| !key.is_empty())
                .map(|key| validate_label_name(key, &format!("{field}[{i}].key")))
        })
        .flatten()
        .collect()
}

// === Defaulting ===

/// Kueue's ClusterQueue and ResourceFlavor defaulting: add the `resource-in-use` finalizer.
pub fn add_resource_in_use_finalizer(object: &mut Value) {
    let Some(metadata) = object.get_mut("metadata").and_then(Value::as_object_mut) else {
        return;
    };
    let finalizers = metadata
        .entry("finalizers")
        .or_insert_with(|| Value::Array(Vec::new()));
    if finalizers.is_null() {
        *finalizers = Value::Array(Vec::new());
    }
    if let Some(list) = finalizers.as_array_mut()
        && !list
            .iter()
            .any(|f| f.as_str() == Some(RESOURCE_IN_USE_FINALIZER))
    {
        list.push(Value::from(RESOURCE_IN_USE_FINALIZER));
    }
}

/// Kueue's Workload defaulting: drop `minCount` when the `PartialAdmission` gate is off.
pub fn default_workload(workload: &mut Value, gates: &FeatureGates) {
    if gates.enabled(Feature::PartialAdmission) {
        return;
    }
    if let Some(pod_sets) = workload
        .pointer_mut("/spec/podSets")
        .and_then(Value::as_array_mut)
    {
        for pod_set in pod_sets {
            if let Some(pod_set) = pod_set.as_object_mut() {
                pod_set.remove("minCount");
            }
        }
    }
}

// === Workload ===

fn has_quota_reservation(workload: &Workload) -> bool {
    workload.status.as_ref().is_some_and(|status| {
        status
            .conditions
            .iter()
            .any(|c| c.type_ == condition::QUOTA_RESERVED && c.status == "True")
    })
}

fn reserves_quota_without_admission(workload: Option<&Workload>) -> bool {
    workload.is_some_and(|w| {
        has_quota_reservation(w)
            && w.status
                .as_ref()
                .and_then(|s| s.admission.as_ref())
                .is_none()
    })
}

/// Kueue `ValidateWorkload` (`old` is the stored object on UPDATE, for the rules that need it).
fn validate_workload_object(
    workload: &Workload,
    old: Option<&Workload>,
    gates: &FeatureGates,
) -> Vec<FieldError> {
    let mut errors: Vec<FieldError> = Vec::new();
    let mut with_min_count = 0;
    for (i, pod_set) in workload.spec.pod_sets.iter().enumerate() {
        errors.extend(validate_pod_set(
            pod_set,
            &format!("spec.podSets[{i}]"),
            gates,
        ));
        if pod_set.min_count.is_some() {
            with_min_count += 1;
        }
    }
    if with_min_count > 1 {
        errors.push(FieldError::invalid(
            "spec.podSets",
            with_min_count,
            "at most one podSet can use minCount",
        ));
    }
    if has_quota_reservation(workload) {
        errors.extend(validate_admission(workload, old));
    }
    let status = workload.status.clone().unwrap_or_default();
    errors.extend(validate_conditions(&status.conditions, "status.conditions"));
    errors.extend(validate_reclaimable_pods(workload));
    for (i, check) in status.admission_checks.iter().enumerate() {
        errors.extend(validate_pod_set_updates(
            check,
            workload,
            &format!("status.admissionChecks[{i}].podSetUpdates"),
        ));
    }
    let raw = json(workload);
    if gates.enabled(Feature::AdmissionGatedBy) {
        errors.extend(admission_gated_by_on_create(&raw));
    }
    if gates.enabled(Feature::PriorityBoost)
        && let Some(value) = annotation(&raw, PRIORITY_BOOST_ANNOTATION)
    {
        let path = format!("metadata.annotations[{PRIORITY_BOOST_ANNOTATION}]");
        if value.is_empty() {
            errors.push(FieldError::invalid(
                path,
                value,
                "must be a valid signed integer; use \"0\" explicitly, empty string is not allowed",
            ));
        } else if value.parse::<i32>().is_err() {
            errors.push(FieldError::invalid(
                path,
                value,
                "must be a valid signed integer",
            ));
        }
    }
    errors
}

fn validate_pod_set(pod_set: &PodSet, field: &str, gates: &FeatureGates) -> Vec<FieldError> {
    let mut errors: Vec<FieldError> = Vec::new();
    let template = &pod_set.template;
    if gates.enabled(Feature::WorkloadValidationForPodSetMetadata) {
        let metadata = template.metadata.clone().unwrap_or_default();
        errors.extend(validate_labels(
            &metadata.labels.unwrap_or_default(),
            &format!("{field}.template.metadata.labels"),
        ));
        errors.extend(validate_annotations(
            &metadata.annotations.unwrap_or_default(),
            &format!("{field}.template.metadata.annotations"),
        ));
    }
    let spec = template.spec.clone().unwrap_or_default();
    let containers = [
        ("initContainers", spec.init_containers.unwrap_or_default()),
        ("containers", spec.containers),
    ];
    for (list, containers) in containers {
        for (i, container) in containers.iter().enumerate() {
            let resources = container.resources.clone().unwrap_or_default();
            let path = format!("{field}.template.spec.{list}[{i}].resources");
            errors.extend(validate_requirements(&resources, &path, gates));
        }
    }
    if let Some(resources) = &spec.resources {
        let path = format!("{field}.template.spec.resources");
        errors.extend(validate_requirements(resources, &path, gates));
    }
    if gates.enabled(Feature::TASValidateWorkloadSliceSize)
        && let Some(request) = &pod_set.topology_request
    {
        errors.extend(validate_slice_size(
            request,
            &format!("{field}.topologyRequest"),
        ));
    }
    errors
}

fn validate_requirements(
    resources: &ResourceRequirements,
    field: &str,
    gates: &FeatureGates,
) -> Vec<FieldError> {
    let mut errors = validate_resource_list(
        resources.requests.as_ref(),
        &format!("{field}.requests"),
        gates,
    );
    errors.extend(validate_resource_list(
        resources.limits.as_ref(),
        &format!("{field}.limits"),
        gates,
    ));
    errors
}

fn validate_resource_list(
    list: Option<&BTreeMap<String, Quantity>>,
    field: &str,
    gates: &FeatureGates,
) -> Vec<FieldError> {
    let mut errors = Vec::new();
    for (name, quantity) in list.into_iter().flatten() {
        let path = format!("{field}[{name}]");
        if name == "pods" {
            errors.push(FieldError::invalid(
                &path,
                "pods",
                "the key is reserved for internal kueue use",
            ));
        }
        if gates.enabled(Feature::WorkloadValidateResourcesAreNonNegative) {
            errors.extend(non_negative(quantity, &path));
        }
    }
    errors
}

fn validate_slice_size(request: &PodSetTopologyRequest, field: &str) -> Vec<FieldError> {
    let mut errors = Vec::new();
    match (
        &request.pod_set_slice_required_topology,
        request.pod_set_slice_size,
    ) {
        (Some(_), None) => errors.push(FieldError::required(
            format!("{field}.podSetSliceSize"),
            "must be set when podSetSliceRequiredTopology is specified",
        )),
        (Some(_), Some(size)) if size <= 0 => errors.push(FieldError::invalid(
            format!("{field}.podSetSliceSize"),
            size,
            "must be greater than 0",
        )),
        (None, Some(_)) => errors.push(FieldError::forbidden(
            format!("{field}.podSetSliceSize"),
            "may not be set when podSetSliceRequiredTopology is not specified",
        )),
        _ => {}
    }
    for (i, constraint) in request
        .podset_slice_required_topology_constraints
        .iter()
        .enumerate()
    {
        if constraint.size <= 0 {
            errors.push(FieldError::invalid(
                format!("{field}.podsetSliceRequiredTopologyConstraints[{i}].size"),
                constraint.size,
                "must be greater than 0",
            ));
        }
    }
    errors
}

/// apimachinery `ValidateConditions`.
fn validate_conditions(conditions: &[Condition], field: &str) -> Vec<FieldError> {
    let mut errors = Vec::new();
    let mut seen = BTreeSet::new();
    for (i, condition) in conditions.iter().enumerate() {
        let path = format!("{field}[{i}]");
        if !seen.insert(condition.type_.as_str()) {
            errors.push(FieldError::duplicate(
                format!("{path}.type"),
                condition.type_.as_str(),
            ));
        }
        errors.extend(validate_label_name(
            &condition.type_,
            &format!("{path}.type"),
        ));
        if !matches!(condition.status.as_str(), "True" | "False" | "Unknown") {
            errors.push(FieldError::not_supported(
                format!("{path}.status"),
                condition.status.as_str(),
                &["False", "True", "Unknown"],
            ));
        }
        if condition.observed_generation.is_some_and(|g| g < 0) {
            errors.push(FieldError::invalid(
                format!("{path}.observedGeneration"),
                condition.observed_generation.unwrap_or_default(),
                "must be greater than or equal to zero",
            ));
        }
        if condition.reason.is_empty() {
            errors.push(FieldError::required(
                format!("{path}.reason"),
                "must be set",
            ));
        } else if !is_condition_reason(&condition.reason) {
            errors.push(FieldError::invalid(
                format!("{path}.reason"),
                condition.reason.as_str(),
                names::regex_error(
                    "a condition reason must start with alphabetic character, optionally followed by a string of alphanumeric characters or '_,:', and must end with an alphanumeric character or '_'",
                    "[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?",
                    &["my_name", "MY_NAME", "MyName", "ReasonA,ReasonB", "ReasonA:ReasonB"],
                ),
            ));
        }
    }
    errors
}

fn is_condition_reason(reason: &str) -> bool {
    let bytes = reason.as_bytes();
    match (bytes.first(), bytes.last()) {
        (Some(first), Some(last)) => {
            first.is_ascii_alphabetic()
                && (last.is_ascii_alphanumeric() || *last == b'_')
                && bytes
                    .iter()
                    .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b',' | b':'))
        }
        _ => false,
    }
}

fn validate_admission(workload: &Workload, old: Option<&Workload>) -> Vec<FieldError> {
    let Some(admission) = workload.status.as_ref().and_then(|s| s.admission.as_ref()) else {
        if reserves_quota_without_admission(old) {
            return Vec::new();
        }
        return vec![FieldError::required(
            "status.admission",
            "must be set while the QuotaReserved condition is true",
        )];
    };
    let names: BTreeSet<&str> = workload
        .spec
        .pod_sets
        .iter()
        .map(|p| p.name.as_str())
        .collect();
    let mut errors = Vec::new();
    for (i, assignment) in admission.pod_set_assignments.iter().enumerate() {
        let path = format!("status.admission.podSetAssignments[{i}]");
        if !names.contains(assignment.name.as_str()) {
            errors.push(FieldError::not_found(
                format!("{path}.name"),
                Value::from(assignment.name.as_str()),
            ));
        }
        let count = assignment.count.unwrap_or(0);
        if count > 0 {
            for (resource, quantity) in &assignment.resource_usage {
                if let Ok(value) = resource_value(resource, quantity)
                    && value % i64::from(count) != 0
                {
                    errors.push(FieldError::invalid(
                        format!("{path}.resourceUsage[{resource}]"),
                        quantity.0.as_str(),
                        format!("is not a multiple of {count}"),
                    ));
                }
            }
        }
    }
    errors
}

fn validate_reclaimable_pods(workload: &Workload) -> Vec<FieldError> {
    let Some(status) = &workload.status else {
        return Vec::new();
    };
    let names: Vec<&str> = workload
        .spec
        .pod_sets
        .iter()
        .map(|p| p.name.as_str())
        .collect();
    let mut errors = Vec::new();
    for reclaimable in &status.reclaimable_pods {
        let path = format!("status.reclaimablePods[{}]", reclaimable.name);
        match workload
            .spec
            .pod_sets
            .iter()
            .find(|p| p.name == reclaimable.name)
        {
            None => errors.push(FieldError::not_supported(
                format!("{path}.name"),
                reclaimable.name.as_str(),
                &names,
            )),
            Some(pod_set) if reclaimable.count > pod_set.count => errors.push(FieldError::invalid(
                format!("{path}.count"),
                reclaimable.count,
                format!("should be less or equal to {}", pod_set.count),
            )),
            Some(_) => {}
        }
    }
    errors
}

fn validate_pod_set_updates(
    check: &AdmissionCheckState,
    workload: &Workload,
    field: &str,
) -> Vec<FieldError> {
    let mut known: Vec<&str> = workload
        .spec
        .pod_sets
        .iter()
        .map(|p| p.name.as_str())
        .collect();
    known.sort_unstable();
    known.dedup();
    let mut errors: Vec<FieldError> = Vec::new();
    for (i, update) in check.pod_set_updates.iter().enumerate() {
        let path = format!("{field}[{i}]");
        if !known.contains(&update.name.as_str()) {
            errors.push(FieldError::not_supported(
                format!("{path}.name"),
                update.name.as_str(),
                &known,
            ));
        }
        errors.extend(validate_tolerations(
            &update.tolerations,
            &format!("{path}.tolerations"),
        ));
        errors.extend(validate_annotations(
            &update.annotations,
            &format!("{path}.annotations"),
        ));
        errors.extend(validate_labels(
            &update.node_selector,
            &format!("{path}.nodeSelector"),
        ));
        errors.extend(validate_labels(&update.labels, &format!("{path}.labels")));
    }
    errors
}

/// Kueue's Workload validation: `ValidateWorkload` on CREATE, `ValidateWorkloadUpdate` on
/// UPDATE (`old` given), for the object and its `status` subresource alike.
pub fn validate_workload(
    workload: &Workload,
    old: Option<&Workload>,
    gates: &FeatureGates,
) -> Vec<FieldError> {
    let mut errors = validate_workload_object(workload, old, gates);
    let Some(old) = old else {
        return errors;
    };
    if has_quota_reservation(old) {
        errors.extend(validate_immutable_pod_sets(
            &workload.spec.pod_sets,
            &old.spec.pod_sets,
        ));
    }
    if has_quota_reservation(workload) && has_quota_reservation(old) {
        errors.extend(validate_reclaimable_pods_update(workload, old));
    }
    let status = workload.status.clone().unwrap_or_default();
    let old_status = old.status.clone().unwrap_or_default();
    if let (Some(new_admission), Some(old_admission)) = (&status.admission, &old_status.admission) {
        errors.extend(validate_admission_update(
            &json(new_admission),
            &json(old_admission),
            gates,
        ));
    }
    for (i, old_check) in old_status.admission_checks.iter().enumerate() {
        if let Some(new_check) = status
            .admission_checks
            .iter()
            .find(|c| c.name == old_check.name)
            && old_check.state == CheckState::Ready
            && new_check.state == CheckState::Ready
        {
            errors.extend(immutable(
                &new_check.pod_set_updates,
                &old_check.pod_set_updates,
                &format!("status.admissionChecks[{i}].podSetUpdates"),
            ));
        }
    }
    if old_status.cluster_name.is_none()
        && let Some(cluster) = &status.cluster_name
        && !old_status.nominated_cluster_names.contains(cluster)
    {
        errors.push(FieldError::invalid(
            "status.clusterName",
            cluster.as_str(),
            "when setting clusterName it must be one of the nominatedClusterNames",
        ));
    }
    if gates.enabled(Feature::AdmissionGatedBy) {
        errors.extend(admission_gated_by_on_update(&json(old), &json(workload)));
    }
    errors
}

fn validate_immutable_pod_sets(new: &[PodSet], old: &[PodSet]) -> Vec<FieldError> {
    if new.len() != old.len() {
        return vec![FieldError::invalid("spec.podSets", json(&new), IMMUTABLE)];
    }
    new.iter()
        .zip(old)
        .enumerate()
        .flat_map(|(i, (new, old))| immutable(new, old, &format!("spec.podSets.{i}")))
        .collect()
}

fn validate_reclaimable_pods_update(workload: &Workload, old: &Workload) -> Vec<FieldError> {
    let new_pods = workload
        .status
        .as_ref()
        .map(|s| s.reclaimable_pods.clone())
        .unwrap_or_default();
    let old_pods = old
        .status
        .as_ref()
        .map(|s| s.reclaimable_pods.clone())
        .unwrap_or_default();
    let as_map = |pods: &[ReclaimablePod]| -> BTreeMap<String, i32> {
        pods.iter().map(|p| (p.name.clone(), p.count)).collect()
    };
    if old_pods.is_empty() || as_map(&new_pods) == as_map(&old_pods) {
        return Vec::new();
    }
    let mut errors: Vec<FieldError> = Vec::new();
    for pod in &new_pods {
        if let Some(previous) = old_pods.iter().find(|p| p.name == pod.name)
            && pod.count < previous.count
        {
            errors.push(FieldError::invalid(
                format!("status.reclaimablePods[{}].count", pod.name),
                pod.count,
                format!("cannot be less than {}", previous.count),
            ));
        }
    }
    for previous in &old_pods {
        if !new_pods.iter().any(|p| p.name == previous.name) {
            errors.push(FieldError::required(
                format!("status.reclaimablePods[{}]", previous.name),
                "cannot be removed",
            ));
        }
    }
    errors
}

/// Kueue `validateAdmissionUpdate`: admission is immutable except (TAS) the topology fields.
fn validate_admission_update(new: &Value, old: &Value, gates: &FeatureGates) -> Vec<FieldError> {
    let mut old = old.clone();
    if gates.enabled(Feature::TopologyAwareScheduling) {
        let new_assignments = new
            .get("podSetAssignments")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        let Some(old_assignments) = old
            .get_mut("podSetAssignments")
            .and_then(Value::as_array_mut)
        else {
            return immutable(new, &old, "status.admission");
        };
        if old_assignments.len() != new_assignments.len() {
            return immutable(new, &old, "status.admission");
        }
        for (old_assignment, new_assignment) in old_assignments.iter_mut().zip(&new_assignments) {
            if let Some(old_assignment) = old_assignment.as_object_mut() {
                for key in ["topologyAssignment", "delayedTopologyRequest"] {
                    match new_assignment.get(key) {
                        Some(value) => {
                            old_assignment.insert(key.to_owned(), value.clone());
                        }
                        None => {
                            old_assignment.remove(key);
                        }
                    }
                }
            }
        }
    }
    immutable(new, &old, "status.admission")
}

#[cfg(test)]
mod tests;
