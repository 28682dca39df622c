//! The metrics of a real `kuota serve` against the real control plane, scraped as Prometheus
//! scrapes Kueue 0.19's: HTTPS on `metrics.bindAddress` (certificate not verified, as Kueue's
//! ServiceMonitor does), a ServiceAccount's bearer token that the API server reviews, and RBAC
//! on the non-resource URL `/metrics`. The `kueue_local_queue_*` series follow
//! `metrics.localQueueMetrics` and its selector.

mod common {
    pub mod admitted;
    pub mod json;
    pub mod kueue;
    pub mod workload;
}

use std::path::Path;
use std::time::{Duration, Instant};

use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::ServiceAccount;
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding};
use kube::Client;
use kube::api::{Api, ListParams, PostParams};
use kuota::api::constants::QUEUE_NAME_LABEL;
use kuota::api::v1beta2::{ClusterQueue, LocalQueue, ResourceFlavor, Workload};
use kuota::testing::objects::local_queue;
use kuota_cluster::{
    KEEP_RUNNING_LABEL, TestCluster, assert_success, delete_ignoring_missing, eventually,
};
use serde_json::json;

use common::admitted::is_admitted;
use common::json::from_json;
use common::kueue::{create_cluster_queue, create_flavor, create_local_queue, install_kueue_crds};

const WAIT: Duration = Duration::from_secs(90);

/// A Job with one pod requesting `cpu` that keeps running, in LocalQueue `queue`.
fn job(name: &str, queue: &str, cpu: &str) -> Job {
    from_json(json!({
        "metadata": {"name": name, "labels": {QUEUE_NAME_LABEL: queue}},
        "spec": {
            "parallelism": 1,
            "completions": 1,
            "template": {
                "metadata": {"labels": {KEEP_RUNNING_LABEL: "true"}},
                "spec": {
                    "restartPolicy": "Never",
                    "containers": [{
                        "name": "main",
                        "image": "busybox",
                        "resources": {"requests": {"cpu": cpu}},
                    }],
                },
            },
        },
    }))
}

/// A ServiceAccount's token, as `kubectl create token` prints it.
fn token(cluster: &TestCluster, namespace: &str, account: &str) -> String {
    let out = cluster
        .kubectl()
        .args(["create", "token", account, "-n", namespace])
        .output()
        .expect("kubectl create token");
    assert_success(&out);
    String::from_utf8(out.stdout).unwrap().trim().to_owned()
}

/// ServiceAccounts `reader` (bound to a ClusterRole with `get` on `/metrics`, as Kueue's
/// `kueue-metrics-reader`) and `nobody` (no role) in `namespace`; returns the role's name.
async fn service_accounts(client: &Client, namespace: &str) -> String {
    let accounts: Api<ServiceAccount> = Api::namespaced(client.clone(), namespace);
    for name in ["reader", "nobody"] {
        accounts
            .create(
                &PostParams::default(),
                &from_json(json!({"metadata": {"name": name}})),
            )
            .await
            .expect("create service account");
    }
    let role_name = format!("{namespace}-metrics-reader");
    let roles: Api<ClusterRole> = Api::all(client.clone());
    roles
        .create(
            &PostParams::default(),
            &from_json(json!({
                "metadata": {"name": role_name},
                "rules": [{"nonResourceURLs": ["/metrics"], "verbs": ["get"]}],
            })),
        )
        .await
        .expect("create cluster role");
    let bindings: Api<ClusterRoleBinding> = Api::all(client.clone());
    bindings
        .create(
            &PostParams::default(),
            &from_json(json!({
                "metadata": {"name": role_name},
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role_name},
                "subjects": [{"kind": "ServiceAccount", "name": "reader", "namespace": namespace}],
            })),
        )
        .await
        .expect("create cluster role binding");
    role_name
}

/// Status and body of `method /metrics`, with `token` as the bearer token if given.
async fn scrape(
    client: &reqwest::Client,
    port: u16,
    method: reqwest::Method,
    token: Option<&str>,
) -> (u16, String) {
    let mut request = client.request(method, format!("https://127.0.0.1:{port}/metrics"));
    if let Some(token) = token {
        request = request.bearer_auth(token);
    }
    let response = request.send().await.expect("scrape the metrics");
    let status = response.status().as_u16();
    (status, response.text().await.unwrap())
}

