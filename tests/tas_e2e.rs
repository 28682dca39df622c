//! Topology-aware scheduling through the real `kuota serve` on a real control plane, its pods
//! bound by the real kube-scheduler to the dev cluster's TAS pool of kwok nodes (block b1; rack
//! r1: kwok-tas-r1-0 and -1 with 2 CPUs each; rack r2: kwok-tas-r2-0 with 2, -1 with 1).
//!
//! The queues are `manifests/samples/topology/`, applied with kubectl; the jobs are its sample
//! Job and variants of it, one pod outside Kueue, and a job of a higher priority that preempts
//! another for its place. One scenario, in order, since every step reads the free capacity
//! the ones before it left.

mod common {
    pub mod workload;
}

use std::{collections::BTreeMap, path::PathBuf, time::Duration};

use k8s_openapi::api::{batch::v1::Job, core::v1::Pod};
use kube::{
    Api, Client, ResourceExt,
    api::{DeleteParams, ListParams, Patch, PatchParams, PostParams},
};
use kuota::api::constants::PRIORITY_CLASS_LABEL;
use kuota::api::v1beta1;
use kuota::api::v1beta2::{ClusterQueue, Workload, WorkloadPriorityClass};
use kuota_cluster::{KEEP_RUNNING_LABEL, KuotaProcess, TestCluster, assert_success, eventually};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use common::workload::condition;

const WAIT: Duration = Duration::from_secs(60);
const NAMESPACE: &str = "team-tas";
const TOPOLOGY: &str = "datacenter";
const RACK: &str = "cloud.provider.com/topology-rack";
const INDEX_LABEL: &str = "batch.kubernetes.io/job-completion-index";

fn samples() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("manifests/samples/topology")
}

/// The sample Job, renamed, with `pods` pods, its topology annotation replaced by
/// `annotation` (none when `None`), and its pods held Running by kwok.
fn job(name: &str, pods: i32, annotation: Option<(&str, &str)>) -> Job {
    let text = std::fs::read_to_string(samples().join("20-job.yaml")).expect("sample Job");
    let mut job = kuota::k8s::yaml::documents(&text).expect("YAML").remove(0);
    job["metadata"]["name"] = json!(name);
    job["spec"]["parallelism"] = json!(pods);
    job["spec"]["completions"] = json!(pods);
    job["spec"]["template"]["metadata"] = json!({
        "labels": {KEEP_RUNNING_LABEL: "true"},
        "annotations": annotation.map_or(json!({}), |(key, value)| json!({key: value})),
    });
    serde_json::from_value(job).expect("a Job")
}

struct Scenario {
    client: Client,
    kuota: KuotaProcess,
}

impl Scenario {
    fn jobs(&self) -> Api<Job> {
        Api::namespaced(self.client.clone(), NAMESPACE)
    }

    fn workloads(&self) -> Api<Workload> {
        Api::namespaced(self.client.clone(), NAMESPACE)
    }

    async fn workload_of(&self, job: &str) -> Option<Workload> {
        let workloads = self.workloads().list(&ListParams::default()).await.ok()?;
        workloads.items.into_iter().find(|workload| {
            workload
                .metadata
                .owner_references
                .iter()
                .flatten()
                .any(|owner| owner.name == job)
        })
    }

    /// Waits until the job's Workload satisfies `probe`; panics with what was seen.
    async fn wait_workload(&self, what: &str, job: &str, probe: impl Fn(&Workload) -> bool) {
        let result = eventually(WAIT, what, || async {
            self.workload_of(job).await.is_some_and(|w| probe(&w))
        })
        .await;
        if let Err(error) = result {
            panic!(
                "{error}\nseen: {:#?}\nkuota log:\n{}",
                self.workload_of(job).await.map(|w| w.status),
                self.kuota.process.log_tail(40)
            );
        }
    }

