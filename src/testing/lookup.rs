//! A fixed, in-memory [`ClusterLookup`] for the admission handlers' tests, with a "live" layer
//! for objects the API server has that the caches have not seen yet.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use futures::FutureExt;
use futures::future::BoxFuture;
use k8s_openapi::api::core::v1::LimitRange;
use kube::ResourceExt;

use crate::admission::capacity::SnapshotCache;
use crate::admission::lookup::{ClusterLookup, QuotaObjects};
use crate::api::v1beta2::{ClusterQueue, Cohort, LocalQueue, ResourceFlavor};
use crate::quota::Snapshot;
use crate::quota::from_api::QuotaError;

/// Objects of one layer of an [`InMemoryLookup`].
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

/// A fixed [`ClusterLookup`] for tests: objects added with the builder methods are in the
/// cache; objects added with [`InMemoryLookup::live`] exist only on the "API server", as
/// if the watch had not delivered them yet.
#[derive(Clone, Debug, Default)]
pub struct InMemoryLookup {
    cached: Layer,
    live: Layer,
    /// As the server keeps it: objects with a `resourceVersion` are built into a snapshot once.
    snapshots: Arc<SnapshotCache>,
}

impl InMemoryLookup {
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

    /// Applies `build` to the live layer only: the objects it adds exist, but the cache has
    /// not seen them yet.
    pub fn live(mut self, build: impl FnOnce(Self) -> Self) -> Self {
        let live_only = build(Self {
            cached: self.live.clone(),
            ..Self::default()
        });
        self.live = live_only.cached;
        self
    }
}

impl ClusterLookup for InMemoryLookup {
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

    fn quota_snapshot(&self, objects: &QuotaObjects) -> Result<Arc<Snapshot>, QuotaError> {
        self.snapshots.snapshot(objects)
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
        let state = InMemoryLookup::new()
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
        let state = InMemoryLookup::new().with_namespace("team-a", &[("tier", "gold")]);
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
