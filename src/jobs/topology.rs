//! Topology-aware scheduling requests written on pod templates: the annotations Kueue reads,
//! checked as Kueue's job webhooks check them, and the `topologyRequest` of each Workload PodSet
//! made from them and from the kind's pod index labels.

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::Value;

use super::{JobError, JobFramework, PodSet};
use crate::api::constants::{
    PODSET_GROUP_NAME_ANNOTATION as GROUP_NAME, PODSET_PREFERRED_TOPOLOGY_ANNOTATION as PREFERRED,
    PODSET_REQUIRED_TOPOLOGY_ANNOTATION as REQUIRED,
    PODSET_SLICE_REQUIRED_TOPOLOGY_ANNOTATION as SLICE_REQUIRED,
    PODSET_SLICE_REQUIRED_TOPOLOGY_CONSTRAINTS_ANNOTATION as SLICE_CONSTRAINTS,
    PODSET_SLICE_SIZE_ANNOTATION as SLICE_SIZE,
    PODSET_UNCONSTRAINED_TOPOLOGY_ANNOTATION as UNCONSTRAINED,
};
use crate::api::v1beta2::{PodSetTopologyRequest, PodsetSliceRequiredTopologyConstraint};
use crate::k8s::field::{BadValue, FieldError, quote};
use crate::k8s::names;

/// The labels a kind's controller puts on the pods of one PodSet that say where each pod ranks:
/// a topology assignment places pods in that order.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PodIndexing {
    /// Label holding the pod's index within its PodSet (or within its sub-group).
    pub pod_index_label: Option<&'static str>,
    /// Label holding the index of the pod's sub-group (a JobSet's replicated job copy).
    pub sub_group_index_label: Option<&'static str>,
    /// Number of sub-groups.
    pub sub_group_count: Option<i32>,
}

impl PodIndexing {
    fn is_empty(&self) -> bool {
        *self == Self::default()
    }
}

/// Which topology annotations are read: feature gates `TopologyAwareScheduling` (none at all
/// when off, as in Kueue) and `TASMultiLayerTopology` (the slice constraints annotation).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TopologyGates {
    /// `TopologyAwareScheduling`.
    pub enabled: bool,
    /// `TASMultiLayerTopology`.
    pub multi_layer: bool,
}

/// The most slice levels the constraints annotation may give.
const MAX_SLICE_LAYERS: usize = 3;
/// Every annotation the topology rules read on a pod template.
const ANNOTATIONS: [&str; 7] = [
    REQUIRED,
    PREFERRED,
    UNCONSTRAINED,
    SLICE_REQUIRED,
    SLICE_SIZE,
    SLICE_CONSTRAINTS,
    GROUP_NAME,
];

/// One entry of the slice constraints annotation as Go's JSON decoder reads it: absent fields
/// are zero, and a zero size is reported by the validation rather than by the decoder.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct SliceConstraint {
    topology: String,
    size: i32,
}

fn slice_constraints(text: &str) -> Result<Vec<SliceConstraint>, String> {
    serde_json::from_str(text).map_err(|error| error.to_string())
}

/// Go `strconv.ParseBool`.
fn go_parse_bool(text: &str) -> Option<bool> {
    match text {
        "1" | "t" | "T" | "TRUE" | "true" | "True" => Some(true),
        "0" | "f" | "F" | "FALSE" | "false" | "False" => Some(false),
        _ => None,
    }
}

/// Go `strconv.ParseInt(text, 10, 32)`.
fn go_parse_int32(text: &str) -> Option<i32> {
    text.parse().ok()
}

/// Whether Go's `strconv.ParseUint(text, 10, 64)` accepts `text` (digits only, no sign).
fn is_go_uint(text: &str) -> bool {
    !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit()) && text.parse::<u64>().is_ok()
}

fn invalid_request(annotation: &str, reason: impl std::fmt::Display) -> JobError {
    JobError::InvalidTopologyRequest(format!("{annotation}: {reason}"))
}

