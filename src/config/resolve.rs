//! Kueue's defaults and validation, turning the decoded hub into a [`Configuration`].
//!
//! Every section is defaulted and checked in one pass; all problems are collected so that a file
//! with several mistakes is reported in one go.

use std::{
    collections::BTreeMap,
    net::{IpAddr, Ipv4Addr},
    path::PathBuf,
    time::Duration,
};

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, LabelSelectorRequirement};
use kube::core::Selector;

use crate::k8s::field::{BadValue, quote};
use crate::k8s::names;

use super::{
    ApiVersion, BindAddress, ClientConnection, ConfigError, Configuration, Controller,
    DEFAULT_HEALTH_PROBE_BIND_ADDRESS, DEFAULT_LEADER_ELECTION_ID, DEFAULT_METRICS_BIND_ADDRESS,
    DEFAULT_NAMESPACE, DEFAULT_VISIBILITY_BIND_PORT, DEFAULT_WEBHOOK_CERT_DIR,
    DEFAULT_WEBHOOK_PORT, DEFAULT_WEBHOOK_SECRET_NAME, DEFAULT_WEBHOOK_SERVICE_NAME, Feature,
    FeatureGates, FieldError, GoDuration, Health, InternalCertManagement, KIND, LeaderElection,
    LoadOptions, LocalQueueMetrics, Metrics, NAMESPACE_NAME_LABEL, NamespaceSelector,
    PreemptionStrategy, Webhook, v1beta2,
};

mod queueing;

const NEGATIVE: &str = "must be greater than or equal to 0";
const PORT_RANGE: &str = "must be between 1 and 65535, inclusive";
const DEFAULT_PODS_READY_TIMEOUT: GoDuration = GoDuration::from_mins(30);
const DEFAULT_USAGE_SAMPLING_INTERVAL: GoDuration = GoDuration::from_mins(5);
const DEFAULT_LEASE_DURATION: GoDuration = GoDuration::from_secs(15);
const DEFAULT_RENEW_DEADLINE: GoDuration = GoDuration::from_secs(10);
const DEFAULT_RETRY_PERIOD: GoDuration = GoDuration::from_secs(2);
/// client-go requires `renewDeadline > retryPeriod × JitterFactor`.
const LEADER_ELECTION_JITTER: f64 = 1.2;
/// The only Lease lock Kuota implements (Kueue's default, `leases`).
const LEASES_RESOURCE_LOCK: &str = "leases";
const DEFAULT_BACKOFF_BASE_SECONDS: i32 = 60;
const DEFAULT_BACKOFF_MAX_SECONDS: i32 = 3600;
const DEFAULT_CLIENT_QPS: f32 = 300.0;
const DEFAULT_CLIENT_BURST: i32 = 500;
const KUBE_SYSTEM: &str = "kube-system";
/// The probe paths Kuota's health listener serves, whatever the file names.
const SERVED_READINESS_PATH: &str = "/readyz";
const SERVED_LIVENESS_PATH: &str = "/healthz";
/// The `preemptionStrategies` lists Kueue accepts, in order.
const PREEMPTION_STRATEGY_SETS: &[&[PreemptionStrategy]] = &[
    &[PreemptionStrategy::LessThanOrEqualToFinalShare],
    &[PreemptionStrategy::LessThanInitialShare],
    &[
        PreemptionStrategy::LessThanOrEqualToFinalShare,
        PreemptionStrategy::LessThanInitialShare,
    ],
];

