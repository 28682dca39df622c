use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use super::*;
use crate::testing::objects::{WorkloadBuilder, flavor_with, rfc3339, ts, workload};

const CHECK: &str = "prov";

fn check(parameters: Value) -> Arc<AdmissionCheck> {
    Arc::new(
        serde_json::from_value(json!({
            "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "AdmissionCheck",
            "metadata": {"name": CHECK, "generation": 2},
            "spec": {"controllerName": "kueue.x-k8s.io/provisioning-request", "parameters": parameters},
        }))
        .expect("admission check"),
    )
}

fn config_reference() -> Value {
    json!({"apiGroup": "kueue.x-k8s.io", "kind": "ProvisioningRequestConfig", "name": "prc"})
}

fn config(spec: Value) -> Arc<ProvisioningRequestConfig> {
    Arc::new(
        serde_json::from_value(json!({
            "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ProvisioningRequestConfig",
            "metadata": {"name": "prc"}, "spec": spec,
        }))
        .expect("config"),
    )
}

fn default_config() -> Arc<ProvisioningRequestConfig> {
    config(json!({
        "provisioningClassName": "check-capacity.autoscaling.x-k8s.io",
        "parameters": {"ValidUntilSeconds": "60"},
        "retryStrategy": {"backoffLimitCount": 1, "backoffBaseSeconds": 5, "backoffMaxSeconds": 30},
    }))
}

/// Workload `wl` holding quota of flavor `gpu-nodes` for 2 pods, its check in `state`.
fn holder(state: &str, retry_count: Option<i32>) -> Arc<Workload> {
    Arc::new(holder_builder(state, retry_count).build())
}

fn holder_builder(state: &str, retry_count: Option<i32>) -> WorkloadBuilder {
    let mut check_state = json!({
        "name": CHECK, "state": state, "message": "", "lastTransitionTime": rfc3339(50),
    });
    if let Some(count) = retry_count {
        check_state["retryCount"] = json!(count);
    }
    workload("ns", "wl")
            .queue("lq")
            .pod_set_spec(
                "main",
                2,
                json!({"containers": [{"name": "c", "image": "i", "resources": {
                    "requests": {"cpu": "1"}, "limits": {"cpu": "1", "nvidia.com/gpu": "1"},
                }}]}),
            )
            .reserved(
                "cq",
                json!([{"name": "main", "flavors": {"cpu": "gpu-nodes", "nvidia.com/gpu": "gpu-nodes"}, "count": 2}]),
            )
            .status("admissionChecks", json!([check_state]))
}

fn gpu_flavor() -> Arc<ResourceFlavor> {
    Arc::new(flavor_with(
        "gpu-nodes",
        json!({"nodeLabels": {"pool": "gpu"}, "tolerations": [{"key": "gpu", "operator": "Exists", "effect": "NoSchedule"}]}),
    ))
}

fn provisioning_request(name: &str, conditions: Value) -> Arc<ProvisioningRequest> {
    Arc::new(
        serde_json::from_value(json!({
            "apiVersion": "autoscaling.x-k8s.io/v1", "kind": "ProvisioningRequest",
            "metadata": {
                "name": name, "namespace": "ns", "labels": {"kueue.x-k8s.io/managed": "true"},
                "ownerReferences": [{"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload",
                    "name": "wl", "uid": "uid-wl", "controller": true}],
            },
            "spec": {
                "provisioningClassName": "check-capacity.autoscaling.x-k8s.io",
                "parameters": {"ValidUntilSeconds": "60"},
                "podSets": [{"podTemplateRef": {"name": format!("ppt-{name}-main")}, "count": 2}],
            },
            "status": {"conditions": conditions},
        }))
        .expect("provisioning request"),
    )
}

fn pr_condition(type_: &str, status: &str, message: &str) -> Value {
    json!({"type": type_, "status": status, "reason": type_, "message": message,
           "lastTransitionTime": rfc3339(60)})
}

