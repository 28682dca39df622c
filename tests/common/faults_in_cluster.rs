//! For `helm_install_e2e`: faults with the controller in two pods on the real node, while Jobs keep arriving in a
//! ClusterQueue that runs ten at a time, each change checked by the independent watcher
//! (`tests/common/watcher.rs`): the leader pod deleted; the leader's process killed with
//! SIGKILL; the leader cut off from the API server for a while (its packets to the
//! `kubernetes` Service dropped inside its network namespace); the webhook scaled to zero (Job
//! creation fails closed, nothing slips through); and, scaling up again with the certificate
//! Secret gone, the new pod killed the moment it has written the Secret.

use std::collections::BTreeMap;
use std::process::{Command, Output};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use k8s_openapi::api::admissionregistration::v1::MutatingWebhookConfiguration;
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{Pod, Secret, Service};
use kube::api::{DeleteParams, ListParams, PostParams};
use kube::{Api, Client, ResourceExt};
use kuota::api::v1beta2::{ClusterQueue, LocalQueue, ResourceFlavor, Workload};
use kuota::k8s::quantity::resource_value;
use kuota::testing::objects::{cluster_queue, flavor_with, local_queue};
use kuota_cluster::{assert_success, eventually, job_is_complete};
use serde_json::{Value, json};

use crate::common::json::from_json;
use crate::common::watcher::{
    Ledger, Watcher, burst_job, burst_size_from_env, create_until_done, describe_unfinished,
    one_finished_workload_each,
};
use crate::{CERT_SECRET, DEPLOYMENT, LEASE, NAMESPACE, WAIT, fail_with, pod_process, rolled_out};

/// The namespace, flavor and ClusterQueue of the Jobs that run through the faults.
const FAULTS: &str = "faults";
const JOB_CPU: &str = "100m";
const NOMINAL_CPU: &str = "1";
/// One Job every so often while a fault happens.
const CREATE_EVERY: Duration = Duration::from_millis(100);
/// How long one creation is retried while the webhook is unreachable.
const CREATE_PATIENCE: Duration = Duration::from_secs(120);

/// What the faults measured.
pub struct Figures {
    /// Leader pod deleted until the other pod holds the Lease.
    pub deleted_failover: Duration,
    /// Creations that failed (and were retried) while the leader pod was deleted.
    pub deleted_failed_creations: usize,
    /// Leader killed with SIGKILL until the other pod holds the Lease.
    pub killed_failover: Duration,
    pub killed_failed_creations: usize,
    /// Partition start until the cut-off leader logs that it stopped admitting ...
    pub partition_stopped: Duration,
    /// ... and until the other pod logs that it took the Lease.
    pub partition_taken_over: Duration,
    pub partition_failed_creations: usize,
    /// Certificate Secret written until the process that wrote it was killed.
    pub killed_after_secret: Duration,
    /// Jobs created through all of it, each admitted once and completed.
    pub jobs: usize,
    /// Creations of the `KUOTA_BURST_JOBS` burst that failed (and were retried) on the way.
    pub burst_failed_creations: usize,
    /// Workload changes and Job starts the watcher checked.
    pub watched_events: usize,
    pub watched_starts: usize,
    /// What `kubectl create job` said with no webhook pod.
    pub webhook_down_message: String,
}

/// Jobs created one after another until stopped.
struct Stream {
    stop: Arc<AtomicBool>,
    task: tokio::task::JoinHandle<(usize, usize)>,
}

impl Stream {
    /// Starts creating Jobs `<prefix>-000`, `<prefix>-001`, ... in `jobs`.
    fn start(jobs: &Api<Job>, prefix: &str) -> Self {
        Self::up_to(jobs, prefix, usize::MAX)
    }

    /// Starts creating at most `limit` Jobs.
    fn up_to(jobs: &Api<Job>, prefix: &str, limit: usize) -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let (jobs, prefix, stopped) = (jobs.clone(), prefix.to_owned(), Arc::clone(&stop));
        let task = tokio::spawn(async move {
            let (mut created, mut failed) = (0, 0);
            while created < limit && !stopped.load(Ordering::SeqCst) {
                let job = burst_job(&format!("{prefix}-{created:03}"), FAULTS, JOB_CPU);
                failed += create_until_done(&jobs, &job, CREATE_PATIENCE).await;
                created += 1;
                tokio::time::sleep(CREATE_EVERY).await;
            }
            (created, failed)
        });
        Self { stop, task }
    }

    /// Stops after the creation under way; returns (Jobs created, failed attempts).
    async fn stop(self) -> (usize, usize) {
        self.stop.store(true, Ordering::SeqCst);
        self.finish().await
    }

    /// Waits until every Job of a bounded stream is created; returns as [`Self::stop`] does.
    async fn finish(self) -> (usize, usize) {
        self.task.await.expect("the stream of Jobs")
    }
}

