//! Tests of the per-object conversions and of the settings a Configuration implies.

use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use super::*;
use crate::testing::objects::{self as fixtures, flavor_with, labels};

#[test]
fn cluster_queue_spec_becomes_the_model() {
    let cq = fixtures::cluster_queue("cq")
        .cohort("all")
        .group(
            &["cpu", "memory"],
            &[
                ("on-demand", &[("cpu", "1500m"), ("memory", "1Gi")]),
                ("spot", &[("cpu", "8"), ("memory", "4Gi")]),
            ],
        )
        .spec("queueingStrategy", json!("StrictFIFO"))
        .spec("stopPolicy", json!("Hold"))
        .spec("fairSharing", json!({"weight": "500m"}))
        .spec(
            "admissionScope",
            json!({"admissionMode": "UsageBasedAdmissionFairSharing"}),
        )
        .spec(
            "namespaceSelector",
            json!({"matchLabels": {"team": "a"}, "matchExpressions": [{"key": "env", "operator": "NotIn", "values": ["prod"]}]}),
        )
        .spec(
            "preemption",
            json!({"withinClusterQueue": "LowerPriority", "reclaimWithinCohort": "Any", "borrowWithinCohort": {"policy": "LowerPriority", "maxPriorityThreshold": 100}}),
        )
        .spec(
            "flavorFungibility",
            json!({"whenCanBorrow": "TryNextFlavor", "whenCanPreempt": "TryNextFlavor", "preference": "PreemptionOverBorrowing"}),
        )
        .build();
    let mut with_limits = cq.clone();
    with_limits.spec.resource_groups[0].flavors[0].resources[0].borrowing_limit = Some(
        k8s_openapi::apimachinery::pkg::api::resource::Quantity("2".to_owned()),
    );
    with_limits.spec.resource_groups[0].flavors[0].resources[0].lending_limit = Some(
        k8s_openapi::apimachinery::pkg::api::resource::Quantity("500m".to_owned()),
    );
    let flavors: BTreeSet<String> = ["on-demand".to_owned(), "spot".to_owned()].into();

    let want = model::ClusterQueue {
        name: "cq".to_owned(),
        cohort: Some("all".to_owned()),
        resource_groups: vec![ResourceGroup {
            covered_resources: vec!["cpu".to_owned(), "memory".to_owned()],
            flavors: vec![
                FlavorQuotas {
                    name: "on-demand".to_owned(),
                    resources: vec![
                        ResourceQuota {
                            name: "cpu".to_owned(),
                            nominal: 1500,
                            borrowing_limit: Some(2000),
                            lending_limit: Some(500),
                        },
                        ResourceQuota {
                            name: "memory".to_owned(),
                            nominal: 1 << 30,
                            borrowing_limit: None,
                            lending_limit: None,
                        },
                    ],
                },
                FlavorQuotas {
                    name: "spot".to_owned(),
                    resources: vec![
                        ResourceQuota {
                            name: "cpu".to_owned(),
                            nominal: 8000,
                            borrowing_limit: None,
                            lending_limit: None,
                        },
                        ResourceQuota {
                            name: "memory".to_owned(),
                            nominal: 4 << 30,
                            borrowing_limit: None,
                            lending_limit: None,
                        },
                    ],
                },
            ],
        }],
        queueing_strategy: QueueingStrategy::StrictFifo,
        namespace_selector: Some(LabelSelector {
            match_labels: labels(&[("team", "a")]),
            match_expressions: vec![LabelSelectorRequirement {
                key: "env".to_owned(),
                operator: LabelSelectorOperator::NotIn,
                values: vec!["prod".to_owned()],
            }],
        }),
        preemption: PreemptionConfig {
            within_cluster_queue: PreemptionPolicy::LowerPriority,
            reclaim_within_cohort: PreemptionPolicy::Any,
            borrow_within_cohort: BorrowWithinCohort {
                policy: BorrowWithinCohortPolicy::LowerPriority,
                max_priority_threshold: Some(100),
            },
        },
        flavor_fungibility: FlavorFungibility {
            when_can_borrow: FungibilityPolicy::TryNextFlavor,
            when_can_preempt: FungibilityPolicy::TryNextFlavor,
            preference: Some(FungibilityPreference::PreemptionOverBorrowing),
        },
        stop_policy: StopPolicy::Hold,
        fair_sharing_weight: 0.5,
        admission_fair_sharing: true,
        active: true,
    };
    assert_eq!(cluster_queue_model(&with_limits, &flavors), want);
}

