//! Tests of the Workload builder, and the job and Workload builders the job controller tests
//! share.

use std::collections::BTreeMap;

use jiff::Timestamp;
use k8s_openapi::api::core::v1::Toleration;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use super::*;
use crate::api::v1beta2::{
    Admission, AdmissionCheckState, CheckState, PodSetAssignment, PodSetUpdate, WorkloadStatus,
};
use crate::jobs::{BatchJob, PYTORCH_JOB};

/// Kueue's defaults: `TopologyAwareScheduling` and `TASMultiLayerTopology` on.
pub(crate) const KUEUE_TOPOLOGY_DEFAULTS: TopologyGates = TopologyGates {
    enabled: true,
    multi_layer: true,
};

pub(crate) const UID: &str = "6a3f9d0e-7c1b-4d2a-9f8e-1b2c3d4e5f60";
pub(crate) const NOW: &str = "2025-06-01T12:00:00Z";

pub(crate) fn now() -> Timestamp {
    NOW.parse().expect("valid timestamp")
}

pub(crate) fn at(rfc3339: &str) -> Time {
    Time(rfc3339.parse().expect("valid timestamp"))
}

/// A job object under construction.
pub(crate) struct JobBuilder(pub(crate) Value);

impl JobBuilder {
    /// A suspended batch Job `sample` in `ns` with queue `lq`: 2 pods of 1 CPU.
    pub(crate) fn batch() -> Self {
        JobBuilder(json!({
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": {
                "name": "sample",
                "namespace": "ns",
                "uid": UID,
                "resourceVersion": "7",
                "labels": {"kueue.x-k8s.io/queue-name": "lq"},
            },
            "spec": {
                "parallelism": 2,
                "completions": 2,
                "suspend": true,
                "template": {
                    "metadata": {"labels": {"app": "sample"}},
                    "spec": {
                        "restartPolicy": "Never",
                        "containers": [{
                            "name": "main",
                            "image": "busybox",
                            "resources": {"requests": {"cpu": "1"}},
                        }],
                    },
                },
            },
        }))
    }

    /// A suspended PyTorchJob `train` in `ns` with queue `lq`: one master and two workers.
    pub(crate) fn pytorch() -> Self {
        let replica = |replicas: i32| {
            json!({
                "replicas": replicas,
                "template": {"spec": {"containers": [{
                    "name": "pytorch",
                    "image": "pytorch",
                    "resources": {"requests": {"cpu": "1"}},
                }]}},
            })
        };
        JobBuilder(json!({
            "apiVersion": "kubeflow.org/v1",
            "kind": "PyTorchJob",
            "metadata": {
                "name": "train",
                "namespace": "ns",
                "uid": UID,
                "resourceVersion": "7",
                "labels": {"kueue.x-k8s.io/queue-name": "lq"},
            },
            "spec": {
                "runPolicy": {"suspend": true},
                "pytorchReplicaSpecs": {"Master": replica(1), "Worker": replica(2)},
            },
        }))
    }

    /// Sets the value at a JSON pointer, creating parent objects.
    pub(crate) fn set(mut self, pointer: &str, value: Value) -> Self {
        set(&mut self.0, pointer, value);
        self
    }

    pub(crate) fn label(self, key: &str, value: &str) -> Self {
        let pointer = format!("/metadata/labels/{}", key.replace('/', "~1"));
        self.set(&pointer, json!(value))
    }

    pub(crate) fn annotation(self, key: &str, value: &str) -> Self {
        let pointer = format!("/metadata/annotations/{}", key.replace('/', "~1"));
        self.set(&pointer, json!(value))
    }

    pub(crate) fn suspend(self, suspended: bool) -> Self {
        self.set("/spec/suspend", json!(suspended))
    }

    pub(crate) fn build(self) -> Value {
        self.0
    }
}

