//! PodSets of a job, the admission info merged into their templates, and restoring them.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{
    Container, EnvVar, PodSchedulingGate, PodSpec, PodTemplateSpec, Toleration,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde::Deserialize;
use serde::de::Error as _;
use serde_json::{Map, Value};

use super::JobError;
use crate::api::constants::{TAS_LABEL, TOPOLOGY_SCHEDULING_GATE, WORKLOAD_ANNOTATION};
use crate::api::v1beta2::PodSetTopologyRequest;
use crate::k8s::json;
use crate::k8s::names;
use crate::k8s::quantity::parse_nano;

/// Most PodSets a Workload can hold (Kueue `MaxPodSets`, CRD `maxItems`).
pub const MAX_POD_SETS: usize = 18;

/// Name of the only PodSet of single-template kinds (Kueue `DefaultPodSetName`).
pub const DEFAULT_POD_SET_NAME: &str = "main";

/// Label put on pod templates at admission naming their PodSet.
pub const POD_SET_LABEL: &str = "kueue.x-k8s.io/podset";

/// Label put on pod templates at admission naming the job's LocalQueue.
pub const LOCAL_QUEUE_LABEL: &str = "kueue.x-k8s.io/local-queue-name";

/// Label put on pod templates at admission naming the admitting ClusterQueue.
pub const CLUSTER_QUEUE_LABEL: &str = "kueue.x-k8s.io/cluster-queue-name";

/// A group of identical pods of a job, as stored in `Workload.spec.podSets`.
#[derive(Debug, Clone, PartialEq)]
pub struct PodSet {
    /// PodSet name (lowercase, DNS-1123 label).
    pub name: String,
    /// Pod template of every pod in the set.
    pub template: PodTemplateSpec,
    /// Number of pods.
    pub count: i32,
    /// Fewest pods the job can run with (partial admission), if it allows fewer.
    pub min_count: Option<i32>,
    /// Topology-aware scheduling request, from the template's annotations and the kind's pod
    /// index labels ([`super::topology::topology_requests`]).
    pub topology_request: Option<PodSetTopologyRequest>,
}

impl PodSet {
    /// A PodSet of `count` pods from the template at `pointer` in `job`.
    pub(crate) fn from_template_at(
        job: &Value,
        pointer: &str,
        name: &str,
        count: i32,
    ) -> Result<Self, JobError> {
        Ok(PodSet::new(name, super::required_at(job, pointer)?, count))
    }

    /// A PodSet named `name` (lowercased) of `count` pods of `template`.
    pub fn new(name: &str, mut template: PodTemplateSpec, count: i32) -> Self {
        // `metadata: {}` and no metadata are the same template.
        if template
            .metadata
            .as_ref()
            .is_some_and(|metadata| *metadata == ObjectMeta::default())
        {
            template.metadata = None;
        }
        PodSet {
            name: name.to_lowercase(),
            template,
            count,
            min_count: None,
            topology_request: None,
        }
    }

    /// Collapses env vars with the same name in every container: first position, last value.
    pub(crate) fn collapse_duplicate_env(&mut self) {
        let Some(spec) = self.template.spec.as_mut() else {
            return;
        };
        let init_containers = spec.init_containers.iter_mut().flatten();
        for container in spec.containers.iter_mut().chain(init_containers) {
            collapse_env(container);
        }
    }
}

fn collapse_env(container: &mut Container) {
    let Some(env) = container.env.take() else {
        return;
    };
    let mut collapsed: Vec<EnvVar> = Vec::with_capacity(env.len());
    for var in env {
        match collapsed.iter_mut().find(|kept| kept.name == var.name) {
            Some(kept) => *kept = var,
            None => collapsed.push(var),
        }
    }
    container.env = Some(collapsed);
}

/// Whether a job's PodSets still match a Workload's (Kueue `equality.ComparePodSetSlices`):
/// same number, and pairwise the same count, min count, containers, init containers and,
/// unless ignored (as once admitted), tolerations. Absent and empty are alike and quantities
/// compare by value, like apimachinery's semantic equality.
pub fn pod_sets_equivalent(job: &[PodSet], workload: &[PodSet], ignore_tolerations: bool) -> bool {
    job.len() == workload.len()
        && job.iter().zip(workload).all(|(a, b)| {
            let empty = PodSpec::default();
            let a_spec = a.template.spec.as_ref().unwrap_or(&empty);
            let b_spec = b.template.spec.as_ref().unwrap_or(&empty);
            a.count == b.count
                && a.min_count == b.min_count
                && (ignore_tolerations
                    || semantic(&a_spec.tolerations) == semantic(&b_spec.tolerations))
                && semantic(&a_spec.init_containers) == semantic(&b_spec.init_containers)
                && semantic(&a_spec.containers) == semantic(&b_spec.containers)
        })
}

