//! Job defaulting and validation against an in-memory cluster.

use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use super::*;
use crate::api::v1beta2::{
    ClusterQueueSpec, FlavorQuotas, LocalQueue, LocalQueueSpec, ResourceFlavor, ResourceFlavorSpec,
    ResourceGroup, ResourceQuota,
};
use crate::config::LoadOptions;
use crate::jobs::{BatchJob, JobSet, MPI_JOB, RayJob};
use crate::testing::lookup::InMemoryLookup;

// === builders ===

fn config() -> Configuration {
    let mut config = Configuration::from_defaults(&LoadOptions::default()).unwrap();
    config.integrations.frameworks = crate::jobs::FRAMEWORKS
        .iter()
        .map(|framework| framework.name().to_owned())
        .collect();
    config
}

fn job(labels: Value, spec: Value) -> Value {
    json!({
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "pi", "namespace": "team-a", "labels": labels},
        "spec": spec,
    })
}

fn job_spec(parallelism: i32, cpu: &str) -> Value {
    json!({
        "parallelism": parallelism,
        "completions": parallelism,
        "template": {"spec": {
            "restartPolicy": "Never",
            "containers": [{"name": "main", "image": "busybox", "resources": {"requests": {"cpu": cpu}}}]
        }}
    })
}

fn queued_job(queue: &str) -> Value {
    job(json!({QUEUE_NAME_LABEL: queue}), job_spec(1, "1"))
}

fn local_queue(namespace: &str, name: &str, cluster_queue: &str) -> LocalQueue {
    let mut queue = LocalQueue::new(
        name,
        LocalQueueSpec {
            cluster_queue: Some(cluster_queue.to_owned()),
            ..LocalQueueSpec::default()
        },
    );
    queue.metadata.namespace = Some(namespace.to_owned());
    queue
}

fn cluster_queue(name: &str, cpu: &str) -> ClusterQueue {
    ClusterQueue::new(
        name,
        ClusterQueueSpec {
            namespace_selector: Some(Default::default()),
            resource_groups: vec![ResourceGroup {
                covered_resources: vec!["cpu".to_owned()],
                flavors: vec![FlavorQuotas {
                    name: "default".to_owned(),
                    resources: vec![ResourceQuota {
                        name: "cpu".to_owned(),
                        nominal_quota: Quantity(cpu.to_owned()),
                        borrowing_limit: None,
                        lending_limit: None,
                    }],
                }],
            }],
            ..ClusterQueueSpec::default()
        },
    )
}

fn flavor(name: &str) -> ResourceFlavor {
    ResourceFlavor::new(name, ResourceFlavorSpec::default())
}

/// Namespace `team-a` with LocalQueue `team-a` → ClusterQueue `team-a` (8 cpu, flavor default).
fn cluster() -> InMemoryLookup {
    InMemoryLookup::new()
        .with_namespace("team-a", &[])
        .with_namespace("kube-system", &[])
        .with_resource_flavor(flavor("default"))
        .with_cluster_queue(cluster_queue("team-a", "8"))
        .with_local_queue(local_queue("team-a", "team-a", "team-a"))
}

async fn patch_of(
    framework: &dyn JobFramework,
    config: &Configuration,
    state: &InMemoryLookup,
    namespace: &str,
    job: &Value,
) -> Value {
    let defaulted = default_job(framework, config, state, namespace, job).await;
    serde_json::to_value(json_patch::diff(job, &defaulted)).unwrap()
}

async fn verdict(
    config: &Configuration,
    state: &InMemoryLookup,
    old: Option<&Value>,
    new: &Value,
) -> JobVerdict {
    validate_job(&BatchJob, config, state, "team-a", old, new).await
}

fn denied(message: &str) -> JobVerdict {
    JobVerdict {
        denial: Some(message.to_owned()),
        warnings: Vec::new(),
    }
}

// === defaulting ===

