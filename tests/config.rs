//! Loading `Configuration` files: the seed's v1beta1 file, a full v1beta2 file, Kueue's defaults,
//! and broken files with the exact error lines they produce.

use std::{collections::BTreeMap, net::IpAddr, path::Path, path::PathBuf, time::Duration};

use k8s_openapi::apimachinery::pkg::{
    api::resource::Quantity,
    apis::meta::v1::{LabelSelector, LabelSelectorRequirement},
};
use kuota::config::{
    AdmissionFairSharing, ApiVersion, BindAddress, ClientConnection, ConfigError, Configuration,
    Controller, FairSharing, Feature, FeatureGates, Health, Integrations, InternalCertManagement,
    LeaderElection, LoadOptions, LocalQueueMetrics, Metrics, NamespaceSelector,
    ObjectRetentionPolicies, Overrides, PreemptionStrategy, QueueReferencePolicy,
    QuotaCheckStrategy, RequeuingStrategy, RequeuingTimestamp, ResourceTransformation, Resources,
    TransformationStrategy, WaitForPodsReady, Webhook, WorkloadRetentionPolicy,
};
use pretty_assertions::assert_eq;

const SEED_FRAMEWORKS: [&str; 10] = [
    "batch/job",
    "kubeflow.org/mpijob",
    "ray.io/rayjob",
    "ray.io/raycluster",
    "jobset.x-k8s.io/jobset",
    "kubeflow.org/paddlejob",
    "kubeflow.org/pytorchjob",
    "kubeflow.org/tfjob",
    "kubeflow.org/xgboostjob",
    "kubeflow.org/jaxjob",
];

const SUPPORTED: &str = "\"batch/job\", \"jobset.x-k8s.io/jobset\", \"ray.io/rayjob\", \"ray.io/raycluster\", \"kubeflow.org/mpijob\", \"kubeflow.org/pytorchjob\", \"kubeflow.org/tfjob\", \"kubeflow.org/xgboostjob\", \"kubeflow.org/paddlejob\", \"kubeflow.org/jaxjob\"";

const HEADER: &str = "apiVersion: config.kueue.x-k8s.io/v1beta2\nkind: Configuration\n";
const HEADER_V1BETA1: &str = "apiVersion: config.kueue.x-k8s.io/v1beta1\nkind: Configuration\n";

fn data(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/config")
        .join(name)
}

fn load(name: &str, options: &LoadOptions) -> Result<Configuration, ConfigError> {
    Configuration::load_with(Some(&data(name)), options)
}

fn selector(requirements: &[(&str, &str, &[&str])]) -> LabelSelector {
    LabelSelector {
        match_expressions: Some(
            requirements
                .iter()
                .map(|(key, operator, values)| LabelSelectorRequirement {
                    key: key.to_string(),
                    operator: operator.to_string(),
                    values: Some(values.iter().map(|v| v.to_string()).collect()),
                })
                .collect(),
        ),
        match_labels: None,
    }
}

fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

fn strings(items: &[&str]) -> Vec<String> {
    items.iter().map(|item| item.to_string()).collect()
}

fn any_address(port: u16) -> Option<BindAddress> {
    Some(BindAddress { host: None, port })
}

