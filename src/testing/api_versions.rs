//! Realistic objects of both versions for the conversion tests. Each `v1beta1_*` fixture is the
//! exact v1beta1 form of the `v1beta2_*` fixture of the same kind.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Container, PodSpec, PodTemplateSpec, ResourceRequirements};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, LabelSelector, ObjectMeta, Time};

use crate::api::{v1beta1, v1beta2};

pub fn time(rfc3339: &str) -> Time {
    Time(rfc3339.parse().expect("valid timestamp"))
}

pub fn condition(type_: &str, status: &str, reason: &str, message: &str) -> Condition {
    Condition {
        type_: type_.to_owned(),
        status: status.to_owned(),
        reason: reason.to_owned(),
        message: message.to_owned(),
        last_transition_time: time("2025-03-01T10:00:00Z"),
        observed_generation: Some(2),
    }
}

pub fn quantities(pairs: &[(&str, &str)]) -> BTreeMap<String, Quantity> {
    pairs
        .iter()
        .map(|(name, value)| ((*name).to_owned(), Quantity((*value).to_owned())))
        .collect()
}

fn meta(name: &str, namespace: Option<&str>) -> ObjectMeta {
    ObjectMeta {
        name: Some(name.to_owned()),
        namespace: namespace.map(str::to_owned),
        uid: Some("0b0c5a52-2f4e-4d1c-9d1e-6f0f0c7d9a11".to_owned()),
        resource_version: Some("4711".to_owned()),
        generation: Some(2),
        labels: Some(BTreeMap::from([("team".to_owned(), "research".to_owned())])),
        ..ObjectMeta::default()
    }
}

fn quota(name: &str, nominal: &str, borrowing_limit: Option<&str>) -> v1beta2::ResourceQuota {
    v1beta2::ResourceQuota {
        name: name.to_owned(),
        nominal_quota: Quantity(nominal.to_owned()),
        borrowing_limit: borrowing_limit.map(|q| Quantity(q.to_owned())),
        lending_limit: None,
    }
}

fn resource_groups() -> Vec<v1beta2::ResourceGroup> {
    vec![v1beta2::ResourceGroup {
        covered_resources: vec!["cpu".to_owned(), "memory".to_owned()],
        flavors: vec![
            v1beta2::FlavorQuotas {
                name: "on-demand".to_owned(),
                resources: vec![quota("cpu", "40", None), quota("memory", "160Gi", None)],
            },
            v1beta2::FlavorQuotas {
                name: "spot".to_owned(),
                resources: vec![
                    quota("cpu", "100", Some("20")),
                    quota("memory", "400Gi", Some("80Gi")),
                ],
            },
        ],
    }]
}

fn flavor_usage(name: &str, cpu: &str) -> v1beta2::FlavorUsage {
    v1beta2::FlavorUsage {
        name: name.to_owned(),
        resources: vec![v1beta2::ResourceUsage {
            name: "cpu".to_owned(),
            total: Some(Quantity(cpu.to_owned())),
            borrowed: Some(Quantity("0".to_owned())),
        }],
    }
}

fn preemption() -> v1beta2::ClusterQueuePreemption {
    v1beta2::ClusterQueuePreemption {
        reclaim_within_cohort: v1beta2::PreemptionPolicy::Any,
        borrow_within_cohort: Some(v1beta2::BorrowWithinCohort {
            policy: v1beta2::BorrowWithinCohortPolicy::LowerPriority,
            max_priority_threshold: Some(100),
        }),
        within_cluster_queue: v1beta2::PreemptionPolicy::LowerPriority,
    }
}

