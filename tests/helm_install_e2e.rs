//! The source document's install steps with Kuota's chart, on the test control plane with a real
//! node: `helm install` with the document's `values.yaml`, the controller really running in a
//! pod (non-root, read-only root, no capabilities), queues and every job kind admitted through
//! the in-cluster webhook, `/metrics` scraped through its Service, `helm upgrade` turning a
//! feature gate off and then running two replicas through faults (`common/faults_in_cluster.rs`:
//! leader deleted, killed and cut off from the API server, the webhook scaled to zero, a pod
//! killed as it writes its certificate Secret), then `helm uninstall` and the namespace
//! deleted, leaving nothing of Kuota behind. Last, the controller's RBAC is held to what it
//! called in all of that, from the API server's audit log: every call allowed, every rule used.
//!
//! Only the chart reference changes from the document, plus a second values file that places
//! the controller on the real node and runs the locally built image (there is no registry).

mod common {
    pub mod audit;
    pub mod dev_tools;
    pub mod faults_in_cluster;
    pub mod json;
    pub mod log_leaks;
    pub mod watcher;
}

use std::cell::Cell;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{Pod, Secret, Service};
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding, Role, RoleBinding, Subject};
use kube::api::{ListParams, ObjectList};
use kube::{Api, Client, ResourceExt};
use kuota::api::v1beta2::Workload;
use kuota_cluster::{REAL_NODE_TAINT, TestCluster, assert_success, eventually, job_is_complete};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use common::audit::{self, Access, Mismatch};
use common::dev_tools::dev_script;
use common::log_leaks;

const WAIT: Duration = Duration::from_secs(180);
const NAMESPACE: &str = "kueue-system";
const DEPLOYMENT: &str = "kueue-controller-manager";
const CERT_SECRET: &str = "kueue-webhook-server-cert";
/// The ServiceAccount the controller runs as, as the API server names its user.
const CONTROLLER_USER: &str = "system:serviceaccount:kueue-system:kueue-controller-manager";
/// Kueue's default leader election Lease.
const LEASE: &str = "c1f6bfd2.kueue.x-k8s.io";

/// The image `dev/image/build.sh` writes, as a pod names it.
const IMAGE_REPOSITORY: &str = "kuota";
const IMAGE_TAG: &str = "dev";

fn repo(relative: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(relative)
}

fn utf8(path: &Path) -> &str {
    path.to_str().expect("a UTF-8 path")
}

/// Runs `command` and returns its output, printing it as a user would see it.
fn run(command: &mut Command) -> Output {
    let output = command.output().expect("run a command");
    eprintln!(
        "$ {command:?}\n{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    output
}

fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// Prints what `kubectl` says with `what`, and the controller's log, then fails with `error`.
fn fail_with(
    kubectl: &impl Fn(&[&str]) -> Output,
    what: &[&str],
    error: impl std::fmt::Display,
) -> ! {
    kubectl(what);
    // A Job that never completes: its status, and its pods' phases and nodes.
    kubectl(&[
        "get",
        "jobs",
        "-A",
        "-l",
        "kueue.x-k8s.io/queue-name",
        "-o",
        "yaml",
    ]);
    for namespace in ["team-a", "team-b"] {
        kubectl(&["get", "pods", "-n", namespace, "-o", "yaml"]);
    }
    // A pod that never leaves Pending is the node's or the scheduler's story.
    kubectl(&["get", "nodes", "-o", "wide"]);
    kubectl(&["get", "events", "-A", "--sort-by=.lastTimestamp"]);
    kubectl(&[
        "logs",
        "-n",
        NAMESPACE,
        "-l",
        "control-plane=controller-manager",
        "--tail=200",
    ]);
    panic!("{error}")
}

/// Values that put the controller on the real node with the image imported there.
fn placement_values(dir: &Path) -> PathBuf {
    let path = dir.join("placement.yaml");
    std::fs::write(
        &path,
        format!(
            "controllerManager:\n\
             \x20 manager:\n\
             \x20   image: {{repository: {IMAGE_REPOSITORY}, tag: {IMAGE_TAG}, pullPolicy: Never}}\n\
             \x20 nodeSelector: {{{REAL_NODE_TAINT}: \"true\"}}\n\
             \x20 tolerations:\n\
             \x20 - {{key: {REAL_NODE_TAINT}, operator: Equal, value: \"true\", effect: NoSchedule}}\n"
        ),
    )
    .expect("write the placement values");
    path
}

/// The document's feature gates with `LocalQueueMetrics` turned off (a list replaces a list).
fn local_queue_metrics_off(dir: &Path) -> PathBuf {
    let path = dir.join("gates.yaml");
    std::fs::write(
        &path,
        "controllerManager:\n\
         \x20 featureGates:\n\
         \x20 - {name: TopologyAwareScheduling, enabled: true}\n\
         \x20 - {name: LocalQueueMetrics, enabled: false}\n",
    )
    .expect("write the feature gate values");
    path
}

/// The controller's pods that are running and ready, by name.
async fn ready_pods(client: &Client) -> BTreeMap<String, Pod> {
    let pods: Api<Pod> = Api::namespaced(client.clone(), NAMESPACE);
    let list = pods
        .list(&ListParams::default().labels("control-plane=controller-manager"))
        .await
        .map(|list| list.items)
        .unwrap_or_default();
    list.into_iter()
        .filter(|pod| pod.metadata.deletion_timestamp.is_none())
        .filter(|pod| {
            pod.status
                .as_ref()
                .and_then(|status| status.conditions.as_ref())
                .is_some_and(|conditions| {
                    conditions
                        .iter()
                        .any(|c| c.type_ == "Ready" && c.status == "True")
                })
        })
        .map(|pod| (pod.name_any(), pod))
        .collect()
}

/// Waits until the Deployment has rolled out `replicas` ready pods, none left of an older
/// revision, and returns them by name.
async fn rolled_out(
    client: &Client,
    kubectl: &impl Fn(&[&str]) -> Output,
    replicas: i32,
) -> BTreeMap<String, Pod> {
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), NAMESPACE);
    let pods: Api<Pod> = Api::namespaced(client.clone(), NAMESPACE);
    eventually(
        WAIT,
        &format!("{DEPLOYMENT} has {replicas} ready"),
        || async {
            let Ok(deployment) = deployments.get(DEPLOYMENT).await else {
                return false;
            };
            let status = deployment.status.unwrap_or_default();
            let all = pods
                .list(&ListParams::default().labels("control-plane=controller-manager"))
                .await
                .map_or(usize::MAX, |list| list.items.len());
            status.observed_generation == deployment.metadata.generation
                && status.updated_replicas == Some(replicas)
                && status.ready_replicas == Some(replicas)
                && status.replicas == Some(replicas)
                && all == usize::try_from(replicas).expect("a count")
        },
    )
    .await
    .unwrap_or_else(|error| fail_with(kubectl, &["describe", "pods", "-n", NAMESPACE], error));
    ready_pods(client).await
}