pub(crate) fn set(target: &mut Value, pointer: &str, value: Value) {
    let mut current = target;
    let tokens: Vec<String> = pointer
        .split('/')
        .skip(1)
        .map(|token| token.replace("~1", "/").replace("~0", "~"))
        .collect();
    for token in &tokens[..tokens.len() - 1] {
        current = match token.parse::<usize>() {
            Ok(index) if current.is_array() => &mut current[index],
            _ => {
                if !current
                    .get(token)
                    .is_some_and(|v| v.is_object() || v.is_array())
                {
                    current[token.as_str()] = json!({});
                }
                &mut current[token.as_str()]
            }
        };
    }
    current[tokens[tokens.len() - 1].as_str()] = value;
}

pub(crate) fn condition(
    type_: &str,
    status: &str,
    reason: &str,
    message: &str,
    time: &str,
) -> Condition {
    Condition {
        type_: type_.to_string(),
        status: status.to_string(),
        reason: reason.to_string(),
        message: message.to_string(),
        last_transition_time: at(time),
        observed_generation: Some(1),
    }
}

/// A Workload under construction, starting from the one built for a job.
pub(crate) struct WorkloadBuilder(pub(crate) Workload);

impl WorkloadBuilder {
    /// The Workload Kuota creates for `job` (priority 0), stored with generation 1.
    pub(crate) fn for_job(framework: &dyn JobFramework, job: &Value) -> Self {
        let pod_sets =
            job_pod_sets(framework, job, true, KUEUE_TOPOLOGY_DEFAULTS).expect("pod sets");
        let mut workload =
            build_workload(framework, job, &pod_sets, &ResolvedPriority::default(), &[])
                .expect("workload");
        workload.metadata.generation = Some(1);
        workload.metadata.resource_version = Some("11".to_string());
        WorkloadBuilder(workload)
    }

    pub(crate) fn condition(mut self, condition: Condition) -> Self {
        let status = self.0.status.get_or_insert_with(WorkloadStatus::default);
        status
            .conditions
            .retain(|existing| existing.type_ != condition.type_);
        status.conditions.push(condition);
        self
    }

    /// Admitted in ClusterQueue `cq` with flavor `on-demand` for cpu on every PodSet.
    pub(crate) fn admitted(mut self) -> Self {
        let assignments = self
            .0
            .spec
            .pod_sets
            .iter()
            .map(|pod_set| PodSetAssignment {
                name: pod_set.name.clone(),
                flavors: BTreeMap::from([("cpu".to_string(), "on-demand".to_string())]),
                count: Some(pod_set.count),
                ..PodSetAssignment::default()
            })
            .collect();
        self.0
            .status
            .get_or_insert_with(WorkloadStatus::default)
            .admission = Some(Admission {
            cluster_queue: "cq".to_string(),
            pod_set_assignments: assignments,
        });
        self.condition(condition(
            "QuotaReserved",
            "True",
            "QuotaReserved",
            "Quota reserved in ClusterQueue cq",
            "2025-06-01T11:00:00Z",
        ))
        .condition(condition(
            "Admitted",
            "True",
            "Admitted",
            "The workload is admitted",
            "2025-06-01T11:00:00Z",
        ))
    }

    pub(crate) fn build(self) -> Workload {
        self.0
    }
}

/// Flavor `on-demand` (node label `instance-type: on-demand`, a toleration) and `spot`.
pub(crate) fn flavors() -> BTreeMap<String, ResourceFlavorSpec> {
    BTreeMap::from([
        (
            "on-demand".to_string(),
            ResourceFlavorSpec {
                node_labels: BTreeMap::from([(
                    "instance-type".to_string(),
                    "on-demand".to_string(),
                )]),
                tolerations: vec![Toleration {
                    key: Some("dedicated".to_string()),
                    operator: Some("Equal".to_string()),
                    value: Some("batch".to_string()),
                    effect: Some("NoSchedule".to_string()),
                    ..Toleration::default()
                }],
                ..ResourceFlavorSpec::default()
            },
        ),
        (
            "spot".to_string(),
            ResourceFlavorSpec {
                node_labels: BTreeMap::from([("instance-type".to_string(), "spot".to_string())]),
                ..ResourceFlavorSpec::default()
            },
        ),
    ])
}