pub fn v1beta2_cluster_queue() -> v1beta2::ClusterQueue {
    v1beta2::ClusterQueue {
        metadata: meta("team-a", None),
        spec: v1beta2::ClusterQueueSpec {
            resource_groups: resource_groups(),
            cohort_name: Some("research".to_owned()),
            queueing_strategy: v1beta2::QueueingStrategy::StrictFifo,
            namespace_selector: Some(LabelSelector::default()),
            flavor_fungibility: Some(v1beta2::FlavorFungibility {
                when_can_borrow: v1beta2::FlavorFungibilityPolicy::TryNextFlavor,
                when_can_preempt: v1beta2::FlavorFungibilityPolicy::TryNextFlavor,
                preference: Some(v1beta2::FlavorFungibilityPreference::PreemptionOverBorrowing),
            }),
            preemption: Some(preemption()),
            admission_checks_strategy: Some(v1beta2::AdmissionChecksStrategy {
                admission_checks: vec![
                    v1beta2::AdmissionCheckStrategyRule {
                        name: "provisioning".to_owned(),
                        on_flavors: Vec::new(),
                    },
                    v1beta2::AdmissionCheckStrategyRule {
                        name: "budget".to_owned(),
                        on_flavors: Vec::new(),
                    },
                ],
            }),
            stop_policy: Some(v1beta2::StopPolicy::Hold),
            fair_sharing: Some(v1beta2::FairSharing {
                weight: Some(Quantity("2".to_owned())),
            }),
            admission_scope: None,
            concurrent_admission_policy: None,
        },
        status: Some(v1beta2::ClusterQueueStatus {
            conditions: vec![condition(
                "Active",
                "True",
                "Ready",
                "Can admit new workloads",
            )],
            flavors_reservation: vec![flavor_usage("on-demand", "12")],
            flavors_usage: vec![flavor_usage("on-demand", "8")],
            pending_workloads: 3,
            reserving_workloads: 2,
            admitted_workloads: 1,
            fair_sharing: Some(v1beta2::FairSharingStatus {
                weighted_share: 250,
            }),
        }),
    }
}

pub fn v1beta1_cluster_queue() -> v1beta1::ClusterQueue {
    v1beta1::ClusterQueue {
        metadata: meta("team-a", None),
        spec: v1beta1::ClusterQueueSpec {
            resource_groups: resource_groups(),
            cohort: Some("research".to_owned()),
            queueing_strategy: v1beta2::QueueingStrategy::StrictFifo,
            namespace_selector: Some(LabelSelector::default()),
            flavor_fungibility: Some(v1beta1::FlavorFungibility {
                when_can_borrow: v1beta1::FlavorFungibilityPolicy::TryNextFlavor,
                when_can_preempt: v1beta1::FlavorFungibilityPolicy::TryNextFlavor,
                preference: Some(v1beta2::FlavorFungibilityPreference::PreemptionOverBorrowing),
            }),
            preemption: Some(preemption()),
            admission_checks: vec!["provisioning".to_owned(), "budget".to_owned()],
            admission_checks_strategy: None,
            stop_policy: Some(v1beta2::StopPolicy::Hold),
            fair_sharing: Some(v1beta2::FairSharing {
                weight: Some(Quantity("2".to_owned())),
            }),
            admission_scope: None,
        },
        status: Some(v1beta1::ClusterQueueStatus {
            conditions: vec![condition(
                "Active",
                "True",
                "Ready",
                "Can admit new workloads",
            )],
            flavors_reservation: vec![flavor_usage("on-demand", "12")],
            flavors_usage: vec![flavor_usage("on-demand", "8")],
            pending_workloads: 3,
            reserving_workloads: 2,
            admitted_workloads: 1,
            pending_workloads_status: None,
            fair_sharing: Some(v1beta1::FairSharingStatus {
                weighted_share: 250,
                admission_fair_sharing_status: None,
            }),
        }),
    }
}

fn local_queue_usage(flavor: &str, cpu: &str) -> v1beta2::LocalQueueFlavorUsage {
    v1beta2::LocalQueueFlavorUsage {
        name: flavor.to_owned(),
        resources: vec![v1beta2::LocalQueueResourceUsage {
            name: "cpu".to_owned(),
            total: Some(Quantity(cpu.to_owned())),
        }],
    }
}

fn local_queue_fair_sharing() -> v1beta2::LocalQueueFairSharingStatus {
    v1beta2::LocalQueueFairSharingStatus {
        weighted_share: 10,
        admission_fair_sharing_status: Some(v1beta2::AdmissionFairSharingStatus {
            consumed_resources: quantities(&[("cpu", "3500m")]),
            last_update: time("2025-03-01T10:05:00Z"),
        }),
    }
}

pub fn v1beta2_local_queue() -> v1beta2::LocalQueue {
    v1beta2::LocalQueue {
        metadata: meta("user-queue", Some("team-a")),
        spec: v1beta2::LocalQueueSpec {
            cluster_queue: Some("team-a".to_owned()),
            stop_policy: Some(v1beta2::StopPolicy::None),
            fair_sharing: Some(v1beta2::FairSharing {
                weight: Some(Quantity("1".to_owned())),
            }),
        },
        status: Some(v1beta2::LocalQueueStatus {
            conditions: vec![condition(
                "Active",
                "True",
                "Ready",
                "Can submit new workloads to localQueue",
            )],
            pending_workloads: 4,
            reserving_workloads: 2,
            admitted_workloads: 2,
            flavors_reservation: vec![local_queue_usage("on-demand", "6")],
            flavors_usage: vec![
                local_queue_usage("on-demand", "4"),
                local_queue_usage("spot", "2"),
            ],
            fair_sharing: Some(local_queue_fair_sharing()),
        }),
    }
}

