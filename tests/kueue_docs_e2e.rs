//! Kueue's documented examples, as fixtures of our own (`tests/data/kueue-docs/`), submitted
//! unchanged with the control plane's `kubectl` to the real control plane and the real
//! `kuota serve`, as a Kueue user would: every object is accepted, every job is stored
//! suspended with its queue label, the quick-start Job is admitted and completes, a partially
//! admitted Job runs with the pods that fit, and what Kueue refuses is refused with Kueue's
//! message.
//!
//! The fixtures cover the shapes of the `site/static/examples` tree and the concept pages of
//! Kueue's documentation at the pinned release (`dev/kueue/go.mod`); names and values are ours.
//! Each test submits its own files; cluster-scoped names start with `docs-`, and the fixtures
//! create the `kueue-docs-*` namespaces their jobs live in.

use std::{
    io::Write,
    path::{Path, PathBuf},
    process::{Output, Stdio},
    time::Duration,
};

use kuota::api::constants::{QUEUE_NAME_LABEL, RESOURCE_IN_USE_FINALIZER};
use kuota_cluster::{KuotaProcess, TestCluster, eventually};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use tokio::sync::OnceCell;

const WAIT: Duration = Duration::from_secs(90);
const FIXTURES: &str = "tests/data/kueue-docs";

const QUICK_START_SETUP: &str = "10-quick-start-setup.yaml";
const QUICK_START_JOB: &str = "11-quick-start-job.yaml";
const QUICK_START_GENERATE_NAME: &str = "12-quick-start-generate-name.yaml";
const ADMIN_SETUP: &str = "20-admin-setup.yaml";
const EVERY_JOB_KIND: &str = "21-every-job-kind.yaml";
const PARTIAL_ADMISSION: &str = "30-partial-admission.yaml";
const TOPOLOGY_AWARE: &str = "40-topology-aware.yaml";
const ADMISSION_CHECKS: &str = "50-admission-checks.yaml";
const MULTIKUEUE: &str = "60-multikueue.yaml";
const ADMISSION_FAIR_SHARING: &str = "70-admission-fair-sharing.yaml";
const ELASTIC_JOBS: &str = "80-elastic-jobs.yaml";
const REFUSED_BY_KUEUE: &str = "90-refused-by-kueue.yaml";

/// Every fixture file; each is submitted by one test below.
const ALL_FIXTURES: [&str; 12] = [
    QUICK_START_SETUP,
    QUICK_START_JOB,
    QUICK_START_GENERATE_NAME,
    ADMIN_SETUP,
    EVERY_JOB_KIND,
    PARTIAL_ADMISSION,
    TOPOLOGY_AWARE,
    ADMISSION_CHECKS,
    MULTIKUEUE,
    ADMISSION_FAIR_SHARING,
    ELASTIC_JOBS,
    REFUSED_BY_KUEUE,
];

struct Harness {
    cluster: &'static TestCluster,
    kuota: KuotaProcess,
}

static HARNESS: OnceCell<Harness> = OnceCell::const_new();

/// The control plane with Kueue's and the job operators' CRDs, and `kuota serve` started with
/// the configuration of local runs (every framework on), its webhooks called by the apiserver.
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
                .install_crd_files(&yaml_files(&repo_path("dev/cluster/crds")))
                .await
                .expect("job operators' CRDs");
            let config = repo_path("manifests/config/controller_manager_config.yaml");
            let config = config.to_str().expect("UTF-8 path");
            let kuota = plane
                .start_kuota(
                    Path::new(env!("CARGO_BIN_EXE_kuota")),
                    &["--config", config],
                )
                .await
                .expect("kuota serve starts");
            let harness = Harness { cluster, kuota };
            harness.wait_for_webhooks().await;
            harness
        })
        .await
}

fn repo_path(relative: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(relative)
}

fn fixture(name: &str) -> PathBuf {
    repo_path(FIXTURES).join(name)
}

fn yaml_files(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .expect("directory")
        .map(|entry| entry.expect("entry").path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "yaml"))
        .collect();
    files.sort();
    files
}

