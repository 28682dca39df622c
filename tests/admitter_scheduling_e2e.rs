//! The admitter's scheduling side on a real control plane: Kueue CRDs installed, the scheduler
//! running in-process, ResourceFlavors, ClusterQueues, LocalQueues and Workloads created through
//! the API. The test plays the job controller where one is needed (finishing workloads,
//! clearing the admission of evicted ones).
//!
//! The scheduler watches every namespace and every ClusterQueue, so the tests take turns (one
//! scheduler at a time) and name their cluster-scoped objects after their namespace.

mod common {
    pub mod admitted;
    pub mod json;
    pub mod kueue;
    pub mod status_ceiling;
    pub mod timestamp;
    pub mod workload;
}

use std::future::Future;
use std::pin::Pin;
use std::sync::{
    Arc,
    atomic::{AtomicBool, Ordering},
};
use std::time::Duration;

use futures::FutureExt;
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::events::v1::Event;
use kube::api::{ListParams, Patch, PatchParams, PostParams};
use kube::{Api, Client, ResourceExt};
use kuota::admitter::jobs::run_job_controllers;
use kuota::admitter::run_scheduler;
use kuota::api::v1beta2::{ClusterQueue, LocalQueue, ResourceFlavor, Topology, Workload};
use kuota::config::{AdmissionFairSharing, Configuration, LoadOptions};
use kuota::k8s::leader::lead;
use kuota::metrics::{EventMetrics, MetricsRegistry};
use kuota::quota::model::{Admission, PodSetAssignment};
use kuota::stores::Stores;
use kuota_cluster::{TestCluster, TestNamespace, delete_ignoring_missing, eventually};
use serde_json::{Value, json};
use tokio::sync::{Mutex, MutexGuard, oneshot};
use tokio::task::JoinHandle;

use common::admitted::is_admitted;
use common::json::from_json;
use common::kueue::{create_cluster_queue, create_flavor, create_local_queue, install_kueue_crds};
use common::timestamp::now;
use common::workload::condition;

const WAIT: Duration = Duration::from_secs(30);

static ONE_SCHEDULER_AT_A_TIME: Mutex<()> = Mutex::const_new(());

struct Env {
    _turn: MutexGuard<'static, ()>,
    cluster: &'static TestCluster,
    ns: TestNamespace,
    client: Client,
    cluster_scoped: Vec<(&'static str, String)>,
}

async fn env() -> Env {
    let turn = ONE_SCHEDULER_AT_A_TIME.lock().await;
    let cluster = TestCluster::shared().await;
    install_kueue_crds(cluster.plane()).await;
    let ns = cluster.namespace().await;
    let client = cluster.client().await;
    Env {
        _turn: turn,
        cluster,
        ns,
        client,
        cluster_scoped: Vec::new(),
    }
}

impl Env {
    /// A cluster-scoped name unique to this test.
    fn name(&self, base: &str) -> String {
        format!("{}-{base}", self.ns.name())
    }

    fn workloads(&self) -> Api<Workload> {
        Api::namespaced(self.client.clone(), self.ns.name())
    }

    async fn flavor(&mut self, base: &str) -> String {
        let name = self.name(base);
        create_flavor(&self.client, &name, json!({})).await;
        self.cluster_scoped.push(("flavor", name.clone()));
        name
    }

    /// A ClusterQueue with `cpu` quota in `flavor`, selecting every namespace; `spec` adds fields.
    async fn cluster_queue(
        &mut self,
        base: &str,
        flavor: &str,
        nominal: &str,
        spec: Value,
    ) -> String {
        let name = self.name(base);
        create_cluster_queue(&self.client, &name, &[(flavor, nominal)], spec).await;
        self.cluster_scoped.push(("clusterqueue", name.clone()));
        name
    }

    /// ClusterQueue `cq` with `cpu` quota that preempts lower priorities within it, fed by
    /// LocalQueue `lq`; returns the ClusterQueue's name.
    async fn lower_priority_preempting_queue(&mut self, cpu: &str) -> String {
        let flavor = self.flavor("default").await;
        let cq = self
            .cluster_queue(
                "cq",
                &flavor,
                cpu,
                json!({"preemption": {"withinClusterQueue": "LowerPriority"}}),
            )
            .await;
        self.local_queue("lq", &cq).await;
        cq
    }

    async fn local_queue(&self, name: &str, cluster_queue: &str) {
        create_local_queue(&self.client, self.ns.name(), name, cluster_queue).await;
    }

    async fn workload(&self, name: &str, queue: &str, cpu: &str, priority: i32) -> Workload {
        self.workloads()
            .create(
                &PostParams::default(),
                &from_json(json!({
                    "metadata": {"name": name},
                    "spec": {
                        "queueName": queue,
                        "priority": priority,
                        "podSets": [{
                            "name": "main",
                            "count": 1,
                            "template": {"spec": {
                                "restartPolicy": "Never",
                                "containers": [{"name": "c", "image": "busybox", "resources": {"requests": {"cpu": cpu}}}],
                            }},
                        }],
                    },
                })),
            )
            .await
            .expect("create workload")
    }

    async fn get(&self, name: &str) -> Workload {
        self.workloads().get(name).await.expect("get workload")
    }

    async fn wait_until(&self, what: &str, name: &str, probe: impl Fn(&Workload) -> bool) {
        let workloads = self.workloads();
        let result = eventually(WAIT, &format!("{name}: {what}"), || {
            let workloads = workloads.clone();
            let probe = &probe;
            async move { workloads.get(name).await.ok().is_some_and(|w| probe(&w)) }
        })
        .await;
        if let Err(error) = result {
            panic!("{error}; workload: {:#?}", self.get(name).await.status);
        }
    }

    async fn admitted(&self, names: &[&str]) -> Vec<String> {
        let mut admitted = Vec::new();
        for name in names {
            if is_admitted(&self.get(name).await) {
                admitted.push((*name).to_owned());
            }
        }
        admitted
    }

    /// Replaces (or adds) a condition of a workload, as the job controller would.
    async fn set_condition(&self, name: &str, condition: Value) {
        let workload = self.get(name).await;
        let mut conditions: Vec<Value> = workload
            .status
            .iter()
            .flat_map(|status| &status.conditions)
            .filter(|c| c.type_ != condition["type"])
            .map(|c| serde_json::to_value(c).expect("condition"))
            .collect();
        conditions.push(condition);
        self.patch_status(&workload, json!({"conditions": conditions}))
            .await;
    }

    async fn patch_status(&self, workload: &Workload, status: Value) {
        self.workloads()
            .patch_status(
                &workload.name_any(),
                &PatchParams::default(),
                &Patch::Merge(json!({
                    "metadata": {"resourceVersion": workload.resource_version()},
                    "status": status,
                })),
            )
            .await
            .expect("patch workload status");
    }

