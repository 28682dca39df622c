//! Kueue's own webhooks: exact messages for ClusterQueue, Cohort, ResourceFlavor and Workload.

use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use super::*;
use crate::api::v1beta2::{ClusterQueue, Cohort, ResourceFlavor, Workload};
use crate::config::FeatureGates;
use crate::k8s::field::FieldError;

fn gates() -> FeatureGates {
    FeatureGates::default()
}

fn decode<K: serde::de::DeserializeOwned>(value: Value) -> K {
    serde_json::from_value(value).unwrap()
}

fn messages(violations: &[FieldError]) -> Vec<String> {
    violations.iter().map(ToString::to_string).collect()
}

fn cluster_queue(spec: Value) -> ClusterQueue {
    decode(
        json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue", "metadata": {"name": "cq"}, "spec": spec}),
    )
}

fn quota(name: &str, nominal: &str) -> Value {
    json!({"name": name, "nominalQuota": nominal})
}

#[test]
fn cluster_queue_rules() {
    let cases: Vec<(&str, Value, Vec<&str>)> = vec![
        (
            "valid",
            json!({"cohortName": "org", "namespaceSelector": {}, "resourceGroups": [{
                "coveredResources": ["cpu", "memory"],
                "flavors": [{"name": "default", "resources": [
                    {"name": "cpu", "nominalQuota": "8", "borrowingLimit": "2", "lendingLimit": "4"},
                    quota("memory", "8Gi")
                ]}]
            }]}),
            vec![],
        ),
        (
            "resource order must follow coveredResources",
            json!({"resourceGroups": [{
                "coveredResources": ["cpu", "memory"],
                "flavors": [{"name": "default", "resources": [quota("memory", "1Gi"), quota("cpu", "1")]}]
            }]}),
            vec![
                r#"spec.resourceGroups[0].flavors[0].resources[0].name: Invalid value: "memory": must match the name in coveredResources"#,
                r#"spec.resourceGroups[0].flavors[0].resources[1].name: Invalid value: "cpu": must match the name in coveredResources"#,
            ],
        ),
        (
            "duplicates across groups",
            json!({"resourceGroups": [
                {"coveredResources": ["cpu"], "flavors": [{"name": "default", "resources": [quota("cpu", "1")]}]},
                {"coveredResources": ["cpu"], "flavors": [{"name": "default", "resources": [quota("cpu", "1")]}]}
            ]}),
            vec![
                r#"spec.resourceGroups[1].coveredResources[0]: Duplicate value: "cpu""#,
                r#"spec.resourceGroups[1].flavors[0].name: Duplicate value: "default""#,
            ],
        ),
        (
            "negative quantities and limits without cohort",
            json!({"resourceGroups": [{
                "coveredResources": ["cpu"],
                "flavors": [{"name": "default", "resources": [
                    {"name": "cpu", "nominalQuota": "-1", "borrowingLimit": "1", "lendingLimit": "2"}
                ]}]
            }]}),
            vec![
                r#"spec.resourceGroups[0].flavors[0].resources[0].nominalQuota: Invalid value: "-1": must be greater than or equal to 0"#,
                r#"spec.resourceGroups[0].flavors[0].resources[0].borrowingLimit: Invalid value: "1": must be nil when cohort is empty"#,
                r#"spec.resourceGroups[0].flavors[0].resources[0].lendingLimit: Invalid value: "2": must be nil when cohort is empty"#,
                r#"spec.resourceGroups[0].flavors[0].resources[0].lendingLimit: Invalid value: "2": must be less than or equal to the nominalQuota"#,
            ],
        ),
        (
            "resource names are label keys",
            json!({"resourceGroups": [{
                "coveredResources": ["bad resource"],
                "flavors": [{"name": "default", "resources": [quota("bad resource", "1")]}]
            }]}),
            vec![
                r#"spec.resourceGroups[0].coveredResources[0]: Invalid value: "bad resource": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"#,
            ],
        ),
        (
            "preemption and fungibility",
            json!({
                "preemption": {"reclaimWithinCohort": "Never", "borrowWithinCohort": {"policy": "LowerPriority"}, "withinClusterQueue": "Never"},
                "flavorFungibility": {"whenCanBorrow": "MayStopSearch", "whenCanPreempt": "TryNextFlavor", "preference": "BorrowingOverPreemption"}
            }),
            vec![
                r#"spec.preemption: Invalid value: {"borrowWithinCohort":{"policy":"LowerPriority"},"reclaimWithinCohort":"Never","withinClusterQueue":"Never"}: reclaimWithinCohort=Never and borrowWithinCohort.Policy!=Never"#,
                r#"spec.flavorFungibility.preference: Invalid value: "BorrowingOverPreemption": preference "BorrowingOverPreemption" requires both whenCanBorrow and whenCanPreempt to be TryNextFlavor"#,
            ],
        ),
        (
            "fair sharing weight",
            json!({"fairSharing": {"weight": "1n"}}),
            vec![r#"spec.fairSharing: Invalid value: "1n": When not 0, weight must be > 10e-9"#],
        ),
        (
            "namespace selector",
            json!({"namespaceSelector": {"matchExpressions": [{"key": "team", "operator": "In"}]}}),
            vec![
                "spec.namespaceSelector.matchExpressions[0].values: Required value: must be specified when `operator` is 'In' or 'NotIn'",
            ],
        ),
        (
            "onFlavors must be flavors of the queue",
            json!({
                "resourceGroups": [{"coveredResources": ["cpu"], "flavors": [
                    {"name": "b", "resources": [quota("cpu", "1")]},
                    {"name": "a", "resources": [quota("cpu", "1")]}
                ]}],
                "admissionChecksStrategy": {"admissionChecks": [{"name": "check", "onFlavors": ["a", "c"]}]}
            }),
            vec![
                r#"spec.admissionChecksStrategy.admissionChecks[0].onFlavors[1]: Unsupported value: "c": supported values: "a", "b""#,
            ],
        ),
    ];
    for (name, spec, expected) in cases {
        let violations = validate_cluster_queue(&cluster_queue(spec), None, &gates());
        assert_eq!(messages(&violations), expected, "{name}");
    }
}

#[test]
fn cluster_queue_counts_are_bounded() {
    let flavors: Vec<Value> = (0..257)
        .map(|i| json!({"name": format!("f{i}"), "resources": [quota("cpu", "1")]}))
        .collect();
    let queue = cluster_queue(
        json!({"resourceGroups": [{"coveredResources": ["cpu"], "flavors": flavors}]}),
    );
    assert_eq!(
        messages(&validate_cluster_queue(&queue, None, &gates())),
        vec![
            "spec.resourceGroups: Invalid value: 257: total number of flavors across all resourceGroups must be ≤ 256, got 257"
        ]
    );
}

#[test]
fn unchanged_invalid_on_flavors_stay_editable() {
    let spec = |cohort: &str| {
        json!({
            "cohortName": cohort,
            "resourceGroups": [{"coveredResources": ["cpu"], "flavors": [{"name": "a", "resources": [quota("cpu", "1")]}]}],
            "admissionChecksStrategy": {"admissionChecks": [{"name": "check", "onFlavors": ["gone"]}]}
        })
    };
    let old = cluster_queue(spec("x"));
    let new = cluster_queue(spec("y"));
    assert_eq!(
        messages(&validate_cluster_queue(&new, Some(&old), &gates())),
        Vec::<String>::new()
    );
    let strict = FeatureGates::parse("RejectUpdatesToCQWithInvalidOnFlavors=true").unwrap();
    assert_eq!(
        messages(&validate_cluster_queue(&new, Some(&old), &strict)),
        vec![
            r#"spec.admissionChecksStrategy.admissionChecks[0].onFlavors[0]: Unsupported value: "gone": supported values: "a""#
        ]
    );
}

// === Cohort ===

#[test]
fn cohort_rules() {
    let cohort: Cohort = decode(json!({
        "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Cohort", "metadata": {"name": "org"},
        "spec": {
            "fairSharing": {"weight": "-1"},
            "resourceGroups": [{"coveredResources": ["cpu"], "flavors": [{"name": "default", "resources": [
                {"name": "cpu", "nominalQuota": "1", "lendingLimit": "5"}
            ]}]}]
        }
    }));
    assert_eq!(
        messages(&validate_cohort(&cohort)),
        vec![
            r#"spec.fairSharing: Invalid value: "-1": must be greater than or equal to 0"#,
            r#"spec.resourceGroups[0].flavors[0].resources[0].lendingLimit: Invalid value: "5": must be nil when parent is empty"#,
        ]
    );
}

// === ResourceFlavor ===

#[test]
fn resource_flavor_rules() {
    let flavor: ResourceFlavor = decode(json!({
        "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor", "metadata": {"name": "spot"},
        "spec": {
            "nodeLabels": {"instance-type": "spot!"},
            "nodeTaints": [
                {"key": "spot", "value": "true", "effect": "NoSchedule"},
                {"key": "spot", "value": "false", "effect": "NoSchedule"}
            ],
            "tolerations": [{"key": "bad key", "operator": "Exists"}]
        }
    }));
    assert_eq!(
        messages(&validate_resource_flavor(&flavor)),
        vec![
            r#"spec.nodeLabels: Invalid value: "spot!": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"#,
            r#"spec.nodeTaints[1]: Duplicate value: v1.Taint{Key:"spot", Value:"false", Effect:"NoSchedule", TimeAdded:(*v1.Time)(nil)}: taints must be unique by key and effect pair"#,
            r#"spec.tolerations[0].key: Invalid value: "bad key": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"#,
        ]
    );
}

// === defaulting ===

#[test]
fn finalizer_is_added_once() {
    let mut object = json!({"metadata": {"name": "cq"}});
    add_resource_in_use_finalizer(&mut object);
    add_resource_in_use_finalizer(&mut object);
    assert_eq!(
        object,
        json!({"metadata": {"name": "cq", "finalizers": ["kueue.x-k8s.io/resource-in-use"]}})
    );
}

#[test]
fn min_count_is_dropped_without_partial_admission() {
    let workload = json!({"spec": {"podSets": [{"name": "main", "count": 4, "minCount": 2}]}});
    let mut kept = workload.clone();
    default_workload(&mut kept, &gates());
    assert_eq!(kept, workload);
    let mut dropped = workload;
    default_workload(
        &mut dropped,
        &FeatureGates::parse("PartialAdmission=false").unwrap(),
    );
    assert_eq!(
        dropped,
        json!({"spec": {"podSets": [{"name": "main", "count": 4}]}})
    );
}

// === Workload ===

fn pod_set(name: &str, count: i32, requests: Value) -> Value {
    json!({"name": name, "count": count, "template": {"spec": {"containers": [
        {"name": "c", "resources": {"requests": requests}}
    ]}}})
}

fn workload(pod_sets: Value, status: Value) -> Workload {
    decode(json!({
        "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload",
        "metadata": {"name": "wl", "namespace": "ns"},
        "spec": {"queueName": "q", "podSets": pod_sets},
        "status": status
    }))
}

fn reserved(admission: Value) -> Value {
    json!({
        "conditions": [{"type": "QuotaReserved", "status": "True", "reason": "QuotaReserved",
                        "message": "", "lastTransitionTime": "2026-01-01T00:00:00Z"}],
        "admission": admission
    })
}

#[test]
fn workload_rules_on_create() {
    let mut two_min_counts = pod_set("a", 2, json!({"cpu": "1"}));
    two_min_counts["minCount"] = json!(1);
    let mut other = pod_set("b", 2, json!({"pods": "1", "cpu": "-1"}));
    other["minCount"] = json!(1);
    let wl = workload(json!([two_min_counts, other]), json!({}));
    assert_eq!(
        messages(&validate_workload(&wl, None, &gates())),
        vec![
            r#"spec.podSets[1].template.spec.containers[0].resources.requests[cpu]: Invalid value: "-1": must be greater than or equal to 0"#,
            r#"spec.podSets[1].template.spec.containers[0].resources.requests[pods]: Invalid value: "pods": the key is reserved for internal kueue use"#,
            "spec.podSets: Invalid value: 2: at most one podSet can use minCount",
        ]
    );
}

#[test]
fn workload_admission_rules() {
    let pod_sets = json!([pod_set("main", 2, json!({"cpu": "1"}))]);
    let missing = workload(pod_sets.clone(), reserved(Value::Null));
    assert_eq!(
        messages(&validate_workload(&missing, None, &gates())),
        vec![
            "status.admission: Required value: must be set while the QuotaReserved condition is true"
        ]
    );
    let odd = workload(
        pod_sets.clone(),
        reserved(json!({"clusterQueue": "cq", "podSetAssignments": [
            {"name": "main", "count": 2, "flavors": {"cpu": "default"}, "resourceUsage": {"cpu": "3", "memory": "3"}},
            {"name": "ghost", "count": 1}
        ]})),
    );
    assert_eq!(
        messages(&validate_workload(&odd, None, &gates())),
        vec![
            r#"status.admission.podSetAssignments[0].resourceUsage[memory]: Invalid value: "3": is not a multiple of 2"#,
            r#"status.admission.podSetAssignments[1].name: Not found: "ghost""#,
        ]
    );
}

#[test]
fn workload_rules_on_update() {
    let admission = json!({"clusterQueue": "cq", "podSetAssignments": [
        {"name": "main", "count": 2, "flavors": {"cpu": "default"}, "resourceUsage": {"cpu": "2"}}
    ]});
    let mut status = reserved(admission.clone());
    status["reclaimablePods"] = json!([{"name": "main", "count": 1}]);
    let old = workload(
        json!([pod_set("main", 2, json!({"cpu": "1"}))]),
        status.clone(),
    );

    let mut new_status = status.clone();
    new_status["reclaimablePods"] = json!([{"name": "main", "count": 0}]);
    new_status["admission"]["clusterQueue"] = json!("other");
    let new = workload(json!([pod_set("main", 2, json!({"cpu": "2"}))]), new_status);
    let violations = messages(&validate_workload(&new, Some(&old), &gates()));
    assert_eq!(violations.len(), 3, "{violations:#?}");
    assert!(
        violations[0].starts_with("spec.podSets.0: Invalid value: {"),
        "{}",
        violations[0]
    );
    assert!(
        violations[0].ends_with("}: field is immutable"),
        "{}",
        violations[0]
    );
    assert_eq!(
        violations[1],
        "status.reclaimablePods[main].count: Invalid value: 0: cannot be less than 1"
    );
    assert_eq!(
        violations[2],
        r#"status.admission: Invalid value: {"clusterQueue":"other","podSetAssignments":[{"count":2,"flavors":{"cpu":"default"},"name":"main","resourceUsage":{"cpu":"2"}}]}: field is immutable"#
    );

    // Setting a topology assignment is allowed.
    let mut topology_status = status.clone();
    topology_status["admission"]["podSetAssignments"][0]["topologyAssignment"] =
        json!({"levels": ["zone"], "slices": []});
    let with_topology = workload(
        json!([pod_set("main", 2, json!({"cpu": "1"}))]),
        topology_status,
    );
    assert_eq!(
        messages(&validate_workload(&with_topology, Some(&old), &gates())),
        Vec::<String>::new()
    );
}

#[test]
fn cluster_name_must_be_nominated() {
    let old = workload(
        json!([pod_set("main", 1, json!({}))]),
        json!({"nominatedClusterNames": ["w1"]}),
    );
    let new = workload(
        json!([pod_set("main", 1, json!({}))]),
        json!({"nominatedClusterNames": ["w1"], "clusterName": "w2"}),
    );
    assert_eq!(
        messages(&validate_workload(&new, Some(&old), &gates())),
        vec![
            r#"status.clusterName: Invalid value: "w2": when setting clusterName it must be one of the nominatedClusterNames"#
        ]
    );
}

#[test]
fn conditions_are_validated() {
    let wl = workload(
        json!([pod_set("main", 1, json!({}))]),
        json!({"conditions": [
            {"type": "Finished", "status": "Maybe", "reason": "bad reason", "message": "", "lastTransitionTime": "2026-01-01T00:00:00Z"},
            {"type": "Finished", "status": "True", "reason": "Succeeded", "message": "", "lastTransitionTime": "2026-01-01T00:00:00Z"}
        ]}),
    );
    assert_eq!(
        messages(&validate_workload(&wl, None, &gates())),
        vec![
            r#"status.conditions[0].status: Unsupported value: "Maybe": supported values: "False", "True", "Unknown""#,
            r#"status.conditions[0].reason: Invalid value: "bad reason": a condition reason must start with alphabetic character, optionally followed by a string of alphanumeric characters or '_,:', and must end with an alphanumeric character or '_' (e.g. 'my_name',  or 'MY_NAME',  or 'MyName',  or 'ReasonA,ReasonB',  or 'ReasonA:ReasonB', regex used for validation is '[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?')"#,
            r#"status.conditions[1].type: Duplicate value: "Finished""#,
        ]
    );
}
