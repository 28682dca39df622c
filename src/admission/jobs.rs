//! The job webhooks: defaulting (Kueue `BaseWebhook.Default`) and validation (Kueue's common
//! jobframework rules, each kind's own rules, and Kuota's queue-reference checks).
//!
//! Defaulting, on CREATE, in Kueue's order: the `default` LocalQueue label, the `default`
//! WorkloadPriorityClass label (gate `WorkloadPriorityClassDefaulting`), then suspension. A
//! job whose controller owner is a kind Kuota manages (a Job of a JobSet) is left to its parent.
//! Kueue walks the whole ownership chain with API reads; Kuota looks at the direct controller
//! owner only, which needs none.
//!
//! Validation, on CREATE and UPDATE: Kueue's rules with Kueue's messages. Then, for a managed
//! job (queue-name label set, namespace selected by `managedJobsNamespaceSelector`, not a child
//! of a managed job) on CREATE, or on UPDATE when its queue-name changes, Kuota checks what
//! Kueue would leave stuck forever, with these texts:
//! - `LocalQueue "team-x" does not exist in namespace "ns"; LocalQueues in "ns": team-a, team-b`
//!   (or `...; there are no LocalQueues in "ns"`),
//! - `LocalQueue "team-a" does not name a ClusterQueue`,
//! - `LocalQueue "team-a" points to ClusterQueue "cq-x", which does not exist; ClusterQueues: a,
//!   b` (or `...; there are no ClusterQueues`),
//! - the request can never fit the ClusterQueue (see [`super::capacity`]).
//!
//! Several problems are joined with `"; "`. Under `queueReferencePolicy: Warn` they are returned
//! as admission warnings and the job is admitted. Problems that can go away by themselves are
//! always warnings:
//! - `LocalQueue "q" is stopped (stopPolicy Hold): the job waits until it is resumed`,
//! - `ClusterQueue "cq" is stopped (stopPolicy HoldAndDrain): the job waits until it is resumed`,
//! - `ClusterQueue "cq" references missing ResourceFlavor(s): a, b: the job waits until they exist`,
//! - `ClusterQueue "cq" does not admit workloads from namespace "ns": its namespaceSelector does
//!   not match the namespace's labels` (or `: it has no namespaceSelector; namespaceSelector: {}
//!   admits every namespace`),
//! - `WorkloadPriorityClass "p" does not exist`.

use std::sync::Arc;

use kube::core::{Selector, SelectorExt};
use serde_json::Value;
use tracing::warn;

use super::capacity;
use super::kueue;
use super::lookup::{ClusterLookup, QuotaObjects};
use crate::api::constants::{
    DEFAULT_LOCAL_QUEUE_NAME, DEFAULT_WORKLOAD_PRIORITY_CLASS_NAME, MAX_EXEC_TIME_SECONDS_LABEL,
    PREBUILT_WORKLOAD_LABEL, PRIORITY_CLASS_LABEL, QUEUE_NAME_LABEL,
};
use crate::api::v1beta2::{ClusterQueue, StopPolicy};
use crate::config::{Configuration, Feature, QueueReferencePolicy};
use crate::jobs::{JobFramework, MAX_POD_SETS, PodSet, ValidationInput, validation::go_atoi};
use crate::k8s::field::{ErrorType, FieldError, aggregate};
use crate::k8s::json::{self, annotation, label, set_label};
use crate::k8s::names;

/// The prebuilt-workload annotation shares its key with the label.
const PREBUILT_WORKLOAD_ANNOTATION: &str = PREBUILT_WORKLOAD_LABEL;
/// Longest label value; longer prebuilt-workload names can only be annotations.
const LABEL_VALUE_MAX_LENGTH: usize = 63;

/// The outcome of validating a job.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct JobVerdict {
    /// Why the job is refused; `None` when it is admitted.
    pub denial: Option<String>,
    /// Admission warnings for the user.
    pub warnings: Vec<String>,
}

// === small JSON helpers ===

/// The label value, `""` when absent (Go's map lookup).
fn label_or_empty<'a>(object: &'a Value, key: &str) -> &'a str {
    label(object, key).unwrap_or("")
}

fn label_path(key: &str) -> String {
    format!("metadata.labels[{key}]")
}