    async fn finish(&self, name: &str) {
        self.set_condition(
            name,
            json!({"type": "Finished", "status": "True", "reason": "Succeeded", "message": "done", "lastTransitionTime": now()}),
        )
        .await;
    }

    /// Clears the admission of an evicted workload, as the job controller does once its job stopped.
    async fn release(&self, name: &str) {
        let workload = self.get(name).await;
        let conditions: Vec<Value> = workload
            .status
            .iter()
            .flat_map(|status| &status.conditions)
            .map(|c| {
                let mut value = serde_json::to_value(c).expect("condition");
                if c.type_ == "QuotaReserved" || c.type_ == "Admitted" {
                    value["status"] = json!("False");
                    value["reason"] = json!("Preempted");
                    value["lastTransitionTime"] = json!(now());
                }
                value
            })
            .collect();
        self.patch_status(
            &workload,
            json!({"admission": null, "conditions": conditions}),
        )
        .await;
    }

    async fn cluster_queue_status(&self, name: &str) -> Value {
        let api: Api<ClusterQueue> = Api::all(self.client.clone());
        serde_json::to_value(api.get(name).await.expect("get cq").status).expect("status")
    }

    async fn wait_for_cluster_queue(&self, name: &str, what: &str, probe: impl Fn(&Value) -> bool) {
        let api: Api<ClusterQueue> = Api::all(self.client.clone());
        let result = eventually(WAIT, &format!("{name}: {what}"), || {
            let api = api.clone();
            let probe = &probe;
            async move {
                api.get(name)
                    .await
                    .ok()
                    .and_then(|cq| serde_json::to_value(cq.status).ok())
                    .is_some_and(|status| probe(&status))
            }
        })
        .await;
        if let Err(error) = result {
            panic!(
                "{error}; status: {:#}",
                self.cluster_queue_status(name).await
            );
        }
    }

