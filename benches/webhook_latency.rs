//! The real `kuota` binary against a real control plane: how long it takes from spawn to
//! `/readyz` (out of cluster, and with internal certificate management), and the latency of
//! AdmissionReview calls to `/mutate-batch-v1-job` and `/validate-batch-v1-job` over HTTPS on
//! loopback, from one keep-alive client and from several at once. Prints markdown tables.
//! Run: `cargo bench --bench webhook_latency`.

use std::error::Error;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use k8s_openapi::api::admissionregistration::v1::MutatingWebhookConfiguration;
use k8s_openapi::api::core::v1::{Namespace, Secret};
use kube::api::{Api, DeleteParams, PostParams};
use kuota::api::v1beta2::{ClusterQueue, LocalQueue, ResourceFlavor};
use kuota_cluster::{ControlPlane, KUOTA_NAMESPACE, Supervised, free_port};
use rustls::pki_types::CertificateDer;
use rustls::pki_types::pem::PemObject;
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

type BenchResult<T> = Result<T, Box<dyn Error>>;

/// Measured requests per path and client setup (after a warm-up).
const REQUESTS: usize = 2_000;
const WARM_UP: usize = 100;
const CONCURRENT_CLIENTS: usize = 4;
/// Spawns per start-up mode.
const STARTUP_RUNS: usize = 5;
const NAMESPACE: &str = "bench";
const LOCAL_QUEUE: &str = "bench-lq";
const PATHS: [&str; 2] = ["/mutate-batch-v1-job", "/validate-batch-v1-job"];

fn main() -> BenchResult<()> {
    kuota::tls::install_crypto_provider();
    tokio::runtime::Runtime::new()?.block_on(bench())
}

async fn bench() -> BenchResult<()> {
    let binary = Path::new(env!("CARGO_BIN_EXE_kuota"));
    let dir = tempfile::tempdir()?;
    eprintln!("starting the control plane…");
    let plane = ControlPlane::start(&dir.path().join("cluster")).await?;
    let result = bench_on(&plane, binary).await;
    plane.stop();
    result
}

async fn bench_on(plane: &ControlPlane, binary: &Path) -> BenchResult<()> {
    install_crds(plane).await?;
    create_queues(plane).await?;

    eprintln!("measuring start-up…");
    let mut startups = Vec::new();
    // Internal certificates first: no webhook configurations exist yet, as on a fresh install
    // before they are applied. The first run creates the Secret, the others find it.
    let internal = startup_runs(plane, binary, Mode::InternalCerts).await?;
    startups.push((
        "internal certificates, Secret created",
        internal[..1].to_vec(),
    ));
    startups.push((
        "internal certificates, Secret exists",
        internal[1..].to_vec(),
    ));
    startups.push((
        "out of cluster (`--webhook-url`)",
        startup_runs(plane, binary, Mode::OutOfCluster).await?,
    ));

    let started = Instant::now();
    let kuota = plane.start_kuota(binary, &[]).await?;
    startups.push((
        "out of cluster, `ControlPlane::start_kuota` (polls every 50 ms)",
        vec![started.elapsed()],
    ));

    let (base_url, ca_pem) = registered_webhook(plane).await?;
    eprintln!("measuring latency against {base_url}…");
    let mut rows = Vec::new();
    for path in PATHS {
        let url = format!("{base_url}{path}");
        rows.push(latency(&url, &ca_pem, 1).await?);
        rows.push(latency(&url, &ca_pem, CONCURRENT_CLIENTS).await?);
    }
    kuota.process.stop(Duration::from_secs(10));

    println!("\n### Start-up: spawn to `/readyz` 200\n");
    println!("| mode | runs | min ms | median ms | max ms |");
    println!("|---|---:|---:|---:|---:|");
    for (mode, mut times) in startups {
        times.sort();
        println!(
            "| {mode} | {} | {:.1} | {:.1} | {:.1} |",
            times.len(),
            ms(times[0]),
            ms(times[times.len() / 2]),
            ms(times[times.len() - 1]),
        );
    }
    println!(
        "\n### AdmissionReview latency, HTTP/2 keep-alive over TLS on loopback, {REQUESTS} requests per row\n"
    );
    println!(
        "| path | clients | p50 ms | p90 ms | p99 ms | max ms | over 10 ms | requests/s | failed |"
    );
    println!("|---|---:|---:|---:|---:|---:|---:|---:|---:|");
    let mut failed = 0;
    for row in &rows {
        println!(
            "| `{}` | {} | {:.2} | {:.2} | {:.2} | {:.2} | {} | {:.0} | {} |",
            row.path,
            row.clients,
            ms(row.percentile(0.50)),
            ms(row.percentile(0.90)),
            ms(row.percentile(0.99)),
            ms(row.percentile(1.0)),
            row.slower_than(Duration::from_millis(10)),
            row.throughput(),
            row.failures.len(),
        );
        failed += row.failures.len();
    }
    for row in &rows {
        for failure in row.failures.iter().take(3) {
            eprintln!("{} failed: {failure}", row.path);
        }
    }
    if failed > 0 {
        return Err(format!("{failed} requests failed").into());
    }
    Ok(())
}

