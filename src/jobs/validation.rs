//! Field errors rendered like apimachinery's `field.Error`, and the input of job validation.

use std::fmt;

use serde_json::Value;

/// Kind of a field error (apimachinery `field.ErrorType`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FieldErrorType {
    /// `Required value`.
    Required,
    /// `Forbidden`.
    Forbidden,
    /// `Invalid value`.
    Invalid,
    /// `Unsupported value`.
    NotSupported,
    /// `Duplicate value`.
    Duplicate,
    /// `Too many`.
    TooMany,
}

impl FieldErrorType {
    fn as_str(self) -> &'static str {
        match self {
            FieldErrorType::Required => "Required value",
            FieldErrorType::Forbidden => "Forbidden",
            FieldErrorType::Invalid => "Invalid value",
            FieldErrorType::NotSupported => "Unsupported value",
            FieldErrorType::Duplicate => "Duplicate value",
            FieldErrorType::TooMany => "Too many",
        }
    }

    fn shows_value(self) -> bool {
        !matches!(self, FieldErrorType::Required | FieldErrorType::Forbidden)
    }
}

/// One validation error on a field, displayed as `<field>: <Type>[: <value>][: <detail>]`.
#[derive(Debug, Clone, PartialEq)]
pub struct FieldError {
    /// Field path, e.g. `metadata.labels[kueue.x-k8s.io/queue-name]`.
    pub field: String,
    /// Kind of error.
    pub error_type: FieldErrorType,
    /// The offending value, shown for value-carrying types (strings quoted, others as JSON).
    pub bad_value: Option<Value>,
    /// Human-readable explanation.
    pub detail: String,
}

impl FieldError {
    /// `Invalid value` error.
    pub fn invalid(
        field: impl Into<String>,
        bad_value: impl Into<Value>,
        detail: impl Into<String>,
    ) -> Self {
        FieldError {
            field: field.into(),
            error_type: FieldErrorType::Invalid,
            bad_value: Some(bad_value.into()),
            detail: detail.into(),
        }
    }

    /// `Required value` error.
    pub fn required(field: impl Into<String>, detail: impl Into<String>) -> Self {
        FieldError {
            field: field.into(),
            error_type: FieldErrorType::Required,
            bad_value: None,
            detail: detail.into(),
        }
    }

    /// `Forbidden` error.
    pub fn forbidden(field: impl Into<String>, detail: impl Into<String>) -> Self {
        FieldError {
            field: field.into(),
            error_type: FieldErrorType::Forbidden,
            bad_value: None,
            detail: detail.into(),
        }
    }

    /// `Too many` error, as apimachinery `field.TooMany`.
    pub fn too_many(field: impl Into<String>, actual: usize, max: usize) -> Self {
        let items = if max == 1 { "item" } else { "items" };
        FieldError {
            field: field.into(),
            error_type: FieldErrorType::TooMany,
            bad_value: Some(Value::from(actual)),
            detail: format!("must have at most {max} {items}"),
        }
    }
}

impl fmt::Display for FieldError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.field, self.error_type.as_str())?;
        if self.error_type.shows_value()
            && let Some(value) = &self.bad_value
        {
            // Go prints strings with %q and everything else as JSON.
            write!(f, ": {value}")?;
        }
        if !self.detail.is_empty() {
            write!(f, ": {}", self.detail)?;
        }
        Ok(())
    }
}

/// Errors joined like apimachinery `ErrorList.ToAggregate().Error()`: duplicates dropped,
/// one error as is, several as `[e1, e2]`; `None` when there are none.
pub fn aggregate(errors: &[FieldError]) -> Option<String> {
    let mut messages: Vec<String> = Vec::new();
    for message in errors.iter().map(ToString::to_string) {
        if !messages.contains(&message) {
            messages.push(message);
        }
    }
    match messages.len() {
        0 => None,
        1 => messages.pop(),
        _ => Some(format!("[{}]", messages.join(", "))),
    }
}

/// What a job kind needs to produce the final errors of a validating admission.
#[derive(Debug, Clone)]
pub struct ValidationInput<'a> {
    /// The stored object on UPDATE, `None` on CREATE.
    pub old: Option<&'a Value>,
    /// The object being admitted.
    pub new: &'a Value,
    /// Configuration `manageJobsWithoutQueueName`.
    pub manage_jobs_without_queue_name: bool,
    /// Kueue `ValidateJobOnCreate` errors for `new` (also computed on UPDATE: several kinds reuse them).
    pub common_on_create: Vec<FieldError>,
    /// Kueue `ValidateJobOnUpdate` errors for `old` → `new`; empty on CREATE.
    pub common_on_update: Vec<FieldError>,
}

/// Field path of a map entry, e.g. `metadata.annotations[key]`.
pub(crate) fn key_path(parent: &str, key: &str) -> String {
    format!("{parent}[{key}]")
}

/// Go `strconv.Atoi`, with its error text.
pub fn go_atoi(text: &str) -> Result<i64, String> {
    text.parse::<i64>().map_err(|error| {
        let reason = match error.kind() {
            std::num::IntErrorKind::PosOverflow | std::num::IntErrorKind::NegOverflow => {
                "value out of range"
            }
            _ => "invalid syntax",
        };
        format!("strconv.Atoi: parsing {text:?}: {reason}")
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn renders_like_apimachinery() {
        let cases = [
            (
                FieldError::invalid(
                    "metadata.labels[kueue.x-k8s.io/queue-name]",
                    "q2",
                    "field is immutable",
                ),
                r#"metadata.labels[kueue.x-k8s.io/queue-name]: Invalid value: "q2": field is immutable"#,
            ),
            (
                FieldError::invalid("spec.completions", 3, "x"),
                "spec.completions: Invalid value: 3: x",
            ),
            (
                FieldError::invalid("spec.completions", Value::Null, "x"),
                "spec.completions: Invalid value: null: x",
            ),
            (
                FieldError::invalid("spec.clusterSelector", json!({"a": "b"}), "y"),
                r#"spec.clusterSelector: Invalid value: {"a":"b"}: y"#,
            ),
            (
                FieldError::required("spec.rayClusterSpec", "z"),
                "spec.rayClusterSpec: Required value: z",
            ),
            (
                FieldError::forbidden("spec.parallelism", "w"),
                "spec.parallelism: Forbidden: w",
            ),
            (
                FieldError::too_many("spec.workerGroupSpecs", 19, 18),
                "spec.workerGroupSpecs: Too many: 19: must have at most 18 items",
            ),
        ];
        for (error, expected) in cases {
            assert_eq!(error.to_string(), expected);
        }
    }

    #[test]
    fn aggregates_without_duplicates() {
        let a = FieldError::forbidden("a", "x");
        let b = FieldError::forbidden("b", "y");
        assert_eq!(aggregate(&[]), None);
        assert_eq!(
            aggregate(&[a.clone(), a.clone()]),
            Some("a: Forbidden: x".to_string())
        );
        assert_eq!(
            aggregate(&[a.clone(), b, a]),
            Some("[a: Forbidden: x, b: Forbidden: y]".to_string())
        );
    }
}