fn annotation_path(key: &str) -> String {
    format!("metadata.annotations[{key}]")
}

/// Whether the object's controller owner is a job kind Kuota manages (an enabled framework or
/// one of `integrations.externalFrameworks`).
pub fn owned_by_managed_job(object: &Value, config: &Configuration) -> bool {
    let Some(owners) = json::at(object, "/metadata/ownerReferences").and_then(Value::as_array)
    else {
        return false;
    };
    let Some(owner) = owners
        .iter()
        .find(|owner| owner.get("controller").and_then(Value::as_bool) == Some(true))
    else {
        return false;
    };
    let api_version = owner
        .get("apiVersion")
        .and_then(Value::as_str)
        .unwrap_or("");
    let kind = owner.get("kind").and_then(Value::as_str).unwrap_or("");
    let framework_owner = crate::jobs::FRAMEWORKS.iter().any(|framework| {
        let job_kind = framework.kind();
        config.integrations.is_enabled(framework.name())
            && job_kind.api_version() == api_version
            && job_kind.kind == kind
    });
    let external_owner = config
        .integrations
        .external_frameworks
        .iter()
        .any(|external| {
            // `Kind.version.group`, e.g. `AppWrapper.v1beta2.workload.codeflare.dev`.
            let mut parts = external.splitn(3, '.');
            match (parts.next(), parts.next(), parts.next()) {
                (Some(k), Some(version), Some(group)) => {
                    k == kind && api_version == format!("{group}/{version}")
                }
                _ => false,
            }
        });
    framework_owner || external_owner
}

async fn namespace_is_managed(
    state: &dyn ClusterLookup,
    config: &Configuration,
    namespace: &str,
) -> bool {
    let selector = &config.managed_jobs_namespace_selector;
    match state.namespace_labels(namespace).await {
        Some(labels) => selector.matches(&labels),
        None => selector.matches_name(namespace),
    }
}

fn being_deleted(object: &Value) -> bool {
    json::at(object, "/metadata/deletionTimestamp").is_some_and(|t| !t.is_null())
}

// === defaulting ===

/// Kueue's job defaulting, on CREATE: returns the job as it should be stored.
pub async fn default_job(
    framework: &dyn JobFramework,
    config: &Configuration,
    state: &dyn ClusterLookup,
    namespace: &str,
    job: &Value,
) -> Value {
    let mut job = job.clone();
    let owned = owned_by_managed_job(&job, config);

    if crate::jobs::queue_name(&job).is_none()
        && !owned
        && state
            .cached_local_queue(namespace, DEFAULT_LOCAL_QUEUE_NAME)
            .is_some()
        && namespace_is_managed(state, config, namespace).await
    {
        set_label(&mut job, QUEUE_NAME_LABEL, DEFAULT_LOCAL_QUEUE_NAME);
    }

    if config
        .feature_gates
        .enabled(Feature::WorkloadPriorityClassDefaulting)
        && label_or_empty(&job, PRIORITY_CLASS_LABEL).is_empty()
        && !owned
        && state.workload_priority_class_exists(DEFAULT_WORKLOAD_PRIORITY_CLASS_NAME)
    {
        set_label(
            &mut job,
            PRIORITY_CLASS_LABEL,
            DEFAULT_WORKLOAD_PRIORITY_CLASS_NAME,
        );
    }

    let skip = being_deleted(&job)
        && config
            .feature_gates
            .enabled(Feature::SkipAncestorCheckForDeletedWorkloads);
    let suspend = if skip || owned {
        false
    } else if crate::jobs::queue_name(&job).is_some() {
        true
    } else if config.manage_jobs_without_queue_name {
        namespace_is_managed(state, config, namespace).await
    } else {
        false
    };
    if suspend && !framework.is_suspended(&job) {
        framework.set_suspended(&mut job, true);
    }
    job
}

// === Kueue's common validation (`pkg/controller/jobframework/validation.go`) ===

fn validate_label_as_name(job: &Value, key: &str) -> Vec<FieldError> {
    let Some(value) = label(job, key) else {
        return Vec::new();
    };
    let errors = names::dns1123_subdomain(value);
    if errors.is_empty() {
        return Vec::new();
    }
    vec![FieldError::invalid(
        label_path(key),
        value,
        errors.join(","),
    )]
}