/// The host's PID of the `kuota` process in the pod with `uid` (its cgroup path names the pod).
fn pod_process(uid: &str) -> u32 {
    let marker = format!("pod{uid}");
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").expect("read /proc").flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let comm = std::fs::read_to_string(format!("/proc/{pid}/comm")).unwrap_or_default();
        let cgroup = std::fs::read_to_string(format!("/proc/{pid}/cgroup")).unwrap_or_default();
        if comm.trim() == "kuota" && cgroup.contains(&marker) {
            found.push(pid);
        }
    }
    assert_eq!(found.len(), 1, "one kuota process in pod {uid}: {found:?}");
    found[0]
}

/// The value of `field` in `/proc/<pid>/status`, e.g. `Uid` or `VmHWM`.
fn proc_status(pid: u32, field: &str) -> String {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("read status");
    status
        .lines()
        .find_map(|line| line.strip_prefix(&format!("{field}:")))
        .unwrap_or_else(|| panic!("no {field} in /proc/{pid}/status"))
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
}

/// The options of the root mount as the process `pid` sees it.
fn root_mount_options(pid: u32) -> String {
    let mounts = std::fs::read_to_string(format!("/proc/{pid}/mountinfo")).expect("mountinfo");
    mounts
        .lines()
        .map(|line| line.split(' ').collect::<Vec<_>>())
        .find(|fields| fields.get(4) == Some(&"/"))
        .and_then(|fields| fields.get(5).map(|options| (*options).to_owned()))
        .expect("a root mount")
}

/// The metrics Service's `https://<cluster IP>:<port>/metrics`: from this machine, the real
/// node's kube-proxy routes it to a pod.
async fn metrics_url(client: &Client) -> String {
    let services: Api<Service> = Api::namespaced(client.clone(), NAMESPACE);
    let service = services
        .get("kueue-controller-manager-metrics-service")
        .await
        .expect("the metrics Service");
    let spec = service.spec.expect("a Service spec");
    let ip = spec.cluster_ip.expect("a cluster IP");
    let port = spec.ports.expect("ports")[0].port;
    format!("https://{ip}:{port}/metrics")
}

/// Status and body of `GET url`, with `token` as the bearer token if given.
async fn scrape(https: &reqwest::Client, url: &str, token: Option<&str>) -> (u16, String) {
    let mut request = https.get(url);
    if let Some(token) = token {
        request = request.bearer_auth(token);
    }
    match request.send().await {
        Ok(response) => {
            let status = response.status().as_u16();
            (status, response.text().await.unwrap_or_default())
        }
        Err(error) => (0, error.to_string()),
    }
}

/// The sum of the samples of metric `name` whose labels include every one of `labels`.
fn sum_of(text: &str, name: &str, labels: &[&str]) -> f64 {
    text.lines()
        .filter(|line| line.starts_with(&format!("{name}{{")))
        .filter(|line| labels.iter().all(|label| line.contains(label)))
        .filter_map(|line| line.rsplit_once(' '))
        .map(|(_, value)| value.parse::<f64>().expect("a sample value"))
        .sum()
}

/// A Job CREATE AdmissionReview, as the API server sends it, for a Job with a queue label.
fn job_review(uid: &str) -> Value {
    let job = json!({
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "direct", "namespace": "team-a", "labels": {"kueue.x-k8s.io/queue-name": "team-a"}},
        "spec": {"template": {"spec": {
            "restartPolicy": "Never",
            "containers": [{"name": "c", "image": "busybox", "resources": {"requests": {"cpu": "100m"}}}]
        }}}
    });
    json!({
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {
            "uid": uid,
            "kind": {"group": "batch", "version": "v1", "kind": "Job"},
            "resource": {"group": "batch", "version": "v1", "resource": "jobs"},
            "name": "direct",
            "namespace": "team-a",
            "operation": "CREATE",
            "userInfo": {"username": "alice"},
            "object": job,
            "dryRun": false
        }
    })
}