    async fn cleanup(self) {
        let queues: Api<ClusterQueue> = Api::all(self.client.clone());
        let flavors: Api<ResourceFlavor> = Api::all(self.client.clone());
        let topologies: Api<Topology> = Api::all(self.client.clone());
        for (kind, name) in &self.cluster_scoped {
            let result = match *kind {
                "clusterqueue" => delete_ignoring_missing(&queues, name).await,
                "topology" => delete_ignoring_missing(&topologies, name).await,
                _ => delete_ignoring_missing(&flavors, name).await,
            };
            result.expect("delete cluster-scoped object");
        }
    }
}

fn has_condition(workload: &Workload, type_: &str, status: &str, reason: &str) -> bool {
    condition(workload, type_).is_some_and(|c| c.status == status && c.reason == reason)
}

fn config() -> Arc<Configuration> {
    let mut config = Configuration::from_defaults(&LoadOptions::default()).expect("defaults");
    config.leader_election.leader_elect = false;
    Arc::new(config)
}

/// A scheduler running in-process with its own stores, as after a (re)start.
struct RunningScheduler {
    stop: oneshot::Sender<()>,
    task: JoinHandle<()>,
    metrics: Arc<MetricsRegistry>,
}

fn start_scheduler(client: &Client) -> RunningScheduler {
    start_scheduler_with(client, config())
}

fn start_scheduler_with(client: &Client, config: Arc<Configuration>) -> RunningScheduler {
    let (stores, drivers) = Stores::new(client, config.topology_gates().enabled);
    let metrics = Arc::new(MetricsRegistry::new());
    let (stop, stopped) = oneshot::channel::<()>();
    let client = client.clone();
    let scheduler_metrics = Arc::clone(&metrics);
    let task = tokio::spawn(async move {
        let shutdown = async {
            let _ = stopped.await;
        };
        tokio::select! {
            () = drivers.run() => {}
            result = run_scheduler(client, config, stores, scheduler_metrics, shutdown) => {
                result.expect("the stores sync");
            }
        }
    });
    RunningScheduler {
        stop,
        task,
        metrics,
    }
}

impl RunningScheduler {
    async fn stop(self) {
        let _ = self.stop.send(());
        self.task.await.expect("the scheduler task ends cleanly");
    }
}

#[tokio::test]
async fn admits_up_to_nominal_quota_then_borrows_then_waits_for_quota() {
    let mut env = env().await;
    let flavor = env.flavor("default").await;
    let cohort = env.name("cohort");
    let team = env
        .cluster_queue("team", &flavor, "2", json!({"cohortName": cohort}))
        .await;
    let other = env
        .cluster_queue("other", &flavor, "2", json!({"cohortName": cohort}))
        .await;
    env.local_queue("lq", &team).await;
    let scheduler = start_scheduler(&env.client);

    let names = ["w1", "w2", "w3", "w4", "w5"];
    for name in names {
        env.workload(name, "lq", "1", 0).await;
    }
    let message = format!(
        "couldn't assign flavors to pod set main: insufficient unused quota for cpu in flavor {flavor}, 1 more needed"
    );
    let workloads = env.workloads();
    let waiting = eventually(WAIT, "four admitted and one waiting for quota", || {
        let workloads = workloads.clone();
        let message = message.clone();
        async move {
            let Ok(list) = workloads.list(&ListParams::default()).await else {
                return false;
            };
            let admitted = list.items.iter().filter(|w| is_admitted(w)).count();
            let waiting = list
                .items
                .iter()
                .filter(|w| {
                    condition(w, "QuotaReserved").is_some_and(|c| {
                        c.status == "False" && c.reason == "WaitingForQuota" && c.message == message
                    })
                })
                .count();
            admitted == 4 && waiting == 1
        }
    })
    .await;
    waiting.expect("two workloads within nominal quota, two borrowing, one waiting");

    let admitted = env.admitted(&names).await;
    let first = env.get(&admitted[0]).await;
    let reserved = condition(&first, "QuotaReserved").expect("QuotaReserved");
    assert_eq!(reserved.reason, "QuotaReserved");
    assert_eq!(
        reserved.message,
        format!("Quota reserved in ClusterQueue {team}")
    );
    let admission = serde_json::to_value(&first.status.as_ref().unwrap().admission).unwrap();
    assert_eq!(
        admission,
        json!({
            "clusterQueue": team,
            "podSetAssignments": [{"name": "main", "flavors": {"cpu": flavor}, "resourceUsage": {"cpu": "1"}, "count": 1}],
        })
    );

    env.wait_for_cluster_queue(&team, "counts and borrowing", |status| {
        status["pendingWorkloads"] == 1
            && status["reservingWorkloads"] == 4
            && status["admittedWorkloads"] == 4
            && status["flavorsReservation"]
                == json!([{"name": flavor, "resources": [{"name": "cpu", "total": "4", "borrowed": "2"}]}])
            && status["flavorsUsage"] == status["flavorsReservation"]
            && status["conditions"][0]["reason"] == "Ready"
            && status["conditions"][0]["message"] == "Can admit new workloads"
    })
    .await;
    env.wait_for_cluster_queue(&other, "nothing of its own", |status| {
        status["reservingWorkloads"] == 0 && status["pendingWorkloads"] == 0
    })
    .await;

    let queues: Api<LocalQueue> = Api::namespaced(env.client.clone(), env.ns.name());
    eventually(WAIT, "LocalQueue status", || {
        let queues = queues.clone();
        async move {
            queues
                .get("lq")
                .await
                .ok()
                .and_then(|q| q.status)
                .is_some_and(|s| {
                    s.pending_workloads == 1
                        && s.admitted_workloads == 4
                        && s.conditions.first().is_some_and(|c| {
                            c.reason == "Ready"
                                && c.message == "Can submit new workloads to localQueue"
                        })
                })
        }
    })
    .await
    .expect("LocalQueue counts");

    let output = env
        .cluster
        .kubectl()
        .args(["get", "clusterqueues", &team, "-o", "wide", "--no-headers"])
        .output()
        .expect("run kubectl");
    let columns: Vec<String> = String::from_utf8_lossy(&output.stdout)
        .split_whitespace()
        .map(str::to_owned)
        .collect();
    assert_eq!(
        columns,
        vec![
            team.clone(),
            cohort.clone(),
            "BestEffortFIFO".to_owned(),
            "1".to_owned(),
            "4".to_owned()
        ],
        "kubectl get clusterqueues -o wide: {}",
        String::from_utf8_lossy(&output.stderr)
    );

    let events: Api<Event> = Api::namespaced(env.client.clone(), env.ns.name());
    let first_name = first.name_any();
    eventually(WAIT, "QuotaReserved and Admitted events", || {
        let events = events.clone();
        let first_name = first_name.clone();
        let team = team.clone();
        async move {
            let Ok(list) = events.list(&ListParams::default()).await else {
                return false;
            };
            let about_first: Vec<&Event> = list
                .items
                .iter()
                .filter(|e| {
                    e.regarding.as_ref().and_then(|r| r.name.as_deref()) == Some(&first_name)
                })
                .collect();
            about_first.iter().any(|e| {
                e.reason.as_deref() == Some("QuotaReserved")
                    && e.note.as_deref().is_some_and(|note| {
                        note.starts_with(&format!(
                            "Quota reserved in ClusterQueue {team}, wait time since queued was "
                        ))
                    })
            }) && about_first.iter().any(|e| {
                e.reason.as_deref() == Some("Admitted")
                    && e.note.as_deref()
                        == Some(&format!(
                            "Admitted by ClusterQueue {team}, wait time since reservation was 0s"
                        ))
            })
        }
    })
    .await
    .expect("events on the admitted workload");

    let text = scheduler.metrics.encode().unwrap();
    assert!(
        text.contains(&format!(
            "kueue_admitted_workloads_total{{cluster_queue=\"{team}\",priority_class=\"\",replica_role=\"standalone\"}} 4\n"
        )),
        "{text}"
    );

    // Finishing one workload releases its quota to the one waiting.
    let waiting_name = names
        .iter()
        .find(|name| !admitted.iter().any(|a| a == *name))
        .expect("one is waiting");
    env.finish(&admitted[0]).await;
    env.wait_until(
        "admitted after quota was released",
        waiting_name,
        is_admitted,
    )
    .await;
    let mut holding = Vec::new();
    for name in names {
        let workload = env.get(name).await;
        if is_admitted(&workload) && !has_condition(&workload, "Finished", "True", "Succeeded") {
            holding.push(name);
        }
    }
    assert_eq!(holding.len(), 4, "{holding:?}");
    assert!(!holding.contains(&admitted[0].as_str()));

    scheduler.stop().await;
    env.cleanup().await;
}

#[tokio::test]
async fn a_higher_priority_workload_preempts_a_lower_one() {
    let mut env = env().await;
    let cq = env.lower_priority_preempting_queue("2").await;
    let scheduler = start_scheduler(&env.client);

    env.workload("low-1", "lq", "1", 1).await;
    env.workload("low-2", "lq", "1", 1).await;
    env.wait_until("admitted", "low-1", is_admitted).await;
    env.wait_until("admitted", "low-2", is_admitted).await;

    let high = env.workload("high", "lq", "1", 10).await;
    env.wait_until("waiting for the preempted workload", "high", |w| {
        condition(w, "QuotaReserved").is_some_and(|c| {
            c.status == "False"
                && c.reason == "WaitingForPreemptedWorkloads"
                && c.message
                    .ends_with(". Pending the preemption of 1 workload(s)")
        })
    })
    .await;

    let mut victims = Vec::new();
    for name in ["low-1", "low-2"] {
        if has_condition(&env.get(name).await, "Evicted", "True", "Preempted") {
            victims.push(name);
        }
    }
    let [victim] = victims.as_slice() else {
        panic!("exactly one victim, got {victims:?}");
    };
    let evicted = env.get(victim).await;
    let message = format!(
        "Preempted to accommodate a workload (UID: {}, JobUID: UNKNOWN) due to prioritization in the ClusterQueue; preemptor path: /{cq}; preemptee path: /{cq}",
        high.uid().unwrap()
    );
    assert_eq!(condition(&evicted, "Evicted").unwrap().message, message);
    let preempted = condition(&evicted, "Preempted").expect("Preempted condition");
    assert_eq!(
        (
            preempted.status.as_str(),
            preempted.reason.as_str(),
            preempted.message.as_str()
        ),
        ("True", "InClusterQueue", message.as_str())
    );
    assert!(
        evicted.status.as_ref().unwrap().admission.is_some(),
        "the victim keeps its quota until its job stopped"
    );
    assert!(!is_admitted(&env.get("high").await));

    // The job controller stops the victim's job and clears its admission.
    env.release(victim).await;
    env.wait_until("admitted once the victim left", "high", is_admitted)
        .await;
    env.wait_until("waiting for quota again", victim, |w| {
        has_condition(w, "QuotaReserved", "False", "WaitingForQuota")
    })
    .await;

    let text = scheduler.metrics.encode().unwrap();
    assert!(
        text.contains(&format!(
            "kueue_preempted_workloads_total{{preempting_cluster_queue=\"{cq}\",reason=\"InClusterQueue\",replica_role=\"standalone\"}} 1\n"
        )),
        "{text}"
    );
    scheduler.stop().await;
    env.cleanup().await;
}

#[tokio::test]
async fn a_priority_boost_set_on_a_parked_workload_lets_it_preempt_its_equal() {
    let mut env = env().await;
    env.lower_priority_preempting_queue("1").await;
    let mut config = Configuration::clone(&config());
    config.feature_gates = config
        .feature_gates
        .with(kuota::config::Feature::PriorityBoost, true);
    let scheduler = start_scheduler_with(&env.client, Arc::new(config));

    env.workload("running", "lq", "1", 1).await;
    env.wait_until("admitted", "running", is_admitted).await;
    env.workload("boosted", "lq", "1", 1).await;
    env.wait_until("waiting behind its equal", "boosted", |w| {
        has_condition(w, "QuotaReserved", "False", "WaitingForQuota")
    })
    .await;

    // An external controller raises its priority.
    env.workloads()
        .patch(
            "boosted",
            &PatchParams::default(),
            &Patch::Merge(
                json!({"metadata": {"annotations": {"kueue.x-k8s.io/priority-boost": "5"}}}),
            ),
        )
        .await
        .expect("annotate");
    env.wait_until("preempting", "boosted", |w| {
        has_condition(w, "QuotaReserved", "False", "WaitingForPreemptedWorkloads")
    })
    .await;
    env.wait_until("preempted", "running", |w| {
        has_condition(w, "Evicted", "True", "Preempted")
    })
    .await;

    let events: Api<Event> = Api::namespaced(env.client.clone(), env.ns.name());
    eventually(WAIT, "the preemption event gives both priorities", || {
        let events = events.clone();
        async move {
            events.list(&ListParams::default()).await.is_ok_and(|list| {
                list.items.iter().any(|event| {
                    event.regarding.as_ref().and_then(|r| r.name.as_deref()) == Some("running")
                        && event.reason.as_deref() == Some("Preempted")
                        && event.note.as_deref().is_some_and(|note| {
                            note.ends_with("; preemptor effective priority: 6 (base: 1, boost: 5); preemptee effective priority: 1 (base: 1, boost: 0)")
                        })
                })
            })
        }
    })
    .await
    .expect("event");

    env.release("running").await;
    env.wait_until("admitted once its equal left", "boosted", is_admitted)
        .await;
    scheduler.stop().await;
    env.cleanup().await;
}

#[tokio::test]
async fn strict_fifo_blocks_behind_a_big_head_and_best_effort_fifo_does_not() {
    let mut env = env().await;
    let flavor = env.flavor("default").await;
    let strict = env
        .cluster_queue(
            "strict",
            &flavor,
            "2",
            json!({"queueingStrategy": "StrictFIFO"}),
        )
        .await;
    let best_effort = env
        .cluster_queue(
            "best-effort",
            &flavor,
            "2",
            json!({"queueingStrategy": "BestEffortFIFO"}),
        )
        .await;
    env.local_queue("strict", &strict).await;
    env.local_queue("best-effort", &best_effort).await;
    let scheduler = start_scheduler(&env.client);

    for queue in ["strict", "best-effort"] {
        env.workload(&format!("{queue}-filler"), queue, "1", 0)
            .await;
        env.wait_until("admitted", &format!("{queue}-filler"), is_admitted)
            .await;
    }
    // Creation timestamps have whole seconds: make the big head strictly older.
    for queue in ["strict", "best-effort"] {
        env.workload(&format!("{queue}-big"), queue, "2", 0).await;
    }
    tokio::time::sleep(Duration::from_millis(1100)).await;
    for queue in ["strict", "best-effort"] {
        env.workload(&format!("{queue}-small"), queue, "1", 0).await;
    }

    env.wait_until(
        "admitted past the big head",
        "best-effort-small",
        is_admitted,
    )
    .await;
    env.wait_until("waiting for quota", "strict-big", |w| {
        has_condition(w, "QuotaReserved", "False", "WaitingForQuota")
    })
    .await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert!(
        !is_admitted(&env.get("strict-small").await),
        "StrictFIFO admits nothing behind its head"
    );
    assert!(!is_admitted(&env.get("best-effort-big").await));

    // Once the filler finishes the head fits, and then the small one does not (2 of 2 used).
    env.finish("strict-filler").await;
    env.wait_until("admitted", "strict-big", is_admitted).await;
    assert!(!is_admitted(&env.get("strict-small").await));

    scheduler.stop().await;
    env.cleanup().await;
}

#[tokio::test]
async fn a_restarted_scheduler_rebuilds_usage_from_workload_status() {
    let mut env = env().await;
    let flavor = env.flavor("default").await;
    let cq = env.cluster_queue("cq", &flavor, "2", json!({})).await;
    env.local_queue("lq", &cq).await;

    let first = start_scheduler(&env.client);
    env.workload("before-1", "lq", "1", 0).await;
    env.workload("before-2", "lq", "1", 0).await;
    env.wait_until("admitted", "before-1", is_admitted).await;
    env.wait_until("admitted", "before-2", is_admitted).await;
    first.stop().await;

    env.workload("after-1", "lq", "1", 0).await;
    env.workload("after-2", "lq", "1", 0).await;
    let second = start_scheduler(&env.client);
    for name in ["after-1", "after-2"] {
        env.wait_until("waiting for quota", name, |w| {
            has_condition(w, "QuotaReserved", "False", "WaitingForQuota")
        })
        .await;
    }
    env.wait_for_cluster_queue(&cq, "usage rebuilt from status", |status| {
        status["reservingWorkloads"] == 2 && status["pendingWorkloads"] == 2
    })
    .await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    let all = ["before-1", "before-2", "after-1", "after-2"];
    assert_eq!(env.admitted(&all).await, vec!["before-1", "before-2"]);

    env.finish("before-1").await;
    let workloads = env.workloads();
    eventually(WAIT, "one more admitted", || {
        let workloads = workloads.clone();
        async move {
            let mut admitted = 0;
            for name in ["after-1", "after-2"] {
                if workloads
                    .get(name)
                    .await
                    .ok()
                    .is_some_and(|w| is_admitted(&w))
                {
                    admitted += 1;
                }
            }
            admitted == 1
        }
    })
    .await
    .expect("the released quota goes to one waiting workload");
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(
        env.admitted(&all).await.len(),
        3,
        "both before (the finished one keeps its admission, as in Kueue) and one after"
    );
    let last = env.admitted(&["after-1", "after-2"]).await;
    assert_eq!(last.len(), 1, "never past quota: {last:?}");

    second.stop().await;
    env.cleanup().await;
}

/// The scheduler's configuration with `admissionFairSharing` sampling every `sampling`.
fn fair_sharing_config(sampling: Duration) -> Arc<Configuration> {
    let mut config = Configuration::clone(&config());
    config.admission_fair_sharing = Some(AdmissionFairSharing {
        usage_half_life_time: Duration::from_secs(600),
        usage_sampling_interval: sampling,
        resource_weights: Default::default(),
    });
    Arc::new(config)
}

#[tokio::test]
async fn admission_fair_sharing_admits_from_the_local_queue_that_used_less_after_a_restart() {
    let mut env = env().await;
    let flavor = env.flavor("default").await;
    let cq = env
        .cluster_queue(
            "cq",
            &flavor,
            "2",
            json!({"admissionScope": {"admissionMode": "UsageBasedAdmissionFairSharing"}}),
        )
        .await;
    env.local_queue("lq-a", &cq).await;
    env.local_queue("lq-b", &cq).await;
    let local_queues: Api<LocalQueue> = Api::namespaced(env.client.clone(), env.ns.name());
    let consumed_cpu = |name: &'static str| {
        let local_queues = local_queues.clone();
        async move {
            let status = serde_json::to_value(local_queues.get(name).await.ok()?.status).ok()?;
            let fair = status.pointer("/fairSharing/admissionFairSharingStatus")?;
            Some(
                fair["consumedResources"]["cpu"]
                    .as_str()
                    .unwrap_or("0")
                    .to_owned(),
            )
        }
    };