pub fn v1beta1_local_queue() -> v1beta1::LocalQueue {
    v1beta1::LocalQueue {
        metadata: meta("user-queue", Some("team-a")),
        spec: v1beta1::LocalQueueSpec {
            cluster_queue: Some("team-a".to_owned()),
            stop_policy: Some(v1beta2::StopPolicy::None),
            fair_sharing: Some(v1beta2::FairSharing {
                weight: Some(Quantity("1".to_owned())),
            }),
        },
        status: Some(v1beta1::LocalQueueStatus {
            conditions: vec![condition(
                "Active",
                "True",
                "Ready",
                "Can submit new workloads to localQueue",
            )],
            pending_workloads: 4,
            reserving_workloads: 2,
            admitted_workloads: 2,
            flavors_reservation: vec![local_queue_usage("on-demand", "6")],
            flavor_usage: vec![
                local_queue_usage("on-demand", "4"),
                local_queue_usage("spot", "2"),
            ],
            flavors: Vec::new(),
            fair_sharing: Some(local_queue_fair_sharing().into()),
        }),
    }
}

fn pod_template(cpu: &str, memory: &str) -> PodTemplateSpec {
    PodTemplateSpec {
        metadata: Some(ObjectMeta {
            labels: Some(BTreeMap::from([("app".to_owned(), "trainer".to_owned())])),
            ..ObjectMeta::default()
        }),
        spec: Some(PodSpec {
            containers: vec![Container {
                name: "trainer".to_owned(),
                image: Some("registry.example/trainer:1.2".to_owned()),
                args: Some(vec!["--epochs=3".to_owned()]),
                resources: Some(ResourceRequirements {
                    requests: Some(quantities(&[("cpu", cpu), ("memory", memory)])),
                    ..ResourceRequirements::default()
                }),
                ..Container::default()
            }],
            restart_policy: Some("Never".to_owned()),
            ..PodSpec::default()
        }),
    }
}

fn workload_status_common() -> (Vec<Condition>, Vec<v1beta2::AdmissionCheckState>) {
    (
        vec![
            condition(
                "QuotaReserved",
                "True",
                "QuotaReserved",
                "Quota reserved in ClusterQueue team-a",
            ),
            condition("Admitted", "True", "Admitted", "The workload is admitted"),
        ],
        vec![v1beta2::AdmissionCheckState {
            name: "provisioning".to_owned(),
            state: v1beta2::CheckState::Ready,
            last_transition_time: time("2025-03-01T10:01:00Z"),
            message: "capacity provisioned".to_owned(),
            requeue_after_seconds: None,
            retry_count: Some(1),
            pod_set_updates: vec![v1beta2::PodSetUpdate {
                name: "workers".to_owned(),
                node_selector: BTreeMap::from([("pool".to_owned(), "gpu-a".to_owned())]),
                ..v1beta2::PodSetUpdate::default()
            }],
        }],
    )
}

/// Hosts `node-1`..`node-3` of rack `r1` in block `b1`, with 2, 2 and 1 pods.
fn topology_domains() -> Vec<v1beta1::TopologyDomainAssignment> {
    [("node-1", 2), ("node-2", 2), ("node-3", 1)]
        .into_iter()
        .map(|(host, count)| v1beta1::TopologyDomainAssignment {
            values: vec!["b1".to_owned(), "r1".to_owned(), host.to_owned()],
            count,
        })
        .collect()
}

fn topology_levels() -> Vec<String> {
    [
        "cloud.example/block",
        "cloud.example/rack",
        "kubernetes.io/hostname",
    ]
    .into_iter()
    .map(str::to_owned)
    .collect()
}

