//! Faults during a burst of small Jobs, each followed by an independent watcher
//! (`tests/common/watcher.rs`: the test process's own watches, not Kuota's code), which checks on
//! every change that no ClusterQueue holds more than its nominal quota and that no Job is
//! started without an admitted Workload; at the end every Job has completed with exactly one
//! finished Workload. The faults: the admitter (`kuota serve`) killed with SIGKILL the moment
//! an admission write is seen (the Job's start and the pass's other writes still in flight) and
//! again during its restart; killed the moment an eviction is seen (the victims' Jobs still
//! running, their quota still held); and the control plane's own kube-apiserver and etcd killed
//! and restarted.
//!
//! Admitted state lives only in `Workload.status.admission`, so a restarted admitter must
//! rebuild the usage from the API before admitting anything.

mod common {
    pub mod json;
    pub mod kueue;
    pub mod watcher;
}

use std::{
    collections::BTreeMap,
    path::Path,
    sync::{
        Arc,
        atomic::{AtomicUsize, Ordering},
    },
    time::{Duration, Instant},
};

use k8s_openapi::api::batch::v1::Job;
use kube::{
    Api, Client, ResourceExt,
    api::{ListParams, PostParams},
};
use kuota::api::constants::{PRIORITY_CLASS_LABEL, QUEUE_NAME_LABEL};
use kuota::api::v1beta2::{ClusterQueue, ResourceFlavor, Workload, WorkloadPriorityClass};
use kuota::k8s::quantity::resource_value;
use kuota_cluster::{KuotaProcess, TestCluster, delete_ignoring_missing, eventually};
use serde_json::json;

use common::json::from_json;
use common::kueue::{create_cluster_queue, create_flavor, create_local_queue, install_kueue_crds};
use common::watcher::{
    Ledger, Watcher, burst_job, burst_size_from_env, create_until_done, describe_unfinished,
    one_finished_workload_each,
};

/// Each Job's one pod requests this much cpu ...
const JOB_CPU: &str = "100m";
/// ... so the ClusterQueue's nominal quota admits ten at a time.
const NOMINAL_CPU: &str = "1";
const JOBS_AT_ONCE: usize = 10;
/// How long the second admitter runs before it is killed during its start-up.
const STARTING_FOR: Duration = Duration::from_millis(300);
/// Pause between two creations, so the burst is still going when the admitter dies.
const CREATE_EVERY: Duration = Duration::from_millis(60);
/// How long a creation is retried while a fault lasts.
const CREATE_PATIENCE: Duration = Duration::from_secs(180);
/// The WorkloadPriorityClass of the Job that preempts the burst's.
const URGENT: &str = "urgent";