/// The permissions bound to the controller's ServiceAccount, through every ClusterRoleBinding
/// and RoleBinding naming it.
async fn controller_permissions(client: &Client) -> BTreeSet<Access> {
    let names_controller = |subjects: &Option<Vec<Subject>>| {
        subjects.iter().flatten().any(|s| {
            s.kind == "ServiceAccount"
                && s.name == DEPLOYMENT
                && s.namespace.as_deref() == Some(NAMESPACE)
        })
    };
    let mut granted = BTreeSet::new();
    let cluster_bindings: ObjectList<ClusterRoleBinding> = Api::all(client.clone())
        .list(&ListParams::default())
        .await
        .expect("list ClusterRoleBindings");
    let cluster_roles: Api<ClusterRole> = Api::all(client.clone());
    for binding in cluster_bindings
        .items
        .iter()
        .filter(|b| names_controller(&b.subjects))
    {
        let role = cluster_roles
            .get(&binding.role_ref.name)
            .await
            .expect("a bound ClusterRole");
        granted.extend(audit::permissions(&role.rules.unwrap_or_default(), None));
    }
    let bindings: ObjectList<RoleBinding> = Api::all(client.clone())
        .list(&ListParams::default())
        .await
        .expect("list RoleBindings");
    for binding in bindings
        .items
        .iter()
        .filter(|b| names_controller(&b.subjects))
    {
        let namespace = binding.namespace().expect("a namespaced binding");
        let rules = if binding.role_ref.kind == "ClusterRole" {
            cluster_roles
                .get(&binding.role_ref.name)
                .await
                .expect("a bound ClusterRole")
                .rules
        } else {
            Api::<Role>::namespaced(client.clone(), &namespace)
                .get(&binding.role_ref.name)
                .await
                .expect("a bound Role")
                .rules
        };
        granted.extend(audit::permissions(
            &rules.unwrap_or_default(),
            Some(&namespace),
        ));
    }
    granted
}

/// The resource of a job kind Kuota integrates, for owner references.
fn job_plural(group: &str, kind: &str) -> Option<String> {
    kuota::jobs::FRAMEWORKS
        .iter()
        .map(|framework| framework.kind())
        .find(|job| job.group == group && job.kind == kind)
        .map(|job| job.plural.to_owned())
}

/// The samples: namespaces, flavors, two teams' queues in a cohort, and their Jobs, each run to
/// completion. Returns the seconds from creating the Jobs to the first one started, and to all
/// complete.
async fn run_sample_jobs(client: &Client, kubectl: &impl Fn(&[&str]) -> Output) -> (f64, f64) {
    for sample in [
        "00-namespaces.yaml",
        "10-resourceflavors.yaml",
        "20-clusterqueues.yaml",
        "30-localqueues.yaml",
    ] {
        apply_sample(kubectl, sample);
    }
    let jobs_file = repo("manifests/samples/40-jobs.yaml");
    assert_success(&kubectl(&["create", "-f", utf8(&jobs_file)]));
    let jobs: Api<Job> = Api::all(client.clone());
    let jobs_created = Instant::now();
    let first_admitted = Cell::new(None);
    eventually(WAIT, "every sample Job completes", || async {
        let Ok(list) = jobs
            .list(&ListParams::default().labels("kueue.x-k8s.io/queue-name"))
            .await
        else {
            return false;
        };
        let started = list
            .items
            .iter()
            .any(|job| job.spec.as_ref().and_then(|spec| spec.suspend) == Some(false));
        if started && first_admitted.get().is_none() {
            first_admitted.set(Some(jobs_created.elapsed().as_secs_f64()));
        }
        !list.items.is_empty() && list.items.iter().all(job_is_complete)
    })
    .await
    .unwrap_or_else(|error| fail_with(kubectl, &["get", "workloads", "-A"], error));
    (
        first_admitted.get().unwrap_or_default(),
        jobs_created.elapsed().as_secs_f64(),
    )
}

/// Applies `manifests/samples/<sample>` server-side.
fn apply_sample(kubectl: &impl Fn(&[&str]) -> Output, sample: &str) {
    let path = repo(&format!("manifests/samples/{sample}"));
    assert_success(&kubectl(&["apply", "--server-side", "-f", utf8(&path)]));
}

/// The container as the kernel runs it: not root, no capabilities, a read-only root.
fn assert_hardened(pid: u32) {
    assert_eq!(
        (
            proc_status(pid, "Uid"),
            proc_status(pid, "CapEff"),
            proc_status(pid, "CapPrm"),
            proc_status(pid, "NoNewPrivs"),
        ),
        (
            "65532 65532 65532 65532".to_owned(),
            "0000000000000000".to_owned(),
            "0000000000000000".to_owned(),
            "1".to_owned()
        )
    );
    assert!(
        root_mount_options(pid)
            .split(',')
            .any(|option| option == "ro"),
        "the root filesystem is mounted read-only: {}",
        root_mount_options(pid)
    );
}

