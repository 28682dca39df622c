//! Topology-aware scheduling of a JobSet and of a RayCluster's worker group, end to end: the
//! real `kuota serve`, the real JobSet controller and KubeRay operator (built from their pinned
//! modules by `dev/controllers/build.sh`, with their own CRDs) creating the pods, and the real
//! kube-scheduler binding them to a pool of kwok nodes in two blocks (b2 and b3), each of one
//! rack of two nodes with 2 CPUs: a block holds four 1-CPU pods.
//!
//! One scenario, in order, since the RayCluster needs the capacity the JobSet gave back.

mod common {
    pub mod dev_tools;
}

use std::{
    collections::BTreeMap,
    path::{Path, PathBuf},
    time::Duration,
};

use k8s_openapi::api::core::v1::Pod;
use kube::{
    Api, Client,
    api::{DeleteParams, DynamicObject, ListParams, PostParams},
    core::{ApiResource, GroupVersionKind},
};
use kuota::api::{
    v1beta1,
    v1beta2::{ClusterQueue, LocalQueue, ResourceFlavor, Topology, Workload},
};
use kuota_cluster::{FakeNode, KEEP_RUNNING_LABEL, TestCluster, eventually, free_port};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use common::dev_tools::dev_script;

const WAIT: Duration = Duration::from_secs(90);
const QUEUE: &str = "blocks";
const POOL: (&str, &str) = ("cloud.provider.com/node-group", "tas-blocks");
const BLOCK: &str = "cloud.provider.com/topology-block";
const RACK: &str = "cloud.provider.com/topology-rack";
const HOSTNAME: &str = "kubernetes.io/hostname";
const INDEX_LABEL: &str = "batch.kubernetes.io/job-completion-index";
/// Which copy of its replicated Job a JobSet pod's Job is.
const COPY_LABEL: &str = "jobset.sigs.k8s.io/job-index";
const REQUIRED: &str = "kueue.x-k8s.io/podset-required-topology";

const BLOCK_NODES: &[FakeNode] = &[
    FakeNode {
        name: "kwok-b2-0",
        labels: &[POOL, (BLOCK, "b2"), (RACK, "b2-r1")],
        extended: &[("cpu", "2")],
    },
    FakeNode {
        name: "kwok-b2-1",
        labels: &[POOL, (BLOCK, "b2"), (RACK, "b2-r1")],
        extended: &[("cpu", "2")],
    },
    FakeNode {
        name: "kwok-b3-0",
        labels: &[POOL, (BLOCK, "b3"), (RACK, "b3-r1")],
        extended: &[("cpu", "2")],
    },
    FakeNode {
        name: "kwok-b3-1",
        labels: &[POOL, (BLOCK, "b3"), (RACK, "b3-r1")],
        extended: &[("cpu", "2")],
    },
];

/// The block of one of [`BLOCK_NODES`].
fn block_of(node: &str) -> &'static str {
    BLOCK_NODES
        .iter()
        .find(|candidate| candidate.name == node)
        .and_then(|candidate| candidate.labels.iter().find(|(key, _)| *key == BLOCK))
        .map_or("none", |(_, value)| value)
}

/// Every node of `block`, two pods each: what a 4-pod PodSet required in a block gets.
fn whole_block(block: &str) -> v1beta1::TopologyAssignment {
    let domains: Vec<Value> = BLOCK_NODES
        .iter()
        .filter(|node| block_of(node.name) == block)
        .map(|node| json!({"values": [node.name], "count": 2}))
        .collect();
    serde_json::from_value(json!({"levels": [HOSTNAME], "domains": domains}))
        .expect("an assignment")
}

/// The PodSet's topology assignment, in the served v1beta1 shape.
fn assignment(workload: &Workload, pod_set: &str) -> Option<v1beta1::TopologyAssignment> {
    let admission = workload.status.as_ref()?.admission.as_ref()?;
    let assignment = admission
        .pod_set_assignments
        .iter()
        .find(|assignment| assignment.name == pod_set)?;
    Some(assignment.topology_assignment.clone()?.into())
}

/// The single block every domain of `assignment` is in, if there is one.
fn single_block(assignment: &v1beta1::TopologyAssignment) -> Option<&'static str> {
    let mut blocks = assignment
        .domains
        .iter()
        .map(|domain| block_of(&domain.values[0]));
    let first = blocks.next()?;
    blocks.all(|block| block == first).then_some(first)
}

