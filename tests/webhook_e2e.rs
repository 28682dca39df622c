//! The admission handlers behind the real webhook server, called by a real kube-apiserver:
//! jobs are suspended and defaulted, jobs that could never run are refused at `kubectl apply`
//! with Kuota's messages, Kueue's immutability rules hold, and v1beta1 objects round-trip
//! through the conversion webhook.
//!
//! One webhook server serves every test of this binary: it runs on a runtime of its own (each
//! `#[tokio::test]` has a runtime that ends with the test) and is registered once, by URL, with
//! the CA that signed its certificate.

use std::io::Write;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::PathBuf;
use std::process::{Output, Stdio};
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::ByteString;
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1 as apiextensions;
use kube::api::{Api, DynamicObject, Patch, PatchParams, PostParams};
use kube::core::{ApiResource, GroupVersionKind};
use kuota::admission::handler::{KuotaAdmission, converter};
use kuota::admission::lookup::StoreLookup;
use kuota::admission::table::{mutating_configuration, validating_configuration};
use kuota::api::v1beta2::{ClusterQueue, LocalQueue};
use kuota::config::{Configuration, LoadOptions};
use kuota::metrics::MetricsRegistry;
use kuota::stores::Stores;
use kuota::tls::certs::CertificateAuthority;
use kuota::tls::install_crypto_provider;
use kuota::webhook::{
    Readiness, ServerHandle, TlsSource, WebhookServerConfig, WebhookState, serve,
};
use kuota_cluster::{TestCluster, eventually, webhook_client};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use tokio::sync::OnceCell;

const INSTALL_NAMESPACE: &str = "kuota-system";
const DAY: Duration = Duration::from_secs(24 * 3600);

struct Harness {
    cluster: &'static TestCluster,
}

static HARNESS: OnceCell<Harness> = OnceCell::const_new();

/// Kueue's CRDs and the job CRDs installed, the webhook serving and registered.
async fn harness() -> &'static Harness {
    HARNESS
        .get_or_init(|| async {
            let cluster = TestCluster::shared().await;
            install_crds(cluster).await;

            let ca = CertificateAuthority::generate("kuota-e2e-ca", "kuota", DAY).expect("CA");
            let serving = ca
                .issue_serving_cert(
                    &["localhost".to_owned()],
                    &[IpAddr::V4(Ipv4Addr::LOCALHOST)],
                    DAY,
                )
                .expect("serving certificate");
            let (address_tx, address_rx) = tokio::sync::oneshot::channel();
            let tls = TlsSource::InMemory {
                cert_pem: serving.cert_pem.clone(),
                key_pem: serving.key_pem.clone(),
            };
            std::thread::spawn(move || {
                let runtime = tokio::runtime::Runtime::new().expect("webhook runtime");
                runtime.block_on(async move {
                    let server = start_webhook(cluster, tls).await;
                    let _ = address_tx.send(server.webhook_address());
                    // Serve for as long as the test binary runs.
                    std::future::pending::<()>().await;
                    drop(server);
                });
            });
            let address = address_rx.await.expect("the webhook server starts");
            register(cluster, address, serving.ca_pem.as_bytes()).await;
            Harness { cluster }
        })
        .await
}

async fn install_crds(cluster: &TestCluster) {
    cluster
        .plane()
        .install_crds(&kuota::api::crds::all())
        .await
        .expect("Kueue CRDs");
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("dev/cluster/crds");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("job CRDs directory")
        .map(|entry| entry.expect("directory entry").path())
        .collect();
    files.sort();
    cluster
        .plane()
        .install_crd_files(&files)
        .await
        .expect("job CRDs");
}

