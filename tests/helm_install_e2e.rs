//! The source document's install steps with Kuota's chart, on the test control plane with a real
//! node: `helm install` with the document's `values.yaml`, the controller really running in a
//! pod, queues and jobs admitted through the in-cluster webhook, then `helm uninstall` and the
//! namespace deleted, leaving nothing of Kuota behind.
//!
//! Only the chart reference changes from the document, plus a second values file that places
//! the controller on the real node and runs the locally built image (there is no registry).

mod common {
    pub mod dev_tools;
}

use std::path::Path;
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::batch::v1::Job;
use kube::Api;
use kube::api::ListParams;
use kuota_cluster::{REAL_NODE_TAINT, TestCluster, assert_success, eventually, job_is_complete};
use pretty_assertions::assert_eq;

use common::dev_tools::dev_script;

const WAIT: Duration = Duration::from_secs(180);

/// The image `dev/image/build.sh` writes, as a pod names it.
const IMAGE_REPOSITORY: &str = "kuota";
const IMAGE_TAG: &str = "dev";

fn repo(relative: &str) -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(relative)
}

/// Runs `command` and returns its output, printing it as a user would see it.
fn run(command: &mut Command) -> Output {
    let output = command.output().expect("run a command");
    eprintln!(
        "$ {command:?}\n{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    output
}

fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// Prints what `kubectl` says with `what`, and the controller's log, then fails with `error`.
fn fail_with(
    kubectl: &impl Fn(&[&str]) -> Output,
    what: &[&str],
    error: impl std::fmt::Display,
) -> ! {
    kubectl(what);
    kubectl(&[
        "logs",
        "-n",
        "kueue-system",
        "deploy/kueue-controller-manager",
    ]);
    panic!("{error}")
}

/// Values that put the controller on the real node with the image imported there.
fn placement_values(dir: &Path) -> std::path::PathBuf {
    let path = dir.join("placement.yaml");
    std::fs::write(
        &path,
        format!(
            "controllerManager:\n\
             \x20 manager:\n\
             \x20   image: {{repository: {IMAGE_REPOSITORY}, tag: {IMAGE_TAG}, pullPolicy: Never}}\n\
             \x20 nodeSelector: {{{REAL_NODE_TAINT}: \"true\"}}\n\
             \x20 tolerations:\n\
             \x20 - {{key: {REAL_NODE_TAINT}, operator: Equal, value: \"true\", effect: NoSchedule}}\n"
        ),
    )
    .expect("write the placement values");
    path
}

#[tokio::test]
async fn the_source_documents_install_steps_run_kuota_in_a_pod() {
    let cluster = TestCluster::shared().await;
    let node = cluster.real_node().await;
    let image = dev_script("dev/image/build.sh", &[]);
    node.import_image(&image).expect("import the kuota image");
    let helm = dev_script("dev/helm/build.sh", &[]);
    let kubeconfig = cluster.plane().kubeconfig().to_owned();
    let helm = |args: &[&str]| {
        let mut command = Command::new(&helm);
        command.env("KUBECONFIG", &kubeconfig).args(args);
        run(&mut command)
    };
    let kubectl = |args: &[&str]| run(cluster.kubectl().args(args));

    let dir = tempfile::tempdir().expect("a temporary directory");
    let values = repo("tests/data/chart/source-document-values.yaml");
    let placement = placement_values(dir.path());
    let chart = repo("charts/kuota");
    let started = Instant::now();
    assert_success(&helm(&[
        "install",
        "kueue",
        chart.to_str().expect("UTF-8"),
        "--create-namespace",
        "--namespace=kueue-system",
        "--values",
        values.to_str().expect("UTF-8"),
        "--values",
        placement.to_str().expect("UTF-8"),
    ]));

    let list = helm(&["list", "--namespace", "kueue-system"]);
    assert_success(&list);
    let release = stdout(&list);
    let row: Vec<&str> = release
        .lines()
        .nth(1)
        .expect("the release's row")
        .split('\t')
        .map(str::trim)
        .collect();
    assert_eq!(
        (row[0], row[1], row[4]),
        ("kueue", "kueue-system", "deployed")
    );

    let client = cluster.client().await;
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), "kueue-system");
    eventually(WAIT, "kueue-controller-manager is ready", || async {
        deployments
            .get("kueue-controller-manager")
            .await
            .ok()
            .and_then(|d| d.status)
            .and_then(|s| s.ready_replicas)
            == Some(1)
    })
    .await
    .unwrap_or_else(|error| {
        fail_with(&kubectl, &["describe", "pods", "-n", "kueue-system"], error)
    });
    let ready_after = started.elapsed();
    let deploy = kubectl(&["get", "deploy", "-n", "kueue-system"]);
    assert_success(&deploy);
    let deploy = stdout(&deploy);
    let columns: Vec<&str> = deploy
        .lines()
        .nth(1)
        .expect("the Deployment's row")
        .split_whitespace()
        .collect();
    assert_eq!(&columns[..2], ["kueue-controller-manager", "1/1"]);

    let crds = kubectl(&["get", "crds"]);
    assert_success(&crds);
    assert_eq!(
        stdout(&crds)
            .lines()
            .filter(|line| line.contains("kueue"))
            .count(),
        11
    );

    // The samples: namespaces, flavors, two teams' queues in a cohort, and their Jobs.
    for sample in [
        "00-namespaces.yaml",
        "10-resourceflavors.yaml",
        "20-clusterqueues.yaml",
        "30-localqueues.yaml",
    ] {
        let path = repo(&format!("manifests/samples/{sample}"));
        assert_success(&kubectl(&[
            "apply",
            "--server-side",
            "-f",
            path.to_str().expect("UTF-8"),
        ]));
    }
    let jobs_file = repo("manifests/samples/40-jobs.yaml");
    let created = kubectl(&["create", "-f", jobs_file.to_str().expect("UTF-8")]);
    assert_success(&created);
    let jobs: Api<Job> = Api::all(client.clone());
    let jobs_created = Instant::now();
    eventually(WAIT, "every sample Job completes", || async {
        jobs.list(&ListParams::default().labels("kueue.x-k8s.io/queue-name"))
            .await
            .is_ok_and(|list| !list.items.is_empty() && list.items.iter().all(job_is_complete))
    })
    .await
    .unwrap_or_else(|error| fail_with(&kubectl, &["get", "workloads", "-A"], error));
    eprintln!(
        "helm install to ready: {:.1}s; sample jobs created to all complete: {:.1}s",
        ready_after.as_secs_f64(),
        jobs_created.elapsed().as_secs_f64()
    );

    let missing = kubectl(&[
        "create",
        "job",
        "lost",
        "-n",
        "team-a",
        "--image=busybox",
        "--dry-run=client",
        "-o",
        "yaml",
    ]);
    assert_success(&missing);
    let manifest = stdout(&missing).replacen(
        "metadata:\n",
        "metadata:\n  labels:\n    kueue.x-k8s.io/queue-name: no-such-queue\n",
        1,
    );
    let mut child = cluster
        .kubectl()
        .args(["create", "-f", "-"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("run kubectl create");
    std::io::Write::write_all(child.stdin.as_mut().expect("stdin"), manifest.as_bytes())
        .expect("write the Job");
    let refused = child.wait_with_output().expect("kubectl create");
    assert!(!refused.status.success());
    assert_eq!(
        String::from_utf8_lossy(&refused.stderr).trim(),
        r#"Error from server (Forbidden): error when creating "STDIN": admission webhook "vjob.kb.io" denied the request: LocalQueue "no-such-queue" does not exist in namespace "team-a"; LocalQueues in "team-a": team-a"#
    );

    assert_success(&helm(&[
        "uninstall",
        "kueue",
        "--namespace",
        "kueue-system",
    ]));
    assert_success(&kubectl(&[
        "delete",
        "namespace",
        "kueue-system",
        "--wait=true",
    ]));
    for kind in [
        "mutatingwebhookconfigurations",
        "validatingwebhookconfigurations",
        "crds",
        "clusterroles",
        "clusterrolebindings",
    ] {
        let left = kubectl(&["get", kind, "-o", "name"]);
        assert_success(&left);
        let ours: Vec<String> = stdout(&left)
            .lines()
            .filter(|name| name.contains("kueue"))
            .map(str::to_owned)
            .collect();
        assert_eq!(ours, Vec::<String>::new(), "{kind} left after uninstall");
    }
    let rolebinding = kubectl(&[
        "get",
        "rolebinding",
        "-n",
        "kube-system",
        "kueue-visibility-server-auth-reader",
    ]);
    assert!(
        !rolebinding.status.success(),
        "no RoleBinding left in kube-system"
    );
    let after = kubectl(&[
        "create",
        "job",
        "after-uninstall",
        "-n",
        "team-b",
        "--image=busybox",
    ]);
    assert_success(&after);
}
