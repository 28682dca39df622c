//! Kueue's CRDs and the queue objects a test creates through the API: ResourceFlavors,
//! ClusterQueues (cpu quota only) and LocalQueues.

use kube::Client;
use kube::api::{Api, PostParams};
use kuota::api::v1beta2::{ClusterQueue, LocalQueue, ResourceFlavor};
use kuota_cluster::ControlPlane;
use serde_json::{Value, json};

use super::json::from_json;

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
    api.create(
        &PostParams::default(),
        &from_json(json!({"metadata": {"name": name}, "spec": spec})),
    )
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
    let flavors: Vec<Value> = flavors
        .iter()
        .map(|(flavor, nominal)| {
            json!({"name": flavor, "resources": [{"name": "cpu", "nominalQuota": nominal}]})
        })
        .collect();
    let mut object = json!({
        "metadata": {"name": name},
        "spec": {
            "namespaceSelector": {},
            "resourceGroups": [{"coveredResources": ["cpu"], "flavors": flavors}],
        },
    });
    if let (Some(target), Value::Object(extra)) = (object["spec"].as_object_mut(), spec) {
        target.extend(extra);
    }
    let api: Api<ClusterQueue> = Api::all(client.clone());
    api.create(&PostParams::default(), &from_json(object))
        .await
        .expect("create cluster queue");
}

/// Creates LocalQueue `name` in `namespace`, pointing at `cluster_queue`.
pub async fn create_local_queue(client: &Client, namespace: &str, name: &str, cluster_queue: &str) {
    let api: Api<LocalQueue> = Api::namespaced(client.clone(), namespace);
    api.create(
        &PostParams::default(),
        &from_json(json!({
            "metadata": {"name": name},
            "spec": {"clusterQueue": cluster_queue},
        })),
    )
    .await
    .expect("create local queue");
}