/// The PodSet's `topologyRequest` (Kueue `NewPodSetTopologyRequest(...).Build()`): `None` when
/// the template asks for no topology and the kind has no pod index labels.
pub fn topology_request(
    annotations: &BTreeMap<String, String>,
    indexing: PodIndexing,
    gates: TopologyGates,
) -> Result<Option<PodSetTopologyRequest>, JobError> {
    if !gates.enabled {
        return Ok(None);
    }
    let get = |key: &str| annotations.get(key).cloned();
    let (required, preferred) = (get(REQUIRED), get(PREFERRED));
    let mut request = PodSetTopologyRequest::default();
    if required.is_some() {
        request.required = required.clone();
    } else if preferred.is_some() {
        request.preferred = preferred.clone();
    } else if let Some(text) = annotations.get(UNCONSTRAINED) {
        let unconstrained = go_parse_bool(text)
            .ok_or_else(|| invalid_request(UNCONSTRAINED, format!("{text:?} is not a boolean")))?;
        request.unconstrained = Some(unconstrained);
    } else {
        let slice_layer = (annotations.contains_key(SLICE_REQUIRED)
            && annotations.contains_key(SLICE_SIZE))
            || annotations.contains_key(SLICE_CONSTRAINTS);
        if !slice_layer && indexing.is_empty() {
            return Ok(None);
        }
    }
    match (
        annotations.get(SLICE_CONSTRAINTS),
        get(SLICE_REQUIRED),
        annotations.get(SLICE_SIZE),
    ) {
        (Some(text), _, _) if gates.multi_layer => {
            let constraints = slice_constraints(text)
                .map_err(|error| invalid_request(SLICE_CONSTRAINTS, error))?;
            if constraints.is_empty() || constraints.len() > MAX_SLICE_LAYERS {
                return Err(invalid_request(
                    SLICE_CONSTRAINTS,
                    format!(
                        "{} entries, 1 to {MAX_SLICE_LAYERS} allowed",
                        constraints.len()
                    ),
                ));
            }
            request.podset_slice_required_topology_constraints = constraints
                .into_iter()
                .map(|c| PodsetSliceRequiredTopologyConstraint {
                    topology: c.topology,
                    size: c.size,
                })
                .collect();
        }
        (_, Some(level), Some(size)) => {
            let size = go_parse_int32(size)
                .ok_or_else(|| invalid_request(SLICE_SIZE, format!("{size:?} is not a number")))?;
            request.pod_set_slice_required_topology = Some(level);
            request.pod_set_slice_size = Some(size);
        }
        _ => {}
    }
    request.pod_index_label = indexing.pod_index_label.map(str::to_owned);
    request.sub_group_index_label = indexing.sub_group_index_label.map(str::to_owned);
    request.sub_group_count = indexing.sub_group_count;
    if required.is_some() || preferred.is_some() {
        request.pod_set_group_name = get(GROUP_NAME);
    }
    Ok(Some(request))
}

/// The `topologyRequest` of each of the job's PodSets, in order.
pub fn topology_requests(
    framework: &dyn JobFramework,
    job: &Value,
    pod_sets: &[PodSet],
    gates: TopologyGates,
) -> Result<Vec<Option<PodSetTopologyRequest>>, JobError> {
    pod_sets
        .iter()
        .enumerate()
        .map(|(index, pod_set)| {
            topology_request(
                template_annotations(pod_set),
                framework.pod_indexing(job, index),
                gates,
            )
        })
        .collect()
}

fn template_annotations(pod_set: &PodSet) -> &BTreeMap<String, String> {
    static NONE: BTreeMap<String, String> = BTreeMap::new();
    pod_set
        .template
        .metadata
        .as_ref()
        .and_then(|metadata| metadata.annotations.as_ref())
        .unwrap_or(&NONE)
}

fn key_path(annotations_path: &str, key: &str) -> String {
    format!("{annotations_path}[{key}]")
}

/// An `Invalid value` error that shows no value (apimachinery `field.OmitValueType`).
fn invalid_without_value(field: impl Into<String>, detail: impl Into<String>) -> FieldError {
    FieldError {
        bad_value: None,
        ..FieldError::invalid(field, "", detail)
    }
}

fn label_name_errors(value: &str, field: &str) -> Vec<FieldError> {
    names::qualified_name(value)
        .into_iter()
        .map(|message| FieldError::invalid(field, value, message))
        .collect()
}