struct World {
    checks: Vec<Arc<AdmissionCheck>>,
    configs: Vec<Arc<ProvisioningRequestConfig>>,
    flavors: Vec<Arc<ResourceFlavor>>,
    workloads: Vec<Arc<Workload>>,
    requests: Vec<Arc<ProvisioningRequest>>,
}

impl World {
    fn new(workloads: Vec<Arc<Workload>>, requests: Vec<Arc<ProvisioningRequest>>) -> Self {
        let mut active = (*check(config_reference())).clone();
        active.status = serde_json::from_value(json!({"conditions": [
            {"type": "Active", "status": "True", "reason": "Active",
             "message": "The admission check is active", "lastTransitionTime": rfc3339(1)},
        ]}))
        .expect("status");
        World {
            checks: vec![Arc::new(active)],
            configs: vec![default_config()],
            flavors: vec![gpu_flavor()],
            workloads,
            requests,
        }
    }

    fn plan(&self) -> Vec<Action> {
        plan(&Snapshot {
            checks: &self.checks,
            configs: &self.configs,
            flavors: &self.flavors,
            workloads: &self.workloads,
            requests: &self.requests,
            cleanup_on_eviction: true,
            now: ts(100),
        })
    }
}

/// The check states written, as `(state, message, retryCount, requeueAfterSeconds)`.
fn states_written(actions: &[Action]) -> Vec<(CheckState, String, Option<i32>, Option<i32>)> {
    actions
        .iter()
        .filter_map(|action| match action {
            Action::SetCheckStates { states, .. } => Some(states),
            _ => None,
        })
        .flatten()
        .map(|s| {
            (
                s.state,
                s.message.clone(),
                s.retry_count,
                s.requeue_after_seconds,
            )
        })
        .collect()
}

/// Names of the requests the actions create, and of those they delete.
fn requests_changed(actions: &[Action]) -> (Vec<String>, Vec<String>) {
    let mut created = Vec::new();
    let mut deleted = Vec::new();
    for action in actions {
        match action {
            Action::Provision { request, .. } => created.push(request.name_any()),
            Action::Delete { name, .. } => deleted.push(name.clone()),
            _ => {}
        }
    }
    (created, deleted)
}

fn created_requests(actions: &[Action]) -> Vec<String> {
    requests_changed(actions).0
}

fn deleted(actions: &[Action]) -> Vec<String> {
    requests_changed(actions).1
}

#[test]
fn names_are_kueues_and_long_ones_are_cut_with_a_hash() {
    assert_eq!(request_name("wl", "prov", 3), "wl-prov-3");
    assert_eq!(template_name("wl-prov-3", "main"), "ppt-wl-prov-3-main");
    assert_eq!(attempt_of("wl-prov-12", "wl", "prov"), Some(12));
    assert_eq!(attempt_of("wl-prov-x", "wl", "prov"), None);
    assert_eq!(attempt_of("other-prov-1", "wl", "prov"), None);
    let long = "w".repeat(300);
    let cut = request_name(&long, "prov", 1);
    assert_eq!(cut.len(), 253);
    assert_eq!(&cut[..247], &long[..247]);
    let digest = sha1_smol::Sha1::from(format!("{long}-prov-1"))
        .digest()
        .to_string();
    assert_eq!(&cut[247..], format!("-{}", &digest[..5]));
}

