//! The test control plane itself: a real Job runs to completion on a kwok node, `kubectl` works
//! with the kubeconfig, and the apiserver calls a webhook registered by URL over TLS.

use std::{
    net::SocketAddr,
    sync::{
        Arc,
        atomic::{AtomicUsize, Ordering},
    },
    time::Duration,
};

use axum::{Json, Router, extract::State, routing::post};
use axum_server::tls_rustls::RustlsConfig;
use k8s_openapi::api::{
    admissionregistration::v1::MutatingWebhookConfiguration, batch::v1::Job, core::v1::Pod,
};
use kube::{
    Api,
    api::{ListParams, PostParams},
    core::{
        DynamicObject,
        admission::{AdmissionRequest, AdmissionResponse, AdmissionReview},
    },
};
use kuota_cluster::{TestCluster, assert_success, eventually, webhook_client};
use serde_json::json;

fn job(name: &str, completions: i32, labels: serde_json::Value) -> Job {
    serde_json::from_value(json!({
        "metadata": {"name": name, "labels": labels},
        "spec": {
            "completions": completions,
            "parallelism": completions,
            "template": {"spec": {
                "restartPolicy": "Never",
                "containers": [{"name": "main", "image": "busybox", "resources": {"requests": {"cpu": "100m"}}}]
            }}
        }
    }))
    .expect("valid job")
}

#[tokio::test]
async fn a_job_with_two_completions_runs_to_complete_on_a_kwok_node() {
    let cluster = TestCluster::shared().await;
    let ns = cluster.namespace().await;
    let jobs: Api<Job> = Api::namespaced(cluster.client().await, ns.name());
    jobs.create(&PostParams::default(), &job("two", 2, json!({})))
        .await
        .expect("create job");

    let complete = eventually(Duration::from_secs(90), "job two Complete", || async {
        jobs.get("two").await.ok().is_some_and(|j| {
            j.status.is_some_and(|s| {
                s.succeeded == Some(2)
                    && s.conditions
                        .unwrap_or_default()
                        .iter()
                        .any(|c| c.type_ == "Complete" && c.status == "True")
            })
        })
    })
    .await;
    complete.expect("the job completes");

    let pods: Api<Pod> = Api::namespaced(cluster.client().await, ns.name());
    let list = pods
        .list(&ListParams::default().labels("batch.kubernetes.io/job-name=two"))
        .await
        .expect("list pods");
    assert_eq!(list.items.len(), 2);
    for pod in &list.items {
        let node = pod.spec.as_ref().and_then(|s| s.node_name.clone());
        assert!(
            node.as_deref().is_some_and(|n| n.starts_with("kwok-")),
            "pod bound to a kwok node by kube-scheduler, got {node:?}"
        );
        assert_eq!(
            pod.status.as_ref().and_then(|s| s.phase.as_deref()),
            Some("Succeeded")
        );
    }

    let out = cluster
        .kubectl()
        .args(["get", "jobs", "-n", ns.name(), "-o", "name"])
        .output()
        .expect("run kubectl");
    assert_success(&out);
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "job.batch/two");
}

#[derive(Clone, Default)]
struct Seen(Arc<AtomicUsize>);

async fn add_label(
    State(seen): State<Seen>,
    Json(review): Json<AdmissionReview<DynamicObject>>,
) -> Json<AdmissionReview<DynamicObject>> {
    let request: AdmissionRequest<DynamicObject> =
        review.try_into().expect("review carries a request");
    seen.0.fetch_add(1, Ordering::SeqCst);
    let patch = json_patch::Patch(vec![json_patch::PatchOperation::Add(
        json_patch::AddOperation {
            path: "/metadata/labels/seen-by-webhook".parse().expect("pointer"),
            value: json!("yes"),
        },
    )]);
    let response = AdmissionResponse::from(&request)
        .with_patch(patch)
        .expect("patch serializes");
    Json(response.into_review())
}

