//! Reflector stores shared by the webhook and the admitter: one watch per kind for the whole
//! process, read without API calls on the hot path.

use std::{fmt::Debug, hash::Hash, sync::Arc, time::Duration};

use futures::{StreamExt, future::BoxFuture};
use k8s_openapi::api::{
    core::v1::{LimitRange, Namespace, Node, Pod},
    scheduling::v1::PriorityClass,
};
use kube::{
    Api, Client, Resource,
    runtime::{
        WatchStreamExt,
        reflector::{self, Store},
        watcher,
    },
};
use serde::de::DeserializeOwned;
use tokio::sync::{broadcast, watch};

use crate::api::constants::condition;
use crate::api::v1beta2::{
    AdmissionCheck, ClusterQueue, Cohort, LocalQueue, ResourceFlavor, Topology, Workload,
    WorkloadPriorityClass,
};
use crate::quota::node_usage::{self, NodeUsage};

/// Which store changed; the admitter wakes its scheduling loop on these.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Changed {
    ClusterQueue,
    LocalQueue,
    Cohort,
    ResourceFlavor,
    AdmissionCheck,
    WorkloadPriorityClass,
    PriorityClass,
    Workload,
    Namespace,
    LimitRange,
    Topology,
    Node,
    /// What pods outside topology-aware placement take on the nodes.
    NodeUsage,
}

/// Read handles for every watched kind.
#[derive(Clone)]
pub struct Stores {
    pub cluster_queues: Store<ClusterQueue>,
    pub local_queues: Store<LocalQueue>,
    pub cohorts: Store<Cohort>,
    pub resource_flavors: Store<ResourceFlavor>,
    pub admission_checks: Store<AdmissionCheck>,
    pub workload_priority_classes: Store<WorkloadPriorityClass>,
    pub priority_classes: Store<PriorityClass>,
    pub workloads: Store<Workload>,
    pub namespaces: Store<Namespace>,
    pub limit_ranges: Store<LimitRange>,
    pub topologies: Store<Topology>,
    /// Nodes, for the free capacity of topology-aware flavors.
    pub nodes: Store<Node>,
    /// What the pods Kueue did not place by topology take on each node.
    pub node_usage: watch::Receiver<Arc<NodeUsage>>,
    changes: broadcast::Sender<Changed>,
    synced: watch::Receiver<bool>,
}

