//! What the admission handlers know about the cluster: queues, quotas, namespaces and
//! LimitRanges, read through [`ClusterLookup`].
//!
//! [`StoreLookup`] answers from the shared reflector [`Stores`]. The watch caches may lag
//! behind the API server (`kubectl apply -f dir/` creates a LocalQueue and a Job in the same
//! second), so the lookups a handler rejects on — a LocalQueue, a ClusterQueue, a namespace, and
//! the quota objects behind a "can never fit" verdict — confirm a cache miss with one live call
//! before answering "missing". Lookups that only feed defaulting or warnings read the cache
//! alone: a miss there is the common case and must not cost an API call on every request.
//!
//! Tests use `testing::lookup::InMemoryLookup`, with a separate "live" layer to model objects
//! the caches have not seen yet.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use futures::FutureExt;
use futures::future::BoxFuture;
use k8s_openapi::api::core::v1::{LimitRange, Namespace};
use kube::api::ListParams;
use kube::runtime::reflector::ObjectRef;
use kube::{Api, Client, ResourceExt};
use tracing::warn;

use super::capacity::{self, SnapshotCache};
use crate::api::v1beta2::{ClusterQueue, Cohort, LocalQueue, ResourceFlavor};
use crate::quota::Snapshot;
use crate::quota::from_api::QuotaError;
use crate::stores::Stores;

/// The objects quota arithmetic needs: every ClusterQueue, Cohort and ResourceFlavor.
#[derive(Clone, Debug, Default)]
pub struct QuotaObjects {
    /// All ClusterQueues.
    pub cluster_queues: Vec<Arc<ClusterQueue>>,
    /// All Cohort objects (cohorts named only by a ClusterQueue have none).
    pub cohorts: Vec<Arc<Cohort>>,
    /// All ResourceFlavors.
    pub resource_flavors: Vec<Arc<ResourceFlavor>>,
}

/// Read access to the cluster for the admission handlers.
///
/// Methods returning a future may make one live API call to confirm a cache miss; the others
/// read the cache only.
pub trait ClusterLookup: Send + Sync {
    /// The LocalQueue `namespace/name`; a cache miss is confirmed with a live GET.
    fn local_queue<'a>(
        &'a self,
        namespace: &'a str,
        name: &'a str,
    ) -> BoxFuture<'a, Option<Arc<LocalQueue>>>;

    /// The LocalQueue `namespace/name` as the cache has it.
    fn cached_local_queue(&self, namespace: &str, name: &str) -> Option<Arc<LocalQueue>>;

    /// Names of the LocalQueues in `namespace`, sorted (cache).
    fn local_queue_names(&self, namespace: &str) -> Vec<String>;

    /// The ClusterQueue `name`; a cache miss is confirmed with a live GET.
    fn cluster_queue<'a>(&'a self, name: &'a str) -> BoxFuture<'a, Option<Arc<ClusterQueue>>>;

    /// Names of all ClusterQueues, sorted (cache).
    fn cluster_queue_names(&self) -> Vec<String>;

    /// Whether the WorkloadPriorityClass `name` exists (cache).
    fn workload_priority_class_exists(&self, name: &str) -> bool;

    /// Labels of the namespace, `None` if it does not exist; a cache miss is confirmed with a
    /// live GET.
    fn namespace_labels<'a>(
        &'a self,
        namespace: &'a str,
    ) -> BoxFuture<'a, Option<BTreeMap<String, String>>>;

    /// ClusterQueues, Cohorts and ResourceFlavors (cache).
    fn quota_objects(&self) -> QuotaObjects;

    /// The quota core's snapshot of `objects` ([`capacity::snapshot`]); an implementation may
    /// keep one while the objects stay the same.
    fn quota_snapshot(&self, objects: &QuotaObjects) -> Result<Arc<Snapshot>, QuotaError> {
        capacity::snapshot(objects).map(Arc::new)
    }

    /// ClusterQueues, Cohorts and ResourceFlavors listed live, to confirm a verdict reached
    /// on the cache; `None` if the API server could not be asked.
    fn live_quota_objects(&self) -> BoxFuture<'_, Option<QuotaObjects>>;

    /// The LimitRanges of `namespace` (cache).
    fn limit_ranges(&self, namespace: &str) -> Vec<LimitRange>;
}

/// [`ClusterLookup`] over the shared reflector stores, with live GETs to confirm misses.
#[derive(Clone)]
pub struct StoreLookup {
    stores: Stores,
    client: Client,
    snapshots: Arc<SnapshotCache>,
}

impl StoreLookup {
    /// Reads `stores`; `client` makes the confirming calls.
    pub fn new(stores: Stores, client: Client) -> Self {
        Self {
            stores,
            client,
            snapshots: Arc::default(),
        }
    }
}