fn validate_annotation_as_name(job: &Value, key: &str) -> Vec<FieldError> {
    let Some(value) = annotation(job, key) else {
        return Vec::new();
    };
    let errors = names::dns1123_subdomain(value);
    if errors.is_empty() {
        return Vec::new();
    }
    vec![FieldError::invalid(
        annotation_path(key),
        value,
        errors.join(","),
    )]
}

/// Whether the prebuilt-workload name is read from the annotation.
fn prebuilt_from_annotation(job: &Value, config: &Configuration) -> bool {
    let value = annotation(job, PREBUILT_WORKLOAD_ANNOTATION).unwrap_or("");
    !value.is_empty()
        && (config
            .feature_gates
            .enabled(Feature::WorkloadIdentifierAnnotations)
            || value.len() > LABEL_VALUE_MAX_LENGTH)
}

/// Kueue `PrebuiltWorkloadNameFor`.
fn prebuilt_workload_name<'a>(job: &'a Value, config: &Configuration) -> &'a str {
    let from_annotation = annotation(job, PREBUILT_WORKLOAD_ANNOTATION).unwrap_or("");
    let from_label = label_or_empty(job, PREBUILT_WORKLOAD_LABEL);
    if config
        .feature_gates
        .enabled(Feature::WorkloadIdentifierAnnotations)
    {
        if !from_annotation.is_empty() {
            return from_annotation;
        }
        return from_label;
    }
    if !from_label.is_empty() {
        return from_label;
    }
    if from_annotation.len() > LABEL_VALUE_MAX_LENGTH {
        return from_annotation;
    }
    ""
}

fn prebuilt_path(job: &Value, config: &Configuration) -> String {
    if prebuilt_from_annotation(job, config) {
        annotation_path(PREBUILT_WORKLOAD_ANNOTATION)
    } else {
        label_path(PREBUILT_WORKLOAD_LABEL)
    }
}

fn validate_prebuilt_on_create(
    framework: &dyn JobFramework,
    job: &Value,
    config: &Configuration,
) -> Vec<FieldError> {
    let mut errors = if prebuilt_from_annotation(job, config) {
        validate_annotation_as_name(job, PREBUILT_WORKLOAD_ANNOTATION)
    } else {
        validate_label_as_name(job, PREBUILT_WORKLOAD_LABEL)
    };
    if !prebuilt_workload_name(job, config).is_empty() && !framework.supports_prebuilt_workload() {
        errors.push(FieldError::forbidden(
            prebuilt_path(job, config),
            format!("Is not supported for {:?}", framework.kind().gvk_string()),
        ));
    }
    errors
}

fn validate_max_exec_time_on_create(job: &Value) -> Vec<FieldError> {
    let Some(text) = label(job, MAX_EXEC_TIME_SECONDS_LABEL) else {
        return Vec::new();
    };
    let path = label_path(MAX_EXEC_TIME_SECONDS_LABEL);
    match go_atoi(text) {
        Err(message) => vec![FieldError::invalid(path, text, message)],
        Ok(value) if value <= 0 => {
            vec![FieldError::invalid(path, value, "should be greater than 0")]
        }
        Ok(_) => Vec::new(),
    }
}

/// Kueue `ValidateJobOnCreate`.
pub fn validate_on_create(
    framework: &dyn JobFramework,
    job: &Value,
    config: &Configuration,
) -> Vec<FieldError> {
    let mut errors = validate_label_as_name(job, QUEUE_NAME_LABEL);
    errors.extend(validate_prebuilt_on_create(framework, job, config));
    errors.extend(validate_max_exec_time_on_create(job));
    let mut violations = errors;
    if config.feature_gates.enabled(Feature::AdmissionGatedBy) {
        violations.extend(kueue::admission_gated_by_on_create(job));
    }
    violations
}

fn immutable_text(new: &str, old: &str, field: &str) -> Vec<FieldError> {
    kueue::immutable(&new, &old, field)
}