/// The objects of a fixture file, in order, as JSON.
fn documents(name: &str) -> Vec<Value> {
    let text = std::fs::read_to_string(fixture(name)).expect("fixture file");
    kuota::k8s::yaml::documents(&text).expect("YAML documents")
}

fn text_at<'a>(object: &'a Value, pointer: &str) -> &'a str {
    object
        .pointer(pointer)
        .and_then(Value::as_str)
        .unwrap_or("")
}

/// `Kind namespace/name`, with `prefix*` for a generated name.
fn identity(object: &Value) -> String {
    let name = match text_at(object, "/metadata/generateName") {
        "" => text_at(object, "/metadata/name").to_owned(),
        prefix => format!("{prefix}*"),
    };
    match text_at(object, "/metadata/namespace") {
        "" => format!("{} {name}", text_at(object, "/kind")),
        namespace => format!("{} {namespace}/{name}", text_at(object, "/kind")),
    }
}

fn queue_label(object: &Value) -> Option<&str> {
    object
        .pointer("/metadata/labels")
        .and_then(|labels| labels.get(QUEUE_NAME_LABEL))
        .and_then(Value::as_str)
}

/// Where each job kind keeps its suspend flag.
fn suspend_pointer(kind: &str) -> Option<&'static str> {
    match kind {
        "Job" | "JobSet" | "RayJob" | "RayCluster" => Some("/spec/suspend"),
        "MPIJob" | "PyTorchJob" | "TFJob" | "XGBoostJob" | "PaddleJob" | "JAXJob" => {
            Some("/spec/runPolicy/suspend")
        }
        _ => None,
    }
}

