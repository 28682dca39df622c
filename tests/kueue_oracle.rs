//! Kuota against Kueue's own code: our oracle program (`dev/kueue/oracle`, built from the pinned
//! release by `dev/kueue/build.sh oracle`) runs Kueue's packages and prints
//! - the Configuration Kueue resolves for no file and for a v1beta1 and a v1beta2 file that sets
//!   nothing, which is compared field by field with what Kuota does with the same input;
//! - every metric Kueue registers (name, type, label names), compared with Kuota's registry.
//!
//! Every difference must be fixed or listed, with its reason, in
//! `dev/kueue/deliberate-config-differences.tsv` or `dev/kueue/deliberate-metric-differences.tsv`;
//! a listed difference that no longer exists fails too.

mod common {
    pub mod deliberate;
}

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use kuota::config::{ApiVersion, BindAddress, Configuration, GoDuration, LoadOptions};
use kuota::metrics::{
    AttemptLabels, ClusterQueueLabels, ClusterQueueStatusLabels, EvictionLabels, LocalQueueGauges,
    LocalQueueResource, MetricsRegistry, PreemptionLabels, PriorityLabels, ReplicaRole,
    RequestResult,
};
use pretty_assertions::assert_eq;

use common::deliberate::listed;
use serde_json::{Map, Value, json};

