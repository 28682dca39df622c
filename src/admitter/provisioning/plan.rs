//! What the ProvisioningRequest check does, decided from one snapshot of the cluster: which of
//! its AdmissionChecks are active, which check states a Workload holding quota gets from its
//! ProvisioningRequests, which requests (with their PodTemplates) to create and which to delete.
//! Kueue's `pkg/controller/admissionchecks/provisioning` is the reference for every rule here.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use jiff::Timestamp;
use k8s_openapi::api::core::v1::{PodSpec, PodTemplate};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, ObjectMeta, OwnerReference, Time};
use kube::{Resource, ResourceExt};

use super::request::{
    self, CLASS_ANNOTATION, CONSUME_ANNOTATION, PodTemplateReference, ProvisioningRequest,
    ProvisioningRequestSpec, RequestPodSet,
};
use crate::admitter::jobs::requeue_backoff;
use crate::api::constants::{
    MANAGED_LABEL, PROVISIONING_REQUEST_ANNOTATION_PREFIX, PROVISIONING_REQUEST_CONTROLLER_NAME,
    condition,
};
use crate::api::v1beta2::{
    AdmissionCheck, AdmissionCheckState, CheckState, PodSet, PodSetAssignment, PodSetMergePolicy,
    PodSetUpdate, ProvisioningRequestConfig, ResourceFlavor, Workload,
};
use crate::jobs::PodSetInfo;
use crate::k8s::conditions::{self, MAX_CONDITION_MESSAGE, new_condition, truncate_message};

/// State message of a check whose configuration is missing or not usable.
pub const CHECK_INACTIVE_MESSAGE: &str = "the check is not active";
/// State message of a check whose workload needs no capacity from the autoscaler.
pub const NO_REQUEST_NEEDED: &str = "the provisioning request is not needed";

/// The objects a decision reads.
pub struct Snapshot<'a> {
    pub checks: &'a [Arc<AdmissionCheck>],
    pub configs: &'a [Arc<ProvisioningRequestConfig>],
    pub flavors: &'a [Arc<ResourceFlavor>],
    pub workloads: &'a [Arc<Workload>],
    /// The ProvisioningRequests Kuota created (label `kueue.x-k8s.io/managed`).
    pub requests: &'a [Arc<ProvisioningRequest>],
    /// `CleanupProvisioningRequestsOnEviction`: an evicted workload's requests are deleted.
    pub cleanup_on_eviction: bool,
    pub now: Timestamp,
}

/// One write.
#[derive(Clone, Debug, PartialEq)]
pub enum Action {
    /// Sets the `Active` condition of a check.
    SetActive { check: String, condition: Condition },
    /// Writes the workload's check states (guarded by its resourceVersion), then records one
    /// `AdmissionCheckUpdated` event per note.
    SetCheckStates {
        workload: Arc<Workload>,
        states: Vec<AdmissionCheckState>,
        notes: Vec<String>,
    },
    /// Creates the PodTemplates owned by the workload, then the request, then hands the
    /// templates to the request; records `ProvisioningRequestCreated`.
    Provision {
        workload: Arc<Workload>,
        templates: Vec<PodTemplate>,
        request: Box<ProvisioningRequest>,
    },
    /// Deletes a request no longer needed.
    Delete { namespace: String, name: String },
}

/// Every write the snapshot calls for.
pub fn plan(snapshot: &Snapshot<'_>) -> Vec<Action> {
    let mut actions: Vec<Action> = snapshot
        .checks
        .iter()
        .filter_map(|check| active_condition(snapshot, check))
        .collect();
    let known: BTreeSet<&str> = snapshot
        .workloads
        .iter()
        .filter_map(|workload| workload.meta().uid.as_deref())
        .collect();
    // A request whose workload left the store (finished, or deleted) is not needed any more.
    for request in snapshot.requests {
        if owner_uid(request).is_none_or(|uid| !known.contains(uid)) {
            actions.push(delete(request));
        }
    }
    for workload in snapshot.workloads {
        actions.extend(workload_actions(snapshot, workload));
    }
    actions
}