/// Runs on the webhook's own runtime: stores, handler, server.
async fn start_webhook(cluster: &'static TestCluster, tls: TlsSource) -> ServerHandle {
    install_crypto_provider();
    let client = cluster.client().await;
    // The webhook never reads what pods take on the nodes: no pod watch.
    let (stores, drivers) = Stores::new(&client, false);
    tokio::spawn(drivers.run());
    stores
        .wait_until_ready(Duration::from_secs(30))
        .await
        .expect("stores sync");
    let mut config = Configuration::from_defaults(&LoadOptions {
        fallback_namespace: Some(INSTALL_NAMESPACE.to_owned()),
        ..LoadOptions::default()
    })
    .expect("default configuration");
    config.integrations.frameworks = kuota::jobs::FRAMEWORKS
        .iter()
        .map(|framework| framework.name().to_owned())
        .collect();
    let handler = KuotaAdmission::new(Arc::new(config), Arc::new(StoreLookup::new(stores, client)));
    let state = WebhookState::new(Arc::new(handler), Arc::new(MetricsRegistry::new()))
        .with_converter(converter());
    serve(
        WebhookServerConfig {
            listen_address: SocketAddr::from(([127, 0, 0, 1], 0)),
            health_listen_address: SocketAddr::from(([127, 0, 0, 1], 0)),
            tls,
            shutdown_grace: Duration::from_secs(1),
        },
        state,
        Readiness::default(),
    )
    .await
    .expect("webhook server")
}

async fn register(cluster: &TestCluster, address: SocketAddr, ca_pem: &[u8]) {
    let url = |path: &str| webhook_client(&format!("https://{address}{path}"), ca_pem);
    let mutating = mutating_configuration("kuota-e2e-", url, INSTALL_NAMESPACE);
    let validating = validating_configuration("kuota-e2e-", url, INSTALL_NAMESPACE);
    cluster
        .plane()
        .register_webhooks(Some(&mutating), Some(&validating))
        .await
        .expect("webhook configurations");
    let converting: Vec<_> = kuota::api::crds::all()
        .into_iter()
        .filter(|crd| {
            [
                "clusterqueues",
                "localqueues",
                "workloads",
                "cohorts",
                "multikueueclusters",
            ]
            .contains(&crd.spec.names.plural.as_str())
        })
        .map(|crd| {
            let client = apiextensions::WebhookClientConfig {
                url: Some(format!("https://{address}/convert")),
                ca_bundle: Some(ByteString(ca_pem.to_vec())),
                service: None,
            };
            kuota::api::crds::with_conversion_webhook(crd, client)
        })
        .collect();
    cluster
        .plane()
        .install_crds(&converting)
        .await
        .expect("CRDs with the conversion webhook");
}

// === objects ===

fn cluster_queue(name: &str, cpu: &str) -> Value {
    json!({
        "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue",
        "metadata": {"name": name},
        "spec": {
            "namespaceSelector": {},
            "resourceGroups": [{
                "coveredResources": ["cpu", "memory"],
                "flavors": [{"name": "default", "resources": [
                    {"name": "cpu", "nominalQuota": cpu},
                    {"name": "memory", "nominalQuota": "64Gi"}
                ]}]
            }]
        }
    })
}

fn local_queue(namespace: &str, name: &str, cluster_queue: &str) -> Value {
    json!({
        "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"clusterQueue": cluster_queue}
    })
}

fn container(cpu: &str) -> Value {
    json!({"name": "main", "image": "busybox", "resources": {"requests": {"cpu": cpu, "memory": "64Mi"}}})
}

fn batch_job(name: &str, labels: Value, parallelism: i32, cpu: &str) -> Value {
    json!({
        "apiVersion": "batch/v1", "kind": "Job",
        "metadata": {"name": name, "labels": labels},
        "spec": {
            "parallelism": parallelism, "completions": parallelism,
            "template": {"spec": {"restartPolicy": "Never", "containers": [container(cpu)]}}
        }
    })
}

fn queue_label(queue: &str) -> Value {
    json!({"kueue.x-k8s.io/queue-name": queue})
}

/// The ResourceFlavor `default`, a ClusterQueue `<ns>-cq` with `cpu` cores in it and a
/// LocalQueue `team-a` in `ns` pointing to the ClusterQueue.
async fn queues(harness: &Harness, namespace: &str, cpu: &str) {
    let flavor = json!({
        "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor",
        "metadata": {"name": "default"}, "spec": {}
    });
    let output = apply(
        harness,
        Some(namespace),
        &[flavor, cluster_queue(&format!("{namespace}-cq"), cpu)],
    );
    assert!(output.status.success(), "{}", stderr(&output));
    let output = apply(
        harness,
        Some(namespace),
        &[local_queue(namespace, "team-a", &format!("{namespace}-cq"))],
    );
    assert!(output.status.success(), "{}", stderr(&output));
}

// === kubectl ===

