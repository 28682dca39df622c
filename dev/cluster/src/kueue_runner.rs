//! Kueue's own scheduler performance runner (`test/performance/scheduler/runner` of the pinned
//! release, built by `dev/kueue/build.sh`), run unchanged against an admitter: Kuota's
//! `kuota serve`, or Kueue's minimalkueue (Kueue's core controllers and scheduler, what the
//! runner's thresholds were calibrated on).
//!
//! The runner starts its own control plane (envtest: etcd and kube-apiserver, here the ones
//! `build.sh` compiled), installs the admitter's CRDs, starts the admitter as its child with
//! `--kubeconfig FILE`, creates the scenario's queues and Workloads, plays the job side
//! (finishes each Workload `runtimeMs` after it is admitted, finishes evictions), and writes
//! `summary.yaml` and the admitter's `<name>.stats.yaml` (wall time, CPU, peak RSS). Kueue's
//! checker then compares them with a rangespec. Here the API server's and etcd's CPU is read
//! from `/proc` while the runner runs, and its request counts from its `/metrics`, through the
//! kubeconfig the runner hands the admitter.
//!
//! Also Kueue's manager (`cmd/kueue`, built by `build.sh manager`) and the `/proc` reading, for
//! the webhook bench, which runs the manager itself.

use std::{
    collections::{BTreeMap, HashMap},
    fs,
    path::{Path, PathBuf},
    process::{Command, Stdio},
    time::{Duration, Instant},
};

use serde::Deserialize;

use crate::Error;

/// Kueue's pinned release and the tools built from it.
#[derive(Clone, Debug)]
pub struct Tools {
    /// The runner.
    pub runner: PathBuf,
    /// minimalkueue.
    pub minimalkueue: PathBuf,
    /// The checker (a Go test binary).
    pub checker: PathBuf,
    /// The pinned Kueue module's directory (configs, CRDs).
    pub kueue_module: PathBuf,
    /// The control plane binaries the runner's envtest starts.
    pub control_plane: PathBuf,
    /// The pinned Kueue version.
    pub kueue_version: String,
}

/// Builds (cached) Kueue's tools and the control plane.
pub fn tools() -> Result<Tools, Error> {
    let kueue_dir = crate::crate_dir().join("../kueue");
    let bin = PathBuf::from(script_output(&kueue_dir.join("build.sh"), &[])?);
    let kueue_module = PathBuf::from(script_output(&kueue_dir.join("module.sh"), &[])?);
    let kueue_version = kueue_module
        .file_name()
        .and_then(|name| name.to_str())
        .and_then(|name| name.split_once('@'))
        .map(|(_, version)| version.to_owned())
        .unwrap_or_default();
    Ok(Tools {
        runner: bin.join("runner"),
        minimalkueue: bin.join("minimalkueue"),
        checker: bin.join("checker.test"),
        kueue_module,
        control_plane: crate::build()?,
        kueue_version,
    })
}

/// Builds (cached) Kueue's manager, `cmd/kueue` of the pinned release, and returns its path.
pub fn manager() -> Result<PathBuf, Error> {
    let build = crate::crate_dir().join("../kueue/build.sh");
    Ok(PathBuf::from(script_output(&build, &["manager"])?))
}

fn script_output(script: &Path, args: &[&str]) -> Result<String, Error> {
    let output = Command::new("bash")
        .arg(script)
        .args(args)
        .stderr(Stdio::inherit())
        .output()?;
    if !output.status.success() {
        return Err(Error::Build(format!(
            "{} exited with {}",
            script.display(),
            output.status
        )));
    }
    let stdout = String::from_utf8_lossy(&output.stdout);
    Ok(stdout.lines().last().unwrap_or_default().trim().to_owned())
}

/// The admitter under test.
#[derive(Clone, Debug)]
pub enum Admitter {
    /// `kuota serve` from this binary, with Kuota's CRDs from this directory; with its admission
    /// webhooks registered, or admitter-only (`--admitter-only`, like minimalkueue).
    Kuota {
        binary: PathBuf,
        crds: PathBuf,
        admission_webhooks: bool,
    },
    /// Kueue's minimalkueue, with Kueue's CRDs.
    Kueue,
}

impl Admitter {
    /// Name in tables.
    pub fn name(&self) -> &'static str {
        match self {
            Admitter::Kuota { .. } => "Kuota",
            Admitter::Kueue => "Kueue",
        }
    }
}