/// The check's `Active` condition when it must change: active while its parameters name an
/// existing ProvisioningRequestConfig, else `BadParametersRef` saying why.
fn active_condition(snapshot: &Snapshot<'_>, check: &AdmissionCheck) -> Option<Action> {
    if check.spec.controller_name != PROVISIONING_REQUEST_CONTROLLER_NAME {
        return None;
    }
    let generation = check.meta().generation;
    let wanted = match config_of(snapshot, check) {
        Ok(_) => new_condition(condition::ACTIVE, true, "Active")
            .message("The admission check is active")
            .generation(generation)
            .at(snapshot.now),
        Err(why) => new_condition(condition::ACTIVE, false, "BadParametersRef")
            .message(&why)
            .generation(generation)
            .at(snapshot.now),
    };
    let current = check
        .status
        .as_ref()
        .and_then(|status| conditions::find(&status.conditions, condition::ACTIVE));
    current
        .is_none_or(|current| current.status != wanted.status)
        .then(|| Action::SetActive {
            check: check.name_any(),
            condition: wanted,
        })
}

/// The ProvisioningRequestConfig a check's parameters name, or Kueue's error saying what is
/// wrong with the reference.
fn config_of<'a>(
    snapshot: &Snapshot<'a>,
    check: &AdmissionCheck,
) -> Result<&'a ProvisioningRequestConfig, String> {
    const BAD: &str = "bad parameters reference";
    let group = ProvisioningRequestConfig::group(&());
    let kind = ProvisioningRequestConfig::kind(&());
    let reference = check
        .spec
        .parameters
        .as_ref()
        .ok_or_else(|| "missing parameters reference".to_owned())?;
    if reference.name.is_empty() {
        return Err(format!("empty name: {BAD}"));
    }
    if reference.api_group != group {
        return Err(format!(
            "wrong group {:?}, expecting {group:?}: {BAD}",
            reference.api_group
        ));
    }
    if reference.kind != kind {
        return Err(format!(
            "wrong kind {:?}, expecting {kind:?}: {BAD}",
            reference.kind
        ));
    }
    snapshot
        .configs
        .iter()
        .find(|config| config.name_any() == reference.name)
        .map(Arc::as_ref)
        .ok_or_else(|| {
            format!(
                "{}.{group} {:?} not found",
                ProvisioningRequestConfig::plural(&()),
                reference.name
            )
        })
}

