//! System acceptance of the admitter: the real `kuota serve` binary against the real control
//! plane, batch Jobs submitted with `kubectl create`, and what happens checked through the API
//! and through `kubectl get` / `kubectl describe`, as a Kueue user would look at it.
//!
//! One `kuota serve` runs for the whole binary (webhook configurations are cluster-wide); each
//! test names its cluster-scoped objects after its own namespace.

mod common {
    pub mod admitted;
    pub mod dev_tools;
    pub mod json;
    pub mod kueue;
    pub mod timestamp;
    pub mod workload;
}

use std::{
    collections::BTreeMap,
    io::Write,
    path::Path,
    process::{Command, Stdio},
    time::Duration,
};

use k8s_openapi::api::{
    batch::v1::Job,
    core::v1::{Pod, PodTemplate},
};
use kube::{
    Api, Client, ResourceExt,
    api::{ListParams, Patch, PatchParams, PostParams},
};
use kuota::admitter::provisioning::request::ProvisioningRequest;
use kuota::api::constants::{MAX_EXEC_TIME_SECONDS_LABEL, PRIORITY_CLASS_LABEL, QUEUE_NAME_LABEL};
use kuota::api::v1beta2::{
    AdmissionCheck, ClusterQueue, LocalQueue, ProvisioningRequestConfig, ResourceFlavor, Workload,
    WorkloadPriorityClass,
};
use kuota_cluster::{
    KEEP_RUNNING_LABEL, KuotaProcess, TestCluster, TestNamespace, delete_ignoring_missing,
    eventually, job_is_complete,
};
use serde_json::{Value, json};
use tokio::sync::OnceCell;

use common::admitted::is_admitted;
use common::dev_tools::dev_script;
use common::json::from_json;
use common::kueue::{create_cluster_queue, create_flavor, create_local_queue, install_kueue_crds};
use common::workload::condition;

const WAIT: Duration = Duration::from_secs(60);

/// `kubectl get workloads` columns, as Kueue's printer columns.
const WORKLOAD_COLUMNS: [&str; 6] = [
    "NAME",
    "QUEUE",
    "RESERVED IN",
    "ADMITTED",
    "FINISHED",
    "AGE",
];
/// `kubectl get clusterqueues -o wide` columns.
const CLUSTER_QUEUE_WIDE_COLUMNS: [&str; 5] = [
    "NAME",
    "COHORT",
    "STRATEGY",
    "PENDING WORKLOADS",
    "ADMITTED WORKLOADS",
];

static KUOTA: OnceCell<KuotaProcess> = OnceCell::const_new();

/// The control plane with Kueue's CRDs and one `kuota serve` whose webhook the apiserver calls.
async fn system() -> &'static TestCluster {
    let cluster = TestCluster::shared().await;
    KUOTA
        .get_or_init(|| async {
            let plane = cluster.plane();
            install_kueue_crds(plane).await;
            let kuota = plane
                .start_kuota(Path::new(env!("CARGO_BIN_EXE_kuota")), &[])
                .await
                .expect("kuota serve starts");
            plane
                .register_visibility(kuota.visibility_port)
                .await
                .expect("the visibility API is registered");
            wait_for_job_webhook(cluster).await;
            kuota
        })
        .await;
    cluster
}

/// Waits until the apiserver calls Kuota's job webhooks: a dry-run Job naming a missing
/// LocalQueue is rejected (the configurations reach the apiserver's cache asynchronously).
async fn wait_for_job_webhook(cluster: &TestCluster) {
    let jobs: Api<Job> = Api::namespaced(cluster.client().await, "default");
    let probe: Job =
        serde_json::from_value(TestJob::new("webhook-probe", "no-such-queue", "100m").manifest())
            .expect("probe job");
    let dry_run = PostParams {
        dry_run: true,
        ..PostParams::default()
    };
    eventually(WAIT, "Kuota's job webhooks are called", || async {
        matches!(jobs.create(&dry_run, &probe).await, Err(kube::Error::Api(status)) if status.code == 403)
    })
    .await
    .expect("the webhook rejects a Job naming a missing LocalQueue");
}

/// A batch Job as a user writes it: one pod requesting `cpu`, labelled with its queue.
#[derive(Clone, Debug)]
struct TestJob {
    name: String,
    queue: String,
    cpu: String,
    priority_class: Option<String>,
    max_execution_seconds: Option<u32>,
    keep_running: bool,
}

impl TestJob {
    fn new(name: &str, queue: &str, cpu: &str) -> Self {
        TestJob {
            name: name.to_owned(),
            queue: queue.to_owned(),
            cpu: cpu.to_owned(),
            priority_class: None,
            max_execution_seconds: None,
            keep_running: false,
        }
    }

    /// The Workload gets the priority of this WorkloadPriorityClass.
    fn priority(mut self, class: &str) -> Self {
        self.priority_class = Some(class.to_owned());
        self
    }

    /// Kueue's `kueue.x-k8s.io/max-exec-time-seconds` label.
    fn max_execution_seconds(mut self, seconds: u32) -> Self {
        self.max_execution_seconds = Some(seconds);
        self
    }

    /// The pod keeps running (holding quota) until [`Env::finish`].
    fn keep_running(mut self) -> Self {
        self.keep_running = true;
        self
    }

    fn manifest(&self) -> Value {
        let mut labels = json!({QUEUE_NAME_LABEL: self.queue});
        if let Some(class) = &self.priority_class {
            labels[PRIORITY_CLASS_LABEL] = json!(class);
        }
        if let Some(seconds) = self.max_execution_seconds {
            labels[MAX_EXEC_TIME_SECONDS_LABEL] = json!(seconds.to_string());
        }
        let mut pod_labels = json!({"app": self.name});
        if self.keep_running {
            pod_labels[KEEP_RUNNING_LABEL] = json!("true");
        }
        json!({
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": {"name": self.name, "labels": labels},
            "spec": {
                "parallelism": 1,
                "completions": 1,
                "template": {
                    "metadata": {"labels": pod_labels},
                    "spec": {
                        "restartPolicy": "Never",
                        "containers": [{
                            "name": "main",
                            "image": "busybox",
                            "resources": {"requests": {"cpu": self.cpu}},
                        }],
                    },
                },
            },
        })
    }
}

/// One test's namespace, client and the cluster-scoped objects it created.
struct Env {
    cluster: &'static TestCluster,
    ns: TestNamespace,
    client: Client,
    cluster_scoped: Vec<ClusterScoped>,
}

enum ClusterScoped {
    Flavor(String),
    ClusterQueue(String),
    PriorityClass(String),
    AdmissionCheck(String),
}