/// Kueue's v1beta2 defaults with Kuota's namespace `kueue-system`.
fn kueue_defaults() -> Configuration {
    Configuration {
        api_version: None,
        namespace: "kueue-system".into(),
        manage_jobs_without_queue_name: false,
        managed_jobs_namespace_selector: NamespaceSelector::new(selector(&[(
            "kubernetes.io/metadata.name",
            "NotIn",
            &["kube-system", "kueue-system"],
        )]))
        .unwrap(),
        webhook: Webhook {
            address: BindAddress {
                host: None,
                port: 9443,
            },
            cert_dir: PathBuf::from("/tmp/k8s-webhook-server/serving-certs"),
        },
        metrics: Metrics {
            bind_address: any_address(8443),
            enable_cluster_queue_resources: false,
            local_queue_metrics: LocalQueueMetrics {
                enable: true,
                local_queue_selector: None,
            },
        },
        health: Health {
            probe_bind_address: any_address(8081),
            readiness_endpoint_name: "/readyz".into(),
            liveness_endpoint_name: "/healthz".into(),
        },
        visibility_server: any_address(8082),
        leader_election: LeaderElection {
            leader_elect: true,
            resource_name: "c1f6bfd2.kueue.x-k8s.io".into(),
            resource_namespace: "kueue-system".into(),
            lease_duration: Duration::from_secs(15),
            renew_deadline: Duration::from_secs(10),
            retry_period: Duration::from_secs(2),
        },
        controller: Controller {
            group_kind_concurrency: BTreeMap::new(),
            cache_sync_timeout: None,
        },
        client_connection: ClientConnection {
            qps: 300.0,
            burst: 500,
        },
        internal_cert_management: Some(InternalCertManagement {
            webhook_service_name: "kueue-webhook-service".into(),
            webhook_secret_name: "kueue-webhook-server-cert".into(),
        }),
        wait_for_pods_ready: Some(WaitForPodsReady {
            timeout: Duration::from_secs(30 * 60),
            block_admission: false,
            recovery_timeout: Duration::from_secs(30 * 60),
            requeuing_strategy: RequeuingStrategy {
                timestamp: RequeuingTimestamp::Eviction,
                backoff_limit_count: None,
                backoff_base_seconds: 60,
                backoff_max_seconds: 3600,
            },
        }),
        integrations: Integrations {
            frameworks: strings(&["batch/job"]),
            external_frameworks: Vec::new(),
            label_keys_to_copy: Vec::new(),
        },
        fair_sharing: None,
        admission_fair_sharing: None,
        resources: Resources {
            quota_check_strategy: QuotaCheckStrategy::BlockUndeclared,
            exclude_resource_prefixes: Vec::new(),
            transformations: Vec::new(),
        },
        object_retention_policies: ObjectRetentionPolicies::default(),
        feature_gates: FeatureGates::default(),
        queue_reference_policy: QueueReferencePolicy::Reject,
        warnings: Vec::new(),
    }
}

#[test]
fn no_file_gives_kueue_defaults() {
    assert_eq!(
        Configuration::from_defaults(&LoadOptions::default()).unwrap(),
        kueue_defaults()
    );
}

#[test]
fn minimal_v1beta2_file_gives_kueue_defaults() {
    let configuration = Configuration::from_yaml(HEADER, &LoadOptions::default()).unwrap();
    assert_eq!(
        configuration,
        Configuration {
            api_version: Some(ApiVersion::V1beta2),
            ..kueue_defaults()
        }
    );
}

#[test]
fn seed_v1beta1_file_loads() {
    let configuration = load("seed-v1beta1.yaml", &LoadOptions::default()).unwrap();
    assert_eq!(
        configuration,
        Configuration {
            api_version: Some(ApiVersion::V1beta1),
            // v1beta1 without `waitForPodsReady.enable: true` does not wait for pods.
            wait_for_pods_ready: None,
            integrations: Integrations {
                frameworks: strings(&SEED_FRAMEWORKS),
                ..kueue_defaults().integrations
            },
            ..kueue_defaults()
        }
    );
}

#[test]
fn shipped_config_enables_every_framework_kuota_implements() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("manifests/config/controller_manager_config.yaml");
    let configuration = Configuration::load_with(Some(&path), &LoadOptions::default()).unwrap();
    assert_eq!(
        configuration,
        Configuration {
            api_version: Some(ApiVersion::V1beta2),
            integrations: Integrations {
                frameworks: strings(&kuota::config::supported_frameworks()),
                ..kueue_defaults().integrations
            },
            ..kueue_defaults()
        }
    );
}

#[test]
fn seed_v1beta1_file_loads_with_the_seed_helm_feature_gates() {
    // The seed's Helm values pass these gates as `--feature-gates`.
    let options = LoadOptions {
        feature_gates_flag: Some("TopologyAwareScheduling=true,LocalQueueMetrics=true".into()),
        ..LoadOptions::default()
    };
    let configuration = load("seed-v1beta1.yaml", &options).unwrap();
    assert_eq!(
        configuration.feature_gates.explicit(),
        &BTreeMap::from([
            (Feature::TopologyAwareScheduling, true),
            (Feature::LocalQueueMetrics, true),
        ])
    );
    assert_eq!(configuration.integrations.frameworks, SEED_FRAMEWORKS);
}