/// Checks `apiVersion` and `kind` before the body is decoded, reporting both at once.
pub(super) fn api_version_and_kind(
    fields: &serde_json::Map<String, serde_json::Value>,
) -> Result<ApiVersion, ConfigError> {
    let mut errors = Vec::new();
    let api_version = match fields.get("apiVersion") {
        None | Some(serde_json::Value::Null) => {
            errors.push(FieldError::required(
                "apiVersion",
                format!(
                    "must be one of {}",
                    ApiVersion::NAMES
                        .iter()
                        .map(|name| quote(name))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            ));
            None
        }
        Some(serde_json::Value::String(name)) => {
            let version = ApiVersion::from_name(name);
            if version.is_none() {
                errors.push(FieldError::not_supported(
                    "apiVersion",
                    name,
                    ApiVersion::NAMES,
                ));
            }
            version
        }
        Some(other) => {
            errors.push(FieldError::not_supported(
                "apiVersion",
                BadValue::json(other),
                ApiVersion::NAMES,
            ));
            None
        }
    };
    match fields.get("kind") {
        None | Some(serde_json::Value::Null) => {
            errors.push(FieldError::required(
                "kind",
                format!("must be {}", quote(KIND)),
            ));
        }
        Some(serde_json::Value::String(kind)) if kind == KIND => {}
        Some(serde_json::Value::String(kind)) => {
            errors.push(FieldError::not_supported("kind", kind, &[KIND]));
        }
        Some(other) => errors.push(FieldError::not_supported(
            "kind",
            BadValue::json(other),
            &[KIND],
        )),
    }
    match api_version {
        Some(version) if errors.is_empty() => Ok(version),
        _ => Err(ConfigError::Invalid(errors)),
    }
}

/// Applies defaults to the hub and validates it. `origin` is the file's version (`None`: no
/// file); a v1beta1 file without an enabled `waitForPodsReady` has it off.
pub(super) fn resolve(
    hub: v1beta2::Configuration,
    origin: Option<ApiVersion>,
    options: &LoadOptions,
) -> Result<Configuration, ConfigError> {
    let mut resolver = Resolver::default();
    let configuration = resolver.configuration(hub, origin, options);
    if resolver.errors.is_empty() {
        Ok(Configuration {
            warnings: resolver.warnings,
            ..configuration
        })
    } else {
        Err(ConfigError::Invalid(resolver.errors))
    }
}

fn non_empty(text: &Option<String>) -> Option<&str> {
    text.as_deref().filter(|text| !text.is_empty())
}

/// `Kind.version.group`, as Kueue's `externalFrameworks` expects.
fn is_kind_version_group(text: &str) -> bool {
    let mut parts = text.splitn(3, '.');
    matches!(
        (parts.next(), parts.next(), parts.next()),
        (Some(kind), Some(version), Some(group))
            if !kind.is_empty() && !version.is_empty() && !group.is_empty()
    )
}

fn default_namespace_selector(namespace: &str) -> LabelSelector {
    LabelSelector {
        match_expressions: Some(vec![LabelSelectorRequirement {
            key: NAMESPACE_NAME_LABEL.to_owned(),
            operator: "NotIn".to_owned(),
            values: Some(vec![KUBE_SYSTEM.to_owned(), namespace.to_owned()]),
        }]),
        match_labels: None,
    }
}

#[derive(Default)]
struct Resolver {
    errors: Vec<FieldError>,
    warnings: Vec<String>,
}

impl Resolver {
    fn configuration(
        &mut self,
        hub: v1beta2::Configuration,
        origin: Option<ApiVersion>,
        options: &LoadOptions,
    ) -> Configuration {
        let feature_gates = self.feature_gates(hub.feature_gates.as_ref(), options);
        let namespace = self.namespace(&hub.namespace, options);
        let managed_jobs_namespace_selector =
            self.managed_jobs_namespace_selector(hub.managed_jobs_namespace_selector, &namespace);
        let metrics = hub.metrics.unwrap_or_default();
        let resources = hub.resources.unwrap_or_default();
        self.ignored(
            "pprofBindAddress",
            non_empty(&hub.pprof_bind_address).is_some(),
            "Kuota serves no pprof endpoint",
        );
        self.ignored(
            "tls",
            hub.tls.is_some(),
            "Kuota's webhook uses its own TLS settings (TLS 1.2 or newer)",
        );
        self.ignored(
            "multiKueue",
            hub.multi_kueue.is_some(),
            "Kuota does not implement MultiKueue",
        );
        self.ignored(
            "metrics.customLabels",
            metrics
                .custom_labels
                .as_ref()
                .is_some_and(|labels| !labels.is_empty()),
            "Kuota adds no custom metric labels",
        );
        self.ignored(
            "resources.deviceClassMappings",
            resources
                .device_class_mappings
                .as_ref()
                .is_some_and(|mappings| !mappings.is_empty()),
            "Kuota does not account DRA devices",
        );
        self.ignored(
            "clientConnection",
            hub.client_connection.is_some(),
            "Kuota's API client has no client-side rate limit",
        );
        self.ignored(
            "admissionFairSharing",
            hub.admission_fair_sharing.is_some()
                && !feature_gates.enabled(Feature::AdmissionFairSharing),
            "the AdmissionFairSharing feature gate is off",
        );
        Configuration {
            api_version: origin,
            manage_jobs_without_queue_name: hub.manage_jobs_without_queue_name.unwrap_or(false),
            managed_jobs_namespace_selector,
            webhook: self.webhook(hub.webhook.unwrap_or_default()),
            metrics: self.metrics(metrics),
            health: self.health(hub.health.unwrap_or_default()),
            visibility_server: self
                .visibility_server(hub.visibility_server.unwrap_or_default(), &feature_gates),
            leader_election: self
                .leader_election(hub.leader_election.unwrap_or_default(), &namespace),
            controller: self.controller(hub.controller.unwrap_or_default()),
            client_connection: self.client_connection(hub.client_connection.unwrap_or_default()),
            internal_cert_management: self
                .internal_cert_management(hub.internal_cert_management.unwrap_or_default()),
            wait_for_pods_ready: self.wait_for_pods_ready(
                hub.wait_for_pods_ready,
                origin,
                &feature_gates,
            ),
            integrations: self.integrations(hub.integrations.unwrap_or_default()),
            fair_sharing: hub
                .fair_sharing
                .map(|fair_sharing| self.fair_sharing(fair_sharing)),
            admission_fair_sharing: hub
                .admission_fair_sharing
                .filter(|_| feature_gates.enabled(Feature::AdmissionFairSharing))
                .map(|fair_sharing| self.admission_fair_sharing(fair_sharing)),
            resources: self.resources(resources, &feature_gates),
            object_retention_policies: self
                .object_retention_policies(hub.object_retention_policies.unwrap_or_default()),
            queue_reference_policy: self.queue_reference_policy(&hub.queue_reference_policy),
            namespace,
            feature_gates,
            warnings: Vec::new(),
        }
    }

    fn ignored(&mut self, field: &str, is_set: bool, reason: &str) {
        if is_set {
            self.warnings.push(format!("{field} is ignored: {reason}"));
        }
    }

    fn check(&mut self, path: &str, value: &str, problems: Vec<String>) {
        self.errors.extend(
            problems
                .into_iter()
                .map(|problem| FieldError::invalid(path, value, problem)),
        );
    }

    /// A duration that must not be negative; negative ones are reported and read as zero.
    fn non_negative(&mut self, path: &str, duration: GoDuration) -> Duration {
        duration.to_std().unwrap_or_else(|| {
            self.errors
                .push(FieldError::invalid(path, duration.to_string(), NEGATIVE));
            Duration::ZERO
        })
    }

    /// A count that must not be negative; negative ones are reported and read as zero.
    fn count(&mut self, path: &str, value: i32) -> u32 {
        u32::try_from(value).unwrap_or_else(|_| {
            self.errors.push(FieldError::invalid(path, value, NEGATIVE));
            0
        })
    }

    fn port(&mut self, path: &str, value: i64) -> u16 {
        u16::try_from(value)
            .ok()
            .filter(|port| *port != 0)
            .unwrap_or_else(|| {
                self.errors
                    .push(FieldError::invalid(path, value, PORT_RANGE));
                0
            })
    }

    /// `[host]:port`, or `"0"` for "do not listen" (controller-runtime's convention).
    fn bind_address(&mut self, path: &str, text: &str) -> Option<BindAddress> {
        if text == "0" {
            return None;
        }
        let Some((host, port)) = text.rsplit_once(':') else {
            self.errors.push(FieldError::invalid(
                path,
                text,
                "must be [host]:port, or \"0\" to disable",
            ));
            return None;
        };
        let host = self.host(path, text, host)?;
        let port = port.parse::<u16>().ok().filter(|port| *port != 0);
        let Some(port) = port else {
            self.errors.push(FieldError::invalid(
                path,
                text,
                format!("port {PORT_RANGE}"),
            ));
            return None;
        };
        Some(BindAddress { host, port })
    }

    /// `Ok(None)` for an empty host (every address); reports anything but an IP or `localhost`.
    fn host(&mut self, path: &str, text: &str, host: &str) -> Option<Option<IpAddr>> {
        let unbracketed = host
            .strip_prefix('[')
            .and_then(|host| host.strip_suffix(']'))
            .unwrap_or(host);
        if unbracketed.is_empty() {
            return Some(None);
        }
        if unbracketed == "localhost" {
            return Some(Some(IpAddr::V4(Ipv4Addr::LOCALHOST)));
        }
        match unbracketed.parse::<IpAddr>() {
            Ok(address) => Some(Some(address)),
            Err(_) => {
                self.errors.push(FieldError::invalid(
                    path,
                    text,
                    "host must be empty, \"localhost\" or an IP address",
                ));
                None
            }
        }
    }

    fn feature_gates(
        &mut self,
        map: Option<&BTreeMap<String, bool>>,
        options: &LoadOptions,
    ) -> FeatureGates {
        let flag = options
            .feature_gates_flag
            .as_deref()
            .filter(|flag| !flag.is_empty());
        match FeatureGates::from_sources(flag, map) {
            Ok(gates) => {
                self.warnings.extend(gates.warnings());
                gates
            }
            Err(error) => {
                let (path, value) = match (flag, map) {
                    (Some(flag), None) => ("--feature-gates", BadValue::from(flag)),
                    (_, map) => ("featureGates", BadValue::json(&map)),
                };
                self.errors
                    .push(FieldError::invalid(path, value, error.to_string()));
                FeatureGates::default()
            }
        }
    }

    fn namespace(&mut self, namespace: &Option<String>, options: &LoadOptions) -> String {
        let namespace = non_empty(namespace)
            .or(non_empty(&options.fallback_namespace))
            .unwrap_or(DEFAULT_NAMESPACE)
            .to_owned();
        self.check("namespace", &namespace, names::dns1123_label(&namespace));
        namespace
    }

    fn managed_jobs_namespace_selector(
        &mut self,
        selector: Option<v1beta2::LabelSelector>,
        namespace: &str,
    ) -> NamespaceSelector {
        const PATH: &str = "managedJobsNamespaceSelector";
        let label_selector = selector
            .map(LabelSelector::from)
            .unwrap_or_else(|| default_namespace_selector(namespace));
        let well_formed = self.label_selector(PATH, &label_selector);
        let compiled = NamespaceSelector::new(label_selector.clone())
            .ok()
            .filter(|_| well_formed);
        if let Some(compiled) = &compiled {
            let mut prohibited = vec![KUBE_SYSTEM];
            if namespace != KUBE_SYSTEM {
                prohibited.push(namespace);
            }
            for name in prohibited {
                if compiled.matches_name(name) {
                    self.errors.push(FieldError::invalid(
                        PATH,
                        BadValue::json(compiled.label_selector()),
                        format!("should not match the {} namespace", quote(name)),
                    ));
                }
            }
        }
        // A malformed selector has been reported; the placeholder is never returned to callers.
        compiled.unwrap_or_else(|| NamespaceSelector {
            label_selector,
            selector: Selector::default(),
        })
    }

    /// Reports malformed requirements; true when the selector can be evaluated.
    fn label_selector(&mut self, path: &str, selector: &LabelSelector) -> bool {
        let errors_before = self.errors.len();
        for (index, requirement) in selector.match_expressions.iter().flatten().enumerate() {
            let path = format!("{path}.matchExpressions[{index}]");
            let has_values = requirement
                .values
                .as_ref()
                .is_some_and(|values| !values.is_empty());
            match requirement.operator.as_str() {
                "In" | "NotIn" if !has_values => self.errors.push(FieldError::required(
                    format!("{path}.values"),
                    "must be specified when `operator` is 'In' or 'NotIn'",
                )),
                "Exists" | "DoesNotExist" if has_values => self.errors.push(FieldError::forbidden(
                    format!("{path}.values"),
                    "may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
                )),
                "In" | "NotIn" | "Exists" | "DoesNotExist" => {}
                other => self.errors.push(FieldError::not_supported(
                    format!("{path}.operator"),
                    other,
                    &["In", "NotIn", "Exists", "DoesNotExist"],
                )),
            }
            if requirement.key.is_empty() {
                self.errors.push(FieldError::required(
                    format!("{path}.key"),
                    "must be specified",
                ));
            }
        }
        self.errors.len() == errors_before
    }

    fn webhook(&mut self, webhook: v1beta2::Webhook) -> Webhook {
        let port = self.port(
            "webhook.port",
            webhook.port.unwrap_or(i64::from(DEFAULT_WEBHOOK_PORT)),
        );
        let host = match non_empty(&webhook.host) {
            Some(host) => self.host("webhook.host", host, host).flatten(),
            None => None,
        };
        Webhook {
            address: BindAddress { host, port },
            cert_dir: PathBuf::from(
                non_empty(&webhook.cert_dir).unwrap_or(DEFAULT_WEBHOOK_CERT_DIR),
            ),
        }
    }

    fn visibility_server(
        &mut self,
        server: v1beta2::VisibilityServer,
        gates: &FeatureGates,
    ) -> Option<BindAddress> {
        let port = self.port(
            "visibilityServer.bindPort",
            server
                .bind_port
                .unwrap_or(i64::from(DEFAULT_VISIBILITY_BIND_PORT)),
        );
        let host = match non_empty(&server.bind_address) {
            Some(host) => self
                .host("visibilityServer.bindAddress", host, host)
                .flatten(),
            None => None,
        };
        gates
            .enabled(Feature::VisibilityOnDemand)
            .then_some(BindAddress { host, port })
    }

    fn metrics(&mut self, metrics: v1beta2::Metrics) -> Metrics {
        self.ignored(
            "metrics.enableClusterQueueResources",
            metrics.enable_cluster_queue_resources == Some(true),
            "Kuota exports no ClusterQueue resource metrics",
        );
        let bind_address = self.bind_address(
            "metrics.bindAddress",
            non_empty(&metrics.bind_address).unwrap_or(DEFAULT_METRICS_BIND_ADDRESS),
        );
        let local_queue_metrics = match metrics.local_queue_metrics {
            Some(local) => LocalQueueMetrics {
                enable: local.enable.unwrap_or(false),
                local_queue_selector: local.local_queue_selector.map(LabelSelector::from),
            },
            None => LocalQueueMetrics {
                enable: true,
                local_queue_selector: None,
            },
        };
        if let Some(selector) = &local_queue_metrics.local_queue_selector {
            self.label_selector("metrics.localQueueMetrics.localQueueSelector", selector);
        }
        Metrics {
            bind_address,
            enable_cluster_queue_resources: metrics.enable_cluster_queue_resources.unwrap_or(false),
            local_queue_metrics,
        }
    }

    fn health(&mut self, health: v1beta2::Health) -> Health {
        let probe_bind_address = self.bind_address(
            "health.healthProbeBindAddress",
            non_empty(&health.health_probe_bind_address)
                .unwrap_or(DEFAULT_HEALTH_PROBE_BIND_ADDRESS),
        );
        let mut endpoint = |path: &str, name: &Option<String>, default: &str| {
            let name = non_empty(name).unwrap_or(default).to_owned();
            if !name.starts_with('/') {
                self.check(path, &name, vec!["must start with \"/\"".to_owned()]);
            }
            name
        };
        let readiness_endpoint_name = endpoint(
            "health.readinessEndpointName",
            &health.readiness_endpoint_name,
            SERVED_READINESS_PATH,
        );
        let liveness_endpoint_name = endpoint(
            "health.livenessEndpointName",
            &health.liveness_endpoint_name,
            SERVED_LIVENESS_PATH,
        );
        self.ignored(
            "health.healthProbeBindAddress \"0\"",
            health.health_probe_bind_address.as_deref() == Some("0"),
            "Kuota always serves its probes (then on 0.0.0.0:8081)",
        );
        self.ignored(
            "health.readinessEndpointName",
            readiness_endpoint_name != SERVED_READINESS_PATH,
            "Kuota serves readiness at /readyz",
        );
        self.ignored(
            "health.livenessEndpointName",
            liveness_endpoint_name != SERVED_LIVENESS_PATH,
            "Kuota serves liveness at /healthz",
        );
        Health {
            probe_bind_address,
            readiness_endpoint_name,
            liveness_endpoint_name,
        }
    }

    fn leader_election(
        &mut self,
        election: v1beta2::LeaderElection,
        namespace: &str,
    ) -> LeaderElection {
        let leader_elect = election.leader_elect.unwrap_or(true);
        let resource_name = non_empty(&election.resource_name)
            .unwrap_or(DEFAULT_LEADER_ELECTION_ID)
            .to_owned();
        self.check(
            "leaderElection.resourceName",
            &resource_name,
            names::dns1123_subdomain(&resource_name),
        );
        let resource_namespace = non_empty(&election.resource_namespace)
            .unwrap_or(namespace)
            .to_owned();
        self.check(
            "leaderElection.resourceNamespace",
            &resource_namespace,
            names::dns1123_label(&resource_namespace),
        );
        if let Some(lock) =
            non_empty(&election.resource_lock).filter(|lock| *lock != LEASES_RESOURCE_LOCK)
        {
            self.errors.push(FieldError::not_supported(
                "leaderElection.resourceLock",
                lock,
                &[LEASES_RESOURCE_LOCK],
            ));
        }
        let or_default = |duration: Option<GoDuration>, default| {
            duration
                .filter(|duration| !duration.is_zero())
                .unwrap_or(default)
        };
        let lease = or_default(election.lease_duration, DEFAULT_LEASE_DURATION);
        let renew = or_default(election.renew_deadline, DEFAULT_RENEW_DEADLINE);
        let retry = or_default(election.retry_period, DEFAULT_RETRY_PERIOD);
        let lease_duration = self.non_negative("leaderElection.leaseDuration", lease);
        let renew_deadline = self.non_negative("leaderElection.renewDeadline", renew);
        let retry_period = self.non_negative("leaderElection.retryPeriod", retry);
        if leader_elect && lease_duration <= renew_deadline {
            self.errors.push(FieldError::invalid(
                "leaderElection.leaseDuration",
                lease.to_string(),
                format!(
                    "must be greater than renewDeadline ({})",
                    quote(&renew.to_string())
                ),
            ));
        }
        if leader_elect
            && renew_deadline.as_secs_f64() <= retry_period.as_secs_f64() * LEADER_ELECTION_JITTER
        {
            self.errors.push(FieldError::invalid(
                "leaderElection.renewDeadline",
                renew.to_string(),
                format!(
                    "must be greater than {LEADER_ELECTION_JITTER} times retryPeriod ({})",
                    quote(&retry.to_string())
                ),
            ));
        }
        LeaderElection {
            leader_elect,
            resource_name,
            resource_namespace,
            lease_duration,
            renew_deadline,
            retry_period,
        }
    }

    fn controller(&mut self, controller: v1beta2::Controller) -> Controller {
        let mut group_kind_concurrency = BTreeMap::new();
        for (group_kind, workers) in controller.group_kind_concurrency.unwrap_or_default() {
            match u32::try_from(workers).ok().filter(|workers| *workers > 0) {
                Some(workers) => {
                    group_kind_concurrency.insert(group_kind, workers);
                }
                None => self.errors.push(FieldError::invalid(
                    format!("controller.groupKindConcurrency[{group_kind}]"),
                    workers,
                    "must be between 1 and 4294967295",
                )),
            }
        }
        let cache_sync_timeout = controller.cache_sync_timeout.map(|nanos| {
            self.non_negative("controller.cacheSyncTimeout", GoDuration::from_nanos(nanos))
        });
        Controller {
            group_kind_concurrency,
            cache_sync_timeout,
        }
    }

    fn client_connection(&mut self, connection: v1beta2::ClientConnection) -> ClientConnection {
        let qps = connection.qps.unwrap_or(DEFAULT_CLIENT_QPS);
        if qps.is_nan() || qps < 0.0 {
            self.errors.push(FieldError::invalid(
                "clientConnection.qps",
                BadValue::rendered(qps.to_string()),
                NEGATIVE,
            ));
        }
        ClientConnection {
            qps,
            burst: self.count(
                "clientConnection.burst",
                connection.burst.unwrap_or(DEFAULT_CLIENT_BURST),
            ),
        }
    }

    fn internal_cert_management(
        &mut self,
        management: v1beta2::InternalCertManagement,
    ) -> Option<InternalCertManagement> {
        if !management.enable.unwrap_or(true) {
            return None;
        }
        let service = non_empty(&management.webhook_service_name)
            .unwrap_or(DEFAULT_WEBHOOK_SERVICE_NAME)
            .to_owned();
        self.check(
            "internalCertManagement.webhookServiceName",
            &service,
            names::dns1035_label(&service),
        );
        let secret = non_empty(&management.webhook_secret_name)
            .unwrap_or(DEFAULT_WEBHOOK_SECRET_NAME)
            .to_owned();
        self.check(
            "internalCertManagement.webhookSecretName",
            &secret,
            names::dns1123_subdomain(&secret),
        );
        Some(InternalCertManagement {
            webhook_service_name: service,
            webhook_secret_name: secret,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn warnings(body: &str) -> Vec<String> {
        let yaml =
            format!("apiVersion: config.kueue.x-k8s.io/v1beta2\nkind: Configuration\n{body}");
        Configuration::from_yaml(&yaml, &LoadOptions::default())
            .unwrap()
            .warnings
    }

    #[test]
    fn settings_kuota_does_not_act_on_are_warned_about_by_name() {
        let body = "\
metrics: {bindAddress: ':8443', enableClusterQueueResources: true, localQueueMetrics: {enable: true}}
health: {healthProbeBindAddress: '0', readinessEndpointName: /ready, livenessEndpointName: /live}
clientConnection: {qps: 300}
admissionFairSharing: {usageHalfLifeTime: 1h}
featureGates: {AdmissionFairSharing: false}
";
        assert_eq!(
            warnings(body),
            [
                "clientConnection is ignored: Kuota's API client has no client-side rate limit",
                "admissionFairSharing is ignored: the AdmissionFairSharing feature gate is off",
                "metrics.enableClusterQueueResources is ignored: Kuota exports no ClusterQueue resource metrics",
                "health.healthProbeBindAddress \"0\" is ignored: Kuota always serves its probes (then on 0.0.0.0:8081)",
                "health.readinessEndpointName is ignored: Kuota serves readiness at /readyz",
                "health.livenessEndpointName is ignored: Kuota serves liveness at /healthz",
            ]
        );
    }

    #[test]
    fn settings_that_ask_for_what_kuota_does_are_not_warned_about() {
        let body = "\
metrics: {bindAddress: ':9443', enableClusterQueueResources: false, localQueueMetrics: {enable: true, localQueueSelector: {matchLabels: {team: a}}}}
health: {healthProbeBindAddress: ':9090', readinessEndpointName: /readyz, livenessEndpointName: /healthz}
waitForPodsReady: {blockAdmission: true}
objectRetentionPolicies: {workloads: {afterFinished: 1h, afterDeactivatedByKueue: 0s}}
";
        assert_eq!(warnings(body), Vec::<String>::new());
    }

    #[test]
    fn v1beta1_waiting_for_pods_blocks_admission_by_default() {
        let yaml = "apiVersion: config.kueue.x-k8s.io/v1beta1\nkind: Configuration\nwaitForPodsReady: {enable: true}\n";
        let configuration = Configuration::from_yaml(yaml, &LoadOptions::default()).unwrap();
        assert!(configuration.warnings.is_empty());
        assert!(
            configuration
                .wait_for_pods_ready
                .is_some_and(|wait| wait.block_admission)
        );
    }

    #[test]
    fn kind_version_group() {
        assert!(is_kind_version_group("Foo.v1.example.com"));
        assert!(is_kind_version_group(
            "AppWrapper.v1beta2.workload.codeflare.dev"
        ));
        assert!(!is_kind_version_group("Foo.v1"));
        assert!(!is_kind_version_group(".v1.example.com"));
    }
}