async fn env() -> Env {
    let cluster = system().await;
    let ns = cluster.namespace().await;
    let client = cluster.client().await;
    Env {
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

    /// A ResourceFlavor for the kwok node pool labelled `instance-type: <pool>`.
    async fn flavor(&mut self, pool: &str) -> String {
        let name = self.name(pool);
        create_flavor(
            &self.client,
            &name,
            json!({"nodeLabels": {"instance-type": pool}}),
        )
        .await;
        self.cluster_scoped
            .push(ClusterScoped::Flavor(name.clone()));
        name
    }

    /// A ClusterQueue for every namespace whose cpu quota is `flavors` (name, nominal quota);
    /// `spec` adds fields.
    async fn cluster_queue(&mut self, base: &str, flavors: &[(&str, &str)], spec: Value) -> String {
        let name = self.name(base);
        create_cluster_queue(&self.client, &name, flavors, spec).await;
        self.cluster_scoped
            .push(ClusterScoped::ClusterQueue(name.clone()));
        name
    }

    async fn local_queue(&self, name: &str, cluster_queue: &str) {
        create_local_queue(&self.client, self.ns.name(), name, cluster_queue).await;
    }

    async fn priority_class(&mut self, base: &str, value: i32) -> String {
        let name = self.name(base);
        let api: Api<WorkloadPriorityClass> = Api::all(self.client.clone());
        api.create(
            &PostParams::default(),
            &from_json(json!({"metadata": {"name": name}, "value": value})),
        )
        .await
        .expect("create workload priority class");
        self.cluster_scoped
            .push(ClusterScoped::PriorityClass(name.clone()));
        name
    }

    /// An AdmissionCheck run by a controller this test plays; inactive until
    /// [`Env::set_check_active`].
    async fn admission_check(&mut self, base: &str) -> String {
        let name = self.name(base);
        let api: Api<AdmissionCheck> = Api::all(self.client.clone());
        api.create(
            &PostParams::default(),
            &from_json(json!({"metadata": {"name": name}, "spec": {"controllerName": "kuota.test/played"}})),
        )
        .await
        .expect("create admission check");
        self.cluster_scoped
            .push(ClusterScoped::AdmissionCheck(name.clone()));
        name
    }

    /// Flavor `on-demand`, a ClusterQueue with 2 cpu of it whose admission `check` gates, and
    /// LocalQueue `lq`; returns the ClusterQueue.
    async fn checked_queue(&mut self, check: &str) -> String {
        let flavor = self.flavor("on-demand").await;
        let cq = self
            .cluster_queue(
                "cq",
                &[(flavor.as_str(), "2")],
                json!({"admissionChecksStrategy": {"admissionChecks": [{"name": check}]}}),
            )
            .await;
        self.local_queue("lq", &cq).await;
        cq
    }

    /// What the check's controller reports: its `Active` condition.
    async fn set_check_active(&self, name: &str) {
        let api: Api<AdmissionCheck> = Api::all(self.client.clone());
        let status = json!({"status": {"conditions": [{
            "type": "Active", "status": "True", "reason": "Active",
            "message": "The admission check is active", "lastTransitionTime": common::timestamp::now(),
        }]}});
        api.patch_status(name, &PatchParams::default(), &Patch::Merge(&status))
            .await
            .expect("activate admission check");
    }

    /// What the check's controller decides for a Workload: one check's state and message
    /// (written against the latest version, again when Kuota wrote in between).
    async fn set_check_state(
        &self,
        workload: &str,
        check: &str,
        (state, message): (&str, &str),
        requeue_after_seconds: Option<i32>,
    ) {
        for _ in 0..20 {
            let current = self.workloads().get(workload).await.expect("get workload");
            let mut checks: Vec<Value> = current
                .status
                .iter()
                .flat_map(|status| &status.admission_checks)
                .map(|state| serde_json::to_value(state).expect("check state"))
                .collect();
            for entry in &mut checks {
                if entry["name"] == check {
                    entry["state"] = json!(state);
                    entry["message"] = json!(message);
                    entry["lastTransitionTime"] = json!(common::timestamp::now());
                    if let Some(seconds) = requeue_after_seconds {
                        entry["requeueAfterSeconds"] = json!(seconds);
                    }
                }
            }
            let body = json!({
                "metadata": {"resourceVersion": current.resource_version()},
                "status": {"admissionChecks": checks},
            });
            match self
                .workloads()
                .patch_status(workload, &PatchParams::default(), &Patch::Merge(&body))
                .await
            {
                Ok(_) => return,
                Err(kube::Error::Api(status)) if status.code == 409 => {
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
                Err(error) => panic!("cannot set check {check} of {workload}: {error}"),
            }
        }
        panic!("the status of {workload} kept conflicting");
    }

    /// A flavor, a ClusterQueue with `cpu` of it and LocalQueue `lq`, and Job `first` (one
    /// cpu) admitted and running; returns the ClusterQueue.
    async fn first_job_running(&mut self, cpu: &str) -> String {
        let flavor = self.flavor("on-demand").await;
        let cq = self
            .cluster_queue("cq", &[(flavor.as_str(), cpu)], json!({}))
            .await;
        self.local_queue("lq", &cq).await;
        self.submit(&TestJob::new("first", "lq", "1").keep_running());
        self.wait_for_workload("first", "admitted", is_admitted)
            .await;
        self.wait_until_running("first").await;
        cq
    }

    /// Runs kubectl in the test namespace, feeding `stdin`; returns stdout, fails on an error.
    fn kubectl(&self, args: &[&str], stdin: Option<&str>) -> String {
        let mut command: Command = self.cluster.kubectl();
        command
            .args(["-n", self.ns.name()])
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = command.spawn().expect("run kubectl");
        let mut input = child.stdin.take().expect("kubectl stdin");
        input
            .write_all(stdin.unwrap_or_default().as_bytes())
            .expect("write kubectl stdin");
        drop(input);
        let output = child.wait_with_output().expect("kubectl output");
        assert!(
            output.status.success(),
            "kubectl {args:?}: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
        if matches!(args.first(), Some(&"get" | &"describe")) {
            // Shown with `--nocapture`: what a user sees.
            println!("$ kubectl {}\n{stdout}", args.join(" "));
        }
        stdout
    }

    /// Runs Kueue's own kubectl plugin (`kubectl kueue`, built from the pinned release) in the
    /// test namespace; returns stdout, fails on an error.
    fn kueuectl(&self, args: &[&str]) -> String {
        static PLUGIN: std::sync::OnceLock<std::path::PathBuf> = std::sync::OnceLock::new();
        let plugin = PLUGIN.get_or_init(|| dev_script("dev/kueue/build.sh", &["kueuectl"]));
        let output = Command::new(plugin)
            .arg("--kubeconfig")
            .arg(self.cluster.plane().kubeconfig())
            .args(["-n", self.ns.name()])
            .args(args)
            .output()
            .expect("run kubectl-kueue");
        assert!(
            output.status.success(),
            "kubectl kueue {args:?}: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
        println!("$ kubectl kueue {}\n{stdout}", args.join(" "));
        stdout
    }

    /// `kubectl create -f -` with the Job's manifest.
    fn submit(&self, job: &TestJob) {
        let manifest = job.manifest().to_string();
        let out = self.kubectl(&["create", "-f", "-"], Some(&manifest));
        assert_eq!(out.trim(), format!("job.batch/{} created", job.name));
    }

    /// Lets a keep-running Job's pod complete, once it runs.
    async fn finish(&self, job: &str) {
        self.wait_until_running(job).await;
        self.kubectl(
            &[
                "label",
                "pods",
                "-l",
                &format!("batch.kubernetes.io/job-name={job}"),
                &format!("{KEEP_RUNNING_LABEL}-"),
            ],
            None,
        );
    }

    fn jobs(&self) -> Api<Job> {
        Api::namespaced(self.client.clone(), self.ns.name())
    }

    fn workloads(&self) -> Api<Workload> {
        Api::namespaced(self.client.clone(), self.ns.name())
    }

    async fn job(&self, name: &str) -> Job {
        self.jobs().get(name).await.expect("get job")
    }

    /// The name of the Workload Kuota creates for the Job.
    async fn workload_name(&self, job: &str) -> String {
        let job = self.job(job).await;
        kuota::jobs::workload_name("Job", "batch", &job.name_any(), &job.uid().expect("uid"))
    }

    async fn workload(&self, job: &str) -> Workload {
        let name = self.workload_name(job).await;
        self.workloads().get(&name).await.expect("get workload")
    }

    /// Waits until the Job's Workload satisfies `probe` and returns it.
    async fn wait_for_workload(
        &self,
        job: &str,
        what: &str,
        probe: impl Fn(&Workload) -> bool,
    ) -> Workload {
        let name = self.workload_name(job).await;
        let workloads = self.workloads();
        let result = eventually(WAIT, &format!("{job}: {what}"), || {
            let workloads = workloads.clone();
            let (name, probe) = (&name, &probe);
            async move { workloads.get(name).await.ok().is_some_and(|w| probe(&w)) }
        })
        .await;
        match result {
            Ok(()) => self.workloads().get(&name).await.expect("get workload"),
            Err(error) => panic!(
                "{error}; workload: {:#?}",
                self.workloads()
                    .get_opt(&name)
                    .await
                    .ok()
                    .flatten()
                    .and_then(|w| w.status)
            ),
        }
    }

    /// Waits until the Job's Workload is inactive with its quota released.
    async fn wait_until_deactivated(&self, job: &str) -> Workload {
        self.wait_for_workload(job, "deactivated and released", |w| {
            w.spec.active == Some(false)
                && condition(w, "QuotaReserved").is_some_and(|c| c.status == "False")
        })
        .await
    }

    async fn wait_for_job(&self, job: &str, what: &str, probe: impl Fn(&Job) -> bool) -> Job {
        let jobs = self.jobs();
        let result = eventually(WAIT, &format!("job {job}: {what}"), || {
            let jobs = jobs.clone();
            let probe = &probe;
            async move { jobs.get(job).await.ok().is_some_and(|j| probe(&j)) }
        })
        .await;
        match result {
            Ok(()) => self.job(job).await,
            Err(error) => panic!("{error}; job: {:#?}", self.job(job).await),
        }
    }

    /// The Job's pods.
    async fn pods(&self, job: &str) -> Vec<Pod> {
        let pods: Api<Pod> = Api::namespaced(self.client.clone(), self.ns.name());
        pods.list(&ListParams::default().labels(&format!("batch.kubernetes.io/job-name={job}")))
            .await
            .expect("list pods")
            .items
    }

    /// Waits until the Job's one pod is Running and returns the node it runs on.
    async fn wait_until_running(&self, job: &str) -> String {
        let pods: Api<Pod> = Api::namespaced(self.client.clone(), self.ns.name());
        let selector = ListParams::default().labels(&format!("batch.kubernetes.io/job-name={job}"));
        eventually(WAIT, &format!("{job}: pod Running"), || async {
            pods.list(&selector)
                .await
                .ok()
                .is_some_and(|list| list.items.iter().any(is_running))
        })
        .await
        .expect("the job's pod runs");
        let running: Vec<String> = self
            .pods(job)
            .await
            .into_iter()
            .filter(is_running)
            .filter_map(|p| p.spec.and_then(|s| s.node_name))
            .collect();
        match running.as_slice() {
            [node] => node.clone(),
            other => panic!("{job}: expected one running pod, got nodes {other:?}"),
        }
    }

    /// Waits until every pod of the Job is being deleted (or gone).
    async fn wait_until_pods_gone(&self, job: &str) {
        let pods: Api<Pod> = Api::namespaced(self.client.clone(), self.ns.name());
        let selector = ListParams::default().labels(&format!("batch.kubernetes.io/job-name={job}"));
        eventually(WAIT, &format!("{job}: pods gone"), || async {
            pods.list(&selector).await.is_ok_and(|list| {
                list.items
                    .iter()
                    .all(|p| p.metadata.deletion_timestamp.is_some())
            })
        })
        .await
        .expect("the stopped job's pods are deleted");
    }

    /// Waits until the object's `status` satisfies `probe`.
    async fn wait_for_status<K>(
        &self,
        api: &Api<K>,
        name: &str,
        what: &str,
        probe: impl Fn(&Value) -> bool,
    ) where
        K: kube::Resource
            + Clone
            + serde::de::DeserializeOwned
            + serde::Serialize
            + std::fmt::Debug,
    {
        let status = || async {
            api.get(name)
                .await
                .ok()
                .and_then(|object| serde_json::to_value(object).ok())
                .map(|object| object["status"].clone())
                .unwrap_or_default()
        };
        let result = eventually(WAIT, &format!("{name}: {what}"), || async {
            probe(&status().await)
        })
        .await;
        if let Err(error) = result {
            panic!("{error}; status: {:#}", status().await);
        }
    }

    /// `kubectl get ...` as its headers and its rows of cells.
    fn table(&self, args: &[&str]) -> (Vec<String>, Vec<Vec<String>>) {
        parse_table(&self.kubectl(args, None))
    }

    async fn cleanup(self) {
        let flavors: Api<ResourceFlavor> = Api::all(self.client.clone());
        let queues: Api<ClusterQueue> = Api::all(self.client.clone());
        let classes: Api<WorkloadPriorityClass> = Api::all(self.client.clone());
        let checks: Api<AdmissionCheck> = Api::all(self.client.clone());
        for object in &self.cluster_scoped {
            let deleted = match object {
                ClusterScoped::Flavor(name) => delete_ignoring_missing(&flavors, name).await,
                ClusterScoped::ClusterQueue(name) => delete_ignoring_missing(&queues, name).await,
                ClusterScoped::PriorityClass(name) => delete_ignoring_missing(&classes, name).await,
                ClusterScoped::AdmissionCheck(name) => delete_ignoring_missing(&checks, name).await,
            };
            deleted.expect("delete a cluster-scoped object");
        }
    }
}

/// Splits kubectl's table output at the header's column offsets (headers such as
/// `RESERVED IN` contain single spaces; columns are separated by at least three).
fn parse_table(text: &str) -> (Vec<String>, Vec<Vec<String>>) {
    let mut lines = text.lines();
    let header = lines.next().unwrap_or_default();
    let mut columns: Vec<(usize, String)> = Vec::new();
    let mut start = None;
    let mut spaces = 0;
    for (i, ch) in header.char_indices() {
        if ch == ' ' {
            spaces += 1;
            continue;
        }
        if start.is_none() || spaces >= 2 {
            if let Some(begin) = start {
                columns.push((begin, header[begin..i].trim().to_owned()));
            }
            start = Some(i);
        }
        spaces = 0;
    }
    if let Some(begin) = start {
        columns.push((begin, header[begin..].trim().to_owned()));
    }
    let rows = lines
        .map(|line| {
            columns
                .iter()
                .enumerate()
                .map(|(i, (begin, _))| {
                    let end = columns.get(i + 1).map_or(line.len(), |(next, _)| *next);
                    let cell = line.get(*begin..end.min(line.len())).unwrap_or_default();
                    cell.trim().to_owned()
                })
                .collect()
        })
        .collect();
    (columns.into_iter().map(|(_, name)| name).collect(), rows)
}

/// `kubectl get workloads` rows without the AGE column (the last one).
fn without_age(rows: Vec<Vec<String>>) -> Vec<Vec<String>> {
    rows.into_iter()
        .map(|mut row| {
            row.pop();
            row
        })
        .collect()
}

/// The condition as (status, reason, message).
fn condition_triple(workload: &Workload, type_: &str) -> Option<(String, String, String)> {
    condition(workload, type_).map(|c| (c.status.clone(), c.reason.clone(), c.message.clone()))
}

/// `Admitted` of a workload whose quota was released.
fn no_reservation() -> Option<(String, String, String)> {
    Some((
        "False".into(),
        "NoReservation".into(),
        "The workload has no reservation".into(),
    ))
}

fn is_finished(workload: &Workload) -> bool {
    workload.is_condition_true("Finished")
}

fn waiting_for_quota(workload: &Workload) -> bool {
    condition(workload, "QuotaReserved")
        .is_some_and(|c| c.status == "False" && c.reason == "WaitingForQuota")
}

/// The flavor the Workload's one pod set got for cpu.
fn cpu_flavor(workload: &Workload) -> Option<String> {
    workload
        .status
        .as_ref()?
        .admission
        .as_ref()?
        .pod_set_assignments
        .first()?
        .flavors
        .get("cpu")
        .cloned()
}

/// Running and not being deleted.
fn is_running(pod: &Pod) -> bool {
    pod.metadata.deletion_timestamp.is_none()
        && pod.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Running")
}

fn is_suspended(job: &Job) -> bool {
    job.spec.as_ref().and_then(|s| s.suspend) == Some(true)
}

fn node_selector(job: &Job) -> BTreeMap<String, String> {
    job.spec
        .as_ref()
        .and_then(|s| s.template.spec.as_ref())
        .and_then(|s| s.node_selector.clone())
        .unwrap_or_default()
}

/// Lines of `kubectl describe` with runs of spaces collapsed, e.g. `Cluster Queue: cq`.
fn describe_lines(text: &str) -> Vec<String> {
    text.lines()
        .map(|line| line.split_whitespace().collect::<Vec<_>>().join(" "))
        .filter(|line| !line.is_empty())
        .collect()
}

fn assert_lines(lines: &[String], expected: &[String], what: &str) {
    let missing: Vec<&String> = expected.iter().filter(|l| !lines.contains(l)).collect();
    assert!(
        missing.is_empty(),
        "{what}: missing lines {missing:#?} in\n{}",
        lines.join("\n")
    );
}

#[tokio::test]
async fn jobs_fill_nominal_quota_then_borrow_in_the_cohort_and_finished_jobs_let_the_next_in() {
    let mut env = env().await;
    let on_demand = env.flavor("on-demand").await;
    let spot = env.flavor("spot").await;
    let cohort = env.name("cohort");
    let quota = [(on_demand.as_str(), "1"), (spot.as_str(), "1")];
    // TryNextFlavor: a job borrows only once no flavor has unused nominal quota left.
    let team_a = env
        .cluster_queue(
            "team-a",
            &quota,
            json!({"cohortName": cohort, "flavorFungibility": {"whenCanBorrow": "TryNextFlavor"}}),
        )
        .await;
    let team_b = env
        .cluster_queue("team-b", &quota, json!({"cohortName": cohort}))
        .await;
    env.local_queue("team-a", &team_a).await;
    env.local_queue("team-b", &team_b).await;

    // Nominal quota in both flavors first, then team-b's unused quota, flavor by flavor.
    let expected = [
        ("a-1", &on_demand, "on-demand"),
        ("a-2", &spot, "spot"),
        ("a-3", &on_demand, "on-demand"),
        ("a-4", &spot, "spot"),
    ];
    for (job, flavor, pool) in expected {
        env.submit(&TestJob::new(job, "team-a", "1").keep_running());
        let workload = env.wait_for_workload(job, "admitted", is_admitted).await;
        assert_eq!(cpu_flavor(&workload).as_ref(), Some(flavor), "{job}");
        assert_eq!(
            condition_triple(&workload, "QuotaReserved"),
            Some((
                "True".into(),
                "QuotaReserved".into(),
                format!("Quota reserved in ClusterQueue {team_a}")
            ))
        );
        assert_eq!(
            condition_triple(&workload, "Admitted"),
            Some((
                "True".into(),
                "Admitted".into(),
                "The workload is admitted".into()
            ))
        );
        let started = env.wait_for_job(job, "started", |j| !is_suspended(j)).await;
        assert_eq!(
            node_selector(&started),
            BTreeMap::from([("instance-type".to_owned(), pool.to_owned())])
        );
        assert_eq!(env.wait_until_running(job).await, format!("kwok-{pool}-0"));
    }

    env.submit(&TestJob::new("a-5", "team-a", "1").keep_running());
    env.submit(&TestJob::new("b-1", "team-b", "1").keep_running());
    let no_quota = format!(
        "couldn't assign flavors to pod set main: insufficient unused quota for cpu in flavor {on_demand}, 1 more needed, insufficient unused quota for cpu in flavor {spot}, 1 more needed"
    );
    for job in ["a-5", "b-1"] {
        let pending = env
            .wait_for_workload(job, "waiting for quota", waiting_for_quota)
            .await;
        assert_eq!(
            condition_triple(&pending, "QuotaReserved"),
            Some(("False".into(), "WaitingForQuota".into(), no_quota.clone())),
            "{job}"
        );
        assert!(is_suspended(&env.job(job).await), "{job} stays suspended");
        assert!(env.pods(job).await.is_empty(), "{job} has no pods");
    }

    let queues: Api<ClusterQueue> = Api::all(env.client.clone());
    let usage = |total: &str, borrowed: &str| {
        json!([
            {"name": on_demand, "resources": [{"name": "cpu", "total": total, "borrowed": borrowed}]},
            {"name": spot, "resources": [{"name": "cpu", "total": total, "borrowed": borrowed}]},
        ])
    };
    let expected_usage = usage("2", "1");
    env.wait_for_status(&queues, &team_a, "counts and borrowing", |s| {
        s["pendingWorkloads"] == 1
            && s["reservingWorkloads"] == 4
            && s["admittedWorkloads"] == 4
            && s["flavorsReservation"] == expected_usage
            && s["flavorsUsage"] == expected_usage
    })
    .await;
    env.wait_for_status(&queues, &team_b, "counts", |s| {
        s["pendingWorkloads"] == 1 && s["reservingWorkloads"] == 0
    })
    .await;
    let local_queues: Api<LocalQueue> = Api::namespaced(env.client.clone(), env.ns.name());
    for (queue, pending, admitted) in [("team-a", 1, 4), ("team-b", 1, 0)] {
        env.wait_for_status(&local_queues, queue, "counts", |s| {
            s["pendingWorkloads"] == pending && s["admittedWorkloads"] == admitted
        })
        .await;
    }

    let (headers, rows) = env.table(&["get", "clusterqueues", &team_a, &team_b]);
    assert_eq!(headers, ["NAME", "COHORT", "PENDING WORKLOADS"]);
    assert_eq!(
        rows,
        [
            [team_a.as_str(), cohort.as_str(), "1"],
            [team_b.as_str(), cohort.as_str(), "1"]
        ]
    );
    let (headers, rows) = env.table(&["get", "cq", &team_a, &team_b, "-o", "wide"]);
    assert_eq!(headers, CLUSTER_QUEUE_WIDE_COLUMNS);
    assert_eq!(
        rows,
        [
            [team_a.as_str(), cohort.as_str(), "BestEffortFIFO", "1", "4"],
            [team_b.as_str(), cohort.as_str(), "BestEffortFIFO", "1", "0"]
        ]
    );
    let (headers, rows) = env.table(&["get", "localqueues"]);
    assert_eq!(
        headers,
        [
            "NAME",
            "CLUSTERQUEUE",
            "PENDING WORKLOADS",
            "ADMITTED WORKLOADS"
        ]
    );
    assert_eq!(
        rows,
        [
            ["team-a", team_a.as_str(), "1", "4"],
            ["team-b", team_b.as_str(), "1", "0"]
        ]
    );

    let mut expected_rows = Vec::new();
    for job in ["a-1", "a-2", "a-3", "a-4"] {
        expected_rows.push(vec![
            env.workload_name(job).await,
            "team-a".to_owned(),
            team_a.clone(),
            "True".to_owned(),
            String::new(),
        ]);
    }
    expected_rows.push(vec![
        env.workload_name("a-5").await,
        "team-a".to_owned(),
        String::new(),
        String::new(),
        String::new(),
    ]);
    expected_rows.push(vec![
        env.workload_name("b-1").await,
        "team-b".to_owned(),
        String::new(),
        String::new(),
        String::new(),
    ]);
    expected_rows.sort();
    let (headers, rows) = env.table(&["get", "workloads"]);
    assert_eq!(headers, WORKLOAD_COLUMNS);
    let mut cells = without_age(rows);
    cells.sort();
    assert_eq!(cells, expected_rows);

    // a-3 borrowed team-b's on-demand cpu; when it finishes, team-b's own job goes first
    // (it needs no borrowing), and a-5 keeps waiting.
    env.finish("a-3").await;
    env.wait_for_job("a-3", "complete", job_is_complete).await;
    let finished = env.wait_for_workload("a-3", "finished", is_finished).await;
    assert_eq!(
        condition_triple(&finished, "Finished"),
        Some((
            "True".into(),
            "Succeeded".into(),
            "Reached expected number of succeeded pods".into()
        ))
    );
    let b1 = env.wait_for_workload("b-1", "admitted", is_admitted).await;
    assert_eq!(cpu_flavor(&b1).as_ref(), Some(&on_demand));
    assert_eq!(
        condition_triple(&b1, "QuotaReserved").map(|c| c.2),
        Some(format!("Quota reserved in ClusterQueue {team_b}"))
    );
    assert_eq!(env.wait_until_running("b-1").await, "kwok-on-demand-0");
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert!(waiting_for_quota(&env.workload("a-5").await));

    // a-1 held team-a's own on-demand cpu: a-5 takes it.
    env.finish("a-1").await;
    let a5 = env.wait_for_workload("a-5", "admitted", is_admitted).await;
    assert_eq!(cpu_flavor(&a5).as_ref(), Some(&on_demand));
    assert_eq!(env.wait_until_running("a-5").await, "kwok-on-demand-0");

    for job in ["a-2", "a-4", "a-5", "b-1"] {
        env.finish(job).await;
    }
    for job in ["a-1", "a-2", "a-3", "a-4", "a-5", "b-1"] {
        env.wait_for_job(job, "complete", job_is_complete).await;
        env.wait_for_workload(job, "finished", is_finished).await;
    }
    let released = usage("0", "0");
    env.wait_for_status(&queues, &team_a, "all quota released", |s| {
        s["pendingWorkloads"] == 0
            && s["reservingWorkloads"] == 0
            && s["flavorsReservation"] == released
    })
    .await;
    let (headers, rows) = env.table(&["get", "workloads"]);
    let finished = headers
        .iter()
        .position(|h| h == "FINISHED")
        .expect("FINISHED column");
    for row in &rows {
        assert_eq!(row[finished], "True", "{headers:?} {row:?}");
    }
    env.cleanup().await;
}

#[tokio::test]
async fn a_higher_priority_job_preempts_a_lower_one_whose_job_is_suspended_again() {
    let mut env = env().await;
    let flavor = env.flavor("on-demand").await;
    let low = env.priority_class("low", 100).await;
    let high = env.priority_class("high", 1000).await;
    let cq = env
        .cluster_queue(
            "cq",
            &[(flavor.as_str(), "2")],
            json!({"preemption": {"withinClusterQueue": "LowerPriority"}}),
        )
        .await;
    env.local_queue("lq", &cq).await;

    for job in ["low-1", "low-2"] {
        env.submit(&TestJob::new(job, "lq", "1").priority(&low).keep_running());
        let workload = env.wait_for_workload(job, "admitted", is_admitted).await;
        assert_eq!(workload.spec.priority, Some(100));
        env.wait_until_running(job).await;
        // Admission times have whole seconds: low-2 is strictly the most recently admitted.
        tokio::time::sleep(Duration::from_millis(1100)).await;
    }

    env.submit(
        &TestJob::new("high", "lq", "1")
            .priority(&high)
            .keep_running(),
    );
    let high_job = env.job("high").await;
    let high_workload = env.wait_for_workload("high", "created", |_| true).await;
    assert_eq!(high_workload.spec.priority, Some(1000));
    assert_eq!(
        serde_json::to_value(&high_workload.spec.priority_class_ref).expect("json"),
        json!({"group": "kueue.x-k8s.io", "kind": "WorkloadPriorityClass", "name": high})
    );

    // The most recently admitted of the lower-priority workloads is evicted ...
    let preemption = format!(
        "Preempted to accommodate a workload (UID: {}, JobUID: {}) due to prioritization in the ClusterQueue; preemptor path: /{cq}; preemptee path: /{cq}",
        high_workload.uid().expect("uid"),
        high_job.uid().expect("uid"),
    );
    let victim = env
        .wait_for_workload("low-2", "evicted", |w| w.is_condition_true("Evicted"))
        .await;
    assert_eq!(
        condition_triple(&victim, "Evicted"),
        Some(("True".into(), "Preempted".into(), preemption.clone()))
    );
    assert_eq!(
        condition_triple(&victim, "Preempted"),
        Some(("True".into(), "InClusterQueue".into(), preemption.clone()))
    );
    // ... its Job is suspended again with its pod template restored, its pod goes away ...
    env.wait_for_job("low-2", "suspended again, template restored", |job| {
        is_suspended(job)
            && node_selector(job).is_empty()
            && !job.annotations().contains_key("kueue.x-k8s.io/stopping")
            && job.status.as_ref().is_some_and(|s| s.start_time.is_none())
    })
    .await;
    env.wait_until_pods_gone("low-2").await;
    // ... its quota is released and it queues again, while the preemptor runs.
    let requeued = env
        .wait_for_workload("low-2", "requeued and waiting", |w| {
            waiting_for_quota(w) && w.status.as_ref().is_some_and(|s| s.admission.is_none())
        })
        .await;
    assert_eq!(
        condition_triple(&requeued, "Requeued"),
        Some(("True".into(), "Preempted".into(), preemption.clone()))
    );
    assert_eq!(condition_triple(&requeued, "Admitted"), no_reservation());
    let admitted = env.wait_for_workload("high", "admitted", is_admitted).await;
    assert_eq!(env.wait_until_running("high").await, "kwok-on-demand-0");
    assert!(
        is_admitted(&env.workload("low-1").await),
        "low-1 keeps running"
    );
    assert!(!is_suspended(&env.job("low-1").await));

    let (headers, rows) = env.table(&["get", "workloads"]);
    assert_eq!(headers, WORKLOAD_COLUMNS);
    let mut cells = without_age(rows);
    cells.sort();
    let mut expected = vec![
        vec![
            env.workload_name("low-1").await,
            "lq".into(),
            cq.clone(),
            "True".into(),
            String::new(),
        ],
        vec![
            victim.name_any(),
            "lq".into(),
            String::new(),
            "False".into(),
            String::new(),
        ],
        vec![
            admitted.name_any(),
            "lq".into(),
            cq.clone(),
            "True".into(),
            String::new(),
        ],
    ];
    expected.sort();
    assert_eq!(cells, expected);

    let described =
        describe_lines(&env.kubectl(&["describe", "workload", &admitted.name_any()], None));
    assert_lines(
        &described,
        &[
            format!("Name: {}", admitted.name_any()),
            "Kind: Workload".into(),
            "Admission:".into(),
            format!("Cluster Queue: {cq}"),
            format!("Cpu: {flavor}"),
            "Name: main".into(),
            "Count: 1".into(),
            format!("Message: Quota reserved in ClusterQueue {cq}"),
            "Reason: QuotaReserved".into(),
            "Type: QuotaReserved".into(),
            "Message: The workload is admitted".into(),
            "Type: Admitted".into(),
            "Priority: 1000".into(),
            "Queue Name: lq".into(),
        ],
        "kubectl describe of the preemptor",
    );
    let reserved_event = format!("Quota reserved in ClusterQueue {cq}, wait time since queued was");
    assert!(
        described
            .iter()
            .any(|l| l.starts_with("Normal QuotaReserved ") && l.contains(&reserved_event)),
        "QuotaReserved event in\n{}",
        described.join("\n")
    );
    let described =
        describe_lines(&env.kubectl(&["describe", "workload", &victim.name_any()], None));
    assert_lines(
        &described,
        &[
            format!("Message: {preemption}"),
            "Reason: Preempted".into(),
            "Type: Evicted".into(),
            "Reason: InClusterQueue".into(),
            "Type: Preempted".into(),
            "Type: Requeued".into(),
            "Reason: WaitingForQuota".into(),
            "Reason: NoReservation".into(),
        ],
        "kubectl describe of the preempted workload",
    );

    // When the preemptor finishes, the preempted job is admitted again and runs to the end.
    env.finish("high").await;
    let readmitted = env
        .wait_for_workload("low-2", "admitted again", is_admitted)
        .await;
    assert_eq!(cpu_flavor(&readmitted).as_ref(), Some(&flavor));
    assert_eq!(env.wait_until_running("low-2").await, "kwok-on-demand-0");
    env.finish("low-1").await;
    env.finish("low-2").await;
    for job in ["low-1", "low-2", "high"] {
        env.wait_for_job(job, "complete", job_is_complete).await;
        env.wait_for_workload(job, "finished", is_finished).await;
    }
    env.cleanup().await;
}

#[tokio::test]
async fn a_deactivated_job_stops_and_frees_its_quota_and_runs_again_once_reactivated() {
    let mut env = env().await;
    env.first_job_running("1").await;
    env.submit(&TestJob::new("second", "lq", "1").keep_running());
    env.wait_for_workload("second", "waiting for quota", waiting_for_quota)
        .await;

    let first = env.workload_name("first").await;
    let out = env.kueuectl(&["stop", "workload", &first]);
    assert_eq!(
        out.trim(),
        format!("workload.kueue.x-k8s.io/{first} stopped")
    );
    let deactivated = "The workload is deactivated";
    let stopped = env
        .wait_for_workload("first", "evicted and released", |w| {
            condition(w, "QuotaReserved").is_some_and(|c| c.status == "False")
        })
        .await;
    assert_eq!(
        condition_triple(&stopped, "Evicted"),
        Some(("True".into(), "Deactivated".into(), deactivated.into()))
    );
    assert_eq!(
        condition_triple(&stopped, "Requeued"),
        Some(("False".into(), "Deactivated".into(), deactivated.into()))
    );
    assert_eq!(condition_triple(&stopped, "Admitted"), no_reservation());
    assert_eq!(
        stopped.status.as_ref().and_then(|s| s.admission.as_ref()),
        None
    );
    env.wait_for_job("first", "suspended, template restored", |job| {
        is_suspended(job) && node_selector(job).is_empty()
    })
    .await;
    env.wait_until_pods_gone("first").await;
    // The freed quota lets the next job in.
    env.wait_for_workload("second", "admitted", is_admitted)
        .await;
    env.wait_until_running("second").await;
    let described = describe_lines(&env.kubectl(&["describe", "workload", &first], None));
    assert!(
        described
            .iter()
            .any(|l| l.starts_with("Normal EvictedDueToDeactivated ") && l.ends_with(deactivated)),
        "EvictedDueToDeactivated event in\n{}",
        described.join("\n")
    );
    // Inactive, it stays out of the queue: its condition is still the one its release set.
    assert_eq!(
        condition_triple(&env.workload("first").await, "QuotaReserved"),
        Some(("False".into(), "Pending".into(), deactivated.into()))
    );

    let out = env.kueuectl(&["resume", "workload", &first]);
    assert_eq!(
        out.trim(),
        format!("workload.kueue.x-k8s.io/{first} resumed")
    );
    let requeued = env
        .wait_for_workload("first", "requeued, waiting for quota", |w| {
            waiting_for_quota(w) && w.is_condition_true("Requeued")
        })
        .await;
    assert_eq!(
        condition_triple(&requeued, "Requeued"),
        Some((
            "True".into(),
            "Reactivated".into(),
            "The workload was reactivated".into()
        ))
    );
    env.finish("second").await;
    let readmitted = env
        .wait_for_workload("first", "admitted again", is_admitted)
        .await;
    assert_eq!(
        condition_triple(&readmitted, "Evicted"),
        Some((
            "False".into(),
            "QuotaReserved".into(),
            format!("Previously: {deactivated}")
        ))
    );
    env.finish("first").await;
    for job in ["first", "second"] {
        env.wait_for_job(job, "complete", job_is_complete).await;
        env.wait_for_workload(job, "finished", is_finished).await;
    }
    env.cleanup().await;
}

/// Stops (`Hold` with `--keep-already-running`, else `HoldAndDrain`) or resumes a queue with
/// Kueue's kubectl plugin, as a platform engineer would; it names the queue it changed (with
/// no verb, unlike for workloads).
fn kueuectl_queue(env: &Env, verb: &str, kind: &str, name: &str, flags: &[&str]) {
    let mut args = vec![verb, kind, name];
    args.extend_from_slice(flags);
    let out = env.kueuectl(&args);
    assert_eq!(out.trim(), format!("{kind}.kueue.x-k8s.io/{name}"));
}

fn requeued_false_by(reason: &'static str) -> impl Fn(&Workload) -> bool {
    move |w| {
        condition(w, "Requeued").is_some_and(|c| c.status == "False" && c.reason == reason)
            && condition(w, "QuotaReserved").is_some_and(|c| c.status == "False")
    }
}

#[tokio::test]
async fn stopped_queues_hold_or_drain_and_requeue_their_workloads_once_restarted() {
    let mut env = env().await;
    let cq = env.first_job_running("2").await;

    // Hold: what runs keeps running, what comes waits.
    kueuectl_queue(
        &env,
        "stop",
        "localqueue",
        "lq",
        &["--keep-already-running"],
    );
    env.submit(&TestJob::new("second", "lq", "1").keep_running());
    let held = env
        .wait_for_workload("second", "held", |w| {
            condition(w, "QuotaReserved").is_some_and(|c| c.reason == "Suspended")
        })
        .await;
    assert_eq!(
        condition_triple(&held, "QuotaReserved"),
        Some((
            "False".into(),
            "Suspended".into(),
            "LocalQueue lq is stopped".into()
        ))
    );
    assert!(is_admitted(&env.workload("first").await));

    // HoldAndDrain: what runs is evicted and stopped.
    kueuectl_queue(&env, "stop", "localqueue", "lq", &[]);
    let drained = env
        .wait_for_workload("first", "drained", requeued_false_by("LocalQueueStopped"))
        .await;
    assert_eq!(
        condition_triple(&drained, "Evicted"),
        Some((
            "True".into(),
            "LocalQueueStopped".into(),
            "The LocalQueue is stopped".into()
        ))
    );
    env.wait_for_job("first", "suspended", is_suspended).await;
    env.wait_until_pods_gone("first").await;

    // Running again, the LocalQueue requeues what it drained, and both run.
    kueuectl_queue(&env, "resume", "localqueue", "lq", &[]);
    let restarted = env
        .wait_for_workload("first", "requeued and admitted", |w| {
            is_admitted(w) && w.is_condition_true("Requeued")
        })
        .await;
    assert_eq!(
        condition_triple(&restarted, "Requeued"),
        Some((
            "True".into(),
            "LocalQueueRestarted".into(),
            "The LocalQueue was restarted after being stopped".into()
        ))
    );
    env.wait_for_workload("second", "admitted", is_admitted)
        .await;

    // The same through the ClusterQueue.
    kueuectl_queue(&env, "stop", "clusterqueue", &cq, &[]);
    for job in ["first", "second"] {
        let drained = env
            .wait_for_workload(job, "drained", requeued_false_by("ClusterQueueStopped"))
            .await;
        assert_eq!(
            condition_triple(&drained, "Evicted"),
            Some((
                "True".into(),
                "ClusterQueueStopped".into(),
                "The ClusterQueue is stopped".into()
            ))
        );
    }
    kueuectl_queue(&env, "resume", "clusterqueue", &cq, &[]);
    for job in ["first", "second"] {
        let restarted = env
            .wait_for_workload(job, "requeued and admitted", |w| {
                is_admitted(w) && w.is_condition_true("Requeued")
            })
            .await;
        assert_eq!(
            condition_triple(&restarted, "Requeued"),
            Some((
                "True".into(),
                "ClusterQueueRestarted".into(),
                "The ClusterQueue was restarted after being stopped".into()
            ))
        );
        env.finish(job).await;
    }
    for job in ["first", "second"] {
        env.wait_for_job(job, "complete", job_is_complete).await;
    }
    env.cleanup().await;
}

fn check_state(workload: &Workload, check: &str) -> Option<(String, String)> {
    workload
        .status
        .as_ref()?
        .admission_checks
        .iter()
        .find(|state| state.name == check)
        .map(|state| (format!("{:?}", state.state), state.message.clone()))
}

#[tokio::test]
async fn admission_checks_gate_admission_retry_evicts_and_rejection_deactivates() {
    let mut env = env().await;
    let check = env.admission_check("prov").await;
    let cq = env.checked_queue(&check).await;
    let cluster_queues: Api<ClusterQueue> = Api::all(env.client.clone());
    let inactive =
        format!("Can't admit new workloads: references inactive AdmissionCheck(s): {check}.");
    env.wait_for_status(&cluster_queues, &cq, "inactive", |status| {
        status["conditions"][0]["reason"] == "AdmissionCheckInactive"
            && status["conditions"][0]["message"] == inactive.as_str()
    })
    .await;
    env.set_check_active(&check).await;
    env.wait_for_status(&cluster_queues, &cq, "active", |status| {
        status["conditions"][0]["status"] == "True"
    })
    .await;

    // Quota is reserved, the check is pending and the job waits, suspended.
    env.submit(&TestJob::new("checked", "lq", "1").keep_running());
    let reserved = env
        .wait_for_workload("checked", "quota reserved", |w| {
            w.is_condition_true("QuotaReserved")
        })
        .await;
    assert_eq!(
        condition_triple(&reserved, "Admitted"),
        Some((
            "False".into(),
            "UnsatisfiedAdmissionChecks".into(),
            "The workload has not all checks ready".into()
        ))
    );
    assert_eq!(
        check_state(&reserved, &check),
        Some(("Pending".into(), String::new()))
    );
    assert!(is_suspended(&env.job("checked").await));

    // Ready: admitted, and the job runs.
    let name = reserved.name_any();
    env.set_check_state(&name, &check, ("Ready", "capacity is there"), None)
        .await;
    env.wait_for_workload("checked", "admitted", is_admitted)
        .await;
    env.wait_until_running("checked").await;

    // Retry, asking for 3 s: evicted, the job stopped, the check back to Pending, and quota
    // reserved again no earlier than asked.
    env.set_check_state(&name, &check, ("Retry", "capacity was lost"), Some(3))
        .await;
    let retry =
        format!("Evicted due to AdmissionCheck in Retry state: \"{check}\" (capacity was lost)");
    let evicted = env
        .wait_for_workload("checked", "evicted", |w| w.is_condition_true("Evicted"))
        .await;
    assert_eq!(
        condition_triple(&evicted, "Evicted"),
        Some(("True".into(), "AdmissionCheck".into(), retry.clone()))
    );
    env.wait_until_pods_gone("checked").await;
    let again = env
        .wait_for_workload("checked", "quota reserved again", |w| {
            w.is_condition_true("QuotaReserved")
                && condition(w, "Evicted").is_some_and(|c| c.status == "False")
        })
        .await;
    assert_eq!(
        check_state(&again, &check),
        Some((
            "Pending".into(),
            "Reset to Pending after eviction. Previously: Retry".into()
        ))
    );
    let requeue_at = again
        .status
        .as_ref()
        .and_then(|status| status.requeue_state.as_ref())
        .and_then(|state| state.requeue_at.as_ref())
        .map(|time| time.0)
        .expect("requeueState.requeueAt");
    let retried_at = condition(&evicted, "Evicted")
        .map(|c| c.last_transition_time.0)
        .expect("evicted");
    assert!(
        requeue_at > retried_at,
        "requeueAt {requeue_at} after the retry at {retried_at}"
    );
    let reserved_at = condition(&again, "QuotaReserved")
        .map(|c| c.last_transition_time.0)
        .expect("reserved");
    assert!(
        reserved_at >= requeue_at,
        "reserved again at {reserved_at}, before {requeue_at}"
    );
    assert!(is_suspended(&env.job("checked").await));

    // Rejected: marked, deactivated and evicted; the job never runs again.
    env.set_check_state(&name, &check, ("Rejected", "never"), None)
        .await;
    let rejected = format!("AdmissionCheck in Rejected state: \"{check}\" (never)");
    let deactivated = env.wait_until_deactivated("checked").await;
    assert_eq!(
        condition_triple(&deactivated, "Evicted"),
        Some((
            "True".into(),
            "DeactivatedDueToAdmissionCheck".into(),
            format!("The workload is deactivated due to {rejected}")
        ))
    );
    assert!(is_suspended(&env.job("checked").await));
    let described = describe_lines(&env.kubectl(&["describe", "workload", &name], None));
    assert!(
        described
            .iter()
            .any(|l| l.starts_with("Warning AdmissionCheckRejected ")
                && l.ends_with(&format!("Deactivated due to {rejected}"))),
        "AdmissionCheckRejected event in\n{}",
        described.join("\n")
    );
    env.jobs()
        .delete("checked", &Default::default())
        .await
        .expect("delete job");
    env.cleanup().await;
}

#[tokio::test]
async fn strict_fifo_blocks_behind_a_big_head_while_best_effort_fifo_does_not() {
    let mut env = env().await;
    let flavor = env.flavor("on-demand").await;
    let quota = [(flavor.as_str(), "2")];
    let strict = env
        .cluster_queue("strict", &quota, json!({"queueingStrategy": "StrictFIFO"}))
        .await;
    let best_effort = env
        .cluster_queue(
            "best-effort",
            &quota,
            json!({"queueingStrategy": "BestEffortFIFO"}),
        )
        .await;
    env.local_queue("strict", &strict).await;
    env.local_queue("best-effort", &best_effort).await;

    for queue in ["strict", "best-effort"] {
        let filler = format!("{queue}-filler");
        env.submit(&TestJob::new(&filler, queue, "1").keep_running());
        env.wait_for_workload(&filler, "admitted", is_admitted)
            .await;
    }
    // Creation timestamps have whole seconds: the big head is strictly older than the small one.
    for queue in ["strict", "best-effort"] {
        env.submit(&TestJob::new(&format!("{queue}-big"), queue, "2").keep_running());
    }
    tokio::time::sleep(Duration::from_millis(1100)).await;
    for queue in ["strict", "best-effort"] {
        env.submit(&TestJob::new(&format!("{queue}-small"), queue, "1").keep_running());
    }

    env.wait_for_workload(
        "best-effort-small",
        "admitted past the big head",
        is_admitted,
    )
    .await;
    env.wait_until_running("best-effort-small").await;
    let head = env
        .wait_for_workload("strict-big", "waiting for quota", waiting_for_quota)
        .await;
    assert_eq!(
        condition_triple(&head, "QuotaReserved").map(|c| c.2),
        Some(format!(
            "couldn't assign flavors to pod set main: insufficient unused quota for cpu in flavor {flavor}, 1 more needed"
        ))
    );
    tokio::time::sleep(Duration::from_secs(2)).await;
    let blocked = env.workload("strict-small").await;
    assert!(
        !is_admitted(&blocked),
        "StrictFIFO admits nothing behind its head"
    );
    assert!(is_suspended(&env.job("strict-small").await));
    assert!(!is_admitted(&env.workload("best-effort-big").await));

    let queues: Api<ClusterQueue> = Api::all(env.client.clone());
    for (queue, pending, admitted) in [(&strict, 2, 1), (&best_effort, 1, 2)] {
        env.wait_for_status(&queues, queue, "counts", |s| {
            s["pendingWorkloads"] == pending && s["admittedWorkloads"] == admitted
        })
        .await;
    }
    let (headers, rows) = env.table(&["get", "cq", &strict, &best_effort, "-o", "wide"]);
    assert_eq!(headers, CLUSTER_QUEUE_WIDE_COLUMNS);
    assert_eq!(
        rows,
        [
            [strict.as_str(), "", "StrictFIFO", "2", "1"],
            [best_effort.as_str(), "", "BestEffortFIFO", "1", "2"]
        ]
    );

    // The filler finishes: the head fits, and the small one still waits behind it (2 of 2 used).
    env.finish("strict-filler").await;
    env.wait_for_workload("strict-big", "admitted", is_admitted)
        .await;
    env.wait_until_running("strict-big").await;
    assert!(!is_admitted(&env.workload("strict-small").await));
    env.finish("strict-big").await;
    env.wait_for_workload("strict-small", "admitted after the head", is_admitted)
        .await;

    for job in [
        "strict-small",
        "best-effort-filler",
        "best-effort-small",
        "best-effort-big",
    ] {
        if job == "best-effort-big" {
            env.wait_for_workload(job, "admitted", is_admitted).await;
        }
        env.finish(job).await;
    }
    for queue in ["strict", "best-effort"] {
        for size in ["filler", "big", "small"] {
            let job = format!("{queue}-{size}");
            env.wait_for_job(&job, "complete", job_is_complete).await;
        }
    }
    env.cleanup().await;
}

#[tokio::test]
async fn kueues_quick_start_with_a_flavor_of_only_a_name_runs_a_job_to_completion() {
    let mut env = env().await;
    let flavor = env.name("default-flavor");
    let cluster_queue = env.name("cluster-queue");
    // Kueue's quick start, applied unchanged but for unique names: a ResourceFlavor with no
    // spec, a ClusterQueue for every namespace, a LocalQueue, then a Job naming it.
    let setup = format!(
        "apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata:
  name: {flavor}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata:
  name: {cluster_queue}
spec:
  namespaceSelector: {{}}
  resourceGroups:
  - coveredResources: [cpu, memory]
    flavors:
    - name: {flavor}
      resources:
      - name: cpu
        nominalQuota: 9
      - name: memory
        nominalQuota: 36Gi
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata:
  name: user-queue
spec:
  clusterQueue: {cluster_queue}
"
    );
    env.cluster_scoped
        .push(ClusterScoped::Flavor(flavor.clone()));
    env.cluster_scoped
        .push(ClusterScoped::ClusterQueue(cluster_queue.clone()));
    let applied = env.kubectl(&["apply", "-f", "-"], Some(&setup));
    assert_eq!(
        applied.lines().collect::<Vec<_>>(),
        vec![
            format!("resourceflavor.kueue.x-k8s.io/{flavor} created"),
            format!("clusterqueue.kueue.x-k8s.io/{cluster_queue} created"),
            "localqueue.kueue.x-k8s.io/user-queue created".to_owned(),
        ]
    );

    env.submit(&TestJob::new("sample-job", "user-queue", "1"));
    let job = env.job("sample-job").await;
    assert!(is_suspended(&job), "stored suspended until admitted");
    assert_eq!(
        job.metadata
            .labels
            .unwrap_or_default()
            .get(QUEUE_NAME_LABEL)
            .map(String::as_str),
        Some("user-queue")
    );
    env.wait_for_job("sample-job", "complete", job_is_complete)
        .await;
    let workload = env.workload("sample-job").await;
    assert!(is_admitted(&workload), "{workload:#?}");
    env.cleanup().await;
}

#[tokio::test]
async fn kuotas_log_file_carries_no_colour_codes() {
    system().await;
    let log = KUOTA.get().expect("kuota started").log();
    let text = std::fs::read_to_string(log).expect("read kuota's log");
    assert!(text.contains("webhook serving"), "{text}");
    assert!(!text.contains('\u{1b}'), "{text}");
}

/// Creates the object described by `object`.
async fn create<K>(api: &Api<K>, object: Value)
where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + serde::Serialize + std::fmt::Debug,
{
    let object: K = from_json(object);
    api.create(&PostParams::default(), &object)
        .await
        .unwrap_or_else(|error| panic!("create {object:?}: {error}"));
}

/// The autoscaler's part, played by the test: one condition on a ProvisioningRequest.
async fn set_request_condition(
    requests: &Api<ProvisioningRequest>,
    name: &str,
    (type_, message): (&str, &str),
) {
    let body = json!({"status": {"conditions": [{
        "type": type_, "status": "True", "reason": type_, "message": message,
        "lastTransitionTime": common::timestamp::now(),
    }]}});
    requests
        .patch_status(name, &PatchParams::default(), &Patch::Merge(&body))
        .await
        .expect("set the ProvisioningRequest's condition");
}

/// Waits until the ProvisioningRequest exists and returns it.
async fn wait_for_request(requests: &Api<ProvisioningRequest>, name: &str) -> ProvisioningRequest {
    eventually(
        WAIT,
        &format!("ProvisioningRequest {name} is created"),
        || async { requests.get_opt(name).await.ok().flatten().is_some() },
    )
    .await
    .expect("the ProvisioningRequest is created");
    requests.get(name).await.expect("get ProvisioningRequest")
}

/// The ProvisioningRequest check, with the autoscaler's CRD installed after Kuota started
/// (Kueue needs a restart for that): the check turns active; a Workload holding quota gets a
/// ProvisioningRequest and its PodTemplate under Kueue's names; provisioned, it is admitted
/// and its pods carry the request; finished, the request is deleted. A request that fails is
/// retried once (backoffLimitCount 1) and then rejected, and that job never starts.
#[tokio::test]
async fn provisioning_request_check_asks_the_autoscaler_before_admitting() {
    let mut env = env().await;
    let crd = dev_script(
        "dev/kueue/module.sh",
        &["k8s.io/autoscaler/cluster-autoscaler/apis"],
    )
    .join("config/crd/autoscaling.x-k8s.io_provisioningrequests.yaml");
    env.cluster
        .plane()
        .install_crd_files(&[crd])
        .await
        .expect("install the ProvisioningRequest CRD");

    let config = env.name("prc");
    let configs: Api<ProvisioningRequestConfig> = Api::all(env.client.clone());
    create(
        &configs,
        json!({"metadata": {"name": config}, "spec": {
            "provisioningClassName": "check-capacity.autoscaling.x-k8s.io",
            "retryStrategy": {"backoffLimitCount": 1, "backoffBaseSeconds": 1, "backoffMaxSeconds": 2},
        }}),
    )
    .await;
    let check = env.name("prov");
    let checks: Api<AdmissionCheck> = Api::all(env.client.clone());
    create(
        &checks,
        json!({"metadata": {"name": check}, "spec": {
            "controllerName": "kueue.x-k8s.io/provisioning-request",
            "parameters": {"apiGroup": "kueue.x-k8s.io", "kind": "ProvisioningRequestConfig", "name": config},
        }}),
    )
    .await;
    env.cluster_scoped
        .push(ClusterScoped::AdmissionCheck(check.clone()));
    env.wait_for_status(&checks, &check, "active", |status| {
        status["conditions"][0]["type"] == "Active"
            && status["conditions"][0]["status"] == "True"
            && status["conditions"][0]["message"] == "The admission check is active"
    })
    .await;

    env.checked_queue(&check).await;
    let requests: Api<ProvisioningRequest> = Api::namespaced(env.client.clone(), env.ns.name());
    let templates: Api<PodTemplate> = Api::namespaced(env.client.clone(), env.ns.name());

    // Quota reserved: the check waits for the autoscaler, the job stays suspended.
    env.submit(&TestJob::new("provisioned", "lq", "1").keep_running());
    let reserved = env
        .wait_for_workload("provisioned", "quota reserved", |w| {
            w.is_condition_true("QuotaReserved")
        })
        .await;
    let workload = reserved.name_any();
    let first = format!("{workload}-{check}-1");
    let request = wait_for_request(&requests, &first).await;
    let template = format!("ppt-{first}-main");
    assert_eq!(
        serde_json::to_value(&request.spec).expect("json"),
        json!({
            "provisioningClassName": "check-capacity.autoscaling.x-k8s.io",
            "podSets": [{"podTemplateRef": {"name": template}, "count": 1}],
        })
    );
    assert_eq!(
        request
            .owner_references()
            .iter()
            .map(|owner| (owner.kind.as_str(), owner.name.as_str()))
            .collect::<Vec<_>>(),
        [("Workload", workload.as_str())]
    );
    let pod_template = templates.get(&template).await.expect("the PodTemplate");
    let spec = pod_template
        .template
        .and_then(|template| template.spec)
        .expect("template spec");
    assert_eq!(
        spec.node_selector,
        Some(BTreeMap::from([(
            "instance-type".to_owned(),
            "on-demand".to_owned()
        )]))
    );
    eventually(WAIT, "the PodTemplate is handed to the request", || async {
        templates.get(&template).await.is_ok_and(|template| {
            template
                .owner_references()
                .iter()
                .any(|owner| owner.kind == "ProvisioningRequest" && owner.name == first)
        })
    })
    .await
    .expect("the PodTemplate is owned by the ProvisioningRequest");
    assert!(is_suspended(&env.job("provisioned").await));
    assert_eq!(
        check_state(&env.workload("provisioned").await, &check),
        Some(("Pending".into(), String::new()))
    );

    // Provisioned: Ready, admitted, and the pods carry the request.
    set_request_condition(&requests, &first, ("Provisioned", "capacity is ready")).await;
    let admitted = env
        .wait_for_workload("provisioned", "admitted", is_admitted)
        .await;
    assert_eq!(
        check_state(&admitted, &check),
        Some(("Ready".into(), "capacity is ready".into()))
    );
    env.wait_until_running("provisioned").await;
    let annotations = env
        .job("provisioned")
        .await
        .spec
        .and_then(|spec| spec.template.metadata)
        .and_then(|metadata| metadata.annotations)
        .unwrap_or_default();
    assert_eq!(
        (
            annotations.get("autoscaling.x-k8s.io/consume-provisioning-request"),
            annotations.get("autoscaling.x-k8s.io/provisioning-class-name")
        ),
        (
            Some(&first),
            Some(&"check-capacity.autoscaling.x-k8s.io".to_owned())
        )
    );
    let described = describe_lines(&env.kubectl(&["describe", "workload", &workload], None));
    for (reason, note) in [
        (
            "ProvisioningRequestCreated",
            format!("Created ProvisioningRequest: \"{first}\""),
        ),
        (
            "AdmissionCheckUpdated",
            format!(
                "Admission check {check} updated state from Pending to Ready with message: capacity is ready"
            ),
        ),
    ] {
        assert!(
            described
                .iter()
                .any(|line| line.starts_with(&format!("Normal {reason} "))
                    && line.ends_with(&format!(" kueue-provisioning-request-controller {note}"))),
            "{reason} {note:?} in\n{}",
            described.join("\n")
        );
    }

    // Finished: the request is deleted.
    env.finish("provisioned").await;
    env.wait_for_job("provisioned", "complete", job_is_complete)
        .await;
    eventually(
        WAIT,
        "the finished workload's request is deleted",
        || async { requests.get_opt(&first).await.ok().flatten().is_none() },
    )
    .await
    .expect("the request is deleted");

    // A request that fails is retried after the backoff, then the check rejects the workload.
    env.submit(&TestJob::new("unlucky", "lq", "1").keep_running());
    let unlucky = env
        .wait_for_workload("unlucky", "quota reserved", |w| {
            w.is_condition_true("QuotaReserved")
        })
        .await
        .name_any();
    let attempt = |n: u32| format!("{unlucky}-{check}-{n}");
    wait_for_request(&requests, &attempt(1)).await;
    set_request_condition(&requests, &attempt(1), ("Failed", "no capacity")).await;
    // The eviction can be over, quota reserved again, before a poll sees it; the condition
    // then keeps its message as "Previously: ...", as Kueue's does.
    let retry = format!(
        "Evicted due to AdmissionCheck in Retry state: \"{check}\" (Retrying after failure: no capacity)"
    );
    let evicted = env
        .wait_for_workload("unlucky", "evicted for a retry", |w| {
            condition(w, "Evicted").is_some_and(|c| c.message.ends_with(&retry))
        })
        .await;
    let during = Some(("True".into(), "AdmissionCheck".into(), retry.clone()));
    let after = Some((
        "False".into(),
        "QuotaReserved".into(),
        format!("Previously: {retry}"),
    ));
    let seen = condition_triple(&evicted, "Evicted");
    assert!(seen == during || seen == after, "{seen:?}");
    wait_for_request(&requests, &attempt(2)).await;
    set_request_condition(&requests, &attempt(2), ("Failed", "still no capacity")).await;
    let deactivated = env.wait_until_deactivated("unlucky").await;
    // As Kueue, the eviction puts the check back to Pending, saying what it was.
    assert_eq!(
        check_state(&deactivated, &check),
        Some((
            "Pending".into(),
            "Reset to Pending after eviction. Previously: Rejected".into()
        ))
    );
    assert_eq!(
        condition_triple(&deactivated, "Evicted"),
        Some((
            "True".into(),
            "DeactivatedDueToAdmissionCheck".into(),
            format!(
                "The workload is deactivated due to AdmissionCheck in Rejected state: \"{check}\" (still no capacity)"
            )
        ))
    );
    eventually(
        WAIT,
        "the evicted workload's requests are deleted",
        || async {
            requests
                .list(&ListParams::default())
                .await
                .is_ok_and(|list| list.items.is_empty())
        },
    )
    .await
    .expect("no ProvisioningRequest is left");
    let job = env.job("unlucky").await;
    assert!(is_suspended(&job));
    assert_eq!(
        job.status.and_then(|status| status.start_time),
        None,
        "the rejected job never started"
    );
    env.jobs()
        .delete("unlucky", &Default::default())
        .await
        .expect("delete job");
    env.cleanup().await;
    delete_ignoring_missing(&configs, &config)
        .await
        .expect("delete ProvisioningRequestConfig");
}

/// `kueue.x-k8s.io/max-exec-time-seconds`: a job still running when its time is up is
/// deactivated as Kueue does (`MaximumExecutionTimeExceeded`), its pods stopped and its quota
/// given to the next job.
#[tokio::test]
async fn a_job_past_its_maximum_execution_time_is_deactivated_and_frees_its_quota() {
    let mut env = env().await;
    let flavor = env.flavor("on-demand").await;
    let cq = env
        .cluster_queue("cq", &[(flavor.as_str(), "1")], json!({}))
        .await;
    env.local_queue("lq", &cq).await;
    env.submit(
        &TestJob::new("bounded", "lq", "1")
            .max_execution_seconds(3)
            .keep_running(),
    );
    env.wait_until_running("bounded").await;
    env.submit(&TestJob::new("next", "lq", "1").keep_running());

    let deactivated = env.wait_until_deactivated("bounded").await;
    assert_eq!(
        condition_triple(&deactivated, "Evicted"),
        Some((
            "True".into(),
            "DeactivatedDueToMaximumExecutionTimeExceeded".into(),
            "The workload is deactivated due to exceeding the maximum execution time".into()
        ))
    );
    let name = deactivated.name_any();
    let described = describe_lines(&env.kubectl(&["describe", "workload", &name], None));
    assert!(
        described.iter().any(
            |line| line.starts_with("Warning MaximumExecutionTimeExceeded ")
                && line.ends_with(" The maximum execution time (3s) exceeded")
        ),
        "MaximumExecutionTimeExceeded event in\n{}",
        described.join("\n")
    );
    env.wait_until_pods_gone("bounded").await;
    assert!(is_suspended(&env.job("bounded").await));
    env.wait_for_workload("next", "admitted in the freed quota", is_admitted)
        .await;
    env.finish("next").await;
    env.wait_for_job("next", "complete", job_is_complete).await;
    env.jobs()
        .delete("bounded", &Default::default())
        .await
        .expect("delete job");
    env.cleanup().await;
}

/// `kubectl get --raw PATH` in this cluster: stdout, or stderr on a failure.
fn get_raw(env: &Env, path: &str, user: Option<&str>) -> Result<Value, String> {
    let mut command = env.cluster.kubectl();
    command.args(["get", "--raw", path]);
    if let Some(user) = user {
        command.arg(format!("--as={user}"));
    }
    let output = command.output().expect("run kubectl");
    if !output.status.success() {
        return Err(String::from_utf8_lossy(&output.stderr).trim().to_owned());
    }
    Ok(serde_json::from_slice(&output.stdout).expect("a JSON answer"))
}

/// `(job, local queue, priority, position in ClusterQueue, position in LocalQueue)` of each
/// item of a `PendingWorkloadsSummary`, the job read from the Workload's owner.
fn pending_rows(summary: &Value) -> Vec<(String, String, i64, i64, i64)> {
    assert_eq!(summary["kind"], "PendingWorkloadsSummary", "{summary}");
    summary["items"]
        .as_array()
        .expect("items")
        .iter()
        .map(|item| {
            (
                item["metadata"]["ownerReferences"][0]["name"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned(),
                item["localQueueName"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned(),
                item["priority"].as_i64().unwrap_or(-1),
                item["positionInClusterQueue"].as_i64().unwrap_or(-1),
                item["positionInLocalQueue"].as_i64().unwrap_or(-1),
            )
        })
        .collect()
}

fn pending_row(
    job: &str,
    queue: &str,
    priority: i64,
    in_cq: i64,
    in_lq: i64,
) -> (String, String, i64, i64, i64) {
    (job.to_owned(), queue.to_owned(), priority, in_cq, in_lq)
}

#[tokio::test]
async fn the_visibility_api_lists_pending_jobs_in_the_order_they_are_then_admitted() {
    let mut env = env().await;
    let cq = env.first_job_running("1").await;
    let out = env.kueuectl(&["create", "localqueue", "other", "-c", &cq]);
    assert_eq!(out.trim(), "localqueue.kueue.x-k8s.io/other created");
    let urgent_class = env.priority_class("urgent", 100).await;
    // A second apart: creation timestamps have second precision and order equal priorities.
    for (job, queue) in [
        ("low-1", "lq"),
        ("other-1", "other"),
        ("urgent", "lq"),
        ("low-2", "lq"),
    ] {
        let mut test_job = TestJob::new(job, queue, "1").keep_running();
        if job == "urgent" {
            test_job = test_job.priority(&urgent_class);
        }
        env.submit(&test_job);
        env.wait_for_workload(job, "waiting for quota", waiting_for_quota)
            .await;
        tokio::time::sleep(Duration::from_millis(1100)).await;
    }

    let cq_path =
        format!("/apis/visibility.kueue.x-k8s.io/v1beta2/clusterqueues/{cq}/pendingworkloads");
    let summary = get_raw(&env, &cq_path, None).expect("pending workloads of the ClusterQueue");
    println!("$ kubectl get --raw {cq_path}\n{summary:#}");
    assert_eq!(
        pending_rows(&summary),
        [
            pending_row("urgent", "lq", 100, 0, 0),
            pending_row("low-1", "lq", 0, 1, 1),
            pending_row("other-1", "other", 0, 2, 0),
            pending_row("low-2", "lq", 0, 3, 2),
        ]
    );
    let lq_path = format!(
        "/apis/visibility.kueue.x-k8s.io/v1beta1/namespaces/{}/localqueues/lq/pendingworkloads?offset=1",
        env.ns.name()
    );
    let page = get_raw(&env, &lq_path, None).expect("pending workloads of the LocalQueue");
    assert_eq!(page["apiVersion"], "visibility.kueue.x-k8s.io/v1beta1");
    assert_eq!(
        pending_rows(&page),
        [
            pending_row("low-1", "lq", 0, 1, 1),
            pending_row("low-2", "lq", 0, 3, 2)
        ]
    );

    // Kueue's plugin shows each pending workload's position in its LocalQueue.
    let (columns, rows) = parse_table(&env.kueuectl(&["list", "workload"]));
    let column = |name: &str| columns.iter().position(|c| c == name).expect(name);
    let (job, status, position) = (
        column("JOB NAME"),
        column("STATUS"),
        column("POSITION IN QUEUE"),
    );
    let mut listed: Vec<(String, String, String)> = rows
        .iter()
        .map(|row| (row[job].clone(), row[status].clone(), row[position].clone()))
        .collect();
    listed.sort();
    let entry = |job: &str, status: &str, position: &str| {
        (job.to_owned(), status.to_owned(), position.to_owned())
    };
    assert_eq!(
        listed,
        [
            entry("first", "ADMITTED", ""),
            entry("low-1", "PENDING", "1"),
            entry("low-2", "PENDING", "2"),
            entry("other-1", "PENDING", "0"),
            entry("urgent", "PENDING", "0"),
        ]
    );

    // Kueue's plugin reads the queues' counters as Kuota writes them (every 2 s at most).
    let owned = |row: [&str; 5]| row.map(str::to_owned).to_vec();
    let expected_queues = vec![
        owned([
            "NAME",
            "CLUSTERQUEUE",
            "PENDING WORKLOADS",
            "ADMITTED WORKLOADS",
            "",
        ]),
        owned(["lq", &cq, "3", "1", ""]),
        owned(["other", &cq, "1", "0", ""]),
    ];
    let expected_cluster_queue = vec![
        owned([
            "NAME",
            "COHORT",
            "PENDING WORKLOADS",
            "ADMITTED WORKLOADS",
            "ACTIVE",
        ]),
        owned([&cq, "", "4", "1", "true"]),
    ];
    let by_name = format!("metadata.name={cq}");
    let mut seen = (vec![], vec![]);
    for _ in 0..40 {
        // Every column but AGE, with the header.
        let table = |text: String, keep: usize| {
            let (columns, rows) = parse_table(&text);
            std::iter::once(columns)
                .chain(rows)
                .map(|row| {
                    let mut row: Vec<String> = row.into_iter().take(keep).collect();
                    row.resize(5, String::new());
                    row
                })
                .collect::<Vec<_>>()
        };
        seen = (
            table(env.kueuectl(&["list", "localqueue"]), 4),
            table(
                env.kueuectl(&["list", "clusterqueue", "--field-selector", &by_name]),
                5,
            ),
        );
        if seen == (expected_queues.clone(), expected_cluster_queue.clone()) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    assert_eq!(seen, (expected_queues, expected_cluster_queue));

    // Refusals a user sees: a missing queue from Kuota, a missing grant from the API server.
    let missing =
        "/apis/visibility.kueue.x-k8s.io/v1beta2/clusterqueues/no-such-queue/pendingworkloads";
    assert_eq!(
        get_raw(&env, missing, None).unwrap_err(),
        "Error from server (NotFound): clusterqueue.visibility.kueue.x-k8s.io \"no-such-queue\" not found"
    );
    assert_eq!(
        get_raw(&env, &cq_path, Some("nobody")).unwrap_err(),
        format!(
            "Error from server (Forbidden): clusterqueues.visibility.kueue.x-k8s.io \"{cq}\" is forbidden: User \"nobody\" cannot get resource \"clusterqueues/pendingworkloads\" in API group \"visibility.kueue.x-k8s.io\" at the cluster scope"
        )
    );

    // The ClusterQueue admits them in the order listed, one at a time as quota frees up.
    let mut holder = "first".to_owned();
    for next in ["urgent", "low-1", "other-1", "low-2"] {
        env.finish(&holder).await;
        env.wait_for_workload(next, "admitted next", is_admitted)
            .await;
        let rest = pending_rows(&get_raw(&env, &cq_path, None).expect("pending workloads"));
        let expected_first = match next {
            "urgent" => Some("low-1"),
            "low-1" => Some("other-1"),
            "other-1" => Some("low-2"),
            _ => None,
        };
        assert_eq!(
            rest.first().map(|row| row.0.as_str()),
            expected_first,
            "after {next} was admitted: {rest:?}"
        );
        assert!(rest.iter().enumerate().all(|(i, row)| row.3 == i as i64));
        holder = next.to_owned();
    }
    env.finish(&holder).await;
    env.cleanup().await;
}

impl Env {
    /// `kuota explain TARGET -n <test namespace>`: its one line, or its error line.
    fn explain(&self, target: &str) -> Result<String, String> {
        let output = Command::new(env!("CARGO_BIN_EXE_kuota"))
            .arg("--kubeconfig")
            .arg(self.cluster.plane().kubeconfig())
            .args(["explain", target, "-n", self.ns.name()])
            .output()
            .expect("run kuota explain");
        let line = |bytes: &[u8]| String::from_utf8_lossy(bytes).trim().to_owned();
        if output.status.success() {
            println!("$ kuota explain {target}\n{}", line(&output.stdout));
            Ok(line(&output.stdout))
        } else {
            Err(line(&output.stderr))
        }
    }
}

#[tokio::test]
async fn kuota_explain_says_in_one_line_why_a_job_waits() {
    let mut env = env().await;
    let check = env.admission_check("check").await;
    env.set_check_active(&check).await;
    let cq = env.checked_queue(&check).await;
    let flavor = env.name("on-demand");
    let ns = env.ns.name().to_owned();

    // Holding quota, waiting for an admission check.
    env.submit(&TestJob::new("checked", "lq", "1").keep_running());
    let reserved = env
        .wait_for_workload("checked", "quota reserved", |w| {
            w.is_condition_true("QuotaReserved")
        })
        .await;
    env.set_check_state(
        &reserved.name_any(),
        &check,
        ("Pending", "Waiting for capacity"),
        None,
    )
    .await;
    assert_eq!(
        env.explain("job/checked"),
        Ok(format!(
            "job/checked holds quota in ClusterQueue \"{cq}\" and waits for admission check \"{check}\" (Pending: Waiting for capacity)"
        ))
    );

    // Short of quota, behind a workload of higher priority.
    let urgent_class = env.priority_class("urgent", 100).await;
    env.submit(&TestJob::new("urgent", "lq", "2").priority(&urgent_class));
    env.wait_for_workload("urgent", "waiting for quota", waiting_for_quota)
        .await;
    env.submit(&TestJob::new("big", "lq", "2"));
    env.wait_for_workload("big", "waiting for quota", waiting_for_quota)
        .await;
    let urgent = format!("{ns}/{}", env.workload_name("urgent").await);
    assert_eq!(
        env.explain("jobs.batch/big"),
        Ok(format!(
            "job/big is pending in ClusterQueue \"{cq}\", behind 1 (1 of higher priority: {urgent}): couldn't assign flavors to pod set main: insufficient unused quota for cpu in flavor {flavor}, 1 more needed"
        ))
    );
    // The same as a kubectl plugin: the binary on the PATH as kubectl-kuota.
    let plugins = tempfile::tempdir().expect("a plugin directory");
    std::os::unix::fs::symlink(
        env!("CARGO_BIN_EXE_kuota"),
        plugins.path().join("kubectl-kuota"),
    )
    .expect("install the plugin");
    let path = format!(
        "{}:{}",
        plugins.path().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let plugin = env
        .cluster
        .kubectl()
        .env("PATH", path)
        .args(["kuota", "explain", "job/big", "-n", &ns])
        .output()
        .expect("run kubectl kuota");
    assert_eq!(
        String::from_utf8_lossy(&plugin.stdout).trim(),
        env.explain("job/big").expect("the same line")
    );
    let workload = env.workload_name("big").await;
    assert_eq!(
        env.explain(&format!("workload/{workload}")),
        Ok(format!(
            "workload/{workload} is pending in ClusterQueue \"{cq}\", behind 1 (1 of higher priority: {urgent}): couldn't assign flavors to pod set main: insufficient unused quota for cpu in flavor {flavor}, 1 more needed"
        ))
    );

    // A LocalQueue deleted under a waiting job.
    env.local_queue("doomed", &cq).await;
    env.submit(&TestJob::new("orphan", "doomed", "2"));
    env.wait_for_workload("orphan", "waiting for quota", waiting_for_quota)
        .await;
    env.kubectl(&["delete", "localqueue", "doomed"], None);
    assert_eq!(
        env.explain("job/orphan"),
        Ok(format!(
            "job/orphan waits for LocalQueue \"doomed\", which does not exist in namespace \"{ns}\""
        ))
    );

    // A stopped ClusterQueue.
    kueuectl_queue(
        &env,
        "stop",
        "clusterqueue",
        &cq,
        &["--keep-already-running"],
    );
    assert_eq!(
        env.explain("job/big"),
        Ok(format!(
            "job/big waits: ClusterQueue \"{cq}\" is stopped (Hold); `kubectl kueue resume clusterqueue {cq}` restarts it"
        ))
    );
    kueuectl_queue(&env, "resume", "clusterqueue", &cq, &[]);

    // Jobs Kuota does not queue, and ones that do not exist.
    env.kubectl(&["create", "job", "plain", "--image=busybox"], None);
    assert_eq!(
        env.explain("job/plain"),
        Ok("job/plain is not queued: it has no kueue.x-k8s.io/queue-name label".to_owned())
    );
    assert_eq!(
        env.explain("job/nope"),
        Err(format!(
            "error: job \"nope\" not found in namespace \"{ns}\""
        ))
    );
    env.cleanup().await;
}
