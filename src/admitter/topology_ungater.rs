//! The topology ungater (Kueue's `tas_topology_ungater`): the pods of a PodSet admitted with a
//! topology assignment are created behind the `kueue.x-k8s.io/topology` scheduling gate; this
//! controller gives each gated pod a domain of the assignment ([`plan::ungate`]), adds the
//! domain's node labels to its nodeSelector and removes the gate in one patch, so the
//! kube-scheduler places it on a node of that domain.
//!
//! It watches only pods with Kueue's TAS label, reads each pod's Workload from the shared
//! stores, and runs one reconcile at a time so two pods never take the same place. A pod let
//! go is remembered with its domain until the watch shows it ungated, so a sibling reconciled
//! in between does not take its place again.

pub mod plan;

use std::{
    collections::{BTreeMap, HashMap},
    sync::{Arc, Mutex},
    time::Duration,
};

use futures::StreamExt;
use k8s_openapi::api::core::v1::Pod;
use kube::{
    Api, Client, ResourceExt,
    api::{Patch, PatchParams},
    runtime::{
        Controller,
        controller::{Action, Config as ControllerConfig},
        reflector::{ObjectRef, Store},
        watcher,
    },
};
use serde_json::{Map, Value};

use crate::admitter::jobs::guarded_patch;
use crate::api::constants::{
    PODSET_LABEL, TAS_LABEL, TOPOLOGY_SCHEDULING_GATE, WORKLOAD_ANNOTATION,
};
use crate::api::v1beta1;
use crate::api::v1beta2::Workload;
use crate::stores::Stores;

use plan::{PodView, Ungate};

/// How soon a gated pod whose Workload the stores do not show admitted yet is looked at again.
const WORKLOAD_RETRY: Duration = Duration::from_secs(2);
/// Retry delay after a patch lost a race or failed.
const ERROR_RETRY: Duration = Duration::from_secs(5);