/// The v1beta2 form of [`topology_domains`]: one slice, shared block and rack, hostnames
/// `node-` + root, individual pod counts.
fn topology_slices() -> Vec<v1beta2::TopologyAssignmentSlice> {
    let universal = |value: &str| v1beta2::TopologyAssignmentSliceLevelValues {
        universal: Some(value.to_owned()),
        individual: None,
    };
    vec![v1beta2::TopologyAssignmentSlice {
        domain_count: 3,
        values_per_level: vec![
            universal("b1"),
            universal("r1"),
            v1beta2::TopologyAssignmentSliceLevelValues {
                universal: None,
                individual: Some(v1beta2::TopologyAssignmentSliceLevelIndividualValues {
                    prefix: Some("node-".to_owned()),
                    suffix: None,
                    roots: vec!["1".to_owned(), "2".to_owned(), "3".to_owned()],
                }),
            },
        ],
        pod_counts: v1beta2::TopologyAssignmentSlicePodCounts {
            universal: None,
            individual: vec![2, 2, 1],
        },
    }]
}

fn launcher_assignment() -> (String, BTreeMap<String, String>, BTreeMap<String, Quantity>) {
    (
        "launcher".to_owned(),
        BTreeMap::from([("cpu".to_owned(), "on-demand".to_owned())]),
        quantities(&[("cpu", "1")]),
    )
}

pub fn v1beta2_workload() -> v1beta2::Workload {
    let (conditions, admission_checks) = workload_status_common();
    let (launcher, launcher_flavors, launcher_usage) = launcher_assignment();
    v1beta2::Workload {
        metadata: meta("job-trainer-3f2a1", Some("team-a")),
        spec: v1beta2::WorkloadSpec {
            pod_sets: vec![
                v1beta2::PodSet {
                    name: "launcher".to_owned(),
                    template: pod_template("1", "1Gi").into(),
                    count: 1,
                    min_count: None,
                    topology_request: None,
                },
                v1beta2::PodSet {
                    name: "workers".to_owned(),
                    template: pod_template("4", "16Gi").into(),
                    count: 5,
                    min_count: Some(2),
                    topology_request: Some(v1beta2::PodSetTopologyRequest {
                        preferred: Some("cloud.example/rack".to_owned()),
                        pod_index_label: Some(
                            "batch.kubernetes.io/job-completion-index".to_owned(),
                        ),
                        ..v1beta2::PodSetTopologyRequest::default()
                    }),
                },
            ],
            queue_name: Some("user-queue".to_owned()),
            priority_class_ref: Some(v1beta2::PriorityClassRef::workload_priority_class("high")),
            priority: Some(1000),
            active: Some(true),
            maximum_execution_time_seconds: Some(3600),
            preemption_gates: Vec::new(),
        },
        status: Some(v1beta2::WorkloadStatus {
            conditions,
            admission: Some(v1beta2::Admission {
                cluster_queue: "team-a".to_owned(),
                pod_set_assignments: vec![
                    v1beta2::PodSetAssignment {
                        name: launcher,
                        flavors: launcher_flavors,
                        resource_usage: launcher_usage,
                        ..v1beta2::PodSetAssignment::default()
                    },
                    v1beta2::PodSetAssignment {
                        name: "workers".to_owned(),
                        flavors: BTreeMap::from([
                            ("cpu".to_owned(), "spot".to_owned()),
                            ("memory".to_owned(), "spot".to_owned()),
                        ]),
                        resource_usage: quantities(&[("cpu", "20"), ("memory", "80Gi")]),
                        count: Some(5),
                        topology_assignment: Some(v1beta2::TopologyAssignment {
                            levels: topology_levels(),
                            slices: topology_slices(),
                        }),
                        delayed_topology_request: None,
                    },
                ],
            }),
            requeue_state: Some(v1beta2::RequeueState {
                count: Some(1),
                requeue_at: None,
            }),
            admission_checks,
            accumulated_past_execution_time_seconds: Some(120),
            ..v1beta2::WorkloadStatus::default()
        }),
    }
}

