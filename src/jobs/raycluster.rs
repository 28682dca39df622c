//! ray.io/v1 RayCluster (`pkg/controller/jobs/raycluster/`).

use serde_json::Value;

use super::podset::PodSet;
use super::ray::{self, CLUSTER_LABEL, GROUP, READY_STATE};
use super::{FieldError, JobError, JobFinished, JobFramework, JobKind, ValidationInput};
use crate::k8s::json;

/// The RayCluster integration (`ray.io/raycluster`).
#[derive(Debug, Clone, Copy)]
pub struct RayCluster;

const KIND: JobKind = JobKind {
    group: GROUP,
    version: "v1",
    kind: "RayCluster",
    plural: "rayclusters",
};

impl JobFramework for RayCluster {
    fn name(&self) -> &'static str {
        "ray.io/raycluster"
    }

    fn kind(&self) -> JobKind {
        KIND
    }

    fn suspend_pointer(&self) -> &'static str {
        "/spec/suspend"
    }

    fn build_pod_sets(&self, job: &Value) -> Result<Vec<PodSet>, JobError> {
        ray::cluster_pod_sets(job, "/spec")
    }

    fn template_pointers(&self, job: &Value) -> Result<Vec<String>, JobError> {
        Ok(ray::cluster_template_pointers(job, "/spec"))
    }

    /// A RayCluster runs until deleted: it never finishes.
    fn finished(&self, _job: &Value) -> Option<JobFinished> {
        None
    }

    fn pods_ready(&self, job: &Value) -> bool {
        json::str_at(job, "/status/state") == Some(READY_STATE)
    }

    fn is_active(&self, job: &Value) -> bool {
        self.pods_ready(job)
    }

    fn pod_label_selector(&self, job: &Value) -> Option<String> {
        let name = json::str_at(job, "/metadata/name")?;
        Some(format!("{CLUSTER_LABEL}={name}"))
    }

    fn validate(&self, input: ValidationInput<'_>) -> Vec<FieldError> {
        let mut errors = match input.old {
            None => Vec::new(),
            Some(old)
                if ray::should_validate_update(
                    old,
                    input.new,
                    input.manage_jobs_without_queue_name,
                ) =>
            {
                input.common_on_update
            }
            Some(_) => return Vec::new(),
        };
        let new = input.new;
        if input.manage_jobs_without_queue_name || super::queue_name(new).is_some() {
            let spec = json::at(new, "/spec").unwrap_or(&Value::Null);
            if json::bool_at(spec, "/enableInTreeAutoscaling") == Some(true) {
                errors.push(ray::autoscaling_error(
                    new,
                    "spec.enableInTreeAutoscaling",
                    "a kueue-managed RayCluster can use autoscaling only as an elastic job: enable the \
                     ElasticJobsViaWorkloadSlices feature gate and set the \"kueue.x-k8s.io/elastic-job\": \"true\" annotation",
                ));
            }
            errors.extend(ray::validate_worker_groups(spec, "spec"));
        }
        errors.extend(input.common_on_create);
        errors
    }
}
