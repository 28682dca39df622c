//! Manifests written the way Kueue's users write them deserialize into Kuota's types, in both
//! API versions, and the v1beta1 ones convert to their v1beta2 equivalents.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::Taint;
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use kuota::api::{conversion, v1beta1, v1beta2};
use kuota::k8s::yaml;
use pretty_assertions::assert_eq;

const CLUSTER_QUEUE_V1BETA2: &str = r#"
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata:
  name: team-a
spec:
  cohortName: research
  namespaceSelector: {}
  resourceGroups:
  - coveredResources: ["cpu", "memory", "nvidia.com/gpu"]
    flavors:
    - name: a100
      resources:
      - name: cpu
        nominalQuota: 64
      - name: memory
        nominalQuota: 256Gi
      - name: nvidia.com/gpu
        nominalQuota: 8
        borrowingLimit: 4
    - name: t4
      resources:
      - name: cpu
        nominalQuota: 32
      - name: memory
        nominalQuota: 128Gi
        lendingLimit: 64Gi
      - name: nvidia.com/gpu
        nominalQuota: 4
  preemption:
    reclaimWithinCohort: Any
    withinClusterQueue: LowerPriority
"#;

const CLUSTER_QUEUE_V1BETA1: &str = r#"
apiVersion: kueue.x-k8s.io/v1beta1
kind: ClusterQueue
metadata:
  name: team-a
spec:
  cohort: research
  namespaceSelector: {}
  resourceGroups:
  - coveredResources: ["cpu", "memory", "nvidia.com/gpu"]
    flavors:
    - name: a100
      resources:
      - name: cpu
        nominalQuota: 64
      - name: memory
        nominalQuota: 256Gi
      - name: nvidia.com/gpu
        nominalQuota: 8
        borrowingLimit: 4
    - name: t4
      resources:
      - name: cpu
        nominalQuota: 32
      - name: memory
        nominalQuota: 128Gi
        lendingLimit: 64Gi
      - name: nvidia.com/gpu
        nominalQuota: 4
  preemption:
    reclaimWithinCohort: Any
    withinClusterQueue: LowerPriority
"#;

fn quantity(value: &str) -> Quantity {
    Quantity(value.to_owned())
}

#[test]
fn cluster_queue_with_two_flavors_and_a_cohort() {
    let cq: v1beta2::ClusterQueue =
        yaml::from_str(CLUSTER_QUEUE_V1BETA2).expect("v1beta2 ClusterQueue");
    assert_eq!(cq.metadata.name.as_deref(), Some("team-a"));
    assert_eq!(cq.spec.cohort_name.as_deref(), Some("research"));
    assert_eq!(
        cq.spec.queueing_strategy,
        v1beta2::QueueingStrategy::BestEffortFifo
    );
    assert_eq!(
        cq.spec.stop_policy.unwrap_or_default(),
        v1beta2::StopPolicy::None
    );
    let group = &cq.spec.resource_groups[0];
    assert_eq!(group.covered_resources, ["cpu", "memory", "nvidia.com/gpu"]);
    let flavors: Vec<_> = group.flavors.iter().map(|f| f.name.as_str()).collect();
    assert_eq!(flavors, ["a100", "t4"]);
    let gpu = &group.flavors[0].resources[2];
    assert_eq!(
        (
            gpu.name.as_str(),
            &gpu.nominal_quota,
            &gpu.borrowing_limit,
            &gpu.lending_limit
        ),
        (
            "nvidia.com/gpu",
            &quantity("8"),
            &Some(quantity("4")),
            &None
        )
    );
    assert_eq!(
        group.flavors[1].resources[1].lending_limit,
        Some(quantity("64Gi"))
    );
    let preemption = cq.spec.preemption.clone().unwrap_or_default();
    assert_eq!(
        (
            preemption.reclaim_within_cohort,
            preemption.within_cluster_queue,
            preemption.borrow_within_cohort
        ),
        (
            v1beta2::PreemptionPolicy::Any,
            v1beta2::PreemptionPolicy::LowerPriority,
            None
        )
    );

    let old: v1beta1::ClusterQueue =
        yaml::from_str(CLUSTER_QUEUE_V1BETA1).expect("v1beta1 ClusterQueue");
    assert_eq!(old.spec.cohort.as_deref(), Some("research"));
    assert_eq!(old.spec.resource_groups, cq.spec.resource_groups);
    assert_eq!(v1beta2::ClusterQueue::from(old), cq);
}