/// The identity holding the leader Lease (client-go's `<pod>_<random>`).
async fn holder(leases: &Api<Lease>) -> Option<String> {
    leases.get(LEASE).await.ok()?.spec?.holder_identity
}

/// The pod an identity names.
fn pod_of(identity: &str) -> &str {
    identity.split_once('_').map_or(identity, |(pod, _)| pod)
}

/// Waits until another identity than `old` holds the Lease (another pod, or the same pod's
/// restarted container); returns it and how long that took since `since`.
async fn taken_over(
    leases: &Api<Lease>,
    old: &str,
    since: Instant,
    kubectl: &impl Fn(&[&str]) -> Output,
) -> (String, Duration) {
    let deadline = since + Duration::from_secs(90);
    loop {
        if let Some(new) = holder(leases).await.filter(|new| new != old) {
            return (new, since.elapsed());
        }
        if Instant::now() > deadline {
            fail_with(
                kubectl,
                &["get", "lease", "-n", NAMESPACE, "-o", "yaml"],
                format!("nobody took the Lease from {old}"),
            );
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

fn pod_uid(pods: &BTreeMap<String, Pod>, name: &str) -> String {
    pods.get(name)
        .and_then(|pod| pod.uid())
        .unwrap_or_else(|| panic!("{name} is one of the ready pods: {:?}", pods.keys()))
}

fn sigkill(pid: u32) {
    let killed = Command::new("kill")
        .args(["-KILL", &pid.to_string()])
        .status()
        .expect("run kill");
    assert!(killed.success(), "kill -KILL {pid}");
}

/// Drops (or, with `-D`, stops dropping) every packet from the process `pid`'s network
/// namespace to the API server's Service address.
fn partition(pid: u32, api_server: &str, action: &str) {
    let status = Command::new("nsenter")
        .args(["--target", &pid.to_string(), "--net", "iptables", action])
        .args([
            "OUTPUT", "-d", api_server, "-p", "tcp", "--dport", "443", "-j", "DROP",
        ])
        .status()
        .expect("run nsenter iptables");
    assert!(status.success(), "iptables {action} in the pod's namespace");
}

/// When the pod logged `message` last (its JSON log lines' `timestamp`).
fn logged_at(kubectl: &impl Fn(&[&str]) -> Output, pod: &str, message: &str) -> jiff::Timestamp {
    let logs = kubectl(&["logs", "-n", NAMESPACE, pod]);
    assert_success(&logs);
    String::from_utf8_lossy(&logs.stdout)
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .filter(|line| line["message"] == message)
        .filter_map(|line| line["timestamp"].as_str()?.parse().ok())
        .next_back()
        .unwrap_or_else(|| panic!("{pod} never logged {message:?}"))
}

fn since(start: jiff::Timestamp, end: jiff::Timestamp) -> Duration {
    Duration::try_from(end.duration_since(start)).unwrap_or_else(|_| {
        panic!("{end} is before {start}");
    })
}

/// Runs the faults against the Deployment's two ready pods; leaves one pod running.
pub async fn with_two_replicas(client: &Client, kubectl: &impl Fn(&[&str]) -> Output) -> Figures {
    assert_success(&kubectl(&["create", "namespace", FAULTS]));
    let create = PostParams::default();
    Api::<ResourceFlavor>::all(client.clone())
        .create(&create, &flavor_with(FAULTS, json!({})))
        .await
        .expect("create the flavor");
    let queue = cluster_queue(FAULTS).group(&["cpu"], &[(FAULTS, &[("cpu", NOMINAL_CPU)])]);
    Api::<ClusterQueue>::all(client.clone())
        .create(&create, &queue.build())
        .await
        .expect("create the ClusterQueue");
    Api::<LocalQueue>::namespaced(client.clone(), FAULTS)
        .create(&create, &local_queue(FAULTS, FAULTS, FAULTS))
        .await
        .expect("create the LocalQueue");
    let key = (FAULTS.to_owned(), FAULTS.to_owned(), "cpu".to_owned());
    let nominal = resource_value("cpu", &from_json(json!(NOMINAL_CPU))).expect("quantity");
    let watcher = Watcher::start(
        client,
        FAULTS,
        Ledger::with_nominal(BTreeMap::from([(key.clone(), nominal)])),
    );
    let jobs: Api<Job> = Api::namespaced(client.clone(), FAULTS);
    let leases: Api<Lease> = Api::namespaced(client.clone(), NAMESPACE);
    let mut created = 0;
    // With `KUOTA_BURST_JOBS=N`, N more Jobs arrive from before the first fault until all are
    // created, so every fault lands in that burst (RELIABILITY.md records a run with 2,000).
    let burst =
        burst_size_from_env().map(|jobs_in_burst| Stream::up_to(&jobs, "burst", jobs_in_burst));

    // The leader pod deleted: it gives the Lease up as it stops.
    let old = holder(&leases).await.expect("a leader");
    let stream = Stream::start(&jobs, "deleted");
    tokio::time::sleep(Duration::from_secs(2)).await;
    let deleted = Instant::now();
    assert_success(&kubectl(&[
        "delete",
        "pod",
        "-n",
        NAMESPACE,
        pod_of(&old),
        "--wait=false",
    ]));
    let (_, deleted_failover) = taken_over(&leases, &old, deleted, kubectl).await;
    tokio::time::sleep(Duration::from_secs(3)).await;
    let (count, deleted_failed_creations) = stream.stop().await;
    created += count;
    let pods = rolled_out(client, kubectl, 2).await;

    // The leader killed: its Lease expires and the other pod takes it.
    let old = holder(&leases).await.expect("a leader");
    let stream = Stream::start(&jobs, "killed");
    tokio::time::sleep(Duration::from_secs(2)).await;
    let killed = Instant::now();
    sigkill(pod_process(&pod_uid(&pods, pod_of(&old))));
    let (_, killed_failover) = taken_over(&leases, &old, killed, kubectl).await;
    tokio::time::sleep(Duration::from_secs(3)).await;
    let (count, killed_failed_creations) = stream.stop().await;
    created += count;
    let pods = rolled_out(client, kubectl, 2).await;

    // The leader cut off from the API server: it stops admitting before the other pod takes
    // the Lease, and campaigns again once the packets flow.
    let api_server = Api::<Service>::namespaced(client.clone(), "default")
        .get("kubernetes")
        .await
        .expect("the kubernetes Service")
        .spec
        .and_then(|spec| spec.cluster_ip)
        .expect("its cluster IP");
    let old = holder(&leases).await.expect("a leader");
    let pid = pod_process(&pod_uid(&pods, pod_of(&old)));
    let stream = Stream::start(&jobs, "partitioned");
    tokio::time::sleep(Duration::from_secs(2)).await;
    let cut = jiff::Timestamp::now();
    partition(pid, &api_server, "-I");
    let (new, _) = taken_over(&leases, &old, Instant::now(), kubectl).await;
    partition(pid, &api_server, "-D");
    tokio::time::sleep(Duration::from_secs(3)).await;
    let (count, partition_failed_creations) = stream.stop().await;
    created += count;
    let stopped = logged_at(
        kubectl,
        pod_of(&old),
        "lost the leader Lease; stopped admitting",
    );
    let took = logged_at(kubectl, pod_of(&new), "acquired the leader Lease");
    assert!(
        stopped < took,
        "{old} stopped admitting at {stopped}, before {new} took the Lease at {took}"
    );
    let (partition_stopped, partition_taken_over) = (since(cut, stopped), since(cut, took));

    // No webhook pod: Job creation fails closed, with the reason.
    let scale = |replicas: &str| {
        assert_success(&kubectl(&[
            "scale",
            "deployment",
            DEPLOYMENT,
            "-n",
            NAMESPACE,
            &format!("--replicas={replicas}"),
        ]));
    };
    scale("0");
    let all_pods: Api<Pod> = Api::namespaced(client.clone(), NAMESPACE);
    eventually(WAIT, "no controller pod is left", || async {
        all_pods
            .list(&ListParams::default().labels("control-plane=controller-manager"))
            .await
            .is_ok_and(|list| list.items.is_empty())
    })
    .await
    .expect("scaled to zero");
    let refused = kubectl(&[
        "create",
        "job",
        "while-down",
        "-n",
        FAULTS,
        "--image=busybox",
    ]);
    assert!(!refused.status.success(), "created with no webhook");
    let webhook_down_message = String::from_utf8_lossy(&refused.stderr).trim().to_owned();
    assert_eq!(
        webhook_down_message,
        "error: failed to create job: Internal error occurred: failed calling webhook \
         \"mjob.kb.io\": failed to call webhook: Post \
         \"https://kueue-webhook-service.kueue-system.svc:443/mutate-batch-v1-job?timeout=10s\": \
         no endpoints available for service \"kueue-webhook-service\""
    );
    let absent = kubectl(&["get", "job", "while-down", "-n", FAULTS]);
    assert!(!absent.status.success(), "nothing slipped through");

    // Up again without its certificate Secret; killed as soon as it has written a new one.
    let secrets: Api<Secret> = Api::namespaced(client.clone(), NAMESPACE);
    secrets
        .delete(CERT_SECRET, &DeleteParams::default())
        .await
        .expect("delete the certificate Secret");
    scale("1");
    let written = loop {
        if secrets.get_opt(CERT_SECRET).await.ok().flatten().is_some() {
            break Instant::now();
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    };
    let writer = all_pods
        .list(&ListParams::default().labels("control-plane=controller-manager"))
        .await
        .expect("the controller's pods")
        .items
        .pop()
        .expect("the pod that wrote the Secret");
    sigkill(pod_process(&writer.uid().expect("a pod UID")));
    let killed_after_secret = written.elapsed();
    let pods = rolled_out(client, kubectl, 1).await;
    let restarts = pods
        .values()
        .next()
        .and_then(|pod| {
            pod.status
                .as_ref()?
                .container_statuses
                .as_ref()?
                .first()
                .cloned()
        })
        .map(|status| status.restart_count);
    assert_eq!(restarts, Some(1), "the killed container was restarted");
    let ca = secrets
        .get(CERT_SECRET)
        .await
        .expect("the certificate Secret")
        .data
        .and_then(|mut data| data.remove("ca.crt"))
        .expect("its CA");
    let mutating = Api::<MutatingWebhookConfiguration>::all(client.clone())
        .get("kueue-mutating-webhook-configuration")
        .await
        .expect("the mutating webhook configuration");
    for webhook in mutating.webhooks.unwrap_or_default() {
        assert_eq!(
            webhook.client_config.ca_bundle.as_ref(),
            Some(&ca),
            "{} trusts the Secret's CA",
            webhook.name
        );
    }
    let stream = Stream::start(&jobs, "restarted");
    tokio::time::sleep(Duration::from_secs(3)).await;
    let (count, _) = stream.stop().await;
    created += count;

    let (mut burst_failed_creations, mut completion) = (0, WAIT);
    if let Some(burst) = burst {
        let (count, failed) = burst.finish().await;
        created += count;
        burst_failed_creations = failed;
        // Ten at a time, each a few seconds from admission to completion on kwok.
        completion =
            completion.max(Duration::from_millis(500) * u32::try_from(created).unwrap_or(u32::MAX));
    }

    let workloads: Api<Workload> = Api::namespaced(client.clone(), FAULTS);
    let all_complete = eventually(
        completion,
        "every Job completes with one finished Workload",
        || async {
            let complete = jobs.list(&ListParams::default()).await.is_ok_and(|list| {
                list.items.len() == created && list.items.iter().all(job_is_complete)
            });
            complete && one_finished_workload_each(&jobs, &workloads).await
        },
    )
    .await;
    if let Err(error) = all_complete {
        let unfinished = describe_unfinished(&jobs, &workloads).await;
        fail_with(
            kubectl,
            &["get", "workloads", "-n", FAULTS],
            format!("{error}:\n{unfinished}"),
        );
    }
    let ledger = watcher.finish();
    assert!(
        ledger.violations.is_empty(),
        "the watcher saw {} violations:\n{}",
        ledger.violations.len(),
        ledger.violations.join("\n")
    );
    assert_eq!(ledger.peak.get(&key), Some(&nominal), "the queue was full");
    assert_eq!((ledger.admitted.len(), ledger.starts), (created, created));

    assert_success(&kubectl(&["delete", "namespace", FAULTS, "--wait=true"]));
    assert_success(&kubectl(&["delete", "clusterqueue", FAULTS, "--wait=true"]));
    assert_success(&kubectl(&[
        "delete",
        "resourceflavor",
        FAULTS,
        "--wait=true",
    ]));
    Figures {
        deleted_failover,
        deleted_failed_creations,
        killed_failover,
        killed_failed_creations,
        partition_stopped,
        partition_taken_over,
        partition_failed_creations,
        killed_after_secret,
        jobs: created,
        burst_failed_creations,
        watched_events: ledger.events,
        watched_starts: ledger.starts,
        webhook_down_message,
    }
}
