//! A real node for the test control plane: containerd, runc and the CNI plugins from Debian's
//! packages (`node-packages.sh`), kubelet and kube-proxy built with the control plane, and our
//! own pause image, so a pod that tolerates [`REAL_NODE_TAINT`] really runs. kwok nodes keep
//! the job pods.
//!
//! Everything the node changes on the machine is recorded in its state directory before it is
//! changed, and `real-node-teardown.sh` undoes it: [`RealNode::stop`] runs it, and so does a
//! janitor left watching the test process, so a killed test binary leaves nothing behind. One
//! real node runs on the machine at a time (a lock file): they share iptables and the bridge.

use std::{
    fs::File,
    io::{Read, Write},
    net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream},
    path::{Path, PathBuf},
    process::{Child, Command, Stdio},
    sync::{
        Arc,
        atomic::{AtomicBool, Ordering},
    },
    time::{Duration, Instant},
};

use k8s_openapi::api::{
    core::v1::{Endpoints, Node, Service},
    discovery::v1::EndpointSlice,
};
use kube::{
    Api,
    api::{Patch, PatchParams},
};
use serde_json::json;

use crate::{ControlPlane, Error, eventually, free_port, node_is_ready, process::Supervised};

/// The taint (NoSchedule) and label on the real node: only pods that tolerate it land there.
pub const REAL_NODE_TAINT: &str = "kuota.dev/real-node";
/// The real node's name.
pub const REAL_NODE_NAME: &str = "kuota-real-node";
/// The sandbox image every pod on the real node starts with, built by `build.sh`.
pub const PAUSE_IMAGE: &str = "kuota.dev/pause:1";

/// The Linux bridge the CNI plugin attaches pods to, and the pods' subnet on it.
const BRIDGE: &str = "kuota0";
/// The CNI network's name; libcni's result cache (/var/lib/cni/results) is keyed by it.
const CNI_NETWORK: &str = "kuota-real-node";
const GATEWAY: Ipv4Addr = Ipv4Addr::new(10, 88, 0, 1);
const POD_SUBNET: &str = "10.88.0.0/24";
/// Marks the (mangle) FORWARD rules that keep pod traffic on this machine: teardown removes
/// only these.
const RULE_COMMENT: &str = "kuota-real-node: pod traffic stays on this machine";
/// Sysctls that the bridge plugin, kubelet or we change; teardown writes back what they were.
const SYSCTLS: &[&str] = &[
    "net.ipv4.ip_forward",
    "net.bridge.bridge-nf-call-iptables",
    "vm.overcommit_memory",
    "vm.panic_on_oom",
    "kernel.panic",
    "kernel.panic_on_oops",
    "kernel.keys.root_maxkeys",
    "kernel.keys.root_maxbytes",
];
/// Directories outside the state directory that containerd, the CRI or kubelet create when
/// missing; teardown removes those that did not exist before, when empty. Deepest first.
const SHARED_DIRS: &[&str] = &[
    "/run/containerd/s",
    "/run/containerd",
    "/var/run/netns",
    "/var/log/containers",
    "/var/lib/cni/results",
    "/var/lib/cni",
    "/var/lib/kubelet/device-plugins",
    "/var/lib/kubelet",
];
/// kubelet's device-plugin socket, at a fixed path whatever its root directory.
const KUBELET_DEVICE_PLUGIN_SOCKET: &str = "/var/lib/kubelet/device-plugins/kubelet.sock";
const PACKAGES_HINT: &str = "run dev/cluster/node-packages.sh as root";

/// A running real node, joined to a [`ControlPlane`].
#[derive(Debug)]
pub struct RealNode {
    dir: PathBuf,
    socket: PathBuf,
    bin: PathBuf,
    components: Vec<Supervised>,
    janitor: Child,
    relay_stop: Arc<AtomicBool>,
    relay_addr: SocketAddr,
    stopped: bool,
    _lock: File,
}

impl Drop for RealNode {
    fn drop(&mut self) {
        let _ = self.teardown();
    }
}