#[test]
fn full_v1beta2_file_loads() {
    let configuration = load("full-v1beta2.yaml", &LoadOptions::default()).unwrap();
    let managed = LabelSelector {
        match_labels: Some(labels(&[("kuota.example.com/managed", "true")])),
        ..selector(&[(
            "kubernetes.io/metadata.name",
            "NotIn",
            &["kube-system", "kuota-system"],
        )])
    };
    let expected = Configuration {
        api_version: Some(ApiVersion::V1beta2),
        namespace: "kuota-system".into(),
        manage_jobs_without_queue_name: true,
        managed_jobs_namespace_selector: NamespaceSelector::new(managed).unwrap(),
        webhook: Webhook {
            address: BindAddress {
                host: Some("0.0.0.0".parse().unwrap()),
                port: 10443,
            },
            cert_dir: PathBuf::from("/var/run/kuota/certs"),
        },
        metrics: Metrics {
            bind_address: Some(BindAddress {
                host: Some("127.0.0.1".parse().unwrap()),
                port: 9090,
            }),
            enable_cluster_queue_resources: true,
            local_queue_metrics: LocalQueueMetrics {
                enable: true,
                local_queue_selector: Some(LabelSelector {
                    match_labels: Some(labels(&[("team", "ml")])),
                    match_expressions: None,
                }),
            },
        },
        health: Health {
            probe_bind_address: Some(BindAddress {
                host: Some("::".parse().unwrap()),
                port: 9091,
            }),
            readiness_endpoint_name: "/ready".into(),
            liveness_endpoint_name: "/live".into(),
        },
        visibility_server: any_address(8082),
        leader_election: LeaderElection {
            leader_elect: true,
            resource_name: "kuota-leader".into(),
            resource_namespace: "kuota-leases".into(),
            lease_duration: Duration::from_secs(30),
            renew_deadline: Duration::from_secs(20),
            retry_period: Duration::from_secs(5),
        },
        controller: Controller {
            group_kind_concurrency: BTreeMap::from([
                ("Job.batch".into(), 5),
                ("Workload.kueue.x-k8s.io".into(), 10),
            ]),
            cache_sync_timeout: Some(Duration::from_secs(120)),
        },
        client_connection: ClientConnection {
            qps: 50.5,
            burst: 100,
        },
        internal_cert_management: Some(InternalCertManagement {
            webhook_service_name: "kuota-webhook".into(),
            webhook_secret_name: "kuota-webhook-cert".into(),
        }),
        wait_for_pods_ready: Some(WaitForPodsReady {
            timeout: Duration::from_secs(600),
            block_admission: true,
            recovery_timeout: Duration::from_secs(180),
            requeuing_strategy: RequeuingStrategy {
                timestamp: RequeuingTimestamp::Creation,
                backoff_limit_count: Some(5),
                backoff_base_seconds: 30,
                backoff_max_seconds: 1800,
            },
        }),
        integrations: Integrations {
            frameworks: strings(&[
                "batch/job",
                "jobset.x-k8s.io/jobset",
                "ray.io/rayjob",
                "ray.io/raycluster",
                "kubeflow.org/mpijob",
                "kubeflow.org/pytorchjob",
                "kubeflow.org/tfjob",
                "kubeflow.org/xgboostjob",
                "kubeflow.org/paddlejob",
                "kubeflow.org/jaxjob",
            ]),
            external_frameworks: strings(&["Foo.v1.example.com"]),
            label_keys_to_copy: strings(&["team"]),
        },
        fair_sharing: Some(FairSharing {
            preemption_strategies: vec![
                PreemptionStrategy::LessThanOrEqualToFinalShare,
                PreemptionStrategy::LessThanInitialShare,
            ],
        }),
        admission_fair_sharing: Some(AdmissionFairSharing {
            usage_half_life_time: Duration::from_secs(168 * 3600),
            usage_sampling_interval: Duration::from_secs(60),
            resource_weights: BTreeMap::from([
                ("cpu".into(), 0.0),
                ("nvidia.com/gpu".into(), 100.0),
            ]),
        }),
        resources: Resources {
            quota_check_strategy: QuotaCheckStrategy::BlockUndeclared,
            exclude_resource_prefixes: strings(&["example.com/"]),
            transformations: vec![
                ResourceTransformation {
                    input: "nvidia.com/mig-4g.5gb".into(),
                    strategy: TransformationStrategy::Replace,
                    multiply_by: None,
                    outputs: BTreeMap::from([
                        (
                            "example.com/accelerator-memory".into(),
                            Quantity("5Gi".into()),
                        ),
                        ("example.com/accelerator-gpc".into(), Quantity("4".into())),
                    ]),
                },
                ResourceTransformation {
                    input: "example.com/gpu-slice".into(),
                    strategy: TransformationStrategy::Retain,
                    multiply_by: Some("example.com/slices".into()),
                    outputs: BTreeMap::from([("example.com/gpu".into(), Quantity("1".into()))]),
                },
            ],
        },
        object_retention_policies: ObjectRetentionPolicies {
            workloads: WorkloadRetentionPolicy {
                after_finished: Some(Duration::from_secs(3600)),
                after_deactivated_by_kueue: Some(Duration::ZERO),
            },
        },
        feature_gates: FeatureGates::default()
            .with(Feature::LocalQueueMetrics, true)
            .with(Feature::PartialAdmission, false)
            .with(Feature::TopologyAwareScheduling, true),
        queue_reference_policy: QueueReferencePolicy::Warn,
        warnings: strings(&[
            "clientConnection is ignored: Kuota's API client has no client-side rate limit",
            "metrics.enableClusterQueueResources is ignored: Kuota exports no ClusterQueue resource metrics",
            "health.readinessEndpointName is ignored: Kuota serves readiness at /readyz",
            "health.livenessEndpointName is ignored: Kuota serves liveness at /healthz",
        ]),
    };
    assert_eq!(configuration, expected);
    assert!(
        !configuration
            .feature_gates
            .enabled(Feature::PartialAdmission)
    );
    let selector = &configuration.managed_jobs_namespace_selector;
    assert!(selector.matches(&labels(&[
        ("kubernetes.io/metadata.name", "ml"),
        ("kuota.example.com/managed", "true"),
    ])));
    assert!(!selector.matches_name("ml"));
    assert_eq!(
        configuration.webhook.address.socket_addr().to_string(),
        "0.0.0.0:10443"
    );
    assert_eq!(
        configuration
            .health
            .probe_bind_address
            .unwrap()
            .socket_addr()
            .to_string(),
        "[::]:9091"
    );
}