    // lq-a fills the ClusterQueue; sampled every second, its consumption shows in its status.
    let first = start_scheduler_with(&env.client, fair_sharing_config(Duration::from_secs(1)));
    env.workload("a1", "lq-a", "1", 0).await;
    env.workload("a2", "lq-a", "1", 0).await;
    env.wait_until("admitted", "a1", is_admitted).await;
    env.wait_until("admitted", "a2", is_admitted).await;
    eventually(WAIT, "lq-a's consumption reported", || async {
        consumed_cpu("lq-a").await.is_some_and(|cpu| cpu != "0")
            && consumed_cpu("lq-b").await.is_some_and(|cpu| cpu == "0")
    })
    .await
    .expect("both LocalQueues report their consumption");
    first.stop().await;

    // A new scheduler that will not sample for an hour starts from those statuses: lq-b's
    // workload goes before lq-a's older one.
    env.workload("a3", "lq-a", "1", 0).await;
    tokio::time::sleep(Duration::from_millis(1100)).await;
    env.workload("b1", "lq-b", "1", 0).await;
    let second = start_scheduler_with(&env.client, fair_sharing_config(Duration::from_secs(3600)));
    for name in ["a3", "b1"] {
        env.wait_until("waiting for quota", name, |w| {
            has_condition(w, "QuotaReserved", "False", "WaitingForQuota")
        })
        .await;
    }
    env.finish("a1").await;
    env.wait_until("admitted", "b1", is_admitted).await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(env.admitted(&["a3", "b1"]).await, vec!["b1"]);

