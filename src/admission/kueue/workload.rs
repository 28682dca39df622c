//! Workload defaulting and validation (Kueue `workload_webhook.go`), including the status
//! updates the admitter and other controllers make.

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::api::core::v1::ResourceRequirements;
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use serde_json::Value;

use crate::api::constants::{PRIORITY_BOOST_ANNOTATION, condition};
use crate::api::v1beta2::{
    AdmissionCheckState, CheckState, PodSet, PodSetTopologyRequest, ReclaimablePod, Workload,
};
use crate::config::{Feature, FeatureGates};
use crate::k8s::field::FieldError;
use crate::k8s::json::annotation;
use crate::k8s::names;
use crate::k8s::quantity::resource_value;

use super::admission_gated_by::{admission_gated_by_on_create, admission_gated_by_on_update};
use super::common::{
    IMMUTABLE, immutable, json, non_negative, validate_annotations, validate_label_name,
    validate_labels, validate_tolerations,
};

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
    let template = pod_set.template.decode();
    if gates.enabled(Feature::WorkloadValidationForPodSetMetadata) {
        let metadata = template.metadata.unwrap_or_default();
        errors.extend(validate_labels(
            &metadata.labels.unwrap_or_default(),
            &format!("{field}.template.metadata.labels"),
        ));
        errors.extend(validate_annotations(
            &metadata.annotations.unwrap_or_default(),
            &format!("{field}.template.metadata.annotations"),
        ));
    }
    let spec = template.spec.unwrap_or_default();
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
