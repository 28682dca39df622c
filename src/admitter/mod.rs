//! The quota admitter: turns jobs into Workloads, queues them, reserves ClusterQueue quota and
//! starts the jobs, and lets the pods of topology-aware PodSets go to their domains; only the
//! replica holding the leader Lease admits.

pub mod jobs;
pub mod provisioning;
pub mod retention;
pub mod scheduling;
pub mod topology_ungater;
pub mod writers;

use std::{future::Future, sync::Arc};

use futures::FutureExt;
use kube::Client;

pub use scheduling::run_scheduler;

use crate::{
    config::{Configuration, Feature},
    metrics::{EventMetrics, MetricsRegistry},
    stores::Stores,
};

/// Runs the job controllers and the scheduler while this replica holds the leader Lease,
/// until `shutdown` completes (then the Lease is released so another replica takes over).
pub async fn run(
    client: Client,
    config: Arc<Configuration>,
    stores: Stores,
    metrics: Arc<MetricsRegistry>,
    shutdown: impl Future<Output = ()>,
) {
    let identity = crate::k8s::leader::default_identity();
    let election = config.leader_election.clone();
    crate::k8s::leader::lead(client.clone(), &election, identity, shutdown, || {
        let (client, config, stores, metrics) = (
            client.clone(),
            config.clone(),
            stores.clone(),
            metrics.clone(),
        );
        async move {
            // Both halves stop when this future is dropped on losing the Lease.
            let events = metrics.events.clone();
            let jobs = job_controllers_after_sync(
                client.clone(),
                config.clone(),
                stores.clone(),
                events.clone(),
            );
            let retention = match config.object_retention_policies.workloads.after_finished {
                Some(after) => {
                    retention::delete_finished(client.clone(), after, events.clone()).boxed()
                }
                None => futures::future::ready(()).boxed(),
            };
            let provisioning =
                provisioning_after_sync(client.clone(), config.clone(), stores.clone(), events);
            let ungater = ungater_after_sync(client.clone(), config.clone(), stores.clone());
            let scheduler =
                run_scheduler(client, config, stores, metrics, futures::future::pending());
            let (_, scheduled, (), (), ()) =
                futures::join!(jobs, scheduler, retention, provisioning, ungater);
            if let Err(err) = scheduled {
                tracing::error!(%err, "the scheduler stopped");
            }
        }
    })
    .await;
}

/// Waits until the stores hold the cluster, within `controller.cacheSyncTimeout`; false
/// (logged) when they do not, and `what` is not started.
async fn stores_synced(config: &Configuration, stores: &Stores, what: &str) -> bool {
    let timeout = config
        .controller
        .cache_sync_timeout
        .unwrap_or(scheduling::DEFAULT_CACHE_SYNC_TIMEOUT);
    match stores.wait_until_ready(timeout).await {
        Ok(()) => true,
        Err(err) => {
            tracing::error!(%err, "{what} not started");
            false
        }
    }
}

async fn job_controllers_after_sync(
    client: Client,
    config: Arc<Configuration>,
    stores: Stores,
    events: EventMetrics,
) {
    if stores_synced(&config, &stores, "job controllers").await {
        let shutdown = futures::future::pending().boxed();
        jobs::run_job_controllers(client, config, stores, events, shutdown).await;
    }
}

async fn provisioning_after_sync(
    client: Client,
    config: Arc<Configuration>,
    stores: Stores,
    events: EventMetrics,
) {
    if !stores_synced(&config, &stores, "the ProvisioningRequest check").await {
        return;
    }
    let cleanup_on_eviction = config
        .feature_gates
        .enabled(Feature::CleanupProvisioningRequestsOnEviction);
    provisioning::run(client, stores, cleanup_on_eviction, events).await;
}

/// The topology ungater, when `TopologyAwareScheduling` is on (no pod is gated otherwise).
async fn ungater_after_sync(client: Client, config: Arc<Configuration>, stores: Stores) {
    if config
        .feature_gates
        .enabled(Feature::TopologyAwareScheduling)
        && stores_synced(&config, &stores, "the topology ungater").await
    {
        topology_ungater::run(client, stores).await;
    }
}
