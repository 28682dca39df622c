//! The Workload Kueue keeps for a job, built purely from the job's JSON: its name, owner
//! reference, labels, PodSets and priority (`jobframework.ConstructWorkload`), whether an existing
//! Workload still matches its job (`EquivalentToWorkload`), and the admission info merged into
//! the job's pod templates when it starts (`getPodSetsInfoFromStatus`).

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use kube::ResourceExt;
use serde_json::Value;

use crate::api::constants::{
    JOB_UID_LABEL, MAX_EXEC_TIME_SECONDS_LABEL, PRIORITY_CLASS_LABEL,
    PROVISIONING_REQUEST_ANNOTATION_PREFIX, RESOURCE_IN_USE_FINALIZER, condition,
};
use crate::api::pod_template::PodTemplate;
use crate::api::v1beta2::{
    PodSet as WorkloadPodSet, PriorityClassKind, PriorityClassRef, ResourceFlavorSpec, Workload,
    WorkloadSpec,
};
use crate::jobs::{
    self, JobError, JobFramework, PodSet, PodSetInfo, TopologyGates, pod_sets_equivalent,
};
use crate::k8s::json::{self, label};
use crate::k8s::names;

/// Priority values known to the cluster, as read from the watch caches.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PriorityClasses {
    /// WorkloadPriorityClass name to value.
    pub workload: BTreeMap<String, i32>,
    /// Pod PriorityClass name to its value and whether it is the global default.
    pub pod: BTreeMap<String, PodPriorityClass>,
}

/// What Kueue reads from a `scheduling.k8s.io` PriorityClass.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PodPriorityClass {
    /// Priority value.
    pub value: i32,
    /// Whether it is a `globalDefault` class.
    pub global_default: bool,
}

/// A job's resolved priority: the value and the class it came from (none for the default 0).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ResolvedPriority {
    /// The class the value came from.
    pub class_ref: Option<PriorityClassRef>,
    /// The priority value.
    pub value: i32,
}

/// A priority class the job names does not exist (yet); no Workload is created until it does.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum PriorityError {
    /// The `kueue.x-k8s.io/priority-class` label names a missing WorkloadPriorityClass.
    #[error("WorkloadPriorityClass \"{0}\" not found")]
    WorkloadPriorityClassNotFound(String),
    /// The job's pods name a missing PriorityClass.
    #[error("PriorityClass \"{0}\" not found")]
    PriorityClassNotFound(String),
}

