//! Each of the ten job kinds through the real `kuota serve` on a real control plane: created
//! with a queue label it is stored suspended; with quota it starts with the flavor's
//! nodeSelector, tolerations and PodSet label in every pod template; a second job of the same
//! ClusterQueue waits with Kueue's message; once the first finishes (a batch Job really runs
//! and completes on a kwok node, the other kinds' status is moved by the test, playing their
//! operator; a RayCluster never finishes and is deleted instead) its quota is released and the
//! second job starts.
//!
//! The jobs are the objects of `manifests/samples/`, moved into the test's namespace. One
//! `kuota serve` serves every test of this binary; each test has its own namespace, ClusterQueue
//! (quota for exactly one job of its kind) and LocalQueue.

mod common {
    pub mod json;
    pub mod timestamp;
    pub mod workload;
}

use std::{path::PathBuf, time::Duration};

use kube::{
    Api, Client,
    api::{DeleteParams, Patch, PatchParams, PostParams},
    core::DynamicObject,
};
use kuota::{
    api::{
        constants::{PODSET_LABEL, condition, reason},
        v1beta2::{ClusterQueue, LocalQueue, ResourceFlavor, Workload},
    },
    jobs::{
        self, BatchJob, JAX_JOB, JobFramework, JobSet, MPI_JOB, PADDLE_JOB, PYTORCH_JOB,
        RayCluster, RayJob, TF_JOB, XGBOOST_JOB, total_requests,
    },
    k8s::quantity::format_quantity,
};
use kuota_cluster::{
    KEEP_RUNNING_LABEL, KuotaProcess, TestCluster, TestNamespace, assert_success, eventually,
};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use tokio::sync::OnceCell;

use common::json::from_json;
use common::timestamp::now;
// `condition` here is Kuota's module of condition types.
use common::workload::condition as condition_of;

const WAIT: Duration = Duration::from_secs(60);
/// The flavor every test's ClusterQueue uses.
const FLAVOR: &str = "frameworks-on-demand";
/// The LocalQueue the samples name; each test creates it in its own namespace.
const SAMPLE_QUEUE: &str = "team-a";

fn toleration() -> Value {
    json!({"key": "example.com/dedicated", "operator": "Equal", "value": "batch", "effect": "NoSchedule"})
}

struct Harness {
    cluster: &'static TestCluster,
    kuota: KuotaProcess,
}

static HARNESS: OnceCell<Harness> = OnceCell::const_new();

/// The control plane with every CRD, the flavor, and `kuota serve` with all ten frameworks on.
async fn harness() -> &'static Harness {
    HARNESS
        .get_or_init(|| async {
            let cluster = TestCluster::shared().await;
            let plane = cluster.plane();
            plane
                .install_crds(&kuota::api::crds::all())
                .await
                .expect("Kueue CRDs");
            plane
                .install_crd_files(&yaml_files("dev/cluster/crds"))
                .await
                .expect("job CRDs");

            let flavors: Api<ResourceFlavor> = Api::all(cluster.client().await);
            let flavor = from_json(json!({
                "metadata": {"name": FLAVOR},
                "spec": {
                    "nodeLabels": {"instance-type": "on-demand"},
                    "tolerations": [toleration()],
                },
            }));
            flavors
                .create(&PostParams::default(), &flavor)
                .await
                .expect("create the flavor");

            let frameworks: Vec<&str> = jobs::FRAMEWORKS.iter().map(|f| f.name()).collect();
            let config = plane.dir().join("frameworks-config.yaml");
            std::fs::write(
                &config,
                format!(
                    "apiVersion: config.kueue.x-k8s.io/v1beta2\nkind: Configuration\nintegrations:\n  frameworks: {}\n",
                    serde_json::to_string(&frameworks).expect("names")
                ),
            )
            .expect("write the configuration");
            let config = config.display().to_string();
            let kuota = plane
                .start_kuota(
                    std::path::Path::new(env!("CARGO_BIN_EXE_kuota")),
                    &["--config", &config],
                )
                .await
                .expect("kuota serve starts");
            Harness { cluster, kuota }
        })
        .await
}