/// The node of each place of `assignment`, in order: the nodes its pods must run on.
fn places(assignment: &v1beta1::TopologyAssignment) -> Vec<String> {
    assignment
        .domains
        .iter()
        .flat_map(|domain| std::iter::repeat_n(domain.values[0].clone(), domain.count as usize))
        .collect()
}

fn create<K>(object: Value) -> K
where
    K: serde::de::DeserializeOwned,
{
    serde_json::from_value(object).expect("a well-formed object")
}

/// A replicated Job of `replicas` copies of a Job of `pods` pods of 1 CPU each, held Running by
/// kwok, required in one block.
fn replicated_job(name: &str, replicas: i32, pods: i32) -> Value {
    json!({
        "name": name,
        "replicas": replicas,
        "template": {"spec": {
            "parallelism": pods,
            "completions": pods,
            "completionMode": "Indexed",
            "backoffLimit": 0,
            "template": {
                "metadata": {
                    "labels": {KEEP_RUNNING_LABEL: "true"},
                    "annotations": {REQUIRED: BLOCK},
                },
                "spec": {
                    "restartPolicy": "Never",
                    "containers": [{
                        "name": "main",
                        "image": "registry.k8s.io/pause:3.10",
                        "resources": {"requests": {"cpu": "1"}},
                    }],
                },
            },
        }},
    })
}

/// Two replicated Jobs of four pods, each required in a block: a block holds one of them. The
/// first is two copies of a 2-pod Job, whose pods share indexes 0 and 1. The fields the JobSet webhook would default are set, since its webhook is not registered.
fn jobset(namespace: &str) -> DynamicObject {
    create(json!({
        "apiVersion": "jobset.x-k8s.io/v1alpha2",
        "kind": "JobSet",
        "metadata": {
            "name": "two-blocks",
            "namespace": namespace,
            "labels": {"kueue.x-k8s.io/queue-name": QUEUE},
        },
        "spec": {
            "successPolicy": {"operator": "All"},
            "startupPolicy": {"startupPolicyOrder": "AnyOrder"},
            "network": {"enableDNSHostnames": true, "publishNotReadyAddresses": true},
            "replicatedJobs": [
                replicated_job("trainer-a", 2, 2),
                replicated_job("trainer-b", 1, 4),
            ],
        },
    }))
}

fn ray_container(name: &str) -> Value {
    json!({
        "name": name,
        "image": "rayproject/ray:2.41.0",
        "resources": {"requests": {"cpu": "1"}, "limits": {"cpu": "1"}},
    })
}

/// A head of 1 CPU and a worker group of four 1-CPU workers required in one block: the workers
/// take a whole block, so the head goes to the other.
fn raycluster(namespace: &str) -> DynamicObject {
    create(json!({
        "apiVersion": "ray.io/v1",
        "kind": "RayCluster",
        "metadata": {
            "name": "ray",
            "namespace": namespace,
            "labels": {"kueue.x-k8s.io/queue-name": QUEUE},
        },
        "spec": {
            "rayVersion": "2.41.0",
            "headGroupSpec": {
                "rayStartParams": {},
                "template": {"spec": {"containers": [ray_container("ray-head")]}},
            },
            "workerGroupSpecs": [{
                "groupName": "workers",
                "replicas": 4,
                "minReplicas": 4,
                "maxReplicas": 4,
                "rayStartParams": {},
                "template": {
                    "metadata": {"annotations": {REQUIRED: BLOCK}},
                    "spec": {"containers": [ray_container("ray-worker")]},
                },
            }],
        },
    }))
}

fn dynamic_api(client: &Client, namespace: &str, gvk: (&str, &str, &str)) -> Api<DynamicObject> {
    let resource = ApiResource::from_gvk(&GroupVersionKind::gvk(gvk.0, gvk.1, gvk.2));
    Api::namespaced_with(client.clone(), namespace, &resource)
}

struct Scenario {
    client: Client,
    namespace: String,
    logs: Vec<PathBuf>,
}

