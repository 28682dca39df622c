//! The admitter at scale on a real control plane: 5,000 pending Workloads in 30 ClusterQueues
//! (15 cohorts of two, two flavors), then the real `kuota serve` binary is started. Measures the
//! wall time from its start until every Workload that fits is admitted (the count stops growing
//! at the expected number), and the process's peak resident memory (VmHWM). Then, with kuota
//! stopped, the control plane's ceiling: how fast a trivial client admits as many Workloads
//! again with the very status write Kuota makes, and Kuota's admission rate as a share of it.
//!
//! Run: `cargo bench --bench admitter_scale`. `KUOTA_BENCH_OUT=<file>` also writes the table
//! there.

use std::{
    collections::{BTreeMap, HashSet},
    error::Error,
    path::Path,
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

use futures::{StreamExt, TryStreamExt, stream};
use kube::{
    Api, Client, ResourceExt,
    api::PostParams,
    runtime::{WatchStreamExt, watcher},
};
use kuota::admitter::scheduling::{PENDING_STATUS_BURST, PENDING_STATUSES_PER_SECOND};
use kuota::api::v1beta2::{ClusterQueue, LocalQueue, ResourceFlavor, Workload};
use kuota::quota::model::{Admission, PodSetAssignment};
use kuota_cluster::ControlPlane;
use kuota_cluster::kueue_runner::process_usage;
use serde_json::{Value, json};

#[path = "../tests/common/status_ceiling.rs"]
mod status_ceiling;
use status_ceiling::Ceiling;

const QUEUES: usize = 30;
const WORKLOADS: usize = 5_000;
const NAMESPACE: &str = "scale";
/// Where the ceiling's Workloads go, out of the way of kuota's.
const CEILING_NAMESPACE: &str = "ceiling";
/// The ceiling is measured with as many status writes in flight as kuota allows itself, then
/// with five, the Workload workers of Kueue's performance runner (which finishes every
/// Workload with a status write), on fresh Workloads each.
const CEILING_RUNS: [(usize, usize); 2] = [(64, WORKLOADS), (5, 2_000)];
const FLAVORS: [&str; 2] = ["on-demand", "spot"];
/// Nominal cpu per flavor and ClusterQueue; every Workload asks for one cpu.
const NOMINAL_CPU: usize = 50;
/// Parallel requests while creating the Workloads.
const CREATE_CONCURRENCY: usize = 32;
/// The admitted count must hold this long to count as settled.
const SETTLE: Duration = Duration::from_secs(10);
const TIMEOUT: Duration = Duration::from_secs(600);

type BenchResult<T> = Result<T, Box<dyn Error>>;

fn from_json<T: serde::de::DeserializeOwned>(value: Value) -> BenchResult<T> {
    Ok(serde_json::from_value(value)?)
}

fn cluster_queue_name(index: usize) -> String {
    format!("cq-{index:02}")
}

/// The ClusterQueue each Workload goes to, round robin.
fn queue_of(workload: usize) -> usize {
    workload % QUEUES
}

/// Workloads that fit: each cohort (two queues) admits up to its pooled nominal quota.
fn expected_admitted() -> usize {
    let mut demand = [0usize; QUEUES / 2];
    for workload in 0..WORKLOADS {
        demand[queue_of(workload) / 2] += 1;
    }
    let cohort_capacity = 2 * FLAVORS.len() * NOMINAL_CPU;
    demand.iter().map(|d| (*d).min(cohort_capacity)).sum()
}

async fn create_queues(client: &Client) -> BenchResult<()> {
    let flavors: Api<ResourceFlavor> = Api::all(client.clone());
    for flavor in FLAVORS {
        flavors
            .create(
                &PostParams::default(),
                &from_json(json!({
                    "metadata": {"name": flavor},
                    "spec": {"nodeLabels": {"instance-type": flavor}},
                }))?,
            )
            .await?;
    }
    let namespaces: Api<k8s_openapi::api::core::v1::Namespace> = Api::all(client.clone());
    for namespace in [NAMESPACE, CEILING_NAMESPACE] {
        namespaces
            .create(
                &PostParams::default(),
                &from_json(json!({"metadata": {"name": namespace}}))?,
            )
            .await?;
    }
    let cluster_queues: Api<ClusterQueue> = Api::all(client.clone());
    let local_queues: Api<LocalQueue> = Api::namespaced(client.clone(), NAMESPACE);
    for index in 0..QUEUES {
        let name = cluster_queue_name(index);
        let flavors: Vec<Value> = FLAVORS
            .iter()
            .map(|flavor| {
                json!({"name": flavor, "resources": [
                    {"name": "cpu", "nominalQuota": NOMINAL_CPU.to_string()},
                    {"name": "memory", "nominalQuota": "1Ti"},
                ]})
            })
            .collect();
        cluster_queues
            .create(
                &PostParams::default(),
                &from_json(json!({
                    "metadata": {"name": name},
                    "spec": {
                        "cohortName": format!("cohort-{:02}", index / 2),
                        "namespaceSelector": {},
                        "resourceGroups": [{"coveredResources": ["cpu", "memory"], "flavors": flavors}],
                    },
                }))?,
            )
            .await?;
        local_queues
            .create(
                &PostParams::default(),
                &from_json(json!({"metadata": {"name": name}, "spec": {"clusterQueue": name}}))?,
            )
            .await?;
    }
    Ok(())
}

fn workload(index: usize) -> BenchResult<Workload> {
    from_json(json!({
        "metadata": {"name": format!("wl-{index:05}")},
        "spec": {
            "queueName": cluster_queue_name(queue_of(index)),
            "podSets": [{
                "name": "main",
                "count": 1,
                "template": {"spec": {
                    "restartPolicy": "Never",
                    "containers": [{"name": "c", "image": "busybox", "resources": {"requests": {"cpu": "1", "memory": "1Gi"}}}],
                }},
            }],
        },
    }))
}

/// Creates Workloads `indexes` in `namespace`; returns them as created, and how long it took.
async fn create_workloads(
    client: &Client,
    namespace: &str,
    indexes: std::ops::Range<usize>,
) -> BenchResult<(Vec<Workload>, Duration)> {
    let api: Api<Workload> = Api::namespaced(client.clone(), namespace);
    let objects: Vec<Workload> = indexes.map(workload).collect::<BenchResult<_>>()?;
    let started = Instant::now();
    let created = stream::iter(objects)
        .map(|object| {
            let api = api.clone();
            async move { api.create(&PostParams::default(), &object).await }
        })
        .buffer_unordered(CREATE_CONCURRENCY)
        .try_collect()
        .await?;
    Ok((created, started.elapsed()))
}

/// What kuota would write for a Workload of this benchmark: its queue, the first flavor.
fn admission_of(workload: &Workload) -> Admission {
    Admission {
        cluster_queue: workload.spec.queue_name.clone().unwrap_or_default(),
        pod_set_assignments: vec![PodSetAssignment {
            name: "main".to_owned(),
            flavors: [("cpu", FLAVORS[0]), ("memory", FLAVORS[0])]
                .map(|(resource, flavor)| (resource.to_owned(), flavor.to_owned()))
                .into(),
            resource_usage: [("cpu", 1000), ("memory", 1 << 30)]
                .map(|(resource, quantity)| (resource.to_owned(), quantity))
                .into(),
            count: 1,
            topology: None,
        }],
    }
}

/// What the watch has seen so far.
#[derive(Default)]
struct Progress {
    admitted: HashSet<String>,
    /// Workloads with a `QuotaReserved=False` condition (evaluated, not admitted).
    pending_reported: HashSet<String>,
    last_admission: Option<Instant>,
}

fn watch_progress(client: &Client, progress: Arc<Mutex<Progress>>) -> tokio::task::JoinHandle<()> {
    let api: Api<Workload> = Api::namespaced(client.clone(), NAMESPACE);
    tokio::spawn(async move {
        let mut objects = watcher(api, watcher::Config::default())
            .default_backoff()
            .applied_objects()
            .boxed();
        while let Some(object) = objects.next().await {
            let Ok(workload) = object else { continue };
            let Ok(mut progress) = progress.lock() else {
                return;
            };
            let status = workload.status.as_ref();
            let name = workload.name_any();
            let admitted = status.is_some_and(|s| {
                s.admission.is_some()
                    && s.conditions
                        .iter()
                        .any(|c| c.type_ == "Admitted" && c.status == "True")
            });
            let pending = status.is_some_and(|s| {
                s.conditions
                    .iter()
                    .any(|c| c.type_ == "QuotaReserved" && c.status == "False")
            });
            if admitted && progress.admitted.insert(name.clone()) {
                progress.last_admission = Some(Instant::now());
            }
            if pending {
                progress.pending_reported.insert(name);
            }
        }
    })
}

/// Workloads whose last known state is `QuotaReserved=False`.
fn pending_not_admitted(progress: &Progress) -> usize {
    progress
        .pending_reported
        .difference(&progress.admitted)
        .count()
}

/// A `Vm*` figure of `/proc/<pid>/status` (e.g. `VmHWM`, the peak resident set), in KiB.
fn memory_kib(pid: u32, field: &str) -> BenchResult<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))?;
    let line = status
        .lines()
        .find(|line| {
            line.strip_prefix(field)
                .is_some_and(|rest| rest.starts_with(':'))
        })
        .ok_or_else(|| format!("no {field} in /proc/{pid}/status"))?;
    let kib = line
        .split_whitespace()
        .nth(1)
        .ok_or_else(|| format!("no {field} value"))?
        .parse()?;
    Ok(kib)
}