/// Kueue's provisioning reconciler for one workload: requests of an evicted workload deleted,
/// check states synced from the requests, stale requests deleted, missing ones created.
fn workload_actions(snapshot: &Snapshot<'_>, workload: &Arc<Workload>) -> Vec<Action> {
    let evicted = workload.is_condition_true(condition::EVICTED);
    let Some(admission) = workload.reservation().filter(|_| !evicted) else {
        if evicted && snapshot.cleanup_on_eviction {
            return owned_requests(snapshot, workload).map(delete).collect();
        }
        return Vec::new();
    };
    let current = workload
        .status
        .as_ref()
        .map(|status| status.admission_checks.as_slice())
        .unwrap_or_default();
    let mut configs: BTreeMap<&str, Option<&ProvisioningRequestConfig>> = BTreeMap::new();
    for state in current {
        if let Some(check) = snapshot.checks.iter().find(|check| {
            check.name_any() == state.name
                && check.spec.controller_name == PROVISIONING_REQUEST_CONTROLLER_NAME
        }) {
            configs.insert(&state.name, config_of(snapshot, check).ok());
        }
    }
    if configs.is_empty() {
        return Vec::new();
    }
    let mut needed: BTreeMap<&str, bool> = BTreeMap::new();
    for (check, config) in &configs {
        if let Some(config) = config {
            let Some(is_needed) = request_needed(workload, &admission.pod_set_assignments, config)
            else {
                tracing::warn!(
                    workload = %workload.name_any(),
                    "a PodSet has no assignment; the ProvisioningRequest check waits"
                );
                return Vec::new();
            };
            needed.insert(check, is_needed);
        }
    }
    let owned: Vec<&Arc<ProvisioningRequest>> = owned_requests(snapshot, workload).collect();
    let mut latest: BTreeMap<&str, &ProvisioningRequest> = BTreeMap::new();
    for (check, config) in &configs {
        let Some(config) = config else { continue };
        if !needed[check] {
            continue;
        }
        for request in &owned {
            let Some(attempt) = attempt_of(&request.name_any(), &workload.name_any(), check) else {
                continue;
            };
            if !synced_with_config(request, config) {
                continue;
            }
            let newer = latest.get(check).is_none_or(|kept| {
                attempt_of(&kept.name_any(), &workload.name_any(), check) < Some(attempt)
            });
            if newer {
                latest.insert(check, request);
            }
        }
    }

    let mut actions = Vec::new();
    let mut states = current.to_vec();
    let mut notes = Vec::new();
    for (check, config) in &configs {
        let Some(state) = states.iter_mut().find(|state| state.name == *check) else {
            continue;
        };
        let before = state.clone();
        match config {
            None => {
                state.state = CheckState::Pending;
                state.message = CHECK_INACTIVE_MESSAGE.to_owned();
            }
            Some(_) if !needed[check] => {
                if state.state != CheckState::Ready {
                    state.state = CheckState::Ready;
                    state.message = NO_REQUEST_NEEDED.to_owned();
                    state.pod_set_updates = Vec::new();
                }
            }
            Some(config) => {
                let Some(request) = latest.get(check) else {
                    continue;
                };
                let attempt = attempt_of(&request.name_any(), &workload.name_any(), check);
                sync_state(state, workload, request, config, attempt.unwrap_or(1));
            }
        }
        if *state == before {
            continue;
        }
        if state.state != before.state {
            state.last_transition_time = Time(snapshot.now);
            let mut note = format!(
                "Admission check {check} updated state from {:?} to {:?}",
                before.state, state.state
            );
            if !state.message.is_empty() {
                note.push_str(&format!(" with message: {}", state.message));
            }
            notes.push(note);
        }
        state.message = truncate_message(&state.message, MAX_CONDITION_MESSAGE);
    }
    if states != current {
        actions.push(Action::SetCheckStates {
            workload: workload.clone(),
            states: states.clone(),
            notes,
        });
    }

    let kept: BTreeSet<String> = latest.values().map(|request| request.name_any()).collect();
    actions.extend(
        owned
            .iter()
            .filter(|request| !kept.contains(&request.name_any()))
            .map(|request| delete(request)),
    );

    for (check, config) in &configs {
        let Some(config) = config else { continue };
        if !needed[check] {
            continue;
        }
        let state = states.iter().find(|state| state.name == *check);
        if state.is_some_and(|state| state.state == CheckState::Ready) {
            continue;
        }
        let mut attempt = state
            .map(|state| state.retry_count.unwrap_or(0) + 1)
            .unwrap_or(1);
        let create = match latest.get(check) {
            None => true,
            Some(request) => {
                let spent = request.true_condition(request::condition::FAILED).is_some()
                    || (request
                        .true_condition(request::condition::BOOKING_EXPIRED)
                        .is_some()
                        && !workload.is_condition_true(condition::ADMITTED));
                let pending = state.is_some_and(|state| state.state == CheckState::Pending);
                if spent && pending {
                    attempt = attempt_of(&request.name_any(), &workload.name_any(), check)
                        .unwrap_or(1)
                        + 1;
                }
                spent && pending
            }
        };
        if create {
            match provision(snapshot, workload, check, config, attempt) {
                Ok(action) => actions.push(action),
                Err(why) => tracing::warn!(
                    workload = %workload.name_any(),
                    check,
                    %why,
                    "cannot build the ProvisioningRequest"
                ),
            }
        }
    }
    actions
}

/// The check state the request calls for (Kueue's `syncCheckStates`).
fn sync_state(
    state: &mut AdmissionCheckState,
    workload: &Workload,
    request: &ProvisioningRequest,
    config: &ProvisioningRequestConfig,
    attempt: i32,
) {
    let strategy = config.spec.retry_strategy.clone().unwrap_or_default();
    let limit = strategy.backoff_limit_count.unwrap_or(3);
    let base = strategy.backoff_base_seconds.unwrap_or(60);
    let max = strategy.backoff_max_seconds.unwrap_or(1800);
    let message_of = |type_: &str| {
        request
            .condition(type_)
            .map(|condition| condition.message.clone())
            .unwrap_or_default()
    };
    let retry_or_reject = |state: &mut AdmissionCheckState, what: &str, type_: &str| {
        if attempt <= limit {
            state.message = format!("Retrying after {what}: {}", message_of(type_));
            if attempt > state.retry_count.unwrap_or(0) {
                state.state = CheckState::Retry;
                let count = state.retry_count.unwrap_or(0) + 1;
                let wait = requeue_backoff(
                    count,
                    u32::try_from(base).unwrap_or(0),
                    u32::try_from(max).unwrap_or(0),
                );
                state.requeue_after_seconds = i32::try_from(wait.as_secs()).ok();
            }
        } else {
            state.state = CheckState::Rejected;
            state.message = message_of(type_);
        }
    };
    if request.true_condition(request::condition::FAILED).is_some() {
        retry_or_reject(state, "failure", request::condition::FAILED);
    } else if request
        .true_condition(request::condition::CAPACITY_REVOKED)
        .is_some()
    {
        if workload.spec.is_active() && !workload.is_condition_true(condition::FINISHED) {
            state.state = CheckState::Rejected;
            state.message = message_of(request::condition::CAPACITY_REVOKED);
        }
    } else if request
        .true_condition(request::condition::BOOKING_EXPIRED)
        .is_some()
    {
        if !workload.is_condition_true(condition::ADMITTED) {
            retry_or_reject(
                state,
                "booking expired",
                request::condition::BOOKING_EXPIRED,
            );
        }
    } else if request
        .true_condition(request::condition::PROVISIONED)
        .is_some()
    {
        if state.state != CheckState::Ready {
            state.state = CheckState::Ready;
            state.pod_set_updates = pod_set_updates(workload, request, config);
            state.message = message_of(request::condition::PROVISIONED);
        }
    } else if request
        .true_condition(request::condition::ACCEPTED)
        .is_some()
    {
        if let Some(provisioned) = request.condition(request::condition::PROVISIONED) {
            state.message = provisioned.message.clone();
            state.state = CheckState::Pending;
        }
    } else {
        state.message = String::new();
        state.state = CheckState::Pending;
    }
}