#[test]
fn a_check_is_active_when_its_parameters_name_an_existing_config() {
    let mut world = World::new(Vec::new(), Vec::new());
    world.checks = vec![check(config_reference())];
    let active = world.plan();
    let [
        Action::SetActive {
            check: name,
            condition,
        },
    ] = active.as_slice()
    else {
        panic!("one SetActive, got {active:?}");
    };
    assert_eq!(name, CHECK);
    assert_eq!(
        (
            condition.status.as_str(),
            condition.reason.as_str(),
            condition.message.as_str(),
            condition.observed_generation
        ),
        ("True", "Active", "The admission check is active", Some(2))
    );

    world.configs = Vec::new();
    let missing = world.plan();
    let [Action::SetActive { condition, .. }] = missing.as_slice() else {
        panic!("one SetActive, got {missing:?}");
    };
    assert_eq!(
        (
            condition.status.as_str(),
            condition.reason.as_str(),
            condition.message.as_str()
        ),
        (
            "False",
            "BadParametersRef",
            r#"provisioningrequestconfigs.kueue.x-k8s.io "prc" not found"#
        )
    );

    world.checks = vec![check(
        json!({"apiGroup": "kueue.x-k8s.io", "kind": "Topology", "name": "prc"}),
    )];
    let wrong_kind = world.plan();
    let [Action::SetActive { condition, .. }] = wrong_kind.as_slice() else {
        panic!("one SetActive, got {wrong_kind:?}");
    };
    assert_eq!(
        condition.message,
        r#"wrong kind "Topology", expecting "ProvisioningRequestConfig": bad parameters reference"#
    );
}

#[test]
fn an_active_check_is_left_alone() {
    assert_eq!(World::new(Vec::new(), Vec::new()).plan(), Vec::new());
}

#[test]
fn a_pending_check_gets_a_request_with_templates_for_the_admitted_flavor() {
    let mut annotated = (*holder("Pending", None)).clone();
    annotated.metadata.annotations = Some(BTreeMap::from([(
        "provreq.kueue.x-k8s.io/MaxRunDurationSeconds".to_owned(),
        "600".to_owned(),
    )]));
    let actions = World::new(vec![Arc::new(annotated)], Vec::new()).plan();
    let [
        Action::Provision {
            templates, request, ..
        },
    ] = actions.as_slice()
    else {
        panic!("one Provision, got {actions:?}");
    };
    let owner = json!([{"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload", "name": "wl",
                        "uid": "uid-wl", "controller": true, "blockOwnerDeletion": true}]);
    assert_eq!(
        serde_json::to_value(request).expect("json"),
        json!({
            "apiVersion": "autoscaling.x-k8s.io/v1", "kind": "ProvisioningRequest",
            "metadata": {"name": "wl-prov-1", "namespace": "ns",
                         "labels": {"kueue.x-k8s.io/managed": "true"}, "ownerReferences": owner},
            "spec": {
                "provisioningClassName": "check-capacity.autoscaling.x-k8s.io",
                "parameters": {"MaxRunDurationSeconds": "600", "ValidUntilSeconds": "60"},
                "podSets": [{"podTemplateRef": {"name": "ppt-wl-prov-1-main"}, "count": 2}],
            },
        })
    );
    assert_eq!(
        serde_json::to_value(templates).expect("json"),
        json!([{
            "apiVersion": "v1", "kind": "PodTemplate",
            "metadata": {"name": "ppt-wl-prov-1-main", "namespace": "ns",
                         "labels": {"kueue.x-k8s.io/managed": "true"}, "ownerReferences": owner},
            "template": {"spec": {
                "containers": [{"name": "c", "image": "i", "resources": {
                    "requests": {"cpu": "1", "nvidia.com/gpu": "1"},
                    "limits": {"cpu": "1", "nvidia.com/gpu": "1"},
                }}],
                "nodeSelector": {"pool": "gpu"},
                "tolerations": [{"key": "gpu", "operator": "Exists", "effect": "NoSchedule"}],
            }},
        }])
    );
}

