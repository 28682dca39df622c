//! `status` of ClusterQueues and LocalQueues, as Kueue's queue controllers write it: pending,
//! reserving and admitted workload counts, the usage of quota holders per flavor and resource,
//! and the `Active` condition.
//!
//! The scheduling loop computes the desired statuses after each cycle (purely, from the cycle's
//! snapshot) and hands them to [`write_statuses`], which patches only the queues whose status
//! differs from what the store shows, one at a time, in rounds at least [`MIN_WRITE_INTERVAL`]
//! apart.

use std::collections::BTreeMap;
use std::time::Duration;

use jiff::Timestamp;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::api::{Patch, PatchParams};
use kube::runtime::reflector::ObjectRef;
use kube::{Api, Client};
use serde::Serialize;
use tokio::sync::watch;

use crate::admitter::scheduling::cluster_state::{Holder, LocalQueueRef};
use crate::api::constants::{condition, reason};
use crate::api::v1beta2 as api;
use crate::k8s::conditions::{new_condition, set_condition};
use crate::k8s::json::merge_patch;
use crate::k8s::quantity::format_quantity;
use crate::quota::from_api::{
    QueueReferences, missing_flavors, missing_topologies, unusable_admission_checks,
};
use crate::quota::model::{FlavorResource, Quantity};
use crate::stores::Stores;

/// Shortest time between the starts of two rounds of status writes; changes in between are
/// coalesced. Kueue batches a queue's updates for a second.
///
/// A round writes one queue at a time, so with workloads streaming through, when every queue
/// changes in every round, the writes keep one request in flight: their share of a saturated
/// API server shrinks as its latency grows, and the admissions and the jobs' own writes get the
/// rest. On Kueue's large-scale scenario cut to 3 cohorts (300 ClusterQueues, 300 LocalQueues,
/// 15,000 Workloads), four at a time wrote 10,300-11,600 patches, each costing the API server
/// about as much as a Workload status write; one at a time wrote 3,900-4,300 and the run was
/// 10% shorter (BENCHMARKS.md).
pub const MIN_WRITE_INTERVAL: Duration = Duration::from_secs(2);
/// Wait before writing again after a failed write.
const RETRY_AFTER_FAILURE: Duration = Duration::from_secs(5);

/// Counts and usage of the workloads holding quota in one queue.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct QueueUsage {
    /// Workloads holding quota.
    pub reserving: i32,
    /// Of those, the admitted ones.
    pub admitted: i32,
    /// Quota reserved by all holders.
    pub reserved: BTreeMap<FlavorResource, Quantity>,
    /// Quota reserved by admitted workloads.
    pub in_use: BTreeMap<FlavorResource, Quantity>,
}

impl QueueUsage {
    fn add(&mut self, holder: &Holder) {
        let usage = holder
            .workload
            .admission
            .as_ref()
            .map(|admission| admission.usage())
            .unwrap_or_default();
        self.reserving += 1;
        add_all(&mut self.reserved, &usage);
        if holder.admitted {
            self.admitted += 1;
            add_all(&mut self.in_use, &usage);
        }
    }
}

fn add_all(
    total: &mut BTreeMap<FlavorResource, Quantity>,
    usage: &BTreeMap<FlavorResource, Quantity>,
) {
    for (fr, value) in usage {
        let entry = total.entry(fr.clone()).or_insert(0);
        *entry = entry.saturating_add(*value);
    }
}

/// Usage per ClusterQueue and per LocalQueue.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Usages {
    /// By ClusterQueue name.
    pub cluster_queues: BTreeMap<String, QueueUsage>,
    /// By LocalQueue.
    pub local_queues: BTreeMap<LocalQueueRef, QueueUsage>,
}