/// The oracle's JSON answer to `command`, building the oracle first when it is not cached.
fn oracle(command: &str) -> Value {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("dev/kueue/build.sh");
    let built = Command::new("bash")
        .arg(&script)
        .arg("oracle")
        .output()
        .expect("run dev/kueue/build.sh oracle");
    assert!(
        built.status.success(),
        "dev/kueue/build.sh oracle failed: {}",
        String::from_utf8_lossy(&built.stderr)
    );
    let binary = String::from_utf8_lossy(&built.stdout).trim().to_owned();
    let output = Command::new(&binary)
        .arg(command)
        .output()
        .unwrap_or_else(|error| panic!("run {binary}: {error}"));
    assert!(
        output.status.success(),
        "oracle {command} failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).expect("the oracle prints JSON")
}

/// Fails on each found difference that is not listed and on each listed one not found.
fn check_listed<K: Ord + Clone + std::fmt::Debug>(
    found: &BTreeMap<K, String>,
    listed: &BTreeSet<K>,
) {
    let unlisted: BTreeMap<_, _> = found
        .iter()
        .filter(|(key, _)| !listed.contains(*key))
        .collect();
    assert_eq!(
        unlisted,
        BTreeMap::new(),
        "differences from Kueue not listed"
    );
    let stale: BTreeSet<_> = listed
        .iter()
        .filter(|key| !found.contains_key(*key))
        .collect();
    assert_eq!(stale, BTreeSet::new(), "listed differences that are gone");
}

// ---------------------------------------------------------------------------------------------
// Configuration defaults

/// The inputs both sides resolve: no file, and a file with only `apiVersion` and `kind`.
const CASES: [&str; 3] = ["none", "v1beta1", "v1beta2"];

fn kuota_resolves(case: &str) -> Configuration {
    let options = LoadOptions::default();
    let resolved = match case {
        "none" => Configuration::from_defaults(&options),
        version => Configuration::from_yaml(
            &format!("apiVersion: config.kueue.x-k8s.io/{version}\nkind: Configuration\n"),
            &options,
        ),
    };
    resolved.unwrap_or_else(|error| panic!("{case}: {error}"))
}

fn go_duration(duration: Duration) -> String {
    let nanos = i64::try_from(duration.as_nanos()).expect("a duration Go can hold");
    GoDuration::from_nanos(nanos).to_string()
}

/// `host:port` as Go writes a bind address; an empty host listens on every address.
fn bind_address(address: &BindAddress) -> String {
    match address.host {
        None => format!(":{}", address.port),
        Some(_) => address.socket_addr().to_string(),
    }
}

/// What Kuota does with `config`, in the shape of Kueue's v1beta2 Configuration JSON. Settings
/// Kuota has no behaviour for are left out; settings where Kuota behaves one fixed way show that
/// behaviour. Fields Kueue leaves unset (its code then falls back to a fixed behaviour) are left
/// out where Kuota's value is that behaviour.
fn kuota_view(config: &Configuration) -> Value {
    let health_address = config.health.probe_bind_address.as_ref().map(bind_address);
    let mut webhook = json!({
        "port": config.webhook.address.port,
        "certDir": config.webhook.cert_dir,
    });
    if let Some(host) = config.webhook.address.host {
        webhook["host"] = json!(host.to_string());
    }
    let election = &config.leader_election;
    let mut view = json!({
        "namespace": config.namespace,
        "manageJobsWithoutQueueName": config.manage_jobs_without_queue_name,
        "managedJobsNamespaceSelector": config.managed_jobs_namespace_selector.label_selector(),
        "webhook": webhook,
        "metrics": {
            "bindAddress": config.metrics.bind_address.as_ref().map(bind_address),
            "localQueueMetrics": {"enable": config.metrics.local_queue_metrics.enable},
        },
        "health": {"healthProbeBindAddress": health_address},
        "leaderElection": {
            "leaderElect": election.leader_elect,
            "leaseDuration": go_duration(election.lease_duration),
            "renewDeadline": go_duration(election.renew_deadline),
            "retryPeriod": go_duration(election.retry_period),
            // The only lock Kuota takes.
            "resourceLock": "leases",
            "resourceName": election.resource_name,
            "resourceNamespace": election.resource_namespace,
        },
        "internalCertManagement": match &config.internal_cert_management {
            Some(management) => json!({
                "enable": true,
                "webhookServiceName": management.webhook_service_name,
                "webhookSecretName": management.webhook_secret_name,
            }),
            None => json!({"enable": false}),
        },
        "integrations": {"frameworks": config.integrations.frameworks},
        "queueReferencePolicy": config.queue_reference_policy.as_str(),
    });
    let fields = view.as_object_mut().expect("an object");
    // Kueue's v1beta1 Configuration has no visibilityServer section to show.
    if let Some(address) = config.visibility_server
        && config.api_version != Some(ApiVersion::V1beta1)
    {
        let mut server = json!({"bindPort": address.port});
        if let Some(host) = address.host {
            server["bindAddress"] = json!(host.to_string());
        }
        fields.insert("visibilityServer".to_owned(), server);
    }
    if let Some(wait) = &config.wait_for_pods_ready {
        let strategy = &wait.requeuing_strategy;
        let mut requeuing = json!({
            "timestamp": strategy.timestamp.as_str(),
            "backoffBaseSeconds": strategy.backoff_base_seconds,
            "backoffMaxSeconds": strategy.backoff_max_seconds,
        });
        if let Some(count) = strategy.backoff_limit_count {
            requeuing["backoffLimitCount"] = json!(count);
        }
        fields.insert(
            "waitForPodsReady".to_owned(),
            json!({
                "timeout": go_duration(wait.timeout),
                // Kuota never holds admission back for another workload's pods.
                "blockAdmission": false,
                "recoveryTimeout": go_duration(wait.recovery_timeout),
                "requeuingStrategy": requeuing,
            }),
        );
    }
    let integrations = &config.integrations;
    if !integrations.external_frameworks.is_empty() {
        fields["integrations"]["externalFrameworks"] = json!(integrations.external_frameworks);
    }
    if !integrations.label_keys_to_copy.is_empty() {
        fields["integrations"]["labelKeysToCopy"] = json!(integrations.label_keys_to_copy);
    }
    let controller = &config.controller;
    let mut controller_view = Map::new();
    if !controller.group_kind_concurrency.is_empty() {
        controller_view.insert(
            "groupKindConcurrency".to_owned(),
            json!(controller.group_kind_concurrency),
        );
    }
    if let Some(timeout) = controller.cache_sync_timeout {
        controller_view.insert("cacheSyncTimeout".to_owned(), json!(timeout.as_nanos()));
    }
    if !controller_view.is_empty() {
        fields.insert("controller".to_owned(), Value::Object(controller_view));
    }
    if let Some(fair_sharing) = &config.fair_sharing {
        let strategies: Vec<&str> = fair_sharing
            .preemption_strategies
            .iter()
            .map(|strategy| strategy.as_str())
            .collect();
        fields.insert(
            "fairSharing".to_owned(),
            json!({"preemptionStrategies": strategies}),
        );
    }
    let resources = &config.resources;
    let mut resources_view = Map::new();
    // Kueue leaves the strategy unset and then checks BlockUndeclared.
    if resources.quota_check_strategy.as_str() != "BlockUndeclared" {
        resources_view.insert(
            "quotaCheckStrategy".to_owned(),
            json!(resources.quota_check_strategy.as_str()),
        );
    }
    if !resources.exclude_resource_prefixes.is_empty() {
        resources_view.insert(
            "excludeResourcePrefixes".to_owned(),
            json!(resources.exclude_resource_prefixes),
        );
    }
    if !resources.transformations.is_empty() {
        let transformations: Vec<Value> = resources
            .transformations
            .iter()
            .map(|transformation| {
                json!({
                    "input": transformation.input,
                    "strategy": transformation.strategy.as_str(),
                    "multiplyBy": transformation.multiply_by,
                    "outputs": transformation.outputs,
                })
            })
            .collect();
        resources_view.insert("transformations".to_owned(), json!(transformations));
    }
    if !resources_view.is_empty() {
        fields.insert("resources".to_owned(), Value::Object(resources_view));
    }
    let gates = config.feature_gates.explicit();
    if !gates.is_empty() {
        let gates: BTreeMap<String, bool> = gates
            .iter()
            .map(|(feature, enabled)| (feature.to_string(), *enabled))
            .collect();
        fields.insert("featureGates".to_owned(), json!(gates));
    }
    view
}

/// Each leaf of a JSON object by its dotted path; lists are leaves. `null` is no value.
fn leaves(value: &Value) -> BTreeMap<String, Value> {
    fn walk(prefix: &str, value: &Value, out: &mut BTreeMap<String, Value>) {
        match value {
            Value::Object(fields) => {
                for (name, field) in fields {
                    let path = if prefix.is_empty() {
                        name.clone()
                    } else {
                        format!("{prefix}.{name}")
                    };
                    walk(&path, field, out);
                }
            }
            Value::Null => {}
            leaf => {
                out.insert(prefix.to_owned(), leaf.clone());
            }
        }
    }
    let mut out = BTreeMap::new();
    walk("", value, &mut out);
    out
}

fn shown(value: Option<&Value>) -> String {
    value.map_or_else(|| "(unset)".to_owned(), Value::to_string)
}

/// `(case, path)` of each field whose value differs, with both values.
fn config_differences(kueue: &Value) -> BTreeMap<(String, String), String> {
    let mut differences = BTreeMap::new();
    for case in CASES {
        let mut theirs = leaves(&kueue[case]);
        // The file's own apiVersion and kind, not settings.
        theirs.remove("apiVersion");
        theirs.remove("kind");
        let ours = leaves(&kuota_view(&kuota_resolves(case)));
        let paths: BTreeSet<&String> = theirs.keys().chain(ours.keys()).collect();
        for path in paths {
            let (kueue_value, kuota_value) = (theirs.get(path), ours.get(path));
            if kueue_value != kuota_value {
                differences.insert(
                    (case.to_owned(), path.clone()),
                    format!("Kueue {}, Kuota {}", shown(kueue_value), shown(kuota_value)),
                );
            }
        }
    }
    differences
}

/// `(case, path)` of each listed configuration difference; `*` in the cases column stands for
/// every case, else the cases are comma-separated.
fn listed_config_differences() -> BTreeSet<(String, String)> {
    let mut keys = BTreeSet::new();
    for row in listed("dev/kueue/deliberate-config-differences.tsv", 2) {
        let cases: Vec<&str> = match row[0].as_str() {
            "*" => CASES.to_vec(),
            cases => cases.split(',').collect(),
        };
        for case in cases {
            assert!(CASES.contains(&case), "unknown case {case:?} in {row:?}");
            keys.insert((case.to_owned(), row[1].clone()));
        }
    }
    keys
}

#[test]
fn configuration_defaults_match_kueues_or_differ_only_as_listed() {
    let kueue = oracle("config-defaults");
    check_listed(&config_differences(&kueue), &listed_config_differences());
}

#[test]
fn kuota_view_shows_what_kuota_resolves() {
    // The view is the test's instrument: a field resolved differently must show.
    let yaml = "apiVersion: config.kueue.x-k8s.io/v1beta2\nkind: Configuration\nnamespace: team\nwaitForPodsReady:\n  timeout: 90s\n";
    let resolved = Configuration::from_yaml(yaml, &LoadOptions::default()).unwrap();
    let view = leaves(&kuota_view(&resolved));
    assert_eq!(view["namespace"], json!("team"));
    assert_eq!(view["waitForPodsReady.timeout"], json!("1m30s"));
    assert_eq!(view["waitForPodsReady.recoveryTimeout"], json!("1m30s"));
    assert_eq!(view["health.healthProbeBindAddress"], json!(":8081"));
    assert_eq!(
        view["managedJobsNamespaceSelector.matchExpressions"],
        json!([{"key": "kubernetes.io/metadata.name", "operator": "NotIn", "values": ["kube-system", "team"]}])
    );
}

// ---------------------------------------------------------------------------------------------
// Metrics

/// A metric family's type and sorted label names.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Family {
    kind: String,
    labels: BTreeSet<String>,
}

