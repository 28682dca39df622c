//! Bursts of small Jobs and an independent watcher of them: the test process's own watches of
//! Workloads and Jobs, not Kuota's code. On every change it checks that no ClusterQueue holds
//! more than its nominal quota and that no Job is started without an admitted Workload; at the
//! end every Job must have completed with exactly one finished Workload.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use futures::StreamExt;
use k8s_openapi::api::batch::v1::Job;
use kube::api::{ListParams, PostParams};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Api, Client, ResourceExt};
use kuota::api::constants::{JOB_UID_LABEL, QUEUE_NAME_LABEL};
use kuota::api::v1beta2::Workload;
use kuota::k8s::quantity::resource_value;
use serde_json::json;

use super::json::from_json;

/// (ClusterQueue, flavor, resource).
pub type QuotaKey = (String, String, String);

/// What the watcher saw: the quota each Workload holds and every moment a ClusterQueue was
/// over its nominal quota.
#[derive(Clone, Debug, Default)]
pub struct Ledger {
    pub nominal: BTreeMap<QuotaKey, i64>,
    /// Workload name -> quota it holds (admission set, not finished).
    pub holding: HashMap<String, Vec<(QuotaKey, i64)>>,
    /// Names of Workloads seen admitted at least once.
    pub admitted: HashSet<String>,
    /// Names of Workloads seen with `Evicted=True` at least once.
    pub evicted: HashSet<String>,
    /// The highest usage seen per key.
    pub peak: BTreeMap<QuotaKey, i64>,
    pub violations: Vec<String>,
    /// Workload changes checked.
    pub events: usize,
    /// Times a Job was seen going from suspended (or new) to unsuspended.
    pub starts: usize,
}

impl Ledger {
    /// A ledger for ClusterQueues with these nominal quotas.
    pub fn with_nominal(nominal: BTreeMap<QuotaKey, i64>) -> Self {
        Self {
            nominal,
            ..Self::default()
        }
    }

    /// The quota a Workload holds: `status.admission` set and not `Finished`.
    fn held_by(workload: &Workload) -> Vec<(QuotaKey, i64)> {
        let Some(status) = &workload.status else {
            return Vec::new();
        };
        let Some(admission) = status.admission.as_ref().filter(|_| !is_finished(workload)) else {
            return Vec::new();
        };
        let mut held = Vec::new();
        for assignment in &admission.pod_set_assignments {
            for (resource, quantity) in &assignment.resource_usage {
                let flavor = assignment
                    .flavors
                    .get(resource)
                    .cloned()
                    .unwrap_or_default();
                let value = resource_value(resource, quantity).expect("a valid quantity");
                held.push((
                    (admission.cluster_queue.clone(), flavor, resource.clone()),
                    value,
                ));
            }
        }
        held
    }

    /// Records what `workload` holds now.
    pub fn record(holding: &mut HashMap<String, Vec<(QuotaKey, i64)>>, workload: &Workload) {
        let held = Self::held_by(workload);
        if held.is_empty() {
            holding.remove(&workload.name_any());
        } else {
            holding.insert(workload.name_any(), held);
        }
    }

    fn seen(&mut self, workload: &Workload) {
        let status = workload.status.as_ref();
        if status.is_some_and(|s| s.admission.is_some()) {
            self.admitted.insert(workload.name_any());
        }
        if status.is_some_and(|s| {
            s.conditions
                .iter()
                .any(|c| c.type_ == "Evicted" && c.status == "True")
        }) {
            self.evicted.insert(workload.name_any());
        }
    }

    /// Sums the held quota per key and records every key over its nominal quota.
    pub fn check(&mut self, after: &str) {
        self.events += 1;
        let mut usage: BTreeMap<&QuotaKey, i64> = BTreeMap::new();
        for (key, value) in self.holding.values().flatten() {
            *usage.entry(key).or_default() += value;
        }
        for (key, used) in usage {
            let peak = self.peak.entry(key.clone()).or_default();
            *peak = (*peak).max(used);
            let nominal = self.nominal.get(key).copied().unwrap_or(0);
            if used > nominal {
                let mut holders: Vec<&String> = self
                    .holding
                    .iter()
                    .filter(|(_, held)| held.iter().any(|(k, _)| k == key))
                    .map(|(name, _)| name)
                    .collect();
                holders.sort();
                self.violations.push(format!(
                    "after {after}: {key:?} uses {used} of nominal {nominal}; holders: {holders:?}"
                ));
            }
        }
    }
}

/// The watches of one namespace's Workloads and Jobs, feeding one ledger until finished.
pub struct Watcher {
    ledger: Arc<Mutex<Ledger>>,
    tasks: [tokio::task::JoinHandle<()>; 2],
}

