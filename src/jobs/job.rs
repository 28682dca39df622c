//! batch/v1 Job (`pkg/controller/jobs/job/job_controller.go`, `job_webhook.go`).

use serde_json::Value;

use super::podset::{
    DEFAULT_POD_SET_NAME, PodSet, PodSetInfo, merge_into_templates, restore_templates,
};
use super::validation::{go_atoi, key_path};
use super::{
    FieldError, JobError, JobFinished, JobFramework, JobKind, PodIndexing, ReclaimablePod,
    ValidationInput,
};
use crate::k8s::json;

/// Label the Job controller puts on each pod of an Indexed Job: its completion index.
pub const COMPLETION_INDEX_LABEL: &str = "batch.kubernetes.io/job-completion-index";

/// Annotation allowing partial admission down to this many pods.
pub const MIN_PARALLELISM_ANNOTATION: &str = "kueue.x-k8s.io/job-min-parallelism";
/// Annotation keeping `completions` equal to `parallelism` under partial admission.
pub const COMPLETIONS_EQUAL_PARALLELISM_ANNOTATION: &str =
    "kueue.x-k8s.io/job-completions-equal-parallelism";
/// Annotation set while Kuota suspends a running Job (the job is not "suspended" until removed).
pub const STOPPING_ANNOTATION: &str = "kueue.x-k8s.io/stopping";

/// Labels the Job controller puts on the template; all but `batch.kubernetes.io/job-name` are
/// left out of the PodSet and kept as they are when restoring.
const MANAGED_LABELS: [&str; 4] = [
    "job-name",
    "controller-uid",
    "batch.kubernetes.io/job-name",
    "batch.kubernetes.io/controller-uid",
];

const TEMPLATE: &str = "/spec/template";

/// The batch/v1 Job integration (`batch/job`).
#[derive(Debug, Clone, Copy)]
pub struct BatchJob;

const KIND: JobKind = JobKind {
    group: "batch",
    version: "v1",
    kind: "Job",
    plural: "jobs",
};

impl JobFramework for BatchJob {
    fn name(&self) -> &'static str {
        "batch/job"
    }

    fn kind(&self) -> JobKind {
        KIND
    }

    fn suspend_pointer(&self) -> &'static str {
        "/spec/suspend"
    }

    fn is_suspended(&self, job: &Value) -> bool {
        json::bool_at(job, self.suspend_pointer()) == Some(true)
            && json::annotation(job, STOPPING_ANNOTATION) != Some("true")
    }

    fn build_pod_sets(&self, job: &Value) -> Result<Vec<PodSet>, JobError> {
        let mut pod_set =
            PodSet::from_template_at(job, TEMPLATE, DEFAULT_POD_SET_NAME, pods_count(job))?;
        if let Some(labels) = pod_set
            .template
            .metadata
            .as_mut()
            .and_then(|m| m.labels.as_mut())
        {
            labels.retain(|key, _| {
                key == "batch.kubernetes.io/job-name" || !MANAGED_LABELS.contains(&key.as_str())
            });
        }
        pod_set.min_count = min_parallelism(job);
        Ok(vec![pod_set])
    }

    fn template_pointers(&self, _job: &Value) -> Result<Vec<String>, JobError> {
        Ok(vec![TEMPLATE.to_string()])
    }

    fn pod_indexing(&self, _job: &Value, _pod_set: usize) -> PodIndexing {
        PodIndexing {
            pod_index_label: Some(COMPLETION_INDEX_LABEL),
            ..PodIndexing::default()
        }
    }

    fn run(&self, job: &mut Value, infos: &[PodSetInfo]) -> Result<(), JobError> {
        let mut started = job.clone();
        merge_into_templates(&mut started, &[TEMPLATE.to_string()], infos)?;
        if let (Some(_), [info]) = (min_parallelism(&started), infos) {
            set_parallelism(&mut started, info.count);
        }
        self.set_suspended(&mut started, false);
        *job = started;
        Ok(())
    }

    fn restore(&self, job: &mut Value, originals: &[PodSet]) -> bool {
        self.set_suspended(job, true);
        let Some(original) = originals.first() else {
            return false;
        };
        if min_parallelism(job).is_some()
            && json::i32_at(job, "/spec/parallelism").unwrap_or(0) != original.count
        {
            set_parallelism(job, original.count);
        }
        let mut info = PodSetInfo::from_pod_set(original);
        for key in MANAGED_LABELS {
            if let Some(value) = template_label(job, key) {
                info.labels.insert(key.to_string(), value);
            }
        }
        restore_templates(job, &[TEMPLATE.to_string()], &[info])
    }

    fn finished(&self, job: &Value) -> Option<JobFinished> {
        json::array_at(job, "/status/conditions")
            .iter()
            .find_map(|condition| {
                let kind = condition.get("type").and_then(Value::as_str)?;
                let is_true = condition.get("status").and_then(Value::as_str) == Some("True");
                ((kind == "Complete" || kind == "Failed") && is_true).then(|| JobFinished {
                    success: kind != "Failed",
                    message: json::condition_message(condition),
                })
            })
    }

    fn pods_ready(&self, job: &Value) -> bool {
        let succeeded = json::i32_at(job, "/status/succeeded").unwrap_or(0);
        let ready = json::i32_at(job, "/status/ready").unwrap_or(0);
        let uncounted =
            json::array_at(job, "/status/uncountedTerminatedPods/succeeded").len() as i32;
        succeeded + ready + uncounted >= pods_count(job)
    }

    fn is_active(&self, job: &Value) -> bool {
        json::i32_at(job, "/status/active").unwrap_or(0) != 0
    }

    fn reclaimable_pods(&self, job: &Value) -> Vec<ReclaimablePod> {
        let parallelism = json::i32_at(job, "/spec/parallelism").unwrap_or(1);
        let completions = json::i32_at(job, "/spec/completions").unwrap_or(parallelism);
        let terminal = if json::str_at(job, "/spec/completionMode") == Some("Indexed") {
            let completed = json::str_at(job, "/status/completedIndexes").unwrap_or_default();
            let failed = json::str_at(job, "/status/failedIndexes").unwrap_or_default();
            terminal_indexes(&[completed, failed], completions)
        } else {
            json::i32_at(job, "/status/succeeded").unwrap_or(0)
        };
        let remaining = (completions - terminal).max(0);
        if parallelism > 1 && terminal > 0 && remaining < parallelism {
            vec![ReclaimablePod {
                name: DEFAULT_POD_SET_NAME.to_string(),
                count: parallelism - remaining,
            }]
        } else {
            Vec::new()
        }
    }

    fn pod_label_selector(&self, job: &Value) -> Option<String> {
        let name = json::str_at(job, "/metadata/name")?;
        Some(format!("batch.kubernetes.io/job-name={name}"))
    }

    fn validate(&self, input: ValidationInput<'_>) -> Vec<FieldError> {
        let new = input.new;
        let mut errors = input.common_on_create;
        match input.old {
            None => {
                errors.extend(validate_partial_admission(new));
                errors.extend(validate_completions_equal_parallelism(new));
            }
            Some(old) => {
                if json::annotation(old, MIN_PARALLELISM_ANNOTATION)
                    != json::annotation(new, MIN_PARALLELISM_ANNOTATION)
                {
                    errors.extend(validate_partial_admission(new));
                }
                errors.extend(validate_completions_equal_parallelism(new));
                errors.extend(input.common_on_update);
                errors.extend(self.validate_running_update(old, new));
            }
        }
        errors
    }
}