impl RealNode {
    /// Starts containerd, kubelet and kube-proxy and waits until the node is Ready.
    ///
    /// Waits (up to 15 minutes) while another real node runs on this machine; first tears down
    /// what a real node of a process that no longer exists left behind.
    pub async fn start(plane: &ControlPlane) -> Result<Self, Error> {
        check_prerequisites()?;
        let lock = lock_machine().await?;
        sweep_stale_nodes()?;

        let dir = state_dir(std::process::id());
        std::fs::create_dir_all(&dir)?;
        let socket = dir.join("containerd.sock");
        let cgroup_root = cgroup_root(std::process::id());
        let uplink = default_route_interface()?;
        record_state(&dir, &plane.bin, &socket, &uplink, &cgroup_root)?;
        // From here on every change is undone even if this process is killed.
        let janitor = spawn_janitor(&dir)?;
        let mut node = Self {
            dir: dir.clone(),
            socket: socket.clone(),
            bin: plane.bin.clone(),
            components: Vec::new(),
            janitor,
            relay_stop: Arc::new(AtomicBool::new(false)),
            relay_addr: SocketAddr::from((GATEWAY, plane.api_port())),
            stopped: false,
            _lock: lock,
        };
        if let Err(err) = node.bring_up(plane, &uplink, &cgroup_root).await {
            let _ = node.teardown();
            return Err(err);
        }
        Ok(node)
    }

    async fn bring_up(
        &mut self,
        plane: &ControlPlane,
        uplink: &str,
        cgroup_root: &str,
    ) -> Result<(), Error> {
        self.configure_host(uplink, cgroup_root)?;
        self.start_containerd()?;
        self.import_image(&plane.bin.join("../images/pause.tar"))?;
        relay(
            self.relay_addr,
            SocketAddr::from((Ipv4Addr::LOCALHOST, plane.api_port())),
            self.relay_stop.clone(),
        )?;
        point_kubernetes_service_at(plane, self.relay_addr).await?;
        self.start_kubelet(plane, cgroup_root).await?;
        self.start_kube_proxy(plane).await
    }

    /// The state directory: configs, component logs (`*.log`), containerd's root and state.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// A `ctr` command on the node's containerd, in the CRI's namespace (`k8s.io`).
    pub fn ctr(&self) -> Command {
        let mut cmd = Command::new("ctr");
        cmd.arg("-a").arg(&self.socket).args(["-n", "k8s.io"]);
        cmd
    }

    /// Imports an image tarball (OCI layout or `docker save`) into the node's containerd, so
    /// pods can run it with `imagePullPolicy: Never`; it keeps the name the tarball gives it.
    pub fn import_image(&self, tarball: &Path) -> Result<(), Error> {
        run(self.ctr().args(["images", "import"]).arg(tarball))?;
        Ok(())
    }

    /// What the node may leave on the machine; see [`Footprint::leftovers`].
    pub fn footprint(&self) -> Result<Footprint, Error> {
        Footprint::of(std::process::id())
    }

    /// Stops the node and removes all it put on the machine (`real-node-teardown.sh`). Dropping
    /// the node does the same, ignoring errors.
    pub fn stop(mut self) -> Result<(), Error> {
        self.teardown()
    }

    fn teardown(&mut self) -> Result<(), Error> {
        if self.stopped {
            return Ok(());
        }
        self.stopped = true;
        let _ = self.janitor.kill();
        let _ = self.janitor.wait();
        self.relay_stop.store(true, Ordering::SeqCst);
        let _ = TcpStream::connect_timeout(&self.relay_addr, Duration::from_secs(1));
        let result = run(Command::new("bash").arg(teardown_script()).arg(&self.dir));
        for component in self.components.drain(..) {
            component.stop(Duration::from_secs(5));
        }
        result.map(|_| ())
    }

    fn configure_host(&self, uplink: &str, cgroup_root: &str) -> Result<(), Error> {
        if let Some(owner) = route_owner(POD_SUBNET)? {
            return Err(Error::Node(format!(
                "the pod subnet {POD_SUBNET} is already routed to {owner}"
            )));
        }
        // In mangle, which every forwarded packet passes before filter, so no ACCEPT that
        // kube-proxy puts at the head of filter's FORWARD can let a packet out first.
        if !uplink.is_empty() {
            for direction in ["-i", "-o"] {
                run(Command::new("iptables").args([
                    "-t",
                    "mangle",
                    "-I",
                    "FORWARD",
                    direction,
                    uplink,
                    "-m",
                    "comment",
                    "--comment",
                    RULE_COMMENT,
                    "-j",
                    "DROP",
                ]))?;
            }
        }
        // The bridge exists before any pod so the apiserver relay can listen on its address.
        run(Command::new("ip").args(["link", "add", BRIDGE, "type", "bridge"]))?;
        run(Command::new("ip").args(["addr", "add", &format!("{GATEWAY}/24"), "dev", BRIDGE]))?;
        run(Command::new("ip").args(["link", "set", BRIDGE, "up"]))?;
        // Pod to ClusterIP to a pod on the same bridge needs iptables to see bridged packets.
        run(Command::new("sysctl").args(["-qw", "net.bridge.bridge-nf-call-iptables=1"]))?;
        // kubelet's cgroupfs driver wants its cgroup root to exist in every hierarchy.
        for hierarchy in std::fs::read_dir("/sys/fs/cgroup")? {
            let path = hierarchy?.path().join(cgroup_root);
            std::fs::create_dir_all(path)?;
        }
        Ok(())
    }

