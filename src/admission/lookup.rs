//! What the admission handlers know about the cluster: queues, quotas, namespaces and
//! LimitRanges, read through [`ClusterState`].
//!
//! [`StoreClusterState`] answers from the shared reflector [`Stores`]. The watch caches may lag
//! behind the API server (`kubectl apply -f dir/` creates a LocalQueue and a Job in the same
//! second), so the lookups a handler rejects on — a LocalQueue, a ClusterQueue, a namespace, and
//! the quota objects behind a "can never fit" verdict — confirm a cache miss with one live call
//! before answering "missing". Lookups that only feed defaulting or warnings read the cache
//! alone: a miss there is the common case and must not cost an API call on every request.
//!
//! [`InMemoryClusterState`] is a fixed, in-memory implementation for tests, with a separate
//! "live" layer to model objects the caches have not seen yet.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use futures::FutureExt;
use futures::future::BoxFuture;
use k8s_openapi::api::core::v1::{LimitRange, Namespace};
use kube::api::ListParams;
use kube::runtime::reflector::ObjectRef;
use kube::{Api, Client, ResourceExt};
use tracing::warn;

use crate::api::v1beta2::{ClusterQueue, Cohort, LocalQueue, ResourceFlavor};
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
pub trait ClusterState: Send + Sync {
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

    /// ClusterQueues, Cohorts and ResourceFlavors listed live, to confirm a verdict reached
    /// on the cache; `None` if the API server could not be asked.
    fn live_quota_objects(&self) -> BoxFuture<'_, Option<QuotaObjects>>;

    /// The LimitRanges of `namespace` (cache).
    fn limit_ranges(&self, namespace: &str) -> Vec<LimitRange>;
}

/// [`ClusterState`] over the shared reflector stores, with live GETs to confirm misses.
#[derive(Clone)]
pub struct StoreClusterState {
    stores: Stores,
    client: Client,
}

