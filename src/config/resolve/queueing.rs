//! The sections of the Configuration that shape queueing and admission: waiting for pods,
//! integrations, fair sharing, resources, retention and the queue reference policy.

use std::{collections::BTreeSet, time::Duration};

use crate::k8s::field::BadValue;

use super::super::{
    AdmissionFairSharing, ApiVersion, DEFAULT_FRAMEWORK, FairSharing, Feature, FeatureGates,
    FieldError, GoDuration, Integrations, KUEUE_ONLY_FRAMEWORKS, ObjectRetentionPolicies,
    PreemptionStrategy, QueueReferencePolicy, QuotaCheckStrategy, RequeuingStrategy,
    RequeuingTimestamp, ResourceTransformation, Resources, TransformationStrategy,
    WaitForPodsReady, WorkloadRetentionPolicy, v1beta2,
};

use super::{
    DEFAULT_BACKOFF_BASE_SECONDS, DEFAULT_BACKOFF_MAX_SECONDS, DEFAULT_PODS_READY_TIMEOUT,
    DEFAULT_USAGE_SAMPLING_INTERVAL, NEGATIVE, PREEMPTION_STRATEGY_SETS, Resolver,
    is_kind_version_group,
};

impl Resolver {
    pub(super) fn wait_for_pods_ready(
        &mut self,
        section: Option<v1beta2::WaitForPodsReady>,
        origin: Option<ApiVersion>,
        gates: &FeatureGates,
    ) -> Option<WaitForPodsReady> {
        const PATH: &str = "waitForPodsReady";
        if gates.enabled(Feature::DisableWaitForPodsReady) {
            return None;
        }
        // v1beta2 has no off switch: an absent section means the defaults. A v1beta1 file
        // without `enable: true` arrives here as `None` and means off.
        let wait = match (section, origin) {
            (Some(wait), _) => wait,
            (None, Some(ApiVersion::V1beta1)) => return None,
            (None, _) => v1beta2::WaitForPodsReady::default(),
        };
        let timeout = match wait.timeout {
            Some(timeout) if timeout.is_zero() && origin == Some(ApiVersion::V1beta1) => {
                self.errors.push(FieldError::required(
                    format!("{PATH}.timeout"),
                    "must be specified",
                ));
                Duration::ZERO
            }
            Some(timeout) if !timeout.is_zero() => {
                self.non_negative(&format!("{PATH}.timeout"), timeout)
            }
            _ => self.non_negative(&format!("{PATH}.timeout"), DEFAULT_PODS_READY_TIMEOUT),
        };
        let recovery_timeout = match wait.recovery_timeout {
            Some(recovery) => self.non_negative(&format!("{PATH}.recoveryTimeout"), recovery),
            None => timeout,
        };
        let strategy = wait.requeuing_strategy.unwrap_or_default();
        let strategy_path = format!("{PATH}.requeuingStrategy");
        let timestamp = match strategy.timestamp.as_deref() {
            None => RequeuingTimestamp::Eviction,
            Some(name) => RequeuingTimestamp::from_name(name).unwrap_or_else(|| {
                self.errors.push(FieldError::not_supported(
                    format!("{strategy_path}.timestamp"),
                    name,
                    RequeuingTimestamp::NAMES,
                ));
                RequeuingTimestamp::Eviction
            }),
        };
        let backoff_limit_count = strategy
            .backoff_limit_count
            .map(|count| self.count(&format!("{strategy_path}.backoffLimitCount"), count));
        let backoff_base_seconds = self.count(
            &format!("{strategy_path}.backoffBaseSeconds"),
            strategy
                .backoff_base_seconds
                .unwrap_or(DEFAULT_BACKOFF_BASE_SECONDS),
        );
        let backoff_max_seconds = self.count(
            &format!("{strategy_path}.backoffMaxSeconds"),
            strategy
                .backoff_max_seconds
                .unwrap_or(DEFAULT_BACKOFF_MAX_SECONDS),
        );
        let block_admission = wait.block_admission.unwrap_or(false);
        Some(WaitForPodsReady {
            timeout,
            block_admission,
            recovery_timeout,
            requeuing_strategy: RequeuingStrategy {
                timestamp,
                backoff_limit_count,
                backoff_base_seconds,
                backoff_max_seconds,
            },
        })
    }