#[tokio::test]
async fn a_job_with_a_queue_is_suspended() {
    let config = config();
    let state = cluster();
    assert_eq!(
        patch_of(&BatchJob, &config, &state, "team-a", &queued_job("team-a")).await,
        json!([{"op": "add", "path": "/spec/suspend", "value": true}])
    );
    let mut running = queued_job("team-a");
    running["spec"]["suspend"] = json!(false);
    assert_eq!(
        patch_of(&BatchJob, &config, &state, "team-a", &running).await,
        json!([{"op": "replace", "path": "/spec/suspend", "value": true}])
    );
    let mut suspended = queued_job("team-a");
    suspended["spec"]["suspend"] = json!(true);
    assert_eq!(
        patch_of(&BatchJob, &config, &state, "team-a", &suspended).await,
        json!([])
    );
}

#[tokio::test]
async fn a_job_without_a_queue_is_left_alone() {
    let job = job(json!({}), job_spec(1, "1"));
    assert_eq!(
        patch_of(&BatchJob, &config(), &cluster(), "team-a", &job).await,
        json!([])
    );
}

#[tokio::test]
async fn the_default_local_queue_is_applied_in_managed_namespaces() {
    let state = cluster()
        .with_local_queue(local_queue("team-a", "default", "team-a"))
        .with_local_queue(local_queue("kube-system", "default", "team-a"));
    let unlabelled = json!({
        "apiVersion": "batch/v1", "kind": "Job",
        "metadata": {"name": "pi", "namespace": "team-a"},
        "spec": job_spec(1, "1"),
    });
    assert_eq!(
        patch_of(&BatchJob, &config(), &state, "team-a", &unlabelled).await,
        json!([
            {"op": "add", "path": "/metadata/labels", "value": {QUEUE_NAME_LABEL: "default"}},
            {"op": "add", "path": "/spec/suspend", "value": true}
        ])
    );
    // kube-system is outside the default managedJobsNamespaceSelector.
    let mut system = unlabelled.clone();
    system["metadata"]["namespace"] = json!("kube-system");
    assert_eq!(
        patch_of(&BatchJob, &config(), &state, "kube-system", &system).await,
        json!([])
    );
    // An explicit queue wins.
    assert_eq!(
        patch_of(
            &BatchJob,
            &config(),
            &state,
            "team-a",
            &queued_job("team-a")
        )
        .await,
        json!([{"op": "add", "path": "/spec/suspend", "value": true}])
    );
}

#[tokio::test]
async fn a_child_of_a_managed_job_is_left_to_its_parent() {
    let state = cluster().with_local_queue(local_queue("team-a", "default", "team-a"));
    let mut child = queued_job("team-a");
    child["metadata"]["ownerReferences"] = json!([{
        "apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet", "name": "parent",
        "uid": "u1", "controller": true
    }]);
    assert_eq!(
        patch_of(&BatchJob, &config(), &state, "team-a", &child).await,
        json!([])
    );
    // With the JobSet integration disabled the owner is not managed: the child is suspended.
    let mut only_jobs = config();
    only_jobs.integrations.frameworks = vec!["batch/job".to_owned()];
    assert_eq!(
        patch_of(&BatchJob, &only_jobs, &state, "team-a", &child).await,
        json!([{"op": "add", "path": "/spec/suspend", "value": true}])
    );
    // A non-controller owner does not count.
    child["metadata"]["ownerReferences"][0]["controller"] = json!(false);
    assert_eq!(
        patch_of(&BatchJob, &config(), &state, "team-a", &child).await,
        json!([{"op": "add", "path": "/spec/suspend", "value": true}])
    );
}