    second.stop().await;
    env.cleanup().await;
}

#[tokio::test]
async fn misconfigured_queues_are_reported_on_workloads_and_queues() {
    let mut env = env().await;
    let missing_flavor = env.name("missing");
    let broken = env
        .cluster_queue("broken", &missing_flavor, "2", json!({}))
        .await;
    let absent = env.name("absent");
    env.local_queue("to-absent", &absent).await;
    env.local_queue("to-broken", &broken).await;
    let scheduler = start_scheduler(&env.client);

    env.workload("no-local-queue", "nope", "1", 0).await;
    env.workload("no-cluster-queue", "to-absent", "1", 0).await;
    env.workload("inactive-cluster-queue", "to-broken", "1", 0)
        .await;
    let expectations = [
        (
            "no-local-queue",
            "Misconfigured",
            "LocalQueue nope doesn't exist".to_owned(),
        ),
        (
            "no-cluster-queue",
            "Misconfigured",
            format!("ClusterQueue {absent} doesn't exist"),
        ),
        (
            "inactive-cluster-queue",
            "Suspended",
            format!("ClusterQueue {broken} is inactive"),
        ),
    ];
    for (name, reason, message) in &expectations {
        env.wait_until(message, name, |w| {
            condition(w, "QuotaReserved").is_some_and(|c| {
                c.status == "False" && c.reason == *reason && c.message == *message
            })
        })
        .await;
    }
    let events: Api<Event> = Api::namespaced(env.client.clone(), env.ns.name());
    eventually(WAIT, "a Warning event with the reason", || {
        let events = events.clone();
        async move {
            events.list(&ListParams::default()).await.is_ok_and(|list| {
                list.items.iter().any(|e| {
                    e.type_.as_deref() == Some("Warning")
                        && e.reason.as_deref() == Some("Misconfigured")
                        && e.note.as_deref() == Some("LocalQueue nope doesn't exist")
                        && e.regarding.as_ref().and_then(|r| r.name.as_deref())
                            == Some("no-local-queue")
                })
            })
        }
    })
    .await
    .expect("Warning event on the workload");
    let missing_message = format!(
        "Can't admit new workloads: references missing ResourceFlavor(s): {missing_flavor}."
    );
    env.wait_for_cluster_queue(&broken, "inactive", |status| {
        status["conditions"][0]["status"] == "False"
            && status["conditions"][0]["reason"] == "FlavorNotFound"
            && status["conditions"][0]["message"] == missing_message.as_str()
            && status["pendingWorkloads"] == 1
    })
    .await;
    let queues: Api<LocalQueue> = Api::namespaced(env.client.clone(), env.ns.name());
    for (queue, reason) in [
        ("to-absent", "ClusterQueueDoesNotExist"),
        ("to-broken", "ClusterQueueIsInactive"),
    ] {
        eventually(WAIT, &format!("{queue} inactive"), || {
            let queues = queues.clone();
            async move {
                queues
                    .get(queue)
                    .await
                    .ok()
                    .and_then(|q| q.status)
                    .is_some_and(|s| {
                        s.pending_workloads == 1
                            && s.conditions.first().is_some_and(|c| {
                                c.status == "False"
                                    && c.reason == reason
                                    && c.message == "Can't submit new workloads to clusterQueue"
                            })
                    })
            }
        })
        .await
        .expect("LocalQueue Active condition");
    }

    // Creating the missing flavor activates the queue and admits its workload.
    let flavors: Api<ResourceFlavor> = Api::all(env.client.clone());
    flavors
        .create(
            &PostParams::default(),
            &from_json(json!({"metadata": {"name": missing_flavor}, "spec": {}})),
        )
        .await
        .expect("create the missing flavor");
    env.cluster_scoped.push(("flavor", missing_flavor));
    env.wait_until(
        "admitted once the flavor exists",
        "inactive-cluster-queue",
        is_admitted,
    )
    .await;
    scheduler.stop().await;
    env.cleanup().await;
}

