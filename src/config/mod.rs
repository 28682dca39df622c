//! The controller-manager `Configuration` (`config.kueue.x-k8s.io`, kind `Configuration`), read
//! from `--config` as Kueue reads it: v1beta2 (the hub) or v1beta1 (converted to the hub), strict
//! decoding, Kueue's defaults, then validation that reports every problem as one line shaped
//! like apimachinery's field errors (`<path>: <Type>: <detail>`).
//!
//! [`Configuration`] is the resolved form the rest of Kuota reads: every default applied, every
//! value checked and typed (ports as `u16`, durations as `std::time::Duration`, enums as enums).
//!
//! Decisions where Kuota differs from Kueue:
//! - `integrations.frameworks` accepts only the frameworks Kuota implements
//!   ([`supported_frameworks`]). Kueue integrations Kuota lacks ([`KUEUE_ONLY_FRAMEWORKS`], e.g.
//!   `pod`, `deployment`) are rejected with a message saying so, rather than accepted and silently
//!   not enforced: a workload kind that quietly bypasses quota is worse than a startup error.
//! - Sections for Kueue features Kuota does not implement (`multiKueue`, `tls`,
//!   `pprofBindAddress`, `metrics.customLabels`,
//!   `resources.deviceClassMappings`, v1beta1 `queueVisibility` and
//!   `integrations.podOptions`; `admissionFairSharing` with its feature gate off) are accepted
//!   so Kueue files load, and reported in
//!   [`Configuration::warnings`]. So are settings Kuota validates but does not act on:
//!   `clientConnection`, `metrics.enableClusterQueueResources` when on,
//!   `healthProbeBindAddress: "0"`, probe paths other than `/readyz` and `/healthz`,
//!   `waitForPodsReady.blockAdmission` when true, and `objectRetentionPolicies.workloads`.
//! - A few checks Kueue leaves to later failures are done here: ports, bind addresses, negative
//!   QPS/burst, leader-election timing, names that must be DNS labels.
//! - Kuota extension `queueReferencePolicy` (see [`QueueReferencePolicy`]).

mod feature_gates;
mod resolve;
pub mod v1beta1;
pub mod v1beta2;

use std::{
    collections::BTreeMap,
    fmt,
    net::{IpAddr, Ipv4Addr, SocketAddr},
    path::{Path, PathBuf},
    time::Duration,
};

use k8s_openapi::apimachinery::pkg::{api::resource::Quantity, apis::meta::v1::LabelSelector};
use kube::core::{Selector, SelectorExt};

pub use crate::k8s::duration::{DurationError, GoDuration};
use crate::k8s::field::FieldError;
/// `leaderElection`, resolved: the Lease settings the leader election runs with.
pub use crate::k8s::leader::LeaderElection;
pub use feature_gates::{Effect, Feature, FeatureGateError, FeatureGates, Stage};

/// API group of the configuration file.
pub const API_GROUP: &str = "config.kueue.x-k8s.io";
/// The only `kind` the configuration file may have.
pub const KIND: &str = "Configuration";
/// Namespace when neither the file, `--namespace` nor the service account names one.
pub const DEFAULT_NAMESPACE: &str = "kueue-system";
/// Name of the webhook Service whose certificate Kuota manages.
pub const DEFAULT_WEBHOOK_SERVICE_NAME: &str = "kueue-webhook-service";
/// Name of the Secret holding the managed webhook certificate.
pub const DEFAULT_WEBHOOK_SECRET_NAME: &str = "kueue-webhook-server-cert";
/// Webhook server port.
pub const DEFAULT_WEBHOOK_PORT: u16 = 9443;
/// Directory the webhook server reads `tls.crt`/`tls.key` from.
pub const DEFAULT_WEBHOOK_CERT_DIR: &str = "/tmp/k8s-webhook-server/serving-certs";
/// Health probe listener.
pub const DEFAULT_HEALTH_PROBE_BIND_ADDRESS: &str = ":8081";
/// Metrics listener.
pub const DEFAULT_METRICS_BIND_ADDRESS: &str = ":8443";
/// Kueue's `visibilityServer.bindPort` default.
pub const DEFAULT_VISIBILITY_BIND_PORT: u16 = 8082;
/// Name of the leader-election Lease.
pub const DEFAULT_LEADER_ELECTION_ID: &str = "c1f6bfd2.kueue.x-k8s.io";
/// Framework enabled when `integrations.frameworks` is empty.
pub const DEFAULT_FRAMEWORK: &str = "batch/job";
/// Namespace label every namespace carries with its own name.
pub const NAMESPACE_NAME_LABEL: &str = "kubernetes.io/metadata.name";
/// File a pod's service account namespace is mounted at; Kueue defaults `namespace` from it.
pub const SERVICE_ACCOUNT_NAMESPACE_FILE: &str =
    "/var/run/secrets/kubernetes.io/serviceaccount/namespace";