impl Watcher {
    /// Starts watching the Workloads and Jobs of `namespace`.
    pub fn start(client: &Client, namespace: &str, ledger: Ledger) -> Self {
        let ledger = Arc::new(Mutex::new(ledger));
        let workloads: Api<Workload> = Api::namespaced(client.clone(), namespace);
        let jobs: Api<Job> = Api::namespaced(client.clone(), namespace);
        let tasks = [
            watch_quota(workloads.clone(), Arc::clone(&ledger)),
            watch_starts(jobs, workloads, Arc::clone(&ledger)),
        ];
        Self { ledger, tasks }
    }

    /// The ledger as it is now.
    pub fn ledger(&self) -> MutexGuard<'_, Ledger> {
        self.ledger.lock().expect("ledger lock")
    }

    /// Stops watching and returns what was seen.
    pub fn finish(self) -> Ledger {
        for task in &self.tasks {
            task.abort();
        }
        self.ledger().clone()
    }
}

/// Follows every Workload change in `api` into the ledger, until the task is aborted.
fn watch_quota(api: Api<Workload>, ledger: Arc<Mutex<Ledger>>) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let mut relisted: Option<HashMap<String, Vec<(QuotaKey, i64)>>> = None;
        let mut events = watcher(api, watcher::Config::default())
            .default_backoff()
            .boxed();
        while let Some(event) = events.next().await {
            let Ok(event) = event else { continue };
            let mut ledger = ledger.lock().expect("ledger lock");
            match event {
                watcher::Event::Init => relisted = Some(HashMap::new()),
                watcher::Event::InitApply(workload) => {
                    if let Some(relisted) = relisted.as_mut() {
                        Ledger::record(relisted, &workload);
                    }
                    ledger.seen(&workload);
                }
                watcher::Event::InitDone => {
                    if let Some(relisted) = relisted.take() {
                        ledger.holding = relisted;
                    }
                    ledger.check("a re-list");
                }
                watcher::Event::Apply(workload) => {
                    ledger.seen(&workload);
                    Ledger::record(&mut ledger.holding, &workload);
                    let after = format!(
                        "{} at resourceVersion {}",
                        workload.name_any(),
                        workload.resource_version().unwrap_or_default()
                    );
                    ledger.check(&after);
                }
                watcher::Event::Delete(workload) => {
                    ledger.holding.remove(&workload.name_any());
                    ledger.check(&format!("deleting {}", workload.name_any()));
                }
            }
        }
    })
}

/// Follows every Job change in `jobs`: each time a Job is seen unsuspended after being
/// suspended (or first seen so), its Workload (Kueue's `job-uid` label names it), read back
/// from the API server, must be admitted or already finished.
fn watch_starts(
    jobs: Api<Job>,
    workloads: Api<Workload>,
    ledger: Arc<Mutex<Ledger>>,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let mut suspended: HashMap<String, bool> = HashMap::new();
        let mut events = watcher(jobs, watcher::Config::default())
            .default_backoff()
            .applied_objects()
            .boxed();
        while let Some(job) = events.next().await {
            let Ok(job) = job else { continue };
            let now_suspended = job.spec.as_ref().and_then(|s| s.suspend).unwrap_or(false);
            let before = suspended.insert(job.name_any(), now_suspended);
            if now_suspended || before == Some(false) {
                continue;
            }
            let selector = format!("{JOB_UID_LABEL}={}", job.uid().unwrap_or_default());
            let mut admitted = None;
            for _ in 0..60 {
                match workloads
                    .list(&ListParams::default().labels(&selector))
                    .await
                {
                    Ok(list) => {
                        admitted = Some(list.items.iter().any(|w| {
                            is_finished(w)
                                || w.status.as_ref().is_some_and(|status| {
                                    status
                                        .conditions
                                        .iter()
                                        .any(|c| c.type_ == "Admitted" && c.status == "True")
                                })
                        }));
                        break;
                    }
                    Err(_) => tokio::time::sleep(Duration::from_secs(1)).await,
                }
            }
            let mut ledger = ledger.lock().expect("ledger lock");
            ledger.starts += 1;
            match admitted {
                Some(true) => {}
                Some(false) => ledger.violations.push(format!(
                    "{} started without an admitted Workload",
                    job.name_any()
                )),
                None => ledger.violations.push(format!(
                    "{} started; its Workload could not be read",
                    job.name_any()
                )),
            }
        }
    })
}

/// A one-pod Job requesting `cpu`, labelled with LocalQueue `queue`.
pub fn burst_job(name: &str, queue: &str, cpu: &str) -> Job {
    from_json(json!({
        "metadata": {"name": name, "labels": {QUEUE_NAME_LABEL: queue}},
        "spec": {
            "parallelism": 1,
            "completions": 1,
            "template": {"spec": {
                "restartPolicy": "Never",
                "containers": [{
                    "name": "main",
                    "image": "busybox",
                    "resources": {"requests": {"cpu": cpu}},
                }],
            }},
        },
    }))
}