fn condition_is_true(object: &Value, type_: &str) -> bool {
    object
        .pointer("/status/conditions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .any(|condition| condition["type"] == type_ && condition["status"] == "True")
}

/// Every job of `name` as stored: suspended at its kind's own field, with the queue label
/// its document gives it. Returns their identities, in the file's order.
fn assert_jobs_queued(name: &str, stored: &[Value]) -> Vec<String> {
    let mut jobs = Vec::new();
    for (document, object) in documents(name).iter().zip(stored) {
        let kind = text_at(object, "/kind");
        let Some(pointer) = suspend_pointer(kind) else {
            continue;
        };
        let id = identity(object);
        assert_eq!(
            object.pointer(pointer),
            Some(&json!(true)),
            "{id} is stored suspended at {pointer}"
        );
        let queue = queue_label(document).expect("every job fixture names a LocalQueue");
        assert_eq!(
            queue_label(object),
            Some(queue),
            "{id} keeps its queue label"
        );
        jobs.push(id);
    }
    jobs
}

/// What `kubectl` printed: the objects the API server stored (`-o json`; kubectl prints them
/// only when it refused none) and its error lines.
struct Submitted {
    output: Output,
    stored: Vec<Value>,
    errors: Vec<String>,
}

impl Harness {
    fn kubectl(&self, args: &[&str], stdin: Option<&Value>) -> Output {
        let mut command = self.cluster.kubectl();
        command.args(args);
        let Some(input) = stdin else {
            return command.output().expect("kubectl runs");
        };
        let mut child = command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("kubectl runs");
        child
            .stdin
            .take()
            .expect("stdin")
            .write_all(input.to_string().as_bytes())
            .expect("write kubectl's stdin");
        child.wait_with_output().expect("kubectl runs")
    }

    /// `kubectl <verb> -f <fixture> -o json`.
    fn submit(&self, verb: &str, name: &str) -> Submitted {
        let path = fixture(name);
        let path = path.to_str().expect("UTF-8 path");
        let output = self.kubectl(&[verb, "-f", path, "-o", "json"], None);
        // `apply` prints one List, `create` one object after another.
        let stored = serde_json::Deserializer::from_slice(&output.stdout)
            .into_iter::<Value>()
            .map(|printed| printed.expect("kubectl prints JSON"))
            .flat_map(|printed| match printed["kind"].as_str() {
                Some("List") => printed["items"].as_array().cloned().unwrap_or_default(),
                _ => vec![printed],
            })
            .collect();
        let errors = String::from_utf8_lossy(&output.stderr)
            .lines()
            .filter(|line| !line.trim().is_empty())
            .map(|line| line.replace(path, "<fixture>"))
            .collect();
        Submitted {
            output,
            stored,
            errors,
        }
    }

    /// Submits a fixture (`kubectl apply`, or `kubectl create` for generated names) and checks
    /// that every object in it was accepted; the objects as stored, in the file's order.
    fn submit_accepted(&self, verb: &str, name: &str) -> Vec<Value> {
        let submitted = self.submit(verb, name);
        assert!(
            submitted.output.status.success(),
            "kubectl {verb} -f {name} refused objects Kueue accepts:\n{}",
            submitted.errors.join("\n")
        );
        let expected: Vec<String> = documents(name).iter().map(identity).collect();
        let stored: Vec<String> = submitted.stored.iter().map(identity).collect();
        assert_eq!(stored, expected, "{name}: the objects stored");
        submitted.stored
    }

    fn apply(&self, name: &str) -> Vec<Value> {
        self.submit_accepted("apply", name)
    }

    fn get_json(&self, args: &[&str]) -> Value {
        let mut all = vec!["get"];
        all.extend_from_slice(args);
        all.extend_from_slice(&["-o", "json"]);
        let output = self.kubectl(&all, None);
        assert!(
            output.status.success(),
            "kubectl {}: {}",
            all.join(" "),
            String::from_utf8_lossy(&output.stderr)
        );
        serde_json::from_slice(&output.stdout).expect("kubectl prints JSON")
    }

    /// The Workload owned by the object with `uid`, once the admitter has created it.
    fn workload_of(&self, namespace: &str, uid: &str) -> Option<Value> {
        let list = self.get_json(&["workloads.kueue.x-k8s.io", "-n", namespace]);
        list["items"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|workload| {
                workload
                    .pointer("/metadata/ownerReferences")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .any(|owner| owner["uid"] == uid)
            })
            .cloned()
    }

    /// Polls `probe` until it returns a value; panics with what it waited for and kuota's log.
    async fn wait_until<T>(&self, what: &str, mut probe: impl FnMut() -> Option<T>) -> T {
        let mut found = None;
        let outcome = eventually(WAIT, what, || {
            found = probe();
            std::future::ready(found.is_some())
        })
        .await;
        match (outcome, found) {
            (Ok(()), Some(value)) => value,
            (outcome, _) => panic!(
                "{outcome:?}\nkuota log:\n{}",
                self.kuota.process.log_tail(40)
            ),
        }
    }

    /// Waits until the apiserver calls Kuota's webhooks (their configurations reach its cache
    /// asynchronously): the validating one refuses a Job naming a missing LocalQueue, the
    /// mutating one gives a ResourceFlavor Kueue's finalizer.
    async fn wait_for_webhooks(&self) {
        let job = json!({
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": {
                "namespace": "default",
                "name": "webhook-probe",
                "labels": {QUEUE_NAME_LABEL: "docs-no-such-queue"},
            },
            "spec": {"template": {"spec": {
                "restartPolicy": "Never",
                "containers": [{"name": "probe", "image": "busybox"}],
            }}},
        });
        let flavor = json!({
            "apiVersion": "kueue.x-k8s.io/v1beta2",
            "kind": "ResourceFlavor",
            "metadata": {"name": "docs-webhook-probe"},
        });
        let dry_run = ["create", "--dry-run=server", "-o", "json", "-f", "-"];
        self.wait_until("Kuota's validating webhooks are called", || {
            let output = self.kubectl(&dry_run, Some(&job));
            String::from_utf8_lossy(&output.stderr)
                .contains("denied the request")
                .then_some(())
        })
        .await;
        self.wait_until("Kuota's mutating webhooks are called", || {
            let output = self.kubectl(&dry_run, Some(&flavor));
            let created: Value = serde_json::from_slice(&output.stdout).ok()?;
            (created.pointer("/metadata/finalizers") == Some(&json!([RESOURCE_IN_USE_FINALIZER])))
                .then_some(())
        })
        .await;
    }
}