#[tokio::test]
async fn the_apiserver_calls_a_webhook_registered_by_url() {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let cluster = TestCluster::shared().await;
    let ns = cluster.namespace().await;

    let key = rcgen::KeyPair::generate().expect("key");
    let params = rcgen::CertificateParams::new(vec!["127.0.0.1".to_string()]).expect("params");
    let cert = params.self_signed(&key).expect("self-signed");
    let tls = RustlsConfig::from_pem(cert.pem().into_bytes(), key.serialize_pem().into_bytes())
        .await
        .expect("tls config");
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr: SocketAddr = listener.local_addr().expect("addr");
    let seen = Seen::default();
    let app = Router::new()
        .route("/mutate", post(add_label))
        .with_state(seen.clone());
    let server = axum_server::from_tcp_rustls(listener, tls)
        .expect("tls listener")
        .serve(app.into_make_service());
    let server = tokio::spawn(server);

    let name = format!("smoke-{}", ns.name());
    let config: MutatingWebhookConfiguration = serde_json::from_value(json!({
        "metadata": {"name": name},
        "webhooks": [{
            "name": "smoke.kuota.test",
            "clientConfig": webhook_client(&format!("https://{addr}/mutate"), cert.pem().as_bytes()),
            "rules": [{"apiGroups": ["batch"], "apiVersions": ["v1"], "operations": ["CREATE"], "resources": ["jobs"]}],
            "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": ns.name()}},
            "sideEffects": "None",
            "admissionReviewVersions": ["v1"],
            "failurePolicy": "Fail",
            "timeoutSeconds": 5
        }]
    }))
    .expect("webhook configuration");
    cluster
        .plane()
        .register_webhooks(Some(&config), None)
        .await
        .expect("register webhook");

    let jobs: Api<Job> = Api::namespaced(cluster.client().await, ns.name());
    // Registration reaches the apiserver's webhook cache asynchronously.
    let mut created = None;
    for attempt in 0..50 {
        let name = format!("hooked-{attempt}");
        let job = jobs
            .create(
                &PostParams::default(),
                &job(&name, 1, json!({"app": "smoke"})),
            )
            .await
            .expect("create job");
        if job
            .metadata
            .labels
            .unwrap_or_default()
            .get("seen-by-webhook")
            == Some(&"yes".into())
        {
            created = Some(name);
            break;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert!(
        created.is_some(),
        "the webhook's patch was applied to a created Job"
    );
    assert!(seen.0.load(Ordering::SeqCst) >= 1);

    let api: Api<MutatingWebhookConfiguration> = Api::all(cluster.client().await);
    kuota_cluster::delete_ignoring_missing(&api, &name)
        .await
        .expect("remove webhook");
    server.abort();
}

#[tokio::test]
async fn a_job_labelled_keeprunning_runs_until_the_label_is_removed() {
    let cluster = TestCluster::shared().await;
    let ns = cluster.namespace().await;
    let jobs: Api<Job> = Api::namespaced(cluster.client().await, ns.name());
    let mut held = job("held", 1, json!({}));
    held.spec.as_mut().expect("spec").template.metadata = Some(
        serde_json::from_value(json!({"labels": {kuota_cluster::KEEP_RUNNING_LABEL: "true"}}))
            .expect("metadata"),
    );
    jobs.create(&PostParams::default(), &held)
        .await
        .expect("create job");
    let pods: Api<Pod> = Api::namespaced(cluster.client().await, ns.name());
    let selector = ListParams::default().labels("batch.kubernetes.io/job-name=held");
    eventually(Duration::from_secs(60), "pod Running", || async {
        pods.list(&selector).await.ok().is_some_and(|l| {
            l.items
                .iter()
                .any(|p| p.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Running"))
        })
    })
    .await
    .expect("the pod runs");
    tokio::time::sleep(Duration::from_secs(2)).await;
    let status = jobs.get("held").await.expect("job").status.expect("status");
    assert_eq!(
        status.succeeded.unwrap_or(0),
        0,
        "still running while labelled"
    );

    cluster.release_keep_running(ns.name(), "held");
    eventually(Duration::from_secs(60), "job held succeeded", || async {
        jobs.get("held")
            .await
            .ok()
            .and_then(|j| j.status)
            .and_then(|s| s.succeeded)
            == Some(1)
    })
    .await
    .expect("the job completes once the label is gone");
}