#[test]
fn a_provisioned_request_makes_the_check_ready_with_the_pod_annotations() {
    let request = provisioning_request(
        "wl-prov-1",
        json!([pr_condition("Provisioned", "True", "capacity is ready")]),
    );
    let actions = World::new(vec![holder("Pending", None)], vec![request]).plan();
    let [Action::SetCheckStates { states, notes, .. }] = actions.as_slice() else {
        panic!("one SetCheckStates, got {actions:?}");
    };
    assert_eq!(
        serde_json::to_value(states).expect("json"),
        json!([{
            "name": CHECK, "state": "Ready", "message": "capacity is ready",
            "lastTransitionTime": rfc3339(100),
            "podSetUpdates": [{"name": "main", "annotations": {
                "autoscaling.x-k8s.io/consume-provisioning-request": "wl-prov-1",
                "autoscaling.x-k8s.io/provisioning-class-name": "check-capacity.autoscaling.x-k8s.io",
            }}],
        }])
    );
    assert_eq!(
        notes,
        &[
            "Admission check prov updated state from Pending to Ready with message: capacity is ready"
        ]
    );
}

#[test]
fn an_accepted_request_keeps_the_check_pending_with_the_provisioned_message() {
    let request = provisioning_request(
        "wl-prov-1",
        json!([
            pr_condition("Accepted", "True", "accepted"),
            pr_condition("Provisioned", "False", "waiting for nodes"),
        ]),
    );
    let actions = World::new(vec![holder("Pending", None)], vec![request]).plan();
    assert_eq!(
        states_written(&actions),
        [(
            CheckState::Pending,
            "waiting for nodes".to_owned(),
            None,
            None
        )]
    );
    assert_eq!(created_requests(&actions), Vec::<String>::new());
}

#[test]
fn a_failed_request_is_retried_with_backoff_then_rejected_past_the_limit() {
    let failed = |name: &str| {
        provisioning_request(name, json!([pr_condition("Failed", "True", "no capacity")]))
    };
    let first = World::new(vec![holder("Pending", None)], vec![failed("wl-prov-1")]).plan();
    assert_eq!(
        states_written(&first),
        [(
            CheckState::Retry,
            "Retrying after failure: no capacity".to_owned(),
            None,
            Some(5)
        )]
    );
    assert_eq!(created_requests(&first), Vec::<String>::new());

    // After the eviction the check is Pending again, retried once: the next attempt is made.
    let again = World::new(vec![holder("Pending", Some(1))], vec![failed("wl-prov-1")]).plan();
    assert_eq!(created_requests(&again), ["wl-prov-2"]);

    // The second attempt fails too: past backoffLimitCount 1, rejected.
    let requests = vec![failed("wl-prov-1"), failed("wl-prov-2")];
    let rejected = World::new(vec![holder("Pending", Some(1))], requests).plan();
    assert_eq!(
        states_written(&rejected),
        [(
            CheckState::Rejected,
            "no capacity".to_owned(),
            Some(1),
            None
        )]
    );
    assert_eq!(deleted(&rejected), ["wl-prov-1"]);
    assert_eq!(created_requests(&rejected), Vec::<String>::new());
}

#[test]
fn revoked_capacity_rejects_the_check() {
    let request = provisioning_request(
        "wl-prov-1",
        json!([pr_condition("CapacityRevoked", "True", "nodes went away")]),
    );
    let actions = World::new(vec![holder("Ready", None)], vec![request]).plan();
    assert_eq!(
        states_written(&actions),
        [(
            CheckState::Rejected,
            "nodes went away".to_owned(),
            None,
            None
        )]
    );
}

#[test]
fn requests_of_evicted_and_finished_workloads_are_deleted() {
    let evicted = Arc::new(
        holder_builder("Pending", None)
            .condition("Evicted", "True", "Preempted", "", 90)
            .build(),
    );
    let request = provisioning_request("wl-prov-1", json!([]));
    assert_eq!(
        deleted(&World::new(vec![evicted], vec![request.clone()]).plan()),
        ["wl-prov-1"]
    );
    // A finished workload has left the store.
    assert_eq!(
        deleted(&World::new(Vec::new(), vec![request]).plan()),
        ["wl-prov-1"]
    );
}