#[test]
fn kueue_sample_loads_with_ignored_sections_reported() {
    let configuration = load("kueue-sample-v1beta2.yaml", &LoadOptions::default()).unwrap();
    assert_eq!(configuration.controller.group_kind_concurrency.len(), 7);
    assert_eq!(
        configuration
            .visibility_server
            .map(|address| address.socket_addr().to_string()),
        Some("0.0.0.0:8082".to_owned())
    );
    assert_eq!(
        configuration.warnings,
        [
            "pprofBindAddress is ignored: Kuota serves no pprof endpoint",
            "tls is ignored: Kuota's webhook uses its own TLS settings (TLS 1.2 or newer)",
            "multiKueue is ignored: Kuota does not implement MultiKueue",
            "clientConnection is ignored: Kuota's API client has no client-side rate limit",
        ]
    );
}

#[test]
fn v1beta1_switches_and_their_defaults() {
    let yaml = format!(
        "{HEADER_V1BETA1}waitForPodsReady:\n  enable: true\nfairSharing:\n  enable: true\nqueueVisibility:\n  updateIntervalSeconds: 5\n"
    );
    let configuration = Configuration::from_yaml(&yaml, &LoadOptions::default()).unwrap();
    assert_eq!(
        configuration.wait_for_pods_ready,
        Some(WaitForPodsReady {
            timeout: Duration::from_secs(300),
            block_admission: true,
            recovery_timeout: Duration::from_secs(300),
            requeuing_strategy: RequeuingStrategy {
                timestamp: RequeuingTimestamp::Eviction,
                backoff_limit_count: None,
                backoff_base_seconds: 60,
                backoff_max_seconds: 3600,
            },
        })
    );
    assert_eq!(
        configuration.fair_sharing,
        Some(FairSharing {
            preemption_strategies: vec![
                PreemptionStrategy::LessThanOrEqualToFinalShare,
                PreemptionStrategy::LessThanInitialShare,
            ],
        })
    );
    assert_eq!(
        configuration.warnings,
        ["queueVisibility is ignored (Kueue ignores it too)"]
    );
}

/// Kueue's own default configuration lists integrations Kuota lacks; it still loads, and each is
/// reported by name.
#[test]
fn kueue_integrations_kuota_lacks_are_ignored_by_name() {
    let yaml = "apiVersion: config.kueue.x-k8s.io/v1beta2\nkind: Configuration\n\
                integrations:\n  frameworks: [batch/job, pod, leaderworkerset.x-k8s.io/leaderworkerset]\n";
    let configuration = Configuration::from_yaml(yaml, &LoadOptions::default()).unwrap();
    assert_eq!(
        configuration.warnings,
        [
            "integrations.frameworks[1] \"pod\" is ignored: a Kueue integration that Kuota does not implement; its objects are not queued",
            "integrations.frameworks[2] \"leaderworkerset.x-k8s.io/leaderworkerset\" is ignored: a Kueue integration that Kuota does not implement; its objects are not queued",
        ]
    );
}