/// Framework names (as in `integrations.frameworks`) that Kuota implements: the names in the
/// one table of job frameworks, in its order.
pub fn supported_frameworks() -> Vec<&'static str> {
    crate::jobs::FRAMEWORKS.iter().map(|f| f.name()).collect()
}

/// Kueue framework names Kuota does not implement; configuring one is an error that says so.
pub const KUEUE_ONLY_FRAMEWORKS: &[&str] = &[
    "ray.io/rayservice",
    "trainer.kubeflow.org/trainjob",
    "workload.codeflare.dev/appwrapper",
    "sparkoperator.k8s.io/sparkapplication",
    "pod",
    "deployment",
    "statefulset",
    "leaderworkerset.x-k8s.io/leaderworkerset",
];

/// Declares a configuration enum whose values are written as their variant names.
macro_rules! string_enum {
    ($(#[$meta:meta])* $name:ident { $($(#[$variant_meta:meta])* $variant:ident,)* }) => {
        $(#[$meta])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        pub enum $name {
            $($(#[$variant_meta])* $variant,)*
        }

        impl $name {
            /// Every value as written in the file.
            pub const NAMES: &'static [&'static str] = &[$(stringify!($variant),)*];

            /// The value as written in the file.
            pub const fn as_str(self) -> &'static str {
                match self {
                    $($name::$variant => stringify!($variant),)*
                }
            }

            fn from_name(name: &str) -> Option<Self> {
                match name {
                    $(stringify!($variant) => Some($name::$variant),)*
                    _ => None,
                }
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, out: &mut fmt::Formatter<'_>) -> fmt::Result {
                out.write_str(self.as_str())
            }
        }
    };
}

string_enum! {
    /// Kuota extension, top-level `queueReferencePolicy`: what the job webhooks do with a job
    /// that can never be admitted as written.
    ///
    /// `Reject` (the default) refuses, at `kubectl apply` time, a job whose queue-name label names
    /// a LocalQueue that does not exist, whose LocalQueue points to a missing ClusterQueue, or
    /// whose request exceeds what that ClusterQueue can ever give (nominal quota plus borrowing
    /// limit). `Warn` admits such jobs with an admission warning only, which is Kueue's lenient
    /// behaviour: the job is created and waits, suspended, until the queues appear.
    QueueReferencePolicy {
        /// Refuse the job with a message naming what exists.
        Reject,
        /// Accept the job and return an admission warning.
        Warn,
    }
}

string_enum! {
    /// `waitForPodsReady.requeuingStrategy.timestamp`: which time orders a requeued workload.
    RequeuingTimestamp {
        /// The workload's creation time.
        Creation,
        /// The time of its last eviction (the default).
        Eviction,
    }
}

string_enum! {
    /// One entry of `fairSharing.preemptionStrategies`.
    PreemptionStrategy {
        /// Preempt while the preemptor's share after admission stays at most the target's.
        LessThanOrEqualToFinalShare,
        /// Preempt while the preemptor's share after admission is below the target's before.
        LessThanInitialShare,
    }
}

string_enum! {
    /// `resources.quotaCheckStrategy`: which requested resources are checked against quota.
    QuotaCheckStrategy {
        /// Every requested resource except `excludeResourcePrefixes` (the default).
        BlockUndeclared,
        /// Only resources the ClusterQueue covers.
        IgnoreUndeclared,
    }
}

string_enum! {
    /// `resources.transformations[].strategy`.
    TransformationStrategy {
        /// Keep the input resource next to the outputs (the default).
        Retain,
        /// Replace the input resource by the outputs.
        Replace,
    }
}

/// The configuration API version a file was written in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ApiVersion {
    /// `config.kueue.x-k8s.io/v1beta1`, converted to the hub.
    V1beta1,
    /// `config.kueue.x-k8s.io/v1beta2`, the hub.
    V1beta2,
}