impl Scenario {
    fn tails(&self) -> String {
        self.logs
            .iter()
            .map(|log| {
                let text = std::fs::read_to_string(log).unwrap_or_default();
                let lines: Vec<&str> = text.lines().collect();
                let tail = lines[lines.len().saturating_sub(25)..].join("\n");
                format!("--- {}:\n{tail}", log.display())
            })
            .collect::<Vec<_>>()
            .join("\n")
    }

    async fn workload_of(&self, owner: &str) -> Option<Workload> {
        let api: Api<Workload> = Api::namespaced(self.client.clone(), &self.namespace);
        let workloads = api.list(&ListParams::default()).await.ok()?;
        workloads.items.into_iter().find(|workload| {
            workload
                .metadata
                .owner_references
                .iter()
                .flatten()
                .any(|reference| reference.name == owner)
        })
    }

    /// The owner's Workload once it is admitted with a topology assignment for every PodSet.
    async fn admitted(&self, owner: &str, pod_sets: &[&str]) -> Workload {
        let result = eventually(WAIT, "admitted with topology assignments", || async {
            self.workload_of(owner).await.is_some_and(|workload| {
                pod_sets
                    .iter()
                    .all(|pod_set| assignment(&workload, pod_set).is_some())
            })
        })
        .await;
        if let Err(error) = result {
            panic!(
                "{error}\nseen: {:#?}\n{}",
                self.workload_of(owner).await.map(|w| w.status),
                self.tails()
            );
        }
        self.workload_of(owner).await.expect("the Workload")
    }

    /// Once `count` pods matching `selector` are bound: each pod's name, labels and node.
    async fn bound_pods(
        &self,
        selector: &str,
        count: usize,
    ) -> Vec<(String, BTreeMap<String, String>, String)> {
        let api: Api<Pod> = Api::namespaced(self.client.clone(), &self.namespace);
        let params = ListParams::default().labels(selector);
        let bound = || async {
            let listed = api.list(&params).await.expect("list pods").items;
            listed
                .into_iter()
                .filter_map(|pod| {
                    let node = pod.spec.as_ref()?.node_name.clone()?;
                    let labels = pod.metadata.labels.unwrap_or_default();
                    Some((pod.metadata.name?, labels, node))
                })
                .collect::<Vec<_>>()
        };
        let result = eventually(WAIT, "every pod bound to a node", || async {
            bound().await.len() == count
        })
        .await;
        if let Err(error) = result {
            let listed = api.list(&params).await.expect("list pods").items;
            let specs: Vec<_> = listed
                .iter()
                .map(|pod| {
                    let spec = pod.spec.as_ref();
                    (
                        &pod.metadata.name,
                        spec.map(|spec| (&spec.node_selector, &spec.scheduling_gates)),
                        pod.status.as_ref().map(|status| &status.conditions),
                    )
                })
                .collect();
            panic!("{error}\npods ({selector}): {specs:#?}\n{}", self.tails());
        }
        bound().await
    }

    async fn delete_and_wait(&self, api: &Api<DynamicObject>, name: &str) {
        api.delete(name, &DeleteParams::background())
            .await
            .expect("delete");
        let result = eventually(WAIT, "the Workload of a deleted object gone", || async {
            self.workload_of(name).await.is_none()
        })
        .await;
        result.expect("the Workload of a deleted object is collected");
    }
}

/// The blocks' Topology, a flavor of the pool, a TAS-only ClusterQueue and its LocalQueue.
async fn create_queues(client: &Client, namespace: &str) {
    let post = PostParams::default();
    let topology: Topology = create(json!({
        "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Topology",
        "metadata": {"name": "blocks"},
        "spec": {"levels": [{"nodeLabel": BLOCK}, {"nodeLabel": RACK}, {"nodeLabel": HOSTNAME}]},
    }));
    Api::<Topology>::all(client.clone())
        .create(&post, &topology)
        .await
        .expect("Topology");
    let flavor: ResourceFlavor = create(json!({
        "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor",
        "metadata": {"name": "blocks"},
        "spec": {"nodeLabels": {POOL.0: POOL.1}, "topologyName": "blocks"},
    }));
    Api::<ResourceFlavor>::all(client.clone())
        .create(&post, &flavor)
        .await
        .expect("ResourceFlavor");
    let cluster_queue: ClusterQueue = create(json!({
        "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue",
        "metadata": {"name": "blocks"},
        "spec": {
            "namespaceSelector": {},
            "resourceGroups": [{
                "coveredResources": ["cpu"],
                "flavors": [{"name": "blocks", "resources": [{"name": "cpu", "nominalQuota": 8}]}],
            }],
        },
    }));
    Api::<ClusterQueue>::all(client.clone())
        .create(&post, &cluster_queue)
        .await
        .expect("ClusterQueue");
    let local_queue: LocalQueue = create(json!({
        "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue",
        "metadata": {"name": QUEUE, "namespace": namespace},
        "spec": {"clusterQueue": "blocks"},
    }));
    Api::<LocalQueue>::namespaced(client.clone(), namespace)
        .create(&post, &local_queue)
        .await
        .expect("LocalQueue");
}