/// The watch loops that fill [`Stores`]; run them for as long as the stores are used.
pub struct StoreDrivers(Vec<BoxFuture<'static, ()>>);

impl StoreDrivers {
    /// Runs every watch until the process ends.
    pub async fn run(self) {
        futures::future::join_all(self.0).await;
    }
}

impl Stores {
    /// Creates the stores and the watch loops that fill them. Pods are watched only with
    /// `topology_aware` scheduling, the one reader of what they take on the nodes.
    pub fn new(client: &Client, topology_aware: bool) -> (Self, StoreDrivers) {
        let (changes, _) = broadcast::channel(1024);
        let (synced_tx, synced) = watch::channel(false);
        let mut drivers = Vec::new();
        let stores = Self {
            cluster_queues: watch(client, &changes, Changed::ClusterQueue, &mut drivers, all),
            local_queues: watch(client, &changes, Changed::LocalQueue, &mut drivers, all),
            cohorts: watch(client, &changes, Changed::Cohort, &mut drivers, all),
            resource_flavors: watch(client, &changes, Changed::ResourceFlavor, &mut drivers, all),
            admission_checks: watch(client, &changes, Changed::AdmissionCheck, &mut drivers, all),
            workload_priority_classes: watch(
                client,
                &changes,
                Changed::WorkloadPriorityClass,
                &mut drivers,
                all,
            ),
            priority_classes: watch(client, &changes, Changed::PriorityClass, &mut drivers, all),
            workloads: watch(
                client,
                &changes,
                Changed::Workload,
                &mut drivers,
                unfinished,
            ),
            namespaces: watch(client, &changes, Changed::Namespace, &mut drivers, all),
            limit_ranges: watch(client, &changes, Changed::LimitRange, &mut drivers, all),
            topologies: watch(client, &changes, Changed::Topology, &mut drivers, all),
            nodes: watch(client, &changes, Changed::Node, &mut drivers, all),
            node_usage: if topology_aware {
                watch_node_usage(client, &changes, &mut drivers)
            } else {
                watch::channel(Arc::new(NodeUsage::none())).1
            },
            changes,
            synced,
        };
        drivers.push(Box::pin(mark_synced(stores.clone(), synced_tx)));
        (stores, StoreDrivers(drivers))
    }

    /// A receiver of change notifications (lagging receivers just miss coalesced events).
    pub fn subscribe(&self) -> broadcast::Receiver<Changed> {
        self.changes.subscribe()
    }

    /// Waits until every store has its initial list, or fails after `timeout`. Any number of
    /// callers may wait at once (call this, not the stores' own `wait_until_ready`).
    pub async fn wait_until_ready(&self, timeout: Duration) -> Result<(), StoresNotReady> {
        let mut synced = self.synced.clone();
        match tokio::time::timeout(timeout, synced.wait_for(|synced| *synced)).await {
            Ok(Ok(_)) => Ok(()),
            _ => Err(StoresNotReady(timeout)),
        }
    }
}

/// Publishes once every store has its initial list. kube's `Store::wait_until_ready` wakes only
/// the last of several tasks waiting on the same store (the others hang until polled for
/// another reason), so this is its only caller and everyone else waits on `synced`.
async fn mark_synced(stores: Stores, synced: watch::Sender<bool>) {
    let results = futures::join!(
        stores.cluster_queues.wait_until_ready(),
        stores.local_queues.wait_until_ready(),
        stores.cohorts.wait_until_ready(),
        stores.resource_flavors.wait_until_ready(),
        stores.admission_checks.wait_until_ready(),
        stores.workload_priority_classes.wait_until_ready(),
        stores.priority_classes.wait_until_ready(),
        stores.workloads.wait_until_ready(),
        stores.namespaces.wait_until_ready(),
        stores.limit_ranges.wait_until_ready(),
        stores.topologies.wait_until_ready(),
        stores.nodes.wait_until_ready(),
        async {
            let mut node_usage = stores.node_usage.clone();
            node_usage.wait_for(|usage| usage.synced).await.is_ok()
        },
    );
    let all = [
        results.0.is_ok(),
        results.1.is_ok(),
        results.2.is_ok(),
        results.3.is_ok(),
        results.4.is_ok(),
        results.5.is_ok(),
        results.6.is_ok(),
        results.7.is_ok(),
        results.8.is_ok(),
        results.9.is_ok(),
        results.10.is_ok(),
        results.11.is_ok(),
        results.12,
    ];
    if all.iter().all(|ok| *ok) {
        let _ = synced.send(true);
    }
}

/// The stores did not sync in time (for example, the Kueue CRDs are not installed).
#[derive(Debug, thiserror::Error)]
#[error("the watch caches did not sync within {0:?}; are the kueue.x-k8s.io CRDs installed?")]
pub struct StoresNotReady(pub Duration);

/// A store of every object of `K` that `keeps` keeps, trimmed; an object it stops keeping
/// leaves the store as if deleted.
fn watch<K>(
    client: &Client,
    changes: &broadcast::Sender<Changed>,
    kind: Changed,
    drivers: &mut Vec<BoxFuture<'static, ()>>,
    keeps: fn(&K) -> bool,
) -> Store<K>
where
    K: Stored + Clone + Debug + DeserializeOwned + Send + Sync + 'static,
    K::DynamicType: Default + Eq + Hash + Clone + Send + Sync,
{
    let (reader, writer) = reflector::store();
    let api: Api<K> = Api::all(client.clone());
    let changes = changes.clone();
    let stream = watcher(api, watcher::Config::default().any_semantic())
        .default_backoff()
        .modify(K::trim)
        .filter_map(move |event| futures::future::ready(kept(event, keeps)))
        .reflect(writer);
    drivers.push(Box::pin(async move {
        futures::pin_mut!(stream);
        while let Some(event) = stream.next().await {
            match event {
                // Every event counts, deletions included: they release quota.
                Ok(_) => {
                    let _ = changes.send(kind);
                }
                Err(err) => tracing::warn!(?kind, %err, "watch error; retrying with backoff"),
            }
        }
    }));
    reader
}

/// The usage of pods outside topology-aware placement, kept up to date from a watch of them.
fn watch_node_usage(
    client: &Client,
    changes: &broadcast::Sender<Changed>,
    drivers: &mut Vec<BoxFuture<'static, ()>>,
) -> watch::Receiver<Arc<NodeUsage>> {
    let (publish, usage) = watch::channel(Arc::new(NodeUsage::default()));
    let api: Api<Pod> = Api::all(client.clone());
    let config = watcher::Config::default()
        .labels(&node_usage::label_selector())
        .fields(node_usage::FIELD_SELECTOR)
        .any_semantic();
    let stream = watcher(api, config).default_backoff();
    let changes = changes.clone();
    drivers.push(Box::pin(async move {
        futures::pin_mut!(stream);
        let mut tracker = node_usage::NodeUsageTracker::default();
        while let Some(event) = stream.next().await {
            match event {
                Ok(event) => {
                    if let Some(changed) = tracker.apply(event) {
                        publish.send_replace(changed);
                        let _ = changes.send(Changed::NodeUsage);
                    }
                }
                Err(err) => tracing::warn!(%err, "pod watch error; retrying with backoff"),
            }
        }
    }));
    usage
}

fn all<K>(_: &K) -> bool {
    true
}

/// Finished Workloads are most of a busy cluster's, hold no quota and wait for nothing: no
/// reader of the store looks at them, so the store's memory follows the live Workloads
/// rather than every Workload ever run.
fn unfinished(workload: &Workload) -> bool {
    !workload.is_condition_true(condition::FINISHED)
}

/// The watch event as the store sees it: objects `keeps` does not keep are left out of the
/// initial list and deleted when they change.
pub(crate) fn kept<K>(
    event: Result<watcher::Event<K>, watcher::Error>,
    keeps: fn(&K) -> bool,
) -> Option<Result<watcher::Event<K>, watcher::Error>> {
    match event {
        Ok(watcher::Event::InitApply(object)) if !keeps(&object) => None,
        Ok(watcher::Event::Apply(object)) if !keeps(&object) => {
            Some(Ok(watcher::Event::Delete(object)))
        }
        event => Some(event),
    }
}

/// Drops what no reader of the stores looks at but every object carries: `managedFields`
/// (several entries per Workload once Kueue-compatible tools apply its status) and kubectl's
/// copy of the last applied object. It keeps the stores' memory in proportion to what is used.
pub(crate) fn strip_bookkeeping<K: Resource>(object: &mut K) {
    let meta = object.meta_mut();
    meta.managed_fields = None;
    if let Some(annotations) = meta.annotations.as_mut() {
        annotations.remove(LAST_APPLIED_ANNOTATION);
    }
}

/// A kind the stores hold, and what of it they drop on arrival.
trait Stored: Resource + Sized {
    /// Drops what no reader of the stores looks at.
    fn trim(&mut self) {
        strip_bookkeeping(self);
    }
}

impl Stored for ClusterQueue {}
impl Stored for LocalQueue {}
impl Stored for Cohort {}
impl Stored for ResourceFlavor {}
impl Stored for AdmissionCheck {}
impl Stored for WorkloadPriorityClass {}
impl Stored for PriorityClass {}
impl Stored for Workload {}
impl Stored for Namespace {}
impl Stored for LimitRange {}
impl Stored for Topology {}

impl Stored for Node {
    /// Also what a Node's status lists that placement does not read: its container images
    /// (often most of the object), volumes and system information.
    fn trim(&mut self) {
        strip_bookkeeping(self);
        if let Some(status) = self.status.as_mut() {
            status.images = None;
            status.volumes_attached = None;
            status.volumes_in_use = None;
            status.node_info = None;
        }
    }
}

/// kubectl's annotation holding the last object it applied client-side.
const LAST_APPLIED_ANNOTATION: &str = "kubectl.kubernetes.io/last-applied-configuration";

#[cfg(test)]
mod tests {
    use super::*;
    use kube::runtime::{reflector::store::Writer, watcher::Event};

    /// Stores filled by hand: the writers stand in for the watches.
    struct HandFed {
        stores: Stores,
        init_done: Vec<Box<dyn FnMut()>>,
    }

    fn fed<K>(init_done: &mut Vec<Box<dyn FnMut()>>) -> Store<K>
    where
        K: Resource + Clone + 'static,
        K::DynamicType: Default + Eq + Hash + Clone,
    {
        let (reader, mut writer): (Store<K>, Writer<K>) = reflector::store();
        init_done.push(Box::new(move || {
            writer.apply_watcher_event(&Event::InitDone)
        }));
        reader
    }

    fn hand_fed() -> (HandFed, watch::Sender<bool>) {
        let mut init_done = Vec::new();
        let (synced_tx, synced) = watch::channel(false);
        let stores = Stores {
            cluster_queues: fed(&mut init_done),
            local_queues: fed(&mut init_done),
            cohorts: fed(&mut init_done),
            resource_flavors: fed(&mut init_done),
            admission_checks: fed(&mut init_done),
            workload_priority_classes: fed(&mut init_done),
            priority_classes: fed(&mut init_done),
            workloads: fed(&mut init_done),
            namespaces: fed(&mut init_done),
            limit_ranges: fed(&mut init_done),
            topologies: fed(&mut init_done),
            nodes: fed(&mut init_done),
            node_usage: watch::channel(Arc::new(NodeUsage::none())).1,
            changes: broadcast::channel(1).0,
            synced,
        };
        (HandFed { stores, init_done }, synced_tx)
    }

    #[tokio::test]
    async fn every_concurrent_waiter_sees_the_stores_synced() {
        let (mut fed, synced_tx) = hand_fed();
        tokio::spawn(mark_synced(fed.stores.clone(), synced_tx));
        let waiters: Vec<_> = (0..3)
            .map(|_| {
                let stores = fed.stores.clone();
                tokio::spawn(async move { stores.wait_until_ready(Duration::from_secs(5)).await })
            })
            .collect();
        tokio::time::sleep(Duration::from_millis(20)).await;

        let (last, others) = fed.init_done.split_last_mut().unwrap();
        for init_done in others {
            init_done();
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
        assert!(waiters.iter().all(|waiter| !waiter.is_finished()));

        last();
        for waiter in waiters {
            let outcome = tokio::time::timeout(Duration::from_secs(1), waiter).await;
            assert!(matches!(outcome, Ok(Ok(Ok(())))), "{outcome:?}");
        }
    }

    #[tokio::test]
    async fn waiting_times_out_while_a_store_has_not_synced() {
        let (fed, synced_tx) = hand_fed();
        tokio::spawn(mark_synced(fed.stores.clone(), synced_tx));
        let outcome = fed.stores.wait_until_ready(Duration::from_millis(50)).await;
        assert_eq!(
            outcome.unwrap_err().to_string(),
            "the watch caches did not sync within 50ms; are the kueue.x-k8s.io CRDs installed?"
        );
    }

    fn workload(name: &str, finished: bool) -> Workload {
        let conditions = if finished {
            serde_json::json!([{"type": "Finished", "status": "True", "reason": "Succeeded",
                "message": "", "lastTransitionTime": "2026-12-02T10:00:00Z"}])
        } else {
            serde_json::json!([])
        };
        serde_json::from_value(serde_json::json!({
            "metadata": {"name": name, "namespace": "ns"},
            "spec": {"queueName": "lq", "podSets": []},
            "status": {"conditions": conditions},
        }))
        .unwrap()
    }

    #[test]
    fn finished_workloads_stay_out_of_the_store_and_leave_it_when_they_finish() {
        let (reader, mut writer) = reflector::store::<Workload>();
        let mut feed = |event| {
            if let Some(Ok(event)) = kept(Ok(event), unfinished) {
                writer.apply_watcher_event(&event);
            }
        };
        feed(watcher::Event::Init);
        feed(watcher::Event::InitApply(workload("running", false)));
        feed(watcher::Event::InitApply(workload("done", true)));
        feed(watcher::Event::InitDone);
        feed(watcher::Event::Apply(workload("new", false)));
        let names = |reader: &Store<Workload>| {
            let mut names: Vec<String> = reader
                .state()
                .iter()
                .map(|w| kube::ResourceExt::name_any(w.as_ref()))
                .collect();
            names.sort();
            names
        };
        assert_eq!(names(&reader), ["new", "running"]);
        feed(watcher::Event::Apply(workload("running", true)));
        assert_eq!(names(&reader), ["new"]);
    }

    #[test]
    fn bookkeeping_is_stripped_and_other_metadata_kept() {
        let mut namespace: Namespace = serde_json::from_value(serde_json::json!({
            "metadata": {
                "name": "team-a",
                "labels": {"team": "a"},
                "annotations": {
                    "kubectl.kubernetes.io/last-applied-configuration": "{}",
                    "owner": "platform",
                },
                "managedFields": [{"manager": "kubectl", "operation": "Apply"}],
            }
        }))
        .unwrap();
        strip_bookkeeping(&mut namespace);
        assert_eq!(
            serde_json::to_value(&namespace.metadata).unwrap(),
            serde_json::json!({
                "name": "team-a",
                "labels": {"team": "a"},
                "annotations": {"owner": "platform"},
            })
        );
    }
}