#[test]
fn v1beta1_manifest_converts_on_the_wire() {
    let old: serde_json::Value = yaml::from_str(CLUSTER_QUEUE_V1BETA1).expect("yaml");
    let new: serde_json::Value = yaml::from_str(CLUSTER_QUEUE_V1BETA2).expect("yaml");
    let converted = conversion::convert(old, "kueue.x-k8s.io/v1beta2").expect("converts");
    let expected =
        serde_json::to_value(serde_json::from_value::<v1beta2::ClusterQueue>(new).expect("typed"))
            .expect("encodes");
    assert_eq!(converted, expected);
}

#[test]
fn local_queue() {
    let lq: v1beta2::LocalQueue = yaml::from_str(
        r#"
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata:
  namespace: team-a
  name: user-queue
spec:
  clusterQueue: team-a
"#,
    )
    .expect("LocalQueue");
    assert_eq!(lq.metadata.namespace.as_deref(), Some("team-a"));
    assert_eq!(lq.spec.cluster_queue.as_deref(), Some("team-a"));
    assert_eq!(lq.spec.stop_policy, None);
    assert_eq!(lq.status, None);
}

#[test]
fn resource_flavor_with_node_labels_and_taints() {
    let rf: v1beta2::ResourceFlavor = yaml::from_str(
        r#"
apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata:
  name: spot
spec:
  nodeLabels:
    cloud.example/capacity: spot
    topology.kubernetes.io/zone: eu-west-1a
  nodeTaints:
  - key: cloud.example/spot
    value: "true"
    effect: NoSchedule
  tolerations:
  - key: cloud.example/spot
    operator: Exists
    effect: NoSchedule
"#,
    )
    .expect("ResourceFlavor");
    assert_eq!(
        rf.spec.node_labels,
        BTreeMap::from([
            ("cloud.example/capacity".to_owned(), "spot".to_owned()),
            (
                "topology.kubernetes.io/zone".to_owned(),
                "eu-west-1a".to_owned()
            ),
        ])
    );
    assert_eq!(
        rf.spec.node_taints,
        vec![Taint {
            key: "cloud.example/spot".to_owned(),
            value: Some("true".to_owned()),
            effect: "NoSchedule".to_owned(),
            time_added: None,
        }]
    );
    assert_eq!(rf.spec.tolerations[0].operator.as_deref(), Some("Exists"));
    assert_eq!(rf.spec.topology_name, None);
}

#[test]
fn workload_priority_class_fields_sit_at_the_top_level() {
    let wpc: v1beta2::WorkloadPriorityClass = yaml::from_str(
        r#"
apiVersion: kueue.x-k8s.io/v1beta2
kind: WorkloadPriorityClass
metadata:
  name: high
value: 10000
description: "Production training"
"#,
    )
    .expect("WorkloadPriorityClass");
    assert_eq!(
        (wpc.spec.value, wpc.spec.description.as_str()),
        (10000, "Production training")
    );
    let json = serde_json::to_value(&wpc).expect("encodes");
    assert_eq!(json["value"], 10000);
    assert_eq!(json.get("spec"), None);
}

#[test]
fn defaults_match_kueue() {
    let cq: v1beta2::ClusterQueueSpec = serde_json::from_str("{}").expect("empty spec");
    assert_eq!(
        cq.queueing_strategy,
        v1beta2::QueueingStrategy::BestEffortFifo
    );
    let ff: v1beta2::FlavorFungibility = serde_json::from_str("{}").expect("empty fungibility");
    assert_eq!(ff, v1beta2::FlavorFungibility::default());
    assert_eq!(
        (ff.when_can_borrow, ff.when_can_preempt),
        (
            v1beta2::FlavorFungibilityPolicy::MayStopSearch,
            v1beta2::FlavorFungibilityPolicy::TryNextFlavor
        )
    );
    let preemption: v1beta2::ClusterQueuePreemption =
        serde_json::from_str("{}").expect("empty preemption");
    assert_eq!(preemption, v1beta2::ClusterQueuePreemption::default());
    assert_eq!(
        preemption.within_cluster_queue,
        v1beta2::PreemptionPolicy::Never
    );
    let pod_set: v1beta2::PodSet =
        serde_json::from_str(r#"{"template": {}}"#).expect("minimal PodSet");
    assert_eq!((pod_set.name.as_str(), pod_set.count), ("main", 1));
    let spec = v1beta2::WorkloadSpec::default();
    assert!(spec.is_active());
}