    fn start_containerd(&mut self) -> Result<(), Error> {
        let d = &self.dir;
        std::fs::create_dir_all(d.join("cni/net.d"))?;
        std::fs::write(
            d.join("cni/net.d/10-kuota.conflist"),
            serde_json::to_string_pretty(&json!({
                "cniVersion": "0.4.0",
                "name": CNI_NETWORK,
                "plugins": [{
                    "type": "bridge",
                    "bridge": BRIDGE,
                    "isGateway": true,
                    "ipMasq": false,
                    "hairpinMode": true,
                    "ipam": {
                        "type": "host-local",
                        "ranges": [[{"subnet": POD_SUBNET, "gateway": GATEWAY.to_string()}]],
                        "routes": [{"dst": "0.0.0.0/0"}],
                        "dataDir": d.join("cni/ipam"),
                    },
                }],
            }))?,
        )?;
        let config = d.join("containerd.toml");
        std::fs::write(&config, containerd_config(d, &self.socket))?;
        self.spawn(
            "containerd",
            Path::new("/usr/bin/containerd"),
            &[format!("--config={}", config.display())],
        )?;
        let started = Instant::now();
        while !self
            .ctr()
            .arg("version")
            .output()
            .is_ok_and(|o| o.status.success())
        {
            self.fail_if_gone("containerd", Duration::from_secs(30), started)?;
            std::thread::sleep(Duration::from_millis(100));
        }
        Ok(())
    }

    async fn start_kubelet(
        &mut self,
        plane: &ControlPlane,
        cgroup_root: &str,
    ) -> Result<(), Error> {
        let d = self.dir.clone();
        let port = free_port()?;
        let config = d.join("kubelet.yaml");
        std::fs::write(
            &config,
            serde_json::to_string_pretty(&json!({
                "apiVersion": "kubelet.config.k8s.io/v1beta1",
                "kind": "KubeletConfiguration",
                "containerRuntimeEndpoint": format!("unix://{}", self.socket.display()),
                "cgroupDriver": "cgroupfs",
                "cgroupRoot": format!("/{cgroup_root}"),
                "failCgroupV1": false,
                // root here lacks CAP_SYS_RESOURCE: kubelet must not lower its own score.
                "oomScoreAdj": 0,
                "address": GATEWAY.to_string(),
                "port": port,
                "readOnlyPort": 0,
                "healthzBindAddress": "127.0.0.1",
                "healthzPort": 0,
                "authentication": {
                    "anonymous": {"enabled": false},
                    "webhook": {"enabled": false},
                    "x509": {"clientCAFile": plane.pki.ca_cert},
                },
                "authorization": {"mode": "AlwaysAllow"},
                "registerWithTaints": [{"key": REAL_NODE_TAINT, "value": "true", "effect": "NoSchedule"}],
                "podLogsDir": d.join("pod-logs"),
                "volumePluginDir": d.join("volume-plugins"),
                "resolvConf": "/etc/resolv.conf",
                // The test disk may be nearly full: evict and collect images only in earnest,
                // never the images a test imported.
                "evictionHard": {"memory.available": "100Mi", "nodefs.available": "512Mi", "imagefs.available": "512Mi"},
                "imageGCHighThresholdPercent": 100,
                "imageGCLowThresholdPercent": 99,
                "shutdownGracePeriod": "0s",
            }))?,
        )?;
        let args = [
            format!("--config={}", config.display()),
            format!("--kubeconfig={}", plane.kubeconfig.display()),
            format!("--root-dir={}", d.join("kubelet").display()),
            format!("--cert-dir={}", d.join("kubelet/pki").display()),
            format!("--hostname-override={REAL_NODE_NAME}"),
            format!("--node-ip={GATEWAY}"),
            format!("--node-labels={REAL_NODE_TAINT}=true"),
        ];
        self.spawn("kubelet", &self.bin.join("kubelet"), &args)?;
        let nodes: Api<Node> = Api::all(plane.client().await?);
        let ready = eventually(Duration::from_secs(120), "the real node Ready", || {
            let nodes = nodes.clone();
            async move {
                nodes
                    .get(REAL_NODE_NAME)
                    .await
                    .ok()
                    .is_some_and(|n| node_is_ready(&n))
            }
        })
        .await;
        ready.map_err(|_| self.not_ready("kubelet", 120))
    }