fn ms(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1000.0
}

async fn install_crds(plane: &ControlPlane) -> BenchResult<()> {
    plane.install_crds(&kuota::api::crds::all()).await?;
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("dev/cluster/crds");
    let mut files = std::fs::read_dir(&dir)?
        .map(|entry| entry.map(|entry| entry.path()))
        .collect::<Result<Vec<_>, _>>()?;
    files.sort();
    plane.install_crd_files(&files).await?;
    Ok(())
}

/// The namespaces, a ResourceFlavor, a ClusterQueue with room for every job of the bench and
/// a LocalQueue pointing to it.
async fn create_queues(plane: &ControlPlane) -> BenchResult<()> {
    let client = plane.client().await?;
    let namespaces: Api<Namespace> = Api::all(client.clone());
    for name in [NAMESPACE, KUOTA_NAMESPACE] {
        let namespace = serde_json::from_value(json!({"metadata": {"name": name}}))?;
        namespaces
            .create(&PostParams::default(), &namespace)
            .await?;
    }
    let flavor: ResourceFlavor =
        serde_json::from_value(json!({"metadata": {"name": "default"}, "spec": {}}))?;
    Api::<ResourceFlavor>::all(client.clone())
        .create(&PostParams::default(), &flavor)
        .await?;
    let cluster_queue: ClusterQueue = serde_json::from_value(json!({
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
    Api::<ClusterQueue>::all(client.clone())
        .create(&PostParams::default(), &cluster_queue)
        .await?;
    let local_queue: LocalQueue = serde_json::from_value(json!({
        "metadata": {"name": LOCAL_QUEUE, "namespace": NAMESPACE},
        "spec": {"clusterQueue": "bench-cq"}
    }))?;
    Api::<LocalQueue>::namespaced(client, NAMESPACE)
        .create(&PostParams::default(), &local_queue)
        .await?;
    Ok(())
}

// === start-up ===

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mode {
    /// `--webhook-url`: a CA generated in memory, configurations registered by URL.
    OutOfCluster,
    /// No `--webhook-url`: the CA and serving certificate from the Secret in `kueue-system`.
    InternalCerts,
}

/// Spawns `kuota serve` `STARTUP_RUNS` times and measures spawn to `/readyz` 200, polling
/// every 2 ms; stops each process before the next.
async fn startup_runs(
    plane: &ControlPlane,
    binary: &Path,
    mode: Mode,
) -> BenchResult<Vec<Duration>> {
    let mut times = Vec::new();
    for run in 0..STARTUP_RUNS {
        let (webhook_port, health_port, metrics_port) = (free_port()?, free_port()?, free_port()?);
        let mut args = vec![
            "--kubeconfig".to_owned(),
            plane.kubeconfig().display().to_string(),
            "serve".to_owned(),
            "--health-probe-addr".to_owned(),
            format!("127.0.0.1:{health_port}"),
            "--metrics-addr".to_owned(),
            format!("127.0.0.1:{metrics_port}"),
            "--namespace".to_owned(),
            KUOTA_NAMESPACE.to_owned(),
        ];
        match mode {
            Mode::OutOfCluster => args.extend([
                "--webhook-url".to_owned(),
                format!("https://127.0.0.1:{webhook_port}"),
            ]),
            Mode::InternalCerts => {
                args.extend(["--webhook-port".to_owned(), webhook_port.to_string()])
            }
        }
        let log = plane
            .dir()
            .join(format!("kuota-startup-{mode:?}-{run}.log"));
        let started = Instant::now();
        let mut process = Supervised::spawn("kuota", binary, &args, &log)?;
        loop {
            if ready(health_port).await {
                break;
            }
            if !process.is_running() || started.elapsed() > Duration::from_secs(60) {
                return Err(format!(
                    "kuota ({mode:?}) did not become ready:\n{}",
                    process.log_tail(30)
                )
                .into());
            }
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
        times.push(started.elapsed());
        process.stop(Duration::from_secs(10));
    }
    if mode == Mode::InternalCerts {
        // Leave no trace for the out-of-cluster runs.
        let secrets: Api<Secret> = Api::namespaced(plane.client().await?, KUOTA_NAMESPACE);
        secrets
            .delete("kueue-webhook-server-cert", &DeleteParams::default())
            .await?;
    }
    Ok(times)
}

/// Whether `GET /readyz` on the probe port answers 200.
async fn ready(port: u16) -> bool {
    let Ok(mut stream) = tokio::net::TcpStream::connect(("127.0.0.1", port)).await else {
        return false;
    };
    let request = b"GET /readyz HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n";
    if stream.write_all(request).await.is_err() {
        return false;
    }
    let mut response = Vec::new();
    let read = tokio::time::timeout(Duration::from_secs(2), stream.read_to_end(&mut response));
    matches!(read.await, Ok(Ok(_)))
        && (response.starts_with(b"HTTP/1.1 200") || response.starts_with(b"HTTP/1.0 200"))
}

// === latency ===

/// The webhook's base URL and the CA bundle, as registered in the mutating configuration.
async fn registered_webhook(plane: &ControlPlane) -> BenchResult<(String, String)> {
    let api: Api<MutatingWebhookConfiguration> = Api::all(plane.client().await?);
    let config = api.get("kueue-mutating-webhook-configuration").await?;
    let job = config
        .webhooks
        .unwrap_or_default()
        .into_iter()
        .find(|webhook| webhook.name == "mjob.kb.io")
        .ok_or("no mjob.kb.io webhook")?;
    let url = job.client_config.url.ok_or("mjob.kb.io has no url")?;
    let ca = job
        .client_config
        .ca_bundle
        .ok_or("mjob.kb.io has no caBundle")?;
    let base = url
        .strip_suffix(PATHS[0])
        .ok_or_else(|| format!("unexpected url {url}"))?;
    Ok((base.to_owned(), String::from_utf8(ca.0)?))
}

/// A Job with the queue label as the API server sends it for CREATE.
fn review(uid: &str) -> Value {
    let job = json!({
        "apiVersion": "batch/v1", "kind": "Job",
        "metadata": {
            "name": format!("job-{uid}"), "namespace": NAMESPACE,
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
            "uid": uid,
            "kind": {"group": "batch", "version": "v1", "kind": "Job"},
            "resource": {"group": "batch", "version": "v1", "resource": "jobs"},
            "requestKind": {"group": "batch", "version": "v1", "kind": "Job"},
            "requestResource": {"group": "batch", "version": "v1", "resource": "jobs"},
            "name": format!("job-{uid}"), "namespace": NAMESPACE, "operation": "CREATE",
            "userInfo": {"username": "bench", "groups": ["system:authenticated"]},
            "object": job,
            "oldObject": null,
            "dryRun": false,
            "options": {"apiVersion": "meta.k8s.io/v1", "kind": "CreateOptions"}
        }
    })
}

/// An HTTP/2 keep-alive client trusting `ca_pem`, as the API server calls webhooks.
fn client(ca_pem: &str) -> BenchResult<reqwest::Client> {
    let mut roots = rustls::RootCertStore::empty();
    for cert in CertificateDer::pem_slice_iter(ca_pem.as_bytes()) {
        roots.add(cert?)?;
    }
    let mut tls = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()?
    .with_root_certificates(roots)
    .with_no_client_auth();
    tls.alpn_protocols = vec![b"h2".to_vec()];
    Ok(reqwest::Client::builder()
        .use_preconfigured_tls(tls)
        .timeout(Duration::from_secs(10))
        .build()?)
}

/// Posts one review and checks the answer: allowed, same uid, and a patch from the mutating
/// path (the Job is not suspended yet).
async fn call(client: &reqwest::Client, url: &str, uid: &str) -> Result<(), String> {
    let response = client
        .post(url)
        .json(&review(uid))
        .send()
        .await
        .map_err(|err| err.to_string())?;
    let status = response.status();
    let body: Value = response.json().await.map_err(|err| err.to_string())?;
    let answer = &body["response"];
    let mutating = url.contains("/mutate-");
    if status == 200
        && answer["uid"] == json!(uid)
        && answer["allowed"] == json!(true)
        && (!mutating || answer["patchType"] == json!("JSONPatch"))
    {
        Ok(())
    } else {
        Err(format!("{status}: {body}"))
    }
}

/// The latencies of one path and client setup.
struct LatencyRow {
    path: String,
    clients: usize,
    latencies: Vec<Duration>,
    wall: Duration,
    failures: Vec<String>,
}

impl LatencyRow {
    /// Nearest-rank percentile; `1.0` is the maximum.
    fn percentile(&self, q: f64) -> Duration {
        let rank = ((q * self.latencies.len() as f64).ceil() as usize).max(1);
        self.latencies[rank.min(self.latencies.len()) - 1]
    }

    fn slower_than(&self, limit: Duration) -> usize {
        self.latencies
            .iter()
            .filter(|latency| **latency > limit)
            .count()
    }

    fn throughput(&self) -> f64 {
        self.latencies.len() as f64 / self.wall.as_secs_f64()
    }
}

/// `REQUESTS` calls to `url` split over `clients` keep-alive clients running at once, each
/// warmed up first.
async fn latency(url: &str, ca_pem: &str, clients: usize) -> BenchResult<LatencyRow> {
    let mut warmed = Vec::new();
    for client_index in 0..clients {
        let client = client(ca_pem)?;
        for seq in 0..WARM_UP {
            call(&client, url, &format!("warm-{client_index}-{seq}")).await?;
        }
        warmed.push(client);
    }
    let started = Instant::now();
    let tasks: Vec<_> = warmed
        .into_iter()
        .enumerate()
        .map(|(client_index, client)| {
            let url = url.to_owned();
            tokio::spawn(async move {
                let mut latencies = Vec::new();
                let mut failures = Vec::new();
                for seq in 0..REQUESTS / clients {
                    let uid = format!("{client_index}-{seq}");
                    let sent = Instant::now();
                    let outcome = call(&client, &url, &uid).await;
                    latencies.push(sent.elapsed());
                    if let Err(err) = outcome {
                        failures.push(err);
                    }
                }
                (latencies, failures)
            })
        })
        .collect();
    let mut latencies = Vec::new();
    let mut failures = Vec::new();
    for task in tasks {
        let (task_latencies, task_failures) = task.await?;
        latencies.extend(task_latencies);
        failures.extend(task_failures);
    }
    let wall = started.elapsed();
    latencies.sort();
    Ok(LatencyRow {
        path: url
            .rsplit_once('/')
            .map(|(_, path)| format!("/{path}"))
            .unwrap_or_default(),
        clients,
        latencies,
        wall,
        failures,
    })
}