#[test]
fn fallback_namespace_and_overrides_feed_the_defaults() {
    let options = LoadOptions {
        fallback_namespace: Some("from-service-account".into()),
        ..LoadOptions::default()
    };
    let configuration = Configuration::from_yaml(HEADER, &options).unwrap();
    assert_eq!(configuration.namespace, "from-service-account");
    assert_eq!(
        configuration.leader_election.resource_namespace,
        "from-service-account"
    );
    assert!(
        !configuration
            .managed_jobs_namespace_selector
            .matches_name("from-service-account")
    );

    let options = LoadOptions {
        overrides: Overrides {
            namespace: Some("kuota".into()),
            webhook_port: Some(8443),
            health_probe_bind_address: Some("0".into()),
            metrics_bind_address: Some("localhost:9100".into()),
            visibility_bind_address: Some("127.0.0.1:18082".into()),
            leader_elect: Some(false),
        },
        ..options
    };
    let yaml = format!("{HEADER}namespace: in-file\nwebhook:\n  port: 7443\n");
    let configuration = Configuration::from_yaml(&yaml, &options).unwrap();
    assert_eq!(configuration.namespace, "kuota");
    assert_eq!(configuration.webhook.address.port, 8443);
    assert_eq!(configuration.health.probe_bind_address, None);
    assert_eq!(
        configuration.metrics.bind_address,
        Some(BindAddress {
            host: Some(IpAddr::from([127, 0, 0, 1])),
            port: 9100
        })
    );
    assert_eq!(
        configuration.visibility_server,
        Some(BindAddress {
            host: Some(IpAddr::from([127, 0, 0, 1])),
            port: 18082
        })
    );
    assert!(!configuration.leader_election.leader_elect);
    assert!(
        configuration
            .managed_jobs_namespace_selector
            .matches_name("in-file")
    );
    assert!(
        !configuration
            .managed_jobs_namespace_selector
            .matches_name("kuota")
    );
}

#[test]
fn disable_wait_for_pods_ready_gate_turns_it_off() {
    let yaml = format!("{HEADER}featureGates:\n  DisableWaitForPodsReady: true\n");
    let configuration = Configuration::from_yaml(&yaml, &LoadOptions::default()).unwrap();
    assert_eq!(configuration.wait_for_pods_ready, None);
}

#[test]
fn unreadable_file_names_the_path() {
    let error = Configuration::load_with(
        Some(Path::new("/nonexistent/kuota.yaml")),
        &LoadOptions::default(),
    )
    .unwrap_err();
    assert!(
        error
            .to_string()
            .starts_with("cannot read configuration file /nonexistent/kuota.yaml: "),
        "{error}"
    );
}

struct Broken {
    name: &'static str,
    yaml: String,
    feature_gates_flag: Option<&'static str>,
    lines: Vec<String>,
}

fn broken(name: &'static str, body: &str, lines: &[&str]) -> Broken {
    Broken {
        name,
        yaml: format!("{HEADER}{body}"),
        feature_gates_flag: None,
        lines: lines.iter().map(|line| line.to_string()).collect(),
    }
}