#[tokio::test]
async fn the_default_workload_priority_class_is_applied_with_the_gate() {
    let state = cluster().with_workload_priority_class("default");
    assert_eq!(
        patch_of(
            &BatchJob,
            &config(),
            &state,
            "team-a",
            &queued_job("team-a")
        )
        .await,
        json!([
            {"op": "add", "path": "/metadata/labels/kueue.x-k8s.io~1priority-class", "value": "default"},
            {"op": "add", "path": "/spec/suspend", "value": true}
        ])
    );
    let mut gate_off = config();
    gate_off.feature_gates =
        crate::config::FeatureGates::parse("WorkloadPriorityClassDefaulting=false").unwrap();
    assert_eq!(
        patch_of(
            &BatchJob,
            &gate_off,
            &state,
            "team-a",
            &queued_job("team-a")
        )
        .await,
        json!([{"op": "add", "path": "/spec/suspend", "value": true}])
    );
}

#[tokio::test]
async fn manage_jobs_without_queue_name_suspends_in_managed_namespaces_only() {
    let mut config = config();
    config.manage_jobs_without_queue_name = true;
    let unlabelled = job(json!({}), job_spec(1, "1"));
    assert_eq!(
        patch_of(&BatchJob, &config, &cluster(), "team-a", &unlabelled).await,
        json!([{"op": "add", "path": "/spec/suspend", "value": true}])
    );
    assert_eq!(
        patch_of(&BatchJob, &config, &cluster(), "kube-system", &unlabelled).await,
        json!([])
    );
}

#[tokio::test]
async fn other_kinds_are_suspended_at_their_own_field() {
    let config = config();
    let state = cluster();
    let labels = json!({QUEUE_NAME_LABEL: "team-a"});
    let jobset = json!({
        "apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
        "metadata": {"name": "js", "namespace": "team-a", "labels": labels},
        "spec": {"replicatedJobs": []}
    });
    assert_eq!(
        patch_of(&JobSet, &config, &state, "team-a", &jobset).await,
        json!([{"op": "add", "path": "/spec/suspend", "value": true}])
    );
    let mpijob = json!({
        "apiVersion": "kubeflow.org/v2beta1", "kind": "MPIJob",
        "metadata": {"name": "mpi", "namespace": "team-a", "labels": labels},
        "spec": {"mpiReplicaSpecs": {}}
    });
    assert_eq!(
        patch_of(&MPI_JOB, &config, &state, "team-a", &mpijob).await,
        json!([{"op": "add", "path": "/spec/runPolicy", "value": {"suspend": true}}])
    );
    let rayjob = json!({
        "apiVersion": "ray.io/v1", "kind": "RayJob",
        "metadata": {"name": "ray", "namespace": "team-a", "labels": labels},
        "spec": {"suspend": false}
    });
    assert_eq!(
        patch_of(&RayJob, &config, &state, "team-a", &rayjob).await,
        json!([{"op": "replace", "path": "/spec/suspend", "value": true}])
    );
}

// === Kueue's validation ===

#[tokio::test]
async fn a_valid_job_is_admitted_without_warnings() {
    assert_eq!(
        verdict(&config(), &cluster(), None, &queued_job("team-a")).await,
        JobVerdict::default()
    );
}

#[tokio::test]
async fn kueue_rules_on_create_are_aggregated() {
    let invalid = job(
        json!({QUEUE_NAME_LABEL: "Team_A", MAX_EXEC_TIME_SECONDS_LABEL: "soon"}),
        job_spec(1, "1"),
    );
    assert_eq!(
        verdict(&config(), &cluster(), None, &invalid).await,
        denied(concat!(
            r#"[metadata.labels[kueue.x-k8s.io/queue-name]: Invalid value: "Team_A": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"#,
            r#", metadata.labels[kueue.x-k8s.io/max-exec-time-seconds]: Invalid value: "soon": strconv.Atoi: parsing "soon": invalid syntax]"#
        ))
    );
    let negative = job(
        json!({QUEUE_NAME_LABEL: "team-a", MAX_EXEC_TIME_SECONDS_LABEL: "0"}),
        job_spec(1, "1"),
    );
    assert_eq!(
        verdict(&config(), &cluster(), None, &negative).await,
        denied(
            "metadata.labels[kueue.x-k8s.io/max-exec-time-seconds]: Invalid value: 0: should be greater than 0"
        )
    );
}