/// The series lines of `text` missing from `expected`.
fn missing<'a>(text: &str, expected: &'a [String]) -> Vec<&'a String> {
    expected
        .iter()
        .filter(|line| !text.lines().any(|have| have == line.as_str()))
        .collect()
}

#[tokio::test]
async fn metrics_are_served_over_https_to_service_accounts_allowed_to_read_them() {
    kuota::tls::install_crypto_provider();
    let cluster = TestCluster::shared().await;
    let plane = cluster.plane();
    install_kueue_crds(plane).await;
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("config.yaml");
    std::fs::write(
        &config,
        "apiVersion: config.kueue.x-k8s.io/v1beta2\nkind: Configuration\n\
         metrics:\n  localQueueMetrics:\n    \
         enable: true\n    localQueueSelector:\n      matchLabels: {metrics: 'on'}\n",
    )
    .unwrap();
    let kuota = plane
        .start_kuota(
            Path::new(env!("CARGO_BIN_EXE_kuota")),
            &["--config", &config.display().to_string()],
        )
        .await
        .expect("kuota serve starts");
    // start_kuota serves /metrics on a free port of its own (--metrics-addr).
    let metrics_port = kuota.metrics_port;

    let client = cluster.client().await;
    let ns = cluster.namespace().await;
    let namespace = ns.name().to_owned();
    let flavor = format!("{namespace}-flavor");
    let cluster_queue = format!("{namespace}-cq");
    create_flavor(
        &client,
        &flavor,
        json!({"nodeLabels": {"instance-type": "on-demand"}}),
    )
    .await;
    create_cluster_queue(&client, &cluster_queue, &[(&flavor, "1")], json!({})).await;
    let local_queues: Api<LocalQueue> = Api::namespaced(client.clone(), &namespace);
    let mut watched = local_queue(&namespace, "team", &cluster_queue);
    watched.metadata.labels = Some([("metrics".to_owned(), "on".to_owned())].into());
    local_queues
        .create(&PostParams::default(), &watched)
        .await
        .expect("create the selected local queue");
    create_local_queue(&client, &namespace, "quiet", &cluster_queue).await;
    let role = service_accounts(&client, &namespace).await;

    // Until Kuota's webhook is registered a Job would be stored unsuspended, unqueued.
    let jobs: Api<Job> = Api::namespaced(client.clone(), &namespace);
    let dry_run = PostParams {
        dry_run: true,
        ..PostParams::default()
    };
    eventually(WAIT, "Kuota's job webhooks are called", || async {
        matches!(
            jobs.create(&dry_run, &job("probe", "no-such-queue", "100m")).await,
            Err(kube::Error::Api(status)) if status.code == 403
        )
    })
    .await
    .expect("the webhook rejects a Job naming a missing LocalQueue");
    // One after the other: the 800m job must find the 500m one holding quota, whichever of
    // their Workloads Kuota would otherwise see first.
    let workloads: Api<Workload> = Api::namespaced(client.clone(), &namespace);
    let admitted = || async {
        workloads
            .list(&ListParams::default())
            .await
            .map(|list| list.items.iter().filter(|w| is_admitted(w)).count())
            .unwrap_or_default()
    };
    jobs.create(&PostParams::default(), &job("runs", "team", "500m"))
        .await
        .expect("create job");
    eventually(WAIT, "the job of 500m is admitted", || async {
        admitted().await == 1
    })
    .await
    .expect("one workload admitted");
    for (name, queue, cpu) in [("waits", "team", "800m"), ("other", "quiet", "100m")] {
        jobs.create(&PostParams::default(), &job(name, queue, cpu))
            .await
            .expect("create job");
    }
    eventually(WAIT, "the jobs of 500m and 100m are admitted", || async {
        admitted().await == 2
    })
    .await
    .expect("two workloads admitted");

    let https = reqwest::Client::builder()
        .danger_accept_invalid_certs(true)
        .build()
        .unwrap();
    let reader = token(cluster, &namespace, "reader");
    let series = |line: &str| {
        line.replace("{ns}", &namespace)
            .replace("{cq}", &cluster_queue)
            .replace("{flavor}", &flavor)
    };
    let lq = r#"name="team",namespace="{ns}""#;
    let expected: Vec<String> = [
        format!(r#"kueue_local_queue_admitted_workloads_total{{{lq},priority_class="",replica_role="leader"}} 1"#),
        format!(r#"kueue_local_queue_quota_reserved_workloads_total{{{lq},priority_class="",replica_role="leader"}} 1"#),
        format!(r#"kueue_local_queue_admission_wait_time_seconds_count{{{lq},priority_class="",replica_role="leader"}} 1"#),
        format!(r#"kueue_local_queue_reserving_active_workloads{{{lq},replica_role="leader"}} 1"#),
        format!(r#"kueue_local_queue_admitted_active_workloads{{{lq},replica_role="leader"}} 1"#),
        format!(r#"kueue_local_queue_pending_workloads{{{lq},status="active",replica_role="leader"}} 0"#),
        format!(r#"kueue_local_queue_pending_workloads{{{lq},status="inadmissible",replica_role="leader"}} 1"#),
        format!(r#"kueue_local_queue_status{{{lq},active="True",replica_role="leader"}} 1"#),
        format!(r#"kueue_local_queue_status{{{lq},active="False",replica_role="leader"}} 0"#),
        format!(r#"kueue_local_queue_resource_reservation{{{lq},flavor="{{flavor}}",resource="cpu",replica_role="leader"}} 0.5"#),
        format!(r#"kueue_local_queue_resource_usage{{{lq},flavor="{{flavor}}",resource="cpu",replica_role="leader"}} 0.5"#),
        r#"kueue_admitted_workloads_total{cluster_queue="{cq}",priority_class="",replica_role="leader"} 2"#.to_owned(),
        r#"kueue_reserving_active_workloads{cluster_queue="{cq}",replica_role="leader"} 2"#.to_owned(),
        r#"kueue_pending_workloads{cluster_queue="{cq}",status="inadmissible",replica_role="leader"} 1"#.to_owned(),
        r#"kueue_cluster_queue_status{cluster_queue="{cq}",status="active",replica_role="leader"} 1"#.to_owned(),
    ]
    .iter()
    .map(|line| series(line))
    .collect();
    let deadline = Instant::now() + WAIT;
    let last = loop {
        let (status, text) =
            scrape(&https, metrics_port, reqwest::Method::GET, Some(&reader)).await;
        let absent = missing(&text, &expected);
        if status == 200 && absent.is_empty() {
            break text;
        }
        assert!(
            Instant::now() < deadline,
            "missing {absent:?} in the last scrape ({status}):\n{text}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    assert!(
        last.lines()
            .any(|line| line.starts_with("kueue_build_info{")),
        "{last}"
    );
    assert!(
        !last.contains(r#"name="quiet""#),
        "a LocalQueue the selector leaves out has no series:\n{last}"
    );

    assert_eq!(
        scrape(&https, metrics_port, reqwest::Method::GET, None).await,
        (401, "Unauthorized\n".to_owned())
    );
    // controller-runtime's filter treats a token the API server rejects as an error.
    assert_eq!(
        scrape(
            &https,
            metrics_port,
            reqwest::Method::GET,
            Some("not-a-token")
        )
        .await,
        (500, "Authentication failed\n".to_owned())
    );
    let nobody = token(cluster, &namespace, "nobody");
    assert_eq!(
        scrape(&https, metrics_port, reqwest::Method::GET, Some(&nobody)).await,
        (
            403,
            format!("Authorization denied for user system:serviceaccount:{namespace}:nobody\n")
        )
    );
    assert_eq!(
        scrape(&https, metrics_port, reqwest::Method::POST, Some(&reader)).await,
        (
            403,
            format!("Authorization denied for user system:serviceaccount:{namespace}:reader\n")
        )
    );
    let probe_port = reqwest::get(format!("http://127.0.0.1:{}/metrics", kuota.health_port))
        .await
        .expect("the probe port answers");
    assert_eq!(probe_port.status(), 404, "no metrics beside the probes");

    kuota.process.stop(Duration::from_secs(10));
    let roles: Api<ClusterRole> = Api::all(client.clone());
    delete_ignoring_missing(&roles, &role).await.unwrap();
    let bindings: Api<ClusterRoleBinding> = Api::all(client.clone());
    delete_ignoring_missing(&bindings, &role).await.unwrap();
    let cluster_queues: Api<ClusterQueue> = Api::all(client.clone());
    delete_ignoring_missing(&cluster_queues, &cluster_queue)
        .await
        .unwrap();
    let flavors: Api<ResourceFlavor> = Api::all(client);
    delete_ignoring_missing(&flavors, &flavor).await.unwrap();
}