/// What a provisioned request adds to each PodSet's pods: the annotations that let them use
/// the capacity, and the configured node selectors from the class details.
fn pod_set_updates(
    workload: &Workload,
    request: &ProvisioningRequest,
    config: &ProvisioningRequestConfig,
) -> Vec<PodSetUpdate> {
    let name = request.name_any();
    let details = request
        .status
        .as_ref()
        .map(|status| &status.provisioning_class_details);
    request
        .spec
        .pod_sets
        .iter()
        .map(|pod_set| {
            let pod_set_name = workload
                .spec
                .pod_sets
                .iter()
                .find(|ours| template_name(&name, &ours.name) == pod_set.pod_template_ref.name)
                .map(|ours| ours.name.clone())
                .unwrap_or_default();
            let node_selector = config
                .spec
                .pod_set_updates
                .as_ref()
                .map(|updates| {
                    updates
                        .node_selector
                        .iter()
                        .filter_map(|entry| {
                            let value =
                                details?.get(&entry.value_from_provisioning_class_detail)?;
                            Some((entry.key.clone(), value.clone()))
                        })
                        .collect()
                })
                .unwrap_or_default();
            PodSetUpdate {
                name: pod_set_name,
                annotations: BTreeMap::from([
                    (CONSUME_ANNOTATION.to_owned(), name.clone()),
                    (
                        CLASS_ANNOTATION.to_owned(),
                        request.spec.provisioning_class_name.clone(),
                    ),
                ]),
                node_selector,
                ..PodSetUpdate::default()
            }
        })
        .collect()
}

/// Whether a requested PodSet has pods assigned; `None` when one has no assignment.
fn request_needed(
    workload: &Workload,
    assignments: &[PodSetAssignment],
    config: &ProvisioningRequestConfig,
) -> Option<bool> {
    for pod_set in requested_pod_sets(workload, config) {
        let assignment = assignments
            .iter()
            .find(|assignment| assignment.name == pod_set.name)?;
        if assignment.count.unwrap_or(pod_set.count) > 0 {
            return Some(true);
        }
    }
    Some(false)
}

/// The PodSets with pods that use a managed resource, all when the config lists none
/// (Kueue's `requiredPodSets`).
fn requested_pod_sets<'a>(
    workload: &'a Workload,
    config: &'a ProvisioningRequestConfig,
) -> impl Iterator<Item = &'a PodSet> + 'a {
    let managed = &config.spec.managed_resources;
    workload.spec.pod_sets.iter().filter(move |pod_set| {
        pod_set.count > 0
            && (managed.is_empty() || uses(pod_set.template.decode().spec.as_ref(), managed))
    })
}

/// Whether a container or init container of the pod requests or limits one of `resources`.
fn uses(spec: Option<&PodSpec>, resources: &[String]) -> bool {
    let Some(spec) = spec else { return false };
    spec.containers
        .iter()
        .chain(spec.init_containers.iter().flatten())
        .filter_map(|container| container.resources.as_ref())
        .flat_map(|resources| {
            let requests = resources.requests.iter().flatten();
            let limits = resources.limits.iter().flatten();
            requests.chain(limits).map(|(name, _)| name)
        })
        .any(|name| resources.contains(name))
}