#[tokio::test]
async fn a_tas_flavor_needs_its_topology_and_the_levels_a_workload_asks_for() {
    let mut env = env().await;
    let (flavor, topology) = (env.name("tas"), env.name("datacenter"));
    create_flavor(
        &env.client,
        &flavor,
        json!({"nodeLabels": {"cloud.provider.com/node-group": "tas"}, "topologyName": topology}),
    )
    .await;
    env.cluster_scoped.push(("flavor", flavor.clone()));
    let cluster_queue = env.cluster_queue("tas", &flavor, "12", json!({})).await;
    env.local_queue("to-tas", &cluster_queue).await;
    let scheduler = start_scheduler(&env.client);
    env.workload("waits-for-topology", "to-tas", "1", 0).await;

    let missing = format!(
        "Can't admit new workloads: there is no Topology \"{topology}\" for TAS flavor \"{flavor}\"."
    );
    env.wait_for_cluster_queue(&cluster_queue, "inactive", |status| {
        status["conditions"][0]["status"] == "False"
            && status["conditions"][0]["reason"] == "TopologyNotFound"
            && status["conditions"][0]["message"] == missing.as_str()
            && status["pendingWorkloads"] == 1
    })
    .await;
    env.wait_until(
        "suspended while the queue is inactive",
        "waits-for-topology",
        |w| {
            condition(w, "QuotaReserved").is_some_and(|c| {
                c.status == "False"
                    && c.message == format!("ClusterQueue {cluster_queue} is inactive")
            })
        },
    )
    .await;

    let topologies: Api<Topology> = Api::all(env.client.clone());
    topologies
        .create(
            &PostParams::default(),
            &from_json(json!({
                "metadata": {"name": topology},
                "spec": {"levels": [
                    {"nodeLabel": "cloud.provider.com/topology-rack"},
                    {"nodeLabel": "kubernetes.io/hostname"},
                ]},
            })),
        )
        .await
        .expect("create the Topology");
    let topology_name = topology.clone();
    env.cluster_scoped.push(("topology", topology));
    env.wait_for_cluster_queue(&cluster_queue, "active", |status| {
        status["conditions"][0]["status"] == "True"
    })
    .await;
    env.wait_until(
        "admitted once the Topology exists",
        "waits-for-topology",
        is_admitted,
    )
    .await;

    // Explicit requests need the levels they name in the flavor's Topology, and room in it:
    // the dev cluster's TAS pool has rack r1 with room for 4 CPUs, r2 for 3 (2 + 1), and the
    // first Workload took one CPU where the least was free (kwok-tas-r2-1).
    let create = |name: &'static str, level: &'static str, pods: i32, cpu: &'static str| {
        let workloads = env.workloads();
        async move {
            workloads
                .create(
                    &PostParams::default(),
                    &from_json(json!({
                        "metadata": {"name": name},
                        "spec": {"queueName": "to-tas", "podSets": [{
                            "name": "main",
                            "count": pods,
                            "template": {"spec": {"containers": [
                                {"name": "c", "image": "busybox", "resources": {"requests": {"cpu": cpu}}},
                            ]}},
                            "topologyRequest": {"required": level},
                        }]},
                    })),
                )
                .await
                .expect("create a workload with a topology request");
        }
    };
    for (name, level, pods, cpu) in [
        ("by-rack", "cloud.provider.com/topology-rack", 1, "500m"),
        ("by-block", "cloud.provider.com/topology-block", 1, "500m"),
        ("four-in-a-rack", "cloud.provider.com/topology-rack", 4, "1"),
    ] {
        create(name, level, pods, cpu).await;
    }
    let on_hosts = |hosts: &[(&str, i32)]| {
        let domains: Vec<Value> = hosts
            .iter()
            .map(|(host, count)| json!({"values": [host], "count": count}))
            .collect();
        kuota::api::v1beta2::TopologyAssignment::from(from_json::<
            kuota::api::v1beta1::TopologyAssignment,
        >(
            json!({"levels": ["kubernetes.io/hostname"], "domains": domains}),
        ))
    };
    let placed = |w: &Workload| {
        w.status
            .as_ref()
            .and_then(|status| status.admission.as_ref())
            .and_then(|admission| admission.pod_set_assignments[0].topology_assignment.clone())
    };
    // The tightest rack that holds it, the tightest node of that rack.
    env.wait_until("placed on a node of rack r2", "by-rack", |w| {
        placed(w) == Some(on_hosts(&[("kwok-tas-r2-0", 1)]))
    })
    .await;
    env.wait_until(
        "placed in the only rack with room for 4",
        "four-in-a-rack",
        |w| placed(w) == Some(on_hosts(&[("kwok-tas-r1-0", 2), ("kwok-tas-r1-1", 2)])),
    )
    .await;
    // Left: 1 CPU on kwok-tas-r2-0, none on the three others. (Created only now: its first
    // verdict reads the capacity left, where a later change of figures would be written at
    // most once a minute.)
    create("five-in-a-rack", "cloud.provider.com/topology-rack", 5, "1").await;
    env.wait_until("refused: no rack holds 5", "five-in-a-rack", |w| {
        condition(w, "QuotaReserved").is_some_and(|c| {
            c.status == "False"
                && c.reason == "TopologyPlacementFailed"
                && c.message
                    == format!(
                        "couldn't assign flavors to pod set main: topology \"{topology_name}\" allows to fit only 1 out of 5 pod(s). Total nodes: 4; excluded: resource \"cpu\": 3"
                    )
        })
    })
    .await;
    let no_level = format!(
        "couldn't assign flavors to pod set main: Flavor \"{flavor}\" does not contain the requested level"
    );
    env.wait_until("refused for want of the block level", "by-block", |w| {
        condition(w, "QuotaReserved").is_some_and(|c| c.status == "False" && c.message == no_level)
    })
    .await;
    scheduler.stop().await;
    env.cleanup().await;
}

/// Sets a flag while its work future runs.
fn flagged_work(flag: Arc<AtomicBool>) -> impl FnMut() -> Pin<Box<dyn Future<Output = ()> + Send>> {
    move || {
        let flag = Arc::clone(&flag);
        Box::pin(async move {
            struct Running(Arc<AtomicBool>);
            impl Drop for Running {
                fn drop(&mut self) {
                    self.0.store(false, Ordering::SeqCst);
                }
            }
            flag.store(true, Ordering::SeqCst);
            let _running = Running(flag);
            std::future::pending::<()>().await;
        })
    }
}