impl StoreClusterState {
    /// Reads `stores`; `client` makes the confirming calls.
    pub fn new(stores: Stores, client: Client) -> Self {
        Self { stores, client }
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

impl ClusterState for StoreClusterState {
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

/// Objects of one layer of an [`InMemoryClusterState`].
#[derive(Clone, Debug, Default)]
struct Layer {
    local_queues: BTreeMap<(String, String), Arc<LocalQueue>>,
    cluster_queues: BTreeMap<String, Arc<ClusterQueue>>,
    cohorts: BTreeMap<String, Arc<Cohort>>,
    resource_flavors: BTreeMap<String, Arc<ResourceFlavor>>,
    workload_priority_classes: BTreeSet<String>,
    namespaces: BTreeMap<String, BTreeMap<String, String>>,
    limit_ranges: BTreeMap<String, Vec<LimitRange>>,
}

impl Layer {
    fn quota_objects(&self) -> QuotaObjects {
        QuotaObjects {
            cluster_queues: self.cluster_queues.values().cloned().collect(),
            cohorts: self.cohorts.values().cloned().collect(),
            resource_flavors: self.resource_flavors.values().cloned().collect(),
        }
    }
}

/// A fixed [`ClusterState`] for tests: objects added with the builder methods are in the
/// cache; objects added with [`InMemoryClusterState::live`] exist only on the "API server", as
/// if the watch had not delivered them yet.
#[derive(Clone, Debug, Default)]
pub struct InMemoryClusterState {
    cached: Layer,
    live: Layer,
}

impl InMemoryClusterState {
    /// An empty cluster.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a namespace with these labels (plus `kubernetes.io/metadata.name`).
    pub fn with_namespace(mut self, name: &str, labels: &[(&str, &str)]) -> Self {
        let mut all: BTreeMap<String, String> = labels
            .iter()
            .map(|(key, value)| ((*key).to_owned(), (*value).to_owned()))
            .collect();
        all.insert(
            crate::config::NAMESPACE_NAME_LABEL.to_owned(),
            name.to_owned(),
        );
        self.cached.namespaces.insert(name.to_owned(), all.clone());
        self.live.namespaces.insert(name.to_owned(), all);
        self
    }

    /// Adds a LocalQueue (its namespace and name come from the object).
    pub fn with_local_queue(mut self, queue: LocalQueue) -> Self {
        let key = (queue.namespace().unwrap_or_default(), queue.name_any());
        let queue = Arc::new(queue);
        self.cached.local_queues.insert(key.clone(), queue.clone());
        self.live.local_queues.insert(key, queue);
        self
    }

    /// Adds a ClusterQueue.
    pub fn with_cluster_queue(mut self, queue: ClusterQueue) -> Self {
        let queue = Arc::new(queue);
        self.cached
            .cluster_queues
            .insert(queue.name_any(), queue.clone());
        self.live.cluster_queues.insert(queue.name_any(), queue);
        self
    }

    /// Adds a Cohort object.
    pub fn with_cohort(mut self, cohort: Cohort) -> Self {
        let cohort = Arc::new(cohort);
        self.cached
            .cohorts
            .insert(cohort.name_any(), cohort.clone());
        self.live.cohorts.insert(cohort.name_any(), cohort);
        self
    }

    /// Adds a ResourceFlavor.
    pub fn with_resource_flavor(mut self, flavor: ResourceFlavor) -> Self {
        let flavor = Arc::new(flavor);
        self.cached
            .resource_flavors
            .insert(flavor.name_any(), flavor.clone());
        self.live.resource_flavors.insert(flavor.name_any(), flavor);
        self
    }

    /// Adds a WorkloadPriorityClass by name.
    pub fn with_workload_priority_class(mut self, name: &str) -> Self {
        self.cached
            .workload_priority_classes
            .insert(name.to_owned());
        self.live.workload_priority_classes.insert(name.to_owned());
        self
    }

    /// Adds a LimitRange to `namespace`.
    pub fn with_limit_range(mut self, namespace: &str, range: LimitRange) -> Self {
        self.cached
            .limit_ranges
            .entry(namespace.to_owned())
            .or_default()
            .push(range.clone());
        self.live
            .limit_ranges
            .entry(namespace.to_owned())
            .or_default()
            .push(range);
        self
    }

    /// Applies `build` to the live layer only: the objects it adds exist, but the cache has
    /// not seen them yet.
    pub fn live(mut self, build: impl FnOnce(Self) -> Self) -> Self {
        let live_only = build(Self {
            cached: self.live.clone(),
            live: Layer::default(),
        });
        self.live = live_only.cached;
        self
    }
}

impl ClusterState for InMemoryClusterState {
    fn local_queue<'a>(
        &'a self,
        namespace: &'a str,
        name: &'a str,
    ) -> BoxFuture<'a, Option<Arc<LocalQueue>>> {
        let key = (namespace.to_owned(), name.to_owned());
        futures::future::ready(self.live.local_queues.get(&key).cloned()).boxed()
    }

    fn cached_local_queue(&self, namespace: &str, name: &str) -> Option<Arc<LocalQueue>> {
        self.cached
            .local_queues
            .get(&(namespace.to_owned(), name.to_owned()))
            .cloned()
    }

    fn local_queue_names(&self, namespace: &str) -> Vec<String> {
        self.cached
            .local_queues
            .keys()
            .filter(|(queue_namespace, _)| queue_namespace == namespace)
            .map(|(_, name)| name.clone())
            .collect()
    }

    fn cluster_queue<'a>(&'a self, name: &'a str) -> BoxFuture<'a, Option<Arc<ClusterQueue>>> {
        futures::future::ready(self.live.cluster_queues.get(name).cloned()).boxed()
    }

    fn cluster_queue_names(&self) -> Vec<String> {
        self.cached.cluster_queues.keys().cloned().collect()
    }

    fn workload_priority_class_exists(&self, name: &str) -> bool {
        self.cached.workload_priority_classes.contains(name)
    }

    fn namespace_labels<'a>(
        &'a self,
        namespace: &'a str,
    ) -> BoxFuture<'a, Option<BTreeMap<String, String>>> {
        futures::future::ready(self.live.namespaces.get(namespace).cloned()).boxed()
    }

    fn quota_objects(&self) -> QuotaObjects {
        self.cached.quota_objects()
    }

    fn live_quota_objects(&self) -> BoxFuture<'_, Option<QuotaObjects>> {
        futures::future::ready(Some(self.live.quota_objects())).boxed()
    }

    fn limit_ranges(&self, namespace: &str) -> Vec<LimitRange> {
        self.cached
            .limit_ranges
            .get(namespace)
            .cloned()
            .unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::v1beta2::LocalQueueSpec;

    fn queue(namespace: &str, name: &str) -> LocalQueue {
        let mut queue = LocalQueue::new(name, LocalQueueSpec::default());
        queue.metadata.namespace = Some(namespace.to_owned());
        queue
    }

    #[tokio::test]
    async fn live_only_objects_are_found_by_confirming_lookups_only() {
        let state = InMemoryClusterState::new()
            .with_local_queue(queue("ns", "cached"))
            .live(|live| live.with_local_queue(queue("ns", "fresh")));

        assert!(state.cached_local_queue("ns", "cached").is_some());
        assert!(state.cached_local_queue("ns", "fresh").is_none());
        assert!(state.local_queue("ns", "fresh").await.is_some());
        assert!(state.local_queue("ns", "cached").await.is_some());
        assert!(state.local_queue("ns", "other").await.is_none());
        assert_eq!(state.local_queue_names("ns"), vec!["cached".to_owned()]);
    }

    #[tokio::test]
    async fn namespaces_carry_their_name_label() {
        let state = InMemoryClusterState::new().with_namespace("team-a", &[("tier", "gold")]);
        let labels = state.namespace_labels("team-a").await.unwrap();
        assert_eq!(
            labels,
            BTreeMap::from([
                (
                    "kubernetes.io/metadata.name".to_owned(),
                    "team-a".to_owned()
                ),
                ("tier".to_owned(), "gold".to_owned()),
            ])
        );
        assert_eq!(state.namespace_labels("team-b").await, None);
    }
}