/// The request still carries the config's class and parameters.
fn synced_with_config(request: &ProvisioningRequest, config: &ProvisioningRequestConfig) -> bool {
    request.spec.provisioning_class_name == config.spec.provisioning_class_name
        && config
            .spec
            .parameters
            .iter()
            .all(|(key, value)| request.spec.parameters.get(key) == Some(value))
}

/// The new request (attempt `attempt`) and its PodTemplates, one per PodSet with pods, merged
/// as the config's `podSetMergePolicy` allows.
fn provision(
    snapshot: &Snapshot<'_>,
    workload: &Arc<Workload>,
    check: &str,
    config: &ProvisioningRequestConfig,
    attempt: i32,
) -> Result<Action, String> {
    let namespace = workload.namespace().unwrap_or_default();
    let name = request_name(&workload.name_any(), check, attempt);
    let owner = controller_reference(workload.as_ref());
    let admission = workload
        .reservation()
        .ok_or_else(|| "no quota reserved".to_owned())?;
    let mut parameters = config.spec.parameters.clone();
    for (key, value) in workload.annotations() {
        if let Some(parameter) = key.strip_prefix(PROVISIONING_REQUEST_ANNOTATION_PREFIX) {
            parameters.insert(parameter.to_owned(), value.clone());
        }
    }
    let mut merged: Vec<(&PodSet, &PodSetAssignment, i32)> = Vec::new();
    for pod_set in requested_pod_sets(workload, config) {
        let assignment = admission
            .pod_set_assignments
            .iter()
            .find(|assignment| assignment.name == pod_set.name)
            .ok_or_else(|| format!("PodSet {:?} has no assignment", pod_set.name))?;
        let count = assignment.count.unwrap_or(pod_set.count);
        if count <= 0 {
            continue;
        }
        let joined = config.spec.pod_set_merge_policy.and_then(|policy| {
            merged
                .iter_mut()
                .find(|(kept, _, _)| can_merge(kept, pod_set, policy))
        });
        match joined {
            Some((_, _, total)) => *total += count,
            None => merged.push((pod_set, assignment, count)),
        }
    }
    let mut templates = Vec::new();
    let mut pod_sets = Vec::new();
    for (pod_set, assignment, count) in merged {
        let template_name = template_name(&name, &pod_set.name);
        let mut info = PodSetInfo {
            name: pod_set.name.clone(),
            count,
            ..PodSetInfo::default()
        };
        let mut seen = BTreeSet::new();
        for flavor in assignment.flavors.values() {
            if !seen.insert(flavor) {
                continue;
            }
            let spec = &snapshot
                .flavors
                .iter()
                .find(|known| known.name_any() == *flavor)
                .ok_or_else(|| format!("ResourceFlavor {flavor:?} not found"))?
                .spec;
            info.add_flavor(&spec.node_labels, &spec.tolerations);
        }
        let mut template = pod_set.template.decode();
        crate::jobs::merge_into_pod_template(&mut template, &info).map_err(|e| e.to_string())?;
        if let Some(spec) = template.spec.as_mut() {
            use_limits_as_missing_requests(spec);
        }
        templates.push(PodTemplate {
            metadata: ObjectMeta {
                name: Some(template_name.clone()),
                namespace: Some(namespace.clone()),
                labels: Some(BTreeMap::from([(
                    MANAGED_LABEL.to_owned(),
                    "true".to_owned(),
                )])),
                owner_references: Some(vec![owner.clone()]),
                ..ObjectMeta::default()
            },
            template: Some(template),
        });
        pod_sets.push(RequestPodSet {
            pod_template_ref: PodTemplateReference {
                name: template_name,
            },
            count,
        });
    }
    let mut request = ProvisioningRequest::new(
        &name,
        ProvisioningRequestSpec {
            provisioning_class_name: config.spec.provisioning_class_name.clone(),
            parameters,
            pod_sets,
        },
    );
    request.metadata.namespace = Some(namespace);
    request.metadata.labels = Some(BTreeMap::from([(
        MANAGED_LABEL.to_owned(),
        "true".to_owned(),
    )]));
    request.metadata.owner_references = Some(vec![owner]);
    Ok(Action::Provision {
        workload: workload.clone(),
        templates,
        request: Box::new(request),
    })
}

