//! Rules every Kueue kind's webhook shares: immutable fields, labels, annotations and
//! selectors as apimachinery validates them, quantities, tolerations, and the
//! `resource-in-use` finalizer (Kueue `pkg/webhooks/common.go` and apimachinery's validation).

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::Toleration;
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use serde::Serialize;
use serde_json::Value;

use crate::api::constants::RESOURCE_IN_USE_FINALIZER;
use crate::k8s::field::FieldError;
use crate::k8s::names;
use crate::k8s::quantity::parse_nano;

/// apimachinery's `FieldImmutableErrorMsg`.
pub const IMMUTABLE: &str = "field is immutable";
/// apimachinery's `IsNegativeErrorMsg`.
pub(super) const NEGATIVE: &str = "must be greater than or equal to 0";
/// apimachinery's `TotalAnnotationSizeLimitB`.
pub(super) const TOTAL_ANNOTATION_SIZE_LIMIT: usize = 256 * 1024;

/// `Invalid value: <new>: field is immutable` when `new != old` (apimachinery
/// `ValidateImmutableField`).
pub fn immutable<T: Serialize + PartialEq>(new: &T, old: &T, field: &str) -> Vec<FieldError> {
    if new == old {
        return Vec::new();
    }
    vec![FieldError::invalid(field, json(new), IMMUTABLE)]
}

pub(super) fn json<T: Serialize>(value: &T) -> Value {
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
pub(super) fn validate_labels(labels: &BTreeMap<String, String>, field: &str) -> Vec<FieldError> {
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
pub(super) fn validate_annotations(
    annotations: &BTreeMap<String, String>,
    field: &str,
) -> Vec<FieldError> {
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
pub(super) fn validate_label_selector(
    selector: Option<&LabelSelector>,
    field: &str,
) -> Vec<FieldError> {
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

// === Quantities ===

pub(super) fn nano(quantity: &Quantity) -> Result<i128, FieldError> {
    parse_nano(&quantity.0).map_err(|_| {
        FieldError::invalid(
            "",
            quantity.0.as_str(),
            "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'",
        )
    })
}

/// Kueue `validateResourceQuantity`: non-negative (and parseable).
pub(super) fn non_negative(quantity: &Quantity, field: &str) -> Vec<FieldError> {
    match nano(quantity) {
        Ok(value) if value < 0 => vec![FieldError::invalid(field, quantity.0.as_str(), NEGATIVE)],
        Ok(_) => Vec::new(),
        Err(mut error) => {
            error.field = field.to_owned();
            vec![error]
        }
    }
}

pub(super) fn validate_tolerations(tolerations: &[Toleration], field: &str) -> Vec<FieldError> {
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
