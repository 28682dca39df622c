//! Field errors as apimachinery's `field.Error` prints them (`<path>: <Type>[: <value>][:
//! <detail>]`), and `ErrorList.ToAggregate()`. One type for job, Kueue object and configuration
//! validation alike.

use std::fmt;

use serde::Serialize;
use serde_json::Value;

/// Kind of a field error (apimachinery `field.ErrorType`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorType {
    /// `Not found`.
    NotFound,
    /// `Required value`.
    Required,
    /// `Duplicate value`.
    Duplicate,
    /// `Invalid value`.
    Invalid,
    /// `Unsupported value`.
    NotSupported,
    /// `Forbidden`.
    Forbidden,
    /// `Too long`.
    TooLong,
    /// `Too many`.
    TooMany,
}

impl ErrorType {
    fn as_str(self) -> &'static str {
        match self {
            ErrorType::NotFound => "Not found",
            ErrorType::Required => "Required value",
            ErrorType::Duplicate => "Duplicate value",
            ErrorType::Invalid => "Invalid value",
            ErrorType::NotSupported => "Unsupported value",
            ErrorType::Forbidden => "Forbidden",
            ErrorType::TooLong => "Too long",
            ErrorType::TooMany => "Too many",
        }
    }

    /// apimachinery omits the value of these types.
    fn shows_value(self) -> bool {
        !matches!(
            self,
            ErrorType::Required | ErrorType::Forbidden | ErrorType::TooLong
        )
    }
}

/// The offending value, rendered as Go renders it: strings quoted, numbers and booleans bare,
/// anything larger as JSON.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BadValue(String);

impl BadValue {
    /// A structured value, as JSON.
    pub fn json<T: Serialize + ?Sized>(value: &T) -> Self {
        BadValue(
            serde_json::to_string(value).unwrap_or_else(|error| format!("<unprintable: {error}>")),
        )
    }

    /// Text already rendered the way Go prints it (a `%#v` struct, a float).
    pub fn rendered(text: impl Into<String>) -> Self {
        BadValue(text.into())
    }
}

impl From<&str> for BadValue {
    fn from(value: &str) -> Self {
        BadValue(quote(value))
    }
}

impl From<&String> for BadValue {
    fn from(value: &String) -> Self {
        BadValue(quote(value))
    }
}

impl From<String> for BadValue {
    fn from(value: String) -> Self {
        BadValue(quote(&value))
    }
}

impl From<Value> for BadValue {
    fn from(value: Value) -> Self {
        BadValue(value.to_string())
    }
}

impl From<&Value> for BadValue {
    fn from(value: &Value) -> Self {
        BadValue(value.to_string())
    }
}

macro_rules! bad_value_from_display {
    ($($type:ty),*) => {$(
        impl From<$type> for BadValue {
            fn from(value: $type) -> Self {
                BadValue(value.to_string())
            }
        }
    )*};
}
bad_value_from_display!(bool, i32, i64, u16, u32, u64, usize);

/// A string as Go's `%q` prints it (and as JSON does, for the strings Kubernetes objects hold).
pub fn quote(value: &str) -> String {
    Value::from(value).to_string()
}

/// One validation error on a field.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldError {
    /// Field path, e.g. `metadata.labels[kueue.x-k8s.io/queue-name]`.
    pub field: String,
    /// Kind of error.
    pub error_type: ErrorType,
    /// The offending value, for the types that show one.
    pub bad_value: Option<BadValue>,
    /// Human-readable explanation; may be empty.
    pub detail: String,
}

impl FieldError {
    fn new(
        field: impl Into<String>,
        error_type: ErrorType,
        bad_value: Option<BadValue>,
        detail: impl Into<String>,
    ) -> Self {
        FieldError {
            field: field.into(),
            error_type,
            bad_value,
            detail: detail.into(),
        }
    }

    /// `Invalid value` (apimachinery `field.Invalid`).
    pub fn invalid(
        field: impl Into<String>,
        bad_value: impl Into<BadValue>,
        detail: impl Into<String>,
    ) -> Self {
        Self::new(field, ErrorType::Invalid, Some(bad_value.into()), detail)
    }

    /// `Required value` (`field.Required`).
    pub fn required(field: impl Into<String>, detail: impl Into<String>) -> Self {
        Self::new(field, ErrorType::Required, None, detail)
    }

    /// `Forbidden` (`field.Forbidden`).
    pub fn forbidden(field: impl Into<String>, detail: impl Into<String>) -> Self {
        Self::new(field, ErrorType::Forbidden, None, detail)
    }

    /// `Not found` (`field.NotFound`).
    pub fn not_found(field: impl Into<String>, bad_value: impl Into<BadValue>) -> Self {
        Self::new(field, ErrorType::NotFound, Some(bad_value.into()), "")
    }

    /// `Duplicate value` (`field.Duplicate`).
    pub fn duplicate(field: impl Into<String>, bad_value: impl Into<BadValue>) -> Self {
        Self::new(field, ErrorType::Duplicate, Some(bad_value.into()), "")
    }

    /// `Unsupported value` listing the supported values (`field.NotSupported`); with none to
    /// list, no detail at all.
    pub fn not_supported<S: AsRef<str>>(
        field: impl Into<String>,
        bad_value: impl Into<BadValue>,
        supported: &[S],
    ) -> Self {
        let detail = if supported.is_empty() {
            String::new()
        } else {
            format!("supported values: {}", quoted_list(supported))
        };
        Self::new(
            field,
            ErrorType::NotSupported,
            Some(bad_value.into()),
            detail,
        )
    }