    async fn start_kube_proxy(&mut self, plane: &ControlPlane) -> Result<(), Error> {
        let health = free_port()?;
        let config = self.dir.join("kube-proxy.yaml");
        std::fs::write(
            &config,
            serde_json::to_string_pretty(&json!({
                "apiVersion": "kubeproxy.config.k8s.io/v1alpha1",
                "kind": "KubeProxyConfiguration",
                "mode": "iptables",
                "clientConnection": {"kubeconfig": plane.kubeconfig},
                "hostnameOverride": REAL_NODE_NAME,
                "clusterCIDR": POD_SUBNET,
                "healthzBindAddress": format!("127.0.0.1:{health}"),
                "metricsBindAddress": format!("127.0.0.1:{}", free_port()?),
                // Leave the machine's sysctls alone: no route_localnet, no conntrack tuning.
                "iptables": {"localhostNodePorts": false},
                "conntrack": {"maxPerCore": 0, "min": 0, "tcpEstablishedTimeout": "0s", "tcpCloseWaitTimeout": "0s"},
            }))?,
        )?;
        self.spawn(
            "kube-proxy",
            &self.bin.join("kube-proxy"),
            &[format!("--config={}", config.display())],
        )?;
        let started = Instant::now();
        while !crate::http_get_ok(health, "/healthz") {
            self.fail_if_gone("kube-proxy", Duration::from_secs(60), started)?;
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        Ok(())
    }

    fn spawn(&mut self, component: &str, program: &Path, args: &[String]) -> Result<(), Error> {
        let log = self.dir.join(format!("{component}.log"));
        self.components
            .push(Supervised::spawn(component, program, args, &log)?);
        Ok(())
    }

    fn fail_if_gone(
        &mut self,
        component: &str,
        timeout: Duration,
        started: Instant,
    ) -> Result<(), Error> {
        let exited = self
            .components
            .iter_mut()
            .find(|c| c.name == component)
            .is_some_and(|c| !c.is_running());
        if exited || started.elapsed() > timeout {
            return Err(self.not_ready(component, timeout.as_secs()));
        }
        Ok(())
    }

    fn not_ready(&self, component: &str, seconds: u64) -> Error {
        let log = self
            .components
            .iter()
            .find(|c| c.name == component)
            .map(|c| c.log_tail(30))
            .unwrap_or_default();
        Error::NotReady {
            component: component.to_string(),
            seconds,
            log,
        }
    }
}

/// What a real node may leave on the machine, captured while it runs.
#[derive(Clone, Debug)]
pub struct Footprint {
    dir: PathBuf,
    socket: PathBuf,
    pids: Vec<u32>,
    cgroup_root: String,
    netns: Vec<PathBuf>,
    shim_sockets: Vec<PathBuf>,
    task_ids: Vec<String>,
    made_dirs: Vec<PathBuf>,
    sysctls: Vec<(String, String)>,
}

impl Footprint {
    /// The footprint of the real node that process `owner` runs, read from its state directory.
    pub fn of(owner: u32) -> Result<Self, Error> {
        let dir = state_dir(owner);
        let sysctls = std::fs::read_to_string(dir.join("sysctls"))?;
        let mut pids = Vec::new();
        for component in ["containerd", "kubelet", "kube-proxy"] {
            let pid_file = dir.join(format!("{component}.log.pid"));
            if let Some(pid) = std::fs::read_to_string(pid_file)
                .ok()
                .and_then(|p| p.trim().parse().ok())
            {
                pids.push(pid);
            }
        }
        let env = std::fs::read_to_string(dir.join("node.env"))?;
        let made_dirs = env
            .lines()
            .find_map(|l| l.strip_prefix("made_dirs="))
            .unwrap_or_default()
            .trim_matches('\'')
            .split_whitespace()
            .map(PathBuf::from)
            .collect();
        Ok(Self {
            socket: dir.join("containerd.sock"),
            netns: sandbox_netns(&dir),
            shim_sockets: shim_sockets(&dir),
            task_ids: task_ids(&dir),
            made_dirs,
            dir,
            pids,
            cgroup_root: cgroup_root(owner),
            sysctls: sysctls
                .lines()
                .filter_map(|l| l.split_once('='))
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        })
    }