fn broken_cases() -> Vec<Broken> {
    vec![
        broken(
            "unknown framework",
            "integrations:\n  frameworks: [batch/job, kubeflow.org/mpijob, ray.io/rayjob, ray.io/rayjobs]\n",
            &[&format!(
                "integrations.frameworks[3]: Unsupported value: \"ray.io/rayjobs\": supported values: {SUPPORTED}"
            )],
        ),
        broken(
            "Kueue framework Kuota lacks, duplicate framework",
            "integrations:\n  frameworks: [batch/job, deployment, batch/job]\n",
            &["integrations.frameworks[2]: Duplicate value: \"batch/job\""],
        ),
        broken(
            "pod integration with a selector matching every namespace",
            "managedJobsNamespaceSelector: {}\nintegrations:\n  frameworks: [batch/job, pod]\n",
            &[
                "managedJobsNamespaceSelector: Invalid value: {}: should not match the \"kube-system\" namespace",
                "managedJobsNamespaceSelector: Invalid value: {}: should not match the \"kueue-system\" namespace",
            ],
        ),
        broken(
            "selector matching Kuota's own namespace",
            "managedJobsNamespaceSelector:\n  matchExpressions:\n    - {key: kubernetes.io/metadata.name, operator: NotIn, values: [kube-system]}\n",
            &[
                "managedJobsNamespaceSelector: Invalid value: {\"matchExpressions\":[{\"key\":\"kubernetes.io/metadata.name\",\"operator\":\"NotIn\",\"values\":[\"kube-system\"]}]}: should not match the \"kueue-system\" namespace",
            ],
        ),
        broken(
            "malformed selector",
            "managedJobsNamespaceSelector:\n  matchExpressions:\n    - {key: team, operator: In}\n    - {key: env, operator: Exists, values: [x]}\n    - {key: tier, operator: Like, values: [x]}\n",
            &[
                "managedJobsNamespaceSelector.matchExpressions[0].values: Required value: must be specified when `operator` is 'In' or 'NotIn'",
                "managedJobsNamespaceSelector.matchExpressions[1].values: Forbidden: may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
                "managedJobsNamespaceSelector.matchExpressions[2].operator: Unsupported value: \"Like\": supported values: \"In\", \"NotIn\", \"Exists\", \"DoesNotExist\"",
            ],
        ),
        broken(
            "bad duration",
            "waitForPodsReady:\n  timeout: 30x\n",
            &[
                "waitForPodsReady.timeout: Invalid value: \"30x\": unknown unit \"x\"; expected a Go duration such as \"500ms\", \"30s\", \"5m\" or \"1h30m\"",
            ],
        ),
        broken(
            "duration as a number",
            "objectRetentionPolicies:\n  workloads:\n    afterFinished: 60\n",
            &[
                "objectRetentionPolicies.workloads.afterFinished: invalid type: integer `60`, expected a Go duration string such as \"30s\" or \"1h30m\"",
            ],
        ),
        broken(
            "negative durations",
            "waitForPodsReady:\n  timeout: -5m\n  recoveryTimeout: -1s\nobjectRetentionPolicies:\n  workloads:\n    afterDeactivatedByKueue: -1h\n",
            &[
                "waitForPodsReady.timeout: Invalid value: \"-5m0s\": must be greater than or equal to 0",
                "waitForPodsReady.recoveryTimeout: Invalid value: \"-1s\": must be greater than or equal to 0",
                "objectRetentionPolicies.workloads.afterDeactivatedByKueue: Invalid value: \"-1h0m0s\": must be greater than or equal to 0",
            ],
        ),
        broken(
            "negative backoff values, unknown timestamp",
            "waitForPodsReady:\n  requeuingStrategy:\n    timestamp: Admission\n    backoffLimitCount: -1\n    backoffBaseSeconds: -60\n    backoffMaxSeconds: -1\n",
            &[
                "waitForPodsReady.requeuingStrategy.timestamp: Unsupported value: \"Admission\": supported values: \"Creation\", \"Eviction\"",
                "waitForPodsReady.requeuingStrategy.backoffLimitCount: Invalid value: -1: must be greater than or equal to 0",
                "waitForPodsReady.requeuingStrategy.backoffBaseSeconds: Invalid value: -60: must be greater than or equal to 0",
                "waitForPodsReady.requeuingStrategy.backoffMaxSeconds: Invalid value: -1: must be greater than or equal to 0",
            ],
        ),
        broken(
            "negative qps and burst",
            "clientConnection:\n  qps: -1.5\n  burst: -10\n",
            &[
                "clientConnection.qps: Invalid value: -1.5: must be greater than or equal to 0",
                "clientConnection.burst: Invalid value: -10: must be greater than or equal to 0",
            ],
        ),
        broken(
            "bad ports and addresses",
            "webhook:\n  port: 70000\nmetrics:\n  bindAddress: \":0\"\nhealth:\n  healthProbeBindAddress: probe.local:8081\n",
            &[
                "webhook.port: Invalid value: 70000: must be between 1 and 65535, inclusive",
                "metrics.bindAddress: Invalid value: \":0\": port must be between 1 and 65535, inclusive",
                "health.healthProbeBindAddress: Invalid value: \"probe.local:8081\": host must be empty, \"localhost\" or an IP address",
            ],
        ),
        broken(
            "preemption strategies in the wrong order",
            "fairSharing:\n  preemptionStrategies: [LessThanInitialShare, LessThanOrEqualToFinalShare]\n",
            &[
                "fairSharing.preemptionStrategies: Unsupported value: [\"LessThanInitialShare\",\"LessThanOrEqualToFinalShare\"]: supported values: \"LessThanOrEqualToFinalShare\", \"LessThanInitialShare\", \"LessThanOrEqualToFinalShare,LessThanInitialShare\"",
            ],
        ),
        broken(
            "fair sharing without strategies",
            "fairSharing: {}\n",
            &["fairSharing.preemptionStrategies: Required value: must be specified"],
        ),
        broken(
            "unknown feature gate",
            "featureGates:\n  Foo: true\n",
            &["featureGates: Invalid value: {\"Foo\":true}: unknown feature gate \"Foo\""],
        ),
        broken(
            "locked feature gate",
            "featureGates:\n  ManagedJobsNamespaceSelectorAlwaysRespected: false\n",
            &[
                "featureGates: Invalid value: {\"ManagedJobsNamespaceSelectorAlwaysRespected\":false}: cannot set feature gate ManagedJobsNamespaceSelectorAlwaysRespected to false, feature is locked to true",
            ],
        ),
        Broken {
            feature_gates_flag: Some("PartialAdmission=false"),
            ..broken(
                "feature gates in the file and on the command line",
                "featureGates:\n  LocalQueueMetrics: true\n",
                &[
                    "featureGates: Invalid value: {\"LocalQueueMetrics\":true}: feature gates for CLI and configuration cannot both be specified",
                ],
            )
        },
        Broken {
            feature_gates_flag: Some("Foo=true"),
            ..broken(
                "unknown feature gate on the command line",
                "",
                &["--feature-gates: Invalid value: \"Foo=true\": unknown feature gate \"Foo\""],
            )
        },
        broken(
            "invalid queueReferencePolicy",
            "queueReferencePolicy: Lenient\n",
            &[
                "queueReferencePolicy: Unsupported value: \"Lenient\": supported values: \"Reject\", \"Warn\"",
            ],
        ),
        broken(
            "unknown field",
            "integrations:\n  framework: [batch/job]\n",
            &[
                "integrations.framework: unknown field `framework`, expected one of `frameworks`, `externalFrameworks`, `labelKeysToCopy`",
            ],
        ),
        broken(
            "typo inside a label selector",
            "managedJobsNamespaceSelector:\n  matchLabel:\n    team: ml\n",
            &[
                "managedJobsNamespaceSelector.matchLabel: unknown field `matchLabel`, expected `matchLabels` or `matchExpressions`",
            ],
        ),
        broken(
            "wrong type",
            "manageJobsWithoutQueueName: \"yes\"\n",
            &["manageJobsWithoutQueueName: invalid type: string \"yes\", expected a boolean"],
        ),
        broken(
            "v1beta1-only field in v1beta2",
            "queueVisibility:\n  updateIntervalSeconds: 5\n",
            &[
                "queueVisibility: unknown field `queueVisibility`, expected one of `apiVersion`, `kind`, `namespace`, `manageJobsWithoutQueueName`, `managedJobsNamespaceSelector`, `internalCertManagement`, `waitForPodsReady`, `clientConnection`, `integrations`, `multiKueue`, `fairSharing`, `admissionFairSharing`, `resources`, `featureGates`, `objectRetentionPolicies`, `visibilityServer`, `webhook`, `leaderElection`, `metrics`, `health`, `pprofBindAddress`, `controller`, `tls`, `queueReferencePolicy`",
            ],
        ),
        broken(
            "bad names",
            "namespace: Kuota_System\ninternalCertManagement:\n  webhookServiceName: 1-webhook\n  webhookSecretName: \"cert..secret\"\n",
            &[
                "namespace: Invalid value: \"Kuota_System\": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')",
                "leaderElection.resourceNamespace: Invalid value: \"Kuota_System\": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')",
                "internalCertManagement.webhookServiceName: Invalid value: \"1-webhook\": a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')",
                "internalCertManagement.webhookSecretName: Invalid value: \"cert..secret\": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')",
            ],
        ),
        broken(
            "leader election timing",
            "leaderElection:\n  leaseDuration: 10s\n  renewDeadline: 10s\n  retryPeriod: 9s\n  resourceLock: endpoints\n",
            &[
                "leaderElection.resourceLock: Unsupported value: \"endpoints\": supported values: \"leases\"",
                "leaderElection.leaseDuration: Invalid value: \"10s\": must be greater than renewDeadline (\"10s\")",
                "leaderElection.renewDeadline: Invalid value: \"10s\": must be greater than 1.2 times retryPeriod (\"9s\")",
            ],
        ),
        broken(
            "admission fair sharing and resources",
            "admissionFairSharing:\n  usageHalfLifeTime: -1h\n  usageSamplingInterval: -5m\n  resourceWeights:\n    cpu: -1\nresources:\n  quotaCheckStrategy: IgnoreUndeclared\n  excludeResourcePrefixes: [example.com/]\n  transformations:\n    - {input: a, strategy: Copy}\n    - {input: a}\n",
            &[
                "admissionFairSharing.usageHalfLifeTime: Invalid value: \"-1h0m0s\": must be greater than or equal to 0",
                "admissionFairSharing.usageSamplingInterval: Invalid value: \"-5m0s\": must be greater than 0",
                "admissionFairSharing.resourceWeights[cpu]: Invalid value: -1: must be greater than or equal to 0",
                "resources.quotaCheckStrategy: Invalid value: \"IgnoreUndeclared\": excludeResourcePrefixes is not allowed when quotaCheckStrategy is IgnoreUndeclared",
                "resources.transformations[0].strategy: Unsupported value: \"Copy\": supported values: \"Retain\", \"Replace\"",
                "resources.transformations[1].input: Duplicate value: \"a\"",
            ],
        ),
        broken(
            "external frameworks",
            "integrations:\n  externalFrameworks: [Foo.v1, Foo.v1.example.com, Foo.v1.example.com]\n",
            &[
                "integrations.externalFrameworks[0]: Invalid value: \"Foo.v1\": must be format, 'Kind.version.group.com'",
                "integrations.externalFrameworks[2]: Duplicate value: \"Foo.v1.example.com\"",
            ],
        ),
        Broken {
            yaml: format!("{HEADER_V1BETA1}waitForPodsReady:\n  enable: true\n  timeout: 0s\n"),
            ..broken(
                "v1beta1 waitForPodsReady with a zero timeout",
                "",
                &["waitForPodsReady.timeout: Required value: must be specified"],
            )
        },
        Broken {
            yaml: "apiVersion: config.kueue.x-k8s.io/v1alpha1\nkind: Config\n".into(),
            ..broken(
                "unknown apiVersion and kind",
                "",
                &[
                    "apiVersion: Unsupported value: \"config.kueue.x-k8s.io/v1alpha1\": supported values: \"config.kueue.x-k8s.io/v1beta1\", \"config.kueue.x-k8s.io/v1beta2\"",
                    "kind: Unsupported value: \"Config\": supported values: \"Configuration\"",
                ],
            )
        },
        Broken {
            yaml: "integrations:\n  frameworks: [batch/job]\n".into(),
            ..broken(
                "missing apiVersion and kind",
                "",
                &[
                    "apiVersion: Required value: must be one of \"config.kueue.x-k8s.io/v1beta1\", \"config.kueue.x-k8s.io/v1beta2\"",
                    "kind: Required value: must be \"Configuration\"",
                ],
            )
        },
        Broken {
            yaml: "- batch/job\n".into(),
            ..broken(
                "not a mapping",
                "",
                &["expected a mapping with apiVersion and kind: Configuration, found a list"],
            )
        },
        Broken {
            yaml: String::new(),
            ..broken(
                "empty file",
                "",
                &[
                    "expected a mapping with apiVersion and kind: Configuration, found an empty document",
                ],
            )
        },
        Broken {
            yaml: format!(
                "{HEADER}integrations:\n  frameworks: [batch/job]\n  frameworks: [ray.io/rayjob]\n"
            ),
            ..broken(
                "duplicate key",
                "",
                &[
                    "invalid YAML: duplicate mapping key `frameworks` is not allowed here at line 5, column 3",
                ],
            )
        },
    ]
}

