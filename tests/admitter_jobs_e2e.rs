//! The job controllers against a real control plane: Kuota creates a Workload for a suspended
//! job, the test plays the scheduler (writes `status.admission`) and Kuota starts the job on the
//! admitted flavor's nodes, finishes the Workload with the job, stops the job again when its
//! Workload is evicted, lets the garbage collector delete the Workload of a deleted job, and
//! finishes and releases the Workload of a job deleted with its dependents orphaned.
//!
//! All tests share one control plane and one set of controllers, run on one runtime so the
//! controllers outlive each test.

mod common {
    pub mod timestamp;
    pub mod workload;
}

use std::{
    path::PathBuf,
    sync::{Arc, LazyLock},
    time::Duration,
};

use k8s_openapi::api::{batch::v1::Job, core::v1::Pod, events::v1::Event};
use kube::{
    Api, Client, ResourceExt,
    api::{DeleteParams, ListParams, Patch, PatchParams, PostParams},
    core::{ApiResource, DynamicObject},
};
use kuota::{
    admitter::jobs::run_job_controllers,
    api::{crds, v1beta2::Workload},
    config::{Configuration, LoadOptions},
    jobs::{JobFramework, PYTORCH_JOB, workload_name},
    metrics::EventMetrics,
    stores::Stores,
};
use kuota_cluster::{TestCluster, TestNamespace, eventually};
use serde_json::{Value, json};
use tokio::runtime::Runtime;

use common::timestamp::now;
use common::workload::condition;

const CONFIG: &str = r#"
apiVersion: config.kueue.x-k8s.io/v1beta2
kind: Configuration
integrations:
  frameworks: ["batch/job", "kubeflow.org/pytorchjob", "jobset.x-k8s.io/jobset"]
objectRetentionPolicies:
  workloads:
    afterDeactivatedByKueue: 3s
"#;

const WAIT: Duration = Duration::from_secs(60);

static RUNTIME: LazyLock<Runtime> = LazyLock::new(|| {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("tokio runtime")
});

/// The control plane with Kueue's and the job operators' CRDs, flavor `on-demand`, and the job
/// controllers running.
async fn cluster() -> &'static TestCluster {
    static STARTED: tokio::sync::OnceCell<()> = tokio::sync::OnceCell::const_new();
    let cluster = TestCluster::shared().await;
    STARTED
        .get_or_init(|| async {
            // `RUST_LOG=kuota=debug` shows the controllers' decisions.
            let _ = tracing_subscriber::fmt()
                .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
                .try_init();
            let plane = cluster.plane();
            plane.install_crds(&crds::all()).await.expect("Kueue CRDs");
            let third_party = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("dev/cluster/crds");
            plane
                .install_crd_files(&[
                    third_party.join("kubeflow.org_pytorchjobs.yaml"),
                    third_party.join("jobset.x-k8s.io_jobsets.yaml"),
                ])
                .await
                .expect("operator CRDs");
            let client = cluster.client().await;
            let flavors: Api<DynamicObject> = Api::all_with(client.clone(), &flavor_resource());
            let flavor: DynamicObject = serde_json::from_value(json!({
                "apiVersion": "kueue.x-k8s.io/v1beta2",
                "kind": "ResourceFlavor",
                "metadata": {"name": "on-demand"},
                "spec": {"nodeLabels": {"instance-type": "on-demand"}},
            }))
            .expect("flavor");
            flavors
                .patch(
                    "on-demand",
                    &PatchParams::apply("kuota-test").force(),
                    &Patch::Apply(&flavor),
                )
                .await
                .expect("flavor on-demand");

            let config = Configuration::from_yaml(CONFIG, &LoadOptions::default()).expect("config");
            let (stores, drivers) = Stores::new(&client, config.topology_gates().enabled);
            tokio::spawn(drivers.run());
            tokio::spawn(run_job_controllers(
                client,
                Arc::new(config),
                stores,
                EventMetrics::default(),
                std::future::pending(),
            ));
        })
        .await;
    cluster
}

/// A test's own namespace, a client, and the Job and Workload APIs in the namespace.
async fn test_space() -> (TestNamespace, Client, Api<Job>, Api<Workload>) {
    let cluster = cluster().await;
    let ns = cluster.namespace().await;
    let client = cluster.client().await;
    let jobs: Api<Job> = Api::namespaced(client.clone(), ns.name());
    let workloads: Api<Workload> = Api::namespaced(client.clone(), ns.name());
    (ns, client, jobs, workloads)
}