    /// The network namespaces of the node's pod sandboxes at capture time.
    pub fn netns(&self) -> &[PathBuf] {
        &self.netns
    }

    /// The sockets of the node's containerd shims at capture time.
    pub fn shim_sockets(&self) -> &[PathBuf] {
        &self.shim_sockets
    }

    /// Everything of the node still on the machine, one line each; empty after a clean teardown.
    pub fn leftovers(&self) -> Vec<String> {
        let mut left = Vec::new();
        for pid in &self.pids {
            if Path::new(&format!("/proc/{pid}")).exists() {
                left.push(format!("process {pid}"));
            }
        }
        let socket = self.socket.display().to_string();
        for pid in pids_whose_command_line_contains(&socket) {
            left.push(format!("process {pid} using {socket}"));
        }
        if self.dir.exists() {
            left.push(format!("directory {}", self.dir.display()));
        }
        let mountinfo = std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
        let prefix = format!("{}/", self.dir.display());
        for line in mountinfo.lines() {
            if let Some(point) = line.split(' ').nth(4).filter(|p| p.starts_with(&prefix)) {
                left.push(format!("mount {point}"));
            }
        }
        for ns in &self.netns {
            if ns.exists() {
                left.push(format!("network namespace {}", ns.display()));
            }
        }
        for socket in &self.shim_sockets {
            if socket.exists() {
                left.push(format!("shim socket {}", socket.display()));
            }
        }
        let cni_cache = std::fs::read_dir("/var/lib/cni/results")
            .map(|entries| entries.filter_map(|e| e.ok()).collect::<Vec<_>>())
            .unwrap_or_default();
        for entry in cni_cache {
            let name = entry.file_name().to_string_lossy().into_owned();
            let ours = name.starts_with(&format!("{CNI_NETWORK}-"))
                || self.task_ids.iter().any(|id| name.contains(id.as_str()));
            if ours {
                left.push(format!("CNI cache entry {}", entry.path().display()));
            }
        }
        if Path::new(KUBELET_DEVICE_PLUGIN_SOCKET).exists() {
            left.push(format!("socket {KUBELET_DEVICE_PLUGIN_SOCKET}"));
        }
        for made in &self.made_dirs {
            if made.exists() {
                left.push(format!("directory {}", made.display()));
            }
        }
        if let Ok(hierarchies) = std::fs::read_dir("/sys/fs/cgroup") {
            for hierarchy in hierarchies.filter_map(|h| h.ok()) {
                let cgroup = hierarchy.path().join(&self.cgroup_root);
                if cgroup.exists() {
                    left.push(format!("cgroup {}", cgroup.display()));
                }
            }
        }
        if Path::new("/sys/class/net").join(BRIDGE).exists() {
            left.push(format!("interface {BRIDGE}"));
        }
        for tool in ["iptables", "ip6tables"] {
            for table in ["filter", "nat", "mangle"] {
                let rules = output_of(Command::new(tool).args(["-t", table, "-S"]));
                for rule in rules.lines() {
                    if rule.contains(RULE_COMMENT) || rule.contains("KUBE-") {
                        left.push(format!("{tool} -t {table}: {rule}"));
                    }
                }
            }
        }
        for (key, value) in &self.sysctls {
            let now = output_of(Command::new("sysctl").args(["-n", key]));
            if now.trim() != value {
                left.push(format!("sysctl {key} = {} (was {value})", now.trim()));
            }
        }
        left
    }
}

/// An image to write with [`oci_image`]: files from this machine in one layer, and the config.
#[derive(Clone, Debug, Default)]
pub struct OciImage {
    /// The image's name, e.g. `kuota.dev/kuota:dev`; containerd imports it under this name.
    pub name: String,
    /// `(path on this machine, absolute path in the image)`, e.g. the binary and what it links.
    pub files: Vec<(PathBuf, String)>,
    /// The entrypoint's path in the image.
    pub entrypoint: String,
    /// The user the image runs as (`"65532"`), or empty for the runtime's default.
    pub user: String,
    /// Exposed ports, e.g. `"9443/tcp"`.
    pub ports: Vec<String>,
}

/// Writes `image` as an OCI image-layout tarball at `out` with `ociimage` (our program over
/// go-containerregistry, built by `build.sh`); [`RealNode::import_image`] imports it.
pub fn oci_image(image: &OciImage, out: &Path) -> Result<(), Error> {
    let bin = crate::build()?;
    let mut cmd = Command::new(bin.join("ociimage"));
    cmd.arg("-o")
        .arg(out)
        .args(["-name", &image.name, "-entrypoint", &image.entrypoint]);
    if !image.user.is_empty() {
        cmd.args(["-user", &image.user]);
    }
    for port in &image.ports {
        cmd.args(["-port", port]);
    }
    for (host, in_image) in &image.files {
        cmd.arg(format!("{}={in_image}", host.display()));
    }
    run(&mut cmd)?;
    Ok(())
}

/// The state directory of the real node of process `owner`.
fn state_dir(owner: u32) -> PathBuf {
    std::env::temp_dir().join(format!("kuota-real-node-{owner}"))
}

/// The cgroup (in every hierarchy) that holds the pods of the real node of process `owner`.
fn cgroup_root(owner: u32) -> String {
    format!("kuota-node-{owner}")
}

/// The network namespaces the CRI made for a node's sandboxes, as its metadata names them.
fn sandbox_netns(dir: &Path) -> Vec<PathBuf> {
    let db = dir.join("containerd/root/io.containerd.metadata.v1.bolt/meta.db");
    let bytes = std::fs::read(db).unwrap_or_default();
    let text = String::from_utf8_lossy(&bytes);
    let mut found: Vec<PathBuf> = text
        .match_indices("/var/run/netns/cni-")
        .map(|(at, prefix)| {
            let rest = &text[at + prefix.len()..];
            let id_len = rest
                .find(|c: char| !(c.is_ascii_hexdigit() || c == '-'))
                .unwrap_or(rest.len());
            PathBuf::from(format!("{prefix}{}", &rest[..id_len]))
        })
        .filter(|p| p.exists())
        .collect();
    found.sort();
    found.dedup();
    found
}

/// The bundles of the node's tasks (sandboxes and containers), one directory each.
fn task_bundles(dir: &Path) -> Vec<PathBuf> {
    let tasks = dir.join("containerd/state/io.containerd.runtime.v2.task/k8s.io");
    std::fs::read_dir(tasks)
        .map(|bundles| bundles.filter_map(|b| b.ok()).map(|b| b.path()).collect())
        .unwrap_or_default()
}

fn task_ids(dir: &Path) -> Vec<String> {
    task_bundles(dir)
        .iter()
        .filter_map(|b| Some(b.file_name()?.to_str()?.to_string()))
        .collect()
}

/// The sockets of the node's shims, which each task's bundle names.
fn shim_sockets(dir: &Path) -> Vec<PathBuf> {
    let mut sockets: Vec<PathBuf> = task_bundles(dir)
        .iter()
        .filter_map(|b| std::fs::read_to_string(b.join("address")).ok())
        .filter_map(|a| a.trim().strip_prefix("unix://").map(PathBuf::from))
        .collect();
    sockets.sort();
    sockets.dedup();
    sockets
}

fn teardown_script() -> PathBuf {
    crate::crate_dir().join("real-node-teardown.sh")
}

fn lock_path() -> PathBuf {
    std::env::temp_dir().join("kuota-real-node.lock")
}

async fn lock_machine() -> Result<File, Error> {
    let file = File::create(lock_path())?;
    let deadline = Instant::now() + Duration::from_secs(900);
    loop {
        match file.try_lock() {
            Ok(()) => return Ok(file),
            Err(std::fs::TryLockError::WouldBlock) if Instant::now() < deadline => {
                tokio::time::sleep(Duration::from_millis(500)).await;
            }
            Err(std::fs::TryLockError::WouldBlock) => {
                return Err(Error::Node(format!(
                    "another real node held {} for 15 minutes",
                    lock_path().display()
                )));
            }
            Err(std::fs::TryLockError::Error(err)) => return Err(err.into()),
        }
    }
}

/// Tears down nodes whose process is gone and whose janitor did not finish (it was killed too).
fn sweep_stale_nodes() -> Result<(), Error> {
    for entry in std::fs::read_dir(std::env::temp_dir())? {
        let path = entry?.path();
        let Some(pid) = path
            .file_name()
            .and_then(|n| n.to_str())
            .and_then(|n| n.strip_prefix("kuota-real-node-"))
            .and_then(|pid| pid.parse::<u32>().ok())
        else {
            continue;
        };
        if !Path::new(&format!("/proc/{pid}")).exists() {
            run(Command::new("bash").arg(teardown_script()).arg(&path))?;
        }
    }
    Ok(())
}

fn check_prerequisites() -> Result<(), Error> {
    let status = std::fs::read_to_string("/proc/self/status")?;
    let root = status
        .lines()
        .find_map(|l| l.strip_prefix("Uid:"))
        .is_some_and(|ids| ids.split_whitespace().nth(1) == Some("0"));
    if !root {
        return Err(Error::Node(
            "the real node runs containerd and kubelet: run the tests as root".into(),
        ));
    }
    for needed in [
        "/usr/bin/containerd",
        "/usr/bin/containerd-shim-runc-v2",
        "/usr/bin/ctr",
        "/usr/sbin/runc",
        "/usr/lib/cni/bridge",
        "/usr/lib/cni/host-local",
        "/usr/lib/cni/loopback",
        "/usr/sbin/iptables",
        "/usr/sbin/conntrack",
    ] {
        if !Path::new(needed).exists() {
            return Err(Error::Node(format!("{needed} is missing: {PACKAGES_HINT}")));
        }
    }
    Ok(())
}

/// Writes `node.env` and `sysctls` for the teardown script, before anything is changed.
fn record_state(
    dir: &Path,
    bin: &Path,
    socket: &Path,
    uplink: &str,
    cgroup_root: &str,
) -> Result<(), Error> {
    let mut sysctls = String::new();
    for key in SYSCTLS {
        let value = output_of(Command::new("sysctl").args(["-n", key]));
        if !value.trim().is_empty() {
            sysctls.push_str(&format!("{key}={}\n", value.trim()));
        }
    }
    std::fs::write(dir.join("sysctls"), sysctls)?;
    let made_dirs: Vec<&str> = SHARED_DIRS
        .iter()
        .copied()
        .filter(|d| !Path::new(d).exists())
        .collect();
    let env = format!(
        "socket='{}'\nbridge='{BRIDGE}'\ncni_network='{CNI_NETWORK}'\nuplink='{uplink}'\ncgroup_root='{cgroup_root}'\nkube_proxy='{}'\nrule_comment='{RULE_COMMENT}'\nmade_dirs='{}'\n",
        socket.display(),
        bin.join("kube-proxy").display(),
        made_dirs.join(" "),
    );
    std::fs::write(dir.join("node.env"), env)?;
    Ok(())
}

/// Waits for this process to exit, then runs the teardown under the machine lock.
fn spawn_janitor(dir: &Path) -> Result<Child, Error> {
    Ok(Command::new("sh")
        .arg("-c")
        .arg(
            r#"while kill -0 "$1" 2>/dev/null; do sleep 0.5 & wait $!; done
exec flock "$2" bash "$3" "$4" >/dev/null 2>&1"#,
        )
        .arg("kuota-real-node-janitor")
        .arg(std::process::id().to_string())
        .arg(lock_path())
        .arg(teardown_script())
        .arg(dir)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()?)
}

fn default_route_interface() -> Result<String, Error> {
    let routes = run(Command::new("ip").args(["-o", "route", "show", "default"]))?;
    Ok(routes
        .split_whitespace()
        .skip_while(|w| *w != "dev")
        .nth(1)
        .unwrap_or_default()
        .to_string())
}

fn route_owner(subnet: &str) -> Result<Option<String>, Error> {
    let routes = run(Command::new("ip").args(["-o", "route", "show", subnet]))?;
    Ok(routes
        .split_whitespace()
        .skip_while(|w| *w != "dev")
        .nth(1)
        .map(str::to_string))
}

/// Makes the `kubernetes` Service reach the apiserver from pods: its endpoint is the relay on
/// the bridge's address (the apiserver itself listens on loopback only).
async fn point_kubernetes_service_at(plane: &ControlPlane, relay: SocketAddr) -> Result<(), Error> {
    let client = plane.client().await?;
    let services: Api<Service> = Api::namespaced(client.clone(), "default");
    eventually(Duration::from_secs(30), "the kubernetes Service", || {
        let services = services.clone();
        async move { services.get("kubernetes").await.is_ok() }
    })
    .await?;
    let params = PatchParams::apply("kuota-cluster").force();
    let (ip, port) = (relay.ip().to_string(), relay.port());
    let slices: Api<EndpointSlice> = Api::namespaced(client.clone(), "default");
    let slice: EndpointSlice = serde_json::from_value(json!({
        "apiVersion": "discovery.k8s.io/v1",
        "kind": "EndpointSlice",
        "metadata": {"name": "kubernetes", "labels": {
            "kubernetes.io/service-name": "kubernetes",
            "endpointslice.kubernetes.io/managed-by": "kuota-cluster",
        }},
        "addressType": "IPv4",
        "endpoints": [{"addresses": [ip], "conditions": {"ready": true}}],
        "ports": [{"name": "https", "port": port, "protocol": "TCP"}],
    }))?;
    slices
        .patch("kubernetes", &params, &Patch::Apply(&slice))
        .await?;
    let endpoints: Api<Endpoints> = Api::namespaced(client, "default");
    let object: Endpoints = serde_json::from_value(json!({
        "apiVersion": "v1",
        "kind": "Endpoints",
        "metadata": {"name": "kubernetes"},
        "subsets": [{"addresses": [{"ip": ip}], "ports": [{"name": "https", "port": port, "protocol": "TCP"}]}],
    }))?;
    endpoints
        .patch("kubernetes", &params, &Patch::Apply(&object))
        .await?;
    Ok(())
}

/// Forwards TCP from `listen` to `target` on threads of this process until `stop` is set (and
/// one more connection wakes the listener), so it can never outlive the test.
fn relay(listen: SocketAddr, target: SocketAddr, stop: Arc<AtomicBool>) -> Result<(), Error> {
    let listener = TcpListener::bind(listen)?;
    std::thread::spawn(move || {
        for incoming in listener.incoming() {
            if stop.load(Ordering::SeqCst) {
                return;
            }
            let Ok(client) = incoming else { continue };
            let Ok(server) = TcpStream::connect(target) else {
                continue;
            };
            let (Ok(client_reader), Ok(server_reader)) = (client.try_clone(), server.try_clone())
            else {
                continue;
            };
            std::thread::spawn(move || copy_then_close(client_reader, server));
            std::thread::spawn(move || copy_then_close(server_reader, client));
        }
    });
    Ok(())
}

fn copy_then_close(mut from: TcpStream, mut to: TcpStream) {
    let mut buf = [0u8; 16 * 1024];
    loop {
        match from.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                if to.write_all(&buf[..n]).is_err() {
                    break;
                }
            }
        }
    }
    let _ = to.shutdown(std::net::Shutdown::Write);
}