#[test]
fn every_fixture_is_submitted_by_a_test() {
    let mut on_disk: Vec<String> = yaml_files(&repo_path(FIXTURES))
        .iter()
        .map(|path| {
            path.file_name()
                .expect("file name")
                .to_string_lossy()
                .into_owned()
        })
        .collect();
    on_disk.sort();
    assert_eq!(on_disk, ALL_FIXTURES);
}

/// Kueue's quick start: a flavor with only a name, a ClusterQueue and a LocalQueue, then a Job
/// naming the LocalQueue: accepted, suspended, admitted, completed. Then Jobs and JobSets with
/// generated names, submitted with `kubectl create` as the docs do.
#[tokio::test]
async fn quick_start_job_is_admitted_and_completes() {
    let harness = harness().await;
    let setup = harness.apply(QUICK_START_SETUP);
    let flavor = setup
        .iter()
        .find(|object| object["kind"] == "ResourceFlavor")
        .expect("the flavor");
    assert_eq!(
        flavor.pointer("/metadata/finalizers"),
        Some(&json!([RESOURCE_IN_USE_FINALIZER])),
        "the flavor is stored with Kueue's finalizer"
    );

    let stored = harness.apply(QUICK_START_JOB);
    assert_eq!(
        assert_jobs_queued(QUICK_START_JOB, &stored),
        ["Job kueue-docs-quick-start/hello-queue"]
    );
    let uid = text_at(&stored[0], "/metadata/uid").to_owned();
    let workload = harness
        .wait_until("the quick-start Workload is admitted", || {
            harness
                .workload_of("kueue-docs-quick-start", &uid)
                .filter(|w| {
                    condition_is_true(w, "QuotaReserved") && condition_is_true(w, "Admitted")
                })
        })
        .await;
    assert_eq!(
        workload.pointer("/status/admission/clusterQueue"),
        Some(&json!("docs-quick-start"))
    );
    assert_eq!(
        workload.pointer("/status/admission/podSetAssignments/0/flavors"),
        Some(&json!({"cpu": "docs-default-flavor", "memory": "docs-default-flavor"}))
    );
    harness
        .wait_until("the quick-start Job completes", || {
            let job = harness.get_json(&["job", "hello-queue", "-n", "kueue-docs-quick-start"]);
            condition_is_true(&job, "Complete").then_some(())
        })
        .await;
    harness
        .wait_until("the quick-start Workload is finished", || {
            harness
                .workload_of("kueue-docs-quick-start", &uid)
                .filter(|w| condition_is_true(w, "Finished"))
        })
        .await;

    let generated = harness.submit_accepted("create", QUICK_START_GENERATE_NAME);
    assert_eq!(
        assert_jobs_queued(QUICK_START_GENERATE_NAME, &generated),
        [
            "Job kueue-docs-quick-start/sleepy-*",
            "JobSet kueue-docs-quick-start/sleepy-set-*"
        ]
    );
}