fn classes() -> PriorityClasses {
    PriorityClasses {
        workload: BTreeMap::from([("high".to_string(), 1000)]),
        pod: BTreeMap::from([
            (
                "batch-low".to_string(),
                PodPriorityClass {
                    value: 10,
                    global_default: false,
                },
            ),
            (
                "default-a".to_string(),
                PodPriorityClass {
                    value: 50,
                    global_default: true,
                },
            ),
            (
                "default-b".to_string(),
                PodPriorityClass {
                    value: 20,
                    global_default: true,
                },
            ),
        ]),
    }
}

#[test]
fn the_workload_of_a_batch_job_is_exactly_kueues() {
    let job = JobBuilder::batch()
        .label("team", "research")
        .label("kueue.x-k8s.io/max-exec-time-seconds", "600")
        .annotation("provreq.kueue.x-k8s.io/ValidUntilSeconds", "60")
        .annotation("other", "dropped")
        .set(
            "/spec/template/metadata/labels/batch.kubernetes.io~1controller-uid",
            json!(UID),
        )
        .build();
    let pod_sets = job_pod_sets(&BatchJob, &job, true, KUEUE_TOPOLOGY_DEFAULTS).expect("pod sets");
    let priority = ResolvedPriority {
        class_ref: Some(PriorityClassRef::workload_priority_class("high")),
        value: 1000,
    };
    let workload = build_workload(&BatchJob, &job, &pod_sets, &priority, &["team".to_string()])
        .expect("workload");
    assert_eq!(
        serde_json::to_value(&workload).expect("json"),
        json!({
            "apiVersion": "kueue.x-k8s.io/v1beta2",
            "kind": "Workload",
            "metadata": {
                "name": "job-sample-4742f",
                "namespace": "ns",
                "labels": {"kueue.x-k8s.io/job-uid": UID, "team": "research"},
                "annotations": {"provreq.kueue.x-k8s.io/ValidUntilSeconds": "60"},
                "finalizers": ["kueue.x-k8s.io/resource-in-use"],
                "ownerReferences": [{
                    "apiVersion": "batch/v1",
                    "kind": "Job",
                    "name": "sample",
                    "uid": UID,
                    "controller": true,
                    "blockOwnerDeletion": true,
                }],
            },
            "spec": {
                "podSets": [{
                    "name": "main",
                    "count": 2,
                    "template": {
                        "metadata": {"labels": {"app": "sample"}},
                        "spec": {
                            "restartPolicy": "Never",
                            "containers": [{
                                "name": "main",
                                "image": "busybox",
                                "resources": {"requests": {"cpu": "1"}},
                            }],
                        },
                    },
                    // Kueue ranks a Job's pods by completion index when TAS is on.
                    "topologyRequest": {
                        "podIndexLabel": "batch.kubernetes.io/job-completion-index",
                    },
                }],
                "queueName": "lq",
                "priorityClassRef": {
                    "group": "kueue.x-k8s.io",
                    "kind": "WorkloadPriorityClass",
                    "name": "high",
                },
                "priority": 1000,
                "maximumExecutionTimeSeconds": 600,
            },
        })
    );
}

#[test]
fn the_workload_of_a_pytorch_job_has_one_pod_set_per_replica_type() {
    let job = JobBuilder::pytorch().build();
    let pod_sets =
        job_pod_sets(&PYTORCH_JOB, &job, true, KUEUE_TOPOLOGY_DEFAULTS).expect("pod sets");
    let workload = build_workload(
        &PYTORCH_JOB,
        &job,
        &pod_sets,
        &ResolvedPriority::default(),
        &[],
    )
    .expect("workload");
    assert_eq!(
        workload.metadata.name.as_deref(),
        Some("pytorchjob-train-30656")
    );
    let owner = &workload.metadata.owner_references.as_ref().expect("owner")[0];
    assert_eq!(
        (
            owner.api_version.as_str(),
            owner.kind.as_str(),
            owner.name.as_str()
        ),
        ("kubeflow.org/v1", "PyTorchJob", "train")
    );
    let shape: Vec<(&str, i32)> = workload
        .spec
        .pod_sets
        .iter()
        .map(|pod_set| (pod_set.name.as_str(), pod_set.count))
        .collect();
    assert_eq!(shape, vec![("master", 1), ("worker", 2)]);
    assert_eq!(workload.spec.priority, Some(0));
    assert_eq!(workload.spec.priority_class_ref, None);
}