/// Why a reconcile failed; it is retried.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// An API call failed.
    #[error(transparent)]
    Kube(#[from] kube::Error),
    /// A pod could not be turned into JSON.
    #[error("cannot serialize pod: {0}")]
    Serialize(#[from] serde_json::Error),
}

struct Context {
    client: Client,
    stores: Stores,
    pods: Store<Pod>,
    /// Pods let go whose ungated version the watch has not shown yet, by UID, with the
    /// nodeSelector they were given.
    let_go: Mutex<HashMap<String, BTreeMap<String, String>>>,
}

/// Runs the ungater until the process ends.
pub async fn run(client: Client, stores: Stores) {
    let pods: Api<Pod> = Api::all(client.clone());
    let controller = Controller::new(
        pods,
        watcher::Config::default().labels(&format!("{TAS_LABEL}=true")),
    )
    .with_config(ControllerConfig::default().concurrency(1));
    let context = Arc::new(Context {
        client,
        stores,
        pods: controller.store(),
        let_go: Mutex::new(HashMap::new()),
    });
    tracing::info!("topology ungater started");
    controller
        .run(reconcile, error_policy, context)
        .for_each(|result| async move {
            if let Err(error) = result {
                tracing::debug!(%error, "topology ungater reconcile did not complete");
            }
        })
        .await;
}

fn error_policy(pod: Arc<Pod>, error: &Error, _: Arc<Context>) -> Action {
    tracing::warn!(pod = %pod.name_any(), %error, "topology ungating failed; retrying");
    Action::requeue(ERROR_RETRY)
}

fn is_gated(pod: &Pod) -> bool {
    pod.spec
        .as_ref()
        .and_then(|spec| spec.scheduling_gates.as_ref())
        .is_some_and(|gates| {
            gates
                .iter()
                .any(|gate| gate.name == TOPOLOGY_SCHEDULING_GATE)
        })
}

/// A pod that no longer counts against its domain: finished, or on its way out.
fn is_gone(pod: &Pod) -> bool {
    pod.metadata.deletion_timestamp.is_some()
        || pod
            .status
            .as_ref()
            .and_then(|status| status.phase.as_deref())
            .is_some_and(|phase| phase == "Succeeded" || phase == "Failed")
}

#[tracing::instrument(skip_all, fields(pod = %pod.name_any()))]
async fn reconcile(pod: Arc<Pod>, context: Arc<Context>) -> Result<Action, Error> {
    let uid = pod.uid().unwrap_or_default();
    if !is_gated(&pod) || is_gone(&pod) {
        forget(&context, &uid);
        return Ok(Action::await_change());
    }
    let namespace = pod.namespace().unwrap_or_default();
    let (Some(workload_name), Some(pod_set)) = (
        pod.annotations().get(WORKLOAD_ANNOTATION).cloned(),
        pod.labels().get(PODSET_LABEL).cloned(),
    ) else {
        tracing::debug!("gated pod names no Workload or PodSet; left alone");
        return Ok(Action::await_change());
    };
    let workload = context
        .stores
        .workloads
        .get(&ObjectRef::<Workload>::new(&workload_name).within(&namespace));
    let Some((assignment, ranking)) = workload
        .as_deref()
        .and_then(|workload| assignment_of(workload, &pod_set))
    else {
        return Ok(Action::requeue(WORKLOAD_RETRY));
    };

    let siblings: Vec<Arc<Pod>> = context
        .pods
        .state()
        .into_iter()
        .filter(|other| {
            other.namespace().as_deref() == Some(namespace.as_str())
                && other.annotations().get(WORKLOAD_ANNOTATION) == Some(&workload_name)
                && other.labels().get(PODSET_LABEL) == Some(&pod_set)
                && !is_gone(other)
        })
        .collect();
    let planned = {
        let Ok(mut let_go) = context.let_go.lock() else {
            return Ok(Action::requeue(ERROR_RETRY));
        };
        for sibling in &siblings {
            if !is_gated(sibling) {
                let_go.remove(&sibling.uid().unwrap_or_default());
            }
        }
        let empty = BTreeMap::new();
        let views: Vec<PodView<'_>> = siblings
            .iter()
            .map(|sibling| {
                let given = let_go.get(sibling.uid().as_deref().unwrap_or_default());
                PodView {
                    name: sibling.metadata.name.as_deref().unwrap_or_default(),
                    gated: is_gated(sibling) && given.is_none(),
                    index: label_number(sibling, ranking.index_label.as_deref()),
                    sub_group: label_number(sibling, ranking.sub_group_index_label.as_deref()),
                    node_selector: given.unwrap_or_else(|| {
                        sibling
                            .spec
                            .as_ref()
                            .and_then(|spec| spec.node_selector.as_ref())
                            .unwrap_or(&empty)
                    }),
                }
            })
            .collect();
        plan::ungate(&assignment, &views, ranking.sub_group_count)
    };

    let pods: Api<Pod> = Api::namespaced(context.client.clone(), &namespace);
    for Ungate {
        pod: name,
        node_selector,
    } in planned
    {
        let Some(target) = siblings.iter().find(|sibling| sibling.name_any() == name) else {
            continue;
        };
        let current = serde_json::to_value(target.as_ref())?;
        let patch = guarded_patch(&current, &ungated(&current, &node_selector));
        match pods
            .patch(&name, &PatchParams::default(), &Patch::Json::<()>(patch))
            .await
        {
            Ok(_) => {
                if let Ok(mut let_go) = context.let_go.lock() {
                    let_go.insert(target.uid().unwrap_or_default(), node_selector);
                }
                tracing::debug!(pod = %name, "ungated");
            }
            Err(kube::Error::Api(status)) if status.code == 404 => {}
            // A changed pod comes back through the watch with its new version.
            Err(kube::Error::Api(status)) if status.code == 409 || status.code == 422 => {
                return Ok(Action::requeue(Duration::from_secs(1)));
            }
            Err(error) => return Err(error.into()),
        }
    }
    Ok(Action::await_change())
}

fn forget(context: &Context, uid: &str) {
    if let Ok(mut let_go) = context.let_go.lock() {
        let_go.remove(uid);
    }
}

/// The labels that rank a PodSet's pods, from its topology request.
#[derive(Default)]
struct Ranking {
    index_label: Option<String>,
    sub_group_index_label: Option<String>,
    sub_group_count: Option<i64>,
}

/// The PodSet's topology assignment, with its domains listed one by one, and how its pods are
/// ranked; `None` while the Workload holds no such assignment.
fn assignment_of(
    workload: &Workload,
    pod_set: &str,
) -> Option<(v1beta1::TopologyAssignment, Ranking)> {
    let assignment = workload
        .status
        .as_ref()?
        .admission
        .as_ref()?
        .pod_set_assignments
        .iter()
        .find(|assignment| assignment.name == pod_set)?
        .topology_assignment
        .clone()?;
    let ranking = workload
        .spec
        .pod_sets
        .iter()
        .find(|candidate| candidate.name == pod_set)
        .and_then(|candidate| candidate.topology_request.as_ref())
        .map(|request| Ranking {
            index_label: request.pod_index_label.clone(),
            sub_group_index_label: request.sub_group_index_label.clone(),
            sub_group_count: request
                .sub_group_index_label
                .as_ref()
                .and(request.sub_group_count)
                .map(i64::from),
        })
        .unwrap_or_default();
    Some((assignment.into(), ranking))
}

/// The number a pod's `label` holds, if it has the label and the value is one.
fn label_number(pod: &Pod, label: Option<&str>) -> Option<i64> {
    pod.labels().get(label?)?.parse().ok()
}

/// The pod without the topology gate, its domain's labels added to its nodeSelector.
fn ungated(pod: &Value, node_selector: &BTreeMap<String, String>) -> Value {
    let mut target = pod.clone();
    let Some(spec) = target.get_mut("spec").and_then(Value::as_object_mut) else {
        return target;
    };
    let gates: Vec<Value> = spec
        .get("schedulingGates")
        .and_then(Value::as_array)
        .map(|gates| {
            gates
                .iter()
                .filter(|gate| gate["name"] != TOPOLOGY_SCHEDULING_GATE)
                .cloned()
                .collect()
        })
        .unwrap_or_default();
    if gates.is_empty() {
        spec.remove("schedulingGates");
    } else {
        spec.insert("schedulingGates".to_string(), Value::Array(gates));
    }
    let selector = spec
        .entry("nodeSelector")
        .or_insert_with(|| Value::Object(Map::new()));
    if !selector.is_object() {
        *selector = Value::Object(Map::new());
    }
    if let Some(selector) = selector.as_object_mut() {
        for (key, value) in node_selector {
            selector.insert(key.clone(), Value::String(value.clone()));
        }
    }
    target
}

#[cfg(test)]
mod tests;