#[test]
fn broken_configurations_report_exact_lines() {
    let cases = broken_cases();
    assert!(cases.len() >= 10);
    for case in cases {
        let options = LoadOptions {
            feature_gates_flag: case.feature_gates_flag.map(str::to_owned),
            ..LoadOptions::default()
        };
        let error = Configuration::from_yaml(&case.yaml, &options)
            .map(|configuration| format!("{configuration:#?}"))
            .expect_err(case.name);
        let lines: Vec<String> = error.to_string().lines().map(str::to_owned).collect();
        assert_eq!(lines, case.lines, "{}", case.name);
    }
}

#[test]
fn the_visibility_server_listens_where_configured_unless_its_gate_is_off() {
    let yaml = format!("{HEADER}visibilityServer:\n  bindAddress: 10.0.0.5\n  bindPort: 9082\n");
    let configuration = Configuration::from_yaml(&yaml, &LoadOptions::default()).unwrap();
    assert_eq!(
        configuration.visibility_server,
        Some(BindAddress {
            host: Some(IpAddr::from([10, 0, 0, 5])),
            port: 9082
        })
    );
    assert_eq!(configuration.warnings, Vec::<String>::new());

    let off = format!("{HEADER}featureGates:\n  VisibilityOnDemand: false\n");
    let configuration = Configuration::from_yaml(&off, &LoadOptions::default()).unwrap();
    assert_eq!(configuration.visibility_server, None);

    let bad = format!("{HEADER}visibilityServer:\n  bindPort: 70000\n  bindAddress: nowhere\n");
    let error = Configuration::from_yaml(&bad, &LoadOptions::default()).unwrap_err();
    assert_eq!(
        error.to_string(),
        "visibilityServer.bindPort: Invalid value: 70000: must be between 1 and 65535, inclusive\nvisibilityServer.bindAddress: Invalid value: \"nowhere\": host must be empty, \"localhost\" or an IP address"
    );
}
