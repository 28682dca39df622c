//! jobset.x-k8s.io/v1alpha2 JobSet (`pkg/controller/jobs/jobset/`).

use serde_json::Value;

use super::job::COMPLETION_INDEX_LABEL;
use super::podset::PodSet;
use super::{
    FieldError, JobError, JobFinished, JobFramework, JobKind, PodIndexing, ReclaimablePod,
    ValidationInput,
};
use crate::k8s::json;

/// Label JobSet puts on the pods of each copy of a replicated Job: the copy's index.
const JOB_INDEX_LABEL: &str = "jobset.sigs.k8s.io/job-index";

/// The JobSet integration (`jobset.x-k8s.io/jobset`).
#[derive(Debug, Clone, Copy)]
pub struct JobSet;

const KIND: JobKind = JobKind {
    group: "jobset.x-k8s.io",
    version: "v1alpha2",
    kind: "JobSet",
    plural: "jobsets",
};

impl JobFramework for JobSet {
    fn name(&self) -> &'static str {
        "jobset.x-k8s.io/jobset"
    }

    fn kind(&self) -> JobKind {
        KIND
    }

    fn suspend_pointer(&self) -> &'static str {
        "/spec/suspend"
    }

    fn build_pod_sets(&self, job: &Value) -> Result<Vec<PodSet>, JobError> {
        replicated_jobs(job)
            .enumerate()
            .map(|(index, replicated)| {
                let count = replicas(replicated).saturating_mul(pods_per_replica(replicated));
                PodSet::from_template_at(job, &template_pointer(index), name(replicated), count)
            })
            .collect()
    }

    fn template_pointers(&self, job: &Value) -> Result<Vec<String>, JobError> {
        Ok((0..replicated_jobs(job).count())
            .map(template_pointer)
            .collect())
    }

    /// Pods are ranked by their Job's completion index within each copy of the replicated Job.
    fn pod_indexing(&self, job: &Value, pod_set: usize) -> PodIndexing {
        PodIndexing {
            pod_index_label: Some(COMPLETION_INDEX_LABEL),
            sub_group_index_label: Some(JOB_INDEX_LABEL),
            sub_group_count: replicated_jobs(job).nth(pod_set).map(replicas),
        }
    }

    fn finished(&self, job: &Value) -> Option<JobFinished> {
        let (condition, success) = json::true_condition(job, "Completed")
            .map(|condition| (condition, true))
            .or_else(|| json::true_condition(job, "Failed").map(|condition| (condition, false)))?;
        Some(JobFinished {
            success,
            message: json::condition_message(condition),
        })
    }

    fn pods_ready(&self, job: &Value) -> bool {
        let wanted: i64 = replicated_jobs(job)
            .map(|replicated| i64::from(replicas(replicated)))
            .sum();
        let ready: i64 = json::array_at(job, "/status/replicatedJobsStatus")
            .iter()
            .map(|status| count(status, "ready") + count(status, "succeeded"))
            .sum();
        wanted == ready
    }

    fn is_active(&self, job: &Value) -> bool {
        json::array_at(job, "/status/replicatedJobsStatus")
            .iter()
            .any(|status| count(status, "active") > 0)
    }

    fn reclaimable_pods(&self, job: &Value) -> Vec<ReclaimablePod> {
        let statuses = json::array_at(job, "/status/replicatedJobsStatus");
        replicated_jobs(job)
            .filter_map(|replicated| {
                let status = statuses.iter().find(|status| {
                    status.get("name").and_then(Value::as_str) == Some(name(replicated))
                })?;
                let succeeded = count(status, "succeeded");
                (succeeded > 0 && succeeded <= i64::from(replicas(replicated))).then(|| {
                    ReclaimablePod {
                        name: name(replicated).to_lowercase(),
                        count: (succeeded as i32).saturating_mul(pods_per_replica(replicated)),
                    }
                })
            })
            .collect()
    }

    fn pod_label_selector(&self, job: &Value) -> Option<String> {
        let name = json::str_at(job, "/metadata/name")?;
        Some(format!("jobset.sigs.k8s.io/jobset-name={name}"))
    }

    /// Kueue's JobSet webhook re-runs the create rules on UPDATE, after the update rules.
    fn validate(&self, input: ValidationInput<'_>) -> Vec<FieldError> {
        let mut errors = input.common_on_update;
        errors.extend(input.common_on_create);
        errors
    }
}

fn replicated_jobs(job: &Value) -> impl Iterator<Item = &Value> {
    json::array_at(job, "/spec/replicatedJobs").iter()
}

fn template_pointer(index: usize) -> String {
    format!("/spec/replicatedJobs/{index}/template/spec/template")
}

fn name(replicated: &Value) -> &str {
    replicated
        .get("name")
        .and_then(Value::as_str)
        .unwrap_or_default()
}

/// `replicas`, defaulting to 1 as the JobSet API does.
fn replicas(replicated: &Value) -> i32 {
    json::i32_at(replicated, "/replicas").unwrap_or(1)
}

/// min(parallelism (default 1), completions (default parallelism)) of the replicated Job.
fn pods_per_replica(replicated: &Value) -> i32 {
    let parallelism = json::i32_at(replicated, "/template/spec/parallelism").unwrap_or(1);
    let completions = json::i32_at(replicated, "/template/spec/completions").unwrap_or(parallelism);
    parallelism.min(completions)
}

fn count(status: &Value, field: &str) -> i64 {
    status.get(field).and_then(Value::as_i64).unwrap_or(0)
}