/// The JobSet controller, out of cluster: no certificate management or webhook registration
/// (its webhook server still needs a certificate to start), no metrics or probes.
fn start_jobset_controller(cluster: &TestCluster, dir: &Path) -> PathBuf {
    let plane = cluster.plane();
    let work = plane.dir().join("jobset-controller");
    let certs = work.join("certs");
    kuota::tls::certs::write_dev_certs(&certs, &["127.0.0.1".to_string()]).expect("webhook certs");
    let config = work.join("config.yaml");
    let port = free_port().expect("a free port");
    std::fs::write(
        &config,
        serde_json::to_string(&json!({
            "apiVersion": "config.jobset.x-k8s.io/v1alpha1",
            "kind": "Configuration",
            "internalCertManagement": {"enable": false},
            "webhook": {"port": port, "host": "127.0.0.1", "certDir": certs},
            "metrics": {"bindAddress": "0"},
            "health": {"healthProbeBindAddress": "0"},
            "leaderElection": {"leaderElect": false},
        }))
        .expect("JSON"),
    )
    .expect("write the JobSet config");
    plane
        .run_component(
            "jobset-controller",
            &dir.join("jobset-controller"),
            &[
                format!("--kubeconfig={}", plane.kubeconfig().display()),
                format!("--config={}", config.display()),
            ],
        )
        .expect("start the JobSet controller")
}

/// The KubeRay operator, out of cluster, without webhooks (off unless ENABLE_WEBHOOKS is set),
/// metrics, probes or leader election.
fn start_ray_operator(cluster: &TestCluster, dir: &Path) -> PathBuf {
    let plane = cluster.plane();
    plane
        .run_component(
            "ray-operator",
            &dir.join("ray-operator"),
            &[
                format!("--kubeconfig={}", plane.kubeconfig().display()),
                "--metrics-addr=0".to_string(),
                "--health-probe-bind-address=0".to_string(),
                "--enable-leader-election=false".to_string(),
                "--log-stdout-encoder=console".to_string(),
            ],
        )
        .expect("start the KubeRay operator")
}

fn crd_files(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir.join("crds"))
        .expect("the controller's CRDs")
        .map(|entry| entry.expect("a CRD file").path())
        .collect();
    files.sort();
    files
}

