//! What the webhook benches send and the queues the reviews name: shared by `webhook_latency`
//! (which creates the queues on a control plane) and `admission_handler` (which holds them in
//! memory), so that both measure the same review.

use kuota::api::v1beta2::{ClusterQueue, LocalQueue, ResourceFlavor};
use serde_json::json;

/// The namespace of the reviewed Jobs.
pub const NAMESPACE: &str = "bench";
/// The LocalQueue the Jobs name.
pub const LOCAL_QUEUE: &str = "bench-lq";
/// Where the uid goes in [`review_template`].
pub const UID: &str = "UID-PLACEHOLDER";

/// The ResourceFlavor, a ClusterQueue with room for every job of the bench, and a LocalQueue
/// pointing to it.
pub fn queues() -> serde_json::Result<(ResourceFlavor, ClusterQueue, LocalQueue)> {
    let flavor = serde_json::from_value(json!({"metadata": {"name": "default"}, "spec": {}}))?;
    let cluster_queue = serde_json::from_value(json!({
        "metadata": {"name": "bench-cq"},
        "spec": {
            "namespaceSelector": {},
            "resourceGroups": [{
                "coveredResources": ["cpu", "memory"],
                "flavors": [{"name": "default", "resources": [
                    {"name": "cpu", "nominalQuota": "1000"},
                    {"name": "memory", "nominalQuota": "1Ti"}
                ]}]
            }]
        }
    }))?;
    let local_queue = serde_json::from_value(json!({
        "metadata": {"name": LOCAL_QUEUE, "namespace": NAMESPACE},
        "spec": {"clusterQueue": "bench-cq"}
    }))?;
    Ok((flavor, cluster_queue, local_queue))
}

/// An AdmissionReview of a Job with the queue label as the API server sends it for CREATE,
/// serialized once; each use replaces [`UID`] (the review's uid and the Job's name).
pub fn review_template() -> String {
    let job = json!({
        "apiVersion": "batch/v1", "kind": "Job",
        "metadata": {
            "name": format!("job-{UID}"), "namespace": NAMESPACE,
            "labels": {"kueue.x-k8s.io/queue-name": LOCAL_QUEUE}
        },
        "spec": {
            "parallelism": 2, "completions": 2, "backoffLimit": 6, "completionMode": "NonIndexed",
            "template": {"spec": {
                "restartPolicy": "Never",
                "containers": [{
                    "name": "main", "image": "busybox", "command": ["true"],
                    "resources": {"requests": {"cpu": "1", "memory": "200Mi"}}
                }]
            }}
        }
    });
    json!({
        "apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
        "request": {
            "uid": UID,
            "kind": {"group": "batch", "version": "v1", "kind": "Job"},
            "resource": {"group": "batch", "version": "v1", "resource": "jobs"},
            "requestKind": {"group": "batch", "version": "v1", "kind": "Job"},
            "requestResource": {"group": "batch", "version": "v1", "resource": "jobs"},
            "name": format!("job-{UID}"), "namespace": NAMESPACE, "operation": "CREATE",
            "userInfo": {"username": "bench", "groups": ["system:authenticated"]},
            "object": job,
            "oldObject": null,
            "dryRun": false,
            "options": {"apiVersion": "meta.k8s.io/v1", "kind": "CreateOptions"}
        }
    })
    .to_string()
}