fn kubectl(harness: &Harness, args: &[&str], stdin: Option<&str>) -> Output {
    let mut command = harness.cluster.kubectl();
    command
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = command.spawn().expect("kubectl runs");
    if let Some(input) = stdin {
        child
            .stdin
            .take()
            .expect("stdin")
            .write_all(input.as_bytes())
            .expect("write stdin");
    }
    drop(child.stdin.take());
    child.wait_with_output().expect("kubectl finishes")
}

/// `kubectl apply -f -` of the objects (as a List).
fn apply(harness: &Harness, namespace: Option<&str>, objects: &[Value]) -> Output {
    let list = json!({"apiVersion": "v1", "kind": "List", "items": objects});
    let mut args = vec!["apply", "-f", "-"];
    if let Some(namespace) = namespace {
        args.extend(["-n", namespace]);
    }
    kubectl(harness, &args, Some(&list.to_string()))
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr)
        .trim_end()
        .to_owned()
}

fn get_json(harness: &Harness, args: &[&str]) -> Value {
    let mut all = vec!["get"];
    all.extend(args);
    all.extend(["-o", "json"]);
    let output = kubectl(harness, &all, None);
    assert!(output.status.success(), "kubectl get: {}", stderr(&output));
    serde_json::from_slice(&output.stdout).expect("kubectl prints JSON")
}

// === tests ===

/// A batch Job, a JobSet, a RayJob and an MPIJob named `<kind>-<suffix>` with `labels`, each
/// with the path of its suspend field.
fn one_of_each_framework(suffix: &str, labels: &Value) -> Vec<(Value, String, &'static str)> {
    let jobset = json!({
        "apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
        "metadata": {"name": format!("js-{suffix}"), "labels": labels},
        "spec": {"replicatedJobs": [{"name": "workers", "replicas": 2, "template": {"spec": {
            "parallelism": 1, "completions": 1,
            "template": {"spec": {"restartPolicy": "Never", "containers": [container("1")]}}
        }}}]}
    });
    let head = json!({"rayStartParams": {}, "template": {"spec": {"containers": [
        {"name": "ray-head", "image": "rayproject/ray", "resources": {"requests": {"cpu": "1", "memory": "1Gi"}}}
    ]}}});
    let rayjob = json!({
        "apiVersion": "ray.io/v1", "kind": "RayJob",
        "metadata": {"name": format!("ray-{suffix}"), "labels": labels},
        "spec": {
            "entrypoint": "python -c 'print(1)'",
            "shutdownAfterJobFinishes": true,
            "rayClusterSpec": {"headGroupSpec": head, "workerGroupSpecs": []}
        }
    });
    let replica =
        |cpu: &str| json!({"replicas": 1, "template": {"spec": {"containers": [container(cpu)]}}});
    let mpijob = json!({
        "apiVersion": "kubeflow.org/v2beta1", "kind": "MPIJob",
        "metadata": {"name": format!("mpi-{suffix}"), "labels": labels},
        "spec": {"mpiReplicaSpecs": {"Launcher": replica("1"), "Worker": replica("2")}}
    });
    vec![
        (
            batch_job(&format!("job-{suffix}"), labels.clone(), 1, "1"),
            format!("job.batch/job-{suffix}"),
            "/spec/suspend",
        ),
        (
            jobset,
            format!("jobset.jobset.x-k8s.io/js-{suffix}"),
            "/spec/suspend",
        ),
        (
            rayjob,
            format!("rayjob.ray.io/ray-{suffix}"),
            "/spec/suspend",
        ),
        (
            mpijob,
            format!("mpijob.kubeflow.org/mpi-{suffix}"),
            "/spec/runPolicy/suspend",
        ),
    ]
}

#[tokio::test]
async fn jobs_with_a_queue_are_stored_suspended_at_their_own_field() {
    let harness = harness().await;
    let ns = harness.cluster.namespace().await;
    let ns = ns.name();
    queues(harness, ns, "100").await;

    let queued = one_of_each_framework("queued", &queue_label("team-a"));
    // Without a queue name (and manageJobsWithoutQueueName off) they are left alone.
    let unqueued = one_of_each_framework("plain", &json!({}));
    let objects: Vec<Value> = queued
        .iter()
        .chain(&unqueued)
        .map(|(object, _, _)| object.clone())
        .collect();
    let output = apply(harness, Some(ns), &objects);
    assert!(output.status.success(), "{}", stderr(&output));

    for (_, object, pointer) in &queued {
        let stored = get_json(harness, &["-n", ns, object]);
        assert_eq!(stored.pointer(pointer), Some(&json!(true)), "{object}");
    }
    for (_, object, pointer) in &unqueued {
        let stored = get_json(harness, &["-n", ns, object]);
        assert_ne!(stored.pointer(pointer), Some(&json!(true)), "{object}");
    }
}

