//! A real Kubernetes control plane for Kuota's tests and local runs: etcd, kube-apiserver,
//! kube-controller-manager, kube-scheduler and kwok (fake nodes that run pods), all compiled
//! from pinned Go modules by `build.sh` and started as ordinary processes on loopback ports;
//! and, for tests whose pods must really run, one [`RealNode`] (kubelet and containerd).
//!
//! Tests use [`TestCluster::shared`] (one control plane per test binary), a fresh
//! [`TestNamespace`] each and [`TestCluster::real_node`] when they need it; `kuota-cluster up`
//! uses [`ControlPlane::start`] directly.
#![forbid(unsafe_code)]

pub mod kueue_runner;
mod pki;
mod process;
mod real_node;

use std::{
    future::Future,
    net::TcpStream,
    path::{Path, PathBuf},
    process::{Command, Output},
    sync::atomic::{AtomicU32, Ordering},
    time::{Duration, Instant},
};

use k8s_openapi::{
    ByteString,
    api::{
        admissionregistration::v1::{
            MutatingWebhookConfiguration, ValidatingWebhookConfiguration, WebhookClientConfig,
        },
        batch::v1::Job,
        core::v1::{Namespace, Node, Service},
        discovery::v1::EndpointSlice,
    },
    apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition,
    kube_aggregator::pkg::apis::apiregistration::v1::APIService,
};
use kube::{
    Api, Client, Resource, ResourceExt,
    api::{DeleteParams, Patch, PatchParams, PostParams},
    config::{KubeConfigOptions, Kubeconfig},
};
use serde_json::json;

pub use process::{Supervised, free_port};
pub use real_node::{
    Footprint, OciImage, PAUSE_IMAGE, REAL_NODE_NAME, REAL_NODE_TAINT, RealNode, oci_image,
};