/// Adds up the quota holders per queue.
pub fn usages(holders: &[Holder]) -> Usages {
    let mut usages = Usages::default();
    for holder in holders {
        let Some(admission) = &holder.workload.admission else {
            continue;
        };
        usages
            .cluster_queues
            .entry(admission.cluster_queue.clone())
            .or_default()
            .add(holder);
        if let Some(local_queue) = &holder.local_queue {
            usages
                .local_queues
                .entry(local_queue.clone())
                .or_default()
                .add(holder);
        }
    }
    usages
}

/// Why a ClusterQueue admits nothing, or `None` when it is active: (reason, message).
pub fn inactive_reason(
    cluster_queue: &api::ClusterQueue,
    references: &QueueReferences,
) -> Option<(&'static str, String)> {
    if cluster_queue.metadata.deletion_timestamp.is_some() {
        return Some((
            reason::TERMINATING,
            "Can't admit new workloads; clusterQueue is terminating".to_owned(),
        ));
    }
    let mut reasons = Vec::new();
    let mut messages = Vec::new();
    if cluster_queue
        .spec
        .stop_policy
        .is_some_and(|policy| policy != api::StopPolicy::None)
    {
        reasons.push(reason::STOPPED);
        messages.push("is stopped".to_owned());
    }
    let missing = missing_flavors(cluster_queue, &references.flavors);
    if !missing.is_empty() {
        reasons.push(reason::FLAVOR_NOT_FOUND);
        messages.push(format!(
            "references missing ResourceFlavor(s): {}",
            missing.join(",")
        ));
    }
    let (missing, inactive) = unusable_admission_checks(cluster_queue, references);
    if !missing.is_empty() {
        reasons.push(reason::ADMISSION_CHECK_NOT_FOUND);
        messages.push(format!(
            "references missing AdmissionCheck(s): {}",
            missing.join(",")
        ));
    }
    if !inactive.is_empty() {
        reasons.push(reason::ADMISSION_CHECK_INACTIVE);
        messages.push(format!(
            "references inactive AdmissionCheck(s): {}",
            inactive.join(",")
        ));
    }
    for (flavor, topology) in missing_topologies(cluster_queue, references) {
        reasons.push(reason::TOPOLOGY_NOT_FOUND);
        messages.push(format!(
            "there is no Topology {topology:?} for TAS flavor {flavor:?}"
        ));
    }
    let first = reasons.first()?;
    Some((
        first,
        format!("Can't admit new workloads: {}.", messages.join(", ")),
    ))
}

/// The `status` label of `kueue_cluster_queue_status`.
pub fn cluster_queue_metric_status(
    cluster_queue: &api::ClusterQueue,
    references: &QueueReferences,
) -> &'static str {
    if cluster_queue.metadata.deletion_timestamp.is_some() {
        "terminated"
    } else if inactive_reason(cluster_queue, references).is_some() {
        "pending"
    } else {
        "active"
    }
}

/// Every (flavor, resource) the queue declares, flavors in order, resources sorted by name.
pub fn declared(cluster_queue: &api::ClusterQueue) -> Vec<(String, Vec<String>)> {
    cluster_queue
        .spec
        .resource_groups
        .iter()
        .flat_map(|group| {
            let mut resources = group.covered_resources.clone();
            resources.sort();
            group
                .flavors
                .iter()
                .map(move |flavor| (flavor.name.clone(), resources.clone()))
        })
        .collect()
}

fn nominal(cluster_queue: &api::ClusterQueue, fr: &FlavorResource) -> Quantity {
    cluster_queue
        .spec
        .resource_groups
        .iter()
        .flat_map(|group| &group.flavors)
        .filter(|flavor| flavor.name == fr.flavor)
        .flat_map(|flavor| &flavor.resources)
        .find(|quota| quota.name == fr.resource)
        .and_then(|quota| {
            crate::k8s::quantity::resource_value(&fr.resource, &quota.nominal_quota).ok()
        })
        .unwrap_or(0)
}