#[tokio::test]
async fn a_job_in_a_namespace_with_a_default_local_queue_gets_the_label() {
    let harness = harness().await;
    let ns = harness.cluster.namespace().await;
    let ns = ns.name();
    queues(harness, ns, "10").await;
    let output = apply(
        harness,
        Some(ns),
        &[local_queue(ns, "default", &format!("{ns}-cq"))],
    );
    assert!(output.status.success(), "{}", stderr(&output));

    // Defaulting reads the watch cache: wait until a dry run shows it has the queue.
    let jobs: Api<Job> = Api::namespaced(harness.cluster.client().await, ns);
    let unlabelled: Job =
        serde_json::from_value(batch_job("plain", json!({}), 1, "1")).expect("a Job");
    let dry_run = PostParams {
        dry_run: true,
        ..PostParams::default()
    };
    eventually(
        Duration::from_secs(10),
        "the default LocalQueue is seen",
        || async {
            jobs.create(&dry_run, &unlabelled)
                .await
                .ok()
                .and_then(|job| job.metadata.labels)
                .is_some_and(|labels| labels.contains_key("kueue.x-k8s.io/queue-name"))
        },
    )
    .await
    .expect("defaulting applies");

    let output = apply(harness, Some(ns), &[batch_job("plain", json!({}), 1, "1")]);
    assert!(output.status.success(), "{}", stderr(&output));
    let stored = get_json(harness, &["-n", ns, "job/plain"]);
    assert_eq!(
        stored.pointer("/metadata/labels/kueue.x-k8s.io~1queue-name"),
        Some(&json!("default"))
    );
    assert_eq!(stored.pointer("/spec/suspend"), Some(&json!(true)));
}