impl BatchJob {
    /// Kueue `validatePartialAdmissionUpdate`.
    fn validate_running_update(&self, old: &Value, new: &Value) -> Vec<FieldError> {
        let mut errors = Vec::new();
        if json::annotation(old, MIN_PARALLELISM_ANNOTATION).is_some()
            && json::bool_at(old, "/spec/suspend") != Some(true)
            && json::i32_at(old, "/spec/parallelism").unwrap_or(1)
                != json::i32_at(new, "/spec/parallelism").unwrap_or(1)
        {
            errors.push(FieldError::forbidden(
                "spec.parallelism",
                "cannot change when partial admission is enabled and the job is not suspended",
            ));
        }
        let new_suspended = self.is_suspended(new);
        if self.is_suspended(old) == new_suspended
            && !new_suspended
            && completions_equal_parallelism(old) != completions_equal_parallelism(new)
        {
            errors.push(FieldError::forbidden(
                key_path(
                    "metadata.annotations",
                    COMPLETIONS_EQUAL_PARALLELISM_ANNOTATION,
                ),
                "field is immutable while the job is not suspended",
            ));
        }
        errors
    }
}

fn template_label(job: &Value, key: &str) -> Option<String> {
    json::at(job, "/spec/template/metadata/labels")?
        .get(key)?
        .as_str()
        .map(str::to_string)
}

/// min(parallelism, completions when set); parallelism defaults to 1 as the API server does.
fn pods_count(job: &Value) -> i32 {
    let parallelism = json::i32_at(job, "/spec/parallelism").unwrap_or(1);
    match json::i32_at(job, "/spec/completions") {
        Some(completions) if completions < parallelism => completions,
        _ => parallelism,
    }
}

fn min_parallelism(job: &Value) -> Option<i32> {
    json::annotation(job, MIN_PARALLELISM_ANNOTATION)
        .and_then(|text| go_atoi(text).ok())
        .map(|n| n as i32)
}

fn completions_equal_parallelism(job: &Value) -> bool {
    json::annotation(job, COMPLETIONS_EQUAL_PARALLELISM_ANNOTATION)
        .and_then(go_parse_bool)
        .unwrap_or(false)
}