/// Kueue `ValidateTASPodSetRequest` for the pod template metadata at `metadata_path`.
pub fn validate_annotations(
    metadata_path: &str,
    annotations: &BTreeMap<String, String>,
    gates: TopologyGates,
) -> Vec<FieldError> {
    let path = format!("{metadata_path}.annotations");
    let found = |key: &str| annotations.contains_key(key);
    let mut errors = Vec::new();
    let topology_annotations = [REQUIRED, PREFERRED, UNCONSTRAINED];
    if topology_annotations.iter().filter(|key| found(key)).count() > 1 {
        errors.push(invalid_without_value(
            &path,
            format!(
                "must not contain more than one topology annotation: [{}, {}, {}]",
                quote(REQUIRED),
                quote(PREFERRED),
                quote(UNCONSTRAINED)
            ),
        ));
    }
    for key in [REQUIRED, PREFERRED, SLICE_REQUIRED] {
        if let Some(value) = annotations.get(key) {
            errors.extend(label_name_errors(value, &key_path(&path, key)));
        }
    }
    if let Some(group) = annotations.get(GROUP_NAME) {
        let group_path = key_path(&path, GROUP_NAME);
        if is_go_uint(group) {
            errors.push(FieldError::invalid(
                &group_path,
                group.as_str(),
                "must not be a number",
            ));
        }
        for key in [SLICE_SIZE, SLICE_REQUIRED] {
            if found(key) {
                errors.push(FieldError::forbidden(
                    &group_path,
                    format!("may not be set when '{key}' is specified"),
                ));
            }
        }
        if !found(PREFERRED) && !found(REQUIRED) {
            errors.push(FieldError::forbidden(
                &group_path,
                format!("may not be set when neither '{PREFERRED}' nor '{REQUIRED}' is specified"),
            ));
        }
    }
    if let Some(value) = annotations.get(UNCONSTRAINED)
        && go_parse_bool(value).is_none()
    {
        errors.push(FieldError::invalid(
            key_path(&path, UNCONSTRAINED),
            value.as_str(),
            "must be a boolean value",
        ));
    }
    if let Some(value) = annotations.get(SLICE_SIZE) {
        let field = key_path(&path, SLICE_SIZE);
        match go_parse_int32(value) {
            None => errors.push(FieldError::invalid(
                field,
                value.as_str(),
                "must be a numeric value",
            )),
            Some(size) if size < 1 => errors.push(FieldError::invalid(
                field,
                value.as_str(),
                "must be greater than or equal to 1",
            )),
            Some(_) => {}
        }
    }
    match (found(SLICE_REQUIRED), found(SLICE_SIZE)) {
        (true, false) => errors.push(FieldError::required(
            key_path(&path, SLICE_SIZE),
            format!("must be set when '{SLICE_REQUIRED}' is specified"),
        )),
        (false, true) => errors.push(FieldError::forbidden(
            key_path(&path, SLICE_SIZE),
            format!("may not be set when '{SLICE_REQUIRED}' is not specified"),
        )),
        _ => {}
    }
    if let Some(text) = annotations.get(SLICE_CONSTRAINTS) {
        errors.extend(validate_slice_constraints(&path, annotations, text, gates));
    }
    errors
}