/// Waits until the apiserver calls Kuota's job webhooks: a dry-run Job naming a missing
/// LocalQueue is rejected.
async fn wait_for_job_webhook(jobs: &Api<Job>) {
    let mut probe = burst_job("webhook-probe", "lq", JOB_CPU);
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
    /// `kuota serve` is killed with SIGKILL the moment a new admission is seen, started again
    /// 2 s later and killed again while it starts, then started for good.
    KillAdmitter,
    /// A Job of higher priority asking for the whole ClusterQueue arrives; `kuota serve` is
    /// killed with SIGKILL the moment the first of its victims is seen evicted, and started
    /// again 2 s later.
    KillMidEviction,
    /// A control-plane component (`kube-apiserver`, `etcd`) is killed with SIGKILL and
    /// started again 2 s later; kwok's fake kubelets are restarted after it, as
    /// `ControlPlane::crash_and_restart` explains.
    RestartComponent(&'static str),
}

/// One scenario at a time: each starts its own admitter and the restarts stop the whole
/// control plane.
static ONE_AT_A_TIME: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// Waits until `seen` changes from what it is now, checking every 2 ms; returns how long the
/// change took to show.
async fn next_change(seen: impl Fn() -> usize, within: Duration) -> Duration {
    let before = seen();
    let started = Instant::now();
    while seen() == before {
        assert!(started.elapsed() < within, "nothing changed in {within:?}");
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    started.elapsed()
}

/// A one-pod Job of priority class [`URGENT`] asking for the ClusterQueue's whole quota.
fn urgent_job() -> Job {
    let mut job = burst_job("urgent", "lq", NOMINAL_CPU);
    job.labels_mut()
        .insert(PRIORITY_CLASS_LABEL.into(), URGENT.into());
    job
}

/// A burst of `jobs_in_burst` Jobs (or `KUOTA_BURST_JOBS`) into a ClusterQueue that runs ten at
/// a time, with `fault` injected once a quarter of them (at most 100) were admitted (or, on a
/// slow machine, 60% were created with the queue full), checked by the watcher throughout.
async fn burst_with(fault: Fault, jobs_in_burst: usize) {
    let jobs_in_burst = burst_size_from_env().unwrap_or(jobs_in_burst);
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
    let preemption = json!({"preemption": {"withinClusterQueue": "LowerPriority"}});
    create_cluster_queue(&client, &cq, &[(&flavor, NOMINAL_CPU)], preemption).await;
    create_local_queue(&client, ns.name(), "lq", &cq).await;
    let priorities: Api<WorkloadPriorityClass> = Api::all(client.clone());
    if matches!(fault, Fault::KillMidEviction) {
        let urgent = from_json(json!({"metadata": {"name": URGENT}, "value": 1000}));
        match priorities.create(&PostParams::default(), &urgent).await {
            Ok(_) => {}
            Err(kube::Error::Api(status)) if status.code == 409 => {}
            Err(error) => panic!("create the priority class: {error}"),
        }
    }

    let key = (cq.clone(), flavor.clone(), "cpu".to_owned());
    let nominal = resource_value("cpu", &from_json(json!(NOMINAL_CPU))).expect("quantity");
    let watcher = Watcher::start(
        &client,
        ns.name(),
        Ledger::with_nominal(BTreeMap::from([(key.clone(), nominal)])),
    );
    let workloads: Api<Workload> = Api::namespaced(client.clone(), ns.name());
    let jobs: Api<Job> = Api::namespaced(client.clone(), ns.name());

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
                let job = burst_job(&format!("burst-{i:03}"), "lq", JOB_CPU);
                let failures = create_until_done(&jobs, &job, CREATE_PATIENCE).await;
                failed_attempts.fetch_add(failures, Ordering::SeqCst);
                created.fetch_add(1, Ordering::SeqCst);
                tokio::time::sleep(CREATE_EVERY).await;
            }
        })
    };

    let admitted = || watcher.ledger().admitted.len();
    // Early enough that most of a large burst is still to come.
    let fault_after = (jobs_in_burst / 4).min(100);
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
    let fault_started = Instant::now();
    let (killed_after, at_fault) = match fault {
        Fault::KillAdmitter => {
            let seen = next_change(admitted, Duration::from_secs(60)).await;
            kuota.process.kill_hard();
            let at_kill = watcher.ledger().clone();
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
            (Some(("admission", seen)), at_kill)
        }
        Fault::KillMidEviction => {
            let urgent = urgent_job();
            create_until_done(&jobs, &urgent, CREATE_PATIENCE).await;
            let seen =
                next_change(|| watcher.ledger().evicted.len(), Duration::from_secs(60)).await;
            kuota.process.kill_hard();
            let at_kill = watcher.ledger().clone();
            tokio::time::sleep(Duration::from_secs(2)).await;
            kuota = start_kuota(cluster).await;
            (Some(("eviction", seen)), at_kill)
        }
        Fault::RestartComponent(component) => {
            let at_fault = watcher.ledger().clone();
            cluster
                .plane()
                .crash_and_restart(component, Duration::from_secs(2))
                .await
                .unwrap_or_else(|e| panic!("restarting {component}: {e}"));
            (None, at_fault)
        }
    };
    let recovered_in = fault_started.elapsed();
    let created_at_fault = created.load(Ordering::SeqCst);

    burst.await.expect("every job is created");
    assert_eq!(created.load(Ordering::SeqCst), jobs_in_burst);
    assert!(
        created_at_fault < jobs_in_burst,
        "the fault came during the burst ({created_at_fault} jobs created by then)"
    );
    let all_jobs = jobs_in_burst + usize::from(matches!(fault, Fault::KillMidEviction));

    // Ten at a time, each a few seconds from admission to completion on kwok.
    let completion = Duration::from_secs(300).max(Duration::from_millis(500) * all_jobs as u32);
    let finished = eventually(completion, "all jobs complete", || async {
        complete_jobs(&jobs).await == all_jobs
    })
    .await;
    if let Err(error) = finished {
        panic!(
            "{error}: {} of {all_jobs} complete:\n{}\nkuota log:\n{}",
            complete_jobs(&jobs).await,
            describe_unfinished(&jobs, &workloads).await,
            kuota.process.log_tail(40)
        );
    }
    eventually(
        Duration::from_secs(60),
        "one finished Workload per Job",
        || one_finished_workload_each(&jobs, &workloads),
    )
    .await
    .expect("no Workload lost or duplicated, every one finished");

    let ledger = watcher.finish();
    let failed_attempts = failed_attempts.load(Ordering::SeqCst);
    assert!(
        ledger.violations.is_empty(),
        "the watcher saw {} violations:\n{}",
        ledger.violations.len(),
        ledger.violations.join("\n")
    );
    assert_eq!(
        ledger.peak.get(&key),
        Some(&nominal),
        "the ClusterQueue was full at some point (jobs really queued)"
    );
    assert_eq!(ledger.admitted.len(), all_jobs);
    let evicted = ledger.evicted.len();
    // An evicted Job that had started is suspended and started again when admitted again.
    assert!(
        (all_jobs..=all_jobs + evicted).contains(&ledger.starts),
        "every Job started once per admission: {} starts, {all_jobs} jobs, {evicted} evictions",
        ledger.starts
    );
    match fault {
        Fault::KillMidEviction => assert!(
            evicted > 0 && at_fault.holding.len() > 1,
            "the admitter died mid-eviction: victims still held quota ({} holders)",
            at_fault.holding.len()
        ),
        _ => assert_eq!(evicted, 0, "nothing preempts in this burst"),
    }
    let killed_after = killed_after.map_or(String::new(), |(what, after)| {
        format!(
            " (killed on the first {what} seen after arming, {} ms in)",
            after.as_millis()
        )
    });
    println!(
        "{fault:?}{killed_after} with {} admissions, {created_at_fault} jobs created and {} \
         workloads holding quota; back in {:.1} s; {failed_attempts} creations retried \
         meanwhile; {evicted} evictions; the watcher checked {} workload events and {} job starts",
        at_fault.admitted.len(),
        at_fault.holding.len(),
        recovered_in.as_secs_f64(),
        ledger.events,
        ledger.starts
    );
    if !matches!(fault, Fault::RestartComponent(_)) {
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

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn killing_the_admitter_during_a_burst_never_exceeds_quota_and_every_job_finishes() {
    burst_with(Fault::KillAdmitter, 200).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn killing_the_admitter_mid_eviction_finishes_the_preemption_within_quota() {
    burst_with(Fault::KillMidEviction, 100).await;
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