/// The administrator's setup (flavors, cohorts, ClusterQueues of every policy, priority
/// classes, LocalQueues), then a job of every kind: each stored suspended with its label; the
/// CronJob keeps the label on its jobTemplate and the Job it starts is queued; priority classes
/// reach the Workloads.
#[tokio::test]
async fn admin_setup_and_a_job_of_every_kind() {
    let harness = harness().await;
    harness.apply(ADMIN_SETUP);
    let stored = harness.apply(EVERY_JOB_KIND);
    assert_eq!(
        assert_jobs_queued(EVERY_JOB_KIND, &stored),
        [
            "Job kueue-docs-team-a/train-with-priority",
            "Job kueue-docs-team-b/already-suspended",
            "JobSet kueue-docs-team-a/trainer-set",
            "RayJob kueue-docs-team-a/ray-batch",
            "RayCluster kueue-docs-team-a/ray-notebook",
            "MPIJob kueue-docs-team-a/mpi-pi",
            "PyTorchJob kueue-docs-team-a/pytorch-mnist",
            "TFJob kueue-docs-team-a/tf-mnist",
            "XGBoostJob kueue-docs-team-a/xgboost-iris",
            "PaddleJob kueue-docs-team-a/paddle-check",
            "JAXJob kueue-docs-team-a/jax-simple",
        ]
    );

    // Kueue leaves the CronJob alone; the Jobs it starts carry the jobTemplate's label.
    let cron_job = stored
        .iter()
        .find(|object| object["kind"] == "CronJob")
        .expect("the CronJob");
    assert_eq!(
        (
            cron_job.pointer("/spec/suspend"),
            cron_job.pointer("/spec/jobTemplate/metadata/labels"),
        ),
        (
            Some(&json!(false)),
            Some(&json!({QUEUE_NAME_LABEL: "research"}))
        )
    );
    let output = harness.kubectl(
        &[
            "create",
            "job",
            "nightly-report-now",
            "--from=cronjob/nightly-report",
            "-n",
            "kueue-docs-team-a",
            "-o",
            "json",
        ],
        None,
    );
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let started: Value = serde_json::from_slice(&output.stdout).expect("kubectl prints JSON");
    assert_eq!(
        (started.pointer("/spec/suspend"), queue_label(&started)),
        (Some(&json!(true)), Some("research")),
        "the Job started from the CronJob is queued"
    );

    for (job, class, value) in [
        ("train-with-priority", "docs-production", 10000),
        ("mpi-pi", "docs-development", 100),
    ] {
        let uid = stored
            .iter()
            .find(|object| object.pointer("/metadata/name") == Some(&json!(job)))
            .map(|object| text_at(object, "/metadata/uid").to_owned())
            .expect("the job");
        let workload = harness
            .wait_until(&format!("the Workload of {job}"), || {
                harness.workload_of("kueue-docs-team-a", &uid)
            })
            .await;
        assert_eq!(
            (
                workload.pointer("/spec/priorityClassRef"),
                workload.pointer("/spec/priority"),
            ),
            (
                Some(
                    &json!({"group": "kueue.x-k8s.io", "kind": "WorkloadPriorityClass", "name": class})
                ),
                Some(&json!(value)),
            ),
            "{job}'s Workload has its WorkloadPriorityClass"
        );
    }
}

/// A Job asking for 8 pods with `job-min-parallelism: 2` in a ClusterQueue with room for 3 is
/// admitted with 3 and started with parallelism 3.
#[tokio::test]
async fn partial_admission_runs_the_pods_that_fit() {
    let harness = harness().await;
    let stored = harness.apply(PARTIAL_ADMISSION);
    assert_eq!(
        assert_jobs_queued(PARTIAL_ADMISSION, &stored),
        ["Job kueue-docs-partial/shrinkable"]
    );
    let job = stored.last().expect("the Job");
    let uid = text_at(job, "/metadata/uid").to_owned();
    let workload = harness
        .wait_until("the partial Workload is admitted", || {
            harness
                .workload_of("kueue-docs-partial", &uid)
                .filter(|w| condition_is_true(w, "Admitted"))
        })
        .await;
    assert_eq!(
        (
            workload.pointer("/spec/podSets/0/count"),
            workload.pointer("/spec/podSets/0/minCount"),
            workload.pointer("/status/admission/podSetAssignments/0/count"),
        ),
        (Some(&json!(8)), Some(&json!(2)), Some(&json!(3)))
    );
    let started = harness
        .wait_until("the partial Job starts", || {
            let job = harness.get_json(&["job", "shrinkable", "-n", "kueue-docs-partial"]);
            (job.pointer("/spec/suspend") == Some(&json!(false))).then_some(job)
        })
        .await;
    assert_eq!(started.pointer("/spec/parallelism"), Some(&json!(3)));
}

