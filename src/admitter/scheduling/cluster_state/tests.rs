use std::collections::BTreeMap;

use pretty_assertions::assert_eq;
use serde_json::json;

use super::*;
use crate::admitter::fixtures::{
    cluster_queue, flavor, flavor_with, limit_range, local_queue, namespace, stopped_local_queue,
    ts, workload,
};
use crate::quota::model::FlavorResource;

fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect()
}

fn state() -> ClusterState {
    ClusterState {
        resource_flavors: vec![Arc::new(flavor("default"))],
        namespaces: vec![Arc::new(namespace("team-a", json!({"team": "a"})))],
        local_queues: vec![Arc::new(local_queue("team-a", "lq", "cq"))],
        cluster_queues: vec![Arc::new(
            cluster_queue("cq")
                .group(&["cpu"], &[("default", &[("cpu", "4")])])
                .build(),
        )],
        ..ClusterState::default()
    }
}

#[test]
fn cluster_queue_spec_becomes_the_model() {
    let cq = cluster_queue("cq")
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
        active: true,
    };
    assert_eq!(cluster_queue_model(&with_limits, &flavors), want);
}

fn cluster_queue_model(cq: &api::ClusterQueue, flavors: &BTreeSet<String>) -> model::ClusterQueue {
    super::cluster_queue(cq, flavors)
}

#[test]
fn cluster_queue_defaults_and_inactivity() {
    let cq = cluster_queue("cq")
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
    assert!(!cluster_queue_model(&cluster_queue("cq").deleting().build(), &all).active);
    let bad_selector = cluster_queue("cq")
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
        resource_flavor(&spot),
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
        }
    );

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
        cohort(&cohort_object),
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
fn pending_workload_becomes_the_model_with_limit_range_defaults() {
    let mut state = state();
    state.limit_ranges = vec![Arc::new(limit_range(
        "team-a",
        json!([{"type": "Container", "defaultRequest": {"memory": "1Gi"}}]),
    ))];
    let object = workload("team-a", "wl")
        .queue("lq")
        .priority(7)
        .label("kueue.x-k8s.io/job-uid", "job-1")
        .status("requeueState", json!({"count": 1, "requeueAt": crate::admitter::fixtures::rfc3339(500)}))
        .pod_set_spec(
            "workers",
            3,
            json!({
                "containers": [{"name": "c", "image": "i", "resources": {"requests": {"cpu": "250m", "example.com/ignored": "1"}}}],
                "nodeSelector": {"instance-type": "spot"},
                "tolerations": [{"key": "spot", "operator": "Equal", "value": "true"}],
                "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
                    {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a", "b"]}]}
                ]}}},
            }),
        )
        .pod_set_field("minCount", json!(2))
        .build();
    state.workloads = vec![Arc::new(object)];
    let options = ConversionOptions {
        excluded_resource_prefixes: vec!["example.com/".to_owned()],
        ..ConversionOptions::default()
    };

    let converted = convert(&state, &options);
    let mut want = model::Workload::new("team-a/wl", "cq", ts(100));
    want.uid = "uid-wl".to_owned();
    want.job_uid = Some("job-1".to_owned());
    want.namespace_labels = labels(&[("team", "a")]);
    want.priority = 7;
    want.requeue_at = Some(ts(500));
    want.pod_sets = vec![PodSet {
        name: "workers".to_owned(),
        count: 3,
        min_count: Some(2),
        requests: BTreeMap::from([("cpu".to_owned(), 250), ("memory".to_owned(), 1 << 30)]),
        node_selector: labels(&[("instance-type", "spot")]),
        node_affinity: vec![NodeSelectorTerm {
            match_expressions: vec![NodeSelectorRequirement {
                key: "zone".to_owned(),
                operator: NodeSelectorOperator::In,
                values: vec!["a".to_owned(), "b".to_owned()],
            }],
        }],
        tolerations: vec![Toleration {
            key: "spot".to_owned(),
            operator: TolerationOperator::Equal,
            value: "true".to_owned(),
            effect: None,
        }],
    }];
    assert_eq!(
        converted.pending,
        vec![PendingWorkload {
            workload: want.clone(),
            local_queue: LocalQueueRef::new("team-a", "lq"),
        }]
    );
    assert_eq!(
        resource_requests(&want),
        vec![api::PodSetRequest {
            name: "workers".to_owned(),
            resources: BTreeMap::from([
                ("cpu".to_owned(), ApiQuantity("750m".to_owned())),
                ("memory".to_owned(), ApiQuantity("3Gi".to_owned())),
            ]),
        }]
    );
}

