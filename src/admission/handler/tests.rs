//! The handler end to end over AdmissionRequests: routing, patches, denials and warnings.

mod properties;

use std::sync::Arc;

use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use super::*;
use crate::api::v1beta2::{LocalQueue, LocalQueueSpec};
use crate::config::{LoadOptions, QueueReferencePolicy};
use crate::testing::lookup::InMemoryLookup;
use crate::webhook::review::parse_admission_review;

fn handler(config: Configuration) -> KuotaAdmission {
    let mut queue = LocalQueue::new(
        "team-a",
        LocalQueueSpec {
            cluster_queue: Some("missing".to_owned()),
            ..LocalQueueSpec::default()
        },
    );
    queue.metadata.namespace = Some("team-a".to_owned());
    let state = InMemoryLookup::new()
        .with_namespace("team-a", &[])
        .with_local_queue(queue);
    KuotaAdmission::new(Arc::new(config), Arc::new(state))
}

fn default_config() -> Configuration {
    Configuration::from_defaults(&LoadOptions::default()).unwrap()
}

fn review_request(
    group: &str,
    version: &str,
    kind: &str,
    resource: &str,
    operation: &str,
    object: Value,
    old: Option<Value>,
) -> AdmissionRequest<RawObject> {
    let body = json!({
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {
            "uid": "u-1",
            "kind": {"group": group, "version": version, "kind": kind},
            "resource": {"group": group, "version": version, "resource": resource},
            "name": object["metadata"]["name"],
            "namespace": object["metadata"]["namespace"],
            "operation": operation,
            "userInfo": {"username": "alice"},
            "object": object,
            "oldObject": old,
        }
    });
    parse_admission_review(&serde_json::to_vec(&body).unwrap()).unwrap()
}

fn route(handler: &KuotaAdmission, path: &str) -> AdmissionRoute {
    handler
        .routes()
        .into_iter()
        .find(|route| route.path == path)
        .unwrap()
}