#[tokio::test]
async fn only_the_lease_holder_runs_the_scheduler() {
    let env = env().await;
    let mut config = Configuration::from_defaults(&LoadOptions::default()).expect("defaults");
    let election = &mut config.leader_election;
    election.leader_elect = true;
    election.resource_name = "kuota-leader".to_owned();
    election.resource_namespace = env.ns.name().to_owned();
    election.lease_duration = Duration::from_secs(3);
    election.renew_deadline = Duration::from_secs(2);
    election.retry_period = Duration::from_millis(200);
    let election = config.leader_election.clone();

    let start = |identity: &str, flag: Arc<AtomicBool>| {
        let (stop, stopped) = oneshot::channel::<()>();
        let client = env.client.clone();
        let election = election.clone();
        let identity = identity.to_owned();
        let task = tokio::spawn(async move {
            let shutdown = async {
                let _ = stopped.await;
            };
            lead(client, &election, identity, shutdown, flagged_work(flag)).await;
        });
        (stop, task)
    };
    let running = |flag: &Arc<AtomicBool>| {
        let flag = Arc::clone(flag);
        move || {
            let flag = Arc::clone(&flag);
            async move { flag.load(Ordering::SeqCst) }
        }
    };

    let first = Arc::new(AtomicBool::new(false));
    let second = Arc::new(AtomicBool::new(false));
    let (stop_first, first_task) = start("first", Arc::clone(&first));
    eventually(WAIT, "first leads", running(&first))
        .await
        .expect("the first candidate acquires the free Lease");
    let (stop_second, second_task) = start("second", Arc::clone(&second));
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert!(!second.load(Ordering::SeqCst), "only one leader");

    let leases: Api<Lease> = Api::namespaced(env.client.clone(), env.ns.name());
    let lease = leases.get("kuota-leader").await.expect("the Lease exists");
    assert_eq!(
        lease
            .spec
            .as_ref()
            .and_then(|s| s.holder_identity.as_deref()),
        Some("first")
    );

    // A clean shutdown releases the Lease: the other candidate takes over at once.
    let _ = stop_first.send(());
    first_task.await.expect("first stops");
    assert!(!first.load(Ordering::SeqCst));
    eventually(Duration::from_secs(2), "second leads", running(&second))
        .await
        .expect("the second candidate takes the released Lease");

    // Someone else takes the Lease: the leader stops its work.
    loop {
        let mut stolen = leases.get("kuota-leader").await.expect("lease");
        if let Some(spec) = stolen.spec.as_mut() {
            spec.holder_identity = Some("intruder".to_owned());
            spec.renew_time = Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime(
                jiff::Timestamp::now(),
            ));
        }
        match leases
            .replace("kuota-leader", &PostParams::default(), &stolen)
            .await
        {
            Ok(_) => break,
            // The leader renewed in between: read again.
            Err(kube::Error::Api(status)) if status.code == 409 => {}
            Err(error) => panic!("cannot steal the Lease: {error}"),
        }
    }
    let stopped = Arc::clone(&second);
    eventually(Duration::from_secs(3), "second stops", move || {
        let stopped = Arc::clone(&stopped);
        async move { !stopped.load(Ordering::SeqCst) }
    })
    .await
    .expect("a leader that lost its Lease stops working");
    // The intruder never renews: the Lease expires and the candidate leads again.
    eventually(
        Duration::from_secs(10),
        "second leads again",
        running(&second),
    )
    .await
    .expect("an expired Lease is taken over");

    let _ = stop_second.send(());
    second_task.await.expect("second stops");
    let released = leases.get("kuota-leader").await.expect("lease");
    assert_eq!(
        released
            .spec
            .as_ref()
            .and_then(|s| s.holder_identity.as_deref()),
        None,
        "released on shutdown"
    );
}

/// The harness of the bench's status-write ceiling (`cargo bench --bench admitter_scale`)
/// admits every Workload it is given with Kuota's own admission write, and nothing else.
#[tokio::test]
async fn the_status_write_ceiling_harness_admits_each_workload_with_kuotas_status_write() {
    let env = env().await;
    let mut workloads = Vec::new();
    for index in 0..20 {
        workloads.push(env.workload(&format!("w{index}"), "lq", "1", 0).await);
    }
    let admission = |_: &Workload| Admission {
        cluster_queue: "cq".to_owned(),
        pod_set_assignments: vec![PodSetAssignment {
            name: "main".to_owned(),
            flavors: [("cpu".to_owned(), "default".to_owned())].into(),
            resource_usage: [("cpu".to_owned(), 1000)].into(),
            count: 1,
            topology: None,
        }],
    };
    let ceiling = common::status_ceiling::admit_all(&env.client, workloads, admission, 4)
        .await
        .expect("every admission is written");
    assert_eq!((ceiling.admitted, ceiling.concurrency), (20, 4));
    eprintln!("ceiling smoke: {:.0} admissions/s", ceiling.per_second());
    let written = env
        .workloads()
        .list(&ListParams::default())
        .await
        .expect("list workloads");
    assert_eq!(written.items.len(), 20);
    for workload in &written.items {
        assert!(is_admitted(workload), "{workload:?}");
        let admission = workload.status.as_ref().and_then(|s| s.admission.as_ref());
        assert_eq!(
            admission.map(|a| (
                a.cluster_queue.as_str(),
                a.pod_set_assignments[0].flavors["cpu"].as_str()
            )),
            Some(("cq", "default"))
        );
        assert!(has_condition(
            workload,
            "QuotaReserved",
            "True",
            "QuotaReserved"
        ));
    }
}

/// `objectRetentionPolicies.workloads.afterFinished`: a finished Workload is deleted once the
/// retention has passed since it finished (Kuota's finalizer taken off first), with Kueue's
/// event; an unfinished one stays.
#[tokio::test]
async fn block_admission_admits_the_next_workload_once_the_admitted_one_is_pods_ready() {
    let mut env = env().await;
    let flavor = env.flavor("default").await;
    let cq = env.cluster_queue("cq", &flavor, "4", json!({})).await;
    env.local_queue("lq", &cq).await;
    let mut blocking = Configuration::clone(&config());
    blocking
        .wait_for_pods_ready
        .as_mut()
        .expect("waitForPodsReady is on by default")
        .block_admission = true;
    let scheduler = start_scheduler_with(&env.client, Arc::new(blocking));

    env.workload("first", "lq", "1", 0).await;
    env.wait_until("admitted", "first", is_admitted).await;
    env.workload("second", "lq", "1", 0).await;
    env.wait_until("waiting for pods", "second", |w| {
        has_condition(w, "QuotaReserved", "False", "WaitingForPodsReady")
    })
    .await;
    let waiting = condition(&env.get("second").await, "QuotaReserved")
        .map(|c| c.message.clone())
        .expect("QuotaReserved");
    assert_eq!(
        waiting,
        "waiting for all admitted workloads to be in PodsReady condition"
    );

    env.set_condition(
        "first",
        json!({"type": "PodsReady", "status": "True", "reason": "PodsReady", "message": "All pods reached readiness and the workload is running", "lastTransitionTime": now()}),
    )
    .await;
    env.wait_until("admitted", "second", is_admitted).await;
    scheduler.stop().await;
    env.cleanup().await;
}

/// A Configuration whose waitForPodsReady gives up quickly: 3 s to get pods ready, a 1 s
/// backoff, and one requeue before deactivation.
const IMPATIENT: &str = r#"
apiVersion: config.kueue.x-k8s.io/v1beta2
kind: Configuration
leaderElection: {leaderElect: false}
waitForPodsReady:
  timeout: 3s
  requeuingStrategy: {backoffLimitCount: 1, backoffBaseSeconds: 1, backoffMaxSeconds: 2}
"#;