#[test]
fn quota_holders_count_their_admission_minus_reclaimable_pods() {
    let mut state = state();
    state.workloads = vec![Arc::new(
        workload("team-a", "running")
            .queue("lq")
            .pod_set("driver", 1, json!({"cpu": "1"}))
            .pod_set("workers", 4, json!({"cpu": "500m"}))
            .admission(
                "cq",
                json!([
                    {"name": "driver", "flavors": {"cpu": "default"}, "resourceUsage": {"cpu": "1"}},
                    {"name": "workers", "flavors": {"cpu": "default"}, "resourceUsage": {"cpu": "2"}, "count": 4},
                ]),
            )
            .condition("QuotaReserved", "True", "QuotaReserved", "Quota reserved in ClusterQueue cq", 150)
            .condition("Admitted", "True", "Admitted", "The workload is admitted", 150)
            .status("reclaimablePods", json!([{"name": "workers", "count": 3}]))
            .build(),
    )];
    let converted = convert(&state, &ConversionOptions::default());
    assert_eq!(converted.pending, vec![]);
    let [holder] = converted.holders.as_slice() else {
        panic!("one holder: {:?}", converted.holders);
    };
    assert!(holder.admitted);
    assert_eq!(holder.local_queue, Some(LocalQueueRef::new("team-a", "lq")));
    assert_eq!(holder.workload.quota_reserved_at, Some(ts(150)));
    assert_eq!(
        holder.workload.admission,
        Some(Admission {
            cluster_queue: "cq".to_owned(),
            pod_set_assignments: vec![
                PodSetAssignment {
                    name: "driver".to_owned(),
                    flavors: labels(&[("cpu", "default")]),
                    resource_usage: BTreeMap::from([("cpu".to_owned(), 1000)]),
                    count: 1,
                },
                PodSetAssignment {
                    name: "workers".to_owned(),
                    flavors: labels(&[("cpu", "default")]),
                    resource_usage: BTreeMap::from([("cpu".to_owned(), 500)]),
                    count: 1,
                },
            ],
        })
    );
    let snapshot = converted.snapshot(SchedulerConfig::default(), ts(200));
    assert_eq!(
        snapshot.cluster_queue_usage("cq"),
        Some(&BTreeMap::from([(
            FlavorResource::new("default", "cpu"),
            1500
        )]))
    );
}

#[test]
fn workloads_are_sorted_into_holders_pending_and_unqueued() {
    let mut state = state();
    state.local_queues.push(Arc::new(stopped_local_queue(
        "team-a", "held", "cq", "Hold",
    )));
    state.local_queues.push(Arc::new(stopped_local_queue(
        "team-a",
        "drained",
        "cq",
        "HoldAndDrain",
    )));
    let admitted = |name: &str, queue: &str| {
        workload("team-a", name)
            .queue(queue)
            .pod_set("main", 1, json!({"cpu": "1"}))
            .admission("cq", json!([{"name": "main", "flavors": {"cpu": "default"}, "resourceUsage": {"cpu": "1"}, "count": 1}]))
    };
    state.workloads = [
        workload("team-a", "pending")
            .queue("lq")
            .pod_set("main", 1, json!({"cpu": "1"})),
        workload("team-a", "finished").queue("lq").condition(
            "Finished",
            "True",
            "Succeeded",
            "done",
            120,
        ),
        admitted("finished-admitted", "lq").condition("Finished", "True", "Succeeded", "done", 120),
        workload("team-a", "deactivated").queue("lq").inactive(),
        workload("team-a", "no-queue"),
        workload("team-a", "lost")
            .queue("missing")
            .pod_set("main", 1, json!({"cpu": "1"})),
        workload("team-a", "held")
            .queue("held")
            .pod_set("main", 1, json!({"cpu": "1"})),
        workload("team-a", "garbage")
            .queue("lq")
            .pod_set("main", 1, json!({"cpu": "lots"})),
        admitted("draining", "drained"),
        admitted("drained", "drained").condition(
            "Evicted",
            "True",
            "LocalQueueStopped",
            "The LocalQueue is stopped",
            130,
        ),
        admitted("running", "lq"),
    ]
    .into_iter()
    .map(|builder| Arc::new(builder.build()))
    .collect();

    let converted = convert(&state, &ConversionOptions::default());
    let keys = |workloads: Vec<&model::Workload>| -> Vec<String> {
        workloads.into_iter().map(|w| w.key.clone()).collect()
    };
    assert_eq!(
        keys(converted.pending.iter().map(|p| &p.workload).collect()),
        vec!["team-a/pending"]
    );
    assert_eq!(
        keys(converted.holders.iter().map(|h| &h.workload).collect()),
        vec!["team-a/draining", "team-a/drained", "team-a/running"]
    );
    assert_eq!(converted.local_queue_drains, vec!["team-a/draining"]);
    assert_eq!(
        converted.unqueued,
        vec![
            Unqueued {
                workload: "team-a/lost".to_owned(),
                local_queue: LocalQueueRef::new("team-a", "missing"),
                reason: PendingReason::Misconfigured,
                message: "LocalQueue missing doesn't exist".to_owned(),
            },
            Unqueued {
                workload: "team-a/held".to_owned(),
                local_queue: LocalQueueRef::new("team-a", "held"),
                reason: PendingReason::Suspended,
                message: "LocalQueue held is stopped".to_owned(),
            },
            Unqueued {
                workload: "team-a/garbage".to_owned(),
                local_queue: LocalQueueRef::new("team-a", "lq"),
                reason: PendingReason::Misconfigured,
                message: "invalid quantity \"lots\": unknown suffix".to_owned(),
            },
        ]
    );
    assert!(converted.holders[1].workload.evicted);
}