fn flavor_resource() -> ApiResource {
    ApiResource {
        group: "kueue.x-k8s.io".into(),
        version: "v1beta2".into(),
        api_version: "kueue.x-k8s.io/v1beta2".into(),
        kind: "ResourceFlavor".into(),
        plural: "resourceflavors".into(),
    }
}

/// A suspended Job with queue `lq` of `pods` pods requesting `cpu` each.
fn batch_job(name: &str, pods: i32, cpu: &str) -> Job {
    serde_json::from_value(json!({
        "metadata": {"name": name, "labels": {"kueue.x-k8s.io/queue-name": "lq"}},
        "spec": {
            "parallelism": pods,
            "completions": pods,
            "suspend": true,
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {
                    "restartPolicy": "Never",
                    "containers": [{
                        "name": "main",
                        "image": "busybox",
                        "resources": {"requests": {"cpu": cpu}},
                    }],
                },
            },
        },
    }))
    .expect("valid job")
}

/// Waits for the Workload to exist and returns it.
async fn workload_named(workloads: &Api<Workload>, name: &str) -> Workload {
    eventually(WAIT, &format!("Workload {name} created"), || async {
        workloads.get_opt(name).await.ok().flatten().is_some()
    })
    .await
    .expect("the Workload is created");
    workloads.get(name).await.expect("get Workload")
}

/// Plays the scheduler: reserves quota in ClusterQueue `cq` on flavor `on-demand` and admits.
async fn admit(workloads: &Api<Workload>, name: &str, pod_sets: &[(&str, i32)]) {
    let assignments: Vec<Value> = pod_sets
        .iter()
        .map(|(pod_set, count)| {
            json!({
                "name": pod_set,
                "flavors": {"cpu": "on-demand"},
                "resourceUsage": {"cpu": format!("{}", count)},
                "count": count,
            })
        })
        .collect();
    let time = now();
    update_status(workloads, name, |status| {
        status["admission"] = json!({"clusterQueue": "cq", "podSetAssignments": assignments});
        set_condition(
            status,
            json!({
                "type": "QuotaReserved", "status": "True", "reason": "QuotaReserved",
                "message": "Quota reserved in ClusterQueue cq", "lastTransitionTime": time,
            }),
        );
        set_condition(
            status,
            json!({
                "type": "Admitted", "status": "True", "reason": "Admitted",
                "message": "The workload is admitted", "lastTransitionTime": time,
            }),
        );
    })
    .await;
}

/// Creates Job `name` of one pod requesting more cpu than any node has, so that its pod stays
/// Pending and the Job keeps running once started; waits for its Workload, admits it and waits
/// until Kuota starts the Job. Returns the Job as created and the Workload's name.
async fn start_pending_job(
    jobs: &Api<Job>,
    workloads: &Api<Workload>,
    name: &str,
) -> (Job, String) {
    let job = jobs
        .create(&PostParams::default(), &batch_job(name, 1, "5000"))
        .await
        .expect("create job");
    let workload = workload_name("Job", "batch", name, &job.uid().expect("uid"));
    workload_named(workloads, &workload).await;
    admit(workloads, &workload, &[("main", 1)]).await;
    eventually(WAIT, "the Job runs", || async {
        jobs.get(name)
            .await
            .is_ok_and(|job| job.spec.as_ref().and_then(|spec| spec.suspend) == Some(false))
    })
    .await
    .expect("the Job runs");
    (job, workload)
}