/// A scenario: the runner's generator config and the checker's rangespec.
#[derive(Clone, Debug)]
pub struct Scenario {
    /// Name in tables.
    pub name: String,
    /// Generator config.
    pub generator: PathBuf,
    /// Rangespec for Kueue's checker.
    pub rangespec: PathBuf,
    /// The runner's `--timeout` (how long it records at most).
    pub timeout: Duration,
}

impl Scenario {
    /// One of Kueue's own scenarios (`configs/<name>/` in its module).
    pub fn kueue(tools: &Tools, name: &str, timeout: Duration) -> Self {
        let dir = tools
            .kueue_module
            .join("test/performance/scheduler/configs")
            .join(name);
        Self {
            name: name.to_owned(),
            generator: dir.join("generator.yaml"),
            rangespec: dir.join("rangespec.yaml"),
            timeout,
        }
    }

    /// Whether the generator lays out a node topology (Kueue's `tas` config): the runner then
    /// creates the nodes, and Kueue's side needs its TAS controllers (`--enableTAS`); Kuota's
    /// are on by default.
    pub fn uses_topology(&self) -> bool {
        fs::read_to_string(&self.generator)
            .is_ok_and(|text| text.lines().any(|line| line.starts_with("topology:")))
    }
}

/// The runner's `summary.yaml`.
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Summary {
    /// Per ClusterQueue class.
    pub cluster_queue_classes: BTreeMap<String, QueueClassSummary>,
    /// Workload events the recorder could not keep up with.
    pub dropped_workload_events: i64,
    /// Per Workload class.
    pub workload_classes: BTreeMap<String, WorkloadClassSummary>,
}

/// One ClusterQueue class of [`Summary`].
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct QueueClassSummary {
    /// Time-weighted average CPU usage (millicores).
    pub cpu_average_usage: i64,
    /// Nominal quota of the class (millicores).
    pub nominal_quota: i64,
}

impl QueueClassSummary {
    /// Usage as a share of nominal quota, in percent (the checker's figure).
    pub fn usage_percent(&self) -> f64 {
        if self.nominal_quota == 0 {
            return 0.0;
        }
        lossless(self.cpu_average_usage) * 100.0 / lossless(self.nominal_quota)
    }
}

/// One Workload class of [`Summary`].
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct WorkloadClassSummary {
    /// Workloads of the class.
    pub count: i64,
    /// Average time from creation to admission.
    pub average_time_to_admission_ms: i64,
    /// Average time from creation to finish.
    pub average_time_to_finish_ms: i64,
    /// Evictions of the class's Workloads.
    pub total_evictions: i64,
}

/// The admitter's `<name>.stats.yaml`, as the runner measured it.
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct CmdStats {
    /// Wall time from start until the runner stopped it.
    pub wall_ms: i64,
    /// User CPU.
    pub user_ms: i64,
    /// System CPU.
    pub sys_ms: i64,
    /// Peak resident set (KiB).
    pub maxrss: i64,
}

/// CPU and peak memory of a process the runner started, read from `/proc`.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct ProcessUsage {
    /// User plus system CPU seconds.
    pub cpu_seconds: f64,
    /// Peak resident set (VmHWM), MiB.
    pub peak_rss_mib: f64,
}

/// Kueue's checker's verdict.
#[derive(Clone, Debug, PartialEq)]
pub struct Verdict {
    /// Whether every threshold held.
    pub passed: bool,
    /// The thresholds that did not hold, as the checker words them.
    pub failures: Vec<String>,
}

/// What one run measured.
#[derive(Clone, Debug)]
pub struct Outcome {
    /// The runner's summary.
    pub summary: Summary,
    /// The admitter's stats.
    pub admitter: CmdStats,
    /// kube-apiserver.
    pub apiserver: ProcessUsage,
    /// etcd.
    pub etcd: ProcessUsage,
    /// Kueue's checker on the scenario's rangespec.
    pub verdict: Verdict,
    /// kube-apiserver's requests, as of its last reading before the run ended.
    pub requests: RequestCounts,
}

/// One kind of API request: `resource[/subresource]` (with its group) and verb.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct RequestKind {
    /// `workloads.kueue.x-k8s.io/status`, `events`, ...
    pub resource: String,
    /// `APPLY`, `PATCH`, `POST`, `WATCH`, ...
    pub verb: String,
}

/// Requests served by kube-apiserver, by kind, summed over codes, scopes and versions.
pub type RequestCounts = BTreeMap<RequestKind, u64>;