fn cluster_queue_model(cq: &api::ClusterQueue, flavors: &BTreeSet<String>) -> model::ClusterQueue {
    let references = QueueReferences {
        flavors: flavors.clone(),
        admission_checks: BTreeMap::from([
            ("ready".to_owned(), true),
            ("broken".to_owned(), false),
        ]),
        missing_topologies: BTreeMap::new(),
    };
    let Ok(cluster_queue) = super::cluster_queue(cq, &references, &CountAsZero);
    cluster_queue
}

#[test]
fn cluster_queue_defaults_and_inactivity() {
    let cq = fixtures::cluster_queue("cq")
        .group(&["cpu"], &[("b", &[("cpu", "1")]), ("a", &[("cpu", "1")])])
        .group(&["gpu"], &[("b", &[("gpu", "1")]), ("c", &[("gpu", "1")])])
        .spec("namespaceSelector", json!(null))
        .build();
    let only_a: BTreeSet<String> = ["a".to_owned()].into();
    assert_eq!(missing_flavors(&cq, &only_a), vec!["b", "c"]);
    let model = cluster_queue_model(&cq, &only_a);
    assert!(!model.active);
    assert_eq!(
        model.namespace_selector, None,
        "no selector selects nothing"
    );
    assert_eq!(model.queueing_strategy, QueueingStrategy::BestEffortFifo);
    assert_eq!(model.preemption, PreemptionConfig::default());
    assert_eq!(model.flavor_fungibility, FlavorFungibility::default());
    assert_eq!(model.fair_sharing_weight, 1.0);

    let all: BTreeSet<String> = ["a", "b", "c"].map(str::to_owned).into();
    assert!(cluster_queue_model(&cq, &all).active);
    assert!(!cluster_queue_model(&fixtures::cluster_queue("cq").deleting().build(), &all).active);
    let checked = |names: &[&str]| {
        let rules: Vec<Value> = names.iter().map(|name| json!({"name": name})).collect();
        fixtures::cluster_queue("cq")
            .spec("admissionChecksStrategy", json!({"admissionChecks": rules}))
            .build()
    };
    assert!(cluster_queue_model(&checked(&["ready"]), &all).active);
    assert!(!cluster_queue_model(&checked(&["ready", "broken"]), &all).active);
    assert!(!cluster_queue_model(&checked(&["ready", "missing"]), &all).active);
    let bad_selector = fixtures::cluster_queue("cq")
        .spec(
            "namespaceSelector",
            json!({"matchExpressions": [{"key": "k", "operator": "Sometimes"}]}),
        )
        .build();
    assert_eq!(
        cluster_queue_model(&bad_selector, &all).namespace_selector,
        None
    );
}

