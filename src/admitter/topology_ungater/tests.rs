use std::collections::BTreeMap;

use pretty_assertions::assert_eq;
use serde_json::json;

use super::*;

#[test]
fn ungating_removes_only_the_topology_gate_and_adds_the_domain_to_the_node_selector() {
    let pod = json!({
        "metadata": {"name": "p", "resourceVersion": "5"},
        "spec": {
            "nodeSelector": {"cloud.provider.com/node-group": "tas"},
            "schedulingGates": [{"name": "kueue.x-k8s.io/topology"}, {"name": "other"}],
        },
    });
    let domain = BTreeMap::from([(
        "kubernetes.io/hostname".to_string(),
        "kwok-tas-r1-0".to_string(),
    )]);
    let patch = guarded_patch(&pod, &ungated(&pod, &domain));
    // Only if the pod is still the version read.
    assert_eq!(
        serde_json::to_value(&patch.0[0]).expect("operation"),
        json!({"op": "test", "path": "/metadata/resourceVersion", "value": "5"})
    );
    let mut patched = pod.clone();
    json_patch::patch(&mut patched, &patch).expect("the patch applies");
    assert_eq!(
        patched,
        json!({
            "metadata": {"name": "p", "resourceVersion": "5"},
            "spec": {
                "nodeSelector": {
                    "cloud.provider.com/node-group": "tas",
                    "kubernetes.io/hostname": "kwok-tas-r1-0",
                },
                "schedulingGates": [{"name": "other"}],
            },
        })
    );
}

#[test]
fn the_last_gate_goes_with_its_list() {
    let pod = json!({"spec": {"schedulingGates": [{"name": "kueue.x-k8s.io/topology"}]}});
    let domain = BTreeMap::from([("rack".to_string(), "r2".to_string())]);
    assert_eq!(
        ungated(&pod, &domain),
        json!({"spec": {"nodeSelector": {"rack": "r2"}}})
    );
}