/// Kueue's `getUsage`: per declared flavor and resource, the total and (in a cohort) what
/// exceeds the nominal quota.
fn flavor_usage(
    cluster_queue: &api::ClusterQueue,
    usage: &BTreeMap<FlavorResource, Quantity>,
) -> Vec<api::FlavorUsage> {
    let in_cohort = cluster_queue
        .spec
        .cohort_name
        .as_deref()
        .is_some_and(|cohort| !cohort.is_empty());
    declared(cluster_queue)
        .into_iter()
        .map(|(flavor, resources)| api::FlavorUsage {
            resources: resources
                .into_iter()
                .map(|resource| {
                    let fr = FlavorResource::new(&flavor, &resource);
                    let used = usage.get(&fr).copied().unwrap_or(0);
                    let borrowed = if in_cohort {
                        used.saturating_sub(nominal(cluster_queue, &fr)).max(0)
                    } else {
                        0
                    };
                    api::ResourceUsage {
                        total: Some(format_quantity(&resource, used)),
                        borrowed: Some(format_quantity(&resource, borrowed)),
                        name: resource,
                    }
                })
                .collect(),
            name: flavor,
        })
        .collect()
}

/// Kueue's `filterLocalQueueUsage`: per flavor and resource of the ClusterQueue, the total.
fn local_flavor_usage(
    cluster_queue: &api::ClusterQueue,
    usage: &BTreeMap<FlavorResource, Quantity>,
) -> Vec<api::LocalQueueFlavorUsage> {
    declared(cluster_queue)
        .into_iter()
        .map(|(flavor, resources)| api::LocalQueueFlavorUsage {
            resources: resources
                .into_iter()
                .map(|resource| {
                    let used = usage
                        .get(&FlavorResource::new(&flavor, &resource))
                        .copied()
                        .unwrap_or(0);
                    api::LocalQueueResourceUsage {
                        total: Some(format_quantity(&resource, used)),
                        name: resource,
                    }
                })
                .collect(),
            name: flavor,
        })
        .collect()
}

fn active_condition(
    conditions: &[Condition],
    active: Result<&str, (&str, &str)>,
    generation: Option<i64>,
    now: Timestamp,
) -> Vec<Condition> {
    let mut conditions = conditions.to_vec();
    let new = match active {
        Ok(message) => new_condition(condition::ACTIVE, true, reason::READY).message(message),
        Err((inactive_reason, message)) => {
            new_condition(condition::ACTIVE, false, inactive_reason).message(message)
        }
    };
    set_condition(&mut conditions, new.generation(generation).at(now));
    conditions
}

/// What a ClusterQueue's status is computed from.
#[derive(Clone, Debug)]
pub struct ClusterQueueFacts<'a> {
    /// The flavors and AdmissionChecks that exist.
    pub references: &'a QueueReferences,
    /// Its quota holders.
    pub usage: &'a QueueUsage,
    /// Workloads waiting in it (active and inadmissible).
    pub pending: i32,
    /// `fairSharing.weightedShare`, when fair sharing is on.
    pub weighted_share: Option<i64>,
}

/// The status a ClusterQueue should have; conditions keep their transition times while their
/// status holds.
pub fn cluster_queue_status(
    cluster_queue: &api::ClusterQueue,
    facts: &ClusterQueueFacts<'_>,
    now: Timestamp,
) -> api::ClusterQueueStatus {
    let current = cluster_queue.status.clone().unwrap_or_default();
    let inactive = inactive_reason(cluster_queue, facts.references);
    let active = match &inactive {
        None => Ok("Can admit new workloads"),
        Some((inactive_reason, message)) => Err((*inactive_reason, message.as_str())),
    };
    api::ClusterQueueStatus {
        conditions: active_condition(
            &current.conditions,
            active,
            cluster_queue.metadata.generation,
            now,
        ),
        flavors_reservation: flavor_usage(cluster_queue, &facts.usage.reserved),
        flavors_usage: flavor_usage(cluster_queue, &facts.usage.in_use),
        pending_workloads: facts.pending,
        reserving_workloads: facts.usage.reserving,
        admitted_workloads: facts.usage.admitted,
        fair_sharing: facts
            .weighted_share
            .map(|weighted_share| api::FairSharingStatus { weighted_share }),
    }
}