fn semantic<T: serde::Serialize>(item: &T) -> Value {
    let normalized = normalize(serialize(item), false);
    if is_empty(&normalized) {
        Value::Null
    } else {
        normalized
    }
}

/// Drops nulls and empty collections; the values of resource lists become exact amounts.
fn normalize(value: Value, resource_list: bool) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.into_iter()
                .map(|(key, value)| match value {
                    Value::String(text) if resource_list => {
                        let amount = parse_nano(&text).map_or(text, |amount| amount.to_string());
                        (key, Value::String(amount))
                    }
                    value => {
                        let is_list = matches!(key.as_str(), "limits" | "requests");
                        (key, normalize(value, is_list))
                    }
                })
                .filter(|(_, value)| !is_empty(value))
                .collect(),
        ),
        Value::Array(items) => Value::Array(
            items
                .into_iter()
                .map(|item| normalize(item, false))
                .collect(),
        ),
        other => other,
    }
}

fn is_empty(value: &Value) -> bool {
    match value {
        Value::Null => true,
        Value::Object(map) => map.is_empty(),
        Value::Array(items) => items.is_empty(),
        _ => false,
    }
}

/// What admission adds to one PodSet's pod template (Kueue `podset.PodSetInfo`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PodSetInfo {
    /// PodSet name.
    pub name: String,
    /// Admitted pod count (lower than the PodSet count under partial admission).
    pub count: i32,
    /// Template annotations.
    pub annotations: BTreeMap<String, String>,
    /// Template labels.
    pub labels: BTreeMap<String, String>,
    /// Pod nodeSelector.
    pub node_selector: BTreeMap<String, String>,
    /// Pod tolerations.
    pub tolerations: Vec<Toleration>,
    /// Pod scheduling gates.
    pub scheduling_gates: Vec<PodSchedulingGate>,
}

impl PodSetInfo {
    /// Info of an admitted PodSet before flavors are added: the PodSet label and the queue
    /// labels (the ClusterQueue label only when the name is a valid label value, as Kueue).
    pub fn admitted(pod_set: &str, count: i32, local_queue: &str, cluster_queue: &str) -> Self {
        let mut labels = BTreeMap::from([
            (POD_SET_LABEL.to_string(), pod_set.to_string()),
            (LOCAL_QUEUE_LABEL.to_string(), local_queue.to_string()),
        ]);
        if names::dns1123_label(cluster_queue).is_empty() {
            labels.insert(CLUSTER_QUEUE_LABEL.to_string(), cluster_queue.to_string());
        }
        PodSetInfo {
            name: pod_set.to_string(),
            count,
            labels,
            ..PodSetInfo::default()
        }
    }

    /// Holds the pods of a PodSet placed in a topology until the topology ungater gives each
    /// its domain (Kueue's TAS label, Workload annotation and scheduling gate).
    pub fn gate_for_topology(&mut self, workload: &str) {
        self.labels
            .insert(TAS_LABEL.to_string(), "true".to_string());
        self.annotations
            .insert(WORKLOAD_ANNOTATION.to_string(), workload.to_string());
        let gate = PodSchedulingGate {
            name: TOPOLOGY_SCHEDULING_GATE.to_string(),
        };
        if !self.scheduling_gates.contains(&gate) {
            self.scheduling_gates.push(gate);
        }
    }

    /// Adds one assigned ResourceFlavor: its node labels join the nodeSelector (later flavors
    /// win on equal keys) and its tolerations are appended. Call once per distinct flavor.
    pub fn add_flavor(
        &mut self,
        node_labels: &BTreeMap<String, String>,
        tolerations: &[Toleration],
    ) {
        self.node_selector
            .extend(node_labels.iter().map(|(k, v)| (k.clone(), v.clone())));
        self.tolerations.extend_from_slice(tolerations);
    }

    /// The template fields of a Workload PodSet, used to restore a stopped job.
    pub fn from_pod_set(pod_set: &PodSet) -> Self {
        let metadata = pod_set.template.metadata.as_ref();
        let spec = pod_set.template.spec.as_ref();
        PodSetInfo {
            name: pod_set.name.clone(),
            count: pod_set.count,
            annotations: metadata
                .and_then(|m| m.annotations.clone())
                .unwrap_or_default(),
            labels: metadata.and_then(|m| m.labels.clone()).unwrap_or_default(),
            node_selector: spec
                .and_then(|s| s.node_selector.clone())
                .unwrap_or_default(),
            tolerations: spec.and_then(|s| s.tolerations.clone()).unwrap_or_default(),
            scheduling_gates: spec
                .and_then(|s| s.scheduling_gates.clone())
                .unwrap_or_default(),
        }
    }