fn yaml_files(dir: &str) -> Vec<PathBuf> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(dir);
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("directory")
        .map(|entry| entry.expect("entry").path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "yaml"))
        .collect();
    files.sort();
    files
}

/// The objects of a YAML file, as JSON.
fn documents(path: &std::path::Path) -> Vec<Value> {
    let text = std::fs::read_to_string(path).expect("YAML file");
    kuota::k8s::yaml::documents(&text).expect("YAML documents")
}

/// The first object of `kind` in `manifests/samples/<file>`.
fn sample(file: &str, kind: &str) -> Value {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("manifests/samples")
        .join(file);
    documents(&path)
        .into_iter()
        .find(|object| object["kind"] == kind)
        .unwrap_or_else(|| panic!("{} has no {kind}", path.display()))
}

/// How the test ends the first job, as its operator (or its user) would.
enum Finish {
    /// A batch Job: its pods complete under kwok once the keeprunning label is removed.
    PodsComplete,
    /// Merge this into the job's status.
    Status(Value),
    /// A RayCluster never finishes: delete it.
    Delete,
}

struct Case {
    framework: &'static dyn JobFramework,
    sample_file: &'static str,
    finish: Finish,
}

/// A `Succeeded=True` condition as the Kubeflow operators write it.
fn kubeflow_succeeded(kind: &str) -> Finish {
    Finish::Status(json!({"conditions": [{
        "type": "Succeeded",
        "status": "True",
        "reason": format!("{kind}Succeeded"),
        "message": format!("{kind} completed successfully."),
        "lastUpdateTime": now(),
        "lastTransitionTime": now(),
    }]}))
}

#[tokio::test]
async fn batch_job() {
    run(Case {
        framework: &BatchJob,
        sample_file: "40-jobs.yaml",
        finish: Finish::PodsComplete,
    })
    .await;
}

#[tokio::test]
async fn jobset() {
    run(Case {
        framework: &JobSet,
        sample_file: "50-jobset.yaml",
        finish: Finish::Status(json!({"conditions": [{
            "type": "Completed",
            "status": "True",
            "reason": "AllJobsCompleted",
            "message": "jobset completed successfully",
            "lastTransitionTime": now(),
        }]})),
    })
    .await;
}

#[tokio::test]
async fn rayjob() {
    run(Case {
        framework: &RayJob,
        sample_file: "51-rayjob.yaml",
        finish: Finish::Status(json!({
            "jobDeploymentStatus": "Complete",
            "jobStatus": "SUCCEEDED",
            "message": "Job finished successfully.",
        })),
    })
    .await;
}

#[tokio::test]
async fn raycluster() {
    run(Case {
        framework: &RayCluster,
        sample_file: "52-raycluster.yaml",
        finish: Finish::Delete,
    })
    .await;
}

#[tokio::test]
async fn mpijob() {
    run(Case {
        framework: &MPI_JOB,
        sample_file: "53-mpijob.yaml",
        finish: kubeflow_succeeded("MPIJob"),
    })
    .await;
}

#[tokio::test]
async fn pytorchjob() {
    run(Case {
        framework: &PYTORCH_JOB,
        sample_file: "54-pytorchjob.yaml",
        finish: kubeflow_succeeded("PyTorchJob"),
    })
    .await;
}

#[tokio::test]
async fn tfjob() {
    run(Case {
        framework: &TF_JOB,
        sample_file: "55-tfjob.yaml",
        finish: kubeflow_succeeded("TFJob"),
    })
    .await;
}

#[tokio::test]
async fn xgboostjob() {
    run(Case {
        framework: &XGBOOST_JOB,
        sample_file: "56-xgboostjob.yaml",
        finish: kubeflow_succeeded("XGBoostJob"),
    })
    .await;
}