impl ApiVersion {
    /// Every accepted `apiVersion` value.
    pub const NAMES: &'static [&'static str] = &[
        "config.kueue.x-k8s.io/v1beta1",
        "config.kueue.x-k8s.io/v1beta2",
    ];

    /// The `apiVersion` value.
    pub const fn as_str(self) -> &'static str {
        match self {
            ApiVersion::V1beta1 => "config.kueue.x-k8s.io/v1beta1",
            ApiVersion::V1beta2 => "config.kueue.x-k8s.io/v1beta2",
        }
    }

    fn from_name(name: &str) -> Option<Self> {
        match name {
            "config.kueue.x-k8s.io/v1beta1" => Some(ApiVersion::V1beta1),
            "config.kueue.x-k8s.io/v1beta2" => Some(ApiVersion::V1beta2),
            _ => None,
        }
    }
}

/// The resolved configuration: defaults applied, validated.
#[derive(Clone, Debug, PartialEq)]
pub struct Configuration {
    /// Version of the file it came from; `None` when built from defaults alone (no `--config`).
    pub api_version: Option<ApiVersion>,
    /// Namespace Kuota runs in (its Secret, Lease and the excluded namespace live here).
    pub namespace: String,
    /// Whether jobs without a queue-name label are managed (suspended) too.
    pub manage_jobs_without_queue_name: bool,
    /// Namespaces whose jobs Kuota manages.
    pub managed_jobs_namespace_selector: NamespaceSelector,
    /// Webhook server.
    pub webhook: Webhook,
    /// Metrics server.
    pub metrics: Metrics,
    /// Health probe server.
    pub health: Health,
    /// Where the visibility API listens (`visibilityServer`, default `0.0.0.0:8082`); `None`
    /// when the `VisibilityOnDemand` gate is off.
    pub visibility_server: Option<BindAddress>,
    /// Leader election for the admitter.
    pub leader_election: LeaderElection,
    /// Per-controller settings.
    pub controller: Controller,
    /// Kubernetes client rate limits.
    pub client_connection: ClientConnection,
    /// Self-managed webhook certificate; `None` when disabled (certificates come from elsewhere).
    pub internal_cert_management: Option<InternalCertManagement>,
    /// All-or-nothing pod readiness; `None` when off.
    pub wait_for_pods_ready: Option<WaitForPodsReady>,
    /// Enabled job frameworks.
    pub integrations: Integrations,
    /// Fair sharing across a cohort; `None` when off.
    pub fair_sharing: Option<FairSharing>,
    /// Admission fair sharing within a ClusterQueue; `None` when off.
    pub admission_fair_sharing: Option<AdmissionFairSharing>,
    /// Resource accounting rules.
    pub resources: Resources,
    /// Automatic deletion of finished or deactivated Workloads.
    pub object_retention_policies: ObjectRetentionPolicies,
    /// Feature gate states, from `featureGates` or `--feature-gates`.
    pub feature_gates: FeatureGates,
    /// Kuota extension: reject or only warn about jobs that can never be admitted.
    pub queue_reference_policy: QueueReferencePolicy,
    /// Things in the file that were accepted but have no effect; [`Configuration::load`] logs them.
    pub warnings: Vec<String>,
}