/// What a LocalQueue's status is computed from.
#[derive(Clone, Debug)]
pub struct LocalQueueFacts<'a> {
    /// Its ClusterQueue, if it exists, and whether that queue is active.
    pub cluster_queue: Option<(&'a api::ClusterQueue, bool)>,
    /// Its quota holders.
    pub usage: &'a QueueUsage,
    /// Its workloads waiting for quota.
    pub pending: i32,
    /// Its consumption as admission fair sharing last sampled it (`None` when off).
    pub admission_fair_sharing: Option<&'a api::AdmissionFairSharingStatus>,
}

/// The status a LocalQueue should have; fields Kuota does not manage keep their values.
pub fn local_queue_status(
    local_queue: &api::LocalQueue,
    facts: &LocalQueueFacts<'_>,
    now: Timestamp,
) -> api::LocalQueueStatus {
    let current = local_queue.status.clone().unwrap_or_default();
    const CANNOT_SUBMIT: &str = "Can't submit new workloads to clusterQueue";
    let stopped = local_queue
        .spec
        .stop_policy
        .is_some_and(|policy| policy != api::StopPolicy::None);
    let active = match facts.cluster_queue {
        _ if stopped => Err((reason::STOPPED, "LocalQueue is stopped")),
        None => Err((reason::CLUSTER_QUEUE_DOES_NOT_EXIST, CANNOT_SUBMIT)),
        Some((_, false)) => Err((reason::CLUSTER_QUEUE_IS_INACTIVE, CANNOT_SUBMIT)),
        Some((_, true)) => Ok("Can submit new workloads to localQueue"),
    };
    let (flavors_reservation, flavors_usage) = match facts.cluster_queue {
        Some((cluster_queue, _)) => (
            local_flavor_usage(cluster_queue, &facts.usage.reserved),
            local_flavor_usage(cluster_queue, &facts.usage.in_use),
        ),
        None => (Vec::new(), Vec::new()),
    };
    api::LocalQueueStatus {
        conditions: active_condition(
            &current.conditions,
            active,
            local_queue.metadata.generation,
            now,
        ),
        pending_workloads: facts.pending,
        reserving_workloads: facts.usage.reserving,
        admitted_workloads: facts.usage.admitted,
        flavors_reservation,
        flavors_usage,
        fair_sharing: match facts.admission_fair_sharing {
            Some(sampled) => Some(api::LocalQueueFairSharingStatus {
                admission_fair_sharing_status: Some(sampled.clone()),
                ..current.fair_sharing.unwrap_or_default()
            }),
            None => current.fair_sharing,
        },
    }
}

/// The statuses every queue should have.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct DesiredStatuses {
    /// By ClusterQueue name.
    pub cluster_queues: BTreeMap<String, api::ClusterQueueStatus>,
    /// By LocalQueue.
    pub local_queues: BTreeMap<LocalQueueRef, api::LocalQueueStatus>,
}

/// Patches queues whose status in the store differs from the desired one, each time the
/// desired statuses change (rounds at least [`MIN_WRITE_INTERVAL`] apart), until `desired`
/// closes.
pub async fn write_statuses(
    client: Client,
    stores: Stores,
    mut desired: watch::Receiver<DesiredStatuses>,
) {
    let mut retry = false;
    loop {
        if retry {
            tokio::select! {
                changed = desired.changed() => if changed.is_err() { return },
                () = tokio::time::sleep(RETRY_AFTER_FAILURE) => {}
            }
        } else if desired.changed().await.is_err() {
            return;
        }
        let queues = round_order(&desired.borrow_and_update());
        retry = !write_round(
            queues,
            &desired,
            |queue, statuses| queue_patch(&stores, queue, statuses),
            |queue, patch| write_one(&client, queue, patch),
        )
        .await;
        tokio::time::sleep(MIN_WRITE_INTERVAL).await;
    }
}