/// Kueue `ValidateJobOnUpdate`.
pub fn validate_on_update(
    framework: &dyn JobFramework,
    old: &Value,
    new: &Value,
    default_queue_exists: bool,
    config: &Configuration,
) -> Vec<FieldError> {
    let new_suspended = framework.is_suspended(new);
    let old_suspended = framework.is_suspended(old);
    let queue_path = label_path(QUEUE_NAME_LABEL);
    let new_queue = label_or_empty(new, QUEUE_NAME_LABEL);
    let old_queue = label_or_empty(old, QUEUE_NAME_LABEL);

    let mut errors = Vec::new();
    if !new_suspended {
        errors.extend(immutable_text(new_queue, old_queue, &queue_path));
    }
    if new_queue.is_empty() && !old_queue.is_empty() && default_queue_exists {
        errors.push(FieldError::invalid(
            &queue_path,
            "",
            "queue-name must not be empty in namespace with default queue",
        ));
    }

    if new_suspended {
        errors.extend(validate_prebuilt_on_create(framework, new, config));
    } else {
        errors.extend(immutable_text(
            prebuilt_workload_name(new, config),
            prebuilt_workload_name(old, config),
            &prebuilt_path(new, config),
        ));
    }

    if !new_suspended || !old_suspended {
        errors.extend(immutable_text(
            label_or_empty(new, MAX_EXEC_TIME_SECONDS_LABEL),
            label_or_empty(old, MAX_EXEC_TIME_SECONDS_LABEL),
            &label_path(MAX_EXEC_TIME_SECONDS_LABEL),
        ));
    }

    let old_class = label_or_empty(old, PRIORITY_CLASS_LABEL);
    let new_class = label_or_empty(new, PRIORITY_CLASS_LABEL);
    let class_path = label_path(PRIORITY_CLASS_LABEL);
    if !new_suspended && old_class.is_empty() && !new_class.is_empty() {
        errors.push(FieldError::invalid(
            &class_path,
            new_class,
            "WorkloadPriorityClass cannot be added to a non-suspended workload",
        ));
    } else if new_class.is_empty() && !old_class.is_empty() {
        errors.push(FieldError::invalid(
            &class_path,
            new_class,
            "WorkloadPriorityClass cannot be removed from a workload",
        ));
    }

    let mut violations = errors;
    if config.feature_gates.enabled(Feature::AdmissionGatedBy) {
        violations.extend(kueue::admission_gated_by_on_update(old, new));
    }
    violations
}

/// Splits errors into those a framework combines with its own and those reported after them
/// (a gate name too long), in the order Kuota has always reported them.
fn split(violations: Vec<FieldError>) -> (Vec<FieldError>, Vec<FieldError>) {
    violations
        .into_iter()
        .partition(|error| !matches!(error.error_type, ErrorType::TooLong | ErrorType::NotFound))
}

/// Kueue's validation of a job (common rules combined by the kind's own webhook); the
/// violations in the order Kueue reports them. Errors field errors cannot express (a gate name
/// too long) come last.
pub fn kueue_violations(
    framework: &dyn JobFramework,
    old: Option<&Value>,
    new: &Value,
    pod_sets: Option<&[PodSet]>,
    default_queue_exists: bool,
    config: &Configuration,
) -> Vec<FieldError> {
    let (common_on_create, mut extra) = split(validate_on_create(framework, new, config));
    let common_on_update = match old {
        Some(old) => {
            let (errors, others) = split(validate_on_update(
                framework,
                old,
                new,
                default_queue_exists,
                config,
            ));
            extra.extend(others);
            errors
        }
        None => Vec::new(),
    };
    let mut errors = framework.validate(ValidationInput {
        old,
        new,
        manage_jobs_without_queue_name: config.manage_jobs_without_queue_name,
        common_on_create,
        common_on_update,
    });
    if let Some(pod_sets) = pod_sets {
        errors.extend(crate::jobs::topology::validate(
            framework,
            new,
            pod_sets,
            config.topology_gates(),
        ));
    }
    errors.into_iter().chain(extra).collect()
}

// === Kuota's queue-reference checks ===

#[derive(Default)]
struct Findings {
    /// Problems that keep the job from ever being admitted.
    problems: Vec<String>,
    /// Problems that may go away.
    warnings: Vec<String>,
}

fn stop_policy_name(policy: StopPolicy) -> Option<&'static str> {
    match policy {
        StopPolicy::None => None,
        StopPolicy::Hold => Some("Hold"),
        StopPolicy::HoldAndDrain => Some("HoldAndDrain"),
    }
}