#[tokio::test]
async fn topology_aware_queues_and_jobs_are_accepted() {
    let harness = harness().await;
    let stored = harness.apply(TOPOLOGY_AWARE);
    assert_eq!(
        assert_jobs_queued(TOPOLOGY_AWARE, &stored),
        [
            "Job kueue-docs-tas/same-block-if-possible",
            "Job kueue-docs-tas/one-rack",
            "Job kueue-docs-tas/anywhere",
            "Job kueue-docs-tas/gpus-on-one-host",
        ]
    );
}

#[tokio::test]
async fn admission_checks_and_their_jobs_are_accepted() {
    let harness = harness().await;
    let stored = harness.apply(ADMISSION_CHECKS);
    assert_eq!(
        assert_jobs_queued(ADMISSION_CHECKS, &stored),
        ["Job kueue-docs-checks/needs-gpus"]
    );
}

#[tokio::test]
async fn multikueue_manager_setup_and_its_jobs_are_accepted() {
    let harness = harness().await;
    let stored = harness.apply(MULTIKUEUE);
    assert_eq!(
        assert_jobs_queued(MULTIKUEUE, &stored),
        [
            "Job kueue-docs-multikueue/pinned-to-a-host",
            "Job kueue-docs-multikueue/placed-by-flavor",
        ]
    );
}

#[tokio::test]
async fn admission_fair_sharing_queues_and_jobs_are_accepted() {
    let harness = harness().await;
    let stored = harness.apply(ADMISSION_FAIR_SHARING);
    assert_eq!(
        assert_jobs_queued(ADMISSION_FAIR_SHARING, &stored),
        [
            "Job kueue-docs-fair-sharing/light-experiment",
            "Job kueue-docs-fair-sharing/heavy-experiment",
        ]
    );
}

/// Elastic jobs (Kueue's `ElasticJobsViaWorkloadSlices`, on by default since Kueue 0.18). Kuota
/// implements no workload slices, a deliberate difference until it does: the elastic batch Job
/// is admitted at its declared size, and the autoscaling RayJob and RayCluster, which Kueue admits
/// through slices, are refused with a message saying what Kuota lacks and what to change.
#[tokio::test]
async fn elastic_jobs_queue_at_their_size_and_autoscaling_ray_jobs_are_refused() {
    let harness = harness().await;
    let submitted = harness.submit("apply", ELASTIC_JOBS);
    assert!(!submitted.output.status.success());
    let creating = r#"error when creating "<fixture>""#;
    let no_slices = "Invalid value: true: Kuota does not implement workload slices (Kueue's \
                     ElasticJobsViaWorkloadSlices), so it cannot queue an elastic job that \
                     autoscales; set it to false to queue the job at its declared size";
    assert_eq!(
        submitted.errors,
        [
            format!(
                r#"Error from server (Forbidden): {creating}: admission webhook "vrayjob.kb.io" denied the request: spec.rayClusterSpec.enableInTreeAutoscaling: {no_slices}"#
            ),
            format!(
                r#"Error from server (Forbidden): {creating}: admission webhook "vraycluster.kb.io" denied the request: spec.enableInTreeAutoscaling: {no_slices}"#
            ),
        ]
    );
    // Its live suspend flag is not asserted: the admitter may already have started it.
    let job = harness.get_json(&["job", "-n", "kueue-docs-elastic", "scalable"]);
    assert_eq!(
        job["metadata"]["labels"]["kueue.x-k8s.io/queue-name"],
        "elastic-queue"
    );
    let uid = text_at(&job, "/metadata/uid").to_owned();
    let workload = harness
        .wait_until("the elastic Job's Workload is admitted", || {
            harness
                .workload_of("kueue-docs-elastic", &uid)
                .filter(|w| condition_is_true(w, "Admitted"))
        })
        .await;
    assert_eq!(
        workload.pointer("/status/admission/podSetAssignments/0/count"),
        Some(&json!(2)),
        "admitted at its declared parallelism"
    );
}