#[test]
fn queue_order_follows_kueue_eviction_timestamps() {
    let evicted = |reason: &str| {
        workload("team-a", "wl")
            .queue("lq")
            .created(100)
            .condition("Evicted", "True", reason, "evicted", 300)
            .build()
    };
    let cases = [
        (
            evicted("PodsReadyTimeout"),
            RequeuingTimestamp::Eviction,
            ts(300),
        ),
        (
            evicted("PodsReadyTimeout"),
            RequeuingTimestamp::Creation,
            ts(100),
        ),
        (
            evicted("AdmissionCheck"),
            RequeuingTimestamp::Creation,
            ts(300),
        ),
        (evicted("Preempted"), RequeuingTimestamp::Eviction, ts(100)),
    ];
    for (object, requeuing, want) in cases {
        let mut state = state();
        state.workloads = vec![Arc::new(object)];
        let options = ConversionOptions {
            requeuing_timestamp: requeuing,
            ..ConversionOptions::default()
        };
        let converted = convert(&state, &options);
        assert_eq!(
            converted.pending[0].workload.queue_timestamp, want,
            "{requeuing:?}"
        );
    }
}

#[test]
fn configuration_maps_to_scheduler_settings() {
    let mut config = Configuration::from_defaults(&crate::config::LoadOptions::default()).unwrap();
    let defaults = scheduler_config(&config);
    assert!(defaults.fair_sharing.is_none());
    assert!(defaults.partial_admission);
    assert_eq!((defaults.format_quantity)("cpu", 1500), "1500m");
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
        }
    );
}

#[test]
fn cached_conversions_follow_what_they_read() {
    let mut state = state();
    let object = |version: &str, cpu: &str| {
        Arc::new(
            workload("team-a", "wl")
                .queue("lq")
                .resource_version(version)
                .pod_set("main", 1, json!({"cpu": cpu}))
                .build(),
        )
    };
    state.workloads = vec![object("1", "1")];
    let options = ConversionOptions::default();
    let mut cache = WorkloadCache::new();
    let requests =
        |converted: &Converted| converted.pending[0].workload.pod_sets[0].requests.clone();
    let labels_of = |converted: &Converted| converted.pending[0].workload.namespace_labels.clone();

    let first = convert_cached(&state, &options, &mut cache);
    assert_eq!(first, convert(&state, &options));
    assert_eq!(
        convert_cached(&state, &options, &mut cache),
        first,
        "reused"
    );

    state.workloads = vec![object("2", "2")];
    let changed = convert_cached(&state, &options, &mut cache);
    assert_eq!(
        requests(&changed),
        BTreeMap::from([("cpu".to_owned(), 2000)])
    );

    state.namespaces = vec![Arc::new(namespace("team-a", json!({"team": "b"})))];
    let relabelled = convert_cached(&state, &options, &mut cache);
    assert_eq!(labels_of(&relabelled), labels(&[("team", "b")]));

    let mut range = limit_range(
        "team-a",
        json!([{"type": "Container", "defaultRequest": {"memory": "1Gi"}}]),
    );
    range.metadata.resource_version = Some("5".to_owned());
    state.limit_ranges = vec![Arc::new(range)];
    let defaulted = convert_cached(&state, &options, &mut cache);
    assert_eq!(
        requests(&defaulted),
        BTreeMap::from([("cpu".to_owned(), 2000), ("memory".to_owned(), 1 << 30)])
    );
    assert_eq!(defaulted, convert(&state, &options));

    state.local_queues = vec![Arc::new(local_queue("team-a", "lq", "elsewhere"))];
    let moved = convert_cached(&state, &options, &mut cache);
    assert_eq!(moved.pending[0].workload.cluster_queue, "elsewhere");
}