/// `pod_sets` are the job's as its framework builds them, `None` if it cannot.
async fn check_queue_references(
    pod_sets: Option<&[PodSet]>,
    config: &Configuration,
    state: &dyn ClusterLookup,
    namespace: &str,
    job: &Value,
    queue: &str,
) -> Findings {
    let mut findings = Findings::default();
    let Some(local_queue) = state.local_queue(namespace, queue).await else {
        let names = state.local_queue_names(namespace);
        let known = if names.is_empty() {
            format!("there are no LocalQueues in {namespace:?}")
        } else {
            format!("LocalQueues in {namespace:?}: {}", names.join(", "))
        };
        findings.problems.push(format!(
            "LocalQueue {queue:?} does not exist in namespace {namespace:?}; {known}"
        ));
        return findings;
    };
    if let Some(policy) = local_queue.spec.stop_policy.and_then(stop_policy_name) {
        findings.warnings.push(format!(
            "LocalQueue {queue:?} is stopped (stopPolicy {policy}): the job waits until it is resumed"
        ));
    }
    let Some(cq_name) = local_queue
        .spec
        .cluster_queue
        .as_deref()
        .filter(|name| !name.is_empty())
    else {
        findings
            .problems
            .push(format!("LocalQueue {queue:?} does not name a ClusterQueue"));
        return findings;
    };
    let Some(cluster_queue) = state.cluster_queue(cq_name).await else {
        findings.problems.push(format!(
            "LocalQueue {queue:?} points to ClusterQueue {cq_name:?}, which does not exist; {}",
            match state.cluster_queue_names() {
                names if names.is_empty() => "there are no ClusterQueues".to_owned(),
                names => format!("ClusterQueues: {}", names.join(", ")),
            }
        ));
        return findings;
    };
    if let Some(policy) = cluster_queue.spec.stop_policy.and_then(stop_policy_name) {
        findings.warnings.push(format!(
            "ClusterQueue {cq_name:?} is stopped (stopPolicy {policy}): the job waits until it is resumed"
        ));
    }

    let objects = with_queue(state.quota_objects(), &cluster_queue);
    let mut missing: Vec<&str> = cluster_queue
        .spec
        .resource_groups
        .iter()
        .flat_map(|group| group.flavors.iter().map(|flavor| flavor.name.as_str()))
        .filter(|name| {
            !objects
                .resource_flavors
                .iter()
                .any(|flavor| flavor.metadata.name.as_deref() == Some(*name))
        })
        .collect();
    missing.sort();
    missing.dedup();
    if !missing.is_empty() {
        findings.warnings.push(format!(
            "ClusterQueue {cq_name:?} references missing ResourceFlavor(s): {}: the job waits until they exist",
            missing.join(", ")
        ));
    }

    if let Some(warning) = namespace_warning(state, cq_name, &cluster_queue, namespace).await {
        findings.warnings.push(warning);
    }

    let class = label_or_empty(job, PRIORITY_CLASS_LABEL);
    if !class.is_empty() && !state.workload_priority_class_exists(class) {
        findings
            .warnings
            .push(format!("WorkloadPriorityClass {class:?} does not exist"));
    }

    findings.problems.extend(
        capacity_problems(pod_sets, config, state, namespace, &cluster_queue, objects).await,
    );
    findings
}

/// `objects` with `cluster_queue` in it (it may have been read live, ahead of the cache).
fn with_queue(mut objects: QuotaObjects, cluster_queue: &Arc<ClusterQueue>) -> QuotaObjects {
    let name = &cluster_queue.metadata.name;
    objects
        .cluster_queues
        .retain(|queue| queue.metadata.name != *name);
    objects.cluster_queues.push(cluster_queue.clone());
    objects
}