#[tokio::test]
async fn the_queue_of_a_running_job_cannot_change() {
    let state = cluster().with_local_queue(local_queue("team-a", "q2", "team-a"));
    let mut old = queued_job("team-a");
    old["spec"]["suspend"] = json!(false);
    let mut new = old.clone();
    new["metadata"]["labels"][QUEUE_NAME_LABEL] = json!("q2");
    assert_eq!(
        verdict(&config(), &state, Some(&old), &new).await,
        denied(
            r#"metadata.labels[kueue.x-k8s.io/queue-name]: Invalid value: "q2": field is immutable"#
        )
    );
    // While suspended it may change, to a queue that exists.
    old["spec"]["suspend"] = json!(true);
    new["spec"]["suspend"] = json!(true);
    assert_eq!(
        verdict(&config(), &state, Some(&old), &new).await,
        JobVerdict::default()
    );
    new["metadata"]["labels"][QUEUE_NAME_LABEL] = json!("q3");
    assert_eq!(
        verdict(&config(), &state, Some(&old), &new).await,
        denied(
            r#"LocalQueue "q3" does not exist in namespace "team-a"; LocalQueues in "team-a": q2, team-a"#
        )
    );
}

#[tokio::test]
async fn the_queue_cannot_be_removed_where_a_default_queue_exists() {
    let state = cluster().with_local_queue(local_queue("team-a", "default", "team-a"));
    let mut old = queued_job("team-a");
    old["spec"]["suspend"] = json!(true);
    let mut new = old.clone();
    new["metadata"]["labels"] = json!({});
    assert_eq!(
        verdict(&config(), &state, Some(&old), &new).await,
        denied(
            r#"metadata.labels[kueue.x-k8s.io/queue-name]: Invalid value: "": queue-name must not be empty in namespace with default queue"#
        )
    );
    assert_eq!(
        verdict(&config(), &cluster(), Some(&old), &new).await,
        JobVerdict::default()
    );
}

#[tokio::test]
async fn priority_class_rules_on_update() {
    let mut old = queued_job("team-a");
    old["spec"]["suspend"] = json!(false);
    let mut added = old.clone();
    added["metadata"]["labels"][PRIORITY_CLASS_LABEL] = json!("high");
    assert_eq!(
        verdict(&config(), &cluster(), Some(&old), &added).await,
        denied(
            r#"metadata.labels[kueue.x-k8s.io/priority-class]: Invalid value: "high": WorkloadPriorityClass cannot be added to a non-suspended workload"#
        )
    );
    assert_eq!(
        verdict(&config(), &cluster(), Some(&added), &old).await,
        denied(
            r#"metadata.labels[kueue.x-k8s.io/priority-class]: Invalid value: "": WorkloadPriorityClass cannot be removed from a workload"#
        )
    );
    let mut changed = added.clone();
    changed["metadata"]["labels"][PRIORITY_CLASS_LABEL] = json!("low");
    assert_eq!(
        verdict(&config(), &cluster(), Some(&added), &changed).await,
        JobVerdict::default()
    );
}

#[tokio::test]
async fn kind_rules_come_from_the_framework() {
    let mut job = queued_job("team-a");
    job["metadata"]["annotations"] = json!({"kueue.x-k8s.io/job-min-parallelism": "5"});
    assert_eq!(
        verdict(&config(), &cluster(), None, &job).await,
        denied(
            r#"metadata.annotations[kueue.x-k8s.io/job-min-parallelism]: Invalid value: 5: should be between 0 and 0"#
        )
    );
}

