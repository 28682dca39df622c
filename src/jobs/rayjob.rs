//! ray.io/v1 RayJob (`pkg/controller/jobs/rayjob/`).

use k8s_openapi::api::core::v1::{Container, PodSpec, PodTemplateSpec};
use serde_json::Value;

use super::podset::{PodSet, PodSetInfo, merge_into_templates};
use super::ray::{self, CLUSTER_LABEL, GROUP, READY_STATE};
use super::{FieldError, JobError, JobFinished, JobFramework, JobKind, ValidationInput};
use crate::k8s::json;

const CLUSTER_SPEC: &str = "/spec/rayClusterSpec";
const SUBMITTER_TEMPLATE: &str = "/spec/submitterPodTemplate";
/// Name of the PodSet of the submitter Job in `K8sJobMode`.
pub const SUBMITTER_POD_SET: &str = "submitter";
/// Name of KubeRay's job submitter container.
const SUBMITTER_CONTAINER: &str = "ray-job-submitter";

/// The RayJob integration (`ray.io/rayjob`).
#[derive(Debug, Clone, Copy)]
pub struct RayJob;

const KIND: JobKind = JobKind {
    group: GROUP,
    version: "v1",
    kind: "RayJob",
    plural: "rayjobs",
};

impl JobFramework for RayJob {
    fn name(&self) -> &'static str {
        "ray.io/rayjob"
    }

    fn kind(&self) -> JobKind {
        KIND
    }

    fn suspend_pointer(&self) -> &'static str {
        "/spec/suspend"
    }

    fn skip(&self, job: &Value) -> bool {
        uses_existing_cluster(job)
    }

    fn build_pod_sets(&self, job: &Value) -> Result<Vec<PodSet>, JobError> {
        let mut pod_sets = ray::cluster_pod_sets(job, CLUSTER_SPEC)?;
        match submission_mode(job) {
            "K8sJobMode" => {
                let template = match super::typed_at(job, SUBMITTER_TEMPLATE)? {
                    Some(template) => template,
                    None => default_submitter_template(job)?,
                };
                pod_sets.push(PodSet::new(SUBMITTER_POD_SET, template, 1));
            }
            "SidecarMode" => {
                if let Some(head) = pod_sets.first_mut() {
                    ray::push_container(head, submitter_container());
                }
            }
            _ => {}
        }
        Ok(pod_sets)
    }

    fn template_pointers(&self, job: &Value) -> Result<Vec<String>, JobError> {
        let mut pointers = ray::cluster_template_pointers(job, CLUSTER_SPEC);
        if submission_mode(job) == "K8sJobMode" {
            pointers.push(SUBMITTER_TEMPLATE.to_string());
        }
        Ok(pointers)
    }

    /// In `K8sJobMode` without a submitter template, the default one is written into the job.
    fn run(&self, job: &mut Value, infos: &[PodSetInfo]) -> Result<(), JobError> {
        let mut started = job.clone();
        let pointers = self.template_pointers(&started)?;
        if pointers.len() != infos.len() {
            return Err(JobError::PodSetCountMismatch {
                expected: pointers.len(),
                got: infos.len(),
            });
        }
        if submission_mode(&started) == "K8sJobMode" && !json::present(&started, SUBMITTER_TEMPLATE)
        {
            let template =
                serde_json::to_value(default_submitter_template(&started)?).map_err(|source| {
                    JobError::InvalidField {
                        pointer: SUBMITTER_TEMPLATE.to_string(),
                        source,
                    }
                })?;
            json::set(&mut started, SUBMITTER_TEMPLATE, template);
        }
        merge_into_templates(&mut started, &pointers, infos)?;
        self.set_suspended(&mut started, false);
        *job = started;
        Ok(())
    }

    fn finished(&self, job: &Value) -> Option<JobFinished> {
        let deployment = json::str_at(job, "/status/jobDeploymentStatus")?;
        (deployment == "Complete" || deployment == "Failed").then(|| JobFinished {
            success: json::str_at(job, "/status/jobStatus") == Some("SUCCEEDED"),
            message: json::str_at(job, "/status/message")
                .unwrap_or_default()
                .to_string(),
        })
    }

    fn pods_ready(&self, job: &Value) -> bool {
        json::str_at(job, "/status/rayClusterStatus/state") == Some(READY_STATE)
    }

    fn is_active(&self, job: &Value) -> bool {
        !matches!(
            json::str_at(job, "/status/jobDeploymentStatus").unwrap_or_default(),
            "" | "Suspended"
        )
    }

    fn is_on_hold(&self, job: &Value) -> bool {
        json::str_at(job, "/status/jobDeploymentStatus") == Some("ValidationFailed")
    }

    fn pod_label_selector(&self, job: &Value) -> Option<String> {
        let cluster =
            json::str_at(job, "/status/rayClusterName").filter(|name| !name.is_empty())?;
        Some(format!("{CLUSTER_LABEL}={cluster}"))
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
            let has_selector = uses_existing_cluster(new);
            let has_cluster_spec = json::present(new, CLUSTER_SPEC);
            // Kueue returns early in these cases, without the common rules.
            match (has_selector, has_cluster_spec) {
                (true, true) => {
                    let selector = json::at(new, "/spec/clusterSelector")
                        .cloned()
                        .unwrap_or(Value::Null);
                    errors.push(FieldError::invalid(
                        "spec.clusterSelector",
                        selector,
                        "a kueue managed job should not use an existing cluster",
                    ));
                    return errors;
                }
                (true, false) => return errors,
                (false, false) => {
                    errors.push(FieldError::required(
                        "spec.rayClusterSpec",
                        "rayClusterSpec is required for Kueue-managed jobs that don't use clusterSelector",
                    ));
                    return errors;
                }
                (false, true) => {}
            }
            if json::bool_at(new, "/spec/shutdownAfterJobFinishes") != Some(true) {
                errors.push(FieldError::invalid(
                    "spec.shutdownAfterJobFinishes",
                    false,
                    "a kueue managed job should delete the cluster after finishing",
                ));
            }
            let spec = json::at(new, CLUSTER_SPEC).unwrap_or(&Value::Null);
            if json::bool_at(spec, "/enableInTreeAutoscaling") == Some(true) {
                errors.push(ray::autoscaling_error(
                    new,
                    "spec.rayClusterSpec.enableInTreeAutoscaling",
                    "a kueue managed job should only use autoscaling when workload slicing is enabled",
                ));
            }
            errors.extend(ray::validate_worker_groups(spec, "spec.rayClusterSpec"));
        }
        errors.extend(input.common_on_create);
        errors
    }
}