/// A namespace selector, kept both as written and ready for matching.
#[derive(Clone, Debug, PartialEq)]
pub struct NamespaceSelector {
    label_selector: LabelSelector,
    selector: Selector,
}

impl NamespaceSelector {
    /// A selector ready for matching; fails on an unknown operator or `In`/`NotIn` without values.
    pub fn new(label_selector: LabelSelector) -> Result<Self, kube::core::ParseExpressionError> {
        let selector = Selector::try_from(label_selector.clone())?;
        Ok(NamespaceSelector {
            label_selector,
            selector,
        })
    }

    /// The selector as configured.
    pub fn label_selector(&self) -> &LabelSelector {
        &self.label_selector
    }

    /// Whether a namespace with these labels is selected.
    pub fn matches(&self, namespace_labels: &BTreeMap<String, String>) -> bool {
        self.selector.matches(namespace_labels)
    }

    /// Whether the namespace called `name` is selected, judging by its name label only
    /// (every namespace carries `kubernetes.io/metadata.name: <name>`).
    pub fn matches_name(&self, name: &str) -> bool {
        self.matches(&BTreeMap::from([(
            NAMESPACE_NAME_LABEL.to_owned(),
            name.to_owned(),
        )]))
    }
}

/// Where a server listens: a port and optionally one address.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BindAddress {
    /// `None` when the configured host was empty: listen on every address.
    pub host: Option<IpAddr>,
    /// TCP port, 1..=65535.
    pub port: u16,
}

impl BindAddress {
    /// The socket address to bind; an empty host binds every IPv4 address (`0.0.0.0`). Set the
    /// host to `::` for IPv6 clusters.
    pub fn socket_addr(&self) -> SocketAddr {
        SocketAddr::new(
            self.host.unwrap_or(IpAddr::V4(Ipv4Addr::UNSPECIFIED)),
            self.port,
        )
    }
}

/// `webhook`.
#[derive(Clone, Debug, PartialEq)]
pub struct Webhook {
    /// `host` and `port` (default port 9443).
    pub address: BindAddress,
    /// Directory with `tls.crt` and `tls.key`.
    pub cert_dir: PathBuf,
}

/// `metrics`.
#[derive(Clone, Debug, PartialEq)]
pub struct Metrics {
    /// `bindAddress` (default `:8443`); `None` when set to `"0"` (metrics off).
    pub bind_address: Option<BindAddress>,
    /// Whether per-ClusterQueue resource metrics are exported.
    pub enable_cluster_queue_resources: bool,
    /// Per-LocalQueue metrics.
    pub local_queue_metrics: LocalQueueMetrics,
}

/// `metrics.localQueueMetrics` (default: enabled for every LocalQueue).
#[derive(Clone, Debug, PartialEq)]
pub struct LocalQueueMetrics {
    /// Whether LocalQueue metrics are exported.
    pub enable: bool,
    /// Only LocalQueues matching this selector; `None` selects all.
    pub local_queue_selector: Option<LabelSelector>,
}

/// `health`.
#[derive(Clone, Debug, PartialEq)]
pub struct Health {
    /// `healthProbeBindAddress` (default `:8081`); `None` when set to `"0"` (probes off).
    pub probe_bind_address: Option<BindAddress>,
    /// Readiness path (default `/readyz`).
    pub readiness_endpoint_name: String,
    /// Liveness path (default `/healthz`).
    pub liveness_endpoint_name: String,
}

/// `controller`.
#[derive(Clone, Debug, PartialEq)]
pub struct Controller {
    /// Workers per controller, keyed `Kind.group` (`Job.batch`, `Workload.kueue.x-k8s.io`).
    pub group_kind_concurrency: BTreeMap<String, u32>,
    /// How long to wait for caches to sync; `None` for the runtime's default.
    pub cache_sync_timeout: Option<Duration>,
}