async fn namespace_warning(
    state: &dyn ClusterLookup,
    cq_name: &str,
    cluster_queue: &ClusterQueue,
    namespace: &str,
) -> Option<String> {
    let refusal = |why: &str| {
        format!(
            "ClusterQueue {cq_name:?} does not admit workloads from namespace {namespace:?}: {why}"
        )
    };
    let Some(selector) = &cluster_queue.spec.namespace_selector else {
        return Some(refusal(
            "it has no namespaceSelector; namespaceSelector: {} admits every namespace",
        ));
    };
    let labels = state.namespace_labels(namespace).await?;
    let selector = Selector::try_from(selector.clone()).ok()?;
    (!selector.matches(&labels))
        .then(|| refusal("its namespaceSelector does not match the namespace's labels"))
}

async fn capacity_problems(
    pod_sets: Option<&[PodSet]>,
    config: &Configuration,
    state: &dyn ClusterLookup,
    namespace: &str,
    cluster_queue: &Arc<ClusterQueue>,
    objects: QuotaObjects,
) -> Vec<String> {
    // A job whose PodSets cannot be built, or too many of them, is refused by its validation.
    let Some(pod_sets) = pod_sets.filter(|pod_sets| pod_sets.len() <= MAX_POD_SETS) else {
        return Vec::new();
    };
    let demands = match capacity::demands(
        pod_sets,
        &state.limit_ranges(namespace),
        &config.resources,
        config.feature_gates.enabled(Feature::PartialAdmission),
    ) {
        Ok(demands) => demands,
        Err(err) => {
            warn!(%err, "cannot compute the job's requests; skipping the capacity check");
            return Vec::new();
        }
    };
    let name = kube::ResourceExt::name_any(cluster_queue.as_ref());
    let verdict = |objects: &QuotaObjects| match state.quota_snapshot(objects) {
        Ok(snapshot) => capacity::never_fits(
            &snapshot,
            &name,
            &demands,
            config.resources.quota_check_strategy,
        ),
        Err(err) => {
            warn!(%err, "cannot read quotas; skipping the capacity check");
            Vec::new()
        }
    };
    let problems = verdict(&objects);
    if problems.is_empty() {
        return problems;
    }
    // The caches may lag (a cohort member or a raised quota applied together with the job):
    // confirm with the API server before refusing.
    match state.live_quota_objects().await {
        Some(live) => {
            let live_queue = live
                .cluster_queues
                .iter()
                .find(|queue| kube::ResourceExt::name_any(queue.as_ref()) == name)
                .cloned();
            match live_queue {
                Some(queue) => verdict(&with_queue(live, &queue)),
                None => verdict(&with_queue(live, cluster_queue)),
            }
        }
        None => problems,
    }
}

/// Kueue's and Kuota's validation of a job on CREATE (`old` = `None`) or UPDATE.
pub async fn validate_job(
    framework: &dyn JobFramework,
    config: &Configuration,
    state: &dyn ClusterLookup,
    namespace: &str,
    old: Option<&Value>,
    new: &Value,
) -> JobVerdict {
    let default_queue_exists = old.is_some()
        && state
            .cached_local_queue(namespace, DEFAULT_LOCAL_QUEUE_NAME)
            .is_some();
    // Built once: the topology checks and the capacity check both read them.
    let pod_sets = framework.build_pod_sets(new).ok();
    let violations = kueue_violations(
        framework,
        old,
        new,
        pod_sets.as_deref(),
        default_queue_exists,
        config,
    );
    if let Some(message) = aggregate(&violations) {
        return JobVerdict {
            denial: Some(message),
            warnings: Vec::new(),
        };
    }

    let Some(queue) = crate::jobs::queue_name(new) else {
        return JobVerdict::default();
    };
    let queue_changed = old.is_some_and(|old| crate::jobs::queue_name(old) != Some(queue));
    if (old.is_some() && !queue_changed)
        || framework.skip(new)
        || owned_by_managed_job(new, config)
        || !namespace_is_managed(state, config, namespace).await
    {
        return JobVerdict::default();
    }
    let findings =
        check_queue_references(pod_sets.as_deref(), config, state, namespace, new, queue).await;
    let mut verdict = JobVerdict::default();
    if !findings.problems.is_empty() {
        let message = findings.problems.join("; ");
        match config.queue_reference_policy {
            QueueReferencePolicy::Reject => verdict.denial = Some(message),
            QueueReferencePolicy::Warn => verdict.warnings.extend(findings.problems),
        }
    }
    verdict.warnings.extend(findings.warnings);
    verdict
}

#[cfg(test)]
mod tests;