/// Reads `apiserver_request_total` from kube-apiserver's Prometheus text; requests for no
/// resource (`/metrics`, discovery) are left out. A watch is counted when it ends.
pub fn request_counts(metrics: &str) -> RequestCounts {
    let mut counts = RequestCounts::new();
    for line in metrics.lines() {
        let Some(rest) = line.strip_prefix("apiserver_request_total{") else {
            continue;
        };
        let Some((labels, value)) = rest.rsplit_once("} ") else {
            continue;
        };
        let Ok(value) = value.trim().parse::<f64>() else {
            continue;
        };
        let label = |name: &str| {
            labels
                .split("\",")
                .find_map(|pair| pair.strip_prefix(name)?.strip_prefix("=\""))
                .map(|value| value.trim_end_matches('"'))
                .unwrap_or_default()
        };
        let resource = label("resource");
        if resource.is_empty() {
            continue;
        }
        let group = label("group");
        let subresource = label("subresource");
        let mut name = resource.to_owned();
        if !group.is_empty() {
            name = format!("{name}.{group}");
        }
        if !subresource.is_empty() {
            name = format!("{name}/{subresource}");
        }
        let kind = RequestKind {
            resource: name,
            verb: label("verb").to_owned(),
        };
        // Counters of a few hundred thousand are exact in f64.
        #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
        let value = value as u64;
        *counts.entry(kind).or_default() += value;
    }
    counts
}

/// Runs the runner with `scenario` against `admitter`, in `dir` (its output directory).
pub fn run(
    tools: &Tools,
    admitter: &Admitter,
    scenario: &Scenario,
    dir: &Path,
) -> Result<Outcome, Error> {
    fs::create_dir_all(dir)?;
    let (program, crds, stats_name) = match admitter {
        Admitter::Kuota {
            binary,
            crds,
            admission_webhooks,
        } => {
            let wrapper = dir.join("kuota-serve");
            let log = dir.join("kuota.log");
            fs::write(
                &wrapper,
                kuota_wrapper(binary, dir, &log, *admission_webhooks),
            )?;
            set_executable(&wrapper)?;
            (wrapper, crds.clone(), "kuota-serve")
        }
        Admitter::Kueue => {
            // Same name as the real binary: the runner names the stats file after it.
            let wrapper = dir.join("kueue-bin/minimalkueue");
            fs::create_dir_all(dir.join("kueue-bin"))?;
            fs::write(&wrapper, kueue_wrapper(&tools.minimalkueue, dir))?;
            set_executable(&wrapper)?;
            (
                wrapper,
                tools.kueue_module.join("config/components/crd/bases"),
                "minimalkueue",
            )
        }
    };
    let mut args: Vec<String> = vec![
        format!("KUBEBUILDER_ASSETS={}", tools.control_plane.display()),
        // Kueue's test utilities look for the project directory at start; any will do.
        format!("PROJECT_DIR={}", dir.join("Makefile").display()),
        tools.runner.display().to_string(),
        "-o".to_owned(),
        dir.display().to_string(),
        "--crds".to_owned(),
        crds.display().to_string(),
        "--generatorConfig".to_owned(),
        scenario.generator.display().to_string(),
        "--minimalKueue".to_owned(),
        program.display().to_string(),
    ];
    if scenario.uses_topology() {
        args.push("--enableTAS=true".to_owned());
    }
    args.push(format!("--timeout={}s", scenario.timeout.as_secs()));
    // Under a watchdog: if this process dies, the runner is stopped and stops envtest.
    let log = dir.join("runner.log");
    let mut runner = crate::Supervised::spawn("runner", Path::new("env"), &args, &log)?;
    let runner_pid = runner
        .pid()
        .ok_or_else(|| Error::Runner("the runner did not start".to_owned()))?;
    let deadline = Instant::now() + scenario.timeout + Duration::from_secs(300);
    let mut children: HashMap<u32, Sample> = HashMap::new();
    let mut requests = RequestCounts::new();
    let started = Instant::now();
    let mut next_scrape = started + EARLY_SCRAPE_INTERVAL;
    while runner.is_running() {
        if Instant::now() >= next_scrape {
            let interval = if started.elapsed() < EARLY_SCRAPES {
                EARLY_SCRAPE_INTERVAL
            } else {
                SCRAPE_INTERVAL
            };
            next_scrape = Instant::now() + interval;
            if let Some(counts) = scrape_requests(tools, dir) {
                requests = counts;
            }
        }
        for (pid, sample) in proc_children(runner_pid) {
            // A process on its way out reads as using nothing: keep the highest readings.
            let kept = children.entry(pid).or_insert_with(|| sample.clone());
            kept.usage.cpu_seconds = kept.usage.cpu_seconds.max(sample.usage.cpu_seconds);
            kept.usage.peak_rss_mib = kept.usage.peak_rss_mib.max(sample.usage.peak_rss_mib);
        }
        if Instant::now() > deadline {
            runner.kill_hard();
            break;
        }
        std::thread::sleep(Duration::from_millis(500));
    }
    // envtest's processes outlive a runner that failed; nothing may be left running.
    for pid in children.keys() {
        if proc_parent(*pid).is_some() {
            let _ = Command::new("kill")
                .args(["-KILL", &pid.to_string()])
                .status();
        }
    }
    // The runner writes its summary only when it completed.
    if !dir.join("summary.yaml").exists() {
        return Err(Error::Runner(format!(
            "the runner ended without a summary ({}); last lines:\n{}",
            dir.display(),
            runner.log_tail(20)
        )));
    }
    let summary: Summary = serde_saphyr::from_str(&fs::read_to_string(dir.join("summary.yaml"))?)?;
    let stats_file = dir.join(format!("{stats_name}.stats.yaml"));
    let admitter_stats: CmdStats = serde_saphyr::from_str(&fs::read_to_string(&stats_file)?)?;
    let usage_of = |name: &str| {
        children.values().filter(|sample| sample.name == name).fold(
            ProcessUsage::default(),
            |total, sample| ProcessUsage {
                cpu_seconds: total.cpu_seconds + sample.usage.cpu_seconds,
                peak_rss_mib: total.peak_rss_mib.max(sample.usage.peak_rss_mib),
            },
        )
    };
    let verdict = check(
        tools,
        &dir.join("summary.yaml"),
        &stats_file,
        &scenario.rangespec,
    )?;
    Ok(Outcome {
        summary,
        admitter: admitter_stats,
        apiserver: usage_of("kube-apiserver"),
        etcd: usage_of("etcd"),
        verdict,
        requests,
    })
}

