//! Faults during a burst of small Jobs, each followed by an independent watcher: the admitter
//! (`kuota serve`) killed with SIGKILL mid-burst and again during its restart, and the control
//! plane's own kube-apiserver and etcd killed and restarted. The watcher is this test
//! process's own watches, not Kuota's code: it checks on every change that no ClusterQueue
//! holds more than its nominal quota and that no Job is started without an admitted Workload;
//! at the end every Job has completed with exactly one finished Workload.
//!
//! Admitted state lives only in `Workload.status.admission`, so a restarted admitter must
//! rebuild the usage from the API before admitting anything.

mod common {
    pub mod json;
    pub mod kueue;
}

use std::{
    collections::{BTreeMap, HashMap, HashSet},
    path::Path,
    sync::{
        Arc, Mutex,
        atomic::{AtomicUsize, Ordering},
    },
    time::{Duration, Instant},
};

use futures::StreamExt;
use k8s_openapi::api::batch::v1::Job;
use kube::{
    Api, Client, ResourceExt,
    api::{ListParams, PostParams},
    runtime::{WatchStreamExt, watcher},
};
use kuota::api::constants::{JOB_UID_LABEL, QUEUE_NAME_LABEL};
use kuota::api::v1beta2::{ClusterQueue, ResourceFlavor, Workload};
use kuota::k8s::quantity::resource_value;
use kuota_cluster::{KuotaProcess, TestCluster, delete_ignoring_missing, eventually};
use serde_json::json;

use common::json::from_json;
use common::kueue::{create_cluster_queue, create_flavor, create_local_queue, install_kueue_crds};

/// Each Job's one pod requests this much cpu ...
const JOB_CPU: &str = "100m";
/// ... so the ClusterQueue's nominal quota admits ten at a time.
const NOMINAL_CPU: &str = "1";
const JOBS_AT_ONCE: usize = 10;
/// How long the second admitter runs before it is killed during its start-up.
const STARTING_FOR: Duration = Duration::from_millis(300);
/// Pause between two creations, so the burst is still going when the admitter dies.
const CREATE_EVERY: Duration = Duration::from_millis(60);

/// (ClusterQueue, flavor, resource).
type QuotaKey = (String, String, String);

/// What the watcher saw: the quota each Workload holds and every moment a ClusterQueue was
/// over its nominal quota.
#[derive(Debug, Default)]
struct Ledger {
    nominal: BTreeMap<QuotaKey, i64>,
    /// Workload name -> quota it holds (admission set, not finished).
    holding: HashMap<String, Vec<(QuotaKey, i64)>>,
    /// Names of Workloads seen admitted at least once.
    admitted: HashSet<String>,
    /// The highest usage seen per key.
    peak: BTreeMap<QuotaKey, i64>,
    violations: Vec<String>,
    events: usize,
    /// Jobs seen started (unsuspended).
    starts: usize,
}

