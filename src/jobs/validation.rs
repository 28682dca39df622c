//! The input of job validation, and the small Go-compatible helpers it uses.

use serde_json::Value;

use crate::k8s::field::FieldError;

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
