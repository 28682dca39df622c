//! Behaviour of the job integrations: PodSets, requests, run/restore patches, status readers,
//! validation messages, the framework table and the test CRDs.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{LimitRange, PodSpec, Toleration};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use super::podset::PodSetInfo;
use super::*;
use crate::k8s::field::aggregate;

// ---------------------------------------------------------------------------------------------
// Builders

/// A resource list from (name, quantity) pairs.
fn res(pairs: &[(&str, &str)]) -> Value {
    Value::Object(
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), json!(v)))
            .collect(),
    )
}

/// A container with optional requests and limits.
fn ctr(name: &str, requests: &[(&str, &str)], limits: &[(&str, &str)]) -> Value {
    let mut resources = json!({});
    if !requests.is_empty() {
        resources["requests"] = res(requests);
    }
    if !limits.is_empty() {
        resources["limits"] = res(limits);
    }
    json!({"name": name, "image": "busybox", "resources": resources})
}

/// A pod template whose single container requests `cpu`.
fn tpl(cpu: &str) -> Value {
    json!({"spec": {"containers": [ctr("c", &[("cpu", cpu)], &[])], "restartPolicy": "Never"}})
}

fn batch_job(parallelism: i32, completions: Option<i32>, template: Value) -> Value {
    let mut job = json!({
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "sample-job", "namespace": "default", "uid": "uid-1",
                     "labels": {"kueue.x-k8s.io/queue-name": "user-queue"}},
        "spec": {"suspend": true, "parallelism": parallelism, "template": template},
    });
    if let Some(completions) = completions {
        job["spec"]["completions"] = json!(completions);
    }
    job
}

/// A JobSet from (name, replicas, parallelism, completions, template).
fn jobset(replicated: &[(&str, i32, i32, i32, Value)]) -> Value {
    let replicated_jobs: Vec<Value> = replicated
        .iter()
        .map(|(name, replicas, parallelism, completions, template)| {
            json!({"name": name, "replicas": replicas,
                   "template": {"spec": {"parallelism": parallelism, "completions": completions, "template": template}}})
        })
        .collect();
    json!({
        "apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
        "metadata": {"name": "js", "namespace": "default"},
        "spec": {"suspend": true, "replicatedJobs": replicated_jobs},
    })
}

/// A Ray cluster spec with a head template and worker groups (name, replicas, numOfHosts, template).
fn ray_cluster_spec(head: Value, workers: &[(&str, Option<i32>, i32, Value)]) -> Value {
    let groups: Vec<Value> = workers
        .iter()
        .map(|(name, replicas, hosts, template)| {
            let mut group = json!({"groupName": name, "numOfHosts": hosts, "template": template});
            if let Some(replicas) = replicas {
                group["replicas"] = json!(replicas);
            }
            group
        })
        .collect();
    json!({"headGroupSpec": {"rayStartParams": {}, "template": head}, "workerGroupSpecs": groups})
}

fn head_template() -> Value {
    json!({"spec": {"containers": [
        {"name": "ray-head", "image": "rayproject/ray:2.9.0", "resources": {"requests": {"cpu": "1", "memory": "1Gi"}}}
    ]}})
}

fn ray_job(mode: Option<&str>, cluster: Value) -> Value {
    let mut job = json!({
        "apiVersion": "ray.io/v1", "kind": "RayJob",
        "metadata": {"name": "rj", "namespace": "default", "labels": {"kueue.x-k8s.io/queue-name": "user-queue"}},
        "spec": {"suspend": true, "shutdownAfterJobFinishes": true, "entrypoint": "python x.py", "rayClusterSpec": cluster},
    });
    if let Some(mode) = mode {
        job["spec"]["submissionMode"] = json!(mode);
    }
    job
}

fn ray_cluster(cluster: Value) -> Value {
    let mut spec = cluster;
    spec["suspend"] = json!(true);
    json!({"apiVersion": "ray.io/v1", "kind": "RayCluster", "metadata": {"name": "rc", "namespace": "default"}, "spec": spec})
}

/// A Kubeflow job with replica specs (type, replicas, template) under `field`.
fn kubeflow_job(
    api_version: &str,
    kind: &str,
    field: &str,
    replicas: &[(&str, Option<i32>, Value)],
) -> Value {
    let specs: serde_json::Map<String, Value> = replicas
        .iter()
        .map(|(replica, count, template)| {
            let mut spec = json!({"restartPolicy": "OnFailure", "template": template});
            if let Some(count) = count {
                spec["replicas"] = json!(count);
            }
            (replica.to_string(), spec)
        })
        .collect();
    json!({
        "apiVersion": api_version, "kind": kind,
        "metadata": {"name": "kf", "namespace": "default"},
        "spec": {"runPolicy": {"suspend": true}, field: specs},
    })
}

fn pod_set_summary(framework: &dyn JobFramework, job: &Value) -> Vec<(String, i32, Requests)> {
    framework
        .pod_sets(job)
        .unwrap()
        .iter()
        .map(|pod_set| {
            (
                pod_set.name.clone(),
                pod_set.count,
                total_requests(pod_set, &[]).unwrap(),
            )
        })
        .collect()
}

fn req(pairs: &[(&str, i64)]) -> Requests {
    pairs.iter().map(|(k, v)| (k.to_string(), *v)).collect()
}

fn gpu_toleration() -> Toleration {
    Toleration {
        key: Some("nvidia.com/gpu".into()),
        operator: Some("Exists".into()),
        effect: Some("NoSchedule".into()),
        ..Default::default()
    }
}

/// Info for an admitted PodSet on a flavor with a node label and a GPU toleration.
fn gpu_info(pod_set: &str, count: i32) -> PodSetInfo {
    let mut info = PodSetInfo::admitted(pod_set, count, "user-queue", "cluster-queue");
    info.add_flavor(
        &BTreeMap::from([("instance-type".to_string(), "gpu".to_string())]),
        &[gpu_toleration()],
    );
    info
}

fn diff(before: &Value, after: &Value) -> Value {
    serde_json::to_value(json_patch::diff(before, after)).unwrap()
}

/// Patch ops adding the admission labels of `pod_set` to the template at `template`.
fn label_ops(template: &str, pod_set: &str) -> Vec<Value> {
    vec![
        json!({"op": "add", "path": format!("{template}/metadata/labels/kueue.x-k8s.io~1cluster-queue-name"), "value": "cluster-queue"}),
        json!({"op": "add", "path": format!("{template}/metadata/labels/kueue.x-k8s.io~1local-queue-name"), "value": "user-queue"}),
        json!({"op": "add", "path": format!("{template}/metadata/labels/kueue.x-k8s.io~1podset"), "value": pod_set}),
    ]
}

fn admission_labels(pod_set: &str) -> Value {
    json!({"kueue.x-k8s.io/cluster-queue-name": "cluster-queue", "kueue.x-k8s.io/local-queue-name": "user-queue",
           "kueue.x-k8s.io/podset": pod_set})
}

/// Patch ops adding the GPU flavor's nodeSelector and toleration to a template without either.
fn flavor_ops(template: &str) -> Vec<Value> {
    vec![
        json!({"op": "add", "path": format!("{template}/spec/nodeSelector"), "value": {"instance-type": "gpu"}}),
        json!({"op": "add", "path": format!("{template}/spec/tolerations"),
               "value": [{"effect": "NoSchedule", "key": "nvidia.com/gpu", "operator": "Exists"}]}),
    ]
}

/// Patch ops removing what [`label_ops`] (and, with `flavor`, [`flavor_ops`]) added.
fn restore_ops(template: &str, flavor: bool) -> Vec<Value> {
    let mut ops = vec![json!({"op": "remove", "path": format!("{template}/metadata/labels")})];
    if flavor {
        ops.push(json!({"op": "remove", "path": format!("{template}/spec/nodeSelector")}));
        ops.push(json!({"op": "remove", "path": format!("{template}/spec/tolerations")}));
    }
    ops
}

/// Patch ops removing the admission labels from a template that had other labels.
fn label_removals(template: &str) -> Vec<Value> {
    ["cluster-queue-name", "local-queue-name", "podset"]
        .iter()
        .map(|key| json!({"op": "remove", "path": format!("{template}/metadata/labels/kueue.x-k8s.io~1{key}")}))
        .collect()
}

/// Runs the job with `infos` and restores it, checking both patches exactly and that the
/// restored job has the PodSets it had before running.
fn assert_run_and_restore(
    framework: &dyn JobFramework,
    before: &Value,
    infos: &[PodSetInfo],
    expected_run: Vec<Value>,
    expected_restore: Vec<Value>,
) {
    let originals = framework.pod_sets(before).unwrap();
    let mut job = before.clone();
    framework.run(&mut job, infos).unwrap();
    assert_eq!(
        diff(before, &job),
        Value::Array(expected_run),
        "{} run",
        framework.name()
    );
    assert!(!framework.is_suspended(&job));

    let started = job.clone();
    assert!(framework.restore(&mut job, &originals));
    assert!(framework.is_suspended(&job));
    assert_eq!(
        diff(&started, &job),
        Value::Array(expected_restore),
        "{} restore",
        framework.name()
    );
    assert_eq!(
        framework.pod_sets(&job).unwrap(),
        originals,
        "{} restored PodSets",
        framework.name()
    );
}

// ---------------------------------------------------------------------------------------------
// PodSets and requests per kind

