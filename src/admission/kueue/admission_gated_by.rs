//! The `kueue.x-k8s.io/admission-gated-by` annotation (Kueue `pkg/util/webhook`): only
//! removable after creation, each gate a domain-prefixed path.

use std::collections::BTreeSet;

use serde_json::Value;

use crate::api::constants::ADMISSION_GATED_BY_ANNOTATION;
use crate::k8s::field::FieldError;
use crate::k8s::json::annotation;
use crate::k8s::names;

/// Longest gate name in the admission-gated-by annotation (as `spec.managedBy` of Jobs).
const MAX_GATE_NAME_LENGTH: usize = 63;

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
