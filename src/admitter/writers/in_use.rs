//! The `resource-in-use` finalizer that Kuota's webhook puts on ClusterQueues and
//! ResourceFlavors comes off once one being deleted is no longer used, as Kueue's controllers
//! take it off: a ClusterQueue when no Workload holds quota in it, a ResourceFlavor when no
//! ClusterQueue names it. Without this, `kubectl delete clusterqueue` would never return.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use kube::{Api, Client, ResourceExt};
use tokio::sync::broadcast;

use crate::api::constants::RESOURCE_IN_USE_FINALIZER;
use crate::api::v1beta2::{ClusterQueue, ResourceFlavor, Workload};
use crate::k8s::finalizers::remove;
use crate::stores::Stores;

/// A retry after a failed removal, even when nothing changes.
const RETRY_INTERVAL: Duration = Duration::from_secs(10);
/// A look at least this often when nothing seems to change.
const RESYNC_INTERVAL: Duration = Duration::from_secs(30);

/// What may lose the finalizer now, by name.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Unused {
    pub cluster_queues: Vec<String>,
    pub resource_flavors: Vec<String>,
}

fn releasable<K: ResourceExt>(object: &K) -> bool {
    object.meta().deletion_timestamp.is_some()
        && object
            .finalizers()
            .iter()
            .any(|finalizer| finalizer == RESOURCE_IN_USE_FINALIZER)
}

/// The ClusterQueues and ResourceFlavors being deleted that nothing uses any more. A
/// ClusterQueue being deleted still counts as naming its flavors until it is gone.
pub fn unused(
    cluster_queues: &[Arc<ClusterQueue>],
    resource_flavors: &[Arc<ResourceFlavor>],
    workloads: impl Fn() -> Vec<Arc<Workload>>,
) -> Unused {
    let deleted_queues: BTreeSet<String> = cluster_queues
        .iter()
        .filter(|queue| releasable(queue.as_ref()))
        .map(|queue| queue.name_any())
        .collect();
    let held: BTreeSet<String> = if deleted_queues.is_empty() {
        BTreeSet::new()
    } else {
        workloads()
            .iter()
            .filter_map(|workload| workload.reservation())
            .map(|admission| admission.cluster_queue.clone())
            .collect()
    };
    let named: BTreeSet<&str> = cluster_queues
        .iter()
        .flat_map(|queue| &queue.spec.resource_groups)
        .flat_map(|group| &group.flavors)
        .map(|flavor| flavor.name.as_str())
        .collect();
    Unused {
        cluster_queues: deleted_queues.difference(&held).cloned().collect(),
        resource_flavors: resource_flavors
            .iter()
            .filter(|flavor| releasable(flavor.as_ref()))
            .map(|flavor| flavor.name_any())
            .filter(|name| !named.contains(name.as_str()))
            .collect(),
    }
}

/// Takes the finalizer off what [`unused`] finds, after every change of the stores, until
/// the stores close.
pub async fn release_unused(client: Client, stores: Stores) {
    let mut changes = stores.subscribe();
    let queues: Api<ClusterQueue> = Api::all(client.clone());
    let flavors: Api<ResourceFlavor> = Api::all(client);
    loop {
        let found = unused(
            &stores.cluster_queues.state(),
            &stores.resource_flavors.state(),
            || stores.workloads.state(),
        );
        let mut failed = false;
        for name in &found.cluster_queues {
            failed |= release(&queues, &stores.cluster_queues.state(), name).await;
        }
        for name in &found.resource_flavors {
            failed |= release(&flavors, &stores.resource_flavors.state(), name).await;
        }
        let wait = if failed {
            RETRY_INTERVAL
        } else {
            RESYNC_INTERVAL
        };
        // A lagged receiver only means many changes: look again either way.
        let received = tokio::time::timeout(wait, changes.recv()).await;
        if let Ok(Err(broadcast::error::RecvError::Closed)) = received {
            return;
        }
        while changes.try_recv().is_ok() {}
    }
}

/// Removes the finalizer from the cached object `name`; returns whether that failed.
async fn release<K>(api: &Api<K>, cached: &[Arc<K>], name: &str) -> bool
where
    K: kube::Resource<DynamicType = ()> + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    let Some(object) = cached.iter().find(|object| object.name_any() == name) else {
        return false;
    };
    match remove(api, object, RESOURCE_IN_USE_FINALIZER).await {
        Ok(()) => {
            tracing::info!(kind = %K::kind(&()), name, "released the resource-in-use finalizer");
            false
        }
        // Gone already, or changed since the cache saw it: the next change brings it back.
        Err(kube::Error::Api(status)) if status.code == 404 || status.code == 409 => false,
        Err(error) => {
            tracing::warn!(kind = %K::kind(&()), name, %error, "cannot release the resource-in-use finalizer");
            true
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::objects::{cluster_queue, flavor, workload};

    fn in_use<K: kube::Resource>(mut object: K) -> Arc<K> {
        object.meta_mut().finalizers = Some(vec![RESOURCE_IN_USE_FINALIZER.to_owned()]);
        Arc::new(object)
    }

    fn deleted<K: kube::Resource>(mut object: K) -> Arc<K> {
        object.meta_mut().deletion_timestamp =
            Some(crate::testing::api_versions::time("2026-01-01T00:00:00Z"));
        in_use(object)
    }

    fn queue(name: &str, flavors: &[&str]) -> ClusterQueue {
        let groups: Vec<(&str, &[(&str, &str)])> = flavors
            .iter()
            .map(|flavor| (*flavor, &[("cpu", "1")][..]))
            .collect();
        cluster_queue(name).group(&["cpu"], &groups).build()
    }

    #[test]
    fn a_deleted_cluster_queue_is_released_once_no_workload_holds_quota_in_it() {
        let queues = [
            deleted(queue("busy", &["on-demand"])),
            deleted(queue("idle", &["on-demand"])),
            in_use(queue("live", &["on-demand"])),
        ];
        let holding = Arc::new(
            workload("ns", "w")
                .reserved("busy", serde_json::json!([]))
                .build(),
        );
        let pending = Arc::new(workload("ns", "p").queue("lq").build());
        assert_eq!(
            unused(&queues, &[], || vec![holding.clone(), pending.clone()]),
            Unused {
                cluster_queues: vec!["idle".to_owned()],
                resource_flavors: vec![],
            }
        );
    }

    #[test]
    fn a_deleted_flavor_is_released_once_no_cluster_queue_names_it() {
        let queues = [deleted(queue("leaving", &["spot"]))];
        let flavors = [
            deleted(flavor("spot")),
            deleted(flavor("unnamed")),
            in_use(flavor("kept")),
        ];
        assert_eq!(
            unused(&queues, &flavors, Vec::new),
            Unused {
                cluster_queues: vec!["leaving".to_owned()],
                resource_flavors: vec!["unnamed".to_owned()],
            }
        );
    }

    #[test]
    fn another_finalizer_alone_is_not_ours_to_release() {
        let mut other = queue("other", &[]);
        other.metadata.finalizers = Some(vec!["example.com/keep".to_owned()]);
        other.metadata.deletion_timestamp =
            Some(crate::testing::api_versions::time("2026-01-01T00:00:00Z"));
        assert_eq!(unused(&[Arc::new(other)], &[], Vec::new), Unused::default());
    }
}