/// Every other job kind, admitted and started by the in-cluster controller; returns the kinds.
async fn admit_every_kind(
    client: &Client,
    kubectl: &impl Fn(&[&str]) -> Output,
) -> BTreeSet<String> {
    for sample in [
        "50-jobset.yaml",
        "51-rayjob.yaml",
        "52-raycluster.yaml",
        "53-mpijob.yaml",
        "54-pytorchjob.yaml",
        "55-tfjob.yaml",
        "56-xgboostjob.yaml",
        "57-paddlejob.yaml",
        "58-jaxjob.yaml",
    ] {
        apply_sample(kubectl, sample);
    }
    let workloads: Api<Workload> = Api::namespaced(client.clone(), "team-a");
    let admitted_owner_kinds = || async {
        workloads
            .list(&ListParams::default())
            .await
            .map(|list| {
                list.items
                    .iter()
                    .filter(|w| {
                        w.status.as_ref().is_some_and(|s| {
                            s.conditions
                                .iter()
                                .any(|c| c.type_ == "Admitted" && c.status == "True")
                        })
                    })
                    .flat_map(|w| w.owner_references().iter().map(|o| o.kind.clone()))
                    .collect::<BTreeSet<_>>()
            })
            .unwrap_or_default()
    };
    let every_kind: BTreeSet<String> = kuota::jobs::FRAMEWORKS
        .iter()
        .map(|framework| framework.kind().kind.to_owned())
        .collect();
    eventually(WAIT, "a job of every kind is admitted", || async {
        admitted_owner_kinds().await == every_kind
    })
    .await
    .unwrap_or_else(|error| fail_with(kubectl, &["get", "workloads", "-A"], error));
    every_kind
}

/// The controller's logs of `pods` show none of the certificate Secret's private keys, nor
/// `token`, nor a whole object.
async fn assert_logs_keep_secrets(
    client: &Client,
    kubectl: &impl Fn(&[&str]) -> Output,
    pods: &[&str],
    token: &str,
) {
    let secret = Api::<Secret>::namespaced(client.clone(), NAMESPACE)
        .get(CERT_SECRET)
        .await
        .expect("the certificate Secret");
    let keys: Vec<(String, String)> = secret
        .data
        .unwrap_or_default()
        .into_iter()
        .filter(|(name, _)| name.ends_with(".key"))
        .map(|(name, bytes)| (name, String::from_utf8_lossy(&bytes.0).into_owned()))
        .collect();
    assert_eq!(
        keys.iter()
            .map(|(name, _)| name.as_str())
            .collect::<Vec<_>>(),
        ["ca.key", "tls.key"]
    );
    let mut secrets = vec![log_leaks::Secret {
        what: "the metrics scraper's token",
        text: token,
    }];
    for (name, pem) in &keys {
        secrets.extend(
            log_leaks::pem_lines(pem)
                .into_iter()
                .map(|line| log_leaks::Secret {
                    what: name.as_str(),
                    text: line,
                }),
        );
    }
    let mut found = Vec::new();
    for pod in pods {
        let logs = kubectl(&["logs", "-n", NAMESPACE, pod]);
        assert_success(&logs);
        let logs = stdout(&logs);
        assert!(
            logs.contains("webhook server listening"),
            "{pod} logs: {logs}"
        );
        found.extend(log_leaks::leaks(pod, &logs, &secrets));
    }
    assert!(found.is_empty(), "the controller's logs leak: {found:#?}");
}

/// Each pod answers a Job's AdmissionReview at its own IP, with the same patch.
async fn assert_both_answer_the_webhook(https: &reqwest::Client, pods: &BTreeMap<String, Pod>) {
    let mut answers = BTreeMap::new();
    for (name, pod) in pods {
        let ip = pod
            .status
            .as_ref()
            .and_then(|status| status.pod_ip.clone())
            .expect("a pod IP");
        let response = https
            .post(format!("https://{ip}:9443/mutate-batch-v1-job"))
            .json(&job_review(name))
            .send()
            .await
            .unwrap_or_else(|error| panic!("pod {name} answers the webhook: {error}"));
        assert_eq!(response.status().as_u16(), 200, "pod {name}");
        let review: Value = response.json().await.expect("an AdmissionReview");
        assert_eq!(review["response"]["uid"], json!(name));
        assert_eq!(
            review["response"]["allowed"],
            json!(true),
            "pod {name}: {review}"
        );
        answers.insert(name.clone(), review["response"]["patch"].clone());
    }
    let patches: Vec<&Value> = answers.values().collect();
    assert_eq!(patches[0], patches[1], "both pods give the same patch");
    let patch = patches[0];
    // kube-rs writes the patch's bytes as a JSON array, which Go's decoder takes for []byte.
    let patch: Vec<u8> = serde_json::from_value(patch.clone()).expect("the patch's bytes");
    let patch: Vec<Value> = serde_json::from_slice(&patch).expect("a JSON patch");
    assert!(
        patch.contains(&json!({"op": "add", "path": "/spec/suspend", "value": true})),
        "the patch suspends the Job: {patch:?}"
    );
}

/// No object with `kueue` in its name is left, in any namespace, of the kinds Kuota creates.
/// The visibility API answers through the API server's aggregation layer: its APIService is
/// available and team-a's ClusterQueue lists its pending workloads (none by now).
async fn assert_visibility_answers(kubectl: &impl Fn(&[&str]) -> Output, when: &str) {
    let path = "/apis/visibility.kueue.x-k8s.io/v1beta2/clusterqueues/team-a/pendingworkloads";
    let answered = || async {
        let output = kubectl(&["get", "--raw", path]);
        output.status.success()
            && serde_json::from_slice::<Value>(&output.stdout)
                .is_ok_and(|summary| summary["kind"] == "PendingWorkloadsSummary")
    };
    eventually(
        WAIT,
        &format!("the visibility API answers ({when})"),
        answered,
    )
    .await
    .unwrap_or_else(|error| {
        fail_with(
            kubectl,
            &[
                "get",
                "apiservice",
                "v1beta2.visibility.kueue.x-k8s.io",
                "-o",
                "yaml",
            ],
            error,
        )
    });
}

