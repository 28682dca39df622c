//! The pending workloads of a ClusterQueue or LocalQueue, as Kueue's visibility API lists them:
//! every workload waiting in the ClusterQueue (schedulable, parked as inadmissible or in
//! requeue backoff alike) in the quota core's queue order, with its position in the
//! ClusterQueue and in its LocalQueue, one page at a time.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use kube::ResourceExt;
use serde::Serialize;

use crate::admitter::scheduling::cluster_state::{self, ClusterState, Converted, LocalQueueRef};
use crate::admitter::scheduling::fair_usage::reported_usage;
use crate::api::v1beta2 as api;
use crate::quota::from_api::{ConversionOptions, workload_key};
use crate::quota::{model, queue_order};

/// Items per page when the request names no `limit` (Kueue's `DefaultPendingWorkloadsLimit`).
pub const DEFAULT_LIMIT: i64 = 1000;
/// The largest page (Kueue's `MaxPendingWorkloadsLimit`).
pub const MAX_LIMIT: i64 = 100_000;

/// Which items of the list a request asks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Page {
    /// Items to return at most.
    pub limit: usize,
    /// Items to skip first.
    pub offset: usize,
}

impl Page {
    /// Kueue's reading of the query: a missing or zero `limit` is [`DEFAULT_LIMIT`], limits are
    /// cut to `[0, MAX_LIMIT]`, a negative offset is 0.
    pub fn bounded(limit: Option<i64>, offset: Option<i64>) -> Self {
        let limit = match limit.unwrap_or(0) {
            0 => DEFAULT_LIMIT,
            limit => limit.clamp(0, MAX_LIMIT),
        };
        let offset = offset.unwrap_or(0).max(0);
        Self {
            limit: usize::try_from(limit).unwrap_or_default(),
            offset: usize::try_from(offset).unwrap_or(usize::MAX),
        }
    }
}

/// One item of a `PendingWorkloadsSummary`.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PendingWorkload {
    /// Name, namespace, creation time and owners (API version, kind, name and UID only).
    pub metadata: ObjectMeta,
    /// Effective priority.
    pub priority: i32,
    /// The LocalQueue it was submitted to.
    pub local_queue_name: String,
    /// 0-based position among the ClusterQueue's pending workloads.
    pub position_in_cluster_queue: i32,
    /// 0-based position among its LocalQueue's pending workloads.
    pub position_in_local_queue: i32,
}

/// A ClusterQueue or LocalQueue the request names that does not exist.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum UnknownQueue {
    /// No such ClusterQueue.
    ClusterQueue(String),
    /// No such LocalQueue in the namespace.
    LocalQueue(String),
}

#[derive(Clone, Debug)]
struct Entry {
    object: Arc<api::Workload>,
    workload: model::Workload,
    local_queue: LocalQueueRef,
}

/// Every ClusterQueue's pending workloads in queue order, and which ClusterQueue each
/// LocalQueue feeds, read from one state of the cluster.
#[derive(Clone, Debug, Default)]
pub struct PendingLists {
    cluster_queues: BTreeMap<String, Vec<Entry>>,
    local_queues: BTreeMap<LocalQueueRef, String>,
}

impl PendingLists {
    /// The lists of `state`, converted as the admitter converts it, so that a workload is
    /// pending here exactly when the admitter queues it.
    /// `fair_sharing` holds admission fair sharing's resource weights when it is on.
    pub fn read(
        state: &ClusterState,
        options: &ConversionOptions,
        fair_sharing: Option<&BTreeMap<String, f64>>,
    ) -> Self {
        Self::of(state, cluster_state::convert(state, options), fair_sharing)
    }

    /// The lists of `state`, already converted. Under admission fair sharing (`fair_sharing`:
    /// its resource weights), a ClusterQueue that uses it lists the workloads of the LocalQueue
    /// whose status reports the lowest usage first, as Kueue's visibility API does.
    pub fn of(
        state: &ClusterState,
        converted: Converted,
        fair_sharing: Option<&BTreeMap<String, f64>>,
    ) -> Self {
        let objects: BTreeMap<String, &Arc<api::Workload>> = state
            .workloads
            .iter()
            .map(|object| (workload_key(object), object))
            .collect();
        let mut cluster_queues: BTreeMap<String, Vec<Entry>> = state
            .cluster_queues
            .iter()
            .map(|cq| (cq.name_any(), Vec::new()))
            .collect();
        for pending in converted.pending {
            let Some(object) = objects.get(&pending.workload.key) else {
                continue;
            };
            if let Some(list) = cluster_queues.get_mut(&pending.workload.cluster_queue) {
                list.push(Entry {
                    object: Arc::clone(object),
                    workload: Arc::unwrap_or_clone(pending.workload),
                    local_queue: pending.local_queue,
                });
            }
        }
        let fair_queues: BTreeSet<String> = state
            .cluster_queues
            .iter()
            .filter(|cq| {
                cq.spec.admission_scope.as_ref().is_some_and(|scope| {
                    scope.admission_mode == api::AdmissionMode::UsageBasedAdmissionFairSharing
                })
            })
            .map(|cq| cq.name_any())
            .collect();
        let usages: BTreeMap<LocalQueueRef, f64> = fair_sharing
            .map(|weights| {
                state
                    .local_queues
                    .iter()
                    .map(|lq| (LocalQueueRef::of(lq), reported_usage(lq, weights)))
                    .collect()
            })
            .unwrap_or_default();
        let usage = |entry: &Entry| usages.get(&entry.local_queue).copied().unwrap_or(0.0);
        for (name, list) in &mut cluster_queues {
            if !usages.is_empty() && fair_queues.contains(name) {
                list.sort_by(|a, b| {
                    usage(a)
                        .total_cmp(&usage(b))
                        .then_with(|| queue_order(&a.workload, &b.workload))
                });
            } else {
                list.sort_by(|a, b| queue_order(&a.workload, &b.workload));
            }
        }
        let local_queues = state
            .local_queues
            .iter()
            .filter_map(|lq| {
                let cluster_queue = lq.spec.cluster_queue.clone()?;
                Some((LocalQueueRef::of(lq), cluster_queue))
            })
            .collect();
        Self {
            cluster_queues,
            local_queues,
        }
    }