fn kueue_metrics(oracle: &Value) -> BTreeMap<String, Family> {
    oracle
        .as_array()
        .expect("a list of metrics")
        .iter()
        .map(|metric| {
            let labels = metric["labels"]
                .as_array()
                .expect("label names")
                .iter()
                .map(|label| label.as_str().expect("a label name").to_owned())
                .collect();
            (
                metric["name"].as_str().expect("a name").to_owned(),
                Family {
                    kind: metric["type"].as_str().expect("a type").to_owned(),
                    labels,
                },
            )
        })
        .collect()
}

/// A registry with one sample in every family, so that the encoding shows every label name.
fn sampled_registry() -> MetricsRegistry {
    let registry = MetricsRegistry::new();
    registry
        .webhook
        .observe_request("/validate", RequestResult::Allowed, 0.001);
    registry
        .webhook
        .certificate_loaded(jiff::Timestamp::from_second(1_900_000_000).unwrap());
    let role = ReplicaRole::Leader;
    let admitter = &registry.admitter;
    let cluster_queue = || "cq".to_owned();
    let priority = PriorityLabels {
        cluster_queue: cluster_queue(),
        priority_class: String::new(),
        replica_role: role,
    };
    admitter.reserved_quota(&priority, 1.0);
    admitter.admitted(&priority, 1.0);
    admitter.waited_for_checks(&priority, 1.0);
    let status = ClusterQueueStatusLabels {
        cluster_queue: cluster_queue(),
        status: "active",
        replica_role: role,
    };
    admitter.pending_workloads.get_or_create(&status).set(1);
    admitter.set_cluster_queue_status("cq", "active", role);
    admitter
        .evicted_workloads
        .get_or_create(&EvictionLabels {
            cluster_queue: cluster_queue(),
            reason: "Preempted".to_owned(),
            underlying_cause: String::new(),
            priority_class: String::new(),
            replica_role: role,
        })
        .inc();
    admitter
        .preempted_workloads
        .get_or_create(&PreemptionLabels {
            preempting_cluster_queue: cluster_queue(),
            reason: "InClusterQueue".to_owned(),
            replica_role: role,
        })
        .inc();
    admitter
        .admission_attempts
        .get_or_create(&AttemptLabels {
            result: "success",
            replica_role: role,
        })
        .inc();
    admitter
        .admission_attempt_duration
        .get_or_create(&AttemptLabels {
            result: "success",
            replica_role: role,
        })
        .observe(0.01);
    let queue = ClusterQueueLabels {
        cluster_queue: cluster_queue(),
        replica_role: role,
    };
    admitter
        .reserving_active_workloads
        .get_or_create(&queue)
        .set(1);
    admitter
        .admitted_active_workloads
        .get_or_create(&queue)
        .set(1);
    let local_queues = &admitter.local_queues;
    local_queues.expose_only(BTreeSet::from([("ns".to_owned(), "lq".to_owned())]), role);
    local_queues.report(
        "ns",
        "lq",
        role,
        &LocalQueueGauges {
            resources: vec![LocalQueueResource {
                flavor: "default".to_owned(),
                resource: "cpu".to_owned(),
                reserved: 1.0,
                in_use: 1.0,
            }],
            admission_fair_sharing: Some(("cq".to_owned(), 1.0)),
            ..LocalQueueGauges::default()
        },
    );
    local_queues.reserved_quota("ns", "lq", "", role, 1.0);
    local_queues.admitted("ns", "lq", "", role, 1.0);
    local_queues.waited_for_checks("ns", "lq", "", role, 1.0);
    local_queues.evicted("ns", "lq", ("Preempted", ""), "", role);
    registry
}

