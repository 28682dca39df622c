//! The generated CRDs on a real kube-apiserver, driven by `kubectl`: they apply server-side,
//! accept Kueue's sample objects and print Kueue's columns.

use std::process::Output;

use kuota_cluster::TestCluster;

fn stdout(out: &Output) -> String {
    assert!(
        out.status.success(),
        "kubectl failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Header words of `kubectl get`, collapsed to single spaces.
fn header(text: &str) -> String {
    text.lines()
        .next()
        .unwrap_or_default()
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
}

/// The row for `name`, collapsed to single spaces.
fn row(text: &str, name: &str) -> String {
    text.lines()
        .find(|l| l.split_whitespace().next() == Some(name))
        .unwrap_or_else(|| panic!("no row {name} in:\n{text}"))
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
}

async fn cluster_with_crds() -> &'static TestCluster {
    let cluster = TestCluster::shared().await;
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/manifests/crds");
    let out = cluster
        .kubectl()
        .args(["apply", "--server-side", "--force-conflicts", "-f", dir])
        .output()
        .expect("run kubectl");
    stdout(&out);
    let out = cluster
        .kubectl()
        .args([
            "wait",
            "--for=condition=Established",
            "--timeout=60s",
            "-f",
            dir,
        ])
        .output()
        .expect("run kubectl");
    stdout(&out);
    cluster
}

fn apply(cluster: &TestCluster, namespace: &str, yaml: &str) -> Output {
    use std::io::Write;
    let mut child = cluster
        .kubectl()
        .args(["apply", "--server-side", "-n", namespace, "-f", "-"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("run kubectl");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(yaml.as_bytes())
        .expect("write manifest");
    child.wait_with_output().expect("kubectl output")
}

#[tokio::test]
async fn all_eleven_crds_are_established_with_both_versions() {
    let cluster = cluster_with_crds().await;
    let out = cluster
        .kubectl()
        .args([
            "get",
            "crds",
            "-o",
            r#"custom-columns=NAME:.metadata.name,VERSIONS:.spec.versions[*].name,STORED:.status.storedVersions[*]"#,
        ])
        .output()
        .expect("run kubectl");
    let text = stdout(&out);
    let kueue: Vec<String> = text
        .lines()
        .filter(|l| l.contains("kueue.x-k8s.io"))
        .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" "))
        .collect();
    let expected: Vec<String> = [
        "admissionchecks",
        "clusterqueues",
        "cohorts",
        "localqueues",
        "multikueueclusters",
        "multikueueconfigs",
        "provisioningrequestconfigs",
        "resourceflavors",
        "topologies",
        "workloadpriorityclasses",
        "workloads",
    ]
    .iter()
    .map(|p| format!("{p}.kueue.x-k8s.io v1beta1,v1beta2 v1beta2"))
    .collect();
    assert_eq!(kueue, expected);
}

#[tokio::test]
async fn kueue_samples_apply_and_print_kueues_columns() {
    let cluster = cluster_with_crds().await;
    let ns = cluster.namespace().await;
    let suffix = ns.name();
    let manifest = format!(
        r#"
apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata:
  name: on-demand-{suffix}
spec:
  nodeLabels:
    instance-type: on-demand
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata:
  name: spot-{suffix}
spec:
  nodeLabels:
    instance-type: spot
  nodeTaints:
  - key: spot
    value: "true"
    effect: NoSchedule
  tolerations:
  - key: spot
    operator: Equal
    value: "true"
    effect: NoSchedule
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata:
  name: cq-{suffix}
spec:
  cohortName: research
  namespaceSelector: {{}}
  resourceGroups:
  - coveredResources: ["cpu", "memory"]
    flavors:
    - name: on-demand-{suffix}
      resources:
      - name: cpu
        nominalQuota: 9
      - name: memory
        nominalQuota: 36Gi
    - name: spot-{suffix}
      resources:
      - name: cpu
        nominalQuota: 18
        borrowingLimit: 2
      - name: memory
        nominalQuota: 72Gi
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata:
  name: user-queue
spec:
  clusterQueue: cq-{suffix}
"#
    );
    let out = apply(cluster, suffix, &manifest);
    stdout(&out);

    let out = cluster
        .kubectl()
        .args(["get", "cq", &format!("cq-{suffix}")])
        .output()
        .expect("kubectl");
    let text = stdout(&out);
    assert_eq!(header(&text), "NAME COHORT PENDING WORKLOADS");
    // No status yet: nothing runs here that writes the counters.
    assert_eq!(
        row(&text, &format!("cq-{suffix}")),
        format!("cq-{suffix} research")
    );

    let out = cluster
        .kubectl()
        .args(["get", "cq", &format!("cq-{suffix}"), "-o", "wide"])
        .output()
        .expect("kubectl");
    assert_eq!(
        header(&stdout(&out)),
        "NAME COHORT STRATEGY PENDING WORKLOADS ADMITTED WORKLOADS"
    );

    let out = cluster
        .kubectl()
        .args(["get", "queues", "-n", suffix])
        .output()
        .expect("kubectl");
    let text = stdout(&out);
    assert_eq!(
        header(&text),
        "NAME CLUSTERQUEUE PENDING WORKLOADS ADMITTED WORKLOADS"
    );
    assert_eq!(row(&text, "user-queue"), format!("user-queue cq-{suffix}"));

    let out = cluster
        .kubectl()
        .args([
            "get",
            "rf",
            &format!("spot-{suffix}"),
            "-o",
            "jsonpath={.spec.nodeTaints[0].effect}",
        ])
        .output()
        .expect("kubectl");
    assert_eq!(stdout(&out), "NoSchedule");

    let out = cluster
        .kubectl()
        .args(["get", "kwl", "-n", suffix])
        .output()
        .expect("kubectl");
    assert!(out.status.success());
    assert_eq!(
        String::from_utf8_lossy(&out.stderr).trim(),
        format!("No resources found in {suffix} namespace.")
    );

    // A v1beta1 ResourceFlavor (same schema in both versions) reads back as v1beta2.
    let v1beta1 = format!(
        r#"
apiVersion: kueue.x-k8s.io/v1beta1
kind: ResourceFlavor
metadata:
  name: legacy-{suffix}
spec:
  nodeLabels:
    instance-type: spot
"#
    );
    let out = apply(cluster, suffix, &v1beta1);
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    stdout(&out);
    assert_eq!(
        stderr.trim(),
        "Warning: This version is deprecated. Use v1beta2 instead."
    );
    let out = cluster
        .kubectl()
        .args([
            "get",
            "resourceflavors.v1beta2.kueue.x-k8s.io",
            &format!("legacy-{suffix}"),
            "-o",
            "jsonpath={.apiVersion} {.spec.nodeLabels.instance-type}",
        ])
        .output()
        .expect("kubectl");
    assert_eq!(stdout(&out), "kueue.x-k8s.io/v1beta2 spot");
}

#[tokio::test]
async fn immutable_cluster_queue_of_a_local_queue_is_enforced_by_the_crd() {
    let cluster = cluster_with_crds().await;
    let ns = cluster.namespace().await;
    let lq = |cq: &str| {
        format!(
            "apiVersion: kueue.x-k8s.io/v1beta2\nkind: LocalQueue\nmetadata:\n  name: q\nspec:\n  clusterQueue: {cq}\n"
        )
    };
    stdout(&apply(cluster, ns.name(), &lq("first")));
    let out = apply(cluster, ns.name(), &lq("second"));
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("spec.clusterQueue: Invalid value: \"string\": field is immutable"),
        "got: {stderr}"
    );
}