#[tokio::test]
async fn kubectl_apply_refuses_jobs_that_could_never_run() {
    let harness = harness().await;
    let ns = harness.cluster.namespace().await;
    let ns = ns.name();
    queues(harness, ns, "8").await;
    let output = apply(
        harness,
        Some(ns),
        &[local_queue(ns, "orphan", "no-such-cq")],
    );
    assert!(output.status.success(), "{}", stderr(&output));

    let cases = [
        (
            batch_job("lost", queue_label("team-x"), 1, "1"),
            format!(
                r#"Error from server (Forbidden): error when creating "STDIN": admission webhook "vjob.kb.io" denied the request: LocalQueue "team-x" does not exist in namespace "{ns}"; LocalQueues in "{ns}": orphan, team-a"#
            ),
        ),
        (
            batch_job("stray", queue_label("orphan"), 1, "1"),
            r#"Error from server (Forbidden): error when creating "STDIN": admission webhook "vjob.kb.io" denied the request: LocalQueue "orphan" points to ClusterQueue "no-such-cq", which does not exist; ClusterQueues: "#.to_owned(),
        ),
        (
            batch_job("huge", queue_label("team-a"), 4, "5"),
            format!(
                r#"Error from server (Forbidden): error when creating "STDIN": admission webhook "vjob.kb.io" denied the request: the job requests cpu: 20 in pod set main (4 pods × 5), but ClusterQueue "{ns}-cq" can never give more than 8 (nominal quota plus what it may borrow)"#
            ),
        ),
    ];
    for (job, expected) in cases {
        // The list of LocalQueues comes from the watch cache: give it a moment to see "orphan".
        let mut printed = String::new();
        for _ in 0..50 {
            let output = apply(harness, Some(ns), std::slice::from_ref(&job));
            assert!(!output.status.success(), "refused: {expected}");
            printed = stderr(&output);
            if printed.starts_with(&expected) {
                break;
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        if expected.ends_with("ClusterQueues: ") {
            // Other tests create ClusterQueues too; the list names every one, ours included.
            assert!(printed.starts_with(&expected), "{printed}");
            assert!(printed.contains(&format!("{ns}-cq")), "{printed}");
        } else {
            assert_eq!(printed, expected);
        }
    }
    let jobs: Api<Job> = Api::namespaced(harness.cluster.client().await, ns);
    assert!(jobs.get_opt("lost").await.expect("get").is_none());
}

#[tokio::test]
async fn topology_annotations_kueue_refuses_are_refused_and_good_ones_kept() {
    let harness = harness().await;
    let ns = harness.cluster.namespace().await;
    let ns = ns.name();
    queues(harness, ns, "8").await;
    let with_annotations = |name: &str, annotations: Value| {
        let mut job = batch_job(name, queue_label("team-a"), 2, "1");
        job["spec"]["template"]["metadata"] = json!({"annotations": annotations});
        job
    };
    let both = with_annotations(
        "two-levels",
        json!({
            "kueue.x-k8s.io/podset-required-topology": "cloud.provider.com/topology-rack",
            "kueue.x-k8s.io/podset-preferred-topology": "cloud.provider.com/topology-block",
        }),
    );
    let output = apply(harness, Some(ns), &[both]);
    assert!(!output.status.success(), "refused");
    assert_eq!(
        stderr(&output),
        r#"Error from server (Forbidden): error when creating "STDIN": admission webhook "vjob.kb.io" denied the request: spec.template.metadata.annotations: Invalid value: must not contain more than one topology annotation: ["kueue.x-k8s.io/podset-required-topology", "kueue.x-k8s.io/podset-preferred-topology", "kueue.x-k8s.io/podset-unconstrained-topology"]"#
    );
    let sliced = with_annotations(
        "sliced",
        json!({
            "kueue.x-k8s.io/podset-required-topology": "cloud.provider.com/topology-block",
            "kueue.x-k8s.io/podset-slice-required-topology": "cloud.provider.com/topology-rack",
            "kueue.x-k8s.io/podset-slice-size": "3",
        }),
    );
    let output = apply(harness, Some(ns), &[sliced]);
    assert_eq!(
        stderr(&output),
        r#"Error from server (Forbidden): error when creating "STDIN": admission webhook "vjob.kb.io" denied the request: spec.template.metadata.annotations[kueue.x-k8s.io/podset-slice-size]: Invalid value: "3": must not be greater than pod set count 2"#
    );
    let jobs: Api<Job> = Api::namespaced(harness.cluster.client().await, ns);
    for refused in ["two-levels", "sliced"] {
        assert!(jobs.get_opt(refused).await.expect("get").is_none());
    }
    let rack = with_annotations(
        "one-rack",
        json!({"kueue.x-k8s.io/podset-required-topology": "cloud.provider.com/topology-rack"}),
    );
    let output = apply(harness, Some(ns), &[rack]);
    assert!(output.status.success(), "{}", stderr(&output));
}

#[tokio::test]
async fn the_queue_of_a_running_job_cannot_change() {
    let harness = harness().await;
    let ns = harness.cluster.namespace().await;
    let ns = ns.name();
    queues(harness, ns, "8").await;
    let output = apply(
        harness,
        Some(ns),
        &[batch_job("busy", queue_label("team-a"), 1, "1")],
    );
    assert!(output.status.success(), "{}", stderr(&output));

    // Play the admitter: start the job.
    let jobs: Api<Job> = Api::namespaced(harness.cluster.client().await, ns);
    jobs.patch(
        "busy",
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"suspend": false}})),
    )
    .await
    .expect("unsuspend");

    let output = kubectl(
        harness,
        &[
            "label",
            "-n",
            ns,
            "job/busy",
            "--overwrite",
            "kueue.x-k8s.io/queue-name=q2",
        ],
        None,
    );
    assert!(!output.status.success());
    assert_eq!(
        stderr(&output),
        r#"Error from server (Forbidden): admission webhook "vjob.kb.io" denied the request: metadata.labels[kueue.x-k8s.io/queue-name]: Invalid value: "q2": field is immutable"#
    );
}