#[test]
fn a_job_without_uid_gets_no_workload() {
    let mut job = JobBuilder::batch().build();
    job["metadata"]
        .as_object_mut()
        .expect("metadata")
        .remove("uid");
    let pod_sets = job_pod_sets(&BatchJob, &job, true, KUEUE_TOPOLOGY_DEFAULTS).expect("pod sets");
    let error = build_workload(
        &BatchJob,
        &job,
        &pod_sets,
        &ResolvedPriority::default(),
        &[],
    )
    .expect_err("no uid");
    assert_eq!(error.to_string(), "the job has no metadata.uid");
}

#[test]
fn partial_admission_off_drops_min_count() {
    let job = JobBuilder::batch()
        .annotation("kueue.x-k8s.io/job-min-parallelism", "1")
        .build();
    let with = job_pod_sets(&BatchJob, &job, true, KUEUE_TOPOLOGY_DEFAULTS).expect("pod sets");
    let without = job_pod_sets(&BatchJob, &job, false, KUEUE_TOPOLOGY_DEFAULTS).expect("pod sets");
    assert_eq!(with[0].min_count, Some(1));
    assert_eq!(without[0].min_count, None);
}

/// Name, job, classes other than [`classes`], expected priority.
type PriorityCase = (
    &'static str,
    Value,
    Option<PriorityClasses>,
    Result<ResolvedPriority, PriorityError>,
);

#[test]
fn priority_is_resolved_in_kueues_order() {
    let pod_class = |name: &str| PriorityClassRef::pod_priority_class(name);
    let cases: Vec<PriorityCase> = vec![
        (
            "the priority-class label names a WorkloadPriorityClass",
            JobBuilder::batch()
                .label("kueue.x-k8s.io/priority-class", "high")
                .set("/spec/template/spec/priorityClassName", json!("batch-low"))
                .build(),
            None,
            Ok(ResolvedPriority {
                class_ref: Some(PriorityClassRef::workload_priority_class("high")),
                value: 1000,
            }),
        ),
        (
            "a missing WorkloadPriorityClass does not fall back",
            JobBuilder::batch()
                .label("kueue.x-k8s.io/priority-class", "urgent")
                .build(),
            None,
            Err(PriorityError::WorkloadPriorityClassNotFound(
                "urgent".to_string(),
            )),
        ),
        (
            "the pods' PriorityClass",
            JobBuilder::batch()
                .set("/spec/template/spec/priorityClassName", json!("batch-low"))
                .build(),
            None,
            Ok(ResolvedPriority {
                class_ref: Some(pod_class("batch-low")),
                value: 10,
            }),
        ),
        (
            "a missing PriorityClass",
            JobBuilder::batch()
                .set("/spec/template/spec/priorityClassName", json!("gone"))
                .build(),
            None,
            Err(PriorityError::PriorityClassNotFound("gone".to_string())),
        ),
        (
            "the lowest global default PriorityClass",
            JobBuilder::batch().build(),
            None,
            Ok(ResolvedPriority {
                class_ref: Some(pod_class("default-b")),
                value: 20,
            }),
        ),
        (
            "zero without any class",
            JobBuilder::batch().build(),
            Some(PriorityClasses::default()),
            Ok(ResolvedPriority {
                class_ref: None,
                value: 0,
            }),
        ),
        (
            "a Kubeflow job's runPolicy priority class",
            JobBuilder::pytorch()
                .set(
                    "/spec/runPolicy/schedulingPolicy/priorityClass",
                    json!("batch-low"),
                )
                .build(),
            None,
            Ok(ResolvedPriority {
                class_ref: Some(pod_class("batch-low")),
                value: 10,
            }),
        ),
    ];
    for (name, job, custom, expected) in cases {
        let framework: &dyn JobFramework = if job["kind"] == "Job" {
            &BatchJob
        } else {
            &PYTORCH_JOB
        };
        let pod_sets =
            job_pod_sets(framework, &job, true, KUEUE_TOPOLOGY_DEFAULTS).expect("pod sets");
        let classes = custom.unwrap_or_else(classes);
        assert_eq!(
            resolve_priority(framework, &job, &pod_sets, &classes),
            expected,
            "{name}"
        );
    }
}