#[test]
fn pod_sets_of_every_kind() {
    type ExpectedPodSets<'a> = Vec<(&'a str, i32, Requests)>;
    let cases: Vec<(&dyn JobFramework, Value, ExpectedPodSets)> = vec![
        (
            &BatchJob,
            batch_job(3, Some(2), tpl("1")),
            vec![("main", 2, req(&[("cpu", 2000)]))],
        ),
        (
            &BatchJob,
            batch_job(3, None, tpl("250m")),
            vec![("main", 3, req(&[("cpu", 750)]))],
        ),
        (
            &JobSet,
            jobset(&[
                ("Driver", 1, 1, 1, tpl("1")),
                ("workers", 2, 4, 3, tpl("500m")),
            ]),
            vec![
                ("driver", 1, req(&[("cpu", 1000)])),
                ("workers", 6, req(&[("cpu", 3000)])),
            ],
        ),
        (
            &RayJob,
            ray_job(
                None,
                ray_cluster_spec(
                    head_template(),
                    &[("Small", Some(2), 2, tpl("2")), ("big", None, 0, tpl("4"))],
                ),
            ),
            vec![
                ("head", 1, req(&[("cpu", 1000), ("memory", 1 << 30)])),
                ("small", 4, req(&[("cpu", 8000)])),
                ("big", 1, req(&[("cpu", 4000)])),
                ("submitter", 1, req(&[("cpu", 500), ("memory", 200 << 20)])),
            ],
        ),
        (
            &RayJob,
            ray_job(
                Some("SidecarMode"),
                ray_cluster_spec(head_template(), &[("w", Some(1), 1, tpl("1"))]),
            ),
            vec![
                (
                    "head",
                    1,
                    req(&[("cpu", 1500), ("memory", (1 << 30) + (200 << 20))]),
                ),
                ("w", 1, req(&[("cpu", 1000)])),
            ],
        ),
        (
            &RayJob,
            ray_job(Some("HTTPMode"), ray_cluster_spec(head_template(), &[])),
            vec![("head", 1, req(&[("cpu", 1000), ("memory", 1 << 30)]))],
        ),
        (
            &RayCluster,
            ray_cluster(ray_cluster_spec(
                head_template(),
                &[("gpu-group", Some(3), 0, tpl("8"))],
            )),
            vec![
                ("head", 1, req(&[("cpu", 1000), ("memory", 1 << 30)])),
                ("gpu-group", 3, req(&[("cpu", 24000)])),
            ],
        ),
        (
            &MPI_JOB,
            kubeflow_job(
                "kubeflow.org/v2beta1",
                "MPIJob",
                "mpiReplicaSpecs",
                &[
                    ("Worker", Some(2), tpl("2")),
                    ("Launcher", Some(1), tpl("100m")),
                ],
            ),
            vec![
                ("launcher", 1, req(&[("cpu", 100)])),
                ("worker", 2, req(&[("cpu", 4000)])),
            ],
        ),
        (
            &PYTORCH_JOB,
            kubeflow_job(
                "kubeflow.org/v1",
                "PyTorchJob",
                "pytorchReplicaSpecs",
                &[("Worker", Some(3), tpl("1")), ("Master", None, tpl("2"))],
            ),
            vec![
                ("master", 1, req(&[("cpu", 2000)])),
                ("worker", 3, req(&[("cpu", 3000)])),
            ],
        ),
        (
            &TF_JOB,
            kubeflow_job(
                "kubeflow.org/v1",
                "TFJob",
                "tfReplicaSpecs",
                &[
                    ("Evaluator", Some(1), tpl("1")),
                    ("Worker", Some(2), tpl("1")),
                    ("PS", Some(2), tpl("500m")),
                    ("Chief", Some(1), tpl("1")),
                ],
            ),
            vec![
                ("chief", 1, req(&[("cpu", 1000)])),
                ("ps", 2, req(&[("cpu", 1000)])),
                ("worker", 2, req(&[("cpu", 2000)])),
                ("evaluator", 1, req(&[("cpu", 1000)])),
            ],
        ),
        (
            &XGBOOST_JOB,
            kubeflow_job(
                "kubeflow.org/v1",
                "XGBoostJob",
                "xgbReplicaSpecs",
                &[("Master", Some(1), tpl("1")), ("Worker", Some(4), tpl("1"))],
            ),
            vec![
                ("master", 1, req(&[("cpu", 1000)])),
                ("worker", 4, req(&[("cpu", 4000)])),
            ],
        ),
        (
            &PADDLE_JOB,
            kubeflow_job(
                "kubeflow.org/v1",
                "PaddleJob",
                "paddleReplicaSpecs",
                &[("Worker", Some(2), tpl("3"))],
            ),
            vec![("worker", 2, req(&[("cpu", 6000)]))],
        ),
        (
            &JAX_JOB,
            kubeflow_job(
                "kubeflow.org/v1",
                "JAXJob",
                "jaxReplicaSpecs",
                &[("Worker", Some(8), tpl("1"))],
            ),
            vec![("worker", 8, req(&[("cpu", 8000)]))],
        ),
    ];
    for (framework, job, expected) in cases {
        let expected: Vec<(String, i32, Requests)> = expected
            .into_iter()
            .map(|(name, count, requests)| (name.to_string(), count, requests))
            .collect();
        assert_eq!(
            pod_set_summary(framework, &job),
            expected,
            "{}",
            framework.name()
        );
    }
}

#[test]
fn ray_head_gets_autoscaler_and_fault_tolerance_resources() {
    let head = json!({"spec": {"containers": [
        {"name": "ray-head", "image": "ray", "resources": {"requests": {"cpu": "100m", "memory": "1Gi"}}}
    ]}});
    let mut cluster = ray_cluster(ray_cluster_spec(head, &[]));
    cluster["metadata"]["annotations"] = json!({"ray.io/ft-enabled": "True"});
    cluster["spec"]["enableInTreeAutoscaling"] = json!(true);
    // Ray container raised to 200m (memory already above 256Mi), plus the default autoscaler.
    assert_eq!(
        pod_set_summary(&RayCluster, &cluster),
        vec![(
            "head".to_string(),
            1,
            req(&[("cpu", 200 + 500), ("memory", (1 << 30) + (512 << 20))])
        )]
    );

    cluster["spec"]["autoscalerOptions"] = json!({"resources": {"requests": {"cpu": "1"}}});
    cluster["metadata"]["annotations"] = json!({});
    cluster["spec"]["gcsFaultToleranceOptions"] = json!({"redisAddress": "redis:6379"});
    assert_eq!(
        pod_set_summary(&RayCluster, &cluster),
        vec![(
            "head".to_string(),
            1,
            req(&[("cpu", 200 + 1000), ("memory", 1 << 30)])
        )]
    );
}

#[test]
fn job_pod_set_drops_controller_labels_and_reads_min_count() {
    let mut template = tpl("1");
    template["metadata"] = json!({"labels": {
        "app": "x", "job-name": "sample-job", "controller-uid": "u", "batch.kubernetes.io/job-name": "sample-job",
        "batch.kubernetes.io/controller-uid": "u",
    }});
    let mut job = batch_job(5, None, template);
    job["metadata"]["annotations"] = json!({"kueue.x-k8s.io/job-min-parallelism": "2"});
    let pod_sets = BatchJob.pod_sets(&job).unwrap();
    let labels = pod_sets[0]
        .template
        .metadata
        .as_ref()
        .unwrap()
        .labels
        .clone()
        .unwrap();
    assert_eq!(
        labels,
        BTreeMap::from([
            ("app".to_string(), "x".to_string()),
            (
                "batch.kubernetes.io/job-name".to_string(),
                "sample-job".to_string()
            )
        ])
    );
    assert_eq!((pod_sets[0].count, pod_sets[0].min_count), (5, Some(2)));
}

#[test]
fn pod_sets_collapse_duplicate_env_and_cap_at_eighteen() {
    let mut template = tpl("1");
    template["spec"]["containers"][0]["env"] = json!([{"name": "A", "value": "1"}, {"name": "B", "value": "2"}, {"name": "A", "value": "3"}]);
    let pod_sets = BatchJob.pod_sets(&batch_job(1, None, template)).unwrap();
    let env = pod_sets[0].template.spec.as_ref().unwrap().containers[0]
        .env
        .clone()
        .unwrap();
    let env: Vec<(String, Option<String>)> =
        env.into_iter().map(|var| (var.name, var.value)).collect();
    assert_eq!(
        env,
        vec![
            ("A".to_string(), Some("3".to_string())),
            ("B".to_string(), Some("2".to_string()))
        ]
    );

    let workers: Vec<(String, Option<i32>, i32, Value)> = (0..18)
        .map(|i| (format!("w{i}"), Some(1), 0, tpl("1")))
        .collect();
    let workers: Vec<(&str, Option<i32>, i32, Value)> = workers
        .iter()
        .map(|(name, replicas, hosts, t)| (name.as_str(), *replicas, *hosts, t.clone()))
        .collect();
    let error = RayCluster
        .pod_sets(&ray_cluster(ray_cluster_spec(head_template(), &workers)))
        .unwrap_err();
    assert_eq!(
        error.to_string(),
        "the job has 19 PodSets, at most 18 are allowed"
    );
}

#[test]
fn pod_sets_report_missing_and_invalid_fields() {
    let mut job = ray_job(None, json!(null));
    assert_eq!(
        RayJob.pod_sets(&job).unwrap_err().to_string(),
        "missing field /spec/rayClusterSpec"
    );
    job["spec"]["rayClusterSpec"] = ray_cluster_spec(json!({"spec": {"containers": "nope"}}), &[]);
    assert!(
        RayJob
            .pod_sets(&job)
            .unwrap_err()
            .to_string()
            .starts_with("invalid /spec/rayClusterSpec/headGroupSpec/template: ")
    );
}

