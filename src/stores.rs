//! Reflector stores shared by the webhook and the admitter: one watch per kind for the whole
//! process, read without API calls on the hot path.

use std::{fmt::Debug, hash::Hash, time::Duration};

use futures::{StreamExt, future::BoxFuture};
use k8s_openapi::api::{
    core::v1::{LimitRange, Namespace},
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
use tokio::sync::broadcast;

use crate::api::v1beta2::{
    ClusterQueue, Cohort, LocalQueue, ResourceFlavor, Workload, WorkloadPriorityClass,
};

/// Which store changed; the admitter wakes its scheduling loop on these.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Changed {
    ClusterQueue,
    LocalQueue,
    Cohort,
    ResourceFlavor,
    WorkloadPriorityClass,
    PriorityClass,
    Workload,
    Namespace,
    LimitRange,
}

/// Read handles for every watched kind.
#[derive(Clone)]
pub struct Stores {
    pub cluster_queues: Store<ClusterQueue>,
    pub local_queues: Store<LocalQueue>,
    pub cohorts: Store<Cohort>,
    pub resource_flavors: Store<ResourceFlavor>,
    pub workload_priority_classes: Store<WorkloadPriorityClass>,
    pub priority_classes: Store<PriorityClass>,
    pub workloads: Store<Workload>,
    pub namespaces: Store<Namespace>,
    pub limit_ranges: Store<LimitRange>,
    changes: broadcast::Sender<Changed>,
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
    /// Creates the stores and the watch loops that fill them.
    pub fn new(client: &Client) -> (Self, StoreDrivers) {
        let (changes, _) = broadcast::channel(1024);
        let mut drivers = Vec::new();
        let stores = Self {
            cluster_queues: watch(client, &changes, Changed::ClusterQueue, &mut drivers),
            local_queues: watch(client, &changes, Changed::LocalQueue, &mut drivers),
            cohorts: watch(client, &changes, Changed::Cohort, &mut drivers),
            resource_flavors: watch(client, &changes, Changed::ResourceFlavor, &mut drivers),
            workload_priority_classes: watch(
                client,
                &changes,
                Changed::WorkloadPriorityClass,
                &mut drivers,
            ),
            priority_classes: watch(client, &changes, Changed::PriorityClass, &mut drivers),
            workloads: watch(client, &changes, Changed::Workload, &mut drivers),
            namespaces: watch(client, &changes, Changed::Namespace, &mut drivers),
            limit_ranges: watch(client, &changes, Changed::LimitRange, &mut drivers),
            changes,
        };
        (stores, StoreDrivers(drivers))
    }

    /// A receiver of change notifications (lagging receivers just miss coalesced events).
    pub fn subscribe(&self) -> broadcast::Receiver<Changed> {
        self.changes.subscribe()
    }

    /// Waits until every store has its initial list, or fails after `timeout`.
    pub async fn wait_until_ready(&self, timeout: Duration) -> Result<(), StoresNotReady> {
        let all = async {
            let results = futures::join!(
                self.cluster_queues.wait_until_ready(),
                self.local_queues.wait_until_ready(),
                self.cohorts.wait_until_ready(),
                self.resource_flavors.wait_until_ready(),
                self.workload_priority_classes.wait_until_ready(),
                self.priority_classes.wait_until_ready(),
                self.workloads.wait_until_ready(),
                self.namespaces.wait_until_ready(),
                self.limit_ranges.wait_until_ready(),
            );
            let ok = [
                results.0.is_ok(),
                results.1.is_ok(),
                results.2.is_ok(),
                results.3.is_ok(),
                results.4.is_ok(),
                results.5.is_ok(),
                results.6.is_ok(),
                results.7.is_ok(),
                results.8.is_ok(),
            ];
            ok.iter().all(|ok| *ok)
        };
        match tokio::time::timeout(timeout, all).await {
            Ok(true) => Ok(()),
            _ => Err(StoresNotReady(timeout)),
        }
    }
}

/// The stores did not sync in time (for example, the Kueue CRDs are not installed).
#[derive(Debug, thiserror::Error)]
#[error("the watch caches did not sync within {0:?}; are the kueue.x-k8s.io CRDs installed?")]
pub struct StoresNotReady(pub Duration);

fn watch<K>(
    client: &Client,
    changes: &broadcast::Sender<Changed>,
    kind: Changed,
    drivers: &mut Vec<BoxFuture<'static, ()>>,
) -> Store<K>
where
    K: Resource + Clone + Debug + DeserializeOwned + Send + Sync + 'static,
    K::DynamicType: Default + Eq + Hash + Clone + Send + Sync,
{
    let (reader, writer) = reflector::store();
    let api: Api<K> = Api::all(client.clone());
    let changes = changes.clone();
    let stream = watcher(api, watcher::Config::default().any_semantic())
        .default_backoff()
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