/// The label names of one OpenMetrics sample line (`name{a="x",b="y"} 1`).
fn sample_labels(line: &str) -> (String, BTreeSet<String>) {
    let (series, _value) = line.rsplit_once(' ').expect("a sample value");
    let Some((name, labels)) = series.split_once('{') else {
        return (series.to_owned(), BTreeSet::new());
    };
    let mut names = BTreeSet::new();
    let mut rest = labels.strip_suffix('}').expect("closed labels");
    while let Some((label, after)) = rest.split_once("=\"") {
        names.insert(label.trim_start_matches(',').to_owned());
        // Values in these samples hold no quotes.
        rest = after.split_once('"').expect("a closed value").1;
    }
    (name.to_owned(), names)
}

/// Every family in Kuota's registry, named as Prometheus exposes it (counters with `_total`).
fn kuota_metrics() -> BTreeMap<String, Family> {
    let text = sampled_registry().encode().expect("encode the registry");
    let mut families = BTreeMap::new();
    for line in text.lines() {
        if let Some(declaration) = line.strip_prefix("# TYPE ") {
            let (name, kind) = declaration.split_once(' ').expect("a type");
            let exposed = match kind {
                "counter" => format!("{name}_total"),
                _ => name.to_owned(),
            };
            families.insert(
                exposed,
                Family {
                    kind: kind.to_owned(),
                    labels: BTreeSet::new(),
                },
            );
        }
    }
    let mut sampled = BTreeSet::new();
    for line in text.lines().filter(|line| !line.starts_with('#')) {
        let (series, mut labels) = sample_labels(line);
        let family = ["_bucket", "_count", "_sum", "_created"]
            .iter()
            .find_map(|suffix| series.strip_suffix(suffix))
            .filter(|family| families.contains_key(*family))
            .unwrap_or(&series)
            .to_owned();
        labels.remove("le");
        let entry = families
            .get_mut(&family)
            .unwrap_or_else(|| panic!("sample {line:?} of an undeclared family"));
        entry.labels = labels;
        sampled.insert(family);
    }
    let unsampled: Vec<_> = families
        .keys()
        .filter(|name| !sampled.contains(*name))
        .collect();
    assert!(
        unsampled.is_empty(),
        "give these families a sample in sampled_registry() so their labels show: {unsampled:?}"
    );
    families
}