/// The number of Jobs in a burst when `KUOTA_BURST_JOBS` sets one (RELIABILITY.md records runs
/// with 2,000); unset, each test keeps its own number, small enough for CI.
pub fn burst_size_from_env() -> Option<usize> {
    std::env::var("KUOTA_BURST_JOBS")
        .ok()
        .and_then(|jobs| jobs.parse().ok())
}

/// True for a failure that goes away when the fault does: the webhook unreachable while the
/// admitter restarts, the API server unreachable or failing while it or etcd restarts.
pub fn transient(error: &kube::Error) -> bool {
    match error {
        kube::Error::Api(status) => status.code >= 500,
        _ => true,
    }
}

/// Creates the Job, retrying for up to `patience` while the fault lasts; returns how many
/// attempts failed. The created Job must have been suspended by the webhook.
pub async fn create_until_done(jobs: &Api<Job>, job: &Job, patience: Duration) -> usize {
    let deadline = Instant::now() + patience;
    let mut failures = 0;
    loop {
        let created = match jobs.create(&PostParams::default(), job).await {
            Ok(created) => created,
            // An earlier attempt went through although its answer was lost.
            Err(kube::Error::Api(status)) if status.code == 409 => jobs
                .get(&job.name_any())
                .await
                .expect("get the existing job"),
            Err(error) if transient(&error) && Instant::now() < deadline => {
                failures += 1;
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
            Err(error) => panic!("creating {}: {error}", job.name_any()),
        };
        assert_eq!(
            created.spec.as_ref().and_then(|s| s.suspend),
            Some(true),
            "{} was created suspended by the webhook",
            job.name_any()
        );
        return failures;
    }
}

/// Every Job in `jobs` has exactly one Workload in `workloads` (Kueue's `job-uid` label names
/// it), and it is finished; false while either cannot be listed.
pub async fn one_finished_workload_each(jobs: &Api<Job>, workloads: &Api<Workload>) -> bool {
    let (Ok(jobs), Ok(workloads)) = (
        jobs.list(&ListParams::default()).await,
        workloads.list(&ListParams::default()).await,
    ) else {
        return false;
    };
    one_finished_workload_per_job(&jobs.items, &workloads.items)
}

fn one_finished_workload_per_job(jobs: &[Job], workloads: &[Workload]) -> bool {
    let mut per_job: HashMap<&str, usize> = HashMap::new();
    for workload in workloads {
        if !is_finished(workload) {
            return false;
        }
        if let Some(uid) = workload.labels().get(JOB_UID_LABEL) {
            *per_job.entry(uid.as_str()).or_default() += 1;
        }
    }
    workloads.len() == jobs.len()
        && jobs.iter().all(|job| {
            job.uid()
                .is_some_and(|uid| per_job.get(uid.as_str()) == Some(&1))
        })
}

/// One line per Job that has not completed and per Workload that has not finished: the Job's
/// `suspend` and status counts, the Workload's conditions and whether it holds an admission, so
/// a stuck run says where each straggler stopped.
pub async fn describe_unfinished(jobs: &Api<Job>, workloads: &Api<Workload>) -> String {
    let (jobs, workloads) = match (
        jobs.list(&ListParams::default()).await,
        workloads.list(&ListParams::default()).await,
    ) {
        (Ok(jobs), Ok(workloads)) => (jobs.items, workloads.items),
        (Err(error), _) | (_, Err(error)) => return format!("cannot list: {error}"),
    };
    let mut lines = Vec::new();
    for job in jobs
        .iter()
        .filter(|job| !kuota_cluster::job_is_complete(job))
    {
        let status = job.status.clone().unwrap_or_default();
        lines.push(format!(
            "job {} uid={} suspend={:?} active={:?} succeeded={:?} labels={:?}",
            job.name_any(),
            job.uid().unwrap_or_default(),
            job.spec.as_ref().and_then(|spec| spec.suspend),
            status.active,
            status.succeeded,
            job.labels(),
        ));
    }
    for workload in workloads.iter().filter(|workload| !is_finished(workload)) {
        let status = workload.status.as_ref();
        let conditions: Vec<String> = status
            .map(|status| {
                status
                    .conditions
                    .iter()
                    .map(|c| format!("{}={} ({}: {})", c.type_, c.status, c.reason, c.message))
                    .collect()
            })
            .unwrap_or_default();
        lines.push(format!(
            "workload {} job-uid={:?} admission={} conditions=[{}]",
            workload.name_any(),
            workload.labels().get(JOB_UID_LABEL),
            status.is_some_and(|status| status.admission.is_some()),
            conditions.join("; ")
        ));
    }
    lines.join("\n")
}

/// Whether the Workload has `Finished=True`.
pub fn is_finished(workload: &Workload) -> bool {
    workload.status.as_ref().is_some_and(|status| {
        status
            .conditions
            .iter()
            .any(|c| c.type_ == "Finished" && c.status == "True")
    })
}
