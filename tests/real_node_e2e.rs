//! The test cluster's real node: a Deployment of our pause image really runs there (a container
//! in the node's containerd, a pod IP on its bridge that the host reaches, the pod's
//! service-account token accepted by the apiserver through the `kubernetes` Service from inside
//! the pod and from the host, its logs served by kubelet), and stopping the node, or killing the
//! test process that runs it, leaves nothing on the machine.

use std::{
    net::{Ipv4Addr, TcpStream},
    path::{Path, PathBuf},
    process::{Command, Stdio},
    time::{Duration, Instant},
};

use k8s_openapi::api::{
    apps::v1::Deployment,
    core::v1::{Pod, Service},
};
use kube::{
    Api, Client,
    api::{ListParams, PostParams},
};
use kuota_cluster::{
    Footprint, OciImage, REAL_NODE_NAME, REAL_NODE_TAINT, RealNode, TestCluster, eventually,
    oci_image,
};
use serde_json::json;

/// Set in the child process of the kill test: where to write that its node is up.
const READY_FILE_ENV: &str = "KUOTA_REAL_NODE_READY_FILE";
/// The image the Deployment runs: our pause program again, written by `oci_image` (the sandbox
/// uses the one `build.sh` wrote) under another path and user, so the test sees both took.
const E2E_IMAGE: &str = "kuota.dev/e2e-pause:1";
const E2E_ENTRYPOINT: &str = "/bin/e2e-pause";
const E2E_USER: u32 = 65532;

/// Writes the Deployment's image with `oci_image` and imports it into the node's containerd.
fn import_e2e_image(node: &RealNode) {
    let bin = kuota_cluster::build().expect("control plane binaries");
    let dir = tempfile::tempdir().expect("temp dir");
    let tarball = dir.path().join("e2e-pause.tar");
    let image = OciImage {
        name: E2E_IMAGE.into(),
        files: vec![(bin.join("pause"), E2E_ENTRYPOINT.into())],
        entrypoint: E2E_ENTRYPOINT.into(),
        user: E2E_USER.to_string(),
        ports: vec!["8080/tcp".into()],
    };
    oci_image(&image, &tarball).expect("oci_image writes the image");
    node.import_image(&tarball).expect("the image imports");
}

fn pause_deployment() -> Deployment {
    serde_json::from_value(json!({
        "metadata": {"name": "pause"},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"app": "pause"}},
            "template": {
                "metadata": {"labels": {"app": "pause"}},
                "spec": {
                    "nodeSelector": {REAL_NODE_TAINT: "true"},
                    "tolerations": [{"key": REAL_NODE_TAINT, "operator": "Exists", "effect": "NoSchedule"}],
                    "terminationGracePeriodSeconds": 1,
                    "containers": [{"name": "pause", "image": E2E_IMAGE, "imagePullPolicy": "Never"}],
                },
            },
        },
    }))
    .expect("static deployment")
}

/// Creates the pause Deployment in `namespace` and returns its pod once the Deployment is 1/1.
async fn run_pause_deployment(client: &Client, namespace: &str) -> Pod {
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), namespace);
    deployments
        .create(&PostParams::default(), &pause_deployment())
        .await
        .expect("create deployment");
    eventually(
        Duration::from_secs(120),
        "deployment pause 1/1 ready",
        || {
            let deployments = deployments.clone();
            async move {
                deployments.get("pause").await.ok().is_some_and(|d| {
                    d.status
                        .is_some_and(|s| s.ready_replicas == Some(1) && s.replicas == Some(1))
                })
            }
        },
    )
    .await
    .expect("the deployment becomes ready");
    let pods: Api<Pod> = Api::namespaced(client.clone(), namespace);
    let mut list = pods
        .list(&ListParams::default().labels("app=pause"))
        .await
        .expect("list pods");
    assert_eq!(list.items.len(), 1, "one pod of the deployment");
    list.items.remove(0)
}

/// The pid, on this machine, of the task `container_id` in the node's containerd, which must be
/// RUNNING.
fn running_task_pid(node: &RealNode, container_id: &str) -> u32 {
    let out = node.ctr().args(["tasks", "ls"]).output().expect("ctr");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let tasks = String::from_utf8_lossy(&out.stdout);
    let row: Vec<&str> = tasks
        .lines()
        .map(|l| l.split_whitespace().collect::<Vec<_>>())
        .find(|cols| cols.first() == Some(&container_id))
        .unwrap_or_else(|| panic!("task {container_id} in\n{tasks}"));
    assert_eq!(row[2], "RUNNING", "{tasks}");
    row[1].parse().expect("task pid")
}