/// `(metric, aspect)` of each difference: `missing` (Kueue has it, Kuota not), `extra` (a
/// Kueue-named metric only Kuota has; Kuota's own `kuota_*` metrics are outside Kueue's
/// names), `type` and `labels`.
fn metric_differences(
    kueue: &BTreeMap<String, Family>,
    kuota: &BTreeMap<String, Family>,
) -> BTreeMap<(String, String), String> {
    let mut differences = BTreeMap::new();
    for (name, theirs) in kueue {
        let key = |aspect: &str| (name.clone(), aspect.to_owned());
        match kuota.get(name) {
            None => {
                differences.insert(
                    key("missing"),
                    format!("Kueue {} {:?}", theirs.kind, theirs.labels),
                );
            }
            Some(ours) => {
                if ours.kind != theirs.kind {
                    differences.insert(
                        key("type"),
                        format!("Kueue {}, Kuota {}", theirs.kind, ours.kind),
                    );
                }
                if ours.labels != theirs.labels {
                    differences.insert(
                        key("labels"),
                        format!("Kueue {:?}, Kuota {:?}", theirs.labels, ours.labels),
                    );
                }
            }
        }
    }
    for (name, ours) in kuota {
        if !name.starts_with("kuota_") && !kueue.contains_key(name) {
            differences.insert(
                (name.clone(), "extra".to_owned()),
                format!("Kuota {} {:?}", ours.kind, ours.labels),
            );
        }
    }
    differences
}

#[test]
fn metrics_match_kueues_or_differ_only_as_listed() {
    let kueue = kueue_metrics(&oracle("metrics"));
    let listed: BTreeSet<(String, String)> =
        listed("dev/kueue/deliberate-metric-differences.tsv", 2)
            .into_iter()
            .map(|row| (row[0].clone(), row[1].clone()))
            .collect();
    check_listed(&metric_differences(&kueue, &kuota_metrics()), &listed);
}

#[test]
fn kuota_metrics_are_read_with_their_labels() {
    let kuota = kuota_metrics();
    assert_eq!(
        kuota["kueue_admitted_workloads_total"],
        Family {
            kind: "counter".to_owned(),
            labels: ["cluster_queue", "priority_class", "replica_role"]
                .map(str::to_owned)
                .into(),
        }
    );
    assert_eq!(
        kuota["kueue_admission_wait_time_seconds"].labels,
        ["cluster_queue", "priority_class", "replica_role"]
            .map(str::to_owned)
            .into()
    );
    assert_eq!(
        kuota["kuota_webhook_certificate_not_after_seconds"].labels,
        BTreeSet::new()
    );
}