fn batch_job(labels: Value) -> Value {
    json!({
        "apiVersion": "batch/v1", "kind": "Job",
        "metadata": {"name": "pi", "namespace": "team-a", "labels": labels},
        "spec": {"template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]}}}
    })
}

fn patch(response: &AdmissionResponse) -> Option<Value> {
    response
        .patch
        .as_ref()
        .map(|bytes| serde_json::from_slice(bytes).unwrap())
}

#[test]
fn every_table_entry_is_routed() {
    let handler = handler(default_config());
    let routes = handler.routes();
    assert_eq!(routes.len(), 27);
    assert!(
        routes
            .iter()
            .any(|r| r.path == "/validate-kueue-x-k8s-io-v1beta2-workload"
                && r.webhook_type == WebhookType::Validating
                && r.kind == "Workload")
    );
}

#[tokio::test]
async fn a_job_is_suspended_by_a_json_patch() {
    let handler = handler(default_config());
    let job = batch_job(json!({"kueue.x-k8s.io/queue-name": "team-a"}));
    let request = review_request("batch", "v1", "Job", "jobs", "CREATE", job, None);
    let response = handler
        .admit(&route(&handler, "/mutate-batch-v1-job"), &request)
        .await;
    assert!(response.allowed);
    assert_eq!(
        patch(&response),
        Some(json!([{"op": "add", "path": "/spec/suspend", "value": true}]))
    );
}

#[tokio::test]
async fn disabled_frameworks_pass_unchanged() {
    let handler = handler(default_config());
    let jobset = json!({
        "apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
        "metadata": {"name": "js", "namespace": "team-a", "labels": {"kueue.x-k8s.io/queue-name": "nope"}},
        "spec": {"replicatedJobs": []}
    });
    let mutate = review_request(
        "jobset.x-k8s.io",
        "v1alpha2",
        "JobSet",
        "jobsets",
        "CREATE",
        jobset.clone(),
        None,
    );
    let response = handler
        .admit(
            &route(&handler, "/mutate-jobset-x-k8s-io-v1alpha2-jobset"),
            &mutate,
        )
        .await;
    assert!(response.allowed);
    assert_eq!(patch(&response), None);
    let response = handler
        .admit(
            &route(&handler, "/validate-jobset-x-k8s-io-v1alpha2-jobset"),
            &mutate,
        )
        .await;
    assert!(response.allowed);
}

#[tokio::test]
async fn denials_are_forbidden_with_the_message() {
    let handler = handler(default_config());
    let job = batch_job(json!({"kueue.x-k8s.io/queue-name": "team-a"}));
    let request = review_request("batch", "v1", "Job", "jobs", "CREATE", job, None);
    let response = handler
        .admit(&route(&handler, "/validate-batch-v1-job"), &request)
        .await;
    assert!(!response.allowed);
    assert_eq!(response.result.code, 403);
    assert_eq!(response.result.reason, "Forbidden");
    assert_eq!(
        response.result.message,
        r#"LocalQueue "team-a" points to ClusterQueue "missing", which does not exist; there are no ClusterQueues"#
    );
    assert_eq!(response.warnings, None);
}

#[tokio::test]
async fn warn_policy_admits_with_warnings() {
    let mut config = default_config();
    config.queue_reference_policy = QueueReferencePolicy::Warn;
    let handler = handler(config);
    let job = batch_job(json!({"kueue.x-k8s.io/queue-name": "team-b"}));
    let request = review_request("batch", "v1", "Job", "jobs", "CREATE", job, None);
    let response = handler
        .admit(&route(&handler, "/validate-batch-v1-job"), &request)
        .await;
    assert!(response.allowed);
    assert_eq!(
        response.warnings,
        Some(vec![
            r#"LocalQueue "team-b" does not exist in namespace "team-a"; LocalQueues in "team-a": team-a"#
                .to_owned()
        ])
    );
}

#[tokio::test]
async fn cluster_queues_and_flavors_get_the_finalizer() {
    let handler = handler(default_config());
    for (kind, resource, path) in [
        (
            "ClusterQueue",
            "clusterqueues",
            "/mutate-kueue-x-k8s-io-v1beta2-clusterqueue",
        ),
        (
            "ResourceFlavor",
            "resourceflavors",
            "/mutate-kueue-x-k8s-io-v1beta2-resourceflavor",
        ),
    ] {
        let object = json!({
            "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": kind,
            "metadata": {"name": "x"}, "spec": {}
        });
        let request = review_request(
            "kueue.x-k8s.io",
            "v1beta2",
            kind,
            resource,
            "CREATE",
            object,
            None,
        );
        let response = handler.admit(&route(&handler, path), &request).await;
        assert_eq!(
            patch(&response),
            Some(
                json!([{"op": "add", "path": "/metadata/finalizers", "value": ["kueue.x-k8s.io/resource-in-use"]}])
            ),
            "{kind}"
        );
    }
}

#[tokio::test]
async fn kueue_objects_are_validated_with_kueue_messages() {
    let handler = handler(default_config());
    let cohort = json!({
        "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Cohort",
        "metadata": {"name": "org"}, "spec": {"fairSharing": {"weight": "-2"}}
    });
    let request = review_request(
        "kueue.x-k8s.io",
        "v1beta2",
        "Cohort",
        "cohorts",
        "UPDATE",
        cohort.clone(),
        Some(cohort),
    );
    let response = handler
        .admit(
            &route(&handler, "/validate-kueue-x-k8s-io-v1beta2-cohort"),
            &request,
        )
        .await;
    assert!(!response.allowed);
    assert_eq!(
        response.result.message,
        r#"spec.fairSharing: Invalid value: "-2": must be greater than or equal to 0"#
    );

    let broken = json!({
        "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor",
        "metadata": {"name": "f"}, "spec": {"nodeTaints": "none"}
    });
    let request = review_request(
        "kueue.x-k8s.io",
        "v1beta2",
        "ResourceFlavor",
        "resourceflavors",
        "CREATE",
        broken,
        None,
    );
    let response = handler
        .admit(
            &route(&handler, "/validate-kueue-x-k8s-io-v1beta2-resourceflavor"),
            &request,
        )
        .await;
    assert!(!response.allowed);
    assert_eq!(
        response.result.message,
        "cannot decode the object: invalid type: string \"none\", expected a sequence"
    );
}

#[tokio::test]
async fn deletes_and_foreign_kinds_are_allowed() {
    let handler = handler(default_config());
    let job = batch_job(json!({"kueue.x-k8s.io/queue-name": "nope"}));
    let delete = review_request("batch", "v1", "Job", "jobs", "DELETE", job.clone(), None);
    let response = handler
        .admit(&route(&handler, "/validate-batch-v1-job"), &delete)
        .await;
    assert!(response.allowed);
    let pod = review_request("", "v1", "Pod", "pods", "CREATE", job, None);
    let response = handler
        .admit(&route(&handler, "/validate-batch-v1-job"), &pod)
        .await;
    assert!(response.allowed);
}

#[test]
fn the_converter_converts_kueue_objects() {
    let v1beta1 = json!({
        "apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "ClusterQueue",
        "metadata": {"name": "cq"}, "spec": {"cohort": "org"}
    });
    let converted = converter()
        .convert(v1beta1, "kueue.x-k8s.io/v1beta2")
        .unwrap();
    assert_eq!(converted["apiVersion"], json!("kueue.x-k8s.io/v1beta2"));
    assert_eq!(converted["spec"]["cohortName"], json!("org"));
}