    /// The job's pods once all `pods` are bound: completion index to node name.
    async fn bound_pods(&self, job: &str, pods: usize) -> BTreeMap<i64, String> {
        let api: Api<Pod> = Api::namespaced(self.client.clone(), NAMESPACE);
        let selector = ListParams::default().labels(&format!("job-name={job}"));
        let bound = || async {
            let listed = api.list(&selector).await.expect("list pods").items;
            listed
                .iter()
                .filter_map(|pod| {
                    let index = pod
                        .metadata
                        .labels
                        .as_ref()?
                        .get(INDEX_LABEL)?
                        .parse()
                        .ok()?;
                    let node = pod.spec.as_ref()?.node_name.clone()?;
                    Some((index, node))
                })
                .collect::<BTreeMap<i64, String>>()
        };
        let result = eventually(WAIT, "every pod bound to a node", || async {
            bound().await.len() == pods
        })
        .await;
        if let Err(error) = result {
            let listed = api.list(&selector).await.expect("list pods").items;
            let specs: Vec<_> = listed.iter().map(|pod| &pod.spec).collect();
            panic!(
                "{error}\npods: {specs:#?}\nkuota log:\n{}",
                self.kuota.process.log_tail(40)
            );
        }
        bound().await
    }

    async fn delete_job(&self, name: &str) {
        self.jobs()
            .delete(name, &DeleteParams::background())
            .await
            .expect("delete the job");
        let result = eventually(WAIT, "the job's Workload gone", || async {
            self.workload_of(name).await.is_none()
        })
        .await;
        result.expect("the Workload of a deleted job is collected");
    }
}

/// The Workload's topology assignment of its only PodSet, in the served v1beta1 shape.
fn assignment(workload: &Workload) -> Option<v1beta1::TopologyAssignment> {
    let admission = workload.status.as_ref()?.admission.as_ref()?;
    Some(
        admission.pod_set_assignments[0]
            .topology_assignment
            .clone()?
            .into(),
    )
}

fn on_hosts(hosts: &[(&str, i32)]) -> v1beta1::TopologyAssignment {
    serde_json::from_value(json!({
        "levels": ["kubernetes.io/hostname"],
        "domains": hosts
            .iter()
            .map(|(host, count)| json!({"values": [host], "count": count}))
            .collect::<Vec<Value>>(),
    }))
    .expect("an assignment")
}

/// The sample Job as it is: four pods required in one rack.
fn rack_of_four() -> Job {
    job(
        "rack-of-four",
        4,
        Some(("kueue.x-k8s.io/podset-required-topology", RACK)),
    )
}

/// Where four pods of one CPU go in rack r1 when it is free: two on each of its nodes.
fn two_per_node_of_r1() -> v1beta1::TopologyAssignment {
    on_hosts(&[("kwok-tas-r1-0", 2), ("kwok-tas-r1-1", 2)])
}

fn placement_failed(workload: &Workload, message: &str) -> bool {
    condition(workload, "QuotaReserved").is_some_and(|c| {
        c.status == "False"
            && c.reason == "TopologyPlacementFailed"
            && c.message == format!("couldn't assign flavors to pod set main: {message}")
    })
}

