//! Kueue's CRDs and the queue objects a test creates through the API: ResourceFlavors,
//! ClusterQueues (cpu quota only) and LocalQueues, built with `kuota::testing`.

use kube::Client;
use kube::api::{Api, PostParams};
use kuota::api::v1beta2::{ClusterQueue, LocalQueue, ResourceFlavor};
use kuota::testing::objects::{cluster_queue, flavor_with, local_queue};
use kuota_cluster::ControlPlane;
use serde_json::Value;

/// Installs (or updates) the eleven `kueue.x-k8s.io` CRDs.
pub async fn install_kueue_crds(plane: &ControlPlane) {
    plane
        .install_crds(&kuota::api::crds::all())
        .await
        .expect("install the Kueue CRDs");
}

/// Creates ResourceFlavor `name` with `spec`.
pub async fn create_flavor(client: &Client, name: &str, spec: Value) {
    let api: Api<ResourceFlavor> = Api::all(client.clone());
    api.create(&PostParams::default(), &flavor_with(name, spec))
        .await
        .expect("create flavor");
}

/// Creates ClusterQueue `name` for every namespace whose cpu quota is `flavors` (flavor name,
/// nominal quota); `spec` adds fields.
pub async fn create_cluster_queue(
    client: &Client,
    name: &str,
    flavors: &[(&str, &str)],
    spec: Value,
) {
    let quotas: Vec<[(&str, &str); 1]> = flavors
        .iter()
        .map(|(_, nominal)| [("cpu", *nominal)])
        .collect();
    let groups: Vec<(&str, &[(&str, &str)])> = flavors
        .iter()
        .zip(&quotas)
        .map(|((flavor, _), quota)| (*flavor, &quota[..]))
        .collect();
    let mut builder = cluster_queue(name).group(&["cpu"], &groups);
    if let Value::Object(extra) = spec {
        for (field, value) in extra {
            builder = builder.spec(&field, value);
        }
    }
    let api: Api<ClusterQueue> = Api::all(client.clone());
    api.create(&PostParams::default(), &builder.build())
        .await
        .expect("create cluster queue");
}

/// Creates LocalQueue `name` in `namespace`, pointing at `cluster_queue`.
pub async fn create_local_queue(client: &Client, namespace: &str, name: &str, cluster_queue: &str) {
    let api: Api<LocalQueue> = Api::namespaced(client.clone(), namespace);
    api.create(
        &PostParams::default(),
        &local_queue(namespace, name, cluster_queue),
    )
    .await
    .expect("create local queue");
}