/// User plus system CPU time a process has used so far, in seconds.
fn cpu_seconds(pid: u32) -> BenchResult<f64> {
    let usage = process_usage(pid).ok_or_else(|| format!("no process {pid}"))?;
    Ok(usage.cpu_seconds)
}

/// The pid of a control plane component: its executable is named `name` and one of its
/// arguments mentions the control plane's directory.
fn component_pid(dir: &Path, name: &str) -> BenchResult<u32> {
    let dir = dir.display().to_string();
    for entry in std::fs::read_dir("/proc")? {
        let entry = entry?;
        let Some(pid) = entry.file_name().to_str().and_then(|n| n.parse().ok()) else {
            continue;
        };
        let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) else {
            continue;
        };
        let args: Vec<String> = cmdline
            .split(|b| *b == 0)
            .map(|a| String::from_utf8_lossy(a).into_owned())
            .collect();
        if args
            .first()
            .is_some_and(|a| a.ends_with(&format!("/{name}")))
            && args.iter().any(|a| a.contains(&dir))
        {
            return Ok(pid);
        }
    }
    Err(format!("no {name} process for {dir}").into())
}

/// CPU seconds used by kuota and the components it talks to, between two moments.
struct CpuUse {
    kuota: f64,
    apiserver: f64,
    etcd: f64,
    /// This benchmark's own Workload watch.
    bench: f64,
}