    pub(super) fn integrations(&mut self, integrations: v1beta2::Integrations) -> Integrations {
        let frameworks = integrations
            .frameworks
            .filter(|frameworks| !frameworks.is_empty())
            .unwrap_or_else(|| vec![DEFAULT_FRAMEWORK.to_owned()]);
        let supported = crate::config::supported_frameworks();
        let mut seen = BTreeSet::new();
        for (index, framework) in frameworks.iter().enumerate() {
            let path = format!("integrations.frameworks[{index}]");
            if supported.contains(&framework.as_str()) {
                if !seen.insert(framework.as_str()) {
                    self.errors.push(FieldError::duplicate(path, framework));
                }
            } else if KUEUE_ONLY_FRAMEWORKS.contains(&framework.as_str()) {
                // Kueue's own default configuration lists these, so refusing them would stop
                // Kuota starting from Kueue's chart defaults; their objects are simply not queued.
                self.warnings.push(format!(
                    "{path} {framework:?} is ignored: a Kueue integration that Kuota does not implement; its objects are not queued"
                ));
            } else {
                self.errors
                    .push(FieldError::not_supported(path, framework, &supported));
            }
        }
        let external_frameworks = integrations.external_frameworks.unwrap_or_default();
        let mut seen_external = BTreeSet::new();
        for (index, external) in external_frameworks.iter().enumerate() {
            let path = format!("integrations.externalFrameworks[{index}]");
            if !is_kind_version_group(external) {
                self.errors.push(FieldError::invalid(
                    path,
                    external,
                    "must be format, 'Kind.version.group.com'",
                ));
            } else if !seen_external.insert(external.as_str()) {
                self.errors.push(FieldError::duplicate(path, external));
            }
        }
        Integrations {
            frameworks,
            external_frameworks,
            label_keys_to_copy: integrations.label_keys_to_copy.unwrap_or_default(),
        }
    }

    pub(super) fn fair_sharing(&mut self, fair_sharing: v1beta2::FairSharing) -> FairSharing {
        const PATH: &str = "fairSharing.preemptionStrategies";
        let names = fair_sharing.preemption_strategies.unwrap_or_default();
        if names.is_empty() {
            self.errors
                .push(FieldError::required(PATH, "must be specified"));
            return FairSharing {
                preemption_strategies: Vec::new(),
            };
        }
        let strategies: Option<Vec<PreemptionStrategy>> = names
            .iter()
            .map(|name| PreemptionStrategy::from_name(name))
            .collect();
        match strategies
            .filter(|strategies| PREEMPTION_STRATEGY_SETS.contains(&strategies.as_slice()))
        {
            Some(preemption_strategies) => FairSharing {
                preemption_strategies,
            },
            None => {
                let supported: Vec<String> = PREEMPTION_STRATEGY_SETS
                    .iter()
                    .map(|set| set.iter().map(|s| s.as_str()).collect::<Vec<_>>().join(","))
                    .collect();
                self.errors.push(FieldError::not_supported(
                    PATH,
                    BadValue::json(&names),
                    &supported,
                ));
                FairSharing {
                    preemption_strategies: Vec::new(),
                }
            }
        }
    }

    pub(super) fn admission_fair_sharing(
        &mut self,
        fair_sharing: v1beta2::AdmissionFairSharing,
    ) -> AdmissionFairSharing {
        const PATH: &str = "admissionFairSharing";
        let usage_half_life_time = self.non_negative(
            &format!("{PATH}.usageHalfLifeTime"),
            fair_sharing
                .usage_half_life_time
                .unwrap_or(GoDuration::ZERO),
        );
        let interval = fair_sharing
            .usage_sampling_interval
            .filter(|interval| !interval.is_zero())
            .unwrap_or(DEFAULT_USAGE_SAMPLING_INTERVAL);
        let usage_sampling_interval = interval.to_std().unwrap_or_else(|| {
            self.errors.push(FieldError::invalid(
                format!("{PATH}.usageSamplingInterval"),
                interval.to_string(),
                "must be greater than 0",
            ));
            Duration::ZERO
        });
        let resource_weights = fair_sharing.resource_weights.unwrap_or_default();
        for (resource, weight) in &resource_weights {
            if weight.is_nan() || *weight < 0.0 {
                self.errors.push(FieldError::invalid(
                    format!("{PATH}.resourceWeights[{resource}]"),
                    BadValue::rendered(weight.to_string()),
                    NEGATIVE,
                ));
            }
        }
        AdmissionFairSharing {
            usage_half_life_time,
            usage_sampling_interval,
            resource_weights,
        }
    }