#[test]
fn pod_sets_equivalence_is_semantic() {
    let job = batch_job(2, None, tpl("1"));
    let mut workload = BatchJob.pod_sets(&job).unwrap();
    let mut stored = batch_job(2, None, tpl("1000m"));
    stored["spec"]["template"]["metadata"] = json!({"labels": {"kueue.x-k8s.io/podset": "main"}});
    stored["spec"]["template"]["spec"]["tolerations"] = json!([]);
    stored["spec"]["template"]["spec"]["initContainers"] = json!([]);
    let stored = BatchJob.pod_sets(&stored).unwrap();
    assert!(
        pod_sets_equivalent(&stored, &workload, false),
        "1000m is 1 and [] is absent"
    );

    workload[0].template.spec.as_mut().unwrap().tolerations = Some(vec![gpu_toleration()]);
    assert!(!pod_sets_equivalent(&stored, &workload, false));
    assert!(
        pod_sets_equivalent(&stored, &workload, true),
        "tolerations ignored once admitted"
    );
    workload[0].count = 3;
    assert!(!pod_sets_equivalent(&stored, &workload, true));
    let resized = BatchJob.pod_sets(&batch_job(2, None, tpl("2"))).unwrap();
    assert!(!pod_sets_equivalent(&stored, &resized, true));
}

// ---------------------------------------------------------------------------------------------
// Pod request math

fn pod(spec: Value) -> PodSpec {
    serde_json::from_value(spec).unwrap()
}

fn limit_range(items: Value) -> LimitRange {
    serde_json::from_value(json!({"metadata": {"name": "lr"}, "spec": {"limits": items}})).unwrap()
}

