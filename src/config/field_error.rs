//! Field errors shaped like apimachinery's `field.Error`: `<path>: <Type>: <detail>`, one per line.

use std::fmt;

/// One problem with one field of the configuration.
#[derive(Clone, Debug, PartialEq)]
pub struct FieldError {
    /// Field path as apimachinery prints it: `integrations.frameworks[3]`, `featureGates`.
    pub path: String,
    /// What is wrong.
    pub kind: FieldErrorKind,
}

/// The error types of apimachinery's `field` package that configuration validation uses.
///
/// Values are pre-rendered: strings and durations quoted, numbers bare, anything larger as JSON.
#[derive(Clone, Debug, PartialEq)]
pub enum FieldErrorKind {
    /// `Required value: <detail>`.
    Required { detail: String },
    /// `Invalid value: <value>: <detail>`.
    Invalid { value: String, detail: String },
    /// `Unsupported value: <value>: [<reason>; ]supported values: "a", "b"`.
    NotSupported {
        value: String,
        reason: Option<String>,
        supported: Vec<String>,
    },
    /// `Duplicate value: <value>`.
    Duplicate { value: String },
    /// `Forbidden: <detail>`.
    Forbidden { detail: String },
}

impl FieldError {
    /// A required field is missing or empty.
    pub fn required(path: impl Into<String>, detail: impl Into<String>) -> Self {
        FieldError {
            path: path.into(),
            kind: FieldErrorKind::Required {
                detail: detail.into(),
            },
        }
    }

    /// A field has a value it may not have; `value` is already rendered (see [`quote`]).
    pub fn invalid(
        path: impl Into<String>,
        value: impl Into<String>,
        detail: impl Into<String>,
    ) -> Self {
        FieldError {
            path: path.into(),
            kind: FieldErrorKind::Invalid {
                value: value.into(),
                detail: detail.into(),
            },
        }
    }

    /// A field holds a value outside a fixed set.
    pub fn not_supported<S: AsRef<str>>(
        path: impl Into<String>,
        value: impl Into<String>,
        supported: &[S],
    ) -> Self {
        FieldError {
            path: path.into(),
            kind: FieldErrorKind::NotSupported {
                value: value.into(),
                reason: None,
                supported: supported.iter().map(|s| s.as_ref().to_owned()).collect(),
            },
        }
    }

    /// Like [`FieldError::not_supported`], saying why before listing the supported values.
    pub fn not_supported_because<S: AsRef<str>>(
        path: impl Into<String>,
        value: impl Into<String>,
        reason: impl Into<String>,
        supported: &[S],
    ) -> Self {
        FieldError {
            path: path.into(),
            kind: FieldErrorKind::NotSupported {
                value: value.into(),
                reason: Some(reason.into()),
                supported: supported.iter().map(|s| s.as_ref().to_owned()).collect(),
            },
        }
    }

    /// A list holds the same value twice.
    pub fn duplicate(path: impl Into<String>, value: impl Into<String>) -> Self {
        FieldError {
            path: path.into(),
            kind: FieldErrorKind::Duplicate {
                value: value.into(),
            },
        }
    }

    /// A field may not be set here.
    pub fn forbidden(path: impl Into<String>, detail: impl Into<String>) -> Self {
        FieldError {
            path: path.into(),
            kind: FieldErrorKind::Forbidden {
                detail: detail.into(),
            },
        }
    }
}

impl fmt::Display for FieldError {
    fn fmt(&self, out: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(out, "{}: ", self.path)?;
        match &self.kind {
            FieldErrorKind::Required { detail } => write!(out, "Required value: {detail}"),
            FieldErrorKind::Invalid { value, detail } => {
                write!(out, "Invalid value: {value}: {detail}")
            }
            FieldErrorKind::NotSupported {
                value,
                reason,
                supported,
            } => {
                write!(out, "Unsupported value: {value}: ")?;
                if let Some(reason) = reason {
                    write!(out, "{reason}; ")?;
                }
                let listed: Vec<String> = supported.iter().map(|s| quote(s)).collect();
                write!(out, "supported values: {}", listed.join(", "))
            }
            FieldErrorKind::Duplicate { value } => write!(out, "Duplicate value: {value}"),
            FieldErrorKind::Forbidden { detail } => write!(out, "Forbidden: {detail}"),
        }
    }
}

/// A string value as field errors print it: double-quoted, escaped like Go's `%q`.
pub fn quote(value: &str) -> String {
    format!("{value:?}")
}

/// A structured value as field errors print it: compact JSON.
pub fn json<T: serde::Serialize>(value: &T) -> String {
    serde_json::to_string(value).unwrap_or_else(|error| format!("<unprintable: {error}>"))
}

#[cfg(test)]
mod tests {
    use super::*;

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
                    "-1",
                    "must be greater than or equal to 0",
                ),
                "clientConnection.burst: Invalid value: -1: must be greater than or equal to 0",
            ),
            (
                FieldError::not_supported(
                    "queueReferencePolicy",
                    quote("Loose"),
                    &["Reject", "Warn"],
                ),
                "queueReferencePolicy: Unsupported value: \"Loose\": supported values: \"Reject\", \"Warn\"",
            ),
            (
                FieldError::not_supported_because(
                    "integrations.frameworks[1]",
                    quote("pod"),
                    "not implemented by Kuota",
                    &["batch/job"],
                ),
                "integrations.frameworks[1]: Unsupported value: \"pod\": not implemented by Kuota; supported values: \"batch/job\"",
            ),
            (
                FieldError::duplicate("integrations.frameworks[2]", quote("batch/job")),
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
}