    pub(super) fn resources(
        &mut self,
        resources: v1beta2::Resources,
        gates: &FeatureGates,
    ) -> Resources {
        const PATH: &str = "resources";
        let exclude_resource_prefixes = resources.exclude_resource_prefixes.unwrap_or_default();
        // Kueue reads quotaCheckStrategy only with its gate on.
        let quota_check_strategy = match resources.quota_check_strategy.as_deref() {
            Some(name) if gates.enabled(Feature::QuotaCheckStrategy) => {
                let strategy = QuotaCheckStrategy::from_name(name);
                match strategy {
                    None => self.errors.push(FieldError::not_supported(
                        format!("{PATH}.quotaCheckStrategy"),
                        name,
                        QuotaCheckStrategy::NAMES,
                    )),
                    Some(QuotaCheckStrategy::IgnoreUndeclared) if !exclude_resource_prefixes.is_empty() => {
                        self.errors.push(FieldError::invalid(
                            format!("{PATH}.quotaCheckStrategy"),
                            name,
                            "excludeResourcePrefixes is not allowed when quotaCheckStrategy is IgnoreUndeclared",
                        ))
                    }
                    Some(_) => {}
                }
                strategy.unwrap_or(QuotaCheckStrategy::BlockUndeclared)
            }
            _ => QuotaCheckStrategy::BlockUndeclared,
        };
        let mut inputs = BTreeSet::new();
        let mut transformations = Vec::new();
        for (index, transformation) in resources
            .transformations
            .unwrap_or_default()
            .into_iter()
            .enumerate()
        {
            let path = format!("{PATH}.transformations[{index}]");
            let strategy = match transformation.strategy.as_deref() {
                None => TransformationStrategy::Retain,
                Some(name) => TransformationStrategy::from_name(name).unwrap_or_else(|| {
                    self.errors.push(FieldError::not_supported(
                        format!("{path}.strategy"),
                        name,
                        TransformationStrategy::NAMES,
                    ));
                    TransformationStrategy::Retain
                }),
            };
            if !inputs.insert(transformation.input.clone()) {
                self.errors.push(FieldError::duplicate(
                    format!("{path}.input"),
                    &transformation.input,
                ));
            }
            transformations.push(ResourceTransformation {
                input: transformation.input,
                strategy,
                multiply_by: transformation.multiply_by.filter(|name| !name.is_empty()),
                outputs: transformation.outputs.unwrap_or_default(),
            });
        }
        Resources {
            quota_check_strategy,
            exclude_resource_prefixes,
            transformations,
        }
    }

    pub(super) fn object_retention_policies(
        &mut self,
        policies: v1beta2::ObjectRetentionPolicies,
    ) -> ObjectRetentionPolicies {
        const PATH: &str = "objectRetentionPolicies.workloads";
        let workloads = policies.workloads.unwrap_or_default();
        ObjectRetentionPolicies {
            workloads: WorkloadRetentionPolicy {
                after_finished: workloads
                    .after_finished
                    .map(|after| self.non_negative(&format!("{PATH}.afterFinished"), after)),
                after_deactivated_by_kueue: workloads.after_deactivated_by_kueue.map(|after| {
                    self.non_negative(&format!("{PATH}.afterDeactivatedByKueue"), after)
                }),
            },
        }
    }

    pub(super) fn queue_reference_policy(
        &mut self,
        policy: &Option<String>,
    ) -> QueueReferencePolicy {
        match policy.as_deref() {
            None => QueueReferencePolicy::Reject,
            Some(name) => QueueReferencePolicy::from_name(name).unwrap_or_else(|| {
                self.errors.push(FieldError::not_supported(
                    "queueReferencePolicy",
                    name,
                    QueueReferencePolicy::NAMES,
                ));
                QueueReferencePolicy::Reject
            }),
        }
    }
}