#[tokio::test]
async fn paddlejob() {
    run(Case {
        framework: &PADDLE_JOB,
        sample_file: "57-paddlejob.yaml",
        finish: kubeflow_succeeded("PaddleJob"),
    })
    .await;
}

#[tokio::test]
async fn jaxjob() {
    run(Case {
        framework: &JAX_JOB,
        sample_file: "58-jaxjob.yaml",
        finish: kubeflow_succeeded("JAXJob"),
    })
    .await;
}

/// `kubectl apply -f manifests/samples/` (queues, four batch Jobs and a job of every other
/// kind) with every framework enabled: the requests are small enough that every job starts.
#[tokio::test]
async fn the_samples_directory_is_admitted() {
    let harness = harness().await;
    let samples = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("manifests/samples");
    let out = harness
        .cluster
        .kubectl()
        .args(["apply", "--server-side", "-f"])
        .arg(&samples)
        .output()
        .expect("kubectl");
    assert_success(&out);

    let client = harness.cluster.client().await;
    let sample_jobs: Vec<(&dyn JobFramework, String, String)> = yaml_files("manifests/samples")
        .iter()
        .flat_map(|path| documents(path))
        .filter_map(|object| {
            let api_version = object["apiVersion"].as_str()?;
            let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
            let framework = jobs::by_gvk(group, version, object["kind"].as_str()?)?;
            let namespace = object["metadata"]["namespace"].as_str()?.to_owned();
            let name = object["metadata"]["name"].as_str()?.to_owned();
            Some((framework, namespace, name))
        })
        .collect();
    assert_eq!(
        sample_jobs.len(),
        13,
        "4 batch Jobs and one job of every other kind"
    );
    let suspended = || async {
        let mut suspended = Vec::new();
        for (framework, namespace, name) in &sample_jobs {
            let jobs: Api<DynamicObject> =
                Api::namespaced_with(client.clone(), namespace, &framework.kind().api_resource());
            let job = jobs.get(name).await.expect("get sample job");
            if framework.is_suspended(&serde_json::to_value(job).expect("job JSON")) {
                suspended.push(format!("{}/{namespace}/{name}", framework.kind().kind));
            }
        }
        suspended
    };
    if let Err(error) = eventually(WAIT, "every sample job started", || async {
        suspended().await.is_empty()
    })
    .await
    {
        panic!(
            "{error}; still suspended: {:?}\nkuota log:\n{}",
            suspended().await,
            harness.kuota.process.log_tail(40)
        );
    }
}

/// One test's namespace, queues and clients.
struct Env {
    harness: &'static Harness,
    ns: TestNamespace,
    client: Client,
    framework: &'static dyn JobFramework,
    cluster_queue: String,
}

impl Env {
    fn jobs(&self) -> Api<DynamicObject> {
        Api::namespaced_with(
            self.client.clone(),
            self.ns.name(),
            &self.framework.kind().api_resource(),
        )
    }

    fn workloads(&self) -> Api<Workload> {
        Api::namespaced(self.client.clone(), self.ns.name())
    }

    async fn job(&self, name: &str) -> Value {
        let job = self.jobs().get(name).await.expect("get job");
        serde_json::to_value(job).expect("job JSON")
    }

    async fn workload(&self, name: &str) -> Option<Workload> {
        self.workloads().get_opt(name).await.expect("get Workload")
    }

    /// Waits until `probe` holds; panics with what was seen and the tail of kuota's log.
    async fn wait<F, Fut>(&self, what: &str, probe: F, seen: impl AsyncFnOnce() -> String)
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = bool>,
    {
        if let Err(error) = eventually(WAIT, what, probe).await {
            panic!(
                "{}: {error}\nseen: {}\nkuota log:\n{}",
                self.ns.name(),
                seen().await,
                self.harness.kuota.process.log_tail(40)
            );
        }
    }