/// How often kube-apiserver's request counts are read during a run: rarely enough that the
/// reading (a few MiB of metrics) costs it little, the same for either admitter.
const SCRAPE_INTERVAL: Duration = Duration::from_secs(10);

/// Readings come every second for the first half minute, so that even a run of seconds has
/// one taken after the runner made its objects: on a loaded machine the admitter may start
/// (and the API server become readable) only seconds in, and a single early reading missed it.
const EARLY_SCRAPE_INTERVAL: Duration = Duration::from_secs(1);
const EARLY_SCRAPES: Duration = Duration::from_secs(30);

/// The file an admitter's wrapper writes the runner's kubeconfig path to.
const KUBECONFIG_PATH_FILE: &str = "kubeconfig-path";

/// kube-apiserver's request counts now, through the admitter's kubeconfig; `None` before the
/// admitter started or once the API server is gone.
fn scrape_requests(tools: &Tools, dir: &Path) -> Option<RequestCounts> {
    let kubeconfig = fs::read_to_string(dir.join(KUBECONFIG_PATH_FILE)).ok()?;
    let output = Command::new(tools.control_plane.join("kubectl"))
        .args([
            "--kubeconfig",
            kubeconfig.trim(),
            "get",
            "--raw",
            "/metrics",
        ])
        .stderr(Stdio::null())
        .output()
        .ok()?;
    output
        .status
        .success()
        .then(|| request_counts(&String::from_utf8_lossy(&output.stdout)))
}

/// Runs Kueue's checker on a run's outputs.
pub fn check(
    tools: &Tools,
    summary: &Path,
    stats: &Path,
    rangespec: &Path,
) -> Result<Verdict, Error> {
    let output = Command::new(&tools.checker)
        .arg("-test.run=TestScalability")
        .arg("-test.v")
        .arg(format!("-summary={}", summary.display()))
        .arg(format!("-cmdStats={}", stats.display()))
        .arg(format!("-range={}", rangespec.display()))
        // As for the runner: Kueue's test utilities want a project directory; any will do.
        .env("PROJECT_DIR", summary.with_file_name("Makefile"))
        .output()?;
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    let passed = output.status.success();
    let mut failures: Vec<String> = text
        .lines()
        .filter(|line| line.contains("checker_test.go:"))
        .map(|line| line.trim().to_owned())
        .collect();
    if !passed && failures.is_empty() {
        failures.push(format!(
            "the checker exited with {}: {}",
            output.status,
            text.trim()
        ));
    }
    Ok(Verdict { passed, failures })
}

