//! The webhook bench, shared by `benches/webhook_latency.rs` (the figures in BENCHMARKS.md) and
//! `tests/webhook_bench_smoke.rs` (the same run for a second per row, so it keeps working).
//!
//! On one test control plane: how long `kuota serve` takes from spawn to `/readyz`, then the
//! same Job AdmissionReviews posted to `/mutate-batch-v1-job` and `/validate-batch-v1-job` of
//! the real `kuota serve` and then of Kueue's real manager (`cmd/kueue` of the pinned release,
//! built by `dev/kueue/build.sh manager`), each over TLS with HTTP/2, one keep-alive connection
//! per client, every client posting its next review as soon as the last is answered, for a
//! fixed time per row. nghttp2's h2load sends the load; each row reads the server's and h2load's
//! CPU and the server's peak RSS from `/proc`.

use std::error::Error;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use k8s_openapi::api::admissionregistration::v1::{
    MutatingWebhookConfiguration, ValidatingWebhookConfiguration,
};
use k8s_openapi::api::core::v1::{Namespace, Secret};
use kube::api::{Api, DeleteParams, PostParams};
use kuota::api::v1beta2::{ClusterQueue, LocalQueue, ResourceFlavor};
use kuota_cluster::kueue_runner::{self, ProcessUsage};
use kuota_cluster::{
    ControlPlane, KUOTA_NAMESPACE, Supervised, delete_ignoring_missing, free_port,
};
use rustls::pki_types::CertificateDer;
use rustls::pki_types::pem::PemObject;
use serde::Deserialize;
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

#[path = "objects.rs"]
mod objects;
use objects::{NAMESPACE, UID, review_template};

pub type BenchResult<T> = Result<T, Box<dyn Error>>;

/// How long each part runs.
pub struct Options {
    /// Measured time per row.
    pub row: Duration,
    /// Unmeasured load on the same connections before each row.
    pub warm_up: Duration,
    /// Spawns per start-up mode.
    pub startup_runs: usize,
    /// Rounds of rows: each round measures every row of Kuota, then every row of Kueue, so
    /// that a slow spell of the machine falls on both sides across the rounds.
    pub rounds: usize,
    /// The servers measured (both unless `--only` names one).
    pub servers: Vec<Server>,
}

/// Clients (connections) at once, per row.
pub const CONCURRENCY: [usize; 3] = [1, 16, 64];
pub const PATHS: [&str; 2] = ["/mutate-batch-v1-job", "/validate-batch-v1-job"];
/// The target the bench reports against: Kuota at this many clients...
const TARGET_CLIENTS: usize = 16;
/// ...answers at least this many times Kueue's requests per second...
const TARGET_SPEEDUP: f64 = 3.0;
/// ...with a p99 at most this.
const TARGET_P99: Duration = Duration::from_millis(1);

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Server {
    Kuota,
    Kueue,
}

/// One server, path and number of clients.
pub struct Row {
    pub server: Server,
    pub path: &'static str,
    pub clients: usize,
    /// Every measured request's latency, sorted.
    latencies: Vec<Duration>,
    wall: Duration,
    /// Requests the load generator saw fail, warm-up included.
    pub failures: usize,
    /// The server's user and system CPU over the row.
    cpu_seconds: f64,
    /// The server's VmHWM at the end of the row.
    peak_rss_mib: f64,
    /// The load generator's CPU over the row: it shares the cores.
    client_cpu_seconds: f64,
}

impl Row {
    pub fn requests(&self) -> usize {
        self.latencies.len()
    }

    /// Nearest-rank percentile; `1.0` is the maximum.
    fn percentile(&self, q: f64) -> Duration {
        let rank = ((q * self.latencies.len() as f64).ceil() as usize).max(1);
        self.latencies[rank.min(self.latencies.len()) - 1]
    }

    /// Server CPU seconds per request.
    fn cpu_per_request(&self) -> f64 {
        self.cpu_seconds / self.requests() as f64
    }

    fn throughput(&self) -> f64 {
        self.latencies.len() as f64 / self.wall.as_secs_f64()
    }
}