    /// Merges another info (an admission check's PodSetUpdate) into this one, refusing to
    /// change an existing annotation, label or nodeSelector value.
    pub fn merge(&mut self, other: &PodSetInfo) -> Result<(), JobError> {
        check_conflict("annotations", &self.annotations, &other.annotations)?;
        check_conflict("labels", &self.labels, &other.labels)?;
        check_conflict("nodeSelector", &self.node_selector, &other.node_selector)?;
        for (mine, theirs) in [
            (&mut self.annotations, &other.annotations),
            (&mut self.labels, &other.labels),
            (&mut self.node_selector, &other.node_selector),
        ] {
            mine.extend(theirs.iter().map(|(k, v)| (k.clone(), v.clone())));
        }
        for toleration in &other.tolerations {
            if !self
                .tolerations
                .iter()
                .any(|kept| same_toleration(kept, toleration))
            {
                self.tolerations.push(toleration.clone());
            }
        }
        for gate in &other.scheduling_gates {
            if !self.scheduling_gates.contains(gate) {
                self.scheduling_gates.push(gate.clone());
            }
        }
        Ok(())
    }
}

fn check_conflict(
    field: &'static str,
    existing: &BTreeMap<String, String>,
    requested: &BTreeMap<String, String>,
) -> Result<(), JobError> {
    match existing
        .iter()
        .find(|(key, value)| requested.get(*key).is_some_and(|new| new != *value))
    {
        Some((key, value)) => Err(JobError::Conflict {
            field,
            key: key.clone(),
            existing: value.clone(),
            requested: requested[key].clone(),
        }),
        None => Ok(()),
    }
}

/// Kubernetes `Toleration.MatchToleration`, with an empty operator meaning `Equal`.
fn same_toleration(a: &Toleration, b: &Toleration) -> bool {
    let operator = |t: &Toleration| {
        t.operator
            .clone()
            .filter(|op| !op.is_empty())
            .unwrap_or_else(|| "Equal".into())
    };
    let text = |field: &Option<String>| field.clone().unwrap_or_default();
    text(&a.key) == text(&b.key)
        && text(&a.effect) == text(&b.effect)
        && operator(a) == operator(b)
        && text(&a.value) == text(&b.value)
}

/// Where a string map lives in a pod template, and its name in conflict errors.
const TEMPLATE_MAPS: [(&str, &str); 3] = [
    ("annotations", "/metadata/annotations"),
    ("labels", "/metadata/labels"),
    ("nodeSelector", "/spec/nodeSelector"),
];

fn info_map<'a>(info: &'a PodSetInfo, field: &str) -> &'a BTreeMap<String, String> {
    match field {
        "annotations" => &info.annotations,
        "labels" => &info.labels,
        _ => &info.node_selector,
    }
}

/// Merges an info into a typed pod template (Kueue `podset.Merge`), refusing conflicts as
/// [`merge_into_templates`] does.
pub fn merge_into_pod_template(
    template: &mut PodTemplateSpec,
    info: &PodSetInfo,
) -> Result<(), JobError> {
    let invalid = |source: serde_json::Error| JobError::InvalidField {
        pointer: String::new(),
        source,
    };
    let mut value = serde_json::to_value(&*template).map_err(invalid)?;
    merge_into_template(&mut value, "", info)?;
    *template = serde_json::from_value(value).map_err(invalid)?;
    Ok(())
}

/// Merges one info per template (Kueue `podset.Merge`); templates must exist.
pub(crate) fn merge_into_templates(
    job: &mut Value,
    pointers: &[String],
    infos: &[PodSetInfo],
) -> Result<(), JobError> {
    if pointers.len() != infos.len() {
        return Err(JobError::PodSetCountMismatch {
            expected: pointers.len(),
            got: infos.len(),
        });
    }
    for (pointer, info) in pointers.iter().zip(infos) {
        let template = job
            .pointer_mut(pointer)
            .filter(|template| !template.is_null())
            .ok_or_else(|| JobError::MissingField {
                pointer: pointer.clone(),
            })?;
        merge_into_template(template, pointer, info)?;
    }
    Ok(())
}