    /// Like [`FieldError::not_supported`], saying why before listing the supported values.
    pub fn not_supported_because<S: AsRef<str>>(
        field: impl Into<String>,
        bad_value: impl Into<BadValue>,
        reason: impl fmt::Display,
        supported: &[S],
    ) -> Self {
        let detail = format!("{reason}; supported values: {}", quoted_list(supported));
        Self::new(
            field,
            ErrorType::NotSupported,
            Some(bad_value.into()),
            detail,
        )
    }

    /// `Too long` (`field.TooLong`, a byte limit).
    pub fn too_long(field: impl Into<String>, max: usize) -> Self {
        let unit = if max == 1 { "byte" } else { "bytes" };
        Self::new(
            field,
            ErrorType::TooLong,
            None,
            format!("may not be more than {max} {unit}"),
        )
    }

    /// `Too many` (`field.TooMany`).
    pub fn too_many(field: impl Into<String>, actual: usize, max: usize) -> Self {
        let items = if max == 1 { "item" } else { "items" };
        Self::new(
            field,
            ErrorType::TooMany,
            Some(actual.into()),
            format!("must have at most {max} {items}"),
        )
    }

    /// The same error with `detail` in place of the current one.
    pub fn with_detail(mut self, detail: impl Into<String>) -> Self {
        self.detail = detail.into();
        self
    }
}

fn quoted_list<S: AsRef<str>>(values: &[S]) -> String {
    values
        .iter()
        .map(|value| quote(value.as_ref()))
        .collect::<Vec<_>>()
        .join(", ")
}

impl fmt::Display for FieldError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.field, self.error_type.as_str())?;
        if self.error_type.shows_value()
            && let Some(BadValue(value)) = &self.bad_value
        {
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
            (
                FieldError::not_supported("spec.mode", "c", &["a", "b"]),
                r#"spec.mode: Unsupported value: "c": supported values: "a", "b""#,
            ),
            (
                FieldError::not_supported::<&str>("spec.mode", "c", &[]),
                r#"spec.mode: Unsupported value: "c""#,
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

    #[test]
    fn renders_apimachinery_shape() {
        let cases = [
            (
                FieldError::required("waitForPodsReady.timeout", "must be specified"),
                "waitForPodsReady.timeout: Required value: must be specified",
            ),
            (
                FieldError::invalid(
                    "clientConnection.burst",
                    -1,
                    "must be greater than or equal to 0",
                ),
                "clientConnection.burst: Invalid value: -1: must be greater than or equal to 0",
            ),
            (
                FieldError::not_supported("queueReferencePolicy", "Loose", &["Reject", "Warn"]),
                "queueReferencePolicy: Unsupported value: \"Loose\": supported values: \"Reject\", \"Warn\"",
            ),
            (
                FieldError::not_supported_because(
                    "integrations.frameworks[1]",
                    "pod",
                    "not implemented by Kuota",
                    &["batch/job"],
                ),
                "integrations.frameworks[1]: Unsupported value: \"pod\": not implemented by Kuota; supported values: \"batch/job\"",
            ),
            (
                FieldError::duplicate("integrations.frameworks[2]", "batch/job"),
                "integrations.frameworks[2]: Duplicate value: \"batch/job\"",
            ),
            (
                FieldError::forbidden(
                    "managedJobsNamespaceSelector.matchExpressions[0].values",
                    "may not be set",
                ),
                "managedJobsNamespaceSelector.matchExpressions[0].values: Forbidden: may not be set",
            ),
        ];
        for (error, line) in cases {
            assert_eq!(error.to_string(), line);
        }
    }

    #[test]
    fn renders_the_types_without_a_value_and_with_a_go_rendering() {
        let cases = [
            (
                FieldError::not_found("spec.admissionChecks[0]", "missing"),
                r#"spec.admissionChecks[0]: Not found: "missing""#,
            ),
            (
                FieldError::too_long("metadata.annotations", 262144),
                "metadata.annotations: Too long: may not be more than 262144 bytes",
            ),
            (
                FieldError::duplicate(
                    "spec.podSets[1].name",
                    BadValue::rendered("v1beta2.PodSet{}"),
                )
                .with_detail("duplicate name"),
                "spec.podSets[1].name: Duplicate value: v1beta2.PodSet{}: duplicate name",
            ),
            (
                FieldError::invalid("clientConnection.qps", BadValue::rendered("-1.5"), "x"),
                "clientConnection.qps: Invalid value: -1.5: x",
            ),
        ];
        for (error, expected) in cases {
            assert_eq!(error.to_string(), expected);
        }
    }

    #[test]
    fn aggregate_joins_like_apimachinery() {
        let one = FieldError::too_long("a", 63);
        let two = FieldError::not_found("b", "x");
        assert_eq!(aggregate(&[]), None);
        assert_eq!(
            aggregate(std::slice::from_ref(&one)),
            Some("a: Too long: may not be more than 63 bytes".to_owned())
        );
        assert_eq!(
            aggregate(&[one.clone(), two, one]),
            Some(r#"[a: Too long: may not be more than 63 bytes, b: Not found: "x"]"#.to_owned())
        );
    }
}