#[test]
fn a_check_without_its_config_waits_and_one_without_managed_resources_is_ready() {
    let mut missing = World::new(vec![holder("Pending", None)], Vec::new());
    missing.configs = Vec::new();
    let actions = missing.plan();
    assert_eq!(
        states_written(&actions),
        [(
            CheckState::Pending,
            CHECK_INACTIVE_MESSAGE.to_owned(),
            None,
            None
        )]
    );

    let mut unmanaged = World::new(vec![holder("Pending", None)], Vec::new());
    unmanaged.configs = vec![config(json!({
        "provisioningClassName": "check-capacity.autoscaling.x-k8s.io",
        "managedResources": ["example.com/fpga"],
    }))];
    let actions = unmanaged.plan();
    assert_eq!(
        states_written(&actions),
        [(CheckState::Ready, NO_REQUEST_NEEDED.to_owned(), None, None)]
    );
    assert_eq!(created_requests(&actions), Vec::<String>::new());
}

#[test]
fn node_selectors_come_from_the_class_details_the_config_names() {
    let mut request = (*provisioning_request(
        "wl-prov-1",
        json!([pr_condition("Provisioned", "True", "")]),
    ))
    .clone();
    request
        .status
        .get_or_insert_default()
        .provisioning_class_details = BTreeMap::from([("zone".to_owned(), "zone-a".to_owned())]);
    let mut world = World::new(vec![holder("Pending", None)], vec![Arc::new(request)]);
    world.configs = vec![config(json!({
        "provisioningClassName": "check-capacity.autoscaling.x-k8s.io",
        "parameters": {"ValidUntilSeconds": "60"},
        "podSetUpdates": {"nodeSelector": [
            {"key": "example.com/zone", "valueFromProvisioningClassDetail": "zone"},
            {"key": "example.com/rack", "valueFromProvisioningClassDetail": "rack"},
        ]},
    }))];
    let actions = world.plan();
    let [Action::SetCheckStates { states, .. }] = actions.as_slice() else {
        panic!("one SetCheckStates, got {actions:?}");
    };
    assert_eq!(
        states[0].pod_set_updates[0].node_selector,
        BTreeMap::from([("example.com/zone".to_owned(), "zone-a".to_owned())])
    );
}

#[test]
fn identical_pod_sets_are_merged_when_the_config_says_so() {
    let pod = json!({"containers": [{"name": "c", "image": "i", "resources": {"requests": {"cpu": "1"}}}]});
    let twins = workload("ns", "wl")
        .queue("lq")
        .pod_set_spec("a", 2, pod.clone())
        .pod_set_spec("b", 3, pod)
        .reserved(
            "cq",
            json!([
                {"name": "a", "flavors": {"cpu": "gpu-nodes"}, "count": 2},
                {"name": "b", "flavors": {"cpu": "gpu-nodes"}, "count": 3},
            ]),
        )
        .status(
            "admissionChecks",
            json!([{"name": CHECK, "state": "Pending", "message": "", "lastTransitionTime": rfc3339(50)}]),
        )
        .build();
    let mut world = World::new(vec![Arc::new(twins)], Vec::new());
    world.configs = vec![config(json!({
        "provisioningClassName": "check-capacity.autoscaling.x-k8s.io",
        "podSetMergePolicy": "IdenticalPodTemplates",
    }))];
    let actions = world.plan();
    let [
        Action::Provision {
            templates, request, ..
        },
    ] = actions.as_slice()
    else {
        panic!("one Provision, got {actions:?}");
    };
    assert_eq!(
        serde_json::to_value(&request.spec.pod_sets).expect("json"),
        json!([{"podTemplateRef": {"name": "ppt-wl-prov-1-a"}, "count": 5}])
    );
    assert_eq!(
        templates.iter().map(|t| t.name_any()).collect::<Vec<_>>(),
        ["ppt-wl-prov-1-a"]
    );
}