#[tokio::test]
async fn admission_gates_can_only_be_removed() {
    let gated = |value: &str| {
        let mut job = queued_job("team-a");
        job["metadata"]["annotations"] = json!({"kueue.x-k8s.io/admission-gated-by": value});
        job
    };
    assert_eq!(
        verdict(
            &config(),
            &cluster(),
            None,
            &gated("example.com/a,example.com/a")
        )
        .await,
        denied(
            r#"metadata.annotations[kueue.x-k8s.io/admission-gated-by]: Invalid value: "example.com/a,example.com/a": duplicate gate name: example.com/a"#
        )
    );
    assert_eq!(
        verdict(
            &config(),
            &cluster(),
            Some(&gated("example.com/a")),
            &gated("example.com/a,example.com/b")
        )
        .await,
        denied(
            "metadata.annotations[kueue.x-k8s.io/admission-gated-by]: Forbidden: can only remove gates, not add new ones"
        )
    );
    let long = format!("example.com/{}", "x".repeat(60));
    assert_eq!(
        verdict(&config(), &cluster(), None, &gated(&long)).await,
        denied(
            "metadata.annotations[kueue.x-k8s.io/admission-gated-by]: Too long: may not be more than 63 bytes"
        )
    );
}

// === Kuota's queue-reference checks ===

#[tokio::test]
async fn a_missing_local_queue_is_rejected_naming_the_existing_ones() {
    assert_eq!(
        verdict(&config(), &cluster(), None, &queued_job("team-x")).await,
        denied(
            r#"LocalQueue "team-x" does not exist in namespace "team-a"; LocalQueues in "team-a": team-a"#
        )
    );
    let empty = InMemoryLookup::new().with_namespace("team-a", &[]);
    assert_eq!(
        verdict(&config(), &empty, None, &queued_job("team-x")).await,
        denied(
            r#"LocalQueue "team-x" does not exist in namespace "team-a"; there are no LocalQueues in "team-a""#
        )
    );
}

#[tokio::test]
async fn a_local_queue_the_cache_has_not_seen_yet_is_found_live() {
    let state = cluster().live(|live| {
        live.with_local_queue(local_queue("team-a", "fresh", "fresh"))
            .with_cluster_queue(cluster_queue("fresh", "4"))
    });
    assert_eq!(
        verdict(&config(), &state, None, &queued_job("fresh")).await,
        JobVerdict::default()
    );
}

#[tokio::test]
async fn a_local_queue_pointing_to_a_missing_cluster_queue_is_rejected() {
    let state = cluster().with_local_queue(local_queue("team-a", "orphan", "cq-x"));
    assert_eq!(
        verdict(&config(), &state, None, &queued_job("orphan")).await,
        denied(
            r#"LocalQueue "orphan" points to ClusterQueue "cq-x", which does not exist; ClusterQueues: team-a"#
        )
    );
    let bare = InMemoryLookup::new()
        .with_namespace("team-a", &[])
        .with_local_queue(local_queue("team-a", "orphan", "cq-x"));
    assert_eq!(
        verdict(&config(), &bare, None, &queued_job("orphan")).await,
        denied(
            r#"LocalQueue "orphan" points to ClusterQueue "cq-x", which does not exist; there are no ClusterQueues"#
        )
    );
}

#[tokio::test]
async fn a_job_larger_than_its_cluster_queue_can_ever_give_is_rejected() {
    let job = job(json!({QUEUE_NAME_LABEL: "team-a"}), job_spec(4, "5"));
    assert_eq!(
        verdict(&config(), &cluster(), None, &job).await,
        denied(
            r#"the job requests cpu: 20 in pod set main (4 pods × 5), but ClusterQueue "team-a" can never give more than 8 (nominal quota plus what it may borrow)"#
        )
    );
    // The API server knows a larger quota the cache has not seen: no rejection.
    let raised = cluster().live(|live| live.with_cluster_queue(cluster_queue("team-a", "20")));
    assert_eq!(
        verdict(&config(), &raised, None, &job).await,
        JobVerdict::default()
    );
}