/// `clientConnection`.
#[derive(Clone, Debug, PartialEq)]
pub struct ClientConnection {
    /// Requests per second to the API server (default 300).
    pub qps: f32,
    /// Burst above `qps` (default 500).
    pub burst: u32,
}

/// `internalCertManagement` when enabled.
#[derive(Clone, Debug, PartialEq)]
pub struct InternalCertManagement {
    /// Service the certificate is issued for (`<name>.<namespace>.svc`).
    pub webhook_service_name: String,
    /// Secret the certificate is stored in.
    pub webhook_secret_name: String,
}

/// `waitForPodsReady` when enabled.
#[derive(Clone, Debug, PartialEq)]
pub struct WaitForPodsReady {
    /// How long an admitted workload may take to get all pods ready (default 30m; 5m from a
    /// v1beta1 file).
    pub timeout: Duration,
    /// Whether admission waits for the previous workload's pods (default false; true from a
    /// v1beta1 file).
    pub block_admission: bool,
    /// How long pods may stay unready after having been ready (default: `timeout`).
    pub recovery_timeout: Duration,
    /// How evicted workloads are requeued.
    pub requeuing_strategy: RequeuingStrategy,
}

/// `waitForPodsReady.requeuingStrategy`.
#[derive(Clone, Debug, PartialEq)]
pub struct RequeuingStrategy {
    /// Ordering timestamp (default `Eviction`).
    pub timestamp: RequeuingTimestamp,
    /// Requeues before deactivation; `None` requeues forever.
    pub backoff_limit_count: Option<u32>,
    /// Base of the exponential backoff in seconds (default 60).
    pub backoff_base_seconds: u32,
    /// Cap of the backoff in seconds (default 3600).
    pub backoff_max_seconds: u32,
}

/// `integrations`.
#[derive(Clone, Debug, PartialEq)]
pub struct Integrations {
    /// Enabled framework names, each one of [`supported_frameworks`] (default `["batch/job"]`).
    pub frameworks: Vec<String>,
    /// `Kind.version.group` of kinds whose Workloads external controllers create.
    pub external_frameworks: Vec<String>,
    /// Job label keys copied to the Workload.
    pub label_keys_to_copy: Vec<String>,
}

impl Integrations {
    /// Whether the framework called `name` (e.g. `"kubeflow.org/mpijob"`) is enabled.
    pub fn is_enabled(&self, name: &str) -> bool {
        self.frameworks.iter().any(|framework| framework == name)
    }
}

/// `fairSharing` when enabled.
#[derive(Clone, Debug, PartialEq)]
pub struct FairSharing {
    /// One of `[LessThanOrEqualToFinalShare]`, `[LessThanInitialShare]` or both in that order.
    pub preemption_strategies: Vec<PreemptionStrategy>,
}

/// `admissionFairSharing` when enabled.
#[derive(Clone, Debug, PartialEq)]
pub struct AdmissionFairSharing {
    /// Half-life of the usage decay.
    pub usage_half_life_time: Duration,
    /// How often usage is sampled (default 5m).
    pub usage_sampling_interval: Duration,
    /// Weight per resource name in the usage sum (missing: 1).
    pub resource_weights: BTreeMap<String, f64>,
}

/// `resources`.
#[derive(Clone, Debug, PartialEq)]
pub struct Resources {
    /// Which requested resources count against quota.
    pub quota_check_strategy: QuotaCheckStrategy,
    /// Resource name prefixes never counted against quota.
    pub exclude_resource_prefixes: Vec<String>,
    /// Rewrites applied to requests before quota accounting.
    pub transformations: Vec<ResourceTransformation>,
}

/// One entry of `resources.transformations`.
#[derive(Clone, Debug, PartialEq)]
pub struct ResourceTransformation {
    /// Resource the transformation applies to.
    pub input: String,
    /// Whether `input` is kept (default `Retain`).
    pub strategy: TransformationStrategy,
    /// Requested resource whose amount multiplies the outputs.
    pub multiply_by: Option<String>,
    /// Resources produced per unit of `input`.
    pub outputs: BTreeMap<String, Quantity>,
}