#[test]
fn missing_priority_classes_read_like_kueues_events() {
    assert_eq!(
        PriorityError::WorkloadPriorityClassNotFound("urgent".to_string()).to_string(),
        r#"WorkloadPriorityClass "urgent" not found"#
    );
}

#[test]
fn admission_becomes_node_selectors_tolerations_and_labels() {
    let job = JobBuilder::batch().build();
    let workload = WorkloadBuilder::for_job(&BatchJob, &job).admitted().build();
    let infos = pod_set_infos(&workload, &flavors(), true).expect("infos");
    assert_eq!(infos.len(), 1);
    let info = &infos[0];
    assert_eq!(info.name, "main");
    assert_eq!(info.count, 2);
    assert_eq!(
        info.node_selector,
        BTreeMap::from([("instance-type".to_string(), "on-demand".to_string())])
    );
    assert_eq!(info.tolerations, flavors()["on-demand"].tolerations);
    assert_eq!(
        info.labels,
        BTreeMap::from([
            (
                "kueue.x-k8s.io/cluster-queue-name".to_string(),
                "cq".to_string()
            ),
            (
                "kueue.x-k8s.io/local-queue-name".to_string(),
                "lq".to_string()
            ),
            ("kueue.x-k8s.io/podset".to_string(), "main".to_string()),
        ])
    );

    let without_queue_labels = pod_set_infos(&workload, &flavors(), false).expect("infos");
    assert_eq!(
        without_queue_labels[0].labels,
        BTreeMap::from([("kueue.x-k8s.io/podset".to_string(), "main".to_string())])
    );
}