#[test]
fn flavors_and_cohorts_become_the_model() {
    let spot = flavor_with(
        "spot",
        json!({
            "nodeLabels": {"instance-type": "spot"},
            "nodeTaints": [{"key": "spot", "value": "true", "effect": "NoSchedule"}],
            "tolerations": [{"key": "spot", "operator": "Exists", "effect": "NoSchedule"}],
        }),
    );
    assert_eq!(
        resource_flavor(&spot, Some(&[])),
        model::ResourceFlavor {
            name: "spot".to_owned(),
            node_labels: labels(&[("instance-type", "spot")]),
            node_taints: vec![Taint {
                key: "spot".to_owned(),
                value: "true".to_owned(),
                effect: TaintEffect::NoSchedule,
            }],
            tolerations: vec![Toleration {
                key: "spot".to_owned(),
                operator: TolerationOperator::Exists,
                value: String::new(),
                effect: Some(TaintEffect::NoSchedule),
            }],
            topology_levels: None,
        }
    );
    let tas = flavor_with(
        "tas",
        json!({"nodeLabels": {"pool": "tas"}, "topologyName": "dc"}),
    );
    let dc: Arc<api::Topology> = Arc::new(
        serde_json::from_value(json!({
            "metadata": {"name": "dc"},
            "spec": {"levels": [{"nodeLabel": "block"}, {"nodeLabel": "rack"}]},
        }))
        .unwrap(),
    );
    let levels = |topologies| resource_flavor(&tas, topologies).topology_levels;
    let known = [dc];
    assert_eq!(
        levels(Some(&known)),
        Some(vec!["block".to_owned(), "rack".to_owned()])
    );
    assert_eq!(
        levels(Some(&[])),
        Some(Vec::new()),
        "the Topology is missing"
    );
    assert_eq!(levels(None), None, "topology-aware scheduling is off");

    let cohort_object: api::Cohort = serde_json::from_value(json!({
        "metadata": {"name": "child"},
        "spec": {
            "parentName": "root",
            "fairSharing": {"weight": "2"},
            "resourceGroups": [{"coveredResources": ["cpu"], "flavors": [{"name": "default", "resources": [{"name": "cpu", "nominalQuota": "3", "lendingLimit": "1"}]}]}],
        },
    }))
    .unwrap();
    assert_eq!(
        {
            let Ok(cohort) = cohort(&cohort_object, &CountAsZero);
            cohort
        },
        model::Cohort {
            name: "child".to_owned(),
            parent: Some("root".to_owned()),
            resource_groups: vec![ResourceGroup {
                covered_resources: vec!["cpu".to_owned()],
                flavors: vec![FlavorQuotas {
                    name: "default".to_owned(),
                    resources: vec![ResourceQuota {
                        name: "cpu".to_owned(),
                        nominal: 3000,
                        borrowing_limit: None,
                        lending_limit: Some(1000),
                    }],
                }],
            }],
            fair_sharing_weight: 2.0,
        }
    );
}

#[test]
fn configuration_maps_to_scheduler_settings() {
    let mut config = Configuration::from_defaults(&crate::config::LoadOptions::default()).unwrap();
    let defaults = scheduler_config(&config);
    assert!(defaults.fair_sharing.is_none());
    assert!(defaults.partial_admission);
    assert!(!defaults.prioritize_preemptors);
    assert!(defaults.recompute_overlapping_targets);
    assert_eq!((defaults.format_quantity)("cpu", 1500), "1500m");

    let gated = Configuration {
        feature_gates: config
            .feature_gates
            .clone()
            .with(Feature::PartialAdmission, false)
            .with(Feature::PrioritizePreemptorWorkloads, true)
            .with(
                Feature::RecomputeAssignmentUponPreemptionTargetsOverlap,
                false,
            )
            .with(Feature::PriorityBoost, true),
        ..config.clone()
    };
    assert!(!scheduler_config(&gated).partial_admission);
    assert!(scheduler_config(&gated).prioritize_preemptors);
    assert!(!scheduler_config(&gated).recompute_overlapping_targets);
    assert!(ConversionOptions::from_config(&gated).priority_boost);
    assert_eq!((defaults.format_quantity)("memory", 1 << 30), "1Gi");

    config.fair_sharing = Some(crate::config::FairSharing {
        preemption_strategies: vec![PreemptionStrategy::LessThanInitialShare],
    });
    config.resources.exclude_resource_prefixes = vec!["x/".to_owned()];
    assert_eq!(
        scheduler_config(&config).fair_sharing,
        Some(FairSharingConfig {
            preemption_strategies: vec![FairSharingStrategy::LessThanInitialShare]
        })
    );
    assert_eq!(
        ConversionOptions::from_config(&config),
        ConversionOptions {
            excluded_resource_prefixes: vec!["x/".to_owned()],
            requeuing_timestamp: RequeuingTimestamp::Eviction,
            topology_aware: true,
            priority_boost: false,
        }
    );
}