#[test]
fn pod_requests_follow_kubernetes_and_kueue_rules() {
    let mi = 1 << 20;
    let cases: Vec<(&str, Value, Vec<LimitRange>, Requests)> = vec![
        (
            "regular containers are summed",
            json!({"containers": [ctr("a", &[("cpu", "1"), ("memory", "1Gi")], &[]), ctr("b", &[("cpu", "250m")], &[])]}),
            vec![],
            req(&[("cpu", 1250), ("memory", 1 << 30)]),
        ),
        (
            "limits stand in for missing requests",
            json!({"containers": [ctr("a", &[("cpu", "100m")], &[("cpu", "1"), ("memory", "512Mi")])]}),
            vec![],
            req(&[("cpu", 100), ("memory", 512 * mi)]),
        ),
        (
            "init containers are max'd against the running total",
            json!({"containers": [ctr("a", &[("cpu", "1"), ("memory", "100Mi")], &[])],
                   "initContainers": [ctr("i1", &[("cpu", "3")], &[]), ctr("i2", &[("memory", "1Gi")], &[])]}),
            vec![],
            req(&[("cpu", 3000), ("memory", 1 << 30)]),
        ),
        (
            "sidecars accumulate and run alongside later init containers",
            json!({"containers": [ctr("a", &[("cpu", "1"), ("memory", "1Gi")], &[]),
                                  ctr("limits-only", &[], &[("cpu", "500m"), ("memory", "512Mi")])],
                   "initContainers": [
                       {"name": "sidecar", "restartPolicy": "Always", "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}}},
                       ctr("setup", &[("cpu", "2")], &[])],
                   "overhead": {"cpu": "50m", "memory": "64Mi"}}),
            vec![],
            req(&[("cpu", 2150), ("memory", 1728 * mi)]),
        ),
        (
            "pod-level resources win for cpu and memory only",
            json!({"containers": [ctr("a", &[("cpu", "1"), ("memory", "1Gi"), ("nvidia.com/gpu", "1")], &[])],
                   "resources": {"limits": {"cpu": "4"}, "requests": {"memory": "2Gi"}},
                   "overhead": {"cpu": "10m"}}),
            vec![],
            req(&[("cpu", 4010), ("memory", 2 << 30), ("nvidia.com/gpu", 1)]),
        ),
        (
            "LimitRange defaults fill missing values before limits do, the first LimitRange winning",
            json!({"containers": [ctr("a", &[], &[]), ctr("b", &[("cpu", "2")], &[])],
                   "initContainers": [ctr("i", &[], &[("memory", "1Gi")])]}),
            vec![
                limit_range(json!([
                    {"type": "Container", "defaultRequest": {"cpu": "100m"}, "default": {"memory": "256Mi"}},
                    {"type": "Pod", "max": {"cpu": "10"}},
                ])),
                limit_range(
                    json!([{"type": "Container", "defaultRequest": {"cpu": "300m", "memory": "64Mi"}}]),
                ),
            ],
            req(&[("cpu", 2100), ("memory", 128 * mi)]),
        ),
        (
            "sub-milli amounts are summed before rounding",
            json!({"containers": [ctr("a", &[("cpu", "400u")], &[]), ctr("b", &[("cpu", "400u")], &[])]}),
            vec![],
            req(&[("cpu", 1)]),
        ),
    ];
    for (name, spec, limit_ranges, expected) in cases {
        assert_eq!(
            pod_requests(&pod(spec), &limit_ranges).unwrap(),
            expected,
            "{name}"
        );
    }
}

#[test]
fn requests_scale_with_count_and_reject_bad_quantities() {
    let pod_sets = JobSet
        .pod_sets(&jobset(&[("w", 3, 2, 2, tpl("1500m"))]))
        .unwrap();
    assert_eq!(
        total_requests(&pod_sets[0], &[]).unwrap(),
        req(&[("cpu", 9000)])
    );
    let error = pod_requests(
        &pod(json!({"containers": [ctr("a", &[("cpu", "lots")], &[])]})),
        &[],
    )
    .unwrap_err();
    assert_eq!(
        error.to_string(),
        r#"invalid quantity "lots": unknown suffix"#
    );
}

// ---------------------------------------------------------------------------------------------
// Running and restoring

#[test]
fn batch_job_run_and_restore() {
    let mut template = tpl("1");
    template["metadata"] = json!({"labels": {"app": "x", "batch.kubernetes.io/controller-uid": "u", "controller-uid": "u"}});
    let job = batch_job(2, None, template);
    let mut expected = vec![json!({"op": "replace", "path": "/spec/suspend", "value": false})];
    expected.extend(label_ops("/spec/template", "main"));
    expected.extend(flavor_ops("/spec/template"));
    let mut restore = vec![json!({"op": "replace", "path": "/spec/suspend", "value": true})];
    restore.extend(label_removals("/spec/template"));
    restore.extend(restore_ops("/spec/template", true).split_off(1));
    assert_run_and_restore(&BatchJob, &job, &[gpu_info("main", 2)], expected, restore);
}

#[test]
fn batch_job_partial_admission_sets_parallelism_and_restores_it() {
    let mut job = batch_job(6, Some(6), tpl("1"));
    job["metadata"]["annotations"] = json!({
        "kueue.x-k8s.io/job-min-parallelism": "2",
        "kueue.x-k8s.io/job-completions-equal-parallelism": "true",
    });
    job["spec"]["template"]["metadata"] = json!({"labels": {"app": "x"}});
    let mut expected = vec![
        json!({"op": "replace", "path": "/spec/completions", "value": 4}),
        json!({"op": "replace", "path": "/spec/parallelism", "value": 4}),
        json!({"op": "replace", "path": "/spec/suspend", "value": false}),
    ];
    expected.extend(label_ops("/spec/template", "main"));
    let mut restore = vec![
        json!({"op": "replace", "path": "/spec/completions", "value": 6}),
        json!({"op": "replace", "path": "/spec/parallelism", "value": 6}),
        json!({"op": "replace", "path": "/spec/suspend", "value": true}),
    ];
    restore.extend(label_removals("/spec/template"));
    let info = PodSetInfo::admitted("main", 4, "user-queue", "cluster-queue");
    assert_run_and_restore(&BatchJob, &job, &[info], expected, restore);
}

#[test]
fn jobset_run_and_restore() {
    let job = jobset(&[
        ("leader", 1, 1, 1, tpl("1")),
        ("workers", 2, 2, 2, tpl("1")),
    ]);
    let leader = "/spec/replicatedJobs/0/template/spec/template";
    let workers = "/spec/replicatedJobs/1/template/spec/template";
    let mut expected = vec![
        json!({"op": "add", "path": format!("{leader}/metadata"), "value": {"labels": admission_labels("leader")}}),
        json!({"op": "add", "path": format!("{workers}/metadata"), "value": {"labels": admission_labels("workers")}}),
    ];
    expected.extend(flavor_ops(workers));
    expected.push(json!({"op": "replace", "path": "/spec/suspend", "value": false}));
    let mut restore = restore_ops(leader, false);
    restore.extend(restore_ops(workers, true));
    restore.push(json!({"op": "replace", "path": "/spec/suspend", "value": true}));
    let infos = [
        PodSetInfo::admitted("leader", 1, "user-queue", "cluster-queue"),
        gpu_info("workers", 4),
    ];
    assert_run_and_restore(&JobSet, &job, &infos, expected, restore);
}

#[test]
fn rayjob_run_writes_the_default_submitter_and_restores() {
    let job = ray_job(
        None,
        ray_cluster_spec(head_template(), &[("w", Some(1), 0, tpl("1"))]),
    );
    let infos = [
        PodSetInfo::admitted("head", 1, "user-queue", "cluster-queue"),
        gpu_info("w", 1),
        PodSetInfo::admitted("submitter", 1, "user-queue", "cluster-queue"),
    ];
    let head = "/spec/rayClusterSpec/headGroupSpec/template";
    let worker = "/spec/rayClusterSpec/workerGroupSpecs/0/template";
    let mut expected = vec![
        json!({"op": "add", "path": format!("{head}/metadata"), "value": {"labels": admission_labels("head")}}),
    ];
    expected.push(json!({"op": "add", "path": format!("{worker}/metadata"), "value": {"labels": admission_labels("w")}}));
    expected.extend(flavor_ops(worker));
    expected.push(json!({"op": "add", "path": "/spec/submitterPodTemplate", "value": {
        "metadata": {"labels": admission_labels("submitter")},
        "spec": {"containers": [{"image": "rayproject/ray:2.9.0", "name": "ray-job-submitter",
                                 "resources": {"limits": {"cpu": "1", "memory": "1Gi"},
                                               "requests": {"cpu": "500m", "memory": "200Mi"}}}],
                 "restartPolicy": "Never"},
    }}));
    expected.push(json!({"op": "replace", "path": "/spec/suspend", "value": false}));

    let originals = RayJob.pod_sets(&job).unwrap();
    let mut started = job.clone();
    RayJob.run(&mut started, &infos).unwrap();
    assert_eq!(diff(&job, &started), Value::Array(expected));

    // The written submitter template stays; only the admission labels leave it.
    let mut stopped = started.clone();
    assert!(RayJob.restore(&mut stopped, &originals));
    let mut expected = restore_ops(head, false);
    expected.extend(restore_ops(worker, true));
    expected.extend(restore_ops("/spec/submitterPodTemplate", false));
    expected.push(json!({"op": "replace", "path": "/spec/suspend", "value": true}));
    assert_eq!(diff(&started, &stopped), Value::Array(expected));
    assert_eq!(RayJob.pod_sets(&stopped).unwrap(), originals);
}

#[test]
fn mpijob_run_and_restore() {
    let job = kubeflow_job(
        "kubeflow.org/v2beta1",
        "MPIJob",
        "mpiReplicaSpecs",
        &[
            ("Launcher", Some(1), tpl("1")),
            ("Worker", Some(2), tpl("1")),
        ],
    );
    let launcher = "/spec/mpiReplicaSpecs/Launcher/template";
    let worker = "/spec/mpiReplicaSpecs/Worker/template";
    let mut expected = vec![
        json!({"op": "add", "path": format!("{launcher}/metadata"), "value": {"labels": admission_labels("launcher")}}),
        json!({"op": "add", "path": format!("{worker}/metadata"), "value": {"labels": admission_labels("worker")}}),
    ];
    expected.extend(flavor_ops(worker));
    expected.push(json!({"op": "replace", "path": "/spec/runPolicy/suspend", "value": false}));
    let infos = [
        PodSetInfo::admitted("launcher", 1, "user-queue", "cluster-queue"),
        gpu_info("worker", 2),
    ];
    let mut restore = restore_ops(launcher, false);
    restore.extend(restore_ops(worker, true));
    restore.push(json!({"op": "replace", "path": "/spec/runPolicy/suspend", "value": true}));
    assert_run_and_restore(&MPI_JOB, &job, &infos, expected, restore);
}

#[test]
fn pytorchjob_run_merges_into_existing_maps_and_restores() {
    let mut master = tpl("1");
    master["metadata"] = json!({"labels": {"app": "train"}, "annotations": {"note": "keep"}});
    master["spec"]["nodeSelector"] = json!({"zone": "a"});
    master["spec"]["tolerations"] =
        json!([{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]);
    let job = kubeflow_job(
        "kubeflow.org/v1",
        "PyTorchJob",
        "pytorchReplicaSpecs",
        &[("Master", Some(1), master)],
    );
    let mut info = gpu_info("master", 1);
    info.annotations.insert("note".into(), "keep".into());
    info.scheduling_gates
        .push(k8s_openapi::api::core::v1::PodSchedulingGate {
            name: "example.com/gate".into(),
        });
    let template = "/spec/pytorchReplicaSpecs/Master/template";
    let mut expected = label_ops(template, "master");
    expected.push(json!({"op": "add", "path": format!("{template}/spec/nodeSelector/instance-type"), "value": "gpu"}));
    expected.push(json!({"op": "add", "path": format!("{template}/spec/schedulingGates"), "value": [{"name": "example.com/gate"}]}));
    expected.push(json!({"op": "replace", "path": "/spec/runPolicy/suspend", "value": false}));
    let mut restore = label_removals(template);
    restore.push(
        json!({"op": "remove", "path": format!("{template}/spec/nodeSelector/instance-type")}),
    );
    restore.push(json!({"op": "remove", "path": format!("{template}/spec/schedulingGates")}));
    restore.push(json!({"op": "replace", "path": "/spec/runPolicy/suspend", "value": true}));
    assert_run_and_restore(&PYTORCH_JOB, &job, &[info], expected, restore);
}

#[test]
fn run_refuses_to_overwrite_a_different_value() {
    let mut template = tpl("1");
    template["spec"]["nodeSelector"] = json!({"instance-type": "cpu"});
    let job = batch_job(1, None, template);
    let mut running = job.clone();
    let error = BatchJob
        .run(&mut running, &[gpu_info("main", 1)])
        .unwrap_err();
    assert_eq!(
        error.to_string(),
        "invalid admission check PodSetUpdate: conflict for nodeSelector: conflict for key=instance-type, value1=cpu, value2=gpu"
    );
    assert!(error.is_permanent());
    assert_eq!(running, job, "a failed run leaves the job unchanged");

    let error = BatchJob
        .run(&mut running, &[gpu_info("main", 1), gpu_info("other", 1)])
        .unwrap_err();
    assert_eq!(
        error.to_string(),
        "invalid podset infos: expecting 1 podset, got 2"
    );
    assert!(error.is_permanent());
}

#[test]
fn restore_with_wrong_pod_set_count_only_suspends() {
    let job = jobset(&[("a", 1, 1, 1, tpl("1")), ("b", 1, 1, 1, tpl("1"))]);
    let mut running = job.clone();
    JobSet
        .run(&mut running, &[gpu_info("a", 1), gpu_info("b", 1)])
        .unwrap();
    let before_restore = running.clone();
    let originals = JobSet.pod_sets(&job).unwrap();
    assert!(!JobSet.restore(&mut running, &originals[..1]));
    assert_eq!(
        diff(&before_restore, &running),
        json!([{"op": "replace", "path": "/spec/suspend", "value": true}])
    );
}

#[test]
fn pod_set_info_merges_admission_check_updates() {
    let mut info = gpu_info("main", 1);
    let mut update = PodSetInfo {
        name: "main".into(),
        ..Default::default()
    };
    update.labels.insert("extra".into(), "1".into());
    update.tolerations.push(Toleration {
        operator: Some(String::new()),
        ..gpu_toleration()
    });
    info.merge(&update).unwrap();
    assert_eq!(info.labels.get("extra").map(String::as_str), Some("1"));
    assert_eq!(
        info.tolerations.len(),
        2,
        "an empty operator differs from Exists"
    );

    update
        .node_selector
        .insert("instance-type".into(), "cpu".into());
    assert_eq!(
        info.merge(&update).unwrap_err().to_string(),
        "invalid admission check PodSetUpdate: conflict for nodeSelector: conflict for key=instance-type, value1=gpu, value2=cpu"
    );
    let long_name = "a".repeat(64);
    let info = PodSetInfo::admitted("main", 1, "lq", &long_name);
    assert!(
        !info.labels.contains_key(podset::CLUSTER_QUEUE_LABEL),
        "not a valid label value"
    );
}

// ---------------------------------------------------------------------------------------------
// Status readers

#[test]
fn finished_and_success_detection() {
    let with_status = |mut job: Value, status: Value| {
        job["status"] = status;
        job
    };
    let conditions = |list: Value| json!({"conditions": list});
    let job = batch_job(1, None, tpl("1"));
    let js = jobset(&[("a", 1, 1, 1, tpl("1"))]);
    let rj = ray_job(None, ray_cluster_spec(head_template(), &[]));
    let kf = kubeflow_job(
        "kubeflow.org/v1",
        "PyTorchJob",
        "pytorchReplicaSpecs",
        &[("Master", Some(1), tpl("1"))],
    );
    let done = |success: bool, message: &str| {
        Some(JobFinished {
            success,
            message: message.to_string(),
        })
    };
    let cases: Vec<(&dyn JobFramework, Value, Option<JobFinished>)> = vec![
        (&BatchJob, job.clone(), None),
        (
            &BatchJob,
            with_status(
                job.clone(),
                conditions(json!([{"type": "Complete", "status": "True", "message": "ok"}])),
            ),
            done(true, "ok"),
        ),
        (
            &BatchJob,
            with_status(
                job.clone(),
                conditions(json!([
                    {"type": "FailureTarget", "status": "True"},
                    {"type": "Failed", "status": "True", "message": "BackoffLimitExceeded"},
                ])),
            ),
            done(false, "BackoffLimitExceeded"),
        ),
        (
            &BatchJob,
            with_status(
                job,
                conditions(json!([{"type": "Complete", "status": "False"}])),
            ),
            None,
        ),
        (
            &JobSet,
            with_status(
                js.clone(),
                conditions(json!([{"type": "Completed", "status": "True", "message": "m"}])),
            ),
            done(true, "m"),
        ),
        (
            &JobSet,
            with_status(
                js,
                conditions(json!([{"type": "Failed", "status": "True"}])),
            ),
            done(false, ""),
        ),
        (
            &RayJob,
            with_status(
                rj.clone(),
                json!({"jobDeploymentStatus": "Complete", "jobStatus": "SUCCEEDED", "message": "fine"}),
            ),
            done(true, "fine"),
        ),
        (
            &RayJob,
            with_status(
                rj.clone(),
                json!({"jobDeploymentStatus": "Failed", "jobStatus": "FAILED"}),
            ),
            done(false, ""),
        ),
        (
            &RayJob,
            with_status(
                rj,
                json!({"jobDeploymentStatus": "Running", "jobStatus": "RUNNING"}),
            ),
            None,
        ),
        (
            &RayCluster,
            with_status(
                ray_cluster(ray_cluster_spec(head_template(), &[])),
                json!({"state": "failed"}),
            ),
            None,
        ),
        (
            &PYTORCH_JOB,
            with_status(
                kf.clone(),
                conditions(json!([{"type": "Succeeded", "status": "True"}])),
            ),
            done(true, ""),
        ),
        (
            &PYTORCH_JOB,
            with_status(
                kf,
                conditions(json!([{"type": "Failed", "status": "True", "message": "x"}])),
            ),
            done(false, "x"),
        ),
    ];
    for (framework, job, expected) in cases {
        assert_eq!(
            framework.finished(&job),
            expected,
            "{} {}",
            framework.name(),
            job["status"]
        );
    }
}

#[test]
fn pods_ready_and_activity() {
    let mut job = batch_job(3, None, tpl("1"));
    job["status"] = json!({"ready": 1, "succeeded": 1, "active": 2, "uncountedTerminatedPods": {"succeeded": ["p"]}});
    assert!(BatchJob.pods_ready(&job) && BatchJob.is_active(&job));
    job["status"] = json!({"ready": 2});
    assert!(!BatchJob.pods_ready(&job) && !BatchJob.is_active(&job));

    let mut js = jobset(&[("a", 2, 1, 1, tpl("1")), ("b", 1, 1, 1, tpl("1"))]);
    js["status"] = json!({"replicatedJobsStatus": [{"name": "a", "ready": 1, "succeeded": 1}, {"name": "b", "active": 1, "ready": 1}]});
    assert!(JobSet.pods_ready(&js) && JobSet.is_active(&js));

    let mut rj = ray_job(None, ray_cluster_spec(head_template(), &[]));
    assert!(!RayJob.is_active(&rj));
    rj["status"] = json!({"jobDeploymentStatus": "Initializing", "rayClusterStatus": {"state": "ready"}, "rayClusterName": "rj-x"});
    assert!(RayJob.pods_ready(&rj) && RayJob.is_active(&rj));
    assert_eq!(
        RayJob.pod_label_selector(&rj).as_deref(),
        Some("ray.io/cluster=rj-x")
    );
    rj["status"]["jobDeploymentStatus"] = json!("ValidationFailed");
    assert!(RayJob.is_on_hold(&rj));

    let mut kf = kubeflow_job(
        "kubeflow.org/v1",
        "TFJob",
        "tfReplicaSpecs",
        &[("Worker", Some(1), tpl("1"))],
    );
    kf["status"] = json!({"conditions": [{"type": "Running", "status": "True"}], "replicaStatuses": {"Worker": {"active": 1}}});
    assert!(TF_JOB.pods_ready(&kf) && TF_JOB.is_active(&kf));
}

#[test]
fn suspension_readers() {
    let mut job = batch_job(1, None, tpl("1"));
    assert!(BatchJob.is_suspended(&job));
    job["metadata"]["annotations"] = json!({job::STOPPING_ANNOTATION: "true"});
    assert!(
        !BatchJob.is_suspended(&job),
        "a stopping Job is not suspended yet"
    );

    let mut kf = kubeflow_job(
        "kubeflow.org/v1",
        "JAXJob",
        "jaxReplicaSpecs",
        &[("Worker", None, tpl("1"))],
    );
    kf["spec"].as_object_mut().unwrap().remove("runPolicy");
    assert!(!JAX_JOB.is_suspended(&kf));
    JAX_JOB.set_suspended(&mut kf, true);
    assert_eq!(kf["spec"]["runPolicy"], json!({"suspend": true}));

    let mut rj = ray_job(None, ray_cluster_spec(head_template(), &[]));
    assert!(!RayJob.skip(&rj));
    rj["spec"]["clusterSelector"] = json!({"ray.io/cluster": "existing"});
    assert!(RayJob.skip(&rj));
}

#[test]
fn priority_class_sources() {
    let mut master = tpl("1");
    master["spec"]["priorityClassName"] = json!("");
    let mut worker = tpl("1");
    worker["spec"]["priorityClassName"] = json!("worker-pc");
    let mut kf = kubeflow_job(
        "kubeflow.org/v1",
        "PyTorchJob",
        "pytorchReplicaSpecs",
        &[("Master", Some(1), master), ("Worker", Some(1), worker)],
    );
    assert_eq!(
        PYTORCH_JOB.priority_class_name(&kf).as_deref(),
        Some("worker-pc")
    );
    kf["spec"]["runPolicy"]["schedulingPolicy"] = json!({"priorityClass": "policy-pc"});
    assert_eq!(
        PYTORCH_JOB.priority_class_name(&kf).as_deref(),
        Some("policy-pc")
    );

    let mut template = tpl("1");
    template["spec"]["priorityClassName"] = json!("high");
    assert_eq!(
        BatchJob
            .priority_class_name(&batch_job(1, None, template))
            .as_deref(),
        Some("high")
    );
    assert_eq!(
        BatchJob.priority_class_name(&batch_job(1, None, tpl("1"))),
        None
    );
}

#[test]
fn reclaimable_pods() {
    let mut job = batch_job(4, Some(6), tpl("1"));
    job["status"] = json!({"succeeded": 3});
    assert_eq!(
        BatchJob.reclaimable_pods(&job),
        vec![ReclaimablePod {
            name: "main".into(),
            count: 1
        }]
    );
    job["spec"]["completionMode"] = json!("Indexed");
    job["status"] = json!({"succeeded": 0, "completedIndexes": "0-2", "failedIndexes": "5"});
    assert_eq!(
        BatchJob.reclaimable_pods(&job),
        vec![ReclaimablePod {
            name: "main".into(),
            count: 2
        }]
    );
    job["status"] = json!({});
    assert_eq!(BatchJob.reclaimable_pods(&job), vec![]);

    let mut js = jobset(&[
        ("Workers", 3, 2, 2, tpl("1")),
        ("driver", 1, 1, 1, tpl("1")),
    ]);
    js["status"] = json!({"replicatedJobsStatus": [{"name": "Workers", "succeeded": 2}, {"name": "driver", "succeeded": 0}]});
    assert_eq!(
        JobSet.reclaimable_pods(&js),
        vec![ReclaimablePod {
            name: "workers".into(),
            count: 4
        }]
    );
}

// ---------------------------------------------------------------------------------------------
// Validation

fn common(field: &str) -> FieldError {
    FieldError::forbidden(field, "common")
}

fn create(framework: &dyn JobFramework, job: &Value, manage_all: bool) -> Option<String> {
    aggregate(&framework.validate(ValidationInput {
        old: None,
        new: job,
        manage_jobs_without_queue_name: manage_all,
        common_on_create: vec![common("create")],
        common_on_update: vec![],
    }))
}

fn update(framework: &dyn JobFramework, old: &Value, new: &Value) -> Option<String> {
    aggregate(&framework.validate(ValidationInput {
        old: Some(old),
        new,
        manage_jobs_without_queue_name: false,
        common_on_create: vec![common("create")],
        common_on_update: vec![common("update")],
    }))
}

#[test]
fn batch_job_validation_messages() {
    let with_annotations = |parallelism: i32, completions: Option<i32>, annotations: Value| {
        let mut job = batch_job(parallelism, completions, tpl("1"));
        job["metadata"]["annotations"] = annotations;
        job
    };
    let min = "metadata.annotations[kueue.x-k8s.io/job-min-parallelism]";
    let sync = "metadata.annotations[kueue.x-k8s.io/job-completions-equal-parallelism]";
    let cases = vec![
        (
            with_annotations(3, None, json!({})),
            "create: Forbidden: common".to_string(),
        ),
        (
            with_annotations(3, None, json!({"kueue.x-k8s.io/job-min-parallelism": "3"})),
            format!(
                "[create: Forbidden: common, {min}: Invalid value: 3: should be between 0 and 2]"
            ),
        ),
        (
            with_annotations(
                3,
                None,
                json!({"kueue.x-k8s.io/job-min-parallelism": "two"}),
            ),
            format!(
                r#"[create: Forbidden: common, {min}: Invalid value: "two": strconv.Atoi: parsing "two": invalid syntax]"#
            ),
        ),
        (
            with_annotations(3, None, json!({"kueue.x-k8s.io/job-min-parallelism": "2"})),
            "create: Forbidden: common".to_string(),
        ),
        (
            with_annotations(
                3,
                Some(4),
                json!({"kueue.x-k8s.io/job-completions-equal-parallelism": "true"}),
            ),
            format!(
                "[create: Forbidden: common, {sync}: Invalid value: \"true\": should not be enabled for NonIndexed jobs, \
                 spec.completions: Invalid value: 4: should be equal to parallelism when \
                 kueue.x-k8s.io/job-completions-equal-parallelism annotation is true]"
            ),
        ),
        (
            with_annotations(
                3,
                None,
                json!({"kueue.x-k8s.io/job-completions-equal-parallelism": "maybe"}),
            ),
            format!(
                r#"[create: Forbidden: common, {sync}: Invalid value: "maybe": strconv.ParseBool: parsing "maybe": invalid syntax]"#
            ),
        ),
    ];
    for (job, expected) in cases {
        assert_eq!(
            create(&BatchJob, &job, false),
            Some(expected),
            "{}",
            job["metadata"]
        );
    }

    let mut running = with_annotations(4, None, json!({"kueue.x-k8s.io/job-min-parallelism": "2"}));
    running["spec"]["suspend"] = json!(false);
    let mut resized = running.clone();
    resized["spec"]["parallelism"] = json!(3);
    assert_eq!(
        update(&BatchJob, &running, &resized),
        Some(
            "[create: Forbidden: common, update: Forbidden: common, spec.parallelism: Forbidden: \
             cannot change when partial admission is enabled and the job is not suspended]"
                .to_string()
        )
    );
    let mut synced = running.clone();
    synced["metadata"]["annotations"]["kueue.x-k8s.io/job-completions-equal-parallelism"] =
        json!("false");
    synced["metadata"]["annotations"]["kueue.x-k8s.io/job-min-parallelism"] = json!("9");
    running["metadata"]["annotations"]["kueue.x-k8s.io/job-completions-equal-parallelism"] =
        json!("true");
    running["spec"]["completionMode"] = json!("Indexed");
    synced["spec"]["completionMode"] = json!("Indexed");
    assert_eq!(
        update(&BatchJob, &running, &synced),
        Some(format!(
            "[create: Forbidden: common, {min}: Invalid value: 9: should be between 0 and 3, update: Forbidden: common, \
             {sync}: Forbidden: field is immutable while the job is not suspended]"
        ))
    );
}

#[test]
fn ray_validation_messages() {
    let cluster = || ray_cluster_spec(head_template(), &[("head", Some(1), 0, tpl("1"))]);
    let mut job = ray_job(None, cluster());
    job["spec"]["shutdownAfterJobFinishes"] = json!(false);
    job["spec"]["rayClusterSpec"]["enableInTreeAutoscaling"] = json!(true);
    assert_eq!(
        create(&RayJob, &job, false),
        Some(
            "[spec.shutdownAfterJobFinishes: Invalid value: false: a kueue managed job should delete the cluster after finishing, \
             spec.rayClusterSpec.enableInTreeAutoscaling: Invalid value: true: a kueue managed job should only use autoscaling \
             when workload slicing is enabled, \
             spec.rayClusterSpec.workerGroupSpecs[0].groupName: Forbidden: \"head\" is reserved for the head group, \
             create: Forbidden: common]"
                .to_string()
        )
    );

    job["spec"]["clusterSelector"] = json!({"ray.io/cluster": "c"});
    assert_eq!(
        create(&RayJob, &job, false),
        Some(
            r#"spec.clusterSelector: Invalid value: {"ray.io/cluster":"c"}: a kueue managed job should not use an existing cluster"#
                .to_string()
        )
    );
    job["spec"]
        .as_object_mut()
        .unwrap()
        .remove("rayClusterSpec");
    assert_eq!(
        create(&RayJob, &job, false),
        None,
        "an existing cluster skips every rule"
    );
    job["spec"]
        .as_object_mut()
        .unwrap()
        .remove("clusterSelector");
    assert_eq!(
        create(&RayJob, &job, false),
        Some(
            "spec.rayClusterSpec: Required value: rayClusterSpec is required for Kueue-managed jobs that don't use clusterSelector"
                .to_string()
        )
    );

    let mut unqueued = ray_job(None, json!(null));
    unqueued["metadata"]["labels"] = json!({});
    assert_eq!(
        create(&RayJob, &unqueued, false),
        Some("create: Forbidden: common".to_string())
    );
    assert_eq!(
        update(&RayJob, &unqueued, &unqueued),
        None,
        "updates of never-queued Ray jobs are not validated"
    );

    let mut raycluster = ray_cluster(ray_cluster_spec(
        head_template(),
        &[("w", Some(1), 0, tpl("1"))],
    ));
    raycluster["spec"]["enableInTreeAutoscaling"] = json!(true);
    assert_eq!(
        create(&RayCluster, &raycluster, false),
        Some("create: Forbidden: common".to_string()),
        "not managed"
    );
    assert_eq!(
        create(&RayCluster, &raycluster, true),
        Some(
            "[spec.enableInTreeAutoscaling: Invalid value: true: a kueue-managed RayCluster can use autoscaling only as an \
             elastic job: enable the ElasticJobsViaWorkloadSlices feature gate and set the \
             \"kueue.x-k8s.io/elastic-job\": \"true\" annotation, create: Forbidden: common]"
                .to_string()
        )
    );
    raycluster["metadata"]["annotations"] = json!({"kueue.x-k8s.io/elastic-job": "true"});
    let mut elastic_job = ray_job(None, raycluster["spec"].clone());
    elastic_job["metadata"]["annotations"] = raycluster["metadata"]["annotations"].clone();
    let no_slices = "Invalid value: true: Kuota does not implement workload slices (Kueue's \
                     ElasticJobsViaWorkloadSlices), so it cannot queue an elastic job that autoscales; set \
                     it to false to queue the job at its declared size";
    assert_eq!(
        create(&RayCluster, &raycluster, true),
        Some(format!(
            "[spec.enableInTreeAutoscaling: {no_slices}, create: Forbidden: common]"
        )),
        "an elastic RayCluster is told what Kuota lacks"
    );
    assert_eq!(
        create(&RayJob, &elastic_job, true),
        Some(format!(
            "[spec.rayClusterSpec.enableInTreeAutoscaling: {no_slices}, create: Forbidden: common]"
        )),
        "an elastic RayJob is told what Kuota lacks"
    );
    let workers: Vec<Value> = (0..18)
        .map(|i| json!({"groupName": format!("w{i}"), "template": tpl("1")}))
        .collect();
    raycluster["spec"]["enableInTreeAutoscaling"] = json!(false);
    raycluster["spec"]["workerGroupSpecs"] = Value::Array(workers);
    raycluster["metadata"]["labels"] = json!({"kueue.x-k8s.io/queue-name": "q"});
    assert_eq!(
        update(&RayCluster, &raycluster, &raycluster),
        Some(
            "[update: Forbidden: common, spec.workerGroupSpecs: Too many: 19: must have at most 18 items, create: Forbidden: common]"
                .to_string()
        )
    );
}

#[test]
fn validation_combines_common_errors_per_kind() {
    let job = jobset(&[("a", 1, 1, 1, tpl("1"))]);
    assert_eq!(
        update(&JobSet, &job, &job),
        Some("[update: Forbidden: common, create: Forbidden: common]".to_string())
    );
    let kf = kubeflow_job(
        "kubeflow.org/v1",
        "PaddleJob",
        "paddleReplicaSpecs",
        &[("Worker", None, tpl("1"))],
    );
    assert_eq!(
        update(&PADDLE_JOB, &kf, &kf),
        Some("update: Forbidden: common".to_string())
    );
    assert_eq!(
        create(&PADDLE_JOB, &kf, false),
        Some("create: Forbidden: common".to_string())
    );
    let mpi = kubeflow_job(
        "kubeflow.org/v2beta1",
        "MPIJob",
        "mpiReplicaSpecs",
        &[("Worker", None, tpl("1"))],
    );
    let sorted = MPI_JOB.validate(ValidationInput {
        old: Some(&mpi),
        new: &mpi,
        manage_jobs_without_queue_name: false,
        common_on_create: vec![common("metadata.labels[b]"), common("metadata.labels[a]")],
        common_on_update: vec![common("metadata.labels[c]")],
    });
    let fields: Vec<&str> = sorted.iter().map(|error| error.field.as_str()).collect();
    assert_eq!(
        fields,
        [
            "metadata.labels[a]",
            "metadata.labels[b]",
            "metadata.labels[c]"
        ]
    );
}

// ---------------------------------------------------------------------------------------------
// The table, webhook paths, names

#[test]
fn framework_table_and_webhook_paths() {
    let expected = [
        (
            "batch/job",
            "batch/v1, Kind=Job",
            "/mutate-batch-v1-job",
            "/validate-batch-v1-job",
            "/spec/suspend",
        ),
        (
            "jobset.x-k8s.io/jobset",
            "jobset.x-k8s.io/v1alpha2, Kind=JobSet",
            "/mutate-jobset-x-k8s-io-v1alpha2-jobset",
            "/validate-jobset-x-k8s-io-v1alpha2-jobset",
            "/spec/suspend",
        ),
        (
            "ray.io/rayjob",
            "ray.io/v1, Kind=RayJob",
            "/mutate-ray-io-v1-rayjob",
            "/validate-ray-io-v1-rayjob",
            "/spec/suspend",
        ),
        (
            "ray.io/raycluster",
            "ray.io/v1, Kind=RayCluster",
            "/mutate-ray-io-v1-raycluster",
            "/validate-ray-io-v1-raycluster",
            "/spec/suspend",
        ),
        (
            "kubeflow.org/mpijob",
            "kubeflow.org/v2beta1, Kind=MPIJob",
            "/mutate-kubeflow-org-v2beta1-mpijob",
            "/validate-kubeflow-org-v2beta1-mpijob",
            "/spec/runPolicy/suspend",
        ),
        (
            "kubeflow.org/pytorchjob",
            "kubeflow.org/v1, Kind=PyTorchJob",
            "/mutate-kubeflow-org-v1-pytorchjob",
            "/validate-kubeflow-org-v1-pytorchjob",
            "/spec/runPolicy/suspend",
        ),
        (
            "kubeflow.org/tfjob",
            "kubeflow.org/v1, Kind=TFJob",
            "/mutate-kubeflow-org-v1-tfjob",
            "/validate-kubeflow-org-v1-tfjob",
            "/spec/runPolicy/suspend",
        ),
        (
            "kubeflow.org/xgboostjob",
            "kubeflow.org/v1, Kind=XGBoostJob",
            "/mutate-kubeflow-org-v1-xgboostjob",
            "/validate-kubeflow-org-v1-xgboostjob",
            "/spec/runPolicy/suspend",
        ),
        (
            "kubeflow.org/paddlejob",
            "kubeflow.org/v1, Kind=PaddleJob",
            "/mutate-kubeflow-org-v1-paddlejob",
            "/validate-kubeflow-org-v1-paddlejob",
            "/spec/runPolicy/suspend",
        ),
        (
            "kubeflow.org/jaxjob",
            "kubeflow.org/v1, Kind=JAXJob",
            "/mutate-kubeflow-org-v1-jaxjob",
            "/validate-kubeflow-org-v1-jaxjob",
            "/spec/runPolicy/suspend",
        ),
    ];
    let actual: Vec<_> = FRAMEWORKS
        .iter()
        .map(|f| {
            (
                f.name(),
                f.kind().gvk_string(),
                f.kind().mutate_path(),
                f.kind().validate_path(),
                f.suspend_pointer(),
            )
        })
        .collect();
    let expected: Vec<_> = expected
        .iter()
        .map(|(n, g, m, v, s)| (*n, g.to_string(), m.to_string(), v.to_string(), *s))
        .collect();
    assert_eq!(actual, expected);

    for framework in FRAMEWORKS {
        let kind = framework.kind();
        assert_eq!(
            by_name(framework.name()).map(|f| f.name()),
            Some(framework.name())
        );
        assert_eq!(
            by_gvk(kind.group, kind.version, kind.kind).map(|f| f.name()),
            Some(framework.name())
        );
        let (webhook, found) = by_webhook_path(&kind.mutate_path()).unwrap();
        assert_eq!(
            (webhook, found.name()),
            (WebhookKind::Mutate, framework.name())
        );
        let (webhook, found) = by_webhook_path(&kind.validate_path()).unwrap();
        assert_eq!(
            (webhook, found.name()),
            (WebhookKind::Validate, framework.name())
        );
        assert_eq!(
            framework.supports_prebuilt_workload(),
            framework.name() != "kubeflow.org/jaxjob"
        );
    }
    assert!(by_name("pod").is_none());
    assert!(by_webhook_path("/mutate--v1-pod").is_none());
    assert_eq!(BatchJob.kind().api_resource().api_version, "batch/v1");
    assert_eq!(TF_JOB.kind().api_resource().plural, "tfjobs");
    assert_eq!(
        workload_name_for(
            &PYTORCH_JOB,
            &json!({"metadata": {"name": "pytorch-simple", "uid": "0b5c7e1e-2f0e-4e8b-9d1a-6c3f5e7a9b11"}})
        ),
        "pytorchjob-pytorch-simple-e5e78"
    );
    assert_eq!(
        queue_name(&batch_job(1, None, tpl("1"))),
        Some("user-queue")
    );
}

// ---------------------------------------------------------------------------------------------
// Test CRDs

#[test]
fn test_crds_parse_and_match_the_table() {
    use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;

    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("dev/cluster/crds");
    let mut covered = Vec::new();
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        let crd: CustomResourceDefinition =
            crate::k8s::yaml::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        let version = &crd.spec.versions[0];
        let framework = by_gvk(&crd.spec.group, &version.name, &crd.spec.names.kind)
            .unwrap_or_else(|| panic!("{} is not a known job kind", path.display()));
        assert_eq!(
            crd.spec.names.plural,
            framework.kind().plural,
            "{}",
            path.display()
        );
        assert!(
            version
                .subresources
                .as_ref()
                .and_then(|s| s.status.as_ref())
                .is_some(),
            "{}",
            path.display()
        );

        // The suspend field must be typed boolean at the framework's pointer.
        let mut schema = version
            .schema
            .as_ref()
            .unwrap()
            .open_api_v3_schema
            .clone()
            .unwrap();
        for field in framework.suspend_pointer().split('/').skip(1) {
            schema = schema
                .properties
                .unwrap()
                .remove(field)
                .unwrap_or_else(|| panic!("{} lacks {field}", path.display()));
        }
        assert_eq!(
            schema.type_.as_deref(),
            Some("boolean"),
            "{}",
            path.display()
        );
        covered.push(framework.name());
    }
    covered.sort_unstable();
    let mut third_party: Vec<&str> = FRAMEWORKS
        .iter()
        .map(|f| f.name())
        .filter(|n| *n != "batch/job")
        .collect();
    third_party.sort_unstable();
    assert_eq!(covered, third_party);
}

// ---------------------------------------------------------------------------------------------
// Topology requests

const TAS: TopologyGates = TopologyGates {
    enabled: true,
    multi_layer: true,
};

/// A one-container template (1 cpu) with these annotations.
fn annotated(annotations: &[(&str, &str)]) -> Value {
    let mut template = tpl("1");
    let annotations: serde_json::Map<String, Value> = annotations
        .iter()
        .map(|(key, value)| ((*key).to_owned(), json!(value)))
        .collect();
    template["metadata"] = json!({"annotations": annotations});
    template
}

fn requests_of(framework: &dyn JobFramework, job: &Value, gates: TopologyGates) -> Vec<Value> {
    let pod_sets = framework.pod_sets(job).expect("pod sets");
    topology::topology_requests(framework, job, &pod_sets, gates)
        .expect("topology requests")
        .into_iter()
        .map(|request| serde_json::to_value(request).expect("json"))
        .collect()
}

fn tas_errors(framework: &dyn JobFramework, job: &Value) -> String {
    let pod_sets = framework.build_pod_sets(job).unwrap_or_default();
    aggregate(&topology::validate(framework, job, &pod_sets, TAS)).unwrap_or_default()
}

#[test]
fn each_topology_annotation_alone_is_checked_and_other_annotations_are_not() {
    let errors = |annotations: &[(&str, &str)]| {
        tas_errors(&BatchJob, &batch_job(2, None, annotated(annotations)))
    };
    for (key, value) in [
        ("kueue.x-k8s.io/podset-required-topology", "not a label!"),
        ("kueue.x-k8s.io/podset-preferred-topology", "not a label!"),
        ("kueue.x-k8s.io/podset-unconstrained-topology", "maybe"),
        ("kueue.x-k8s.io/podset-slice-required-topology", "rack"),
        ("kueue.x-k8s.io/podset-slice-size", "1"),
        (
            "kueue.x-k8s.io/podset-slice-required-topology-constraints",
            "[]",
        ),
        ("kueue.x-k8s.io/podset-group-name", "g"),
    ] {
        let found = errors(&[(key, value)]);
        assert!(found.contains(key), "{key}: {found:?}");
    }
    assert_eq!(errors(&[("example.com/note", "x")]), "");
}

#[test]
fn topology_requests_follow_the_annotations_and_the_kinds_index_labels() {
    let required = batch_job(
        4,
        None,
        annotated(&[
            ("kueue.x-k8s.io/podset-required-topology", "rack"),
            ("kueue.x-k8s.io/podset-group-name", "g"),
        ]),
    );
    /// (what, kind, job, gates, expected requests as JSON).
    type Case<'a> = (
        &'a str,
        &'a dyn JobFramework,
        Value,
        TopologyGates,
        Vec<Value>,
    );
    let cases: Vec<Case<'_>> = vec![
        (
            "a Job without annotations is ranked by completion index",
            &BatchJob,
            batch_job(2, None, tpl("1")),
            TAS,
            vec![json!({"podIndexLabel": "batch.kubernetes.io/job-completion-index"})],
        ),
        (
            "required level, group name kept",
            &BatchJob,
            required.clone(),
            TAS,
            vec![json!({
                "required": "rack",
                "podIndexLabel": "batch.kubernetes.io/job-completion-index",
                "podSetGroupName": "g",
            })],
        ),
        (
            "gate off: nothing",
            &BatchJob,
            required,
            TopologyGates {
                enabled: false,
                multi_layer: false,
            },
            vec![Value::Null],
        ),
        (
            "unconstrained, and a group name without required/preferred dropped",
            &BatchJob,
            batch_job(
                1,
                None,
                annotated(&[
                    ("kueue.x-k8s.io/podset-unconstrained-topology", "T"),
                    ("kueue.x-k8s.io/podset-group-name", "g"),
                ]),
            ),
            TAS,
            vec![json!({
                "unconstrained": true,
                "podIndexLabel": "batch.kubernetes.io/job-completion-index",
            })],
        ),
        (
            "slices",
            &BatchJob,
            batch_job(
                4,
                None,
                annotated(&[
                    ("kueue.x-k8s.io/podset-preferred-topology", "block"),
                    ("kueue.x-k8s.io/podset-slice-required-topology", "rack"),
                    ("kueue.x-k8s.io/podset-slice-size", "2"),
                ]),
            ),
            TAS,
            vec![json!({
                "preferred": "block",
                "podIndexLabel": "batch.kubernetes.io/job-completion-index",
                "podSetSliceRequiredTopology": "rack",
                "podSetSliceSize": 2,
            })],
        ),
        (
            "JobSet: completion index within each copy of a replicated job",
            &JobSet,
            jobset(&[
                ("driver", 1, 1, 1, tpl("1")),
                (
                    "workers",
                    3,
                    2,
                    2,
                    annotated(&[(
                        "kueue.x-k8s.io/podset-slice-required-topology-constraints",
                        r#"[{"topology":"block","size":6},{"topology":"rack","size":2}]"#,
                    )]),
                ),
            ]),
            TAS,
            vec![
                json!({
                    "podIndexLabel": "batch.kubernetes.io/job-completion-index",
                    "subGroupIndexLabel": "jobset.sigs.k8s.io/job-index",
                    "subGroupCount": 1,
                }),
                json!({
                    "podIndexLabel": "batch.kubernetes.io/job-completion-index",
                    "subGroupIndexLabel": "jobset.sigs.k8s.io/job-index",
                    "subGroupCount": 3,
                    "podsetSliceRequiredTopologyConstraints": [
                        {"topology": "block", "size": 6},
                        {"topology": "rack", "size": 2},
                    ],
                }),
            ],
        ),
        (
            "Kubeflow: replica index",
            &PYTORCH_JOB,
            kubeflow_job(
                "kubeflow.org/v1",
                "PyTorchJob",
                "pytorchReplicaSpecs",
                &[("Master", Some(1), tpl("1"))],
            ),
            TAS,
            vec![json!({"podIndexLabel": "training.kubeflow.org/replica-index"})],
        ),
        (
            "Ray has no index label: only annotated PodSets get a request",
            &RayCluster,
            ray_cluster(ray_cluster_spec(
                head_template(),
                &[(
                    "gpu",
                    Some(2),
                    1,
                    annotated(&[("kueue.x-k8s.io/podset-preferred-topology", "rack")]),
                )],
            )),
            TAS,
            vec![Value::Null, json!({"preferred": "rack"})],
        ),
    ];
    for (name, framework, job, gates, want) in cases {
        assert_eq!(requests_of(framework, &job, gates), want, "{name}");
    }
}