#[test]
fn a_flavor_not_cached_yet_is_retried() {
    let job = JobBuilder::batch().build();
    let workload = WorkloadBuilder::for_job(&BatchJob, &job).admitted().build();
    let error = pod_set_infos(&workload, &BTreeMap::new(), true).expect_err("no flavors");
    assert!(!error.is_permanent());
    assert_eq!(error.to_string(), r#"ResourceFlavor "on-demand" not found"#);
}

#[test]
fn a_conflicting_admission_check_update_is_permanent() {
    let job = JobBuilder::batch().build();
    let mut workload = WorkloadBuilder::for_job(&BatchJob, &job).admitted().build();
    workload.status.as_mut().expect("status").admission_checks = vec![AdmissionCheckState {
        name: "prov".to_string(),
        state: CheckState::Ready,
        last_transition_time: at(NOW),
        message: String::new(),
        requeue_after_seconds: None,
        retry_count: None,
        pod_set_updates: vec![PodSetUpdate {
            name: "main".to_string(),
            node_selector: BTreeMap::from([("instance-type".to_string(), "gpu".to_string())]),
            ..PodSetUpdate::default()
        }],
    }];
    let error = pod_set_infos(&workload, &flavors(), true).expect_err("conflict");
    assert!(error.is_permanent());
    assert_eq!(
        error.to_string(),
        "in admission check \"prov\": invalid admission check PodSetUpdate: conflict for nodeSelector: \
         conflict for key=instance-type, value1=on-demand, value2=gpu"
    );
}

#[test]
fn a_workload_matches_its_job_until_the_pods_change() {
    let job = JobBuilder::batch().build();
    let workload = WorkloadBuilder::for_job(&BatchJob, &job).build();
    let matches = |job: &Value, suspended: bool, workload: &Workload| {
        let pod_sets =
            job_pod_sets(&BatchJob, job, true, KUEUE_TOPOLOGY_DEFAULTS).expect("pod sets");
        workload_matches_job(job, &pod_sets, suspended, workload, &flavors())
    };
    assert!(matches(&job, true, &workload));

    let more_cpu = JobBuilder(job.clone())
        .set(
            "/spec/template/spec/containers/0/resources/requests/cpu",
            json!("2"),
        )
        .build();
    assert!(!matches(&more_cpu, true, &workload));

    let same_cpu_spelled_differently = JobBuilder(job.clone())
        .set(
            "/spec/template/spec/containers/0/resources/requests/cpu",
            json!("1000m"),
        )
        .build();
    assert!(matches(&same_cpu_spelled_differently, true, &workload));

    let new_deadline = JobBuilder(job.clone())
        .label("kueue.x-k8s.io/max-exec-time-seconds", "60")
        .build();
    assert!(!matches(&new_deadline, true, &workload));

    // Running with the flavor's toleration added: tolerations do not count once admitted.
    let admitted = WorkloadBuilder::for_job(&BatchJob, &job).admitted().build();
    let running = JobBuilder(job.clone())
        .suspend(false)
        .set(
            "/spec/template/spec/tolerations",
            json!([{"key": "dedicated", "operator": "Equal", "value": "batch", "effect": "NoSchedule"}]),
        )
        .build();
    assert!(matches(&running, false, &admitted));
    assert!(!matches(&running, false, &workload));
}

#[test]
fn a_partially_admitted_job_matches_its_admitted_count() {
    let job = JobBuilder::batch()
        .set("/spec/parallelism", json!(4))
        .set("/spec/completions", json!(4))
        .annotation("kueue.x-k8s.io/job-min-parallelism", "2")
        .build();
    let mut workload = WorkloadBuilder::for_job(&BatchJob, &job).admitted().build();
    let admission = workload
        .status
        .as_mut()
        .and_then(|status| status.admission.as_mut())
        .expect("admission");
    admission.pod_set_assignments[0].count = Some(3);
    let running = JobBuilder(job.clone())
        .suspend(false)
        .set("/spec/parallelism", json!(3))
        .build();
    let pod_sets =
        job_pod_sets(&BatchJob, &running, true, KUEUE_TOPOLOGY_DEFAULTS).expect("pod sets");
    assert!(workload_matches_job(
        &running,
        &pod_sets,
        false,
        &workload,
        &flavors()
    ));
    let infos = pod_set_infos(&workload, &flavors(), true).expect("infos");
    assert_eq!(infos[0].count, 3);
}

#[test]
fn a_pod_set_placed_in_a_topology_is_gated_until_its_pods_get_their_domains() {
    let job = JobBuilder::batch().build();
    let mut workload = WorkloadBuilder::for_job(&BatchJob, &job).admitted().build();
    let admission = workload
        .status
        .as_mut()
        .and_then(|status| status.admission.as_mut())
        .expect("admitted");
    admission.pod_set_assignments[0].topology_assignment = Some(
        crate::api::v1beta1::TopologyAssignment {
            levels: vec!["kubernetes.io/hostname".to_string()],
            domains: vec![crate::api::v1beta1::TopologyDomainAssignment {
                values: vec!["node-1".to_string()],
                count: 2,
            }],
        }
        .into(),
    );
    let infos = pod_set_infos(&workload, &flavors(), false).expect("infos");
    assert_eq!(
        infos[0].labels,
        BTreeMap::from([
            ("kueue.x-k8s.io/podset".to_string(), "main".to_string()),
            ("kueue.x-k8s.io/tas".to_string(), "true".to_string()),
        ])
    );
    assert_eq!(
        infos[0].annotations,
        BTreeMap::from([(
            "kueue.x-k8s.io/workload".to_string(),
            workload.metadata.name.clone().expect("named")
        )])
    );
    assert_eq!(
        infos[0].scheduling_gates,
        [k8s_openapi::api::core::v1::PodSchedulingGate {
            name: "kueue.x-k8s.io/topology".to_string()
        }]
    );
}
