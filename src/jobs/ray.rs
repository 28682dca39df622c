//! What RayJob and RayCluster share: the head and worker-group PodSets of a `RayClusterSpec`
//! (`pkg/controller/jobs/raycluster/common.go`).

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Container, ResourceRequirements};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use serde_json::Value;

use super::podset::PodSet;
use super::{FieldError, JobError, MAX_POD_SETS};
use crate::api::constants::ELASTIC_JOB_ANNOTATION;
use crate::k8s::json;
use crate::k8s::quantity::parse_nano;

/// Name of the head group's PodSet (reserved: no worker group may use it).
pub const HEAD_POD_SET: &str = "head";
/// Annotation turning on GCS fault tolerance in KubeRay.
pub const FT_ENABLED_ANNOTATION: &str = "ray.io/ft-enabled";
/// Label KubeRay puts on every pod of a cluster.
pub const CLUSTER_LABEL: &str = "ray.io/cluster";
/// `status.state` of a RayCluster whose pods are all ready.
pub(crate) const READY_STATE: &str = "ready";

/// ray.io/v1 kinds share the group and version.
pub(crate) const GROUP: &str = "ray.io";

/// Head PodSet first, then one PodSet per worker group, from the spec at `spec_pointer`.
pub(crate) fn cluster_pod_sets(job: &Value, spec_pointer: &str) -> Result<Vec<PodSet>, JobError> {
    let spec = json::at(job, spec_pointer).filter(|spec| !spec.is_null());
    let spec = spec.ok_or_else(|| JobError::MissingField {
        pointer: spec_pointer.to_string(),
    })?;
    let head_pointer = format!("{spec_pointer}/headGroupSpec/template");
    let mut head = PodSet::from_template_at(job, &head_pointer, HEAD_POD_SET, 1)?;

    let ft_annotation = json::annotation(job, FT_ENABLED_ANNOTATION)
        .is_some_and(|v| v.eq_ignore_ascii_case("true"));
    if ft_annotation || json::present(spec, "/gcsFaultToleranceOptions") {
        // KubeRay's Redis cleanup runs with the head's resources: at least 200m CPU / 256Mi.
        let ray_container = head
            .template
            .spec
            .as_mut()
            .and_then(|s| s.containers.first_mut());
        let ray_container = ray_container.ok_or_else(|| JobError::MissingField {
            pointer: format!("{head_pointer}/spec/containers/0"),
        })?;
        let requests = ray_container
            .resources
            .get_or_insert_with(Default::default)
            .requests
            .get_or_insert_with(Default::default);
        raise_to(requests, "cpu", "200m")?;
        raise_to(requests, "memory", "256Mi")?;
    }

    if json::bool_at(spec, "/enableInTreeAutoscaling") == Some(true) {
        let resources =
            super::typed_at(job, &format!("{spec_pointer}/autoscalerOptions/resources"))?
                .unwrap_or_else(|| requirements(("500m", "512Mi"), ("500m", "512Mi")));
        push_container(
            &mut head,
            Container {
                name: "autoscaler".into(),
                resources: Some(resources),
                ..Default::default()
            },
        );
    }

    let mut pod_sets = vec![head];
    for (index, group) in json::array_at(spec, "/workerGroupSpecs").iter().enumerate() {
        let name = group
            .get("groupName")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let mut count = json::i32_at(group, "/replicas").unwrap_or(1);
        let hosts = json::i32_at(group, "/numOfHosts").unwrap_or(0);
        if hosts > 1 {
            count = count.saturating_mul(hosts);
        }
        let pointer = format!("{spec_pointer}/workerGroupSpecs/{index}/template");
        pod_sets.push(PodSet::from_template_at(job, &pointer, name, count)?);
    }
    Ok(pod_sets)
}

/// Template pointers of the head and worker groups, in PodSet order.
pub(crate) fn cluster_template_pointers(job: &Value, spec_pointer: &str) -> Vec<String> {
    let workers = json::array_at(job, &format!("{spec_pointer}/workerGroupSpecs")).len();
    std::iter::once(format!("{spec_pointer}/headGroupSpec/template"))
        .chain(
            (0..workers).map(|index| format!("{spec_pointer}/workerGroupSpecs/{index}/template")),
        )
        .collect()
}

/// The PodSet-count and reserved-name rules on a cluster spec (field paths under `path`).
/// The error for a Kueue-managed Ray job with in-tree autoscaling at `field`: Kueue's
/// `kueue_detail`, or, when the job opts in as an elastic job, that Kuota cannot queue it: Kueue
/// would admit it through workload slices, which Kuota does not implement.
pub(crate) fn autoscaling_error(job: &Value, field: &str, kueue_detail: &str) -> FieldError {
    let detail = if json::annotation(job, ELASTIC_JOB_ANNOTATION) == Some("true") {
        "Kuota does not implement workload slices (Kueue's ElasticJobsViaWorkloadSlices), so it \
         cannot queue an elastic job that autoscales; set it to false to queue the job at its \
         declared size"
    } else {
        kueue_detail
    };
    FieldError::invalid(field, true, detail)
}

pub(crate) fn validate_worker_groups(spec: &Value, path: &str) -> Vec<FieldError> {
    let groups = json::array_at(spec, "/workerGroupSpecs");
    let mut errors = Vec::new();
    if groups.len() + 1 > MAX_POD_SETS {
        errors.push(FieldError::too_many(
            format!("{path}.workerGroupSpecs"),
            groups.len() + 1,
            MAX_POD_SETS,
        ));
    }
    for (index, group) in groups.iter().enumerate() {
        if group.get("groupName").and_then(Value::as_str) == Some(HEAD_POD_SET) {
            errors.push(FieldError::forbidden(
                format!("{path}.workerGroupSpecs[{index}].groupName"),
                format!("{HEAD_POD_SET:?} is reserved for the head group"),
            ));
        }
    }
    errors
}

/// Kueue validates Ray updates only when the job is (or was) queued (`ValidateRayAndSparkJobUpdates` on).
pub(crate) fn should_validate_update(
    old: &Value,
    new: &Value,
    manage_jobs_without_queue_name: bool,
) -> bool {
    manage_jobs_without_queue_name
        || super::queue_name(new).is_some()
        || super::queue_name(old).is_some()
}

/// Resource requirements from (cpu, memory) requests and limits.
pub(crate) fn requirements(requests: (&str, &str), limits: (&str, &str)) -> ResourceRequirements {
    let list = |(cpu, memory): (&str, &str)| {
        BTreeMap::from([
            ("cpu".to_string(), Quantity(cpu.into())),
            ("memory".to_string(), Quantity(memory.into())),
        ])
    };
    ResourceRequirements {
        requests: Some(list(requests)),
        limits: Some(list(limits)),
        ..Default::default()
    }
}

pub(crate) fn push_container(pod_set: &mut PodSet, container: Container) {
    pod_set
        .template
        .spec
        .get_or_insert_with(Default::default)
        .containers
        .push(container);
}

/// Keeps the larger of the current request and `minimum`.
fn raise_to(
    requests: &mut BTreeMap<String, Quantity>,
    resource: &str,
    minimum: &str,
) -> Result<(), JobError> {
    let keep_current = match requests.get(resource) {
        Some(current) => parse_nano(&current.0)? >= parse_nano(minimum)?,
        None => false,
    };
    if !keep_current {
        requests.insert(resource.to_string(), Quantity(minimum.to_string()));
    }
    Ok(())
}