impl Ledger {
    /// The quota a Workload holds: `status.admission` set and not `Finished`.
    fn held_by(workload: &Workload) -> Vec<(QuotaKey, i64)> {
        let Some(status) = &workload.status else {
            return Vec::new();
        };
        let finished = status
            .conditions
            .iter()
            .any(|c| c.type_ == "Finished" && c.status == "True");
        let Some(admission) = status.admission.as_ref().filter(|_| !finished) else {
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

    fn record(holding: &mut HashMap<String, Vec<(QuotaKey, i64)>>, workload: &Workload) {
        let held = Self::held_by(workload);
        if held.is_empty() {
            holding.remove(&workload.name_any());
        } else {
            holding.insert(workload.name_any(), held);
        }
    }

    /// Sums the held quota per key and records every key over its nominal quota.
    fn check(&mut self, after: &str) {
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
                    if workload
                        .status
                        .as_ref()
                        .is_some_and(|s| s.admission.is_some())
                    {
                        ledger.admitted.insert(workload.name_any());
                    }
                }
                watcher::Event::InitDone => {
                    if let Some(relisted) = relisted.take() {
                        ledger.holding = relisted;
                    }
                    ledger.check("a re-list");
                }
                watcher::Event::Apply(workload) => {
                    if workload
                        .status
                        .as_ref()
                        .is_some_and(|s| s.admission.is_some())
                    {
                        ledger.admitted.insert(workload.name_any());
                    }
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

/// Follows every Job change in `jobs`: when a Job is first seen unsuspended, its Workload
/// (Kueue's `job-uid` label names it), read back from the API server, must be admitted or
/// already finished.
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

/// A small Job labelled with its queue.
fn burst_job(name: &str) -> Job {
    from_json(json!({
        "metadata": {"name": name, "labels": {QUEUE_NAME_LABEL: "lq"}},
        "spec": {
            "parallelism": 1,
            "completions": 1,
            "template": {"spec": {
                "restartPolicy": "Never",
                "containers": [{
                    "name": "main",
                    "image": "busybox",
                    "resources": {"requests": {"cpu": JOB_CPU}},
                }],
            }},
        },
    }))
}

/// True for a failure that goes away when the fault does: the webhook unreachable while the
/// admitter restarts, the API server unreachable or failing while it or etcd restarts.
fn transient(error: &kube::Error) -> bool {
    match error {
        kube::Error::Api(status) => status.code >= 500,
        _ => true,
    }
}

/// Creates the Job, retrying while the fault lasts; returns how many attempts failed. The
/// created Job must have been suspended by the webhook.
async fn create_until_done(jobs: &Api<Job>, job: &Job) -> usize {
    let deadline = Instant::now() + Duration::from_secs(180);
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

/// Waits until the apiserver calls Kuota's job webhooks: a dry-run Job naming a missing
/// LocalQueue is rejected.
async fn wait_for_job_webhook(jobs: &Api<Job>) {
    let mut probe = burst_job("webhook-probe");
    probe
        .labels_mut()
        .insert(QUEUE_NAME_LABEL.into(), "no-such-queue".into());
    let dry_run = PostParams {
        dry_run: true,
        ..PostParams::default()
    };
    eventually(Duration::from_secs(60), "Kuota's job webhooks are called", || async {
        matches!(jobs.create(&dry_run, &probe).await, Err(kube::Error::Api(status)) if status.code == 403)
    })
    .await
    .expect("the webhook rejects a Job naming a missing LocalQueue");
}

async fn start_kuota(cluster: &TestCluster) -> KuotaProcess {
    cluster
        .plane()
        .start_kuota(Path::new(env!("CARGO_BIN_EXE_kuota")), &[])
        .await
        .expect("kuota serve starts")
}

async fn complete_jobs(jobs: &Api<Job>) -> usize {
    jobs.list(&ListParams::default())
        .await
        .map(|list| {
            list.items
                .iter()
                .filter(|job| kuota_cluster::job_is_complete(job))
                .count()
        })
        .unwrap_or(0)
}

/// What goes wrong in the middle of the burst.
#[derive(Clone, Copy, Debug)]
enum Fault {
    /// `kuota serve` is killed with SIGKILL, started again 2 s later and killed again while
    /// it starts, then started for good.
    KillAdmitter,
    /// A control-plane component (`kube-apiserver`, `etcd`) is killed with SIGKILL and
    /// started again 2 s later.
    RestartComponent(&'static str),
}

/// One scenario at a time: each starts its own admitter and the restarts stop the whole
/// control plane.
static ONE_AT_A_TIME: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// A burst of `jobs` Jobs into a ClusterQueue that runs ten at a time, with `fault` injected
/// once a quarter of them were admitted (or, on a slow machine, 60% were created with the
/// queue full), checked by the watcher throughout.
async fn burst_with(fault: Fault, jobs_in_burst: usize) {
    let _alone = ONE_AT_A_TIME.lock().await;
    let cluster = TestCluster::shared().await;
    install_kueue_crds(cluster.plane()).await;
    let ns = cluster.namespace().await;
    let client: Client = cluster.client().await;

    let flavor = format!("{}-default", ns.name());
    let cq = format!("{}-cq", ns.name());
    let flavors: Api<ResourceFlavor> = Api::all(client.clone());
    create_flavor(&client, &flavor, json!({})).await;
    let queues: Api<ClusterQueue> = Api::all(client.clone());
    create_cluster_queue(&client, &cq, &[(&flavor, NOMINAL_CPU)], json!({})).await;
    create_local_queue(&client, ns.name(), "lq", &cq).await;

    let ledger = Arc::new(Mutex::new(Ledger {
        nominal: BTreeMap::from([(
            (cq.clone(), flavor.clone(), "cpu".to_owned()),
            resource_value("cpu", &from_json(json!(NOMINAL_CPU))).expect("quantity"),
        )]),
        ..Ledger::default()
    }));
    let workloads: Api<Workload> = Api::namespaced(client.clone(), ns.name());
    let jobs: Api<Job> = Api::namespaced(client.clone(), ns.name());
    let watchers = [
        watch_quota(workloads.clone(), Arc::clone(&ledger)),
        watch_starts(jobs.clone(), workloads.clone(), Arc::clone(&ledger)),
    ];

    let mut kuota = start_kuota(cluster).await;
    wait_for_job_webhook(&jobs).await;

    let created = Arc::new(AtomicUsize::new(0));
    let failed_attempts = Arc::new(AtomicUsize::new(0));
    let burst = {
        let (jobs, created, failed_attempts) = (
            jobs.clone(),
            Arc::clone(&created),
            Arc::clone(&failed_attempts),
        );
        tokio::spawn(async move {
            for i in 0..jobs_in_burst {
                let failures = create_until_done(&jobs, &burst_job(&format!("burst-{i:03}"))).await;
                failed_attempts.fetch_add(failures, Ordering::SeqCst);
                created.fetch_add(1, Ordering::SeqCst);
                tokio::time::sleep(CREATE_EVERY).await;
            }
        })
    };

    let admitted = || ledger.lock().expect("ledger lock").admitted.len();
    let fault_after = jobs_in_burst / 4;
    eventually(
        Duration::from_secs(120),
        &format!("{fault_after} admissions"),
        || async {
            admitted() >= fault_after
                || (created.load(Ordering::SeqCst) >= jobs_in_burst * 3 / 5
                    && admitted() >= JOBS_AT_ONCE)
        },
    )
    .await
    .unwrap_or_else(|e| panic!("{e}; kuota log:\n{}", kuota.process.log_tail(40)));
    let created_at_fault = created.load(Ordering::SeqCst);
    let admitted_at_fault = admitted();
    let holding_at_fault = ledger.lock().expect("ledger lock").holding.len();
    let fault_started = Instant::now();
    match fault {
        Fault::KillAdmitter => {
            kuota.process.kill_hard();
            tokio::time::sleep(Duration::from_secs(2)).await;
            // Killed again while starting (making its certificates, syncing its caches).
            let mut starting = cluster
                .plane()
                .launch_kuota(Path::new(env!("CARGO_BIN_EXE_kuota")), &[])
                .await
                .expect("kuota serve is launched");
            tokio::time::sleep(STARTING_FOR).await;
            starting.process.kill_hard();
            kuota = start_kuota(cluster).await;
        }
        Fault::RestartComponent(component) => cluster
            .plane()
            .crash_and_restart(component, Duration::from_secs(2))
            .await
            .unwrap_or_else(|e| panic!("restarting {component}: {e}")),
    }
    let recovered_in = fault_started.elapsed();

    burst.await.expect("every job is created");
    assert_eq!(created.load(Ordering::SeqCst), jobs_in_burst);
    assert!(
        created_at_fault < jobs_in_burst,
        "the fault came during the burst ({created_at_fault} jobs created by then)"
    );

    let finished = eventually(Duration::from_secs(300), "all jobs complete", || async {
        complete_jobs(&jobs).await == jobs_in_burst
    })
    .await;
    if let Err(error) = finished {
        panic!(
            "{error}: {} of {jobs_in_burst} complete; kuota log:\n{}",
            complete_jobs(&jobs).await,
            kuota.process.log_tail(40)
        );
    }
    eventually(
        Duration::from_secs(60),
        "one finished Workload per Job",
        || async {
            let (Ok(jobs), Ok(workloads)) = (
                jobs.list(&ListParams::default()).await,
                workloads.list(&ListParams::default()).await,
            ) else {
                return false;
            };
            one_finished_workload_per_job(&jobs.items, &workloads.items)
        },
    )
    .await
    .expect("no Workload lost or duplicated, every one finished");

    for watcher in watchers {
        watcher.abort();
    }
    let failed_attempts = failed_attempts.load(Ordering::SeqCst);
    {
        let ledger = ledger.lock().expect("ledger lock");
        assert!(
            ledger.violations.is_empty(),
            "the watcher saw {} violations:\n{}",
            ledger.violations.len(),
            ledger.violations.join("\n")
        );
        let key = (cq.clone(), flavor.clone(), "cpu".to_owned());
        assert_eq!(
            ledger.peak.get(&key),
            Some(&1000),
            "the ClusterQueue was full at some point (jobs really queued)"
        );
        assert_eq!(ledger.admitted.len(), jobs_in_burst);
        assert_eq!(ledger.starts, jobs_in_burst, "every Job started once");
        println!(
            "{fault:?} after {admitted_at_fault} admissions with {created_at_fault} jobs created \
             and {holding_at_fault} workloads holding quota; back in {:.1} s; \
             {failed_attempts} creations retried meanwhile; the watcher checked {} workload \
             events and {} job starts",
            recovered_in.as_secs_f64(),
            ledger.events,
            ledger.starts
        );
    }
    if matches!(fault, Fault::KillAdmitter) {
        assert!(
            failed_attempts > 0,
            "some creations met the webhook down and were retried"
        );
    }

    kuota.process.stop(Duration::from_secs(10));
    delete_ignoring_missing(&queues, &cq)
        .await
        .expect("delete the ClusterQueue");
    delete_ignoring_missing(&flavors, &flavor)
        .await
        .expect("delete the flavor");
}

/// Every Job has exactly one Workload (Kueue's `job-uid` label names it), and it is finished.
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

fn is_finished(workload: &Workload) -> bool {
    workload.status.as_ref().is_some_and(|status| {
        status
            .conditions
            .iter()
            .any(|c| c.type_ == "Finished" && c.status == "True")
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn killing_the_admitter_during_a_burst_never_exceeds_quota_and_every_job_finishes() {
    burst_with(Fault::KillAdmitter, 200).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn restarting_kube_apiserver_during_a_burst_loses_nothing() {
    burst_with(Fault::RestartComponent("kube-apiserver"), 100).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn restarting_etcd_during_a_burst_loses_nothing() {
    burst_with(Fault::RestartComponent("etcd"), 100).await;
}

/// A Workload holding `cpu` of flavor `default` in ClusterQueue `cq`.
fn holding(name: &str, cpu: &str, finished: bool) -> Workload {
    let finished = if finished { "True" } else { "False" };
    from_json(json!({
        "metadata": {"name": name, "namespace": "ns"},
        "spec": {"queueName": "lq", "podSets": [{"name": "main", "count": 1, "template": {"spec": {"containers": []}}}]},
        "status": {
            "admission": {"clusterQueue": "cq", "podSetAssignments": [
                {"name": "main", "flavors": {"cpu": "default"}, "resourceUsage": {"cpu": cpu}, "count": 1},
            ]},
            "conditions": [{"type": "Finished", "status": finished, "reason": "Succeeded", "message": "", "lastTransitionTime": "2025-01-01T00:00:00Z"}],
        },
    }))
}

#[test]
fn the_ledger_records_every_moment_a_queue_is_over_nominal_quota() {
    let key = ("cq".to_owned(), "default".to_owned(), "cpu".to_owned());
    let mut ledger = Ledger {
        nominal: BTreeMap::from([(key.clone(), 1000)]),
        ..Ledger::default()
    };
    Ledger::record(&mut ledger.holding, &holding("a", "600m", false));
    ledger.check("a");
    // A finished Workload keeps its admission but no longer holds quota.
    Ledger::record(&mut ledger.holding, &holding("b", "600m", true));
    ledger.check("b");
    assert_eq!(ledger.violations, Vec::<String>::new());
    Ledger::record(&mut ledger.holding, &holding("c", "500m", false));
    ledger.check("c");
    assert_eq!(
        ledger.violations,
        vec![
            r#"after c: ("cq", "default", "cpu") uses 1100 of nominal 1000; holders: ["a", "c"]"#
                .to_owned()
        ]
    );
    assert_eq!(ledger.peak.get(&key), Some(&1100));
    // Once `a` is finished the queue is back within quota.
    Ledger::record(&mut ledger.holding, &holding("a", "600m", true));
    ledger.check("a finished");
    assert_eq!(ledger.violations.len(), 1);
}
