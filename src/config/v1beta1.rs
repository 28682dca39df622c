//! `config.kueue.x-k8s.io/v1beta1` `Configuration` as written in the file, and its conversion to
//! the v1beta2 hub.
//!
//! v1beta1 differs from v1beta2 where it matters:
//! - `waitForPodsReady.enable` (default false): when false the whole section is dropped, so
//!   waiting for pods is OFF (v1beta2 has no switch and is on by default). When true, `timeout`
//!   defaults to 5m (not 30m) and `blockAdmission` to true (not false).
//! - `fairSharing.enable`: when false the section is dropped (fair sharing off); when true and no
//!   `preemptionStrategies` are given, both strategies apply.
//! - `integrations.podOptions` and `queueVisibility` exist only here; Kueue ignores both.

use std::collections::BTreeMap;

use serde::Deserialize;

use super::v1beta2::{
    self, AdmissionFairSharing, ClientConnection, Controller, Health, InternalCertManagement,
    LabelSelector, LeaderElection, Metrics, ObjectRetentionPolicies, RequeuingStrategy,
    ResourceTransformation, Webhook,
};
use crate::k8s::duration::GoDuration;

/// `waitForPodsReady.timeout` when v1beta1 enables waiting without a timeout.
const DEFAULT_PODS_READY_TIMEOUT: GoDuration = GoDuration::from_mins(5);

/// The whole file.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Configuration {
    /// `config.kueue.x-k8s.io/v1beta1`.
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
    pub queue_visibility: Option<serde_json::Value>,
    pub multi_kueue: Option<serde_json::Value>,
    pub fair_sharing: Option<FairSharing>,
    pub admission_fair_sharing: Option<AdmissionFairSharing>,
    pub resources: Option<Resources>,
    pub feature_gates: Option<BTreeMap<String, bool>>,
    pub object_retention_policies: Option<ObjectRetentionPolicies>,
    // Kueue's inlined `ControllerManager` section.
    pub webhook: Option<Webhook>,
    pub leader_election: Option<LeaderElection>,
    pub metrics: Option<Metrics>,
    pub health: Option<Health>,
    pub pprof_bind_address: Option<String>,
    pub controller: Option<Controller>,
    pub tls: Option<serde_json::Value>,
    /// Kuota extension, as in v1beta2.
    pub queue_reference_policy: Option<String>,
}

/// `waitForPodsReady`, with its v1beta1-only `enable` switch.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct WaitForPodsReady {
    pub enable: Option<bool>,
    pub timeout: Option<GoDuration>,
    pub block_admission: Option<bool>,
    pub requeuing_strategy: Option<RequeuingStrategy>,
    pub recovery_timeout: Option<GoDuration>,
}

/// `fairSharing`, with its v1beta1-only `enable` switch.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct FairSharing {
    pub enable: Option<bool>,
    pub preemption_strategies: Option<Vec<String>>,
}

/// `integrations`, with the deprecated `podOptions`.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Integrations {
    pub frameworks: Option<Vec<String>>,
    pub external_frameworks: Option<Vec<String>>,
    pub pod_options: Option<serde_json::Value>,
    pub label_keys_to_copy: Option<Vec<String>>,
}

/// `resources` (no `quotaCheckStrategy` in v1beta1).
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Resources {
    pub exclude_resource_prefixes: Option<Vec<String>>,
    pub transformations: Option<Vec<ResourceTransformation>>,
    pub device_class_mappings: Option<Vec<serde_json::Value>>,
}

/// A v1beta1 file converted to the hub, with what the conversion dropped.
#[derive(Clone, Debug)]
pub struct Converted {
    /// The hub form. `wait_for_pods_ready: None` here means OFF (see the module docs).
    pub hub: v1beta2::Configuration,
    /// Fields that exist only in v1beta1 and were set, which Kueue ignores.
    pub dropped: Vec<&'static str>,
}