fn assert_nothing_of_ours_left(kubectl: &impl Fn(&[&str]) -> Output) {
    for kind in [
        "mutatingwebhookconfigurations",
        "validatingwebhookconfigurations",
        "crds",
        "clusterroles",
        "clusterrolebindings",
        "leases",
        "secrets",
        "rolebindings",
        "roles",
        "apiservices",
    ] {
        let left = kubectl(&["get", kind, "--all-namespaces", "-o", "name"]);
        assert_success(&left);
        let ours: Vec<String> = stdout(&left)
            .lines()
            .filter(|name| name.contains("kueue"))
            .map(str::to_owned)
            .collect();
        assert_eq!(ours, Vec::<String>::new(), "{kind} left after uninstall");
    }
}

/// The RBAC the chart grants is exactly what the controller called for: its pods' calls until
/// the uninstall (which deletes the rules before the pods), and the uninstall hook's.
fn assert_rbac_is_what_was_called(
    log: &str,
    audited_before_uninstall: usize,
    granted: &BTreeSet<Access>,
) {
    let (before, during) = log.split_at(
        log[..audited_before_uninstall]
            .rfind('\n')
            .map_or(0, |end| end + 1),
    );
    let mut made = audit::calls(before, by_controller, job_plural);
    made.extend(audit::calls(
        during,
        |event| {
            by_controller(event)
                && audit::pod_name(event).is_some_and(|pod| pod.starts_with(UNINSTALL_HOOK))
        },
        job_plural,
    ));
    assert!(
        !made.is_empty(),
        "the controller's calls are in the audit log"
    );
    let granted_names: BTreeSet<String> = granted.iter().map(ToString::to_string).collect();
    let unreached = unreached();
    let stale: Vec<&String> = unreached
        .keys()
        .filter(|row| !granted_names.contains(*row))
        .collect();
    assert_eq!(
        stale,
        Vec::<&String>::new(),
        "unreached rows the rules do not grant"
    );
    let mut mismatch = audit::mismatch(granted, &made);
    mismatch
        .unused
        .retain(|unused| !unreached.contains_key(unused));
    assert_eq!(mismatch, Mismatch::default());
}

#[test]
fn the_rbac_check_finds_refused_calls_unlisted_calls_and_unused_rules() {
    let rules: Vec<k8s_openapi::api::rbac::v1::PolicyRule> = serde_json::from_value(json!([
        {"apiGroups": ["kueue.x-k8s.io"], "resources": ["workloads"], "verbs": ["create", "list"]},
        {"apiGroups": ["batch"], "resources": ["jobs/finalizers"], "verbs": ["update"]},
        {"apiGroups": ["admissionregistration.k8s.io"], "resources": ["mutatingwebhookconfigurations"],
         "resourceNames": ["ours", "theirs"], "verbs": ["patch"]},
    ]))
    .expect("rules");
    let granted = audit::permissions(&rules, None);
    let event = |verb: &str, object: Value, extra: Value| {
        let mut event = json!({"verb": verb, "user": {"username": CONTROLLER_USER}, "objectRef": object,
                              "responseStatus": {"code": 200}});
        event
            .as_object_mut()
            .expect("an object")
            .extend(extra.as_object().expect("an object").clone());
        event.to_string()
    };
    let log = [
        event(
            "create",
            json!({"apiGroup": "kueue.x-k8s.io", "resource": "workloads", "namespace": "a"}),
            json!({"requestObject": {"metadata": {"ownerReferences": [
                {"apiVersion": "batch/v1", "kind": "Job", "name": "pi", "blockOwnerDeletion": true}]}}}),
        ),
        event(
            "patch",
            json!({"apiGroup": "admissionregistration.k8s.io", "resource": "mutatingwebhookconfigurations", "name": "ours"}),
            json!({}),
        ),
        event(
            "get",
            json!({"apiGroup": "", "resource": "secrets", "namespace": "a", "name": "s"}),
            json!({"annotations": {"authorization.k8s.io/decision": "forbid"}, "responseStatus": {"code": 403}}),
        ),
        event(
            "watch",
            json!({"apiGroup": "kueue.x-k8s.io", "resource": "workloads"}),
            json!({}),
        ),
        // Another account's calls and discovery are not the controller's.
        event(
            "get",
            json!({"apiGroup": "", "resource": "pods", "namespace": "a"}),
            json!({"user": {"username": "system:serviceaccount:a:b"}}),
        ),
        json!({"verb": "get", "user": {"username": CONTROLLER_USER}, "requestURI": "/apis"}).to_string(),
    ]
    .join("\n");
    let made = audit::calls(&log, by_controller, job_plural);
    assert_eq!(
        audit::mismatch(&granted, &made),
        Mismatch {
            refused: vec!["get core/secrets s in a".to_owned()],
            unlisted: vec!["watch kueue.x-k8s.io/workloads".to_owned()],
            unused: vec![
                "patch admissionregistration.k8s.io/mutatingwebhookconfigurations theirs"
                    .to_owned(),
                "list kueue.x-k8s.io/workloads".to_owned(),
            ],
        }
    );
}