fn set_parallelism(job: &mut Value, count: i32) {
    json::set(job, "/spec/parallelism", Value::from(count));
    if completions_equal_parallelism(job) {
        json::set(job, "/spec/completions", Value::from(count));
    }
}

/// Kueue `validatePartialAdmissionCreate` (the elastic-job rule never applies: no slicing).
fn validate_partial_admission(job: &Value) -> Vec<FieldError> {
    let Some(text) = json::annotation(job, MIN_PARALLELISM_ANNOTATION) else {
        return Vec::new();
    };
    let path = key_path("metadata.annotations", MIN_PARALLELISM_ANNOTATION);
    match go_atoi(text) {
        Err(message) => vec![FieldError::invalid(path, text, message)],
        Ok(value) if value as i32 >= pods_count(job) || value <= 0 => {
            vec![FieldError::invalid(
                path,
                value,
                format!("should be between 0 and {}", pods_count(job) - 1),
            )]
        }
        Ok(_) => Vec::new(),
    }
}

/// Kueue `validateSyncCompletionCreate`.
fn validate_completions_equal_parallelism(job: &Value) -> Vec<FieldError> {
    let Some(text) = json::annotation(job, COMPLETIONS_EQUAL_PARALLELISM_ANNOTATION) else {
        return Vec::new();
    };
    let path = key_path(
        "metadata.annotations",
        COMPLETIONS_EQUAL_PARALLELISM_ANNOTATION,
    );
    let Some(enabled) = go_parse_bool(text) else {
        return vec![FieldError::invalid(
            path,
            text,
            format!("strconv.ParseBool: parsing {text:?}: invalid syntax"),
        )];
    };
    let mut errors = Vec::new();
    if enabled {
        if json::str_at(job, "/spec/completionMode").unwrap_or("NonIndexed") == "NonIndexed" {
            errors.push(FieldError::invalid(
                path,
                text,
                "should not be enabled for NonIndexed jobs",
            ));
        }
        let completions = json::at(job, "/spec/completions")
            .cloned()
            .unwrap_or(Value::Null);
        if json::i32_at(job, "/spec/parallelism").unwrap_or(1)
            != json::i32_at(job, "/spec/completions").unwrap_or(1)
        {
            errors.push(FieldError::invalid(
                "spec.completions",
                completions,
                format!("should be equal to parallelism when {COMPLETIONS_EQUAL_PARALLELISM_ANNOTATION} annotation is true"),
            ));
        }
    }
    errors
}

/// Go `strconv.ParseBool`.
fn go_parse_bool(text: &str) -> Option<bool> {
    match text {
        "1" | "t" | "T" | "TRUE" | "true" | "True" => Some(true),
        "0" | "f" | "F" | "FALSE" | "false" | "False" => Some(false),
        _ => None,
    }
}

/// Distinct indexes below `completions` in Job index lists like `1,3-5` (malformed parts ignored).
fn terminal_indexes(lists: &[&str], completions: i32) -> i32 {
    if completions <= 0 {
        return 0;
    }
    let mut intervals: Vec<(i64, i64)> = lists
        .iter()
        .flat_map(|list| list.split(','))
        .filter(|part| !part.is_empty())
        .filter_map(|part| {
            let (first, last) = part.split_once('-').unwrap_or((part, part));
            let (first, last) = (first.parse::<i64>().ok()?, last.parse::<i64>().ok()?);
            let last = last.min(i64::from(completions) - 1);
            (first <= last).then_some((first, last))
        })
        .collect();
    intervals.sort_unstable();
    let mut count = 0;
    let mut last_counted = -1;
    for (first, last) in intervals {
        let start = first.max(last_counted + 1);
        if start <= last {
            count += last - start + 1;
            last_counted = last;
        }
    }
    count as i32
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn terminal_indexes_count_the_union() {
        assert_eq!(terminal_indexes(&["0-2,5", "2-3"], 10), 5);
        assert_eq!(terminal_indexes(&["0-9", ""], 4), 4);
        assert_eq!(terminal_indexes(&["x,1,3-2"], 4), 1);
        assert_eq!(terminal_indexes(&["1"], 0), 0);
    }

    #[test]
    fn go_number_parsing() {
        assert_eq!(go_atoi("+7"), Ok(7));
        assert_eq!(
            go_atoi("x"),
            Err(r#"strconv.Atoi: parsing "x": invalid syntax"#.to_string())
        );
        assert_eq!(
            go_atoi(""),
            Err(r#"strconv.Atoi: parsing "": invalid syntax"#.to_string())
        );
        assert_eq!(
            go_atoi("99999999999999999999"),
            Err(r#"strconv.Atoi: parsing "99999999999999999999": value out of range"#.to_string())
        );
        assert_eq!(go_parse_bool("T"), Some(true));
        assert_eq!(go_parse_bool("yes"), None);
    }
}