impl Configuration {
    /// Converts to the hub the way Kueue's v1beta1 defaulting plus conversion does.
    pub fn into_hub(self) -> Converted {
        let mut dropped = Vec::new();
        if self.queue_visibility.is_some() {
            dropped.push("queueVisibility");
        }
        let integrations = self.integrations.map(|integrations| {
            if integrations.pod_options.is_some() {
                dropped.push("integrations.podOptions");
            }
            v1beta2::Integrations {
                frameworks: integrations.frameworks,
                external_frameworks: integrations.external_frameworks,
                label_keys_to_copy: integrations.label_keys_to_copy,
            }
        });
        let wait_for_pods_ready = self
            .wait_for_pods_ready
            .filter(|wait| wait.enable == Some(true))
            .map(|wait| v1beta2::WaitForPodsReady {
                timeout: Some(wait.timeout.unwrap_or(DEFAULT_PODS_READY_TIMEOUT)),
                block_admission: Some(wait.block_admission.unwrap_or(true)),
                requeuing_strategy: wait.requeuing_strategy,
                recovery_timeout: wait.recovery_timeout,
            });
        let fair_sharing = self
            .fair_sharing
            .filter(|fair| fair.enable == Some(true))
            .map(|fair| v1beta2::FairSharing {
                preemption_strategies: Some(
                    fair.preemption_strategies
                        .filter(|strategies| !strategies.is_empty())
                        .unwrap_or_else(|| {
                            vec![
                                "LessThanOrEqualToFinalShare".to_owned(),
                                "LessThanInitialShare".to_owned(),
                            ]
                        }),
                ),
            });
        let resources = self.resources.map(|resources| v1beta2::Resources {
            quota_check_strategy: None,
            exclude_resource_prefixes: resources.exclude_resource_prefixes,
            transformations: resources.transformations,
            device_class_mappings: resources.device_class_mappings,
        });
        let hub = v1beta2::Configuration {
            api_version: self.api_version,
            kind: self.kind,
            namespace: self.namespace,
            manage_jobs_without_queue_name: self.manage_jobs_without_queue_name,
            managed_jobs_namespace_selector: self.managed_jobs_namespace_selector,
            internal_cert_management: self.internal_cert_management,
            wait_for_pods_ready,
            client_connection: self.client_connection,
            integrations,
            multi_kueue: self.multi_kueue,
            fair_sharing,
            admission_fair_sharing: self.admission_fair_sharing,
            resources,
            feature_gates: self.feature_gates,
            object_retention_policies: self.object_retention_policies,
            visibility_server: None,
            webhook: self.webhook,
            leader_election: self.leader_election,
            metrics: self.metrics,
            health: self.health,
            pprof_bind_address: self.pprof_bind_address,
            controller: self.controller,
            tls: self.tls,
            queue_reference_policy: self.queue_reference_policy,
        };
        Converted { hub, dropped }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn convert(yaml: &str) -> Converted {
        crate::k8s::yaml::from_str::<Configuration>(yaml)
            .unwrap()
            .into_hub()
    }

    #[test]
    fn disabled_or_absent_wait_for_pods_ready_is_dropped() {
        for yaml in [
            "kind: Configuration",
            "waitForPodsReady: {}",
            "waitForPodsReady: {enable: false, timeout: 10m}",
        ] {
            assert!(convert(yaml).hub.wait_for_pods_ready.is_none(), "{yaml}");
        }
    }

    #[test]
    fn enabled_wait_for_pods_ready_gets_v1beta1_defaults() {
        let wait = convert("waitForPodsReady: {enable: true}")
            .hub
            .wait_for_pods_ready
            .unwrap();
        assert_eq!(wait.timeout, Some(GoDuration::from_mins(5)));
        assert_eq!(wait.block_admission, Some(true));
        assert_eq!(wait.recovery_timeout, None);

        let wait = convert("waitForPodsReady: {enable: true, timeout: 2m, blockAdmission: false}")
            .hub
            .wait_for_pods_ready
            .unwrap();
        assert_eq!(wait.timeout, Some(GoDuration::from_mins(2)));
        assert_eq!(wait.block_admission, Some(false));
    }

    #[test]
    fn fair_sharing_follows_enable() {
        assert!(
            convert("fairSharing: {preemptionStrategies: [LessThanInitialShare]}")
                .hub
                .fair_sharing
                .is_none()
        );
        let fair = convert("fairSharing: {enable: true}")
            .hub
            .fair_sharing
            .unwrap();
        assert_eq!(
            fair.preemption_strategies.unwrap(),
            ["LessThanOrEqualToFinalShare", "LessThanInitialShare"]
        );
        let fair =
            convert("fairSharing: {enable: true, preemptionStrategies: [LessThanInitialShare]}")
                .hub
                .fair_sharing
                .unwrap();
        assert_eq!(
            fair.preemption_strategies.unwrap(),
            ["LessThanInitialShare"]
        );
    }

    #[test]
    fn reports_v1beta1_only_fields() {
        let converted = convert(
            "queueVisibility: {updateIntervalSeconds: 5}\nintegrations: {frameworks: [batch/job], podOptions: {}}",
        );
        assert_eq!(
            converted.dropped,
            ["queueVisibility", "integrations.podOptions"]
        );
        assert_eq!(
            converted.hub.integrations.unwrap().frameworks.unwrap(),
            ["batch/job"]
        );
    }
}