pub fn v1beta1_workload() -> v1beta1::Workload {
    let (conditions, admission_checks) = workload_status_common();
    let (launcher, launcher_flavors, launcher_usage) = launcher_assignment();
    v1beta1::Workload {
        metadata: meta("job-trainer-3f2a1", Some("team-a")),
        spec: v1beta1::WorkloadSpec {
            pod_sets: vec![
                v1beta1::PodSet {
                    name: "launcher".to_owned(),
                    template: pod_template("1", "1Gi").into(),
                    count: 1,
                    min_count: None,
                    topology_request: None,
                },
                v1beta1::PodSet {
                    name: "workers".to_owned(),
                    template: pod_template("4", "16Gi").into(),
                    count: 5,
                    min_count: Some(2),
                    topology_request: Some(v1beta1::PodSetTopologyRequest {
                        preferred: Some("cloud.example/rack".to_owned()),
                        pod_index_label: Some(
                            "batch.kubernetes.io/job-completion-index".to_owned(),
                        ),
                        ..v1beta1::PodSetTopologyRequest::default()
                    }),
                },
            ],
            queue_name: Some("user-queue".to_owned()),
            priority_class_name: Some("high".to_owned()),
            priority: Some(1000),
            priority_class_source: v1beta1::PriorityClassSource::WorkloadPriorityClass,
            active: Some(true),
            maximum_execution_time_seconds: Some(3600),
        },
        status: Some(v1beta1::WorkloadStatus {
            conditions,
            admission: Some(v1beta1::Admission {
                cluster_queue: "team-a".to_owned(),
                pod_set_assignments: vec![
                    v1beta1::PodSetAssignment {
                        name: launcher,
                        flavors: launcher_flavors,
                        resource_usage: launcher_usage,
                        ..v1beta1::PodSetAssignment::default()
                    },
                    v1beta1::PodSetAssignment {
                        name: "workers".to_owned(),
                        flavors: BTreeMap::from([
                            ("cpu".to_owned(), "spot".to_owned()),
                            ("memory".to_owned(), "spot".to_owned()),
                        ]),
                        resource_usage: quantities(&[("cpu", "20"), ("memory", "80Gi")]),
                        count: Some(5),
                        topology_assignment: Some(v1beta1::TopologyAssignment {
                            levels: topology_levels(),
                            domains: topology_domains(),
                        }),
                        delayed_topology_request: None,
                    },
                ],
            }),
            requeue_state: Some(v1beta2::RequeueState {
                count: Some(1),
                requeue_at: None,
            }),
            admission_checks,
            accumulated_past_execution_time_seconds: Some(120),
            ..v1beta1::WorkloadStatus::default()
        }),
    }
}

pub fn v1beta2_cohort() -> v1beta2::Cohort {
    v1beta2::Cohort {
        metadata: meta("research", None),
        spec: v1beta2::CohortSpec {
            parent_name: Some("company".to_owned()),
            resource_groups: resource_groups(),
            fair_sharing: Some(v1beta2::FairSharing {
                weight: Some(Quantity("3".to_owned())),
            }),
        },
        status: Some(v1beta2::CohortStatus {
            fair_sharing: Some(v1beta2::FairSharingStatus { weighted_share: 7 }),
        }),
    }
}

pub fn v1beta1_cohort() -> v1beta1::Cohort {
    v1beta1::Cohort {
        metadata: meta("research", None),
        spec: v1beta1::CohortSpec {
            parent_name: Some("company".to_owned()),
            resource_groups: resource_groups(),
            fair_sharing: Some(v1beta2::FairSharing {
                weight: Some(Quantity("3".to_owned())),
            }),
        },
        status: Some(v1beta1::CohortStatus {
            fair_sharing: Some(v1beta1::FairSharingStatus {
                weighted_share: 7,
                admission_fair_sharing_status: None,
            }),
        }),
    }
}

pub fn v1beta2_multikueue_cluster() -> v1beta2::MultiKueueCluster {
    v1beta2::MultiKueueCluster {
        metadata: meta("worker-eu", None),
        spec: v1beta2::MultiKueueClusterSpec {
            cluster_source: v1beta2::ClusterSource {
                kube_config: Some(v1beta2::KubeConfig {
                    location: "worker-eu-kubeconfig".to_owned(),
                    location_type: v1beta2::LocationType::Secret,
                }),
                cluster_profile_ref: None,
            },
        },
        status: Some(v1beta2::MultiKueueClusterStatus {
            conditions: vec![condition("Active", "True", "Active", "Connected")],
        }),
    }
}

pub fn v1beta1_multikueue_cluster() -> v1beta1::MultiKueueCluster {
    v1beta1::MultiKueueCluster {
        metadata: meta("worker-eu", None),
        spec: v1beta1::MultiKueueClusterSpec {
            kube_config: v1beta1::KubeConfig {
                location: "worker-eu-kubeconfig".to_owned(),
                location_type: v1beta2::LocationType::Secret,
            },
            cluster_profile_ref: None,
        },
        status: Some(v1beta1::MultiKueueClusterStatus {
            conditions: vec![condition("Active", "True", "Active", "Connected")],
        }),
    }
}