/// The runner starts minimalkueue as `minimalkueue --kubeconfig FILE [flags]`; this script
/// notes the kubeconfig's path and becomes minimalkueue (`exec`, so the runner's figures are
/// minimalkueue's own).
fn kueue_wrapper(minimalkueue: &Path, dir: &Path) -> String {
    format!(
        r#"#!/bin/sh
# Written by kuota-cluster's kueue_runner: notes the kubeconfig, then runs minimalkueue.
previous=
for arg in "$@"; do
  [ "$previous" = --kubeconfig ] && printf '%s\n' "$arg" > "{dir}/{file}"
  previous=$arg
done
exec "{binary}" "$@"
"#,
        dir = dir.display(),
        file = KUBECONFIG_PATH_FILE,
        binary = minimalkueue.display(),
    )
}

/// The runner starts the admitter as `<program> --kubeconfig FILE [flags]`; this script turns
/// that into `kuota serve`, out of cluster, its webhook on a free loopback port (registered
/// only with `admission_webhooks`).
fn kuota_wrapper(binary: &Path, dir: &Path, log: &Path, admission_webhooks: bool) -> String {
    format!(
        r#"#!/bin/sh
# Written by kuota-cluster's kueue_runner: the runner's admitter command line to kuota serve.
kubeconfig=
while [ $# -gt 0 ]; do
  case "$1" in
    --kubeconfig) kubeconfig=$2; shift 2 ;;
    *) shift ;;
  esac
done
printf '%s\n' "$kubeconfig" > "{dir}/{file}"
webhook={webhook}
exec "{binary}" --kubeconfig "$kubeconfig" serve --webhook-url "https://127.0.0.1:$webhook" \
  --webhook-port "$webhook" --health-probe-addr 127.0.0.1:{health} \
  --metrics-addr 127.0.0.1:{metrics} --visibility-addr 127.0.0.1:{visibility} \
  --no-leader-elect{admitter_only} 2>>"{log}"
"#,
        admitter_only = if admission_webhooks {
            ""
        } else {
            " --admitter-only"
        },
        webhook = crate::free_port().unwrap_or(9443),
        health = crate::free_port().unwrap_or(8081),
        metrics = crate::free_port().unwrap_or(8443),
        visibility = crate::free_port().unwrap_or(8082),
        binary = binary.display(),
        log = log.display(),
        dir = dir.display(),
        file = KUBECONFIG_PATH_FILE,
    )
}

fn set_executable(path: &Path) -> Result<(), Error> {
    use std::os::unix::fs::PermissionsExt;
    let mut permissions = fs::metadata(path)?.permissions();
    permissions.set_mode(0o755);
    fs::set_permissions(path, permissions)?;
    Ok(())
}

/// One reading of a process.
#[derive(Clone, Debug)]
struct Sample {
    name: String,
    usage: ProcessUsage,
}

/// The runner's child processes (envtest's etcd and kube-apiserver, the admitter) now.
fn proc_children(parent: u32) -> Vec<(u32, Sample)> {
    let Ok(entries) = fs::read_dir("/proc") else {
        return Vec::new();
    };
    let ticks = clock_ticks();
    entries
        .filter_map(|entry| entry.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| proc_parent(*pid) == Some(parent))
        .filter_map(|pid| Some((pid, read_sample(pid, ticks)?)))
        .collect()
}

/// A process's parent pid, `None` once it is gone.
fn proc_parent(pid: u32) -> Option<u32> {
    let stat = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    stat_fields(&stat)?.get(1)?.parse().ok()
}

/// The fields after `comm` in `/proc/<pid>/stat` (state is the first).
fn stat_fields(stat: &str) -> Option<Vec<&str>> {
    let (_, rest) = stat.rsplit_once(')')?;
    Some(rest.split_whitespace().collect())
}

/// A process's CPU so far and peak resident set, `None` once it is gone; for benches that
/// measure a server they started themselves.
pub fn process_usage(pid: u32) -> Option<ProcessUsage> {
    read_sample(pid, clock_ticks()).map(|sample| sample.usage)
}