/// `kubectl auth whoami` with `token` against the `kubernetes` Service's ClusterIP, run inside
/// the network namespace of process `netns_of` when given.
fn whoami_through_cluster_ip(
    kubectl: &Path,
    ca: &Path,
    token: &str,
    netns_of: Option<u32>,
) -> String {
    let mut cmd = match netns_of {
        Some(pid) => {
            let mut cmd = Command::new("nsenter");
            cmd.arg(format!("--net=/proc/{pid}/ns/net")).arg(kubectl);
            cmd
        }
        None => Command::new(kubectl),
    };
    let out = cmd
        .env_remove("KUBECONFIG")
        .arg("--server=https://10.96.0.1:443")
        .arg(format!("--certificate-authority={}", ca.display()))
        .arg(format!("--token={token}"))
        .args([
            "auth",
            "whoami",
            "-o",
            "jsonpath={.status.userInfo.username}",
        ])
        .output()
        .expect("kubectl");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn command_output(cmd: &mut Command) -> String {
    let out = cmd.output().expect("command runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn kubectl_path(cluster: &TestCluster) -> PathBuf {
    PathBuf::from(cluster.kubectl().get_program())
}

#[tokio::test]
async fn a_deployment_of_the_pause_image_runs_on_the_real_node_and_stopping_leaves_nothing() {
    let cluster = TestCluster::shared().await;
    let node = RealNode::start(cluster.plane())
        .await
        .expect("the real node starts");
    import_e2e_image(&node);
    let ns = cluster.namespace().await;
    let client = cluster.client().await;
    let pod = run_pause_deployment(&client, ns.name()).await;

    let spec = pod.spec.as_ref().expect("pod spec");
    assert_eq!(spec.node_name.as_deref(), Some(REAL_NODE_NAME));
    let status = pod.status.as_ref().expect("pod status");
    assert_eq!(status.phase.as_deref(), Some("Running"));
    let pod_ip: Ipv4Addr = status
        .pod_ip
        .as_deref()
        .expect("a pod IP")
        .parse()
        .expect("an IPv4 pod IP");
    assert_eq!(
        pod_ip.octets()[..3],
        [10, 88, 0],
        "pod IP {pod_ip} on the bridge's subnet"
    );
    let container = &status
        .container_statuses
        .as_ref()
        .expect("container statuses")[0];
    assert!(container.ready, "container ready");
    assert!(
        container
            .state
            .as_ref()
            .and_then(|s| s.running.as_ref())
            .is_some()
    );
    let container_id = container
        .container_id
        .as_deref()
        .and_then(|id| id.strip_prefix("containerd://"))
        .expect("a containerd container id");

    let pid = running_task_pid(&node, container_id);
    let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).expect("the container's process");
    assert_eq!(
        cmdline,
        format!("{E2E_ENTRYPOINT}\0").as_bytes(),
        "the container runs the image's entrypoint"
    );
    let proc_status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("status");
    let uids = proc_status
        .lines()
        .find(|l| l.starts_with("Uid:"))
        .expect("Uid line");
    let user = E2E_USER.to_string();
    assert_eq!(
        uids.split_whitespace().skip(1).collect::<Vec<_>>(),
        [user.as_str(); 4],
        "real, effective, saved and filesystem uid: the image's user"
    );
    let own_netns = std::fs::read_link("/proc/self/ns/net").expect("own netns");
    let pod_netns = std::fs::read_link(format!("/proc/{pid}/ns/net")).expect("pod netns");
    assert_ne!(
        own_netns, pod_netns,
        "the pod has its own network namespace"
    );

    // The service-account token kubelet mounted, seen from inside the container.
    let secrets = format!("/proc/{pid}/root/var/run/secrets/kubernetes.io/serviceaccount");
    let token = std::fs::read_to_string(format!("{secrets}/token")).expect("mounted token");
    let ca = PathBuf::from(format!("{secrets}/ca.crt"));
    let expected = format!("system:serviceaccount:{}:default", ns.name());
    let kubectl = kubectl_path(cluster);
    assert_eq!(
        whoami_through_cluster_ip(&kubectl, &ca, &token, Some(pid)),
        expected,
        "from the pod, through the kubernetes Service"
    );
    assert_eq!(
        whoami_through_cluster_ip(&kubectl, &ca, &token, None),
        expected,
        "from the host, through the kubernetes Service"
    );
    // The host reaches the pod over the bridge: nothing listens on port 80, so the pod's own
    // network stack refuses (a drop or a wrong route would time out instead).
    let refused = TcpStream::connect_timeout(&(pod_ip, 80).into(), Duration::from_secs(5))
        .expect_err("nothing listens in the pod");
    assert_eq!(
        refused.kind(),
        std::io::ErrorKind::ConnectionRefused,
        "{refused}"
    );
    // Pod traffic cannot leave the machine: forwarding through the default route's interface
    // is dropped both ways, in mangle (before filter, where kube-proxy's rules are).
    let routes = command_output(Command::new("ip").args(["-o", "route", "show", "default"]));
    let uplink = routes
        .split_whitespace()
        .skip_while(|w| *w != "dev")
        .nth(1)
        .expect("a default route");
    let forward = command_output(Command::new("iptables").args(["-t", "mangle", "-S", "FORWARD"]));
    let comment = "\"kuota-real-node: pod traffic stays on this machine\"";
    assert_eq!(
        forward.lines().skip(1).collect::<Vec<_>>(),
        [
            format!("-A FORWARD -o {uplink} -m comment --comment {comment} -j DROP"),
            format!("-A FORWARD -i {uplink} -m comment --comment {comment} -j DROP"),
        ],
        "{forward}"
    );
    // The apiserver reaches the node's kubelet (logs, exec).
    let logs = cluster
        .kubectl()
        .args(["logs", "-n", ns.name(), "deployment/pause"])
        .output()
        .expect("kubectl logs");
    assert!(
        logs.status.success(),
        "{}",
        String::from_utf8_lossy(&logs.stderr)
    );
    assert_eq!(logs.stdout, b"", "the pause program writes nothing");
    let services: Api<Service> = Api::namespaced(client.clone(), "default");
    let kubernetes = services
        .get("kubernetes")
        .await
        .expect("kubernetes service");
    assert_eq!(
        kubernetes.spec.and_then(|s| s.cluster_ip).as_deref(),
        Some("10.96.0.1")
    );

    let footprint = node.footprint().expect("footprint");
    assert_eq!(
        footprint.netns().len(),
        1,
        "one sandbox: {:?}",
        footprint.netns()
    );
    assert_eq!(footprint.shim_sockets().len(), 1, "one shim for the pod");
    node.stop().expect("the real node stops");
    assert_eq!(footprint.leftovers(), Vec::<String>::new());
    assert!(
        !Path::new(&format!("/proc/{pid}")).exists(),
        "container process gone"
    );
}

/// Run only as the child of the kill test: starts the real node, reports, and waits to be killed.
#[tokio::test]
#[ignore = "run by a_killed_test_process_leaves_nothing_of_its_real_node"]
async fn real_node_held_until_killed() {
    let ready_file = std::env::var(READY_FILE_ENV).expect("run by the kill test");
    let cluster = TestCluster::shared().await;
    import_e2e_image(cluster.real_node().await);
    let ns = cluster.namespace().await;
    run_pause_deployment(&cluster.client().await, ns.name()).await;
    std::fs::write(&ready_file, std::process::id().to_string()).expect("ready file");
    tokio::time::sleep(Duration::from_secs(600)).await;
}

#[tokio::test]
async fn a_killed_test_process_leaves_nothing_of_its_real_node() {
    let ready_file = tempfile::NamedTempFile::new().expect("temp file");
    let mut child = Command::new(std::env::current_exe().expect("test binary"))
        .args(["--exact", "real_node_held_until_killed", "--ignored"])
        .env(READY_FILE_ENV, ready_file.path())
        .stdout(Stdio::null())
        .spawn()
        .expect("child test process");
    // The child waits for the node lock while the other test's node runs.
    let deadline = Instant::now() + Duration::from_secs(600);
    let owner: u32 = loop {
        if let Ok(pid) = std::fs::read_to_string(ready_file.path())
            .map(|p| p.trim().to_string())
            .and_then(|p| p.parse().map_err(std::io::Error::other))
        {
            break pid;
        }
        assert!(
            child.try_wait().expect("child status").is_none(),
            "the child test exited before its node was up"
        );
        assert!(
            Instant::now() < deadline,
            "the child's node was not up in time"
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    };
    let footprint = Footprint::of(owner).expect("the child's footprint");
    assert_eq!(
        footprint.netns().len(),
        1,
        "one sandbox: {:?}",
        footprint.netns()
    );
    assert_eq!(footprint.shim_sockets().len(), 1, "one shim for the pod");
    assert!(
        !footprint.leftovers().is_empty(),
        "the node runs before the kill"
    );

    child.kill().expect("SIGKILL the child");
    child.wait().expect("reap the child");
    eventually(
        Duration::from_secs(90),
        "the janitor's teardown",
        || async { footprint.leftovers().is_empty() },
    )
    .await
    .unwrap_or_else(|_| panic!("left after the kill: {:#?}", footprint.leftovers()));
}