    async fn wait_started(&self, name: &str) -> Value {
        let framework = self.framework;
        self.wait(
            &format!("{name} started"),
            || async { !framework.is_suspended(&self.job(name).await) },
            async || format!("{:#?}", self.workload_of(name).await.map(|w| w.status)),
        )
        .await;
        self.job(name).await
    }

    async fn workload_of(&self, name: &str) -> Option<Workload> {
        let job = self.job(name).await;
        self.workload(&jobs::workload_name_for(self.framework, &job))
            .await
    }

    async fn create(&self, job: &Value) -> Value {
        let object: DynamicObject = serde_json::from_value(job.clone()).expect("job object");
        let created = self
            .jobs()
            .create(&PostParams::default(), &object)
            .await
            .expect("create job");
        serde_json::to_value(created).expect("job JSON")
    }
}

/// The sample job named `name` in `namespace`; a batch Job is held Running by kwok.
fn job_from_sample(case: &Case, name: &str, namespace: &str) -> Value {
    let kind = case.framework.kind().kind;
    let mut job = sample(case.sample_file, kind);
    assert_eq!(
        job.pointer("/metadata/labels/kueue.x-k8s.io~1queue-name"),
        Some(&json!(SAMPLE_QUEUE)),
        "the sample {kind} is queued"
    );
    job["metadata"]["name"] = json!(name);
    job["metadata"]["namespace"] = json!(namespace);
    if matches!(case.finish, Finish::PodsComplete) {
        job["spec"]["template"]["metadata"]["labels"][KEEP_RUNNING_LABEL] = json!("true");
    }
    job
}

/// Milli-cpu of one PodSet, as its Workload accounts it.
fn pod_set_cpu(pod_set: &jobs::PodSet) -> i64 {
    total_requests(pod_set, &[]).expect("requests")["cpu"]
}

/// Milli-cpu of the whole job.
fn job_cpu(framework: &dyn JobFramework, job: &Value) -> i64 {
    framework
        .pod_sets(job)
        .expect("PodSets")
        .iter()
        .map(pod_set_cpu)
        .sum()
}

fn is_true(workload: &Workload, type_: &str) -> bool {
    condition_of(workload, type_).is_some_and(|c| c.status == "True")
}

/// Kueue's message for a job that finds its ClusterQueue's quota (exactly one such job) in use.
/// Preemption within the queue could make room (the nominal quota covers the job), so every
/// PodSet gets the preempting mode and its own reason, counting the cpu of the PodSets before
/// it; no workload may be preempted, so the job waits.
fn waiting_message(framework: &dyn JobFramework, job: &Value) -> String {
    let pod_sets = framework.pod_sets(job).expect("PodSets");
    let mut cumulative_cpu = 0;
    pod_sets
        .iter()
        .map(|pod_set| {
            cumulative_cpu += pod_set_cpu(pod_set);
            format!(
                "couldn't assign flavors to pod set {}: insufficient unused quota for cpu in flavor {FLAVOR}, {} more needed",
                pod_set.name,
                format_quantity("cpu", cumulative_cpu).0
            )
        })
        .collect::<Vec<_>>()
        .join("; ")
}

/// Every pod template of the started job carries the flavor and its PodSet's label.
fn assert_started_on_flavor(framework: &dyn JobFramework, job: &Value) {
    assert!(!framework.is_suspended(job));
    let pointers = framework.template_pointers(job).expect("template pointers");
    let pod_sets = framework.pod_sets(job).expect("PodSets");
    assert_eq!(pointers.len(), pod_sets.len());
    assert!(!pointers.is_empty());
    for (pointer, pod_set) in pointers.iter().zip(&pod_sets) {
        let template = job.pointer(pointer).expect("template");
        assert_eq!(
            template.pointer("/spec/nodeSelector"),
            Some(&json!({"instance-type": "on-demand"})),
            "nodeSelector of {pointer}"
        );
        assert_eq!(
            template.pointer("/spec/tolerations"),
            Some(&json!([toleration()])),
            "tolerations of {pointer}"
        );
        assert_eq!(
            template["metadata"]["labels"][PODSET_LABEL],
            json!(pod_set.name),
            "PodSet label of {pointer}"
        );
    }
}