fn containerd_config(dir: &Path, socket: &Path) -> String {
    let d = |sub: &str| dir.join(sub).display().to_string();
    format!(
        r#"version = 2
root = "{root}"
state = "{state}"
disabled_plugins = ["io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.devmapper", "io.containerd.snapshotter.v1.zfs"]

[grpc]
  address = "{socket}"

[plugins."io.containerd.internal.v1.opt"]
  path = "{opt}"

[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "{PAUSE_IMAGE}"
  # root here lacks CAP_SYS_RESOURCE: runc cannot set an oom_score_adj below its own.
  restrict_oom_score_adj = true
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
        Root = "{runc}"
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "{cni}"
"#,
        root = d("containerd/root"),
        state = d("containerd/state"),
        socket = socket.display(),
        opt = d("containerd/opt"),
        runc = d("containerd/runc"),
        cni = d("cni/net.d"),
    )
}

fn pids_whose_command_line_contains(needle: &str) -> Vec<u32> {
    let Ok(procs) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    procs
        .filter_map(|p| p.ok())
        .filter_map(|p| {
            let pid: u32 = p.file_name().to_str()?.parse().ok()?;
            let cmdline = std::fs::read(p.path().join("cmdline")).ok()?;
            let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
            (pid != std::process::id() && cmdline.contains(needle)).then_some(pid)
        })
        .collect()
}

/// Runs a command and returns its stdout; a failure carries the command and its stderr.
fn run(cmd: &mut Command) -> Result<String, Error> {
    let out = cmd.output()?;
    if !out.status.success() {
        return Err(Error::Node(format!(
            "{cmd:?} exited with {}: {}",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

fn output_of(cmd: &mut Command) -> String {
    cmd.output()
        .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
        .unwrap_or_default()
}