/// `objectRetentionPolicies`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ObjectRetentionPolicies {
    /// Retention of Workloads.
    pub workloads: WorkloadRetentionPolicy,
}

/// `objectRetentionPolicies.workloads`; `None` keeps Workloads forever.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct WorkloadRetentionPolicy {
    /// Delete a finished Workload this long after it finished (`admitter::retention`).
    pub after_finished: Option<Duration>,
    /// Delete the job of a Workload deactivated by the admitter (not by a user) this long after
    /// its eviction (the job controllers), as Kueue's job reconciler does.
    pub after_deactivated_by_kueue: Option<Duration>,
}

/// Values given on the command line, which win over the file and feed its defaults (e.g. the
/// default namespace selector excludes the overridden namespace).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Overrides {
    /// `--namespace`.
    pub namespace: Option<String>,
    /// `--webhook-port`.
    pub webhook_port: Option<u16>,
    /// `--health-probe-addr`.
    pub health_probe_bind_address: Option<String>,
    /// `--metrics-addr`.
    pub metrics_bind_address: Option<String>,
    /// `--visibility-addr`, `[host]:port`.
    pub visibility_bind_address: Option<String>,
    /// `--no-leader-elect` gives `Some(false)`.
    pub leader_elect: Option<bool>,
}

impl Overrides {
    fn apply(&self, hub: &mut v1beta2::Configuration) {
        if let Some(namespace) = &self.namespace {
            hub.namespace = Some(namespace.clone());
        }
        if let Some(port) = self.webhook_port {
            hub.webhook.get_or_insert_default().port = Some(i64::from(port));
        }
        if let Some(address) = &self.health_probe_bind_address {
            hub.health.get_or_insert_default().health_probe_bind_address = Some(address.clone());
        }
        if let Some(address) = &self.metrics_bind_address {
            hub.metrics.get_or_insert_default().bind_address = Some(address.clone());
        }
        if let Some(address) = &self.visibility_bind_address {
            let (host, port) = address.rsplit_once(':').unwrap_or(("", address));
            let server = hub.visibility_server.get_or_insert_default();
            server.bind_address = Some(host.to_owned()).filter(|host| !host.is_empty());
            // An unreadable port is reported by the resolution as out of range.
            server.bind_port = Some(port.parse().unwrap_or(-1));
        }
        if let Some(leader_elect) = self.leader_elect {
            hub.leader_election.get_or_insert_default().leader_elect = Some(leader_elect);
        }
    }
}

/// What loading needs besides the file.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LoadOptions {
    /// Namespace used when neither the file nor `--namespace` names one (Kueue reads the
    /// service account's namespace file); `None` falls back to `kueue-system`.
    pub fallback_namespace: Option<String>,
    /// The `--feature-gates` flag; an error together with the file's `featureGates`.
    pub feature_gates_flag: Option<String>,
    /// Command-line overrides.
    pub overrides: Overrides,
}

impl LoadOptions {
    /// Options with the fallback namespace read from the pod's service account, if mounted.
    pub fn from_environment() -> Self {
        let fallback_namespace = std::fs::read_to_string(SERVICE_ACCOUNT_NAMESPACE_FILE)
            .ok()
            .map(|namespace| namespace.trim().to_owned())
            .filter(|namespace| !namespace.is_empty());
        LoadOptions {
            fallback_namespace,
            ..LoadOptions::default()
        }
    }
}