/// Changes the Workload's status with a `resourceVersion`-guarded merge patch, retrying when
/// the controllers wrote in between.
async fn update_status(workloads: &Api<Workload>, name: &str, change: impl Fn(&mut Value)) {
    for _ in 0..20 {
        let current = workloads.get(name).await.expect("get Workload");
        let mut status =
            serde_json::to_value(current.status.clone().unwrap_or_default()).expect("status json");
        change(&mut status);
        let body = json!({
            "metadata": {"resourceVersion": current.resource_version()},
            "status": status,
        });
        match workloads
            .patch_status(name, &PatchParams::default(), &Patch::Merge(&body))
            .await
        {
            Ok(_) => return,
            Err(kube::Error::Api(status)) if status.code == 409 => {
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            Err(error) => panic!("cannot write the status of {name}: {error}"),
        }
    }
    panic!("the status of {name} kept conflicting");
}

fn set_condition(status: &mut Value, condition: Value) {
    if !status["conditions"].is_array() {
        status["conditions"] = json!([]);
    }
    if let Some(conditions) = status["conditions"].as_array_mut() {
        conditions.retain(|existing| existing["type"] != condition["type"]);
        conditions.push(condition);
    }
}

/// Reason and note of the events recorded on the object called `name`.
async fn events_on(client: &Client, namespace: &str, name: &str) -> Vec<(String, String)> {
    let events: Api<Event> = Api::namespaced(client.clone(), namespace);
    events
        .list(&ListParams::default())
        .await
        .expect("list events")
        .items
        .into_iter()
        .filter(|event| event.regarding.as_ref().and_then(|r| r.name.as_deref()) == Some(name))
        .map(|event| {
            (
                event.reason.unwrap_or_default(),
                event.note.unwrap_or_default(),
            )
        })
        .collect()
}

async fn expect_event(client: &Client, namespace: &str, name: &str, reason: &str, note: &str) {
    let wanted = (reason.to_string(), note.to_string());
    let found = eventually(WAIT, &format!("event {reason} on {name}"), || async {
        events_on(client, namespace, name).await.contains(&wanted)
    })
    .await;
    if found.is_err() {
        panic!(
            "no event {wanted:?} on {name}; events: {:?}",
            events_on(client, namespace, name).await
        );
    }
}

#[test]
fn an_admitted_job_runs_on_its_flavor_and_finishes_its_workload() {
    RUNTIME.block_on(async {
        let (ns, client, jobs, workloads) = test_space().await;

        let job = jobs
            .create(&PostParams::default(), &batch_job("sample", 2, "200m"))
            .await
            .expect("create job");
        let uid = job.uid().expect("uid");
        let name = workload_name("Job", "batch", "sample", &uid);
        let workload = workload_named(&workloads, &name).await;

        assert_eq!(workload.spec.queue_name.as_deref(), Some("lq"));
        assert_eq!(workload.spec.priority, Some(0));
        assert_eq!(workload.finalizers(), ["kueue.x-k8s.io/resource-in-use"]);
        assert_eq!(workload.labels().get("kueue.x-k8s.io/job-uid"), Some(&uid));
        let owner = &workload.owner_references()[0];
        assert_eq!(
            (
                owner.kind.as_str(),
                owner.name.as_str(),
                owner.uid.as_str(),
                owner.controller
            ),
            ("Job", "sample", uid.as_str(), Some(true))
        );
        let pod_sets = &workload.spec.pod_sets;
        assert_eq!(pod_sets.len(), 1);
        assert_eq!((pod_sets[0].name.as_str(), pod_sets[0].count), ("main", 2));
        // As Kueue with TopologyAwareScheduling on (its default): pods ranked by completion index.
        assert_eq!(
            serde_json::to_value(&pod_sets[0].topology_request).expect("json"),
            json!({"podIndexLabel": "batch.kubernetes.io/job-completion-index"})
        );
        let template = pod_sets[0].template.decode();
        let template_labels = template
            .metadata
            .as_ref()
            .and_then(|metadata| metadata.labels.clone())
            .unwrap_or_default();
        assert_eq!(
            template_labels.get("app").map(String::as_str),
            Some("sample")
        );
        assert!(
            !template_labels.contains_key("batch.kubernetes.io/controller-uid"),
            "the Job controller's labels stay out of the PodSet: {template_labels:?}"
        );
        let container = &template.spec.as_ref().expect("pod spec").containers[0];
        assert_eq!(
            container
                .resources
                .as_ref()
                .and_then(|resources| resources.requests.as_ref())
                .and_then(|requests| requests.get("cpu"))
                .map(|cpu| cpu.0.as_str()),
            Some("200m")
        );
        expect_event(
            &client,
            ns.name(),
            "sample",
            "CreatedWorkload",
            &format!("Created Workload: {}/{name}", ns.name()),
        )
        .await;

        admit(&workloads, &name, &[("main", 2)]).await;

        eventually(
            WAIT,
            "the Job runs with the flavor's node selector",
            || async {
                jobs.get("sample")
                    .await
                    .ok()
                    .and_then(|job| job.spec)
                    .is_some_and(|spec| {
                        spec.suspend == Some(false)
                            && spec
                                .template
                                .spec
                                .and_then(|pod| pod.node_selector)
                                .and_then(|selector| selector.get("instance-type").cloned())
                                .as_deref()
                                == Some("on-demand")
                    })
            },
        )
        .await
        .expect("the Job is unsuspended");
        let started = jobs.get("sample").await.expect("job");
        let labels = started
            .spec
            .as_ref()
            .and_then(|spec| spec.template.metadata.as_ref())
            .and_then(|metadata| metadata.labels.clone())
            .unwrap_or_default();
        assert_eq!(
            labels.get("kueue.x-k8s.io/podset").map(String::as_str),
            Some("main")
        );
        assert_eq!(
            labels
                .get("kueue.x-k8s.io/local-queue-name")
                .map(String::as_str),
            Some("lq")
        );
        assert_eq!(
            labels
                .get("kueue.x-k8s.io/cluster-queue-name")
                .map(String::as_str),
            Some("cq")
        );
        expect_event(
            &client,
            ns.name(),
            "sample",
            "Started",
            "Admitted by clusterQueue cq",
        )
        .await;

        let pods: Api<Pod> = Api::namespaced(client.clone(), ns.name());
        eventually(WAIT, "both pods ran on the on-demand node", || async {
            pods.list(&ListParams::default().labels("batch.kubernetes.io/job-name=sample"))
                .await
                .is_ok_and(|list| {
                    list.items.len() == 2
                        && list.items.iter().all(|pod| {
                            pod.spec.as_ref().and_then(|spec| spec.node_name.as_deref())
                                == Some("kwok-on-demand-0")
                        })
                })
        })
        .await
        .expect("pods scheduled on kwok-on-demand-0");

        eventually(WAIT, "the Workload finishes with the Job", || async {
            workloads.get(&name).await.is_ok_and(|workload| {
                condition(&workload, "Finished").is_some_and(|finished| {
                    finished.status == "True" && finished.reason == "Succeeded"
                }) && workload.finalizers().is_empty()
            })
        })
        .await
        .expect("the Workload is Finished and released");
        let finished = workloads.get(&name).await.expect("workload");
        assert_eq!(
            condition(&finished, "Finished").map(|c| c.message.as_str()),
            Some("Reached expected number of succeeded pods")
        );
        expect_event(
            &client,
            ns.name(),
            "sample",
            "FinishedWorkload",
            &format!("Workload '{}/{name}' is declared finished", ns.name()),
        )
        .await;
    });
}

#[test]
fn an_evicted_job_is_suspended_restored_and_requeued() {
    RUNTIME.block_on(async {
        let (ns, client, jobs, workloads) = test_space().await;

        let (job, name) = start_pending_job(&jobs, &workloads, "victim").await;
        let original_template =
            serde_json::to_value(&job.spec.as_ref().expect("spec").template).expect("template");
        eventually(WAIT, "the Job is running with pods", || async {
            jobs.get("victim").await.is_ok_and(|job| {
                job.spec.as_ref().and_then(|spec| spec.suspend) == Some(false)
                    && job.status.as_ref().and_then(|status| status.active) == Some(1)
            })
        })
        .await
        .expect("the Job has its pod");

        let message = "Preempted to accommodate a workload (UID: 0000, JobUID: 1111) due to prioritization in the ClusterQueue";
        let time = now();
        update_status(&workloads, &name, |status| {
            set_condition(status, json!({
                "type": "Evicted", "status": "True", "reason": "Preempted",
                "message": message, "lastTransitionTime": time,
            }));
        })
        .await;

        eventually(WAIT, "the Workload releases its quota", || async {
            workloads.get(&name).await.is_ok_and(|workload| {
                workload.status.as_ref().is_some_and(|status| status.admission.is_none())
            })
        })
        .await
        .expect("the admission is cleared");
        let requeued = workloads.get(&name).await.expect("workload");
        let summary = |type_: &str| {
            condition(&requeued, type_).map(|c| (c.status.as_str(), c.reason.as_str(), c.message.as_str()))
        };
        assert_eq!(summary("QuotaReserved"), Some(("False", "Pending", message)));
        assert_eq!(
            summary("Admitted"),
            Some(("False", "NoReservation", "The workload has no reservation"))
        );
        assert_eq!(summary("Requeued"), Some(("True", "Preempted", message)));
        assert_eq!(summary("Evicted"), Some(("True", "Preempted", message)));

        let stopped = jobs.get("victim").await.expect("job");
        let spec = stopped.spec.as_ref().expect("spec");
        assert_eq!(spec.suspend, Some(true));
        assert_eq!(
            serde_json::to_value(&spec.template).expect("template"),
            original_template,
            "the template is restored exactly"
        );
        assert!(
            !stopped.annotations().contains_key("kueue.x-k8s.io/stopping"),
            "the stopping annotation is gone"
        );
        expect_event(&client, ns.name(), "victim", "Stopped", message).await;
    });
}

#[test]
fn the_job_of_a_workload_kuota_deactivated_is_deleted_after_the_retention() {
    RUNTIME.block_on(async {
        let (ns, client, jobs, workloads) = test_space().await;
        let (_, name) = start_pending_job(&jobs, &workloads, "given-up").await;

        // What the admitter writes when it deactivates a Workload past its requeuing limit.
        workloads
            .patch(
                &name,
                &PatchParams::default(),
                &Patch::Merge(json!({"spec": {"active": false}})),
            )
            .await
            .expect("deactivate");
        let message =
            "The workload is deactivated due to exceeding the maximum number of re-queuing retries";
        let evicted_at = now();
        update_status(&workloads, &name, |status| {
            set_condition(
                status,
                json!({
                    "type": "Evicted", "status": "True",
                    "reason": "DeactivatedDueToRequeuingLimitExceeded",
                    "message": message, "lastTransitionTime": evicted_at,
                }),
            );
        })
        .await;

        expect_event(&client, ns.name(), "given-up", "Stopped", message).await;
        expect_event(
            &client,
            ns.name(),
            "given-up",
            "Deleted",
            "Deleted job: deactivation retention period expired",
        )
        .await;
        eventually(WAIT, "the Job and its Workload are gone", || async {
            matches!(jobs.get_opt("given-up").await, Ok(None))
                && matches!(workloads.get_opt(&name).await, Ok(None))
        })
        .await
        .expect("the Job is deleted and its Workload garbage collected");
        // Not before the retention: the eviction time has whole seconds, the event's has more.
        let events: Api<Event> = Api::namespaced(client.clone(), ns.name());
        let deleted_at = events
            .list(&ListParams::default())
            .await
            .expect("list events")
            .items
            .into_iter()
            .find(|event| event.reason.as_deref() == Some("Deleted"))
            .and_then(|event| event.event_time)
            .expect("the Deleted event has a time")
            .0;
        let evicted_at: jiff::Timestamp = evicted_at.parse().expect("rfc3339");
        assert!(
            deleted_at >= evicted_at + jiff::SignedDuration::from_secs(3),
            "deleted at {deleted_at}, evicted at {evicted_at}"
        );
    });
}

#[test]
fn a_pytorch_job_finished_by_its_operator_finishes_its_workload() {
    RUNTIME.block_on(async {
        let cluster = cluster().await;
        let ns = cluster.namespace().await;
        let client = cluster.client().await;
        let resource = PYTORCH_JOB.kind().api_resource();
        let pytorch_jobs: Api<DynamicObject> =
            Api::namespaced_with(client.clone(), ns.name(), &resource);
        let workloads: Api<Workload> = Api::namespaced(client.clone(), ns.name());
        let replica = |replicas: i32| {
            json!({
                "replicas": replicas,
                "template": {"spec": {"containers": [{
                    "name": "pytorch",
                    "image": "pytorch",
                    "resources": {"requests": {"cpu": "100m"}},
                }]}},
            })
        };
        let job: DynamicObject = serde_json::from_value(json!({
            "apiVersion": "kubeflow.org/v1",
            "kind": "PyTorchJob",
            "metadata": {"name": "train", "labels": {"kueue.x-k8s.io/queue-name": "lq"}},
            "spec": {
                "runPolicy": {"suspend": true},
                "pytorchReplicaSpecs": {"Master": replica(1), "Worker": replica(2)},
            },
        }))
        .expect("pytorch job");
        let job = pytorch_jobs
            .create(&PostParams::default(), &job)
            .await
            .expect("create PyTorchJob");
        let name = workload_name(
            "PyTorchJob",
            "kubeflow.org",
            "train",
            &job.uid().expect("uid"),
        );
        let workload = workload_named(&workloads, &name).await;
        let shape: Vec<(&str, i32)> = workload
            .spec
            .pod_sets
            .iter()
            .map(|pod_set| (pod_set.name.as_str(), pod_set.count))
            .collect();
        assert_eq!(shape, vec![("master", 1), ("worker", 2)]);

        admit(&workloads, &name, &[("master", 1), ("worker", 2)]).await;
        eventually(
            WAIT,
            "the PyTorchJob is unsuspended on the flavor",
            || async {
                pytorch_jobs.get("train").await.is_ok_and(|job| {
                    job.data["spec"]["runPolicy"]["suspend"] == json!(false)
                    && ["Master", "Worker"].iter().all(|replica| {
                        job.data["spec"]["pytorchReplicaSpecs"][replica]["template"]["spec"]
                            ["nodeSelector"]["instance-type"]
                            == json!("on-demand")
                    })
                })
            },
        )
        .await
        .expect("the PyTorchJob starts");

        // Play the training operator: the job succeeded.
        let message = "PyTorchJob train is successfully completed.";
        pytorch_jobs
            .patch_status(
                "train",
                &PatchParams::default(),
                &Patch::Merge(json!({"status": {"conditions": [{
                    "type": "Succeeded",
                    "status": "True",
                    "reason": "PyTorchJobSucceeded",
                    "message": message,
                    "lastTransitionTime": now(),
                }]}})),
            )
            .await
            .expect("set PyTorchJob status");

        eventually(
            WAIT,
            "the Workload finishes with the PyTorchJob",
            || async {
                workloads.get(&name).await.is_ok_and(|workload| {
                    condition(&workload, "Finished").is_some_and(|finished| {
                        finished.status == "True"
                            && finished.reason == "Succeeded"
                            && finished.message == message
                    })
                })
            },
        )
        .await
        .expect("the Workload is Finished");
    });
}

#[test]
fn the_workload_of_a_deleted_job_is_garbage_collected() {
    RUNTIME.block_on(async {
        // `_ns` keeps the namespace until the test ends.
        let (_ns, _, jobs, workloads) = test_space().await;

        // Pending pods keep the job running and its Workload holding quota and the finalizer.
        let (_, name) = start_pending_job(&jobs, &workloads, "doomed").await;
        let held = workloads.get(&name).await.expect("workload");
        assert_eq!(held.finalizers(), ["kueue.x-k8s.io/resource-in-use"]);

        jobs.delete("doomed", &DeleteParams::background())
            .await
            .expect("delete job");
        eventually(WAIT, "the Workload is deleted", || async {
            matches!(workloads.get_opt(&name).await, Ok(None))
        })
        .await
        .expect("the garbage collector deletes the Workload");
    });
}

#[test]
fn the_workload_of_a_job_deleted_with_orphan_propagation_is_finished_and_released() {
    RUNTIME.block_on(async {
        // `_ns` keeps the namespace until the test ends.
        let (_ns, _, jobs, workloads) = test_space().await;

        let (_, name) = start_pending_job(&jobs, &workloads, "abandoned").await;

        // `kubectl delete --cascade=orphan`: the garbage collector strips the Workload's owner
        // reference and leaves it, holding quota, with no job to finish it. Kuota may finish it
        // as soon as the job has a deletion timestamp, before the collector gets to the
        // Workload, so the wait is for both.
        jobs.delete("abandoned", &DeleteParams::orphan())
            .await
            .expect("delete job");
        eventually(
            WAIT,
            "the orphaned Workload lets go of its finalizer and its owner",
            || async {
                workloads.get(&name).await.is_ok_and(|workload| {
                    workload.finalizers().is_empty() && workload.owner_references().is_empty()
                })
            },
        )
        .await
        .expect("the orphaned Workload lets go of its finalizer and its owner");
        let released = workloads.get(&name).await.expect("the Workload stays");
        let finished = condition(&released, "Finished").expect("Finished");
        assert_eq!(
            (
                finished.status.as_str(),
                finished.reason.as_str(),
                finished.message.as_str()
            ),
            (
                "True",
                "OwnerNotFound",
                "The workload's owner no longer exists"
            )
        );
    });
}