#[tokio::test]
async fn quota_objects_with_only_a_name_apply_as_in_kueues_docs() {
    let cluster = cluster_with_crds().await;
    let ns = cluster.namespace().await;
    // What the API server stores for an empty spec: Kueue's defaults, where the kind has any.
    for (kind, plural, spec_path, stored) in [
        ("ResourceFlavor", "resourceflavors", "{.spec}", "{}"),
        ("Cohort", "cohorts", "{.spec}", "{}"),
        (
            "ClusterQueue",
            "clusterqueues",
            "{.spec.queueingStrategy} {.spec.stopPolicy}",
            "BestEffortFIFO None",
        ),
    ] {
        for version in ["v1beta1", "v1beta2"] {
            let name = format!("empty-{version}-{}", ns.name());
            let yaml = format!(
                "apiVersion: kueue.x-k8s.io/{version}\nkind: {kind}\nmetadata:\n  name: {name}\n"
            );
            let out = apply(cluster, ns.name(), &yaml);
            assert!(
                out.status.success(),
                "{kind} {version}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            let out = cluster
                .kubectl()
                .args([
                    "get",
                    &format!("{plural}.{version}.kueue.x-k8s.io"),
                    &name,
                    "-o",
                    &format!("jsonpath={{.metadata.name}} {spec_path}"),
                ])
                .output()
                .expect("kubectl");
            assert_eq!(stdout(&out), format!("{name} {stored}"), "{kind} {version}");
        }
    }
}