async fn run(case: Case) {
    let harness = harness().await;
    let cluster = harness.cluster;
    let ns = cluster.namespace().await;
    let client = cluster.client().await;
    let framework = case.framework;
    let cluster_queue = format!("{}-cq", ns.name());
    let env = Env {
        harness,
        client: client.clone(),
        framework,
        cluster_queue: cluster_queue.clone(),
        ns,
    };
    let namespace = env.ns.name().to_owned();
    let first = job_from_sample(&case, "first", &namespace);
    let second = job_from_sample(&case, "second", &namespace);

    // Quota for exactly one job: all of its cpu, memory to spare.
    let job_cpu = job_cpu(framework, &first);
    assert!(job_cpu > 0, "the sample requests cpu");
    let cluster_queues: Api<ClusterQueue> = Api::all(client.clone());
    let cq: ClusterQueue = from_json(json!({
        "metadata": {"name": cluster_queue},
        "spec": {
            "namespaceSelector": {},
            "resourceGroups": [{
                "coveredResources": ["cpu", "memory"],
                "flavors": [{"name": FLAVOR, "resources": [
                    {"name": "cpu", "nominalQuota": format_quantity("cpu", job_cpu)},
                    {"name": "memory", "nominalQuota": "64Gi"},
                ]}],
            }],
        },
    }));
    cluster_queues
        .create(&PostParams::default(), &cq)
        .await
        .expect("create the ClusterQueue");
    let local_queues: Api<LocalQueue> = Api::namespaced(client.clone(), &namespace);
    let lq: LocalQueue = from_json(json!({
        "metadata": {"name": SAMPLE_QUEUE},
        "spec": {"clusterQueue": cluster_queue},
    }));
    local_queues
        .create(&PostParams::default(), &lq)
        .await
        .expect("create the LocalQueue");

    // The first job is stored suspended, then started on the flavor.
    let created = env.create(&first).await;
    assert!(
        framework.is_suspended(&created),
        "stored suspended at {}",
        framework.suspend_pointer()
    );
    let first_workload = jobs::workload_name_for(framework, &created);
    let started = env.wait_started("first").await;
    assert_started_on_flavor(framework, &started);
    let workload = env.workload(&first_workload).await.expect("first Workload");
    assert!(is_true(&workload, condition::QUOTA_RESERVED));
    assert!(is_true(&workload, condition::ADMITTED));
    assert_eq!(
        workload
            .status
            .as_ref()
            .and_then(|s| s.admission.as_ref())
            .map(|a| a.cluster_queue.as_str()),
        Some(cluster_queue.as_str())
    );

    // The second waits: no quota left.
    let created = env.create(&second).await;
    assert!(framework.is_suspended(&created), "stored suspended");
    let second_workload = jobs::workload_name_for(framework, &created);
    let expected_message = waiting_message(framework, &created);
    env.wait(
        "second Workload QuotaReserved=False",
        || async {
            env.workload(&second_workload)
                .await
                .as_ref()
                .and_then(|w| condition_of(w, condition::QUOTA_RESERVED))
                .is_some_and(|c| c.status == "False" && c.message == expected_message)
        },
        async || {
            format!(
                "{:#?}",
                env.workload(&second_workload).await.map(|w| w.status)
            )
        },
    )
    .await;
    let waiting = env
        .workload(&second_workload)
        .await
        .expect("second Workload");
    let quota_reserved = condition_of(&waiting, condition::QUOTA_RESERVED).expect("condition");
    assert_eq!(quota_reserved.reason, reason::WAITING_FOR_QUOTA);
    assert!(framework.is_suspended(&env.job("second").await));

    // The first finishes (or goes away); its quota goes to the second.
    match &case.finish {
        Finish::PodsComplete => finish_batch_job(&env, "first").await,
        Finish::Status(status) => {
            env.jobs()
                .patch_status(
                    "first",
                    &PatchParams::default(),
                    &Patch::Merge(json!({"status": status})),
                )
                .await
                .expect("move the job's status");
        }
        Finish::Delete => {
            env.jobs()
                .delete("first", &DeleteParams::background())
                .await
                .expect("delete the job");
        }
    }
    match &case.finish {
        Finish::Delete => {
            env.wait(
                "first Workload deleted with its job",
                || async { env.workload(&first_workload).await.is_none() },
                async || format!("{:#?}", env.workload(&first_workload).await),
            )
            .await;
        }
        Finish::PodsComplete | Finish::Status(_) => {
            env.wait(
                "first Workload Finished",
                || async {
                    env.workload(&first_workload)
                        .await
                        .is_some_and(|w| is_true(&w, condition::FINISHED))
                },
                async || {
                    format!(
                        "{:#?}",
                        env.workload(&first_workload).await.map(|w| w.status)
                    )
                },
            )
            .await;
            let finished_job = env.job("first").await;
            let job_end = framework.finished(&finished_job).expect("the job finished");
            let workload = env.workload(&first_workload).await.expect("first Workload");
            let finished = condition_of(&workload, condition::FINISHED).expect("Finished");
            assert_eq!(
                (finished.reason.as_str(), finished.message.as_str()),
                (reason::SUCCEEDED, job_end.message.as_str())
            );
        }
    }
    let started = env.wait_started("second").await;
    assert_started_on_flavor(framework, &started);

    // The ClusterQueue holds exactly the second job's quota.
    env.wait(
        "the ClusterQueue reserves one job's cpu",
        || async {
            let Ok(cq) = cluster_queues.get(&env.cluster_queue).await else {
                return false;
            };
            let status = serde_json::to_value(cq.status).expect("status");
            status["reservingWorkloads"] == json!(1)
                && status["flavorsReservation"][0]["resources"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .any(|r| {
                        r["name"] == "cpu" && r["total"] == json!(format_quantity("cpu", job_cpu).0)
                    })
        },
        async || {
            format!(
                "{:#?}",
                cluster_queues
                    .get(&env.cluster_queue)
                    .await
                    .map(|cq| cq.status)
            )
        },
    )
    .await;
}

/// The batch Job's pods run on the flavor's node until the keeprunning label is removed; then
/// they complete and so does the Job.
async fn finish_batch_job(env: &Env, name: &str) {
    let pods: Api<k8s_openapi::api::core::v1::Pod> =
        Api::namespaced(env.client.clone(), env.ns.name());
    let selector =
        kube::api::ListParams::default().labels(&format!("batch.kubernetes.io/job-name={name}"));
    let parallelism = env.job(name).await["spec"]["parallelism"]
        .as_u64()
        .expect("parallelism") as usize;
    env.wait(
        "the pods run on the on-demand node",
        || async {
            pods.list(&selector).await.is_ok_and(|list| {
                list.items.len() == parallelism
                    && list.items.iter().all(|pod| {
                        pod.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Running")
                            && pod.spec.as_ref().and_then(|s| s.node_name.as_deref())
                                == Some("kwok-on-demand-0")
                    })
            })
        },
        async || {
            format!(
                "{:#?}",
                pods.list(&selector).await.map(|l| l
                    .items
                    .into_iter()
                    .map(|p| (
                        p.spec.and_then(|s| s.node_name),
                        p.status.and_then(|s| s.phase)
                    ))
                    .collect::<Vec<_>>())
            )
        },
    )
    .await;
    env.harness
        .cluster
        .release_keep_running(env.ns.name(), name);
}