/// `spec.submissionMode`; absent means KubeRay's API default `K8sJobMode`.
fn submission_mode(job: &Value) -> &str {
    json::str_at(job, "/spec/submissionMode").unwrap_or("K8sJobMode")
}

fn uses_existing_cluster(job: &Value) -> bool {
    json::at(job, "/spec/clusterSelector")
        .and_then(Value::as_object)
        .is_some_and(|selector| !selector.is_empty())
}

/// KubeRay's submitter container resources: requests 500m/200Mi, limits 1/1Gi.
fn submitter_container() -> Container {
    Container {
        name: SUBMITTER_CONTAINER.into(),
        resources: Some(ray::requirements(("500m", "200Mi"), ("1", "1Gi"))),
        ..Default::default()
    }
}

/// The submitter pod KubeRay creates when the RayJob has no `submitterPodTemplate`.
fn default_submitter_template(job: &Value) -> Result<PodTemplateSpec, JobError> {
    let head_container = format!("{CLUSTER_SPEC}/headGroupSpec/template/spec/containers/0");
    let head = json::at(job, &head_container).ok_or(JobError::MissingField {
        pointer: head_container.clone(),
    })?;
    let image = head
        .get("image")
        .and_then(Value::as_str)
        .map(str::to_string);
    Ok(PodTemplateSpec {
        metadata: None,
        spec: Some(PodSpec {
            containers: vec![Container {
                image,
                ..submitter_container()
            }],
            restart_policy: Some("Never".into()),
            ..Default::default()
        }),
    })
}