#[tokio::test]
async fn jobset_and_raycluster_pods_run_in_the_blocks_admission_gave_them() {
    let jobset_dir = dev_script("dev/controllers/build.sh", &["jobset"]);
    let kuberay_dir = dev_script("dev/controllers/build.sh", &["kuberay"]);
    let cluster = TestCluster::shared().await;
    let plane = cluster.plane();
    plane
        .install_crds(&kuota::api::crds::all())
        .await
        .expect("Kueue CRDs");
    let mut third_party = crd_files(&jobset_dir);
    third_party.extend(crd_files(&kuberay_dir));
    plane
        .install_crd_files(&third_party)
        .await
        .expect("the JobSet and KubeRay CRDs");
    plane
        .add_nodes(BLOCK_NODES)
        .await
        .expect("the pool of two blocks");
    // Kueue's default configuration integrates Jobs alone.
    let config = plane.dir().join("tas-frameworks-config.yaml");
    std::fs::write(
        &config,
        "apiVersion: config.kueue.x-k8s.io/v1beta2\nkind: Configuration\nintegrations:\n  \
         frameworks: [\"jobset.x-k8s.io/jobset\", \"ray.io/raycluster\"]\n",
    )
    .expect("write the configuration");
    let kuota = plane
        .start_kuota(
            Path::new(env!("CARGO_BIN_EXE_kuota")),
            &["--config", &config.display().to_string()],
        )
        .await
        .expect("kuota serve starts");
    let jobset_log = start_jobset_controller(cluster, &jobset_dir);
    let ray_log = start_ray_operator(cluster, &kuberay_dir);
    let namespace = cluster.namespace().await;
    let client = cluster.client().await;
    create_queues(&client, namespace.name()).await;
    let scenario = Scenario {
        client: client.clone(),
        namespace: namespace.name().to_string(),
        logs: vec![kuota.process.log.clone(), jobset_log, ray_log],
    };

    // Each replicated Job fills a block, so they are placed in different blocks, and their
    // pods run there by rank (copy, then completion index), two per node.
    let jobsets = dynamic_api(
        &client,
        namespace.name(),
        ("jobset.x-k8s.io", "v1alpha2", "JobSet"),
    );
    jobsets
        .create(&PostParams::default(), &jobset(namespace.name()))
        .await
        .expect("create the JobSet");
    let workload = scenario
        .admitted("two-blocks", &["trainer-a", "trainer-b"])
        .await;
    let mut blocks = Vec::new();
    for pod_set in ["trainer-a", "trainer-b"] {
        let given = assignment(&workload, pod_set).expect("an assignment");
        let block = single_block(&given).expect("all of a PodSet in one block");
        assert_eq!(given, whole_block(block), "the assignment of {pod_set}");
        blocks.push(block);
        let expected: BTreeMap<i64, String> = places(&given)
            .into_iter()
            .enumerate()
            .map(|(rank, node)| (rank as i64, node))
            .collect();
        let pods_per_copy = if pod_set == "trainer-a" { 2 } else { 4 };
        let pods = scenario
            .bound_pods(
                &format!("jobset.sigs.k8s.io/replicatedjob-name={pod_set}"),
                4,
            )
            .await;
        // A pod's rank: its copy's number times the pods per copy, plus its index.
        let bound: BTreeMap<i64, String> = pods
            .into_iter()
            .map(|(name, labels, node)| {
                let number = |label: &str| -> i64 {
                    let value = labels.get(label);
                    value
                        .and_then(|value| value.parse().ok())
                        .unwrap_or_else(|| panic!("{name}: no number in label {label}: {value:?}"))
                };
                let rank = number(COPY_LABEL) * pods_per_copy + number(INDEX_LABEL);
                (rank, node)
            })
            .collect();
        assert_eq!(bound, expected, "the nodes of {pod_set}'s pods by rank");
    }
    blocks.sort();
    assert_eq!(blocks, ["b2", "b3"]);
    scenario.delete_and_wait(&jobsets, "two-blocks").await;

    // The workers fill a block; the head, placed implicitly, takes a node of the other. Ray's
    // pods carry no index: they fill their domains in name order.
    let rayclusters = dynamic_api(&client, namespace.name(), ("ray.io", "v1", "RayCluster"));
    rayclusters
        .create(&PostParams::default(), &raycluster(namespace.name()))
        .await
        .expect("create the RayCluster");
    let workload = scenario.admitted("ray", &["head", "workers"]).await;
    let workers = assignment(&workload, "workers").expect("the workers' assignment");
    let workers_block = single_block(&workers).expect("all workers in one block");
    assert_eq!(workers, whole_block(workers_block));
    let head = assignment(&workload, "head").expect("the head's assignment");
    let head_block = single_block(&head).expect("the head in one block");
    assert_ne!(head_block, workers_block);
    for (selector, given) in [
        ("ray.io/group=workers", &workers),
        ("ray.io/node-type=head", &head),
    ] {
        let mut nodes: Vec<String> = scenario
            .bound_pods(
                &format!("ray.io/cluster=ray,{selector}"),
                places(given).len(),
            )
            .await
            .into_iter()
            .map(|(_, _, node)| node)
            .collect();
        nodes.sort();
        let mut expected = places(given);
        expected.sort();
        assert_eq!(nodes, expected, "the nodes of the pods of {selector}");
    }
    scenario.delete_and_wait(&rayclusters, "ray").await;
}