#[tokio::test]
async fn a_v1beta1_cluster_queue_round_trips_through_v1beta2() {
    let harness = harness().await;
    let name = "roundtrip";
    let v1beta1_spec = json!({
        "cohort": "org",
        "namespaceSelector": {},
        "queueingStrategy": "StrictFIFO",
        "resourceGroups": [{
            "coveredResources": ["cpu"],
            "flavors": [{"name": "default", "resources": [
                {"name": "cpu", "nominalQuota": "4", "borrowingLimit": "2", "lendingLimit": "1"}
            ]}]
        }],
        "stopPolicy": "Hold",
        "fairSharing": {"weight": "2"}
    });
    let output = apply(
        harness,
        None,
        &[json!({
            "apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "ClusterQueue",
            "metadata": {"name": name}, "spec": v1beta1_spec
        })],
    );
    assert!(output.status.success(), "{}", stderr(&output));

    let v1beta2 = get_json(harness, &["clusterqueues.v1beta2.kueue.x-k8s.io", name]);
    assert_eq!(v1beta2["apiVersion"], json!("kueue.x-k8s.io/v1beta2"));
    assert_eq!(v1beta2["spec"]["cohortName"], json!("org"));
    assert_eq!(v1beta2["spec"].get("cohort"), None);
    assert_eq!(
        v1beta2["metadata"]["finalizers"],
        json!(["kueue.x-k8s.io/resource-in-use"])
    );

    let v1beta1 = get_json(harness, &["clusterqueues.v1beta1.kueue.x-k8s.io", name]);
    assert_eq!(v1beta1["apiVersion"], json!("kueue.x-k8s.io/v1beta1"));
    let mut expected = v1beta1_spec.clone();
    // Defaults the API server adds from the schema.
    for (key, value) in v1beta1["spec"].as_object().expect("spec") {
        if expected.get(key).is_none() {
            expected[key] = value.clone();
        }
    }
    assert_eq!(v1beta1["spec"], expected);

    // The typed client reads the same object as v1beta2.
    let typed: Api<ClusterQueue> = Api::all(harness.cluster.client().await);
    let queue = typed.get(name).await.expect("typed get");
    assert_eq!(queue.spec.cohort_name.as_deref(), Some("org"));
}

#[tokio::test]
async fn kueue_objects_are_validated_with_kueue_messages() {
    let harness = harness().await;
    let mut queue = cluster_queue("overlending", "4");
    queue["spec"]["cohortName"] = json!("org");
    queue["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0]["lendingLimit"] = json!("5");
    let output = apply(harness, None, &[queue]);
    assert!(!output.status.success());
    assert_eq!(
        stderr(&output),
        r#"Error from server (Forbidden): error when creating "STDIN": admission webhook "vclusterqueue.kb.io" denied the request: spec.resourceGroups[0].flavors[0].resources[0].lendingLimit: Invalid value: "5": must be less than or equal to the nominalQuota"#
    );

    // LocalQueues have no webhook; the stores see them and the job webhook finds them.
    let ns = harness.cluster.namespace().await;
    let lqs: Api<LocalQueue> = Api::namespaced(harness.cluster.client().await, ns.name());
    let queue: LocalQueue =
        serde_json::from_value(local_queue(ns.name(), "q", "anything")).expect("LocalQueue");
    lqs.create(&PostParams::default(), &queue)
        .await
        .expect("LocalQueue created");
    let gvk = GroupVersionKind::gvk("kueue.x-k8s.io", "v1beta1", "LocalQueue");
    let v1beta1: Api<DynamicObject> = Api::namespaced_with(
        harness.cluster.client().await,
        ns.name(),
        &ApiResource::from_gvk_with_plural(&gvk, "localqueues"),
    );
    let read = v1beta1.get("q").await.expect("v1beta1 LocalQueue");
    assert_eq!(read.data["spec"]["clusterQueue"], json!("anything"));
}

#[tokio::test]
async fn queues_and_a_job_applied_together_are_accepted() {
    let harness = harness().await;
    let ns = harness.cluster.namespace().await;
    let ns = ns.name();
    let flavor = json!({
        "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor",
        "metadata": {"name": "default"}, "spec": {}
    });
    let cq = format!("{ns}-together");
    // Like `kubectl apply -f dir/`: the job comes right after the queues it needs, before the
    // watch caches can have seen them; it needs more than a cached, smaller quota would give.
    let output = apply(
        harness,
        Some(ns),
        &[
            flavor,
            cluster_queue(&cq, "16"),
            local_queue(ns, "fresh", &cq),
            batch_job("together", queue_label("fresh"), 4, "4"),
        ],
    );
    assert!(output.status.success(), "{}", stderr(&output));
    let stored = get_json(harness, &["-n", ns, "job/together"]);
    assert_eq!(stored.pointer("/spec/suspend"), Some(&json!(true)));
}