#[test]
fn the_log_check_finds_tokens_key_lines_private_keys_and_whole_objects() {
    let key = "-----BEGIN PRIVATE KEY-----\nMIGHAgEAMBMGByqGSM49AgEGCCqGSM49\nAwEHBG0wawIBAQQg\n-----END PRIVATE KEY-----\n";
    assert_eq!(
        log_leaks::pem_lines(key),
        ["MIGHAgEAMBMGByqGSM49AgEGCCqGSM49", "AwEHBG0wawIBAQQg"]
    );
    let secrets = [
        log_leaks::Secret {
            what: "the token",
            text: "eyJhbGciOi.secret",
        },
        log_leaks::Secret {
            what: "tls.key",
            text: "AwEHBG0wawIBAQQg",
        },
    ];
    let log = concat!(
        "{\"level\":\"INFO\",\"message\":\"admitted\",\"workload\":\"team-a/job-1\"}\n",
        "authorization: Bearer eyJhbGciOi.secret\n",
        "read key AwEHBG0wawIBAQQg\n",
        "-----BEGIN EC PRIVATE KEY-----\n",
        "{\"object\":{\"metadata\":{\"name\":\"x\"}}}\n",
        "Workload { metadata: ObjectMeta { name: Some(\"x\") } }\n",
    );
    assert_eq!(
        log_leaks::leaks("pod", log, &secrets),
        [
            "pod:2: the token",
            "pod:3: tls.key",
            "pod:4: a PEM private key",
            "pod:5: a whole object (\"metadata\":{)",
            "pod:6: a whole object (ObjectMeta {)",
        ]
    );
    assert!(log_leaks::leaks("pod", "line one\nline two\n", &secrets).is_empty());
}