/// `apiserver_request_total` summed by (verb, resource[/subresource]).
type RequestCounts = BTreeMap<(String, String), f64>;

/// The apiserver's request counters, from its `/metrics`.
async fn apiserver_requests(client: &Client) -> BenchResult<RequestCounts> {
    let request = axum::http::Request::get("/metrics").body(Vec::new())?;
    let text = client.request_text(request).await?;
    let mut counts = RequestCounts::new();
    for line in text.lines() {
        let Some(rest) = line.strip_prefix("apiserver_request_total{") else {
            continue;
        };
        let Some((labels, value)) = rest.rsplit_once("} ") else {
            continue;
        };
        let label = |name: &str| {
            labels
                .split("\",")
                .find_map(|pair| pair.strip_prefix(&format!("{name}=\"")))
                .map(|v| v.trim_end_matches('"').to_owned())
                .unwrap_or_default()
        };
        let mut resource = label("resource");
        let subresource = label("subresource");
        if !subresource.is_empty() {
            resource = format!("{resource}/{subresource}");
        }
        *counts.entry((label("verb"), resource)).or_default() += value.parse::<f64>()?;
    }
    Ok(counts)
}

/// Requests counted in `after` but not in `before`, writes first, most frequent first.
fn request_delta(before: &RequestCounts, after: &RequestCounts) -> Vec<(String, String, f64)> {
    let mut delta: Vec<(String, String, f64)> = after
        .iter()
        .map(|((verb, resource), count)| {
            let earlier = before.get(&(verb.clone(), resource.clone())).copied();
            (
                verb.clone(),
                resource.clone(),
                count - earlier.unwrap_or(0.0),
            )
        })
        .filter(|(_, _, count)| *count > 0.0)
        .collect();
    delta.sort_by(|a, b| b.2.total_cmp(&a.2));
    delta
}