#[test]
fn topology_annotations_are_refused_with_kueues_messages() {
    let path = "spec.template.metadata.annotations";
    let job = |annotations: &[(&str, &str)]| batch_job(4, None, annotated(annotations));
    let cases = [
        (
            job(&[
                ("kueue.x-k8s.io/podset-required-topology", "rack"),
                ("kueue.x-k8s.io/podset-unconstrained-topology", "true"),
            ]),
            format!(
                "{path}: Invalid value: must not contain more than one topology annotation: \
                 [\"kueue.x-k8s.io/podset-required-topology\", \
                 \"kueue.x-k8s.io/podset-preferred-topology\", \
                 \"kueue.x-k8s.io/podset-unconstrained-topology\"]"
            ),
        ),
        (
            job(&[("kueue.x-k8s.io/podset-preferred-topology", "a/b/c")]),
            format!(
                "{path}[kueue.x-k8s.io/podset-preferred-topology]: Invalid value: \"a/b/c\": a \
                 qualified name must consist of alphanumeric characters, '-', '_' or '.', and \
                 must start and end with an alphanumeric character (e.g. 'MyName',  or \
                 'my.name',  or '123-abc', regex used for validation is \
                 '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional DNS subdomain \
                 prefix and '/' (e.g. 'example.com/MyName')"
            ),
        ),
        (
            job(&[("kueue.x-k8s.io/podset-group-name", "42")]),
            format!(
                "[{path}[kueue.x-k8s.io/podset-group-name]: Invalid value: \"42\": must not be a \
                 number, {path}[kueue.x-k8s.io/podset-group-name]: Forbidden: may not be set \
                 when neither 'kueue.x-k8s.io/podset-preferred-topology' nor \
                 'kueue.x-k8s.io/podset-required-topology' is specified]"
            ),
        ),
        (
            job(&[("kueue.x-k8s.io/podset-unconstrained-topology", "yes")]),
            format!(
                "{path}[kueue.x-k8s.io/podset-unconstrained-topology]: Invalid value: \"yes\": \
                 must be a boolean value"
            ),
        ),
        (
            job(&[
                ("kueue.x-k8s.io/podset-slice-required-topology", "rack"),
                ("kueue.x-k8s.io/podset-slice-size", "0"),
            ]),
            format!(
                "{path}[kueue.x-k8s.io/podset-slice-size]: Invalid value: \"0\": must be greater \
                 than or equal to 1"
            ),
        ),
        (
            job(&[
                ("kueue.x-k8s.io/podset-slice-required-topology", "rack"),
                ("kueue.x-k8s.io/podset-slice-size", "5"),
            ]),
            format!(
                "{path}[kueue.x-k8s.io/podset-slice-size]: Invalid value: \"5\": must not be \
                 greater than pod set count 4"
            ),
        ),
        (
            job(&[("kueue.x-k8s.io/podset-slice-required-topology", "rack")]),
            format!(
                "{path}[kueue.x-k8s.io/podset-slice-size]: Required value: must be set when \
                 'kueue.x-k8s.io/podset-slice-required-topology' is specified"
            ),
        ),
        (
            job(&[("kueue.x-k8s.io/podset-slice-size", "x")]),
            format!(
                "[{path}[kueue.x-k8s.io/podset-slice-size]: Invalid value: \"x\": must be a \
                 numeric value, {path}[kueue.x-k8s.io/podset-slice-size]: Forbidden: may not be \
                 set when 'kueue.x-k8s.io/podset-slice-required-topology' is not specified]"
            ),
        ),
        (
            job(&[(
                "kueue.x-k8s.io/podset-slice-required-topology-constraints",
                r#"[{"topology":"block","size":4},{"topology":"block","size":3}]"#,
            )]),
            format!(
                "[{path}[kueue.x-k8s.io/podset-slice-required-topology-constraints][1].topology: \
                 Duplicate value: \"block (also at index 0)\", \
                 {path}[kueue.x-k8s.io/podset-slice-required-topology-constraints][1].size: \
                 Invalid value: 3: must evenly divide the parent layer size 4]"
            ),
        ),
        (
            job(&[(
                "kueue.x-k8s.io/podset-slice-required-topology-constraints",
                "[]",
            )]),
            format!(
                "{path}[kueue.x-k8s.io/podset-slice-required-topology-constraints]: Invalid \
                 value: \"[]\": topology constraints must contain between 1 and 3 entries"
            ),
        ),
        (
            job(&[(
                "kueue.x-k8s.io/podset-slice-required-topology-constraints",
                r#"[{"topology":"rack","size":8}]"#,
            )]),
            format!(
                "{path}[kueue.x-k8s.io/podset-slice-required-topology-constraints]: Invalid \
                 value: 8: must not be greater than pod set count 4"
            ),
        ),
    ];
    for (job, want) in cases {
        assert_eq!(tas_errors(&BatchJob, &job), want);
    }
    let multi_layer_job = job(&[(
        "kueue.x-k8s.io/podset-slice-required-topology-constraints",
        r#"[{"topology":"rack","size":2}]"#,
    )]);
    let without_multi_layer = topology::validate(
        &BatchJob,
        &multi_layer_job,
        &BatchJob.build_pod_sets(&multi_layer_job).unwrap(),
        TopologyGates {
            enabled: true,
            multi_layer: false,
        },
    );
    assert_eq!(
        aggregate(&without_multi_layer).unwrap_or_default(),
        format!(
            "{path}[kueue.x-k8s.io/podset-slice-required-topology-constraints]: Forbidden: the \
             TASMultiLayerTopology feature gate must be enabled to use this annotation"
        )
    );
}