/// A queue whose status is written.
#[derive(Clone, Debug, PartialEq, Eq)]
enum QueueName {
    Cluster(String),
    Local(LocalQueueRef),
}

/// The queues of `desired` in the order a round visits them: ClusterQueues first, whose status
/// is what `kubectl get clusterqueues` and Kueue's tools read.
fn round_order(desired: &DesiredStatuses) -> Vec<QueueName> {
    let cluster_queues = desired
        .cluster_queues
        .keys()
        .cloned()
        .map(QueueName::Cluster);
    let local_queues = desired.local_queues.keys().cloned().map(QueueName::Local);
    cluster_queues.chain(local_queues).collect()
}

/// Writes `queues` one at a time, each with the patch `patch` works out from the desired
/// statuses as they stand when its turn comes: a round on a slow API server takes long, and
/// what the passes decided meanwhile is what should be written, not the round's first view.
/// Returns whether every write succeeded.
async fn write_round<Written>(
    queues: Vec<QueueName>,
    desired: &watch::Receiver<DesiredStatuses>,
    patch: impl Fn(&QueueName, &DesiredStatuses) -> Option<serde_json::Value>,
    mut write: impl FnMut(QueueName, serde_json::Value) -> Written,
) -> bool
where
    Written: Future<Output = bool>,
{
    let mut all_written = true;
    for queue in queues {
        let Some(patch) = patch(&queue, &desired.borrow()) else {
            continue;
        };
        all_written &= write(queue, patch).await;
    }
    all_written
}

/// The merge patch that brings `queue`'s status in the store to the desired one, if they
/// differ and both exist.
fn queue_patch(
    stores: &Stores,
    queue: &QueueName,
    desired: &DesiredStatuses,
) -> Option<serde_json::Value> {
    match queue {
        QueueName::Cluster(name) => {
            let status = desired.cluster_queues.get(name)?;
            let current = stores.cluster_queues.get(&ObjectRef::new(name))?;
            status_patch(current.status.as_ref(), status)
        }
        QueueName::Local(queue) => {
            let status = desired.local_queues.get(queue)?;
            let reference = ObjectRef::new(&queue.name).within(&queue.namespace);
            let current = stores.local_queues.get(&reference)?;
            status_patch(current.status.as_ref(), status)
        }
    }
}

/// The merge patch from `current` to `desired`, `None` when they are equal. A queue without a
/// status gets all of `desired`: its counters have no schema default (as in Kueue's CRDs), so a
/// zero left out of the first write would stay missing, and `kubectl get` would print nothing.
fn status_patch<S: Serialize + PartialEq>(
    current: Option<&S>,
    desired: &S,
) -> Option<serde_json::Value> {
    let new = serde_json::to_value(desired).ok()?;
    let Some(current) = current else {
        return Some(serde_json::json!({ "status": new }));
    };
    if current == desired {
        return None;
    }
    let old = serde_json::to_value(current).ok()?;
    Some(serde_json::json!({ "status": merge_patch(&old, &new) }))
}

async fn write_one(client: &Client, queue: QueueName, patch: serde_json::Value) -> bool {
    let (params, patch) = (PatchParams::default(), Patch::Merge(&patch));
    let (name, written) = match &queue {
        QueueName::Cluster(name) => {
            let api: Api<api::ClusterQueue> = Api::all(client.clone());
            let written = api.patch_status(name, &params, &patch).await;
            (name.as_str(), written.map(drop))
        }
        QueueName::Local(queue) => {
            let api: Api<api::LocalQueue> = Api::namespaced(client.clone(), &queue.namespace);
            let written = api.patch_status(&queue.name, &params, &patch).await;
            (&*queue.name, written.map(drop))
        }
    };
    match written {
        Ok(()) => true,
        Err(kube::Error::Api(status)) if status.code == 404 => true,
        Err(error) => {
            tracing::warn!(%error, queue = name, "cannot write queue status");
            false
        }
    }
}

#[cfg(test)]
mod tests;