/// Why a Workload could not be built for a job.
#[derive(Debug, thiserror::Error)]
pub enum BuildError {
    /// The job lacks `metadata.name`, `.namespace` or `.uid`.
    #[error("the job has no metadata.{0}")]
    MissingMetadata(&'static str),
    /// The job's PodSets could not be read.
    #[error(transparent)]
    Job(#[from] JobError),
}

/// Why the admission of a Workload cannot be turned into pod template changes.
#[derive(Debug, thiserror::Error)]
pub enum AdmissionInfoError {
    /// The Workload carries no `status.admission`.
    #[error("the workload has no admission")]
    NotAdmitted,
    /// An assigned ResourceFlavor is not in the cache (yet); retried.
    #[error("ResourceFlavor \"{0}\" not found")]
    FlavorNotFound(String),
    /// An admission check's PodSetUpdate conflicts with the admission; permanent.
    #[error("in admission check \"{check}\": {source}")]
    Conflict {
        /// The admission check.
        check: String,
        /// The conflict.
        source: JobError,
    },
}

impl AdmissionInfoError {
    /// True for errors that retrying cannot fix.
    pub fn is_permanent(&self) -> bool {
        matches!(self, AdmissionInfoError::Conflict { .. })
    }
}

/// Resolves a job's priority as Kueue does (`ExtractPriority`): the WorkloadPriorityClass of
/// the `kueue.x-k8s.io/priority-class` label, else the PriorityClass the kind or its pods name,
/// else the global default PriorityClass (the lowest if several), else 0.
pub fn resolve_priority(
    framework: &dyn JobFramework,
    job: &Value,
    pod_sets: &[PodSet],
    classes: &PriorityClasses,
) -> Result<ResolvedPriority, PriorityError> {
    if let Some(name) = label(job, PRIORITY_CLASS_LABEL).filter(|name| !name.is_empty()) {
        return classes
            .workload
            .get(name)
            .map(|value| ResolvedPriority {
                class_ref: Some(PriorityClassRef::workload_priority_class(name)),
                value: *value,
            })
            .ok_or_else(|| PriorityError::WorkloadPriorityClassNotFound(name.to_string()));
    }
    let named = framework.priority_class_name(job).or_else(|| {
        pod_sets
            .iter()
            .filter_map(|pod_set| pod_set.template.spec.as_ref()?.priority_class_name.clone())
            .find(|name| !name.is_empty())
    });
    if let Some(name) = named {
        return classes
            .pod
            .get(&name)
            .map(|class| ResolvedPriority {
                class_ref: Some(PriorityClassRef::pod_priority_class(name.clone())),
                value: class.value,
            })
            .ok_or(PriorityError::PriorityClassNotFound(name));
    }
    Ok(classes
        .pod
        .iter()
        .filter(|(_, class)| class.global_default)
        .min_by_key(|(_, class)| class.value)
        .map(|(name, class)| ResolvedPriority {
            class_ref: Some(PriorityClassRef::pod_priority_class(name.clone())),
            value: class.value,
        })
        .unwrap_or_default())
}

/// The job's PodSets as they go into a Workload: with their topology requests, and without
/// `minCount` when partial admission is off (Kueue `clearMinCountsIfFeatureDisabled`).
pub fn job_pod_sets(
    framework: &dyn JobFramework,
    job: &Value,
    partial_admission: bool,
    topology: TopologyGates,
) -> Result<Vec<PodSet>, JobError> {
    let mut pod_sets = framework.pod_sets(job)?;
    let requests = jobs::topology::topology_requests(framework, job, &pod_sets, topology)?;
    for (pod_set, request) in pod_sets.iter_mut().zip(requests) {
        pod_set.topology_request = request;
        if !partial_admission {
            pod_set.min_count = None;
        }
    }
    Ok(pod_sets)
}

/// The spec of the Workload for a job: PodSets, queue, priority, maximum execution time.
pub fn workload_spec(
    job: &Value,
    pod_sets: &[PodSet],
    priority: &ResolvedPriority,
) -> WorkloadSpec {
    WorkloadSpec {
        pod_sets: pod_sets.iter().map(to_workload_pod_set).collect(),
        queue_name: jobs::queue_name(job).map(str::to_string),
        priority_class_ref: priority.class_ref.clone(),
        priority: Some(priority.value),
        maximum_execution_time_seconds: maximum_execution_time_seconds(job),
        ..WorkloadSpec::default()
    }
}

/// The Workload Kueue creates for a job: named by [`jobs::workload_name_for`], in the job's
/// namespace, controlled by the job, with the `resource-in-use` finalizer, the job-uid label
/// (plus `labelKeysToCopy`) and the job's ProvisioningRequest annotations.
pub fn build_workload(
    framework: &dyn JobFramework,
    job: &Value,
    pod_sets: &[PodSet],
    priority: &ResolvedPriority,
    label_keys_to_copy: &[String],
) -> Result<Workload, BuildError> {
    let metadata = |field: &'static str| {
        json::at(job, &format!("/metadata/{field}"))
            .and_then(Value::as_str)
            .filter(|value| !value.is_empty())
            .ok_or(BuildError::MissingMetadata(field))
    };
    let (name, namespace, uid) = (metadata("name")?, metadata("namespace")?, metadata("uid")?);

    let mut labels: BTreeMap<String, String> = label_keys_to_copy
        .iter()
        .filter_map(|key| Some((key.clone(), label(job, key)?.to_string())))
        .collect();
    if names::label_value(uid).is_empty() {
        labels.insert(JOB_UID_LABEL.to_string(), uid.to_string());
    }
    let annotations: BTreeMap<String, String> = json::at(job, "/metadata/annotations")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .filter(|(key, _)| key.starts_with(PROVISIONING_REQUEST_ANNOTATION_PREFIX))
        .filter_map(|(key, value)| Some((key.clone(), value.as_str()?.to_string())))
        .collect();

    let kind = framework.kind();
    let mut workload = Workload::new(
        &jobs::workload_name_for(framework, job),
        workload_spec(job, pod_sets, priority),
    );
    workload.metadata = ObjectMeta {
        name: workload.metadata.name.take(),
        namespace: Some(namespace.to_string()),
        labels: Some(labels),
        annotations: (!annotations.is_empty()).then_some(annotations),
        finalizers: Some(vec![RESOURCE_IN_USE_FINALIZER.to_string()]),
        owner_references: Some(vec![OwnerReference {
            api_version: kind.api_version(),
            kind: kind.kind.to_string(),
            name: name.to_string(),
            uid: uid.to_string(),
            controller: Some(true),
            block_owner_deletion: Some(true),
        }]),
        ..ObjectMeta::default()
    };
    Ok(workload)
}

/// A job PodSet in the Workload API's shape.
pub fn to_workload_pod_set(pod_set: &PodSet) -> WorkloadPodSet {
    WorkloadPodSet {
        name: pod_set.name.clone(),
        template: PodTemplate::new(&pod_set.template),
        count: pod_set.count,
        min_count: pod_set.min_count,
        topology_request: pod_set.topology_request.clone(),
    }
}

/// A Workload PodSet in the shape the job frameworks use.
pub fn from_workload_pod_set(pod_set: &WorkloadPodSet) -> PodSet {
    PodSet {
        name: pod_set.name.clone(),
        template: pod_set.template.decode(),
        count: pod_set.count,
        min_count: pod_set.min_count,
        topology_request: pod_set.topology_request.clone(),
    }
}

/// Whether an existing Workload still describes the job (Kueue `EquivalentToWorkload`): same
/// maximum execution time and the same PodSets. While the Workload holds quota the job's
/// PodSets are compared with what the admission made of them (partial admission counts, flavor
/// tolerations); a suspended job may also match the Workload's original PodSets. Tolerations
/// are ignored once the Workload is admitted.
pub fn workload_matches_job(
    job: &Value,
    job_pod_sets: &[PodSet],
    job_suspended: bool,
    workload: &Workload,
    flavors: &BTreeMap<String, ResourceFlavorSpec>,
) -> bool {
    if workload.spec.maximum_execution_time_seconds != maximum_execution_time_seconds(job) {
        return false;
    }
    let admitted = workload.is_condition_true(condition::ADMITTED);
    let spec_pod_sets: Vec<PodSet> = workload
        .spec
        .pod_sets
        .iter()
        .map(from_workload_pod_set)
        .collect();
    if workload.is_condition_true(condition::QUOTA_RESERVED)
        && let Some(running) = running_pod_sets(workload, flavors)
    {
        return pod_sets_equivalent(job_pod_sets, &running, admitted)
            || (job_suspended && pod_sets_equivalent(job_pod_sets, &spec_pod_sets, admitted));
    }
    pod_sets_equivalent(job_pod_sets, &spec_pod_sets, admitted)
}

/// The PodSets a started job has under the Workload's admission: the Workload's PodSets with the
/// admitted counts (for PodSets that allow partial admission) and the flavors' tolerations.
fn running_pod_sets(
    workload: &Workload,
    flavors: &BTreeMap<String, ResourceFlavorSpec>,
) -> Option<Vec<PodSet>> {
    let infos = pod_set_infos(workload, flavors, false).ok()?;
    workload
        .spec
        .pod_sets
        .iter()
        .map(|pod_set| {
            let info = infos.iter().find(|info| info.name == pod_set.name)?;
            let mut running = from_workload_pod_set(pod_set);
            if running.min_count.is_some() {
                running.count = info.count;
            }
            if !info.tolerations.is_empty() {
                let spec = running.template.spec.get_or_insert_default();
                let tolerations = spec.tolerations.get_or_insert_default();
                for toleration in &info.tolerations {
                    if !tolerations.contains(toleration) {
                        tolerations.push(toleration.clone());
                    }
                }
            }
            Some(running)
        })
        .collect()
}

/// What admission adds to each PodSet's template, in the Workload's PodSet order: the PodSet
/// label, the queue labels (when `assign_queue_labels`), the topology gate of a PodSet placed
/// in a topology, the assigned flavors' node labels and tolerations, and the PodSetUpdates of
/// admission checks. PodSets without an assignment are
/// left out, which the job frameworks refuse as a permanent error.
pub fn pod_set_infos(
    workload: &Workload,
    flavors: &BTreeMap<String, ResourceFlavorSpec>,
    assign_queue_labels: bool,
) -> Result<Vec<PodSetInfo>, AdmissionInfoError> {
    let status = workload.status.as_ref();
    let admission = status
        .and_then(|status| status.admission.as_ref())
        .ok_or(AdmissionInfoError::NotAdmitted)?;
    let queue_name = workload.spec.queue_name.as_deref().unwrap_or_default();
    let mut infos = Vec::new();
    for pod_set in &workload.spec.pod_sets {
        let Some(assignment) = admission
            .pod_set_assignments
            .iter()
            .find(|assignment| assignment.name == pod_set.name)
        else {
            continue;
        };
        let mut info = PodSetInfo::admitted(
            &pod_set.name,
            assignment.count.unwrap_or(pod_set.count),
            queue_name,
            &admission.cluster_queue,
        );
        if !assign_queue_labels {
            info.labels
                .retain(|key, _| key == jobs::podset::POD_SET_LABEL);
        }
        if assignment.topology_assignment.is_some() {
            info.gate_for_topology(&workload.name_any());
        }
        let mut seen: Vec<&String> = Vec::new();
        for flavor in assignment.flavors.values() {
            if seen.contains(&flavor) {
                continue;
            }
            seen.push(flavor);
            let spec = flavors
                .get(flavor)
                .ok_or_else(|| AdmissionInfoError::FlavorNotFound(flavor.clone()))?;
            info.add_flavor(&spec.node_labels, &spec.tolerations);
        }
        for check in status
            .map(|status| status.admission_checks.as_slice())
            .unwrap_or_default()
        {
            if let Some(update) = check
                .pod_set_updates
                .iter()
                .find(|update| update.name == pod_set.name)
            {
                let update = PodSetInfo {
                    name: update.name.clone(),
                    labels: update.labels.clone(),
                    annotations: update.annotations.clone(),
                    node_selector: update.node_selector.clone(),
                    tolerations: update.tolerations.clone(),
                    ..PodSetInfo::default()
                };
                info.merge(&update)
                    .map_err(|source| AdmissionInfoError::Conflict {
                        check: check.name.clone(),
                        source,
                    })?;
            }
        }
        infos.push(info);
    }
    Ok(infos)
}

/// Name of the WorkloadPriorityClass a Workload's priority came from, empty for other sources.
pub fn workload_priority_class_name(workload: &Workload) -> &str {
    workload
        .spec
        .priority_class_ref
        .as_ref()
        .filter(|class| class.kind == PriorityClassKind::WorkloadPriorityClass)
        .map(|class| class.name.as_str())
        .unwrap_or_default()
}

/// The job's `kueue.x-k8s.io/priority-class` label, empty when absent.
pub fn job_workload_priority_class_name(job: &Value) -> &str {
    label(job, PRIORITY_CLASS_LABEL).unwrap_or_default()
}

/// `kueue.x-k8s.io/max-exec-time-seconds` when it is a positive integer.
fn maximum_execution_time_seconds(job: &Value) -> Option<i32> {
    label(job, MAX_EXEC_TIME_SECONDS_LABEL)
        .and_then(|text| text.parse::<i32>().ok())
        .filter(|seconds| *seconds > 0)
}

#[cfg(test)]
pub(crate) mod tests;