/// What Kueue's documentation calls invalid, or Kueue refuses although an example shows it,
/// is refused with the message Kueue's CRDs and webhooks give, and is not stored (only the
/// namespace the refused Ray jobs are sent to is).
#[tokio::test]
async fn what_kueue_refuses_is_refused() {
    let harness = harness().await;
    let submitted = harness.submit("apply", REFUSED_BY_KUEUE);
    assert!(!submitted.output.status.success());
    let creating = r#"error when creating "<fixture>""#;
    assert_eq!(
        submitted.errors,
        [
            format!(
                r#"Error from server (BadRequest): {creating}: ClusterQueue in version "v1beta2" cannot be handled as a ClusterQueue: strict decoding error: unknown field "spec.admissionChecks""#
            ),
            format!(
                r#"Error from server (Forbidden): {creating}: admission webhook "vclusterqueue.kb.io" denied the request: spec.admissionChecksStrategy.admissionChecks[0].onFlavors[0]: Unsupported value: "docs-default-flavor""#
            ),
            format!(
                r#"Error from server (Forbidden): {creating}: admission webhook "vclusterqueue.kb.io" denied the request: spec.resourceGroups[1].flavors[0].name: Duplicate value: "docs-on-demand""#
            ),
            format!(
                r#"Error from server (Invalid): {creating}: ClusterQueue.kueue.x-k8s.io "docs-refused-borrow-without-reclaim" is invalid: spec.preemption: Invalid value: "object": reclaimWithinCohort=Never and borrowWithinCohort.Policy!=Never"#
            ),
            format!(
                r#"Error from server (Invalid): {creating}: ClusterQueue.kueue.x-k8s.io "docs-refused-preference" is invalid: spec.flavorFungibility: Invalid value: "object": preference can only be set when both whenCanBorrow and whenCanPreempt are TryNextFlavor"#
            ),
            format!(
                r#"Error from server (Invalid): {creating}: ResourceFlavor.kueue.x-k8s.io "docs-refused-tas-flavor" is invalid: spec: Invalid value: "object": no such key: nodeLabels evaluating rule: at least one nodeLabel is required when topology is set"#
            ),
            format!(
                r#"Error from server (Invalid): {creating}: Topology.kueue.x-k8s.io "docs-refused-topology" is invalid: spec.levels: Invalid value: "array": the kubernetes.io/hostname label can only be used at the lowest level of topology"#
            ),
            format!(
                r#"Error from server (Invalid): {creating}: AdmissionCheck.kueue.x-k8s.io "docs-refused-no-controller" is invalid: spec.controllerName: Invalid value: "": spec.controllerName in body should be at least 1 chars long"#
            ),
            format!(
                r#"Error from server (Forbidden): {creating}: admission webhook "vrayjob.kb.io" denied the request: spec.rayClusterSpec.enableInTreeAutoscaling: Invalid value: true: a kueue managed job should only use autoscaling when workload slicing is enabled"#
            ),
            format!(
                r#"Error from server (Forbidden): {creating}: admission webhook "vraycluster.kb.io" denied the request: spec.enableInTreeAutoscaling: Invalid value: true: a kueue-managed RayCluster can use autoscaling only as an elastic job: enable the ElasticJobsViaWorkloadSlices feature gate and set the "kueue.x-k8s.io/elastic-job": "true" annotation"#
            ),
        ]
    );
    // kubectl prints no objects when any was refused: ask for each.
    harness.get_json(&["namespace", "kueue-docs-refused"]);
    for document in documents(REFUSED_BY_KUEUE) {
        let kind = text_at(&document, "/kind");
        if kind == "Namespace" {
            continue;
        }
        let group = text_at(&document, "/apiVersion")
            .split('/')
            .next()
            .expect("group");
        let resource = format!("{kind}.{group}");
        let name = text_at(&document, "/metadata/name");
        let namespace = match text_at(&document, "/metadata/namespace") {
            "" => "default",
            namespace => namespace,
        };
        let output = harness.kubectl(
            &[
                "get",
                &resource,
                name,
                "-n",
                namespace,
                "--ignore-not-found",
                "-o",
                "name",
            ],
            None,
        );
        assert!(output.status.success());
        assert_eq!(
            String::from_utf8_lossy(&output.stdout),
            "",
            "{resource} {name} is not stored"
        );
    }
}