#[test]
fn topology_groups_and_paths_of_multi_template_kinds() {
    let rack = [
        ("kueue.x-k8s.io/podset-required-topology", "rack"),
        ("kueue.x-k8s.io/podset-group-name", "g"),
    ];
    let block = [
        ("kueue.x-k8s.io/podset-required-topology", "block"),
        ("kueue.x-k8s.io/podset-group-name", "g"),
    ];
    let leader_and_workers = jobset(&[
        ("leader", 1, 1, 1, annotated(&rack)),
        ("workers", 1, 4, 4, annotated(&rack)),
    ]);
    assert_eq!(tas_errors(&JobSet, &leader_and_workers), "");
    let path =
        |i: usize| format!("spec.replicatedJobs[{i}].template.spec.template.metadata.annotations");
    assert_eq!(
        tas_errors(
            &JobSet,
            &jobset(&[
                ("a", 1, 2, 2, annotated(&rack)),
                ("b", 1, 2, 2, annotated(&block)),
            ])
        ),
        format!(
            "[{a}[kueue.x-k8s.io/podset-group-name]: Invalid value: \"g\": can only define groups \
             where at least one pod set has only 1 replica, got: 2 replica(s) and 2 replica(s) in \
             the group, {b}[kueue.x-k8s.io/podset-group-name]: Invalid value: \"g\": can only \
             define groups where at least one pod set has only 1 replica, got: 2 replica(s) and \
             2 replica(s) in the group, {a}: Invalid value: must specify \
             'kueue.x-k8s.io/podset-required-topology' or \
             'kueue.x-k8s.io/podset-preferred-topology' topology consistent with '{b}' in group \
             'g', {b}: Invalid value: must specify 'kueue.x-k8s.io/podset-required-topology' or \
             'kueue.x-k8s.io/podset-preferred-topology' topology consistent with '{a}' in group \
             'g']",
            a = path(0),
            b = path(1)
        )
    );
    assert_eq!(
        tas_errors(&JobSet, &jobset(&[("alone", 1, 1, 1, annotated(&rack))])),
        format!(
            "{}[kueue.x-k8s.io/podset-group-name]: Invalid value: \"g\": can only define groups \
             of exactly 2 pod sets, got: 1 pod set(s)",
            path(0)
        )
    );
    let kubeflow = kubeflow_job(
        "kubeflow.org/v1",
        "PyTorchJob",
        "pytorchReplicaSpecs",
        &[(
            "Worker",
            Some(2),
            annotated(&[("kueue.x-k8s.io/podset-unconstrained-topology", "no")]),
        )],
    );
    assert_eq!(
        tas_errors(&PYTORCH_JOB, &kubeflow),
        "spec.pytorchReplicaSpecs[Worker].template.metadata.annotations\
         [kueue.x-k8s.io/podset-unconstrained-topology]: Invalid value: \"no\": must be a \
         boolean value"
    );
    let ray = ray_cluster(ray_cluster_spec(
        annotated(&[("kueue.x-k8s.io/podset-slice-size", "1")]),
        &[],
    ));
    assert_eq!(
        tas_errors(&RayCluster, &ray),
        "spec.headGroupSpec.template.metadata.annotations[kueue.x-k8s.io/podset-slice-size]: \
         Forbidden: may not be set when 'kueue.x-k8s.io/podset-slice-required-topology' is not \
         specified"
    );
}