fn is_write(verb: &str) -> bool {
    matches!(verb, "POST" | "PUT" | "PATCH" | "DELETE" | "APPLY")
}

#[tokio::main]
async fn main() -> BenchResult<()> {
    let expected = expected_admitted();
    let dir = tempfile::tempdir()?;
    eprintln!("starting the control plane in {}", dir.path().display());
    let plane = ControlPlane::start(dir.path()).await?;
    let result = run(&plane, expected).await;
    plane.stop();
    let figures = result?;
    let table = figures.table();
    println!("{table}");
    if let Some(path) = std::env::var_os("KUOTA_BENCH_OUT") {
        std::fs::write(&path, &table)?;
        eprintln!("wrote {}", Path::new(&path).display());
    }
    Ok(())
}

struct Figures {
    expected: usize,
    admitted: usize,
    /// Workloads left out showing `QuotaReserved=False` once the admissions settled.
    pending_reported: usize,
    create: Duration,
    ready: Duration,
    all_admitted: Duration,
    /// From kuota's start until the admitted count settled.
    settled: Duration,
    rss_at_ready_kib: u64,
    peak_rss_kib: u64,
    cpu: CpuUse,
    /// (verb, resource, count) the apiserver served from kuota's start until all admitted.
    requests: Vec<(String, String, f64)>,
    /// The ceiling at each of [`CEILING_RUNS`], most writes in flight first.
    ceilings: Vec<Ceiling>,
    /// A visibility API list through the aggregator, once everything that fits is admitted.
    visibility: VisibilityTiming,
}

/// [`VISIBILITY_REQUESTS`] lists of one ClusterQueue's pending workloads through the API
/// server's aggregation layer.
struct VisibilityTiming {
    /// Items in the ClusterQueue's list.
    pending: usize,
    /// Each request's round trip, sorted.
    times: Vec<Duration>,
}

/// Lists timed after the run.
const VISIBILITY_REQUESTS: usize = 21;