#[tokio::test]
async fn a_job_whose_pods_never_get_ready_is_requeued_then_deactivated_past_its_limit() {
    let mut env = env().await;
    let flavor = env.flavor("default").await;
    let cq = env.cluster_queue("cq", &flavor, "1", json!({})).await;
    env.local_queue("lq", &cq).await;
    let config =
        Arc::new(Configuration::from_yaml(IMPATIENT, &LoadOptions::default()).expect("config"));
    let (stores, drivers) = Stores::new(&env.client, config.topology_gates().enabled);
    let (stop, stopped) = oneshot::channel::<()>();
    let stopped = async {
        let _ = stopped.await;
    }
    .shared();
    let admitter = tokio::spawn({
        let (client, metrics) = (env.client.clone(), Arc::new(MetricsRegistry::new()));
        let (config, stores, stopped) = (Arc::clone(&config), stores.clone(), stopped.clone());
        async move {
            tokio::select! {
                () = drivers.run() => {}
                () = run_job_controllers(client.clone(), Arc::clone(&config), stores.clone(), metrics.events.clone(), stopped.clone()) => {}
                result = run_scheduler(client, config, stores, metrics, stopped) => {
                    result.expect("the stores sync");
                }
            }
        }
    });

    // Its one pod asks for a node that does not exist, so it never gets ready.
    let jobs: Api<Job> = Api::namespaced(env.client.clone(), env.ns.name());
    let job: Job = from_json(json!({
        "metadata": {"name": "stuck", "labels": {"kueue.x-k8s.io/queue-name": "lq"}},
        "spec": {
            "suspend": true,
            "template": {"spec": {
                "restartPolicy": "Never",
                "nodeSelector": {"kuota.test/nowhere": "true"},
                "containers": [{"name": "c", "image": "busybox", "resources": {"requests": {"cpu": "1"}}}],
            }},
        },
    }));
    let job = jobs
        .create(&PostParams::default(), &job)
        .await
        .expect("create job");
    let name = kuota::jobs::workload_name("Job", "batch", "stuck", &job.uid().expect("uid"));

    let timeout = format!("Exceeded the PodsReady timeout {}/{name}", env.ns.name());
    env.wait_until(
        "evicted after its pods were not ready in time",
        &name,
        |w| condition(w, "Evicted").is_some_and(|c| c.reason == "PodsReadyTimeout"),
    )
    .await;
    let evicted = env.get(&name).await;
    assert_eq!(
        condition(&evicted, "Evicted").map(|c| c.message.as_str()),
        Some(timeout.as_str())
    );
    assert_eq!(
        evicted
            .status
            .as_ref()
            .and_then(|status| status.requeue_state.as_ref())
            .and_then(|state| state.count),
        Some(1)
    );

    // Requeued after its backoff and admitted again, it times out once more: past its limit
    // of one requeue it is deactivated, and its job stays suspended.
    let limit = "exceeding the maximum number of re-queuing retries";
    env.wait_until("deactivated", &name, |w| {
        w.spec.active == Some(false)
            && condition(w, "Evicted")
                .is_some_and(|c| c.status == "True" && c.reason.starts_with("Deactivated"))
            && condition(w, "QuotaReserved").is_some_and(|c| c.status == "False")
    })
    .await;
    let deactivated = env.get(&name).await;
    let summary = |type_: &str| {
        condition(&deactivated, type_)
            .map(|c| (c.status.clone(), c.reason.clone(), c.message.clone()))
    };
    let message = format!("The workload is deactivated due to {limit}");
    assert_eq!(
        summary("Evicted"),
        Some((
            "True".into(),
            "DeactivatedDueToRequeuingLimitExceeded".into(),
            message.clone()
        ))
    );
    assert_eq!(
        summary("Requeued"),
        Some((
            "False".into(),
            "DeactivatedDueToRequeuingLimitExceeded".into(),
            message
        ))
    );
    assert_eq!(condition(&deactivated, "DeactivationTarget"), None);
    let stats = deactivated
        .status
        .as_ref()
        .and_then(|status| status.scheduling_stats.as_ref())
        .map(|stats| {
            let mut evictions: Vec<(String, String, i32)> = stats
                .evictions
                .iter()
                .map(|e| (e.reason.clone(), e.underlying_cause.clone(), e.count))
                .collect();
            evictions.sort();
            evictions
        });
    assert_eq!(
        stats,
        Some(vec![
            ("Deactivated".into(), "RequeuingLimitExceeded".into(), 1),
            ("PodsReadyTimeout".into(), "WaitForStart".into(), 1),
        ])
    );
    let job = jobs.get("stuck").await.expect("job");
    assert_eq!(job.spec.as_ref().and_then(|spec| spec.suspend), Some(true));

    let _ = stop.send(());
    admitter.await.expect("the admitter ends cleanly");
    jobs.delete("stuck", &Default::default())
        .await
        .expect("delete job");
    env.cleanup().await;
}

#[tokio::test]
async fn finished_workloads_are_deleted_once_their_retention_has_passed() {
    let env = env().await;
    let retention = tokio::spawn(kuota::admitter::retention::delete_finished(
        env.client.clone(),
        Duration::from_secs(2),
        EventMetrics::default(),
    ));
    let workloads = env.workloads();
    for (name, finalizers) in [
        ("done", json!(["kueue.x-k8s.io/resource-in-use"])),
        ("running", json!([])),
    ] {
        workloads
            .create(
                &PostParams::default(),
                &from_json(json!({
                    "metadata": {"name": name, "finalizers": finalizers},
                    "spec": {"podSets": [{
                        "name": "main",
                        "count": 1,
                        "template": {"spec": {"containers": [{"name": "c", "image": "busybox"}]}},
                    }]},
                })),
            )
            .await
            .expect("create workload");
    }
    env.finish("done").await;
    let finished = std::time::Instant::now();

    eventually(WAIT, "the finished Workload is deleted", || {
        let workloads = workloads.clone();
        async move { workloads.get_opt("done").await.is_ok_and(|w| w.is_none()) }
    })
    .await
    .expect("deleted");
    // The condition's time has whole seconds, so the retention may end up to 1 s early.
    assert!(
        finished.elapsed() >= Duration::from_secs(1),
        "{:?}",
        finished.elapsed()
    );
    assert!(
        workloads.get_opt("running").await.expect("get").is_some(),
        "an unfinished Workload stays"
    );

    let events: Api<Event> = Api::namespaced(env.client.clone(), env.ns.name());
    eventually(WAIT, "the deletion is reported", || {
        let events = events.clone();
        async move {
            events.list(&ListParams::default()).await.is_ok_and(|list| {
                list.items.iter().any(|event| {
                    event.regarding.as_ref().and_then(|r| r.name.as_deref()) == Some("done")
                        && event.reason.as_deref() == Some("Deleted")
                        && event.note.as_deref()
                            == Some("Deleted finished workload due to elapsed retention")
                        && event.reporting_controller.as_deref()
                            == Some("kueue-workload-controller")
                })
            })
        }
    })
    .await
    .expect("event");
    retention.abort();
}