/// Everything that can go wrong while building or running the control plane.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("io: {0}")]
    Io(#[from] std::io::Error),
    #[error("certificate: {0}")]
    Certificate(#[from] rcgen::Error),
    #[error("kubernetes: {0}")]
    Kube(#[from] kube::Error),
    #[error("kubeconfig: {0}")]
    Kubeconfig(#[from] kube::config::KubeconfigError),
    #[error("json: {0}")]
    Json(#[from] serde_json::Error),
    #[error("yaml: {0}")]
    Yaml(#[from] serde_saphyr::Error),
    #[error("building the control plane failed (dev/cluster/build.sh): {0}")]
    Build(String),
    #[error("{component} did not become ready within {seconds}s; last log lines:\n{log}")]
    NotReady {
        component: String,
        seconds: u64,
        log: String,
    },
    #[error("Kueue's performance runner failed: {0}")]
    Runner(String),
    #[error("the control plane has no component {0}")]
    NoComponent(String),
    #[error("timed out after {0:?} waiting for {1}")]
    Timeout(Duration, String),
    #[error("real node: {0}")]
    Node(String),
}

/// A fake node managed by kwok, with labels that ResourceFlavors can target.
#[derive(Clone, Debug)]
pub struct FakeNode {
    pub name: &'static str,
    pub labels: &'static [(&'static str, &'static str)],
    /// Allocatable resources besides or instead of kwok's defaults (cpu 1k, memory 1Ti, pods 1M).
    pub extended: &'static [(&'static str, &'static str)],
}

/// The node labels of the topology-aware pool, as Kueue's own TAS tests name them.
const TAS_POOL: (&str, &str) = ("cloud.provider.com/node-group", "tas");
const BLOCK: &str = "cloud.provider.com/topology-block";
const RACK: &str = "cloud.provider.com/topology-rack";

/// The nodes every control plane starts with: two CPU pools, a GPU pool, and a topology-aware
/// pool of one block with two racks of two nodes each, rack r1 with room for 4 CPUs, r2 for 3.
pub const NODES: &[FakeNode] = &[
    FakeNode {
        name: "kwok-on-demand-0",
        labels: &[("instance-type", "on-demand")],
        extended: &[],
    },
    FakeNode {
        name: "kwok-spot-0",
        labels: &[("instance-type", "spot")],
        extended: &[],
    },
    FakeNode {
        name: "kwok-gpu-0",
        labels: &[("instance-type", "gpu"), ("nvidia.com/gpu.present", "true")],
        extended: &[("nvidia.com/gpu", "8")],
    },
    FakeNode {
        name: "kwok-tas-r1-0",
        labels: &[TAS_POOL, (BLOCK, "b1"), (RACK, "r1")],
        extended: &[("cpu", "2")],
    },
    FakeNode {
        name: "kwok-tas-r1-1",
        labels: &[TAS_POOL, (BLOCK, "b1"), (RACK, "r1")],
        extended: &[("cpu", "2")],
    },
    FakeNode {
        name: "kwok-tas-r2-0",
        labels: &[TAS_POOL, (BLOCK, "b1"), (RACK, "r2")],
        extended: &[("cpu", "2")],
    },
    FakeNode {
        name: "kwok-tas-r2-1",
        labels: &[TAS_POOL, (BLOCK, "b1"), (RACK, "r2")],
        extended: &[("cpu", "1")],
    },
];

/// Where the API server writes its audit log, under the control plane's directory.
const AUDIT_LOG: &str = "audit.log";

/// Every request made with a ServiceAccount's token, at Metadata level, and the bodies of the
/// Workloads they create (their owner references say which `finalizers` rules were needed).
/// Tests and the bench use the admin's certificate, which is not logged.
const AUDIT_POLICY: &str = r#"apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived"]
rules:
  - level: Request
    userGroups: ["system:serviceaccounts"]
    verbs: ["create"]
    resources: [{group: kueue.x-k8s.io, resources: [workloads]}]
  - level: Metadata
    userGroups: ["system:serviceaccounts"]
  - level: None
"#;

/// A running control plane.
#[derive(Debug)]
pub struct ControlPlane {
    dir: PathBuf,
    bin: PathBuf,
    pki: pki::Pki,
    api_port: u16,
    server: String,
    kubeconfig: PathBuf,
    components: std::sync::Mutex<Vec<process::Supervised>>,
}

/// This crate's directory, `dev/cluster`, in the checkout that cargo runs from (tests, benches
/// and `cargo run` get `CARGO_MANIFEST_DIR` at run time). The path compiled in is a fallback
/// only: a target directory shared between checkouts may hold this crate built from another
/// one, whose path need not exist any more.
pub fn crate_dir() -> PathBuf {
    std::env::var_os("CARGO_MANIFEST_DIR")
        .map(PathBuf::from)
        .and_then(|dir| {
            dir.ancestors()
                .map(|ancestor| ancestor.join("dev/cluster"))
                .find(|candidate| candidate.join("build.sh").is_file())
        })
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")))
}

/// Builds the control plane binaries if the pins changed and returns their directory.
///
/// `KUOTA_CONTROL_PLANE_BIN` may point at an already built directory.
pub fn build() -> Result<PathBuf, Error> {
    if let Some(dir) = std::env::var_os("KUOTA_CONTROL_PLANE_BIN") {
        return Ok(PathBuf::from(dir));
    }
    let script = crate_dir().join("build.sh");
    let output = Command::new("bash")
        .arg(&script)
        .stderr(std::process::Stdio::inherit())
        .output()?;
    let stdout = String::from_utf8_lossy(&output.stdout);
    if !output.status.success() {
        return Err(Error::Build(format!(
            "{} exited with {}",
            script.display(),
            output.status
        )));
    }
    let dir = stdout.lines().last().unwrap_or_default().trim();
    Ok(PathBuf::from(dir))
}

impl ControlPlane {
    /// Builds (cached) and starts a control plane whose state lives in `dir`.
    pub async fn start(dir: &Path) -> Result<Self, Error> {
        let bin = build()?;
        std::fs::create_dir_all(dir)?;
        let dir = dir.canonicalize()?;
        let pki = pki::write(&dir.join("pki"))?;
        let (etcd_port, peer_port, api_port, scheduler_port) =
            (free_port()?, free_port()?, free_port()?, free_port()?);
        let server = format!("https://127.0.0.1:{api_port}");
        let kubeconfig = dir.join("kubeconfig");
        std::fs::write(&kubeconfig, pki::kubeconfig(&pki, &server)?)?;

        let mut plane = Self {
            dir: dir.clone(),
            bin: bin.clone(),
            pki: pki.clone(),
            api_port,
            server,
            kubeconfig: kubeconfig.clone(),
            components: std::sync::Mutex::new(Vec::new()),
        };
        let etcd_url = format!("http://127.0.0.1:{etcd_port}");
        let peer_url = format!("http://127.0.0.1:{peer_port}");
        plane.spawn(
            "etcd",
            &[
                "--name=kuota".into(),
                format!("--data-dir={}", dir.join("etcd").display()),
                format!("--listen-client-urls={etcd_url}"),
                format!("--advertise-client-urls={etcd_url}"),
                format!("--listen-peer-urls={peer_url}"),
                format!("--initial-advertise-peer-urls={peer_url}"),
                format!("--initial-cluster=kuota={peer_url}"),
                "--unsafe-no-fsync=true".into(),
                "--log-level=warn".into(),
            ],
        )?;
        plane
            .wait_ready("etcd", Duration::from_secs(60), || async move {
                http_get_ok(etcd_port, "/health")
            })
            .await?;

        let p = |path: &Path| path.display().to_string();
        let audit_policy = dir.join("audit-policy.yaml");
        std::fs::write(&audit_policy, AUDIT_POLICY)?;
        plane.spawn(
            "kube-apiserver",
            &[
                format!("--etcd-servers={etcd_url}"),
                format!("--secure-port={api_port}"),
                "--bind-address=127.0.0.1".into(),
                "--advertise-address=127.0.0.1".into(),
                "--endpoint-reconciler-type=none".into(),
                format!("--cert-dir={}", dir.join("pki").display()),
                format!("--tls-cert-file={}", p(&pki.serving_cert)),
                format!("--tls-private-key-file={}", p(&pki.serving_key)),
                format!("--client-ca-file={}", p(&pki.ca_cert)),
                format!("--service-account-key-file={}", p(&pki.sa_public_key)),
                format!(
                    "--service-account-signing-key-file={}",
                    p(&pki.sa_private_key)
                ),
                format!("--service-account-issuer=https://127.0.0.1:{api_port}/"),
                "--service-cluster-ip-range=10.96.0.0/16".into(),
                "--authorization-mode=RBAC".into(),
                // What in-cluster controllers call, for tests that hold their RBAC to it.
                format!("--audit-policy-file={}", p(&audit_policy)),
                format!("--audit-log-path={}", p(&dir.join(AUDIT_LOG))),
                // Kuota's owner references block the owner's deletion, which this plugin allows
                // only with `update` on the owner's `finalizers` subresource, as on clusters
                // that enable it.
                "--enable-admission-plugins=OwnerReferencesPermissionEnforcement".into(),
                // kwok nodes are created Ready; the not-ready taint would only delay them.
                "--disable-admission-plugins=TaintNodesByCondition".into(),
                // Webhooks and aggregated APIs behind a Service are dialled at a pod's IP, which
                // the host reaches over the real node's bridge.
                "--enable-aggregator-routing=true".into(),
                // The aggregator's identity towards aggregated API servers (the visibility
                // API), published in kube-system/extension-apiserver-authentication.
                format!(
                    "--requestheader-client-ca-file={}",
                    p(&pki.front_proxy_ca_cert)
                ),
                format!("--requestheader-allowed-names={}", pki::FRONT_PROXY_CLIENT),
                "--requestheader-username-headers=X-Remote-User".into(),
                "--requestheader-group-headers=X-Remote-Group".into(),
                "--requestheader-extra-headers-prefix=X-Remote-Extra-".into(),
                format!(
                    "--proxy-client-cert-file={}",
                    p(&pki.front_proxy_client_cert)
                ),
                format!("--proxy-client-key-file={}", p(&pki.front_proxy_client_key)),
                // For logs and exec on the real node, whose kubelet trusts our CA.
                format!("--kubelet-client-certificate={}", p(&pki.admin_cert)),
                format!("--kubelet-client-key={}", p(&pki.admin_key)),
                "--kubelet-preferred-address-types=InternalIP".into(),
                "--allow-privileged=true".into(),
                "--profiling=false".into(),
            ],
        )?;
        let client = plane.client().await?;
        plane
            .wait_ready("kube-apiserver", Duration::from_secs(120), || {
                let client = client.clone();
                async move { api_ready(&client).await }
            })
            .await?;

        let kc = format!("--kubeconfig={}", kubeconfig.display());
        plane.spawn(
            "kube-controller-manager",
            &[
                kc.clone(),
                "--leader-elect=false".into(),
                // Jobs for kwok; Deployments, Service endpoints and service-account tokens for
                // pods on the real node.
                "--controllers=job-controller,garbage-collector-controller,namespace-controller,ttl-after-finished-controller,deployment-controller,replicaset-controller,endpoints-controller,endpointslice-controller,serviceaccount-controller,root-ca-certificate-publisher-controller".into(),
                format!("--root-ca-file={}", pki.ca_cert.display()),
                "--bind-address=127.0.0.1".into(),
                "--secure-port=0".into(),
                "--concurrent-job-syncs=10".into(),
            ],
        )?;
        plane.spawn(
            "kube-scheduler",
            &[
                kc.clone(),
                "--leader-elect=false".into(),
                "--bind-address=127.0.0.1".into(),
                format!("--secure-port={scheduler_port}"),
            ],
        )?;
        let stages = write_kwok_stages(&bin, &dir)?;
        plane.spawn(
            "kwok",
            &[
                kc,
                // Only the fake nodes: the real node's kubelet reports its own status.
                "--manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake".into(),
                format!("--config={}", stages.display()),
                "--cidr=10.244.0.0/16".into(),
                "--node-ip=10.0.0.1".into(),
            ],
        )?;
        create_nodes(&client, NODES).await?;
        let nodes: Api<Node> = Api::all(client.clone());
        plane
            .wait_ready("kwok", Duration::from_secs(60), || {
                let nodes = nodes.clone();
                async move {
                    let Ok(list) = nodes.list(&Default::default()).await else {
                        return false;
                    };
                    list.items.len() == NODES.len() && list.items.iter().all(node_is_ready)
                }
            })
            .await?;
        Ok(plane)
    }

    fn spawn(&mut self, component: &str, args: &[String]) -> Result<(), Error> {
        let log = self.dir.join(format!("{component}.log"));
        let child = process::Supervised::spawn(component, &self.bin.join(component), args, &log)?;
        self.lock_components().push(child);
        Ok(())
    }

    fn lock_components(&self) -> std::sync::MutexGuard<'_, Vec<process::Supervised>> {
        self.components
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Kills `component` (`etcd`, `kube-apiserver`, ...) with SIGKILL, as a crash would,
    /// starts it again after `down_for` with the same arguments, and waits until the API
    /// server is ready again; then restarts kwok.
    ///
    /// kwok stands in for the kubelets, and drops a pod's next stage for good when its patch
    /// fails with anything but a refused connection, a timeout, 503 or 429; a restarted etcd
    /// makes the API server answer 500 for a moment, and a pod then stays running forever. A
    /// kubelet syncs its pods again; a restarted kwok plays every pod's stage again.
    pub async fn crash_and_restart(
        &self,
        component: &str,
        down_for: Duration,
    ) -> Result<(), Error> {
        self.kill_and_respawn(component, down_for).await?;
        let client = self.client().await?;
        self.wait_ready(component, Duration::from_secs(120), || {
            let client = client.clone();
            async move { api_ready(&client).await }
        })
        .await?;
        self.kill_and_respawn("kwok", Duration::ZERO).await
    }

    async fn kill_and_respawn(&self, component: &str, down_for: Duration) -> Result<(), Error> {
        let index = self
            .lock_components()
            .iter()
            .position(|c| c.name == component)
            .ok_or_else(|| Error::NoComponent(component.to_owned()))?;
        let mut killed = self.lock_components().remove(index);
        killed.kill_hard();
        tokio::time::sleep(down_for).await;
        let restarted = killed.respawn()?;
        self.lock_components().insert(index, restarted);
        Ok(())
    }

    async fn wait_ready<F, Fut>(
        &self,
        component: &str,
        timeout: Duration,
        mut probe: F,
    ) -> Result<(), Error>
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = bool>,
    {
        let deadline = Instant::now() + timeout;
        loop {
            if probe().await {
                return Ok(());
            }
            let exited = self
                .lock_components()
                .iter_mut()
                .find(|c| c.name == component)
                .is_some_and(|c| !c.is_running());
            if exited || Instant::now() > deadline {
                let log = self
                    .lock_components()
                    .iter()
                    .find(|c| c.name == component)
                    .map(|c| c.log_tail(30))
                    .unwrap_or_default();
                return Err(Error::NotReady {
                    component: component.to_string(),
                    seconds: timeout.as_secs(),
                    log,
                });
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }

    /// The apiserver URL, e.g. `https://127.0.0.1:41234`.
    pub fn server(&self) -> &str {
        &self.server
    }

    /// The apiserver's port on loopback.
    pub fn api_port(&self) -> u16 {
        self.api_port
    }

    /// A kubeconfig file for the admin user (`system:masters`).
    pub fn kubeconfig(&self) -> &Path {
        &self.kubeconfig
    }

    /// The directory holding state and component logs.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The API server's audit log: one JSON event per line for each request made with a
    /// ServiceAccount's token.
    pub fn audit_log(&self) -> PathBuf {
        self.dir.join(AUDIT_LOG)
    }

    /// A new client; create one per test, since a client is bound to the runtime that made it.
    pub async fn client(&self) -> Result<Client, Error> {
        client_for(&self.kubeconfig).await
    }

    /// A `kubectl` command (the one built with the control plane) pointed at this cluster.
    pub fn kubectl(&self) -> Command {
        kubectl_command(&self.bin, &self.kubeconfig)
    }

    /// Creates more kwok nodes than [`NODES`] and waits until every node is Ready.
    pub async fn add_nodes(&self, nodes: &[FakeNode]) -> Result<(), Error> {
        let client = self.client().await?;
        create_nodes(&client, nodes).await?;
        let api: Api<Node> = Api::all(client);
        let wanted: Vec<&str> = nodes.iter().map(|node| node.name).collect();
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let list = api.list(&Default::default()).await?;
            let ready = list
                .items
                .iter()
                .filter(|node| wanted.contains(&node.metadata.name.as_deref().unwrap_or_default()))
                .filter(|node| node_is_ready(node))
                .count();
            if ready == wanted.len() {
                return Ok(());
            }
            if Instant::now() > deadline {
                return Err(Error::NotReady {
                    component: format!("kwok nodes {wanted:?}"),
                    seconds: 60,
                    log: String::new(),
                });
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }

    /// Starts `program args...` as one more component of this control plane (a third-party
    /// controller, say), stopped with it; returns the path of its log.
    pub fn run_component(
        &self,
        name: &str,
        program: &Path,
        args: &[String],
    ) -> Result<PathBuf, Error> {
        let log = self.dir.join(format!("{name}.log"));
        let child = process::Supervised::spawn(name, program, args, &log)?;
        self.lock_components().push(child);
        Ok(log)
    }

    /// Server-side applies CRDs and waits until each is Established.
    pub async fn install_crds(&self, crds: &[CustomResourceDefinition]) -> Result<(), Error> {
        let client = self.client().await?;
        let api: Api<CustomResourceDefinition> = Api::all(client);
        let params = PatchParams::apply("kuota-test").force();
        for crd in crds {
            api.patch(&crd.name_any(), &params, &Patch::Apply(crd))
                .await?;
        }
        for crd in crds {
            let name = crd.name_any();
            let api = api.clone();
            eventually(
                Duration::from_secs(30),
                &format!("CRD {name} established"),
                || {
                    let api = api.clone();
                    let name = name.clone();
                    async move {
                        api.get(&name).await.ok().is_some_and(|crd| {
                            crd.status
                                .and_then(|s| s.conditions)
                                .unwrap_or_default()
                                .iter()
                                .any(|c| c.type_ == "Established" && c.status == "True")
                        })
                    }
                },
            )
            .await?;
        }
        Ok(())
    }

    /// Reads CRDs from YAML files (one or more documents each) and installs them.
    pub async fn install_crd_files(&self, paths: &[PathBuf]) -> Result<(), Error> {
        let mut crds = Vec::new();
        for path in paths {
            let text = std::fs::read_to_string(path)?;
            let documents: Vec<serde_json::Value> = serde_saphyr::from_multiple(&text)?;
            for document in documents.into_iter().filter(|document| !document.is_null()) {
                crds.push(serde_json::from_value(document)?);
            }
        }
        self.install_crds(&crds).await
    }

    /// Registers webhook configurations (server-side apply, so re-registering is fine).
    pub async fn register_webhooks(
        &self,
        mutating: Option<&MutatingWebhookConfiguration>,
        validating: Option<&ValidatingWebhookConfiguration>,
    ) -> Result<(), Error> {
        let client = self.client().await?;
        let params = PatchParams::apply("kuota-test").force();
        if let Some(config) = mutating {
            let api: Api<MutatingWebhookConfiguration> = Api::all(client.clone());
            api.patch(&config.name_any(), &params, &Patch::Apply(config))
                .await?;
        }
        if let Some(config) = validating {
            let api: Api<ValidatingWebhookConfiguration> = Api::all(client);
            api.patch(&config.name_any(), &params, &Patch::Apply(config))
                .await?;
        }
        Ok(())
    }

    /// Starts `kuota serve` (the binary at `binary`) out of cluster against this control plane,
    /// without waiting for it. Creates the `kueue-system` namespace it keeps its Lease in.
    pub async fn launch_kuota(
        &self,
        binary: &Path,
        extra_args: &[&str],
    ) -> Result<KuotaProcess, Error> {
        let client = self.client().await?;
        let namespaces: Api<Namespace> = Api::all(client);
        let system: Namespace =
            serde_json::from_value(json!({"metadata": {"name": KUOTA_NAMESPACE}}))?;
        match namespaces.create(&PostParams::default(), &system).await {
            Ok(_) => {}
            Err(kube::Error::Api(status)) if status.code == 409 => {}
            Err(err) => return Err(err.into()),
        }
        let (webhook_port, health_port, metrics_port, visibility_port) =
            (free_port()?, free_port()?, free_port()?, free_port()?);
        let mut args = vec![
            "--kubeconfig".to_string(),
            self.kubeconfig.display().to_string(),
        ];
        args.extend(extra_args.iter().map(|a| a.to_string()));
        args.extend([
            "serve".to_string(),
            "--webhook-url".to_string(),
            format!("https://127.0.0.1:{webhook_port}"),
            "--health-probe-addr".to_string(),
            format!("127.0.0.1:{health_port}"),
            "--metrics-addr".to_string(),
            format!("127.0.0.1:{metrics_port}"),
            // Every address: the API server dials it at the host's own address (see
            // `register_visibility`).
            "--visibility-addr".to_string(),
            format!("0.0.0.0:{visibility_port}"),
            "--namespace".to_string(),
            KUOTA_NAMESPACE.to_string(),
        ]);
        let log = self.dir.join(format!("kuota-{webhook_port}.log"));
        let process = process::Supervised::spawn("kuota", binary, &args, &log)?;
        Ok(KuotaProcess {
            process,
            webhook_port,
            health_port,
            metrics_port,
            visibility_port,
        })
    }

    /// Puts the visibility API of a `kuota serve` listening on `port` of this host behind
    /// the API server's aggregation layer, as the chart does for the pods: the Service
    /// `kueue-visibility-server`, here without a selector and with an EndpointSlice naming this
    /// host's first non-loopback address (the aggregator dials endpoints, and refuses loopback
    /// ones), and the APIServices of both versions, which skip TLS verification as Kueue's do
    /// under internal certificate management.
    pub async fn register_visibility(&self, port: u16) -> Result<(), Error> {
        let client = self.client().await?;
        let host = host_address()?;
        let params = PatchParams::apply("kuota-test").force();
        let service: Service = serde_json::from_value(json!({
            "apiVersion": "v1", "kind": "Service",
            "metadata": {"name": VISIBILITY_SERVICE, "namespace": KUOTA_NAMESPACE},
            "spec": {"ports": [{"name": "https", "port": 443, "targetPort": port}]},
        }))?;
        Api::<Service>::namespaced(client.clone(), KUOTA_NAMESPACE)
            .patch(VISIBILITY_SERVICE, &params, &Patch::Apply(&service))
            .await?;
        let slice: EndpointSlice = serde_json::from_value(json!({
            "apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
            "metadata": {
                "name": VISIBILITY_SERVICE, "namespace": KUOTA_NAMESPACE,
                "labels": {
                    "kubernetes.io/service-name": VISIBILITY_SERVICE,
                    "endpointslice.kubernetes.io/managed-by": "kuota-test",
                },
            },
            "addressType": "IPv4",
            "endpoints": [{"addresses": [host], "conditions": {"ready": true}}],
            "ports": [{"name": "https", "port": port, "protocol": "TCP"}],
        }))?;
        Api::<EndpointSlice>::namespaced(client.clone(), KUOTA_NAMESPACE)
            .patch(VISIBILITY_SERVICE, &params, &Patch::Apply(&slice))
            .await?;
        let services: Api<APIService> = Api::all(client);
        for version in ["v1beta2", "v1beta1"] {
            let name = format!("{version}.visibility.kueue.x-k8s.io");
            let api_service: APIService = serde_json::from_value(json!({
                "apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
                "metadata": {"name": name},
                "spec": {
                    "group": "visibility.kueue.x-k8s.io", "version": version,
                    "groupPriorityMinimum": 100, "versionPriority": 100,
                    "insecureSkipTLSVerify": true,
                    "service": {"name": VISIBILITY_SERVICE, "namespace": KUOTA_NAMESPACE},
                },
            }))?;
            services
                .patch(&name, &params, &Patch::Apply(&api_service))
                .await?;
        }
        Ok(())
    }

    /// Starts `kuota serve` as [`Self::launch_kuota`] does and waits until it is ready.
    pub async fn start_kuota(
        &self,
        binary: &Path,
        extra_args: &[&str],
    ) -> Result<KuotaProcess, Error> {
        let mut kuota = self.launch_kuota(binary, extra_args).await?;
        let deadline = Instant::now() + Duration::from_secs(60);
        while !http_get_ok(kuota.health_port, "/readyz") {
            if !kuota.process.is_running() || Instant::now() > deadline {
                return Err(Error::NotReady {
                    component: "kuota".into(),
                    seconds: 60,
                    log: kuota.process.log_tail(30),
                });
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        Ok(kuota)
    }

    /// Stops every component, newest first, and removes the state directory.
    pub fn stop(self) {
        let components = std::mem::take(&mut *self.lock_components());
        for component in components.into_iter().rev() {
            component.stop(Duration::from_secs(10));
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// The namespace `kuota serve` runs in during tests and local runs.
pub const KUOTA_NAMESPACE: &str = "kueue-system";
/// The Service in front of the visibility API (Kueue's name).
pub const VISIBILITY_SERVICE: &str = "kueue-visibility-server";

/// This host's first IPv4 address outside the loopback range.
fn host_address() -> Result<String, Error> {
    let output = Command::new("ip")
        .args(["-4", "-o", "addr", "show", "scope", "global"])
        .output()?;
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .filter_map(|line| line.split_whitespace().nth(3))
        .filter_map(|cidr| cidr.split('/').next())
        .map(str::to_owned)
        .next()
        .ok_or_else(|| {
            Error::Build(
                "no IPv4 address outside loopback on this host for the visibility API".into(),
            )
        })
}

/// A running `kuota serve`.
#[derive(Debug)]
pub struct KuotaProcess {
    pub process: process::Supervised,
    pub webhook_port: u16,
    pub health_port: u16,
    /// The HTTPS `/metrics` port (bearer token required).
    pub metrics_port: u16,
    /// The visibility API's port, on every address of this host.
    pub visibility_port: u16,
}

impl KuotaProcess {
    /// The log file of the process.
    pub fn log(&self) -> &Path {
        &self.process.log
    }
}

/// A webhook client config that reaches a server on this machine by URL.
pub fn webhook_client(url: &str, ca_pem: &[u8]) -> WebhookClientConfig {
    WebhookClientConfig {
        url: Some(url.to_string()),
        ca_bundle: Some(ByteString(ca_pem.to_vec())),
        service: None,
    }
}

/// One control plane per test binary, started on first use, and its real node once asked for.
pub struct TestCluster {
    plane: ControlPlane,
    real_node: tokio::sync::OnceCell<RealNode>,
}

static SHARED: tokio::sync::OnceCell<TestCluster> = tokio::sync::OnceCell::const_new();
static NAMESPACE_SEQ: AtomicU32 = AtomicU32::new(0);

impl TestCluster {
    /// The control plane of this test binary; the first call builds (cached) and starts it.
    ///
    /// Panics with the reason when it cannot start: a missing toolchain must fail loudly, never skip.
    pub async fn shared() -> &'static TestCluster {
        SHARED
            .get_or_init(|| async {
                let dir =
                    std::env::temp_dir().join(format!("kuota-cluster-{}", std::process::id()));
                let plane = match ControlPlane::start(&dir).await {
                    Ok(plane) => plane,
                    Err(err) => panic!("cannot start the test control plane: {err}"),
                };
                if let Err(err) = process::remove_after_exit(&dir) {
                    panic!("cannot arrange cleanup of {}: {err}", dir.display());
                }
                TestCluster {
                    plane,
                    real_node: tokio::sync::OnceCell::new(),
                }
            })
            .await
    }

    /// The underlying control plane.
    pub fn plane(&self) -> &ControlPlane {
        &self.plane
    }

    /// The cluster's real node; the first call starts it. It runs until the test binary exits,
    /// when its janitor tears it down.
    ///
    /// Panics with the reason when it cannot start, like [`TestCluster::shared`].
    pub async fn real_node(&self) -> &RealNode {
        self.real_node
            .get_or_init(|| async {
                match RealNode::start(&self.plane).await {
                    Ok(node) => node,
                    Err(err) => panic!("cannot start the real node: {err}"),
                }
            })
            .await
    }

    /// A new client for the calling test.
    pub async fn client(&self) -> Client {
        match self.plane.client().await {
            Ok(client) => client,
            Err(err) => panic!("cannot build a client for the test control plane: {err}"),
        }
    }

    /// A `kubectl` command pointed at the cluster.
    pub fn kubectl(&self) -> Command {
        self.plane.kubectl()
    }

    /// A fresh namespace, deleted when the returned guard is dropped.
    pub async fn namespace(&self) -> TestNamespace {
        let seq = NAMESPACE_SEQ.fetch_add(1, Ordering::Relaxed);
        let name = format!("t{}-{seq}", std::process::id());
        let api: Api<Namespace> = Api::all(self.client().await);
        let ns: Namespace = serde_json::from_value(json!({
            "metadata": {"name": name, "labels": {"kuota-test": "true"}}
        }))
        .expect("static namespace object");
        if let Err(err) = api.create(&PostParams::default(), &ns).await {
            panic!("cannot create namespace {name}: {err}");
        }
        TestNamespace {
            name,
            bin: self.plane.bin.clone(),
            kubeconfig: self.plane.kubeconfig.clone(),
        }
    }

    /// Removes [`KEEP_RUNNING_LABEL`] from the pods of Job `job` in `namespace`, so that kwok
    /// completes them.
    pub fn release_keep_running(&self, namespace: &str, job: &str) {
        let out = self
            .kubectl()
            .args([
                "label",
                "pods",
                "-n",
                namespace,
                "-l",
                &format!("batch.kubernetes.io/job-name={job}"),
                &format!("{KEEP_RUNNING_LABEL}-"),
            ])
            .output()
            .expect("kubectl");
        assert_success(&out);
    }
}

/// Asserts that a command (`kubectl`, usually) succeeded; its stderr is the panic message.
#[track_caller]
pub fn assert_success(out: &Output) {
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The Job's `Complete` condition is True.
pub fn job_is_complete(job: &Job) -> bool {
    job.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|cs| {
            cs.iter()
                .any(|c| c.type_ == "Complete" && c.status == "True")
        })
}

/// A namespace that lives as long as the guard.
#[derive(Debug)]
pub struct TestNamespace {
    name: String,
    bin: PathBuf,
    kubeconfig: PathBuf,
}

impl TestNamespace {
    /// The namespace's name.
    pub fn name(&self) -> &str {
        &self.name
    }
}

impl Drop for TestNamespace {
    fn drop(&mut self) {
        // Drop cannot await and the test's runtime may be gone; kubectl runs detached.
        let _ = kubectl_command(&self.bin, &self.kubeconfig)
            .args(["delete", "namespace", &self.name, "--wait=false"])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn();
    }
}

/// Polls `probe` until it returns true, or fails after `timeout` naming `what`.
pub async fn eventually<F, Fut>(timeout: Duration, what: &str, mut probe: F) -> Result<(), Error>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = bool>,
{
    let deadline = Instant::now() + timeout;
    while Instant::now() < deadline {
        if probe().await {
            return Ok(());
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    Err(Error::Timeout(timeout, what.to_string()))
}

/// Deletes an object and ignores "not found".
pub async fn delete_ignoring_missing<K>(api: &Api<K>, name: &str) -> Result<(), Error>
where
    K: Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    match api.delete(name, &DeleteParams::background()).await {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(status)) if status.code == 404 => Ok(()),
        Err(err) => Err(err.into()),
    }
}

async fn client_for(kubeconfig: &Path) -> Result<Client, Error> {
    let config = kube::Config::from_custom_kubeconfig(
        Kubeconfig::read_from(kubeconfig)?,
        &KubeConfigOptions::default(),
    )
    .await?;
    Ok(Client::try_from(config)?)
}

fn kubectl_command(bin: &Path, kubeconfig: &Path) -> Command {
    let mut cmd = Command::new(bin.join("kubectl"));
    cmd.env("KUBECONFIG", kubeconfig);
    cmd
}

async fn api_ready(client: &Client) -> bool {
    let request = http_request("/readyz");
    matches!(client.request_text(request).await, Ok(body) if body.trim() == "ok")
}

fn http_request(path: &str) -> http::Request<Vec<u8>> {
    http::Request::get(path)
        .body(Vec::new())
        .expect("a GET request with a static path is valid")
}

/// A plain HTTP GET on loopback, true on status 200.
fn http_get_ok(port: u16, path: &str) -> bool {
    http_get(port, path).is_some()
}

/// The body of a plain HTTP GET on loopback when the status is 200.
fn http_get(port: u16, path: &str) -> Option<String> {
    use std::io::{Read, Write};
    let mut stream = TcpStream::connect(("127.0.0.1", port)).ok()?;
    let _ = stream.set_read_timeout(Some(Duration::from_secs(2)));
    let request = format!("GET {path} HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n");
    stream.write_all(request.as_bytes()).ok()?;
    let mut response = String::new();
    let _ = stream.read_to_string(&mut response);
    if !(response.starts_with("HTTP/1.0 200") || response.starts_with("HTTP/1.1 200")) {
        return None;
    }
    response
        .split_once("\r\n\r\n")
        .map(|(_, body)| body.to_string())
}

fn write_kwok_stages(bin: &Path, dir: &Path) -> Result<PathBuf, Error> {
    let stages_dir = bin.join("../stages");
    let mut docs = Vec::new();
    let mut entries: Vec<_> = std::fs::read_dir(&stages_dir)?.collect::<Result<_, _>>()?;
    entries.sort_by_key(|e| e.file_name());
    for entry in entries {
        let mut stage = std::fs::read_to_string(entry.path())?;
        if entry.file_name() == "pod-complete.yaml" {
            stage = keep_running_when_labelled(&stage);
        }
        docs.push(stage);
    }
    let path = dir.join("kwok-stages.yaml");
    std::fs::write(&path, docs.join("\n---\n"))?;
    Ok(path)
}

/// Label that keeps a Job's pod Running under kwok until the label is removed, so tests can
/// hold quota for as long as they need.
pub const KEEP_RUNNING_LABEL: &str = "keeprunning";

fn keep_running_when_labelled(stage: &str) -> String {
    let anchor = "    - key: '.metadata.ownerReferences.[].kind'";
    stage.replacen(
        anchor,
        &format!("    - key: '.metadata.labels.{KEEP_RUNNING_LABEL}'\n      operator: 'DoesNotExist'\n{anchor}"),
        1,
    )
}

async fn create_nodes(client: &Client, nodes: &[FakeNode]) -> Result<(), Error> {
    let api: Api<Node> = Api::all(client.clone());
    for node in nodes {
        let mut labels: serde_json::Map<String, serde_json::Value> = node
            .labels
            .iter()
            .map(|(k, v)| (k.to_string(), json!(v)))
            .collect();
        labels.insert("kubernetes.io/hostname".into(), json!(node.name));
        labels.insert("kubernetes.io/os".into(), json!("linux"));
        labels.insert("kubernetes.io/arch".into(), json!("amd64"));
        labels.insert("type".into(), json!("kwok"));
        let mut allocatable = serde_json::Map::from_iter([
            ("cpu".to_string(), json!("1k")),
            ("memory".to_string(), json!("1Ti")),
            ("pods".to_string(), json!("1M")),
        ]);
        for (name, value) in node.extended {
            allocatable.insert(name.to_string(), json!(value));
        }
        let object: Node = serde_json::from_value(json!({
            "metadata": {
                "name": node.name,
                "labels": labels,
                "annotations": {"node.alpha.kubernetes.io/ttl": "0", "kwok.x-k8s.io/node": "fake"},
            },
            "status": {"allocatable": allocatable, "capacity": allocatable},
        }))?;
        api.create(&PostParams::default(), &object).await?;
        // Node status is dropped on create; set it through the status subresource.
        api.patch_status(
            node.name,
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {"allocatable": allocatable, "capacity": allocatable}})),
        )
        .await?;
    }
    Ok(())
}

fn node_is_ready(node: &Node) -> bool {
    node.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|cs| cs.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
}