/// Registers kuota's visibility API, waits until it answers, then times
/// [`VISIBILITY_REQUESTS`] lists of the first ClusterQueue (every request converts all
/// [`WORKLOADS`] Workloads, as each does).
async fn time_visibility(
    plane: &ControlPlane,
    client: &Client,
    port: u16,
) -> BenchResult<VisibilityTiming> {
    plane.register_visibility(port).await?;
    let path = format!(
        "/apis/visibility.kueue.x-k8s.io/v1beta2/clusterqueues/{}/pendingworkloads?limit=100000",
        cluster_queue_name(0)
    );
    let list = || async {
        let request = axum::http::Request::get(&path).body(Vec::new())?;
        let body = client.request_text(request).await?;
        let summary: Value = serde_json::from_str(&body)?;
        let items = summary["items"].as_array().map_or(0, Vec::len);
        BenchResult::Ok(items)
    };
    let available = Instant::now() + Duration::from_secs(60);
    while list().await.is_err() {
        if Instant::now() > available {
            return Err("the visibility API did not answer within 60 s".into());
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let mut times = Vec::new();
    let mut pending = 0;
    for _ in 0..VISIBILITY_REQUESTS {
        let started = Instant::now();
        pending = list().await?;
        times.push(started.elapsed());
    }
    times.sort();
    Ok(VisibilityTiming { pending, times })
}

impl Figures {
    /// Writes per second and the busiest (verb, resource) pairs.
    fn request_summary(&self) -> String {
        let seconds = self.all_admitted.as_secs_f64();
        let writes: f64 = self
            .requests
            .iter()
            .filter(|(verb, _, _)| is_write(verb))
            .map(|(_, _, count)| count)
            .sum();
        let reads: f64 = self
            .requests
            .iter()
            .filter(|(verb, _, _)| !is_write(verb) && verb != "WATCH")
            .map(|(_, _, count)| count)
            .sum();
        let busiest: Vec<String> = self
            .requests
            .iter()
            .take(6)
            .map(|(verb, resource, count)| format!("{verb} {resource} {count:.0}"))
            .collect();
        format!(
            "{writes:.0} writes ({:.0}/s), {reads:.0} reads; {}",
            writes / seconds,
            busiest.join(", ")
        )
    }

    fn table(&self) -> String {
        let rows = [
            (
                "setup",
                format!(
                    "{WORKLOADS} pending Workloads, {QUEUES} ClusterQueues (15 cohorts of two, 2 flavors, cpu+memory)"
                ),
            ),
            (
                "creating the Workloads (apiserver only, no webhook)",
                format!(
                    "{:.1} s ({:.0} objects/s, {CREATE_CONCURRENCY} in parallel)",
                    self.create.as_secs_f64(),
                    WORKLOADS as f64 / self.create.as_secs_f64()
                ),
            ),
            (
                "kuota start until /readyz (stores synced)",
                format!("{:.2} s", self.ready.as_secs_f64()),
            ),
            (
                "kuota start until all that fit are admitted",
                format!(
                    "{:.2} s ({} of {WORKLOADS} admitted, expected {})",
                    self.all_admitted.as_secs_f64(),
                    self.admitted,
                    self.expected
                ),
            ),
            (
                "admission throughput",
                format!(
                    "{:.0} workloads/s",
                    self.admitted as f64 / self.all_admitted.as_secs_f64()
                ),
            ),
            (
                "Workloads left out that show QuotaReserved=False once the admissions settled",
                format!(
                    "{} of {} after {:.1} s ({:.1}/s; kuota writes pending statuses at {} a second after a burst of {})",
                    self.pending_reported,
                    WORKLOADS - self.expected,
                    self.settled.as_secs_f64(),
                    self.pending_reported as f64 / self.settled.as_secs_f64(),
                    PENDING_STATUSES_PER_SECOND,
                    PENDING_STATUS_BURST
                ),
            ),
            (
                "kuota RSS at /readyz",
                format!("{:.1} MiB", self.rss_at_ready_kib as f64 / 1024.0),
            ),
            (
                "kuota peak RSS (VmHWM)",
                format!("{:.1} MiB", self.peak_rss_kib as f64 / 1024.0),
            ),
            (
                "CPU used from kuota start until all admitted",
                format!(
                    "kuota {:.1} s, kube-apiserver {:.1} s, etcd {:.1} s, this benchmark's watch {:.1} s (wall {:.1} s, {} cores)",
                    self.cpu.kuota,
                    self.cpu.apiserver,
                    self.cpu.etcd,
                    self.cpu.bench,
                    self.all_admitted.as_secs_f64(),
                    std::thread::available_parallelism().map_or(1, usize::from),
                ),
            ),
            ("apiserver requests in that time", self.request_summary()),
            (
                "kuota's admission throughput as a share of the ceiling below",
                format!(
                    "{:.0}%",
                    100.0 * self.admitted as f64
                        / self.all_admitted.as_secs_f64()
                        / self.ceilings[0].per_second()
                ),
            ),
        ];
        let ceilings = self.ceilings.iter().map(|ceiling| {
            (
                format!(
                    "status-write ceiling, {} in flight: a trivial client admitting fresh Workloads with kuota's own status write (kuota stopped)",
                    ceiling.concurrency
                ),
                format!(
                    "{:.0} admissions/s ({} in {:.1} s)",
                    ceiling.per_second(),
                    ceiling.admitted,
                    ceiling.elapsed.as_secs_f64()
                ),
            )
        });
        let times = &self.visibility.times;
        let visibility = (
            format!(
                "visibility API: `kubectl get --raw .../clusterqueues/{}/pendingworkloads` through the aggregator, {VISIBILITY_REQUESTS} times after the run",
                cluster_queue_name(0)
            ),
            format!(
                "min {:.1} / median {:.1} / max {:.1} ms ({} pending items of {WORKLOADS} Workloads)",
                times[0].as_secs_f64() * 1000.0,
                times[times.len() / 2].as_secs_f64() * 1000.0,
                times[times.len() - 1].as_secs_f64() * 1000.0,
                self.visibility.pending,
            ),
        );
        let mut table = String::from("| admitter_scale | |\n|---|---|\n");
        for (what, value) in rows
            .into_iter()
            .map(|(what, value)| (what.to_owned(), value))
            .chain(ceilings)
            .chain(std::iter::once(visibility))
        {
            table.push_str(&format!("| {what} | {value} |\n"));
        }
        table
    }
}

async fn run(plane: &ControlPlane, expected: usize) -> BenchResult<Figures> {
    plane.install_crds(&kuota::api::crds::all()).await?;
    let client = plane.client().await?;
    create_queues(&client).await?;
    eprintln!("creating {WORKLOADS} Workloads");
    let (_, create) = create_workloads(&client, NAMESPACE, 0..WORKLOADS).await?;

    let progress = Arc::new(Mutex::new(Progress::default()));
    let watch = watch_progress(&client, Arc::clone(&progress));
    let read = |f: &dyn Fn(&Progress) -> usize| progress.lock().map(|p| f(&p)).unwrap_or(0);

    let apiserver = component_pid(plane.dir(), "kube-apiserver")?;
    let etcd = component_pid(plane.dir(), "etcd")?;
    let (apiserver_before, etcd_before) = (cpu_seconds(apiserver)?, cpu_seconds(etcd)?);
    let bench_before = cpu_seconds(std::process::id())?;
    let requests_before = apiserver_requests(&client).await?;

    eprintln!("starting kuota serve");
    let started = Instant::now();
    let kuota = plane
        .start_kuota(Path::new(env!("CARGO_BIN_EXE_kuota")), &[])
        .await?;
    let ready = started.elapsed();
    let pid = kuota.process.pid().ok_or("kuota has no pid")?;
    let rss_at_ready_kib = memory_kib(pid, "VmRSS")?;

    let deadline = started + TIMEOUT;
    let mut cpu = None;
    let mut requests = Vec::new();
    loop {
        let admitted = read(&|p| p.admitted.len());
        if cpu.is_none() && admitted >= expected {
            cpu = Some(CpuUse {
                kuota: cpu_seconds(pid)?,
                apiserver: cpu_seconds(apiserver)? - apiserver_before,
                etcd: cpu_seconds(etcd)? - etcd_before,
                bench: cpu_seconds(std::process::id())? - bench_before,
            });
            requests = request_delta(&requests_before, &apiserver_requests(&client).await?);
        }
        let quiet = progress
            .lock()
            .ok()
            .and_then(|p| p.last_admission)
            .is_some_and(|last| last.elapsed() >= SETTLE);
        if admitted >= expected && quiet {
            break;
        }
        if Instant::now() > deadline {
            return Err(format!(
                "only {admitted} of {expected} admitted after {TIMEOUT:?}; kuota log:\n{}",
                kuota.process.log_tail(30)
            )
            .into());
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let settled = started.elapsed();
    let pending_reported = read(&pending_not_admitted);
    let peak_rss_kib = memory_kib(pid, "VmHWM")?;
    let visibility = time_visibility(plane, &client, kuota.visibility_port).await?;
    let last_admission = progress
        .lock()
        .ok()
        .and_then(|p| p.last_admission)
        .ok_or("no admission seen")?;
    let admitted = read(&|p| p.admitted.len());
    watch.abort();
    kuota.process.stop(Duration::from_secs(10));
    if admitted != expected {
        return Err(format!("admitted {admitted}, expected exactly {expected}").into());
    }

    let mut ceilings = Vec::new();
    let mut next = 0;
    for (concurrency, count) in CEILING_RUNS {
        eprintln!("measuring the status-write ceiling: {count} Workloads, {concurrency} in flight");
        let (fresh, _) = create_workloads(&client, CEILING_NAMESPACE, next..next + count).await?;
        next += count;
        ceilings.push(status_ceiling::admit_all(&client, fresh, admission_of, concurrency).await?);
    }
    Ok(Figures {
        expected,
        admitted,
        pending_reported,
        create,
        ready,
        all_admitted: last_admission.duration_since(started),
        settled,
        rss_at_ready_kib,
        peak_rss_kib,
        cpu: cpu.ok_or("admitted count never reached")?,
        requests,
        ceilings,
        visibility,
    })
}