#[tokio::test]
async fn the_source_documents_install_steps_run_kuota_in_a_pod() {
    kuota::tls::install_crypto_provider();
    let cluster = TestCluster::shared().await;
    let node = cluster.real_node().await;
    let image = dev_script("dev/image/build.sh", &[]);
    node.import_image(&image).expect("import the kuota image");
    let helm = dev_script("dev/helm/build.sh", &[]);
    let plane = cluster.plane();
    let kubeconfig = plane.kubeconfig().to_owned();
    let helm = |args: &[&str]| {
        let mut command = Command::new(&helm);
        command.env("KUBECONFIG", &kubeconfig).args(args);
        run(&mut command)
    };
    let kubectl = |args: &[&str]| run(cluster.kubectl().args(args));
    // The job kinds' own CRDs, as their operators would have installed them.
    let framework_crds: Vec<PathBuf> = std::fs::read_dir(repo("dev/cluster/crds"))
        .expect("dev/cluster/crds")
        .map(|entry| entry.expect("an entry").path())
        .collect();
    plane
        .install_crd_files(&framework_crds)
        .await
        .expect("install the job kinds' CRDs");

    let dir = tempfile::tempdir().expect("a temporary directory");
    let values = repo("tests/data/chart/source-document-values.yaml");
    let placement = placement_values(dir.path());
    let chart = repo("charts/kuota");
    let release_values = ["--values", utf8(&values), "--values", utf8(&placement)];
    let started = Instant::now();
    let install = [
        &[
            "install",
            "kueue",
            utf8(&chart),
            "--create-namespace",
            "--namespace=kueue-system",
        ][..],
        &release_values,
    ]
    .concat();
    assert_success(&helm(&install));

    let list = helm(&["list", "--namespace", NAMESPACE]);
    assert_success(&list);
    let release = stdout(&list);
    let row: Vec<&str> = release
        .lines()
        .nth(1)
        .expect("the release's row")
        .split('\t')
        .map(str::trim)
        .collect();
    assert_eq!((row[0], row[1], row[4]), ("kueue", NAMESPACE, "deployed"));

    let client = cluster.client().await;
    let first_pods = rolled_out(&client, &kubectl, 1).await;
    let ready_after = started.elapsed();
    let deploy = kubectl(&["get", "deploy", "-n", NAMESPACE]);
    assert_success(&deploy);
    let deploy = stdout(&deploy);
    let columns: Vec<&str> = deploy
        .lines()
        .nth(1)
        .expect("the Deployment's row")
        .split_whitespace()
        .collect();
    assert_eq!(&columns[..2], [DEPLOYMENT, "1/1"]);

    let crds = kubectl(&["get", "crds"]);
    assert_success(&crds);
    assert_eq!(
        stdout(&crds)
            .lines()
            .filter(|line| line.contains("kueue"))
            .count(),
        11
    );

    let (first_pod, pod) = first_pods.iter().next().expect("one ready pod");
    let pid = pod_process(&pod.uid().expect("a pod UID"));
    assert_hardened(pid);

    let (first_admitted, completed_after) = run_sample_jobs(&client, &kubectl).await;

    let every_kind = admit_every_kind(&client, &kubectl).await;
    assert_visibility_answers(&kubectl, "first pod").await;

    // `/metrics` through the metrics Service, with a token bound to Kueue's reader role.
    assert_success(&kubectl(&[
        "create",
        "serviceaccount",
        "scraper",
        "-n",
        "team-a",
    ]));
    assert_success(&kubectl(&[
        "create",
        "clusterrolebinding",
        "scraper-metrics",
        "--clusterrole=kueue-metrics-reader",
        "--serviceaccount=team-a:scraper",
    ]));
    let token = kubectl(&["create", "token", "scraper", "-n", "team-a"]);
    assert_success(&token);
    let token = stdout(&token).trim().to_owned();
    let https = reqwest::Client::builder()
        .danger_accept_invalid_certs(true)
        .timeout(Duration::from_secs(10))
        .build()
        .expect("an HTTPS client");
    let url = metrics_url(&client).await;
    let team_a = [r#"name="team-a""#, r#"namespace="team-a""#];
    // Three batch Jobs and one of each other kind went through team-a, each admitted once
    // more if it was preempted (the sample's high-priority Job may preempt a running one).
    let team_a_jobs = 3.0 + (every_kind.len() - 1) as f64;
    let metrics_ready = || async {
        let (status, text) = scrape(&https, &url, Some(&token)).await;
        status == 200
            && sum_of(&text, "kueue_local_queue_admitted_workloads_total", &team_a)
                == team_a_jobs + sum_of(&text, "kueue_local_queue_evicted_workloads_total", &team_a)
    };
    if let Err(error) = eventually(WAIT, "team-a's LocalQueue counts its jobs", metrics_ready).await
    {
        let (status, text) = scrape(&https, &url, Some(&token)).await;
        panic!("{error}: {status}\n{text}")
    }
    let (status, text) = scrape(&https, &url, Some(&token)).await;
    assert_eq!(status, 200);
    assert_eq!(
        (
            sum_of(
                &text,
                "kueue_admitted_workloads_total",
                &[r#"cluster_queue="team-b""#]
            ),
            sum_of(
                &text,
                "kueue_local_queue_admitted_workloads_total",
                &[r#"name="team-b""#]
            ),
            sum_of(
                &text,
                "kueue_local_queue_status",
                &[r#"name="team-a""#, r#"active="True""#]
            ),
        ),
        (1.0, 1.0, 1.0)
    );
    assert_eq!(scrape(&https, &url, None).await.0, 401);
    let rss = (proc_status(pid, "VmRSS"), proc_status(pid, "VmHWM"));
    // The first pod made the certificates, admitted every kind and answered the scrapes.
    assert_logs_keep_secrets(&client, &kubectl, &[first_pod.as_str()], &token).await;

    // A feature gate turned off: the pod rolls and its LocalQueue series are gone.
    let gates = local_queue_metrics_off(dir.path());
    let upgrade = |extra: &[&str]| {
        let args = [
            &["upgrade", "kueue", utf8(&chart), "--namespace", NAMESPACE][..],
            extra,
        ]
        .concat();
        assert_success(&helm(&args));
    };
    upgrade(&[&release_values[..], &["--values", utf8(&gates)]].concat());
    let second_pods = rolled_out(&client, &kubectl, 1).await;
    let (second_pod, pod) = second_pods.iter().next().expect("one ready pod");
    assert_ne!(second_pod, first_pod, "the upgrade replaced the pod");
    let args = pod.spec.as_ref().expect("a pod spec").containers[0]
        .args
        .clone()
        .unwrap_or_default();
    assert!(
        args.contains(
            &"--feature-gates=TopologyAwareScheduling=true,LocalQueueMetrics=false".to_owned()
        ),
        "the new gate is passed: {args:?}"
    );
    eventually(
        WAIT,
        "metrics are served without LocalQueue series",
        || async {
            let (status, text) = scrape(&https, &url, Some(&token)).await;
            status == 200
                && text.contains("kueue_cluster_queue_status{")
                && !text.contains("kueue_local_queue_")
        },
    )
    .await
    .unwrap_or_else(|error| fail_with(&kubectl, &["get", "pods", "-n", NAMESPACE], error));

    // Two replicas: both answer the webhook, one holds the Lease.
    upgrade(&["--reuse-values", "--set", "controllerManager.replicas=2"]);
    let pods = rolled_out(&client, &kubectl, 2).await;
    assert_eq!(pods.len(), 2);
    let leases: Api<Lease> = Api::namespaced(client.clone(), NAMESPACE);
    let holder = || async {
        leases
            .get(LEASE)
            .await
            .ok()
            .and_then(|lease| lease.spec)
            .and_then(|spec| spec.holder_identity)
            .unwrap_or_default()
    };
    eventually(WAIT, "a ready pod holds the Lease", || async {
        let holder = holder().await;
        pods.keys()
            .any(|pod| holder.starts_with(&format!("{pod}_")))
    })
    .await
    .unwrap_or_else(|error| {
        fail_with(
            &kubectl,
            &["get", "lease", "-n", NAMESPACE, "-o", "yaml"],
            error,
        )
    });
    assert_both_answer_the_webhook(&https, &pods).await;
    assert_visibility_answers(&kubectl, "two replicas").await;
    let pod_names: Vec<&str> = pods.keys().map(String::as_str).collect();
    assert_logs_keep_secrets(&client, &kubectl, &pod_names, &token).await;
    let faults = common::faults_in_cluster::with_two_replicas(&client, &kubectl).await;

    let granted = controller_permissions(&client).await;
    let audited_before_uninstall = std::fs::read_to_string(plane.audit_log())
        .expect("the audit log")
        .len();

    assert_success(&helm(&["uninstall", "kueue", "--namespace", NAMESPACE]));
    assert_success(&kubectl(&["delete", "namespace", NAMESPACE, "--wait=true"]));
    assert_nothing_of_ours_left(&kubectl);

    // The same objects as one manifest, applied and deleted with kubectl as Kueue's
    // manifests.yaml is, after the job kinds' objects Helm's release left are gone.
    assert_success(&kubectl(&[
        "delete",
        "namespace",
        "team-a",
        "team-b",
        "--wait=true",
    ]));
    let manifest = Command::new("bash")
        .arg(repo("dev/helm/manifest.sh"))
        .args([NAMESPACE, "--values", utf8(&placement)])
        .output()
        .expect("run dev/helm/manifest.sh");
    assert_success(&manifest);
    let manifest_file = dir.path().join("kuota.yaml");
    std::fs::write(&manifest_file, &manifest.stdout).expect("write the manifest");
    let manifest_file = utf8(&manifest_file);
    assert_success(&kubectl(&["apply", "--server-side", "-f", manifest_file]));
    rolled_out(&client, &kubectl, 1).await;
    run_sample_jobs(&client, &kubectl).await;
    // Queues and flavors first, while the controller is there to release their finalizers.
    for sample in [
        "40-jobs.yaml",
        "30-localqueues.yaml",
        "20-clusterqueues.yaml",
        "10-resourceflavors.yaml",
    ] {
        let path = repo(&format!("manifests/samples/{sample}"));
        assert_success(&kubectl(&["delete", "-f", utf8(&path), "--wait=true"]));
    }
    assert_success(&kubectl(&["delete", "-f", manifest_file, "--wait=true"]));
    assert_nothing_of_ours_left(&kubectl);
    assert_success(&kubectl(&[
        "create",
        "job",
        "after-uninstall",
        "-n",
        "team-b",
        "--image=busybox",
    ]));
    eprintln!(
        "helm install to ready: {:.1}s; to the first sample Job admitted: {:.1}s after it was \
         created ({:.1}s after helm install); sample Jobs created to all complete: {:.1}s; \
         controller RSS after every kind admitted: {} (peak {})",
        ready_after.as_secs_f64(),
        first_admitted,
        ready_after.as_secs_f64() + first_admitted,
        completed_after,
        rss.0,
        rss.1,
    );
    eprintln!(
        "faults with two replicas, {} Jobs, the watcher checked {} Workload changes and {} Job \
         starts, no violation: leader pod deleted -> the other holds the Lease in {:.2}s ({} \
         creations retried); leader SIGKILLed -> {:.2}s ({} retried); leader cut off from the \
         API server -> stopped admitting after {:.2}s, the other took over after {:.2}s ({} \
         retried); no webhook pod -> `{}`; killed {} ms after writing the certificate Secret, \
         then restarted and serving; {} creations of the burst retried",
        faults.jobs,
        faults.watched_events,
        faults.watched_starts,
        faults.deleted_failover.as_secs_f64(),
        faults.deleted_failed_creations,
        faults.killed_failover.as_secs_f64(),
        faults.killed_failed_creations,
        faults.partition_stopped.as_secs_f64(),
        faults.partition_taken_over.as_secs_f64(),
        faults.partition_failed_creations,
        faults.webhook_down_message,
        faults.killed_after_secret.as_millis(),
        faults.burst_failed_creations,
    );

    let log = std::fs::read_to_string(plane.audit_log()).expect("the audit log");
    assert_rbac_is_what_was_called(&log, audited_before_uninstall, &granted);
}

/// The Job `helm uninstall` runs before deleting the release (its pods' names start so).
const UNINSTALL_HOOK: &str = "kueue-release-finalizers-";

fn by_controller(event: &Value) -> bool {
    audit::username(event).as_deref() == Some(CONTROLLER_USER)
}

/// Permissions the chart grants for paths a run may not take, each with the path.
fn unreached() -> BTreeMap<String, &'static str> {
    let mut rows = BTreeMap::from([
        (
            "get core/namespaces".to_owned(),
            "a job in a namespace the cache has not seen yet",
        ),
        (
            "get kueue.x-k8s.io/localqueues".to_owned(),
            "the webhook's lookup of a LocalQueue the cache has not seen yet",
        ),
        (
            "get kueue.x-k8s.io/clusterqueues".to_owned(),
            "the webhook's lookup of a ClusterQueue the cache has not seen yet",
        ),
        (
            "delete kueue.x-k8s.io/workloads".to_owned(),
            "a Workload that no longer matches its job",
        ),
        (
            "create core/secrets in kueue-system".to_owned(),
            "the webhook Secret deleted after install (the chart renders it)",
        ),
        (
            "patch core/pods".to_owned(),
            "the topology ungater letting a gated pod go; no job here asks for a topology",
        ),
    ]);
    let authentication_reader = "Kubernetes' own extension-apiserver-authentication-reader \
        Role, bound as Kueue's chart binds it; the visibility API reads the ConfigMap once at start";
    for row in [
        "list core/configmaps extension-apiserver-authentication in kube-system",
        "watch core/configmaps extension-apiserver-authentication in kube-system",
    ] {
        rows.insert(row.to_owned(), authentication_reader);
    }
    let provisioning =
        "the ProvisioningRequest check, which runs once the autoscaler's CRD is installed";
    for row in [
        "patch kueue.x-k8s.io/admissionchecks/status",
        "list kueue.x-k8s.io/provisioningrequestconfigs",
        "watch kueue.x-k8s.io/provisioningrequestconfigs",
        "create autoscaling.x-k8s.io/provisioningrequests",
        "delete autoscaling.x-k8s.io/provisioningrequests",
        "list autoscaling.x-k8s.io/provisioningrequests",
        "watch autoscaling.x-k8s.io/provisioningrequests",
        "create core/podtemplates",
        "patch core/podtemplates",
    ] {
        rows.insert(row.to_owned(), provisioning);
    }
    for framework in kuota::jobs::FRAMEWORKS {
        let kind = framework.kind();
        rows.insert(
            format!("get {}/{}", kind.group, kind.plural),
            "a job's parent, or a Workload's owner, the cache has not seen yet",
        );
        rows.insert(
            format!("patch {}/{}/status", kind.group, kind.plural),
            "clearing startTime when an evicted job is stopped",
        );
    }
    rows
}