/// Kueue `validateSliceRequiredTopologyConstraintsAnnotation`.
fn validate_slice_constraints(
    path: &str,
    annotations: &BTreeMap<String, String>,
    text: &str,
    gates: TopologyGates,
) -> Vec<FieldError> {
    let field = key_path(path, SLICE_CONSTRAINTS);
    if !gates.multi_layer {
        return vec![FieldError::forbidden(
            field,
            "the TASMultiLayerTopology feature gate must be enabled to use this annotation",
        )];
    }
    let mut errors = Vec::new();
    for key in [SLICE_REQUIRED, SLICE_SIZE] {
        if annotations.contains_key(key) {
            errors.push(FieldError::forbidden(
                &field,
                format!("may not be set when '{key}' is specified"),
            ));
        }
    }
    if annotations.contains_key(GROUP_NAME) {
        errors.push(FieldError::forbidden(
            key_path(path, GROUP_NAME),
            format!("may not be set when '{SLICE_CONSTRAINTS}' is specified"),
        ));
    }
    let constraints = match slice_constraints(text) {
        Ok(constraints) => constraints,
        Err(error) => {
            errors.push(FieldError::invalid(
                field,
                text,
                format!("must be a valid JSON array: {error}"),
            ));
            return errors;
        }
    };
    if constraints.is_empty() || constraints.len() > MAX_SLICE_LAYERS {
        errors.push(FieldError::invalid(
            field,
            text,
            "topology constraints must contain between 1 and 3 entries",
        ));
        return errors;
    }
    for (i, constraint) in constraints.iter().enumerate() {
        let entry = format!("{field}[{i}]");
        errors.extend(label_name_errors(
            &constraint.topology,
            &format!("{entry}.topology"),
        ));
        if constraint.size < 1 {
            errors.push(FieldError::invalid(
                format!("{entry}.size"),
                constraint.size,
                "must be greater than or equal to 1",
            ));
        }
    }
    let mut first_at: BTreeMap<&str, usize> = BTreeMap::new();
    for (i, constraint) in constraints.iter().enumerate() {
        match first_at.get(constraint.topology.as_str()) {
            Some(first) => errors.push(FieldError::duplicate(
                format!("{field}[{i}].topology"),
                BadValue::json(&format!("{} (also at index {first})", constraint.topology)),
            )),
            None => {
                first_at.insert(&constraint.topology, i);
            }
        }
    }
    for (i, pair) in constraints.windows(2).enumerate() {
        let (parent, child) = (&pair[0], &pair[1]);
        if child.size > 0 && parent.size % child.size != 0 {
            errors.push(FieldError::invalid(
                format!("{field}[{}].size", i + 1),
                child.size,
                format!("must evenly divide the parent layer size {}", parent.size),
            ));
        }
    }
    errors
}

/// Kueue `ValidateSliceSizeAnnotationUpperBound`: no slice larger than the PodSet.
fn validate_slice_upper_bound(
    metadata_path: &str,
    annotations: &BTreeMap<String, String>,
    count: i32,
) -> Vec<FieldError> {
    let path = format!("{metadata_path}.annotations");
    let too_large = format!("must not be greater than pod set count {count}");
    let mut errors = Vec::new();
    if let Some(text) = annotations.get(SLICE_SIZE) {
        match go_parse_int32(text) {
            None => {
                return vec![FieldError::invalid(
                    key_path(&path, SLICE_SIZE),
                    text.as_str(),
                    "must be a numeric value",
                )];
            }
            Some(size) if size > count => errors.push(FieldError::invalid(
                key_path(&path, SLICE_SIZE),
                text.as_str(),
                &too_large,
            )),
            Some(_) => {}
        }
    }
    if let Some(first) = annotations
        .get(SLICE_CONSTRAINTS)
        .and_then(|text| slice_constraints(text).ok())
        .and_then(|constraints| constraints.into_iter().next())
        && first.size > count
    {
        errors.push(FieldError::invalid(
            key_path(&path, SLICE_CONSTRAINTS),
            first.size,
            too_large,
        ));
    }
    errors
}

/// The field path of a pod template from its JSON pointer: array indexes and the replica types
/// of Kubeflow's `*ReplicaSpecs` maps become `[key]`, as Kueue's field paths write them.
fn field_path(pointer: &str) -> String {
    let mut path = String::new();
    let mut previous = "";
    for segment in pointer.split('/').filter(|segment| !segment.is_empty()) {
        if segment.bytes().all(|b| b.is_ascii_digit()) || previous.ends_with("ReplicaSpecs") {
            path.push_str(&format!("[{segment}]"));
        } else {
            if !path.is_empty() {
                path.push('.');
            }
            path.push_str(segment);
        }
        previous = segment;
    }
    path
}

