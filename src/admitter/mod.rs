//! The quota admitter: turns jobs into Workloads, queues them, reserves ClusterQueue quota and
//! starts the jobs; only the replica holding the leader Lease admits.

pub mod jobs;
pub mod provisioning;
pub mod retention;
pub mod scheduling;
pub mod writers;

use std::{future::Future, sync::Arc};

use futures::FutureExt;
use kube::Client;

pub use scheduling::run_scheduler;

use crate::{
    config::{Configuration, Feature},
    metrics::MetricsRegistry,
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
            let jobs = job_controllers_after_sync(client.clone(), config.clone(), stores.clone());
            let retention = match config.object_retention_policies.workloads.after_finished {
                Some(after) => retention::delete_finished(client.clone(), after).boxed(),
                None => futures::future::ready(()).boxed(),
            };
            let provisioning =
                provisioning_after_sync(client.clone(), config.clone(), stores.clone());
            let scheduler =
                run_scheduler(client, config, stores, metrics, futures::future::pending());
            let (_, scheduled, (), ()) = futures::join!(jobs, scheduler, retention, provisioning);
            if let Err(err) = scheduled {
                tracing::error!(%err, "the scheduler stopped");
            }
        }
    })
    .await;
}

async fn job_controllers_after_sync(client: Client, config: Arc<Configuration>, stores: Stores) {
    let timeout = config
        .controller
        .cache_sync_timeout
        .unwrap_or(scheduling::DEFAULT_CACHE_SYNC_TIMEOUT);
    if let Err(err) = stores.wait_until_ready(timeout).await {
        tracing::error!(%err, "job controllers not started");
        return;
    }
    jobs::run_job_controllers(client, config, stores, futures::future::pending().boxed()).await;
}

async fn provisioning_after_sync(client: Client, config: Arc<Configuration>, stores: Stores) {
    let timeout = config
        .controller
        .cache_sync_timeout
        .unwrap_or(scheduling::DEFAULT_CACHE_SYNC_TIMEOUT);
    if stores.wait_until_ready(timeout).await.is_err() {
        return;
    }
    let cleanup_on_eviction = config
        .feature_gates
        .enabled(Feature::CleanupProvisioningRequestsOnEviction);
    provisioning::run(client, stores, cleanup_on_eviction).await;
}