#[test]
fn admission_checks_apply_to_every_flavor_or_to_the_ones_they_name() {
    let cq = fixtures::cluster_queue("cq")
        .spec(
            "admissionChecksStrategy",
            json!({"admissionChecks": [
                {"name": "z-always"},
                {"name": "spot-only", "onFlavors": ["spot"]},
                {"name": "either", "onFlavors": ["spot", "reserved"]},
            ]}),
        )
        .build();
    let flavors = |names: &[&'static str]| names.iter().copied().collect::<BTreeSet<&str>>();
    assert_eq!(
        admission_checks_for(&cq, &flavors(&["on-demand"])),
        vec!["z-always"]
    );
    assert_eq!(
        admission_checks_for(&cq, &flavors(&["on-demand", "spot"])),
        vec!["either", "spot-only", "z-always"]
    );
    assert_eq!(
        admission_checks_for(
            &fixtures::cluster_queue("plain").build(),
            &flavors(&["spot"])
        ),
        Vec::<String>::new()
    );
}

#[test]
fn explicit_topology_requests_name_the_levels_a_flavor_must_have() {
    let request = |value: Value| {
        let request: api::PodSetTopologyRequest = serde_json::from_value(value).unwrap();
        topology_request(Some(&request))
    };
    let named = |level: &str, mode, slices: &[&str], slice_size| {
        Some(TopologyRequest {
            level: TopologyLevel::Named(level.to_owned()),
            mode,
            slice_levels: slices.iter().map(|level| (*level).to_owned()).collect(),
            slice_size,
        })
    };
    let cases = [
        (
            json!({"podIndexLabel": "batch.kubernetes.io/job-completion-index"}),
            None,
        ),
        (
            json!({"required": "rack", "preferred": "block"}),
            named("rack", PlacementMode::Required, &[], None),
        ),
        (
            json!({"preferred": "block", "podSetSliceRequiredTopology": "rack", "podSetSliceSize": 2}),
            named("block", PlacementMode::Preferred, &["rack"], Some(2)),
        ),
        (
            json!({"podsetSliceRequiredTopologyConstraints": [{"topology": "block", "size": 4}, {"topology": "rack", "size": 2}]}),
            Some(TopologyRequest {
                level: TopologyLevel::Highest,
                mode: PlacementMode::Preferred,
                slice_levels: vec!["block".to_owned(), "rack".to_owned()],
                slice_size: Some(4),
            }),
        ),
        (
            json!({"unconstrained": true}),
            Some(TopologyRequest {
                level: TopologyLevel::Lowest,
                mode: PlacementMode::Unconstrained,
                slice_levels: Vec::new(),
                slice_size: None,
            }),
        ),
        (
            json!({"unconstrained": false}),
            Some(TopologyRequest {
                level: TopologyLevel::Unresolvable,
                mode: PlacementMode::Unconstrained,
                slice_levels: Vec::new(),
                slice_size: None,
            }),
        ),
    ];
    for (value, want) in cases {
        assert_eq!(request(value.clone()), want, "{value}");
    }
    assert_eq!(topology_request(None), None);
}

#[test]
fn a_stored_topology_assignment_is_expanded_domain_by_domain() {
    let stored: api::TopologyAssignment = serde_json::from_value(json!({
        "levels": ["block", "rack"],
        "slices": [{
            "domainCount": 2,
            "valuesPerLevel": [{"universal": "b1"}, {"individual": {"prefix": "r", "roots": ["1", "2"]}}],
            "podCounts": {"individual": [3, 1]},
        }],
    }))
    .unwrap();
    let domain = |rack: &str, count| TopologyDomain {
        values: vec!["b1".to_owned(), rack.to_owned()],
        count,
    };
    assert_eq!(
        topology_assignment(&stored),
        TopologyAssignment {
            levels: vec!["block".to_owned(), "rack".to_owned()],
            domains: vec![domain("r1", 3), domain("r2", 1)],
        }
    );
}

#[test]
fn topology_capacity_counts_the_ready_schedulable_nodes_of_the_flavor() {
    let node = |name: &str, labels: Value, ready: &str, unschedulable: bool| {
        let node: Node = serde_json::from_value(json!({
            "metadata": {"name": name, "labels": labels},
            "spec": {"unschedulable": unschedulable},
            "status": {
                "allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"},
                "conditions": [{"type": "Ready", "status": ready}],
            },
        }))
        .unwrap();
        Arc::new(node)
    };
    let pool = |rack: &str| json!({"pool": "tas", "rack": rack});
    let nodes = [
        node("counted", pool("r1"), "True", false),
        node("not-ready", pool("r1"), "False", false),
        node("cordoned", pool("r1"), "True", true),
        node(
            "other-pool",
            json!({"pool": "cpu", "rack": "r1"}),
            "True",
            false,
        ),
        node("no-rack", json!({"pool": "tas"}), "True", false),
    ];
    let flavor: api::ResourceFlavor = serde_json::from_value(json!({
        "metadata": {"name": "tas"},
        "spec": {"nodeLabels": {"pool": "tas"}, "topologyName": "racks"},
    }))
    .unwrap();
    let capacity = topology_capacity(
        &flavor,
        "racks",
        &["rack".to_owned()],
        &nodes,
        &NodeUsage::none(),
    );
    // One node of 4 CPUs.
    assert_eq!(
        capacity
            .place(&one_cpu_pods_in_one_rack(4))
            .map(|placed| placed.domains),
        Ok(vec![TopologyDomain {
            values: vec!["r1".to_owned()],
            count: 4,
        }])
    );
    assert_eq!(
        capacity.place(&one_cpu_pods_in_one_rack(5)),
        Err(r#"topology "racks" allows to fit only 4 out of 5 pod(s)"#.to_owned())
    );
}

#[test]
fn topology_capacity_takes_off_what_other_pods_request_on_each_node() {
    let node = |name: &str| {
        let node: Node = serde_json::from_value(json!({
            "metadata": {"name": name, "labels": {"pool": "tas", "rack": "r1"}},
            "status": {
                "allocatable": {"cpu": "4", "pods": "3"},
                "conditions": [{"type": "Ready", "status": "True"}],
            },
        }))
        .unwrap();
        Arc::new(node)
    };
    let flavor: api::ResourceFlavor = serde_json::from_value(json!({
        "metadata": {"name": "tas"},
        "spec": {"nodeLabels": {"pool": "tas"}, "topologyName": "racks"},
    }))
    .unwrap();
    let usage = NodeUsage::of_pods(vec![
        fixtures::bound_pod("daemon-a", "a", "1500m"),
        fixtures::bound_pod("daemon-b", "b", "500m"),
        fixtures::bound_pod("big", "b", "5"),
    ]);
    let capacity = topology_capacity(
        &flavor,
        "racks",
        &["rack".to_owned()],
        &[node("a"), node("b")],
        &usage,
    );
    // Node a: 2.5 CPUs free, two pods of 1; node b: asked for more than it has, nothing free.
    assert_eq!(
        capacity.place(&one_cpu_pods_in_one_rack(3)),
        Err(r#"topology "racks" allows to fit only 2 out of 3 pod(s)"#.to_owned())
    );
}

fn one_cpu_pods_in_one_rack(count: i32) -> crate::quota::topology::PlacementRequest {
    crate::quota::topology::PlacementRequest {
        level: 0,
        mode: PlacementMode::Required,
        count,
        per_pod: BTreeMap::from([("cpu".to_owned(), 1000)]),
        slices: None,
    }
}
