//! `config.kueue.x-k8s.io/v1beta2` `Configuration` as written in the file: Kueue's hub version.
//!
//! Decoding is strict (unknown fields are errors). Fields are optional exactly where Kueue's Go
//! types are pointers or `omitempty`; numbers keep Go's widths so that overflow is a decode
//! error as in Kueue. Defaults and validation turn this into [`super::Configuration`].
//! Sections Kuota does not act on are kept as opaque YAML so that Kueue files still load.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::{api::resource::Quantity, apis::meta::v1 as meta};
use serde::Deserialize;

use crate::k8s::duration::GoDuration;

/// The whole file.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Configuration {
    /// `config.kueue.x-k8s.io/v1beta2`.
    pub api_version: Option<String>,
    /// `Configuration`.
    pub kind: Option<String>,
    pub namespace: Option<String>,
    pub manage_jobs_without_queue_name: Option<bool>,
    pub managed_jobs_namespace_selector: Option<LabelSelector>,
    pub internal_cert_management: Option<InternalCertManagement>,
    pub wait_for_pods_ready: Option<WaitForPodsReady>,
    pub client_connection: Option<ClientConnection>,
    pub integrations: Option<Integrations>,
    pub multi_kueue: Option<serde_json::Value>,
    pub fair_sharing: Option<FairSharing>,
    pub admission_fair_sharing: Option<AdmissionFairSharing>,
    pub resources: Option<Resources>,
    pub feature_gates: Option<BTreeMap<String, bool>>,
    pub object_retention_policies: Option<ObjectRetentionPolicies>,
    pub visibility_server: Option<VisibilityServer>,
    // Kueue's inlined `ControllerManager` section.
    pub webhook: Option<Webhook>,
    pub leader_election: Option<LeaderElection>,
    pub metrics: Option<Metrics>,
    pub health: Option<Health>,
    pub pprof_bind_address: Option<String>,
    pub controller: Option<Controller>,
    pub tls: Option<serde_json::Value>,
    /// Kuota extension: `Reject` or `Warn`, see [`super::QueueReferencePolicy`].
    pub queue_reference_policy: Option<String>,
}

/// `webhook`.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Webhook {
    pub port: Option<i64>,
    pub host: Option<String>,
    pub cert_dir: Option<String>,
}

/// `leaderElection` (component-base `LeaderElectionConfiguration`).
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct LeaderElection {
    pub leader_elect: Option<bool>,
    pub lease_duration: Option<GoDuration>,
    pub renew_deadline: Option<GoDuration>,
    pub retry_period: Option<GoDuration>,
    pub resource_lock: Option<String>,
    pub resource_name: Option<String>,
    pub resource_namespace: Option<String>,
}

/// `visibilityServer`.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct VisibilityServer {
    pub bind_address: Option<String>,
    pub bind_port: Option<i64>,
}

/// `metrics`.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Metrics {
    pub bind_address: Option<String>,
    pub enable_cluster_queue_resources: Option<bool>,
    pub custom_labels: Option<Vec<serde_json::Value>>,
    pub local_queue_metrics: Option<LocalQueueMetrics>,
}

/// `metrics.localQueueMetrics`.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct LocalQueueMetrics {
    pub enable: Option<bool>,
    pub local_queue_selector: Option<LabelSelector>,
}

/// `health`.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Health {
    pub health_probe_bind_address: Option<String>,
    pub readiness_endpoint_name: Option<String>,
    pub liveness_endpoint_name: Option<String>,
}

/// `controller`.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Controller {
    /// Keys are `Kind.group` (`Job.batch`, `Workload.kueue.x-k8s.io`).
    pub group_kind_concurrency: Option<BTreeMap<String, i64>>,
    /// A Go `time.Duration`, which JSON carries as integer nanoseconds (not a duration string).
    pub cache_sync_timeout: Option<i64>,
}

/// `internalCertManagement`.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct InternalCertManagement {
    pub enable: Option<bool>,
    pub webhook_service_name: Option<String>,
    pub webhook_secret_name: Option<String>,
}

/// `waitForPodsReady`.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct WaitForPodsReady {
    pub timeout: Option<GoDuration>,
    pub block_admission: Option<bool>,
    pub requeuing_strategy: Option<RequeuingStrategy>,
    pub recovery_timeout: Option<GoDuration>,
}

/// `waitForPodsReady.requeuingStrategy`.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RequeuingStrategy {
    pub timestamp: Option<String>,
    pub backoff_limit_count: Option<i32>,
    pub backoff_base_seconds: Option<i32>,
    pub backoff_max_seconds: Option<i32>,
}

/// `clientConnection`.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ClientConnection {
    pub qps: Option<f32>,
    pub burst: Option<i32>,
}

/// `integrations`.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Integrations {
    pub frameworks: Option<Vec<String>>,
    pub external_frameworks: Option<Vec<String>>,
    pub label_keys_to_copy: Option<Vec<String>>,
}

/// `fairSharing`: present means fair sharing is on.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct FairSharing {
    pub preemption_strategies: Option<Vec<String>>,
}

/// `admissionFairSharing`.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AdmissionFairSharing {
    pub usage_half_life_time: Option<GoDuration>,
    pub usage_sampling_interval: Option<GoDuration>,
    pub resource_weights: Option<BTreeMap<String, f64>>,
}

/// `resources`.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Resources {
    pub quota_check_strategy: Option<String>,
    pub exclude_resource_prefixes: Option<Vec<String>>,
    pub transformations: Option<Vec<ResourceTransformation>>,
    pub device_class_mappings: Option<Vec<serde_json::Value>>,
}

/// One entry of `resources.transformations`.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ResourceTransformation {
    pub input: String,
    pub strategy: Option<String>,
    pub multiply_by: Option<String>,
    pub outputs: Option<BTreeMap<String, Quantity>>,
}

/// `objectRetentionPolicies`.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ObjectRetentionPolicies {
    pub workloads: Option<WorkloadRetentionPolicy>,
}

/// `objectRetentionPolicies.workloads`.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct WorkloadRetentionPolicy {
    pub after_finished: Option<GoDuration>,
    pub after_deactivated_by_kueue: Option<GoDuration>,
}

/// A label selector, decoded strictly (k8s-openapi's own type skips unknown fields, so a typo
/// such as `matchLabel` would silently select everything).
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct LabelSelector {
    pub match_labels: Option<BTreeMap<String, String>>,
    pub match_expressions: Option<Vec<LabelSelectorRequirement>>,
}

/// One `matchExpressions` entry.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LabelSelectorRequirement {
    pub key: String,
    pub operator: String,
    pub values: Option<Vec<String>>,
}

impl From<LabelSelector> for meta::LabelSelector {
    fn from(selector: LabelSelector) -> Self {
        meta::LabelSelector {
            match_labels: selector.match_labels,
            match_expressions: selector.match_expressions.map(|requirements| {
                requirements
                    .into_iter()
                    .map(|requirement| meta::LabelSelectorRequirement {
                        key: requirement.key,
                        operator: requirement.operator,
                        values: requirement.values,
                    })
                    .collect()
            }),
        }
    }
}