    /// A page of the ClusterQueue's pending workloads; positions in LocalQueues count every
    /// earlier workload of the ClusterQueue, on this page or before it.
    pub fn in_cluster_queue(
        &self,
        cluster_queue: &str,
        page: Page,
    ) -> Result<Vec<PendingWorkload>, UnknownQueue> {
        let list = self
            .cluster_queues
            .get(cluster_queue)
            .ok_or_else(|| UnknownQueue::ClusterQueue(cluster_queue.to_owned()))?;
        let mut local_positions: BTreeMap<&LocalQueueRef, usize> = BTreeMap::new();
        let mut items = Vec::new();
        for (index, entry) in list
            .iter()
            .enumerate()
            .take(page.offset.saturating_add(page.limit))
        {
            let position = local_positions.entry(&entry.local_queue).or_default();
            if index >= page.offset {
                items.push(item(entry, index, *position));
            }
            *position += 1;
        }
        Ok(items)
    }

    /// A page of the LocalQueue's pending workloads, with their positions in its
    /// ClusterQueue; empty while that ClusterQueue does not exist.
    pub fn in_local_queue(
        &self,
        namespace: &str,
        local_queue: &str,
        page: Page,
    ) -> Result<Vec<PendingWorkload>, UnknownQueue> {
        let key = LocalQueueRef::new(namespace, local_queue);
        let cluster_queue = self
            .local_queues
            .get(&key)
            .ok_or_else(|| UnknownQueue::LocalQueue(local_queue.to_owned()))?;
        let Some(list) = self.cluster_queues.get(cluster_queue) else {
            return Ok(Vec::new());
        };
        Ok(list
            .iter()
            .enumerate()
            .filter(|(_, entry)| entry.local_queue == key)
            .enumerate()
            .skip(page.offset)
            .take(page.limit)
            .map(|(local_position, (index, entry))| item(entry, index, local_position))
            .collect())
    }
}

/// Where a pending workload stands in its ClusterQueue.
#[derive(Clone, Debug, PartialEq)]
pub struct Standing<'a> {
    /// Its ClusterQueue.
    pub cluster_queue: &'a str,
    /// The workload as the quota core sees it.
    pub workload: &'a model::Workload,
    /// Workloads ahead of it.
    pub ahead: usize,
    /// Of those, the keys (`namespace/name`) of the ones of higher priority, in queue order.
    pub higher_priority_ahead: Vec<&'a str>,
}

impl PendingLists {
    /// Where the workload with this key waits; `None` when it is not pending.
    pub fn standing(&self, key: &str) -> Option<Standing<'_>> {
        self.cluster_queues
            .iter()
            .find_map(|(cluster_queue, list)| {
                let index = list.iter().position(|entry| entry.workload.key == key)?;
                let workload = &list[index].workload;
                Some(Standing {
                    cluster_queue,
                    workload,
                    ahead: index,
                    higher_priority_ahead: list[..index]
                        .iter()
                        .filter(|entry| entry.workload.priority > workload.priority)
                        .map(|entry| entry.workload.key.as_str())
                        .collect(),
                })
            })
    }
}

fn item(entry: &Entry, cluster_position: usize, local_position: usize) -> PendingWorkload {
    let owners: Vec<OwnerReference> = entry
        .object
        .owner_references()
        .iter()
        .map(|owner| OwnerReference {
            api_version: owner.api_version.clone(),
            kind: owner.kind.clone(),
            name: owner.name.clone(),
            uid: owner.uid.clone(),
            ..OwnerReference::default()
        })
        .collect();
    PendingWorkload {
        metadata: ObjectMeta {
            name: Some(entry.object.name_any()),
            namespace: entry.object.namespace(),
            creation_timestamp: entry.object.metadata.creation_timestamp.clone(),
            owner_references: Some(owners).filter(|owners| !owners.is_empty()),
            ..ObjectMeta::default()
        },
        priority: entry.object.spec.priority.unwrap_or(0),
        local_queue_name: entry.local_queue.name.to_string(),
        position_in_cluster_queue: i32::try_from(cluster_position).unwrap_or(i32::MAX),
        position_in_local_queue: i32::try_from(local_position).unwrap_or(i32::MAX),
    }
}

#[cfg(test)]
mod tests;