fn read_sample(pid: u32, ticks: f64) -> Option<Sample> {
    let stat = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let name = stat.split_once('(')?.1.rsplit_once(')')?.0.to_owned();
    let fields = stat_fields(&stat)?;
    // utime and stime are fields 14 and 15 of stat, 12 and 13 after comm.
    let utime: f64 = fields.get(11)?.parse().ok()?;
    let stime: f64 = fields.get(12)?.parse().ok()?;
    let status = fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let peak_kib: f64 = status
        .lines()
        .find_map(|line| line.strip_prefix("VmHWM:"))
        .and_then(|value| value.split_whitespace().next()?.parse().ok())
        .unwrap_or(0.0);
    Some(Sample {
        name,
        usage: ProcessUsage {
            cpu_seconds: (utime + stime) / ticks,
            peak_rss_mib: peak_kib / 1024.0,
        },
    })
}

/// Clock ticks per second of `/proc`'s CPU times.
fn clock_ticks() -> f64 {
    Command::new("getconf")
        .arg("CLK_TCK")
        .output()
        .ok()
        .and_then(|output| String::from_utf8(output.stdout).ok()?.trim().parse().ok())
        .unwrap_or(100.0)
}

/// Summary figures are far below 2^52, where `f64` is exact.
#[allow(clippy::cast_precision_loss)]
fn lossless(value: i64) -> f64 {
    value as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_summary_reads_as_the_runner_writes_it() {
        let summary: Summary = serde_saphyr::from_str(
            "clusterQueueClasses:\n  cq:\n    cpuAverageUsage: 29769\n    cpuUsed: 227174000\n    firstEventTime: \"2026-12-01T11:53:25.506420046Z\"\n    lastEventTime: \"2026-12-01T11:53:33.137534835Z\"\n    nominalQuota: 40000\ndroppedWorkloadEvents: 0\nworkloadClasses:\n  small:\n    averageTimeToAdmissionMs: 2458\n    averageTimeToFinishMs: 2760\n    count: 40\n    totalEvictions: 21\n",
        )
        .unwrap();
        let cq = &summary.cluster_queue_classes["cq"];
        assert_eq!(format!("{:.2}", cq.usage_percent()), "74.42");
        assert_eq!(
            summary.workload_classes["small"],
            WorkloadClassSummary {
                count: 40,
                average_time_to_admission_ms: 2458,
                average_time_to_finish_ms: 2760,
                total_evictions: 21,
            }
        );
    }

    #[test]
    fn request_counts_sum_codes_and_versions_per_resource_and_verb() {
        let metrics = concat!(
            "# TYPE apiserver_request_total counter\n",
            "apiserver_request_total{code=\"200\",component=\"apiserver\",dry_run=\"\",group=\"kueue.x-k8s.io\",resource=\"workloads\",scope=\"resource\",subresource=\"status\",verb=\"APPLY\",version=\"v1beta2\"} 1200\n",
            "apiserver_request_total{code=\"409\",component=\"apiserver\",dry_run=\"\",group=\"kueue.x-k8s.io\",resource=\"workloads\",scope=\"resource\",subresource=\"status\",verb=\"APPLY\",version=\"v1beta1\"} 3\n",
            "apiserver_request_total{code=\"201\",component=\"apiserver\",dry_run=\"\",group=\"\",resource=\"events\",scope=\"resource\",subresource=\"\",verb=\"POST\",version=\"v1\"} 2.5e+03\n",
            "apiserver_request_total{code=\"200\",component=\"apiserver\",dry_run=\"\",group=\"\",resource=\"\",scope=\"\",subresource=\"/metrics\",verb=\"GET\",version=\"\"} 9\n",
            "apiserver_request_duration_seconds_count{verb=\"GET\"} 4\n",
        );
        let counts = request_counts(metrics);
        let kind = |resource: &str, verb: &str| RequestKind {
            resource: resource.to_owned(),
            verb: verb.to_owned(),
        };
        assert_eq!(
            counts,
            RequestCounts::from([
                (kind("events", "POST"), 2500),
                (kind("workloads.kueue.x-k8s.io/status", "APPLY"), 1203),
            ])
        );
    }

    #[test]
    fn proc_stat_fields_skip_a_name_with_spaces() {
        let stat = "42 (kube apiserver) S 7 42 42 0 -1 4194560 100 0 0 0 250 50 0 0 20 0 12 0";
        let fields = stat_fields(stat).unwrap();
        assert_eq!(fields[1], "7");
        assert_eq!((fields[11], fields[12]), ("250", "50"));
    }
}