/// Why the configuration could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The file could not be read.
    #[error("cannot read configuration file {}: {source}", path.display())]
    Read {
        /// The `--config` path.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The file is not YAML.
    #[error("invalid YAML: {0}")]
    Yaml(#[from] crate::k8s::yaml::Error),
    /// Strict decoding failed: an unknown field or a value of the wrong type.
    #[error("{}", if path.is_empty() || path == "." { message.clone() } else { format!("{path}: {message}") })]
    Decode {
        /// Field path, e.g. `integrations.frameworks[3]`; empty for the document itself.
        path: String,
        /// What was wrong.
        message: String,
    },
    /// Validation failed; one field error per line.
    #[error("{}", .0.iter().map(ToString::to_string).collect::<Vec<_>>().join("\n"))]
    Invalid(Vec<FieldError>),
}

impl Configuration {
    /// Which topology annotations jobs' templates are read for.
    pub fn topology_gates(&self) -> crate::jobs::TopologyGates {
        crate::jobs::TopologyGates {
            enabled: self.feature_gates.enabled(Feature::TopologyAwareScheduling),
            multi_layer: self.feature_gates.enabled(Feature::TASMultiLayerTopology),
        }
    }

    /// Loads `path` (or Kueue's defaults when `None`) with the service account's namespace as
    /// fallback, and logs [`Configuration::warnings`].
    pub fn load(path: Option<&Path>) -> Result<Self, ConfigError> {
        Self::load_with(path, &LoadOptions::from_environment())
    }

    /// Loads `path` (or Kueue's defaults when `None`) with explicit options, and logs
    /// [`Configuration::warnings`].
    pub fn load_with(path: Option<&Path>, options: &LoadOptions) -> Result<Self, ConfigError> {
        let configuration = match path {
            Some(path) => {
                let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
                    path: path.to_owned(),
                    source,
                })?;
                Self::from_yaml(&text, options)?
            }
            None => Self::from_defaults(options)?,
        };
        for warning in &configuration.warnings {
            tracing::warn!("{warning}");
        }
        Ok(configuration)
    }

    /// Decodes, defaults and validates a configuration file's text.
    pub fn from_yaml(text: &str, options: &LoadOptions) -> Result<Self, ConfigError> {
        let document: serde_json::Value = crate::k8s::yaml::from_str(text)?;
        let serde_json::Value::Object(fields) = &document else {
            return Err(ConfigError::Decode {
                path: String::new(),
                message: format!(
                    "expected a mapping with apiVersion and kind: {KIND}, found {}",
                    yaml_kind(&document)
                ),
            });
        };
        let api_version = resolve::api_version_and_kind(fields)?;
        let (mut hub, dropped) = match api_version {
            ApiVersion::V1beta2 => (decode::<v1beta2::Configuration>(document)?, Vec::new()),
            ApiVersion::V1beta1 => {
                let converted = decode::<v1beta1::Configuration>(document)?.into_hub();
                (converted.hub, converted.dropped)
            }
        };
        options.overrides.apply(&mut hub);
        let mut configuration = resolve::resolve(hub, Some(api_version), options)?;
        let mut warnings: Vec<String> = dropped
            .into_iter()
            .map(|field| format!("{field} is ignored (Kueue ignores it too)"))
            .collect();
        warnings.append(&mut configuration.warnings);
        configuration.warnings = warnings;
        Ok(configuration)
    }

    /// Kueue's defaults (as for v1beta2), as used when no file is given.
    pub fn from_defaults(options: &LoadOptions) -> Result<Self, ConfigError> {
        let mut hub = v1beta2::Configuration::default();
        options.overrides.apply(&mut hub);
        resolve::resolve(hub, None, options)
    }
}

fn decode<T: serde::de::DeserializeOwned>(document: serde_json::Value) -> Result<T, ConfigError> {
    serde_path_to_error::deserialize(document).map_err(|error| ConfigError::Decode {
        path: error.path().to_string(),
        message: error.into_inner().to_string(),
    })
}

fn yaml_kind(value: &serde_json::Value) -> &'static str {
    match value {
        serde_json::Value::Null => "an empty document",
        serde_json::Value::Array(_) => "a list",
        serde_json::Value::Object(_) => "a mapping",
        serde_json::Value::Bool(_)
        | serde_json::Value::Number(_)
        | serde_json::Value::String(_) => "a scalar",
    }
}