#[tokio::test]
async fn pods_run_on_the_nodes_of_the_domains_admission_gave_them() {
    let cluster = TestCluster::shared().await;
    let plane = cluster.plane();
    plane
        .install_crds(&kuota::api::crds::all())
        .await
        .expect("Kueue CRDs");
    let kuota = plane
        .start_kuota(std::path::Path::new(env!("CARGO_BIN_EXE_kuota")), &[])
        .await
        .expect("kuota serve starts");
    let out = cluster
        .kubectl()
        .args(["apply", "--server-side", "-f"])
        .arg(samples().join("10-queues.yaml"))
        .output()
        .expect("kubectl");
    assert_success(&out);
    let scenario = Scenario {
        client: cluster.client().await,
        kuota,
    };
    let create = |job: Job| {
        let jobs = scenario.jobs();
        async move {
            jobs.create(&PostParams::default(), &job)
                .await
                .expect("create a job");
        }
    };

    // Four pods in one rack: only r1 has room, two per node; pods of neighbouring indexes
    // share a node.
    create(rack_of_four()).await;
    scenario
        .wait_workload("admitted to rack r1", "rack-of-four", |w| {
            assignment(w) == Some(two_per_node_of_r1())
        })
        .await;
    assert_eq!(
        scenario.bound_pods("rack-of-four", 4).await,
        BTreeMap::from([
            (0, "kwok-tas-r1-0".to_string()),
            (1, "kwok-tas-r1-0".to_string()),
            (2, "kwok-tas-r1-1".to_string()),
            (3, "kwok-tas-r1-1".to_string()),
        ])
    );

    // Five pods required in one rack: r1 is taken, r2 holds three; once r1 is free again it
    // holds four. Never five, so such a job stays suspended with Kueue's message.
    let five_required = || {
        job(
            "five-required",
            5,
            Some(("kueue.x-k8s.io/podset-required-topology", RACK)),
        )
    };
    create(five_required()).await;
    let fits_three = format!(
        "topology \"{TOPOLOGY}\" allows to fit only 3 out of 5 pod(s). Total nodes: 4; excluded: resource \"cpu\": 2"
    );
    scenario
        .wait_workload("refused while r1 is taken", "five-required", |w| {
            placement_failed(w, &fits_three)
        })
        .await;
    scenario.delete_job("five-required").await;
    scenario.delete_job("rack-of-four").await;
    create(five_required()).await;
    let fits_four = format!("topology \"{TOPOLOGY}\" allows to fit only 4 out of 5 pod(s)");
    scenario
        .wait_workload("refused with r1 free", "five-required", |w| {
            placement_failed(w, &fits_four)
        })
        .await;
    let suspended = scenario.jobs().get("five-required").await.expect("job");
    assert_eq!(suspended.spec.and_then(|spec| spec.suspend), Some(true));
    scenario.delete_job("five-required").await;

    // Preferred falls back to a second rack: all of r1, then the tightest node of r2.
    create(job(
        "five-preferred",
        5,
        Some(("kueue.x-k8s.io/podset-preferred-topology", RACK)),
    ))
    .await;
    scenario
        .wait_workload("admitted across two racks", "five-preferred", |w| {
            assignment(w)
                == Some(on_hosts(&[
                    ("kwok-tas-r1-0", 2),
                    ("kwok-tas-r1-1", 2),
                    ("kwok-tas-r2-1", 1),
                ]))
        })
        .await;
    assert_eq!(
        scenario.bound_pods("five-preferred", 5).await,
        BTreeMap::from([
            (0, "kwok-tas-r1-0".to_string()),
            (1, "kwok-tas-r1-0".to_string()),
            (2, "kwok-tas-r1-1".to_string()),
            (3, "kwok-tas-r1-1".to_string()),
            (4, "kwok-tas-r2-1".to_string()),
        ])
    );
    scenario.delete_job("five-preferred").await;

    // A job that asks for nothing, in a queue of TAS flavors alone, is placed anyway.
    create(job("implicit", 2, None)).await;
    scenario
        .wait_workload("admitted with a topology assignment", "implicit", |w| {
            assignment(w).is_some()
        })
        .await;
    let workload = scenario.workload_of("implicit").await.expect("Workload");
    let given = assignment(&workload).expect("an assignment");
    let mut expected: Vec<String> = given
        .domains
        .iter()
        .flat_map(|domain| std::iter::repeat_n(domain.values[0].clone(), domain.count as usize))
        .collect();
    let mut nodes: Vec<String> = scenario
        .bound_pods("implicit", 2)
        .await
        .into_values()
        .collect();
    expected.sort();
    nodes.sort();
    assert_eq!(given.levels, ["kubernetes.io/hostname"]);
    assert_eq!(nodes, expected);
    scenario.delete_job("implicit").await;

    // A pod Kueue did not place (bound by hand here, as a DaemonSet's or a static pod is)
    // takes its share of its node: with one of r1's CPUs taken, no rack holds four pods, until
    // it is gone.
    let pods: Api<Pod> = Api::namespaced(scenario.client.clone(), NAMESPACE);
    pods.create(&PostParams::default(), &bound_by_hand("kwok-tas-r1-0"))
        .await
        .expect("create a pod outside Kueue");
    create(rack_of_four()).await;
    let fits_three = format!("topology \"{TOPOLOGY}\" allows to fit only 3 out of 4 pod(s)");
    scenario
        .wait_workload("refused while a CPU of r1 is taken", "rack-of-four", |w| {
            placement_failed(w, &fits_three)
        })
        .await;
    pods.delete(OUTSIDE_KUEUE, &DeleteParams::default().grace_period(0))
        .await
        .expect("delete the pod outside Kueue");
    scenario
        .wait_workload("admitted to r1 once the pod is gone", "rack-of-four", |w| {
            assignment(w) == Some(two_per_node_of_r1())
        })
        .await;

    // Preemption for a place: once the queue preempts lower priorities, a job of a higher one
    // asking for a rack of four evicts the job that holds r1, though the quota has room for
    // both; the evicted job then waits for a rack, as only r2, too small, is free.
    let queues: Api<ClusterQueue> = Api::all(scenario.client.clone());
    let set_preemption = |preemption: Value| {
        let queues = queues.clone();
        async move {
            let patch = json!({"spec": {"preemption": preemption}});
            queues
                .patch("tas", &PatchParams::default(), &Patch::Merge(&patch))
                .await
                .expect("patch the ClusterQueue's preemption");
        }
    };
    set_preemption(json!({"withinClusterQueue": "LowerPriority"})).await;
    let priorities: Api<WorkloadPriorityClass> = Api::all(scenario.client.clone());
    let urgent_class: WorkloadPriorityClass =
        serde_json::from_value(json!({"metadata": {"name": URGENT}, "value": 1000}))
            .expect("a WorkloadPriorityClass");
    priorities
        .create(&PostParams::default(), &urgent_class)
        .await
        .expect("create the priority class");
    let mut urgent = rack_of_four();
    urgent.metadata.name = Some(URGENT.to_owned());
    urgent
        .labels_mut()
        .insert(PRIORITY_CLASS_LABEL.to_owned(), URGENT.to_owned());
    create(urgent).await;
    scenario
        .wait_workload("the lower job preempted", "rack-of-four", |w| {
            condition(w, "Preempted")
                .is_some_and(|c| c.status == "True" && c.reason == "InClusterQueue")
                && assignment(w).is_none()
        })
        .await;
    scenario
        .wait_workload("admitted to r1 in its place", URGENT, |w| {
            assignment(w) == Some(two_per_node_of_r1())
        })
        .await;
    let preempted = scenario.jobs().get("rack-of-four").await.expect("job");
    assert_eq!(preempted.spec.and_then(|spec| spec.suspend), Some(true));
    scenario.delete_job(URGENT).await;
    scenario.delete_job("rack-of-four").await;
    priorities
        .delete(URGENT, &DeleteParams::default())
        .await
        .expect("delete the priority class");
    set_preemption(Value::Null).await;
}

const URGENT: &str = "urgent";

const OUTSIDE_KUEUE: &str = "outside-kueue";

/// A pod of the sample Job's template (one CPU) that no queue manages, bound to `node` by
/// its spec rather than by the scheduler, and held Running by kwok.
fn bound_by_hand(node: &str) -> Pod {
    let template = job(OUTSIDE_KUEUE, 1, None).spec.expect("spec").template;
    let mut spec = template.spec.expect("pod spec");
    spec.node_name = Some(node.to_owned());
    Pod {
        metadata: kube::api::ObjectMeta {
            name: Some(OUTSIDE_KUEUE.to_owned()),
            labels: template.metadata.and_then(|meta| meta.labels),
            ..Default::default()
        },
        spec: Some(spec),
        status: None,
    }
}