#[tokio::test]
async fn under_warn_policy_problems_are_warnings() {
    let mut config = config();
    config.queue_reference_policy = QueueReferencePolicy::Warn;
    assert_eq!(
        verdict(&config, &cluster(), None, &queued_job("team-x")).await,
        JobVerdict {
            denial: None,
            warnings: vec![
                r#"LocalQueue "team-x" does not exist in namespace "team-a"; LocalQueues in "team-a": team-a"#.to_owned()
            ],
        }
    );
}

#[tokio::test]
async fn soft_problems_are_warnings() {
    let mut stopped_lq = local_queue("team-a", "held", "stopped");
    stopped_lq.spec.stop_policy = Some(StopPolicy::Hold);
    let mut stopped_cq = cluster_queue("stopped", "8");
    stopped_cq.spec.stop_policy = Some(StopPolicy::HoldAndDrain);
    stopped_cq.spec.resource_groups[0].flavors[0].name = "gone".to_owned();
    stopped_cq.spec.namespace_selector = None;
    let state = cluster()
        .with_local_queue(stopped_lq)
        .with_cluster_queue(stopped_cq);
    let mut job = queued_job("held");
    job["metadata"]["labels"][PRIORITY_CLASS_LABEL] = json!("urgent");
    assert_eq!(
        verdict(&config(), &state, None, &job).await,
        JobVerdict {
            denial: None,
            warnings: vec![
                r#"LocalQueue "held" is stopped (stopPolicy Hold): the job waits until it is resumed"#.to_owned(),
                r#"ClusterQueue "stopped" is stopped (stopPolicy HoldAndDrain): the job waits until it is resumed"#.to_owned(),
                r#"ClusterQueue "stopped" references missing ResourceFlavor(s): gone: the job waits until they exist"#.to_owned(),
                r#"ClusterQueue "stopped" does not admit workloads from namespace "team-a": it has no namespaceSelector; namespaceSelector: {} admits every namespace"#.to_owned(),
                r#"WorkloadPriorityClass "urgent" does not exist"#.to_owned(),
            ],
        }
    );
}

#[tokio::test]
async fn a_namespace_selector_that_does_not_match_is_a_warning() {
    let mut picky = cluster_queue("picky", "8");
    picky.spec.namespace_selector =
        Some(serde_json::from_value(json!({"matchLabels": {"tier": "gold"}})).unwrap());
    let state = cluster()
        .with_cluster_queue(picky)
        .with_local_queue(local_queue("team-a", "picky", "picky"));
    assert_eq!(
        verdict(&config(), &state, None, &queued_job("picky")).await,
        JobVerdict {
            denial: None,
            warnings: vec![
                r#"ClusterQueue "picky" does not admit workloads from namespace "team-a": its namespaceSelector does not match the namespace's labels"#.to_owned()
            ],
        }
    );
}

#[tokio::test]
async fn unmanaged_jobs_are_not_checked_against_queues() {
    // A child of a managed JobSet.
    let mut child = queued_job("team-x");
    child["metadata"]["ownerReferences"] = json!([{
        "apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet", "name": "parent",
        "uid": "u1", "controller": true
    }]);
    assert_eq!(
        verdict(&config(), &cluster(), None, &child).await,
        JobVerdict::default()
    );
    // A namespace outside managedJobsNamespaceSelector.
    assert_eq!(
        validate_job(
            &BatchJob,
            &config(),
            &cluster(),
            "kube-system",
            None,
            &queued_job("team-x")
        )
        .await,
        JobVerdict::default()
    );
    // An update that keeps the queue.
    let mut old = queued_job("team-x");
    old["spec"]["suspend"] = json!(true);
    assert_eq!(
        verdict(&config(), &cluster(), Some(&old), &old).await,
        JobVerdict::default()
    );
}