/// Kueue's topology validation of a job (TAS gate on) whose PodSets, as its framework builds
/// them, are `pod_sets`: each PodSet's annotations, its slice size against its pod count, then
/// the PodSet groups.
pub fn validate(
    framework: &dyn JobFramework,
    job: &Value,
    pod_sets: &[PodSet],
    gates: TopologyGates,
) -> Vec<FieldError> {
    if !gates.enabled {
        return Vec::new();
    }
    // Every rule is about one of these annotations: a job without them, the common case, has
    // nothing to check and no field paths to build.
    let annotated = |pod_set: &PodSet| {
        let annotations = template_annotations(pod_set);
        ANNOTATIONS.iter().any(|key| annotations.contains_key(*key))
    };
    if !pod_sets.iter().any(annotated) {
        return Vec::new();
    }
    let Ok(pointers) = framework.template_pointers(job) else {
        return Vec::new();
    };
    let metadata_paths: Vec<String> = pointers
        .iter()
        .map(|pointer| format!("{}.metadata", field_path(pointer)))
        .collect();
    let mut errors = Vec::new();
    for (pod_set, metadata_path) in pod_sets.iter().zip(&metadata_paths) {
        let annotations = template_annotations(pod_set);
        let annotation_errors = validate_annotations(metadata_path, annotations, gates);
        if annotation_errors.is_empty() {
            errors.extend(validate_slice_upper_bound(
                metadata_path,
                annotations,
                pod_set.count,
            ));
        }
        errors.extend(annotation_errors);
    }
    if let Ok(requests) = topology_requests(framework, job, pod_sets, gates) {
        errors.extend(validate_groups(pod_sets, &requests, &metadata_paths));
    }
    errors
}

/// Kueue `ValidatePodSetGroupingTopology`: a group is two PodSets, one of them a single pod,
/// both asking for the same required or preferred level.
fn validate_groups(
    pod_sets: &[PodSet],
    requests: &[Option<PodSetTopologyRequest>],
    metadata_paths: &[String],
) -> Vec<FieldError> {
    let mut groups: Vec<(&str, Vec<usize>)> = Vec::new();
    for (index, request) in requests.iter().enumerate() {
        let Some(group) = request
            .as_ref()
            .and_then(|r| r.pod_set_group_name.as_deref())
        else {
            continue;
        };
        match groups.iter_mut().find(|(name, _)| *name == group) {
            Some((_, members)) => members.push(index),
            None => groups.push((group, vec![index])),
        }
    }
    let annotations_path = |index: usize| format!("{}.annotations", metadata_paths[index]);
    let mut errors = Vec::new();
    for (group, members) in groups {
        let [first, second] = members[..] else {
            for &member in &members {
                errors.push(FieldError::invalid(
                    key_path(&annotations_path(member), GROUP_NAME),
                    group,
                    format!(
                        "can only define groups of exactly 2 pod sets, got: {} pod set(s)",
                        members.len()
                    ),
                ));
            }
            continue;
        };
        let (count1, count2) = (pod_sets[first].count, pod_sets[second].count);
        if count1 != 1 && count2 != 1 {
            let detail = format!(
                "can only define groups where at least one pod set has only 1 replica, got: \
                 {count1} replica(s) and {count2} replica(s) in the group"
            );
            for member in [first, second] {
                errors.push(FieldError::invalid(
                    key_path(&annotations_path(member), GROUP_NAME),
                    group,
                    &detail,
                ));
            }
        }
        let consistent = matches!(
            (placement_level(&requests[first]), placement_level(&requests[second])),
            (Some(a), Some(b)) if a == b
        );
        if !consistent {
            for (member, peer) in [(first, second), (second, first)] {
                errors.push(invalid_without_value(
                    annotations_path(member),
                    format!(
                        "must specify '{REQUIRED}' or '{PREFERRED}' topology consistent with \
                         '{}' in group '{group}'",
                        annotations_path(peer)
                    ),
                ));
            }
        }
    }
    errors
}

/// The required or preferred level of a request, as the pair Kueue compares within a group.
fn placement_level(
    request: &Option<PodSetTopologyRequest>,
) -> Option<(Option<&str>, Option<&str>)> {
    let request = request.as_ref()?;
    match (request.required.as_deref(), request.preferred.as_deref()) {
        (None, None) => None,
        levels => Some(levels),
    }
}