/// What one run measured.
pub struct Report {
    startups: Vec<(&'static str, Vec<Duration>)>,
    /// Every round's rows, in the order measured.
    pub rows: Vec<Row>,
    rounds: usize,
    row: Duration,
    warm_up: Duration,
    kueue_version: String,
    /// h2load's name and version.
    load_generator: String,
    /// The machine's 1-minute load average when the last row ended: others' work shows here.
    load_average: String,
}

impl Report {
    pub fn failures(&self) -> usize {
        self.rows.iter().map(|row| row.failures).sum()
    }

    /// The runs of one row, a round each, in the order measured.
    pub fn runs(&self, server: Server, path: &str, clients: usize) -> Vec<&Row> {
        self.rows
            .iter()
            .filter(|row| row.server == server && row.path == path && row.clients == clients)
            .collect()
    }

    /// The tables, the target's verdict per path and the first failure of each failing row.
    pub fn markdown(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(
            out,
            "Kuota `kuota serve` against Kueue {}'s manager (`cmd/kueue`, `integrations.frameworks: [batch/job]`), \
             one after the other on the same control plane. HTTP/2 over TLS on loopback, one keep-alive \
             connection per client, each client posting its next review when the last is answered, for {:.0} s \
             per row after {:.1} s of the same load unmeasured. The load generator is {} on one thread, \
             on the same cores. {} A row counts the requests it sent within the row's \
             window, and one review per path is first sent by the bench itself and its answer checked in \
             full (allowed, the same uid, a JSON patch from the mutating path). Server and client CPU are \
             user + system over the window from `/proc/<pid>/stat`; peak RSS is VmHWM at its end (so it only \
             grows down a server's rows in a round). Measured {} on {} cores, 1-minute load average {} at the end.\n",
            self.kueue_version,
            self.row.as_secs_f64(),
            self.warm_up.as_secs_f64(),
            self.load_generator,
            match self.rounds {
                1 => "Each row is one run.".to_owned(),
                rounds => format!(
                    "Each row ran {rounds} times, in {rounds} rounds of Kuota's rows and then \
                     Kueue's (each server started afresh in each round); a cell reads min / median \
                     / max over the rounds."
                ),
            },
            jiff::Zoned::now().strftime("%Y-%m-%d"),
            std::thread::available_parallelism().map_or(0, |n| n.get()),
            self.load_average,
        );
        out.push_str(
            "| server | path | clients | req/s | p50 ms | p99 ms | p99.9 ms | max ms | server CPU s | server CPU µs / req | peak RSS MiB | client CPU s | failed |\n",
        );
        out.push_str("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
        for server in [Server::Kuota, Server::Kueue] {
            for path in PATHS {
                for clients in CONCURRENCY {
                    let runs = self.runs(server, path, clients);
                    if runs.is_empty() {
                        continue;
                    }
                    let cells = |figure: fn(&Row) -> f64, decimals| {
                        spread(runs.iter().map(|row| figure(row)), decimals)
                    };
                    let _ = writeln!(
                        out,
                        "| {server:?} | `{path}` | {clients} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
                        cells(Row::throughput, 0),
                        cells(|row| ms(row.percentile(0.50)), 3),
                        cells(|row| ms(row.percentile(0.99)), 3),
                        cells(|row| ms(row.percentile(0.999)), 3),
                        cells(|row| ms(row.percentile(1.0)), 2),
                        cells(|row| row.cpu_seconds, 2),
                        cells(|row| row.cpu_per_request() * 1e6, 0),
                        cells(|row| row.peak_rss_mib, 1),
                        cells(|row| row.client_cpu_seconds, 2),
                        runs.iter().map(|row| row.failures).sum::<usize>(),
                    );
                }
            }
        }
        let _ = writeln!(
            out,
            "\nTarget: Kuota at {TARGET_CLIENTS} clients answers at least {TARGET_SPEEDUP:.0}× Kueue's \
             requests per second with a p99 of at most {:.0} ms.\n",
            ms(TARGET_P99)
        );
        for path in PATHS {
            let kuota = self.runs(Server::Kuota, path, TARGET_CLIENTS);
            let kueue = self.runs(Server::Kueue, path, TARGET_CLIENTS);
            if kuota.is_empty() || kueue.is_empty() {
                continue;
            }
            let speedup = median(kuota.iter().map(|row| row.throughput()))
                / median(kueue.iter().map(|row| row.throughput()));
            let p99 = median(kuota.iter().map(|row| ms(row.percentile(0.99))));
            let met = meets_target(speedup, p99);
            // In a closed loop, clients / throughput is the mean latency: a p99 within the
            // target needs at least clients / target requests per second, and the load
            // generator's own CPU per request bounds what these cores can reach.
            let needed = TARGET_CLIENTS as f64 / TARGET_P99.as_secs_f64();
            let client_cost = median(
                kuota
                    .iter()
                    .map(|row| row.client_cpu_seconds / row.requests() as f64),
            );
            let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
            let _ = write!(
                out,
                "- `{path}`: {speedup:.2}× Kueue's requests per second, p99 {p99:.3} ms{}: {}. \
                 Server CPU per request {:.2}× Kueue's. A p99 of {:.0} ms at {TARGET_CLIENTS} \
                 clients needs at least {needed:.0} requests per second; the load generator \
                 alone used {:.0} µs of CPU per request, at most {:.0} per second on {cores} \
                 cores with a server that cost nothing.",
                if kuota.len() > 1 { " (medians)" } else { "" },
                if met { "met" } else { "not met" },
                median(kuota.iter().map(|row| row.cpu_per_request()))
                    / median(kueue.iter().map(|row| row.cpu_per_request())),
                ms(TARGET_P99),
                client_cost * 1e6,
                cores as f64 / client_cost,
            );
            if kuota.len() > 1 && kuota.len() == kueue.len() {
                let rounds: Vec<(f64, f64)> = kuota
                    .iter()
                    .zip(&kueue)
                    .map(|(ours, theirs)| {
                        (
                            ours.throughput() / theirs.throughput(),
                            ms(ours.percentile(0.99)),
                        )
                    })
                    .collect();
                let met_in = rounds
                    .iter()
                    .filter(|(speedup, p99)| meets_target(*speedup, *p99))
                    .count();
                let _ = write!(
                    out,
                    " Round by round: {}; met in {met_in} of {}.",
                    rounds
                        .iter()
                        .map(|(speedup, p99)| format!("{speedup:.2}× at p99 {p99:.3} ms"))
                        .collect::<Vec<_>>()
                        .join(", "),
                    rounds.len()
                );
            }
            out.push('\n');
        }
        if self.startups.is_empty() {
            return out;
        }
        out.push_str("\nProcess start to `/readyz` 200 (Kuota):\n\n");
        out.push_str("| mode | runs | min ms | median ms | max ms |\n|---|---:|---:|---:|---:|\n");
        for (mode, times) in &self.startups {
            let mut times = times.clone();
            times.sort();
            let _ = writeln!(
                out,
                "| {mode} | {} | {:.1} | {:.1} | {:.1} |",
                times.len(),
                ms(times[0]),
                ms(times[times.len() / 2]),
                ms(times[times.len() - 1]),
            );
        }
        out
    }
}

/// Whether Kuota's figures at [`TARGET_CLIENTS`] meet the target.
fn meets_target(speedup: f64, p99_ms: f64) -> bool {
    speedup >= TARGET_SPEEDUP && p99_ms <= ms(TARGET_P99)
}

fn ms(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1000.0
}

/// A figure over a row's runs: the one value, or min / median / max of several.
fn spread(values: impl Iterator<Item = f64>, decimals: usize) -> String {
    let values = sorted(values);
    match values.as_slice() {
        [] => String::new(),
        [one] => format!("{one:.decimals$}"),
        [min, .., max] => format!(
            "{min:.decimals$} / {:.decimals$} / {max:.decimals$}",
            values[values.len() / 2]
        ),
    }
}

/// The median (the upper one of an even count); 0 when there is nothing.
fn median(values: impl Iterator<Item = f64>) -> f64 {
    let values = sorted(values);
    values.get(values.len() / 2).copied().unwrap_or_default()
}

fn sorted(values: impl Iterator<Item = f64>) -> Vec<f64> {
    let mut values: Vec<f64> = values.collect();
    values.sort_by(f64::total_cmp);
    values
}

/// Starts a control plane, measures, and stops everything it started, also on error.
pub async fn run(kuota_binary: &Path, options: &Options) -> BenchResult<Report> {
    let kueue_binary = kueue_runner::manager()?;
    let dir = tempfile::tempdir()?;
    eprintln!("starting the control plane…");
    let plane = ControlPlane::start(&dir.path().join("cluster")).await?;
    let result = run_on(&plane, kuota_binary, &kueue_binary, options).await;
    plane.stop();
    result
}

async fn run_on(
    plane: &ControlPlane,
    kuota_binary: &Path,
    kueue_binary: &Path,
    options: &Options,
) -> BenchResult<Report> {
    let load_generator = load_generator_version()?;
    install_crds(plane).await?;
    create_queues(plane).await?;

    let mut startups = Vec::new();
    if options.servers.contains(&Server::Kuota) && options.startup_runs > 0 {
        eprintln!("measuring start-up…");
        // Internal certificates first: no webhook configurations exist yet, as on a fresh
        // install before they are applied. The first run creates the Secret, the others find it.
        let internal = startup_runs(plane, kuota_binary, Mode::InternalCerts, options).await?;
        startups.push((
            "internal certificates, Secret created on start",
            internal[..1].to_vec(),
        ));
        if internal.len() > 1 {
            startups.push((
                "internal certificates, Secret exists",
                internal[1..].to_vec(),
            ));
        }
        startups.push((
            "out of cluster (`--webhook-url`, registers configurations and CRD conversion first)",
            startup_runs(plane, kuota_binary, Mode::OutOfCluster, options).await?,
        ));
    }

    let mut rows = Vec::new();
    let mut kuota_starts = Vec::new();
    for _ in 0..options.rounds {
        if options.servers.contains(&Server::Kuota) {
            let started = Instant::now();
            let kuota = plane.start_kuota(kuota_binary, &[]).await?;
            kuota_starts.push(started.elapsed());
            let measured = async {
                let pid = kuota.process.pid().ok_or("kuota has no pid")?;
                let (base_url, ca_pem) = registered_webhook(plane).await?;
                measure(Server::Kuota, pid, &base_url, &ca_pem, options).await
            }
            .await;
            kuota.process.stop(Duration::from_secs(10));
            rows.extend(measured?);
            // Kuota's configurations, left behind, would send Kueue's own writes to a server
            // that is gone.
            remove_webhook_configurations(plane).await?;
        }
        if options.servers.contains(&Server::Kueue) {
            let kueue = KueueManager::start(plane, kueue_binary).await?;
            let measured = async {
                let pid = kueue.process.pid().ok_or("Kueue's manager has no pid")?;
                measure(Server::Kueue, pid, &kueue.base_url, &kueue.ca_pem, options).await
            }
            .await;
            kueue.process.stop(Duration::from_secs(10));
            rows.extend(measured?);
        }
    }
    if !kuota_starts.is_empty() {
        startups.push((
            "out of cluster, `ControlPlane::start_kuota` (polls every 50 ms)",
            kuota_starts,
        ));
    }

    Ok(Report {
        startups,
        rows,
        rounds: options.rounds,
        row: options.row,
        warm_up: options.warm_up,
        kueue_version: kueue_version()?,
        load_generator,
        load_average: std::fs::read_to_string("/proc/loadavg")?
            .split_whitespace()
            .next()
            .unwrap_or_default()
            .to_owned(),
    })
}

/// The pinned Kueue version, from `dev/kueue/go.mod`.
fn kueue_version() -> BenchResult<String> {
    let go_mod = std::fs::read_to_string(
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("dev/kueue/go.mod"),
    )?;
    go_mod
        .lines()
        .find_map(|line| line.trim().strip_prefix("sigs.k8s.io/kueue "))
        .map(|version| version.trim().to_owned())
        .ok_or_else(|| "dev/kueue/go.mod does not pin sigs.k8s.io/kueue".into())
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
    let (flavor, cluster_queue, local_queue) = objects::queues()?;
    Api::<ResourceFlavor>::all(client.clone())
        .create(&PostParams::default(), &flavor)
        .await?;
    Api::<ClusterQueue>::all(client.clone())
        .create(&PostParams::default(), &cluster_queue)
        .await?;
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

/// Spawns `kuota serve` `options.startup_runs` times and measures spawn to `/readyz` 200,
/// polling every 2 ms; stops each process before the next.
async fn startup_runs(
    plane: &ControlPlane,
    binary: &Path,
    mode: Mode,
    options: &Options,
) -> BenchResult<Vec<Duration>> {
    let mut times = Vec::new();
    for run in 0..options.startup_runs {
        let (webhook_port, health_port, metrics_port, visibility_port) =
            (free_port()?, free_port()?, free_port()?, free_port()?);
        let mut args = vec![
            "--kubeconfig".to_owned(),
            plane.kubeconfig().display().to_string(),
            "serve".to_owned(),
            "--health-probe-addr".to_owned(),
            format!("127.0.0.1:{health_port}"),
            "--metrics-addr".to_owned(),
            format!("127.0.0.1:{metrics_port}"),
            "--visibility-addr".to_owned(),
            format!("127.0.0.1:{visibility_port}"),
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
                let tail = process.log_tail(30);
                process.stop(Duration::from_secs(10));
                return Err(format!("kuota ({mode:?}) did not become ready:\n{tail}").into());
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

// === the servers ===

/// The webhook's base URL and the CA bundle, as Kuota registered them in the mutating
/// configuration.
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

/// Kuota removes its webhook configurations when it stops; this makes sure they are gone.
async fn remove_webhook_configurations(plane: &ControlPlane) -> BenchResult<()> {
    let client = plane.client().await?;
    let mutating: Api<MutatingWebhookConfiguration> = Api::all(client.clone());
    delete_ignoring_missing(&mutating, "kueue-mutating-webhook-configuration").await?;
    let validating: Api<ValidatingWebhookConfiguration> = Api::all(client);
    delete_ignoring_missing(&validating, "kueue-validating-webhook-configuration").await?;
    Ok(())
}

/// Kueue's manager out of cluster, serving its webhooks on loopback.
struct KueueManager {
    process: Supervised,
    base_url: String,
    ca_pem: String,
}

impl KueueManager {
    /// Starts the manager with a certificate for 127.0.0.1 and no internal certificate
    /// management (which would rewrite the CA bundles of Kuota's CRDs), and waits until its
    /// validating Job webhook allows a review.
    async fn start(plane: &ControlPlane, binary: &Path) -> BenchResult<Self> {
        let dir = plane.dir().join("kueue");
        let webhook_certs = dir.join("webhook-certs");
        let serving =
            kuota::tls::certs::write_dev_certs(&webhook_certs, &["127.0.0.1".to_owned()])?;
        // Without internal certificate management the manager reads its metrics certificate
        // from the fixed /etc/kueue/metrics/certs. It gets one in a mount namespace of its own,
        // through a read-only overlay on /etc, so nothing on the machine changes.
        let etc_overlay = dir.join("etc");
        let metrics_certs = etc_overlay.join("kueue/metrics/certs");
        std::fs::create_dir_all(&metrics_certs)?;
        for file in ["tls.crt", "tls.key"] {
            std::fs::copy(webhook_certs.join(file), metrics_certs.join(file))?;
        }
        let (webhook_port, health_port, metrics_port) = (free_port()?, free_port()?, free_port()?);
        let config = json!({
            "apiVersion": "config.kueue.x-k8s.io/v1beta2",
            "kind": "Configuration",
            "namespace": KUOTA_NAMESPACE,
            "health": {"healthProbeBindAddress": format!("127.0.0.1:{health_port}")},
            "metrics": {"bindAddress": format!("127.0.0.1:{metrics_port}")},
            "webhook": {
                "host": "127.0.0.1",
                "port": webhook_port,
                "certDir": webhook_certs.display().to_string(),
            },
            "leaderElection": {"leaderElect": false},
            "internalCertManagement": {"enable": false},
            "integrations": {"frameworks": ["batch/job"]},
            // Its visibility API server would listen on the fixed port 8082.
            "featureGates": {"VisibilityOnDemand": false},
        });
        let config_file = dir.join("config.yaml");
        std::fs::write(&config_file, serde_json::to_vec_pretty(&config)?)?;
        let mount_and_exec =
            r#"mount -t overlay overlay -o "lowerdir=$1:/etc" /etc && shift && exec "$@""#;
        let args = [
            "--mount",
            "--propagation",
            "private",
            "sh",
            "-c",
            mount_and_exec,
            "kueue-etc",
        ]
        .map(str::to_owned)
        .into_iter()
        .chain([
            etc_overlay.display().to_string(),
            binary.display().to_string(),
            "--config".to_owned(),
            config_file.display().to_string(),
            "--kubeconfig".to_owned(),
            plane.kubeconfig().display().to_string(),
        ])
        .collect::<Vec<_>>();
        let base_url = format!("https://127.0.0.1:{webhook_port}");
        let client = client(&serving.ca_pem)?;
        let body = review_template();
        // unshare and sh exec, so the process under the watchdog is the manager itself.
        let mut process =
            Supervised::spawn("kueue", Path::new("unshare"), &args, &dir.join("kueue.log"))?;
        let started = Instant::now();
        loop {
            let answered = call(&client, &format!("{base_url}{}", PATHS[1]), &body, "ready").await;
            if answered.is_ok() {
                break;
            }
            if !process.is_running() || started.elapsed() > Duration::from_secs(120) {
                let tail = process.log_tail(30);
                process.stop(Duration::from_secs(10));
                return Err(format!(
                    "Kueue's manager did not answer a review ({answered:?}):\n{tail}"
                )
                .into());
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        Ok(Self {
            process,
            base_url,
            ca_pem: serving.ca_pem,
        })
    }
}

// === load ===

/// An HTTP/2-only keep-alive client trusting `ca_pem`, as the API server calls webhooks.
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

/// The part of an AdmissionReview answer that [`call`] checks; the rest is skipped unread, so
/// that checking costs the load generator little.
#[derive(Deserialize)]
struct Answer {
    response: AnswerResponse,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct AnswerResponse {
    uid: String,
    allowed: bool,
    patch_type: Option<String>,
}

/// Posts one review and checks the answer: HTTP/2, allowed, same uid, and a JSON patch from
/// the mutating path (the Job is not suspended yet).
async fn call(
    client: &reqwest::Client,
    url: &str,
    template: &str,
    uid: &str,
) -> Result<(), String> {
    let response = client
        .post(url)
        .header("content-type", "application/json")
        .body(template.replace(UID, uid))
        .send()
        .await
        .map_err(|err| err.to_string())?;
    let (status, version) = (response.status(), response.version());
    let body = response.bytes().await.map_err(|err| err.to_string())?;
    let expected = |answer: Answer| {
        answer.response.uid == uid
            && answer.response.allowed
            && (!url.contains("/mutate-")
                || answer.response.patch_type.as_deref() == Some("JSONPatch"))
    };
    if status == 200
        && version == reqwest::Version::HTTP_2
        && serde_json::from_slice(&body).is_ok_and(expected)
    {
        Ok(())
    } else {
        Err(format!(
            "{status} {version:?}: {}",
            String::from_utf8_lossy(&body)
        ))
    }
}

/// The load generator: nghttp2's h2load, on one thread, so that it takes little of the cores
/// it shares with the server.
const LOAD_GENERATOR: &str = "h2load";
/// How long h2load goes on after a row's window closes, so that the window's last reading is
/// taken while it still sends.
const LOAD_TAIL: Duration = Duration::from_millis(500);

/// h2load's name and version (`h2load nghttp2/1.52.0`), or how to install it.
fn load_generator_version() -> BenchResult<String> {
    let output = std::process::Command::new(LOAD_GENERATOR)
        .arg("--version")
        .output()
        .map_err(|err| {
            format!(
                "{LOAD_GENERATOR} ({err}) is the load generator: install Debian's nghttp2-client \
                 (`bash dev/cluster/node-packages.sh` as root)"
            )
        })?;
    Ok(String::from_utf8(output.stdout)?.trim().to_owned())
}

/// What one row's window saw.
struct Load {
    /// Latency of every request sent within the window.
    latencies: Vec<Duration>,
    window: Duration,
    /// Requests h2load saw fail (an error or a status other than 2xx) in its whole run.
    failures: usize,
    /// The server's VmHWM when the window closes.
    server_peak_rss_mib: f64,
    server_cpu_seconds: f64,
    client_cpu_seconds: f64,
}

/// Runs h2load with `clients` connections of one stream each against `url` for the warm-up,
/// the row and [`LOAD_TAIL`]; reads the server's and h2load's CPU when the warm-up ends and
/// when the row does, and keeps the requests sent between the two readings.
async fn drive(
    url: &str,
    review: &Path,
    clients: usize,
    server_pid: u32,
    options: &Options,
) -> BenchResult<Load> {
    let log = review.with_extension(format!("{clients}.log"));
    let duration = options.warm_up + options.row + LOAD_TAIL;
    let child = tokio::process::Command::new(LOAD_GENERATOR)
        .arg(format!("--clients={clients}"))
        .args(["--threads=1", "--max-concurrent-streams=1"])
        .arg(format!("--duration={}ms", duration.as_millis()))
        .arg(format!("--data={}", review.display()))
        .arg("--header=content-type: application/json")
        .arg(format!("--log-file={}", log.display()))
        .arg(url)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()?;
    let client_pid = child.id().ok_or("h2load exited at once")?;
    tokio::time::sleep(options.warm_up).await;
    let opened = std::time::SystemTime::now();
    let (server_before, client_before) = (usage(server_pid)?, usage(client_pid)?);
    tokio::time::sleep(options.row).await;
    let (server_after, client_after) = (usage(server_pid)?, usage(client_pid)?);
    let closed = std::time::SystemTime::now();
    let output = child.wait_with_output().await?;
    let stdout = String::from_utf8_lossy(&output.stdout);
    if !output.status.success() {
        return Err(format!(
            "h2load failed ({}): {stdout}{}",
            output.status,
            String::from_utf8_lossy(&output.stderr)
        )
        .into());
    }
    let micros = |time: std::time::SystemTime| -> BenchResult<u128> {
        Ok(time.duration_since(std::time::UNIX_EPOCH)?.as_micros())
    };
    let (from, to) = (micros(opened)?, micros(closed)?);
    let mut latencies = Vec::new();
    for line in std::fs::read_to_string(&log)?.lines() {
        let mut columns = line.split('\t');
        let (Some(started), Some(_status), Some(latency)) =
            (columns.next(), columns.next(), columns.next())
        else {
            return Err(format!("h2load's log has a short line: {line:?}").into());
        };
        if (from..to).contains(&started.parse()?) {
            latencies.push(Duration::from_micros(latency.parse()?));
        }
    }
    latencies.sort();
    std::fs::remove_file(&log)?;
    Ok(Load {
        latencies,
        window: closed.duration_since(opened)?,
        failures: failed_requests(&stdout)?,
        server_peak_rss_mib: server_after.peak_rss_mib,
        server_cpu_seconds: server_after.cpu_seconds - server_before.cpu_seconds,
        client_cpu_seconds: client_after.cpu_seconds - client_before.cpu_seconds,
    })
}

/// The `failed` count of h2load's summary line
/// `requests: 10 total, 10 started, 10 done, 9 succeeded, 1 failed, 1 errored, 0 timeout`.
fn failed_requests(summary: &str) -> BenchResult<usize> {
    let line = summary
        .lines()
        .find_map(|line| line.strip_prefix("requests: "))
        .ok_or_else(|| format!("h2load printed no requests line: {summary}"))?;
    let count = line
        .split(", ")
        .find_map(|part| part.strip_suffix(" failed"))
        .ok_or_else(|| format!("h2load's requests line has no failed count: {line}"))?;
    Ok(count.parse()?)
}

/// Every path at every concurrency against one server, with its CPU and peak RSS per row.
async fn measure(
    server: Server,
    pid: u32,
    base_url: &str,
    ca_pem: &str,
    options: &Options,
) -> BenchResult<Vec<Row>> {
    let template = review_template();
    let files = tempfile::tempdir()?;
    let review = files.path().join("review.json");
    std::fs::write(&review, template.replace(UID, "load"))?;
    let checker = client(ca_pem)?;
    let mut rows = Vec::new();
    for path in PATHS {
        let url = format!("{base_url}{path}");
        // h2load sees only status codes: one review first, whose answer is read in full.
        call(&checker, &url, &template, "check")
            .await
            .map_err(|failure| format!("{server:?} {path} answered wrongly: {failure}"))?;
        for clients in CONCURRENCY {
            eprintln!("{server:?} {path} with {clients} clients…");
            let load = drive(&url, &review, clients, pid, options).await?;
            rows.push(Row {
                server,
                path,
                clients,
                latencies: load.latencies,
                wall: load.window,
                failures: load.failures,
                cpu_seconds: load.server_cpu_seconds,
                peak_rss_mib: load.server_peak_rss_mib,
                client_cpu_seconds: load.client_cpu_seconds,
            });
        }
    }
    Ok(rows)
}

fn usage(pid: u32) -> BenchResult<ProcessUsage> {
    kueue_runner::process_usage(pid).ok_or_else(|| format!("process {pid} is gone").into())
}