/// Answers a live lookup, logging (and treating as missing) an API error.
fn found<K>(kind: &str, name: &str, result: Result<Option<K>, kube::Error>) -> Option<Arc<K>> {
    match result {
        Ok(object) => object.map(Arc::new),
        Err(err) => {
            warn!(kind, name, %err, "cannot confirm a cache miss with the API server");
            None
        }
    }
}

impl ClusterLookup for StoreLookup {
    fn local_queue<'a>(
        &'a self,
        namespace: &'a str,
        name: &'a str,
    ) -> BoxFuture<'a, Option<Arc<LocalQueue>>> {
        async move {
            if let Some(queue) = self.cached_local_queue(namespace, name) {
                return Some(queue);
            }
            let api: Api<LocalQueue> = Api::namespaced(self.client.clone(), namespace);
            found("LocalQueue", name, api.get_opt(name).await)
        }
        .boxed()
    }

    fn cached_local_queue(&self, namespace: &str, name: &str) -> Option<Arc<LocalQueue>> {
        self.stores
            .local_queues
            .get(&ObjectRef::new(name).within(namespace))
    }

    fn local_queue_names(&self, namespace: &str) -> Vec<String> {
        let names: BTreeSet<String> = self
            .stores
            .local_queues
            .state()
            .iter()
            .filter(|queue| queue.namespace().as_deref() == Some(namespace))
            .map(|queue| queue.name_any())
            .collect();
        names.into_iter().collect()
    }

    fn cluster_queue<'a>(&'a self, name: &'a str) -> BoxFuture<'a, Option<Arc<ClusterQueue>>> {
        async move {
            if let Some(queue) = self.stores.cluster_queues.get(&ObjectRef::new(name)) {
                return Some(queue);
            }
            let api: Api<ClusterQueue> = Api::all(self.client.clone());
            found("ClusterQueue", name, api.get_opt(name).await)
        }
        .boxed()
    }

    fn cluster_queue_names(&self) -> Vec<String> {
        sorted_names(&self.stores.cluster_queues.state())
    }

    fn workload_priority_class_exists(&self, name: &str) -> bool {
        self.stores
            .workload_priority_classes
            .get(&ObjectRef::new(name))
            .is_some()
    }

    fn namespace_labels<'a>(
        &'a self,
        namespace: &'a str,
    ) -> BoxFuture<'a, Option<BTreeMap<String, String>>> {
        async move {
            let cached = self.stores.namespaces.get(&ObjectRef::new(namespace));
            let object = match cached {
                Some(object) => Some(object),
                None => {
                    let api: Api<Namespace> = Api::all(self.client.clone());
                    found("Namespace", namespace, api.get_opt(namespace).await)
                }
            };
            object.map(|namespace| namespace.labels().clone())
        }
        .boxed()
    }

    fn quota_objects(&self) -> QuotaObjects {
        QuotaObjects {
            cluster_queues: self.stores.cluster_queues.state(),
            cohorts: self.stores.cohorts.state(),
            resource_flavors: self.stores.resource_flavors.state(),
        }
    }

    fn quota_snapshot(&self, objects: &QuotaObjects) -> Result<Arc<Snapshot>, QuotaError> {
        self.snapshots.snapshot(objects)
    }

    fn live_quota_objects(&self) -> BoxFuture<'_, Option<QuotaObjects>> {
        async move {
            let params = ListParams::default();
            let cluster_queues: Api<ClusterQueue> = Api::all(self.client.clone());
            let cohorts: Api<Cohort> = Api::all(self.client.clone());
            let flavors: Api<ResourceFlavor> = Api::all(self.client.clone());
            let listed = futures::try_join!(
                cluster_queues.list(&params),
                cohorts.list(&params),
                flavors.list(&params),
            );
            match listed {
                Ok((cluster_queues, cohorts, flavors)) => Some(QuotaObjects {
                    cluster_queues: cluster_queues.items.into_iter().map(Arc::new).collect(),
                    cohorts: cohorts.items.into_iter().map(Arc::new).collect(),
                    resource_flavors: flavors.items.into_iter().map(Arc::new).collect(),
                }),
                Err(err) => {
                    warn!(%err, "cannot list quota objects to confirm a verdict");
                    None
                }
            }
        }
        .boxed()
    }

    fn limit_ranges(&self, namespace: &str) -> Vec<LimitRange> {
        self.stores
            .limit_ranges
            .state()
            .iter()
            .filter(|range| range.namespace().as_deref() == Some(namespace))
            .map(|range| range.as_ref().clone())
            .collect()
    }
}

fn sorted_names<K: ResourceExt>(objects: &[Arc<K>]) -> Vec<String> {
    let names: BTreeSet<String> = objects.iter().map(|object| object.name_any()).collect();
    names.into_iter().collect()
}