/// Kueue's merge rules: identical templates, or the same scheduling requirements (container
/// requests, node selector, tolerations, affinity, resource claims).
fn can_merge(a: &PodSet, b: &PodSet, policy: PodSetMergePolicy) -> bool {
    match policy {
        PodSetMergePolicy::IdenticalPodTemplates => a.template == b.template,
        PodSetMergePolicy::IdenticalWorkloadSchedulingRequirements => {
            let (a_spec, b_spec) = (a.template.decode().spec, b.template.decode().spec);
            let (Some(a), Some(b)) = (&a_spec, &b_spec) else {
                return a_spec == b_spec;
            };
            let requests = |containers: &[k8s_openapi::api::core::v1::Container]| {
                containers
                    .iter()
                    .map(|c| c.resources.as_ref().and_then(|r| r.requests.clone()))
                    .collect::<Vec<_>>()
            };
            requests(&a.containers) == requests(&b.containers)
                && requests(a.init_containers.as_deref().unwrap_or_default())
                    == requests(b.init_containers.as_deref().unwrap_or_default())
                && a.resources == b.resources
                && a.node_selector == b.node_selector
                && a.tolerations == b.tolerations
                && a.affinity == b.affinity
                && a.resource_claims == b.resource_claims
        }
    }
}

/// Kueue's `UseLimitsAsMissingRequestsInPod`: a limit without a request becomes the request,
/// in every container, init container and the pod-level resources.
fn use_limits_as_missing_requests(spec: &mut PodSpec) {
    let containers = spec
        .containers
        .iter_mut()
        .chain(spec.init_containers.iter_mut().flatten())
        .filter_map(|container| container.resources.as_mut());
    for resources in containers.chain(spec.resources.as_mut()) {
        let Some(limits) = resources.limits.clone() else {
            continue;
        };
        let requests = resources.requests.get_or_insert_default();
        for (name, quantity) in limits {
            requests.entry(name).or_insert(quantity);
        }
    }
}

fn controller_reference(workload: &Workload) -> OwnerReference {
    OwnerReference {
        api_version: Workload::api_version(&()).into_owned(),
        kind: Workload::kind(&()).into_owned(),
        name: workload.name_any(),
        uid: workload.uid().unwrap_or_default(),
        controller: Some(true),
        block_owner_deletion: Some(true),
    }
}

/// The uid of the Workload controlling the request.
fn owner_uid(request: &ProvisioningRequest) -> Option<&str> {
    request
        .owner_references()
        .iter()
        .find(|owner| owner.controller == Some(true) && owner.kind == Workload::kind(&()))
        .map(|owner| owner.uid.as_str())
}

fn owned_requests<'a>(
    snapshot: &Snapshot<'a>,
    workload: &'a Workload,
) -> impl Iterator<Item = &'a Arc<ProvisioningRequest>> + 'a {
    let uid = workload.uid();
    let namespace = workload.namespace();
    snapshot.requests.iter().filter(move |request| {
        request.namespace() == namespace && uid.is_some() && owner_uid(request) == uid.as_deref()
    })
}

fn delete(request: &Arc<ProvisioningRequest>) -> Action {
    Action::Delete {
        namespace: request.namespace().unwrap_or_default(),
        name: request.name_any(),
    }
}

/// Longest name kept whole; longer ones are cut and given a hash suffix (Kueue's limit).
const NAME_PREFIX_LIMIT: usize = 252 - NAME_HASH_LENGTH;
const NAME_HASH_LENGTH: usize = 5;

/// Kueue's `limitObjectName`: names up to the limit unchanged, longer ones cut to it plus `-`
/// and the first five hex digits of the SHA-1 of the whole name.
pub fn limit_object_name(full: &str) -> String {
    if full.len() <= NAME_PREFIX_LIMIT {
        return full.to_owned();
    }
    let digest = sha1_smol::Sha1::from(full).digest().to_string();
    let mut end = NAME_PREFIX_LIMIT;
    while !full.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}-{}", &full[..end], &digest[..NAME_HASH_LENGTH])
}

/// `<workload>-<check>-<attempt>`, limited.
pub fn request_name(workload: &str, check: &str, attempt: i32) -> String {
    limit_object_name(&format!("{workload}-{check}-{attempt}"))
}

/// `ppt-<request>-<podset>`, limited.
pub fn template_name(request: &str, pod_set: &str) -> String {
    limit_object_name(&format!("ppt-{request}-{pod_set}"))
}

/// The attempt number of a request named for this workload and check, if it is one.
pub fn attempt_of(request: &str, workload: &str, check: &str) -> Option<i32> {
    let prefix = limit_object_name(&format!("{workload}-{check}-"));
    let digits = request.strip_prefix(&prefix)?;
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

#[cfg(test)]
mod tests;