fn merge_into_template(
    template: &mut Value,
    pointer: &str,
    info: &PodSetInfo,
) -> Result<(), JobError> {
    if !template.is_object() {
        return Err(JobError::InvalidField {
            pointer: pointer.to_string(),
            source: serde_json::Error::custom("a pod template must be an object"),
        });
    }
    for (field, map_pointer) in TEMPLATE_MAPS {
        let existing = string_map(template, map_pointer);
        check_conflict(field, &existing, info_map(info, field))?;
    }
    for (field, map_pointer) in TEMPLATE_MAPS {
        let wanted = info_map(info, field);
        if wanted.is_empty() {
            continue;
        }
        match template.pointer_mut(map_pointer) {
            Some(Value::Object(map)) => {
                for (key, value) in wanted {
                    map.entry(key.clone())
                        .or_insert_with(|| Value::String(value.clone()));
                }
            }
            _ => json::set(template, map_pointer, string_map_value(wanted)),
        }
    }

    let tolerations_pointer = format!("{pointer}/spec/tolerations");
    let mut tolerations: Vec<Toleration> = super::typed_at(template, "/spec/tolerations")
        .map_err(|error| at(error, &tolerations_pointer))?
        .unwrap_or_default();
    let mut added = Vec::new();
    for toleration in &info.tolerations {
        if !tolerations
            .iter()
            .any(|kept| same_toleration(kept, toleration))
        {
            tolerations.push(toleration.clone());
            added.push(serialize(toleration));
        }
    }
    append(template, "/spec/tolerations", added);

    let gates_pointer = format!("{pointer}/spec/schedulingGates");
    let mut gates: Vec<PodSchedulingGate> = super::typed_at(template, "/spec/schedulingGates")
        .map_err(|error| at(error, &gates_pointer))?
        .unwrap_or_default();
    let mut added = Vec::new();
    for gate in &info.scheduling_gates {
        if !gates.contains(gate) {
            gates.push(gate.clone());
            added.push(serialize(gate));
        }
    }
    append(template, "/spec/schedulingGates", added);
    Ok(())
}

/// Puts the originals back (Kueue `podset.RestorePodSpec`); absent templates are skipped.
/// Returns false, changing nothing, when the counts differ.
pub(crate) fn restore_templates(
    job: &mut Value,
    pointers: &[String],
    infos: &[PodSetInfo],
) -> bool {
    if pointers.len() != infos.len() {
        return false;
    }
    for (pointer, info) in pointers.iter().zip(infos) {
        if let Some(template) = job
            .pointer_mut(pointer)
            .filter(|template| template.is_object())
        {
            restore_template(template, info);
        }
    }
    true
}

fn restore_template(template: &mut Value, info: &PodSetInfo) {
    for (field, map_pointer) in TEMPLATE_MAPS {
        let wanted = info_map(info, field);
        let current = json::at(template, map_pointer).map(BTreeMap::<String, String>::deserialize);
        let unchanged = match current {
            None => wanted.is_empty(),
            Some(Ok(current)) => &current == wanted,
            Some(Err(_)) => false,
        };
        if !unchanged {
            replace(
                template,
                map_pointer,
                (!wanted.is_empty()).then(|| string_map_value(wanted)),
            );
        }
    }
    restore_list(template, "/spec/tolerations", &info.tolerations);
    restore_list(template, "/spec/schedulingGates", &info.scheduling_gates);
}

fn restore_list<T>(template: &mut Value, pointer: &str, wanted: &[T])
where
    T: serde::Serialize + serde::de::DeserializeOwned + PartialEq,
{
    let current = json::at(template, pointer).map(Vec::<T>::deserialize);
    let unchanged = match current {
        None => wanted.is_empty(),
        Some(Ok(current)) => current == wanted,
        Some(Err(_)) => false,
    };
    if !unchanged {
        replace(
            template,
            pointer,
            (!wanted.is_empty()).then(|| Value::Array(wanted.iter().map(serialize).collect())),
        );
    }
}

fn replace(template: &mut Value, pointer: &str, new: Option<Value>) {
    match new {
        Some(new) => json::set(template, pointer, new),
        None => json::remove(template, pointer),
    }
}

/// The string map at a pointer; non-string values are kept as their JSON text.
fn string_map(template: &Value, pointer: &str) -> BTreeMap<String, String> {
    let Some(Value::Object(map)) = json::at(template, pointer) else {
        return BTreeMap::new();
    };
    map.iter()
        .map(|(key, value)| {
            (
                key.clone(),
                value
                    .as_str()
                    .map_or_else(|| value.to_string(), str::to_string),
            )
        })
        .collect()
}

fn string_map_value(map: &BTreeMap<String, String>) -> Value {
    Value::Object(
        map.iter()
            .map(|(k, v)| (k.clone(), Value::String(v.clone())))
            .collect::<Map<_, _>>(),
    )
}

fn append(template: &mut Value, pointer: &str, added: Vec<Value>) {
    if added.is_empty() {
        return;
    }
    match template.pointer_mut(pointer) {
        Some(Value::Array(items)) => items.extend(added),
        _ => json::set(template, pointer, Value::Array(added)),
    }
}

fn serialize<T: serde::Serialize>(item: &T) -> Value {
    // Kubernetes types serialize infallibly to JSON.
    serde_json::to_value(item).unwrap_or(Value::Null)
}

/// Re-anchors a template-relative pointer in an error to the job.
fn at(error: JobError, pointer: &str) -> JobError {
    match error {
        JobError::InvalidField { source, .. } => JobError::InvalidField {
            pointer: pointer.to_string(),
            source,
        },
        other => other,
    }
}
