//! Kubeflow jobs: a map of replica specs (one PodSet per replica type, in a fixed order) and a
//! `runPolicy` (`pkg/controller/jobs/kubeflow/kubeflowjob/`, `pkg/controller/jobs/mpijob/`).
//! The Kubeflow v1 kinds and MPIJob v2beta1 differ only in the data below.

use serde_json::Value;

use super::podset::PodSet;
use super::{
    FieldError, JobError, JobFinished, JobFramework, JobKind, PodIndexing, ValidationInput,
};
use crate::k8s::json;

/// Label the Kubeflow operators (and the MPI operator) put on each pod: its index among the
/// replicas of its type.
const REPLICA_INDEX_LABEL: &str = "training.kubeflow.org/replica-index";

/// How a Kubeflow kind's webhook combines the common validation errors.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KubeflowValidation {
    /// Kueue `BaseWebhook`: create rules on CREATE, update rules on UPDATE.
    Base,
    /// Kueue's MPIJob webhook: create rules also on UPDATE, everything sorted by field path.
    SortedByField,
}

/// A Kubeflow job kind described by data.
#[derive(Debug)]
pub struct KubeflowJob {
    /// Kueue framework name.
    pub name: &'static str,
    /// API resource.
    pub kind: JobKind,
    /// Field under `spec` holding the replica-type → replica-spec map.
    pub replica_specs_field: &'static str,
    /// Replica types in PodSet order.
    pub replica_types: &'static [&'static str],
    /// Value of the operator-name label on the job's pods.
    pub operator_name: &'static str,
    /// Whether Kueue allows a prebuilt Workload for this kind.
    pub supports_prebuilt_workload: bool,
    /// How validation errors are combined.
    pub validation: KubeflowValidation,
}

impl KubeflowJob {
    /// Replica types present in the job, in PodSet order.
    fn present_types<'a>(
        &self,
        job: &'a Value,
    ) -> impl Iterator<Item = &'static str> + use<'a, '_> {
        self.replica_types
            .iter()
            .copied()
            .filter(|replica| json::present(job, &self.replica_pointer(replica)))
    }

    fn replica_pointer(&self, replica: &str) -> String {
        format!("/spec/{}/{replica}", self.replica_specs_field)
    }
}

impl JobFramework for KubeflowJob {
    fn name(&self) -> &'static str {
        self.name
    }

    fn kind(&self) -> JobKind {
        self.kind
    }

    fn suspend_pointer(&self) -> &'static str {
        "/spec/runPolicy/suspend"
    }

    fn build_pod_sets(&self, job: &Value) -> Result<Vec<PodSet>, JobError> {
        self.present_types(job)
            .map(|replica| {
                let pointer = self.replica_pointer(replica);
                let count = json::i32_at(job, &format!("{pointer}/replicas")).unwrap_or(1);
                PodSet::from_template_at(job, &format!("{pointer}/template"), replica, count)
            })
            .collect()
    }

    fn template_pointers(&self, job: &Value) -> Result<Vec<String>, JobError> {
        Ok(self
            .present_types(job)
            .map(|replica| format!("{}/template", self.replica_pointer(replica)))
            .collect())
    }

    fn pod_indexing(&self, _job: &Value, _pod_set: usize) -> PodIndexing {
        PodIndexing {
            pod_index_label: Some(REPLICA_INDEX_LABEL),
            ..PodIndexing::default()
        }
    }

    fn finished(&self, job: &Value) -> Option<JobFinished> {
        json::array_at(job, "/status/conditions")
            .iter()
            .find_map(|condition| {
                let kind = condition.get("type").and_then(Value::as_str)?;
                let is_true = condition.get("status").and_then(Value::as_str) == Some("True");
                ((kind == "Succeeded" || kind == "Failed") && is_true).then(|| JobFinished {
                    success: kind == "Succeeded",
                    message: json::condition_message(condition),
                })
            })
    }

    fn pods_ready(&self, job: &Value) -> bool {
        json::true_condition(job, "Running").is_some()
    }

    fn is_active(&self, job: &Value) -> bool {
        json::at(job, "/status/replicaStatuses")
            .and_then(Value::as_object)
            .is_some_and(|statuses| {
                statuses
                    .values()
                    .any(|status| json::i32_at(status, "/active").unwrap_or(0) != 0)
            })
    }

    /// `runPolicy.schedulingPolicy.priorityClass`, else the first replica template that names one.
    fn priority_class_name(&self, job: &Value) -> Option<String> {
        let non_empty =
            |name: Option<&str>| name.filter(|name| !name.is_empty()).map(str::to_string);
        non_empty(json::str_at(
            job,
            "/spec/runPolicy/schedulingPolicy/priorityClass",
        ))
        .or_else(|| {
            self.present_types(job).find_map(|replica| {
                non_empty(json::str_at(
                    job,
                    &format!(
                        "{}/template/spec/priorityClassName",
                        self.replica_pointer(replica)
                    ),
                ))
            })
        })
    }

    fn pod_label_selector(&self, job: &Value) -> Option<String> {
        let name = json::str_at(job, "/metadata/name")?;
        Some(format!(
            "training.kubeflow.org/job-name={name},training.kubeflow.org/operator-name={}",
            self.operator_name
        ))
    }

    fn supports_prebuilt_workload(&self) -> bool {
        self.supports_prebuilt_workload
    }

    fn validate(&self, input: ValidationInput<'_>) -> Vec<FieldError> {
        match (self.validation, input.old) {
            (KubeflowValidation::Base, None) => input.common_on_create,
            (KubeflowValidation::Base, Some(_)) => input.common_on_update,
            (KubeflowValidation::SortedByField, _) => {
                let mut errors = input.common_on_update;
                errors.extend(input.common_on_create);
                errors.sort_by(|a, b| a.field.cmp(&b.field));
                errors
            }
        }
    }
}
