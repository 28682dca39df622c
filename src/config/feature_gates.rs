//! Kueue's feature gates: every gate name Kueue knows, its default and stage (Kueue
//! `pkg/features/kube_features.go` at v0.20.0-devel), set from `Configuration.featureGates` or the
//! `--feature-gates` flag, never both.
//!
//! All of Kueue's names are accepted so that a Kueue configuration loads unchanged; a gate set to
//! a value Kuota does not act on is accepted with a warning naming it. Kueue's binary also knows
//! the Kubernetes apiserver's gates and `AllAlpha`/`AllBeta`; Kuota rejects those as unknown.

use std::{collections::BTreeMap, fmt, str::FromStr};

/// Maturity of a feature gate.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stage {
    /// Off by default, may change or go away.
    Alpha,
    /// Usually on by default.
    Beta,
    /// Graduated; will be removed as a gate.
    Ga,
    /// On its way out.
    Deprecated,
}

macro_rules! feature_table {
    ($($feature:ident: $default:literal, $stage:ident, $locked:literal;)*) => {
        /// A Kueue feature gate name.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub enum Feature {
            $(
                #[doc = concat!("The `", stringify!($feature), "` gate.")]
                $feature,
            )*
        }

        impl Feature {
            /// Every gate, in Kueue's declaration order.
            pub const ALL: &'static [Feature] = &[$(Feature::$feature,)*];

            /// The gate's name as written in `featureGates` and `--feature-gates`.
            pub const fn name(self) -> &'static str {
                match self {
                    $(Feature::$feature => stringify!($feature),)*
                }
            }

            /// Whether the gate is on when nothing sets it.
            pub const fn default_enabled(self) -> bool {
                match self {
                    $(Feature::$feature => $default,)*
                }
            }

            /// The gate's maturity.
            pub const fn stage(self) -> Stage {
                match self {
                    $(Feature::$feature => Stage::$stage,)*
                }
            }

            /// Whether the gate is locked to its default (setting the other value is an error).
            pub const fn locked_to_default(self) -> bool {
                match self {
                    $(Feature::$feature => $locked,)*
                }
            }
        }
    };
}

feature_table! {
    PartialAdmission: true, Beta, false;
    FlavorFungibility: true, Beta, false;
    VisibilityOnDemand: true, Beta, false;
    DisableWaitForPodsReady: false, Alpha, false;
    PrioritySortingWithinCohort: true, Beta, false;
    FairSharingPreemptWithinNominal: true, Beta, false;
    FairSharingPrioritizeNonBorrowing: true, Beta, false;
    MultiKueue: true, Beta, false;
    TopologyAwareScheduling: true, Beta, false;
    LocalQueueMetrics: true, Beta, false;
    TASProfileMixed: true, Beta, false;
    AdmissionFairSharing: true, Beta, false;
    TASFailedNodeReplacement: true, Beta, false;
    ElasticJobsViaWorkloadSlices: true, Beta, false;
    ElasticJobsViaWorkloadSlicesWithTAS: false, Alpha, false;
    TASFailedNodeReplacementFailFast: true, Beta, false;
    TASReplaceNodeOnPodTermination: true, Beta, false;
    SkipReassignmentForPodOwnedWorkloads: true, Beta, false;
    TASReplaceNodeDueToNotReadyOverFixedTime: false, Deprecated, false;
    ManagedJobsNamespaceSelectorAlwaysRespected: true, Ga, true;
    TASBalancedPlacement: false, Alpha, false;
    TASAssignmentsEncodingByHostnamePrefix: true, Beta, false;
    KueueDRAIntegration: true, Beta, false;
    KueueDRAIntegrationExtendedResource: true, Beta, false;
    QuotaCheckStrategy: true, Beta, false;
    KueueDRARejectWorkloadsWhenDRADisabled: true, Beta, false;
    KueueDRAIntegrationPartitionableDevices: true, Beta, false;
    KueueDRAIntegrationConsumableCapacity: false, Alpha, false;
    MultiKueueAdaptersForCustomJobs: true, Beta, false;
    WorkloadRequestUseMergePatch: false, Alpha, false;
    MultiKueueKubeConfigPathValidation: true, Beta, false;
    ReclaimablePods: true, Beta, false;
    MultiKueueClusterProfile: false, Alpha, false;
    FailureRecoveryPolicy: false, Alpha, false;
    TLSOptions: true, Ga, true;
    RemoveFinalizersWithStrictPatch: true, Beta, false;
    TASReplaceNodeOnNodeTaints: true, Beta, false;
    AssignQueueLabelsForPods: true, Beta, false;
    TASMultiLayerTopology: true, Beta, false;
    SchedulingEquivalenceHashing: true, Beta, false;
    CustomMetricLabels: false, Alpha, false;
    SparkApplicationIntegration: false, Alpha, false;
    MultiKueueOrchestratedPreemption: false, Alpha, false;
    PriorityBoost: false, Alpha, false;
    AdmissionGatedBy: true, Beta, false;
    ShortWorkloadNames: false, Alpha, false;
    FastQuotaReleaseInPodIntegration: false, Alpha, false;
    RejectUpdatesToCQWithInvalidOnFlavors: false, Alpha, false;
    FinishOrphanedWorkloads: true, Beta, false;
    MultiKueueIncrementalDispatcherConfig: true, Beta, false;
    MultiKueueIncrementalDispatcherRespectConfigOrder: true, Beta, false;
    ConcurrentAdmission: false, Alpha, false;
    MetricForWorkloadCreationLatency: true, Beta, false;
    TASRespectNodeAffinityPreferred: false, Alpha, false;
    MultiKueueManagerQuotaAutomation: false, Alpha, false;
    WorkloadIdentifierAnnotations: true, Beta, false;
    WorkloadPriorityClassDefaulting: true, Beta, false;
    MetricsForCohorts: true, Beta, false;
    CleanupProvisioningRequestsOnEviction: true, Beta, false;
    TASHandleOverlappingFlavors: true, Beta, false;
    UnadmittedWorkloadsObservability: true, Beta, false;
    TASRecomputeAssignmentWithinSchedulingCycle: true, Beta, false;
    UnadmittedWorkloadsExplicitStatus: false, Beta, false;
    DeferRayServiceFinalizationForRedisCleanup: true, Beta, false;
    TASCacheNodeMatchResults: true, Beta, false;
    TASCachingRemainingResources: true, Beta, false;
    TASCacheTopologyTree: true, Beta, false;
    SchedulerLibraryIntegration: false, Alpha, false;
    VectorizedResourceRequests: true, Beta, false;
    WorkloadValidateResourcesAreNonNegative: true, Beta, false;
    TASValidateWorkloadSliceSize: true, Beta, false;
    WorkloadValidationForPodSetMetadata: true, Beta, false;
    PrioritizePreemptorWorkloads: false, Alpha, false;
    LWSImmutableGroupSize: true, Beta, false;
    FlavorFungibilityPreserveScanProgress: true, Beta, false;
    SkipAncestorCheckForDeletedWorkloads: true, Beta, false;
    MultiKueueRemoteSpecSync: true, Beta, false;
    RecomputeAssignmentUponPreemptionTargetsOverlap: true, Beta, false;
    PodIntegrationValidateGroupOwner: true, Beta, false;
    ValidateRayAndSparkJobUpdates: true, Beta, false;
}

impl Feature {
    /// Gates that must be on whenever this one is (Kueue's declared dependencies).
    pub const fn dependencies(self) -> &'static [Feature] {
        use Feature::*;
        match self {
            TASFailedNodeReplacement
            | TASBalancedPlacement
            | TASReplaceNodeOnNodeTaints
            | TASMultiLayerTopology
            | TASRespectNodeAffinityPreferred
            | TASHandleOverlappingFlavors
            | TASProfileMixed
            | TASRecomputeAssignmentWithinSchedulingCycle => &[TopologyAwareScheduling],
            TASFailedNodeReplacementFailFast
            | TASReplaceNodeOnPodTermination
            | TASReplaceNodeDueToNotReadyOverFixedTime => {
                &[TASFailedNodeReplacement, TopologyAwareScheduling]
            }
            UnadmittedWorkloadsExplicitStatus => &[UnadmittedWorkloadsObservability],
            ElasticJobsViaWorkloadSlicesWithTAS => {
                &[ElasticJobsViaWorkloadSlices, TopologyAwareScheduling]
            }
            KueueDRAIntegrationExtendedResource
            | KueueDRAIntegrationPartitionableDevices
            | KueueDRAIntegrationConsumableCapacity => &[KueueDRAIntegration],
            FlavorFungibilityPreserveScanProgress => &[FlavorFungibility],
            _ => &[],
        }
    }
}

/// What setting a gate does in Kuota.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Effect {
    /// Kuota reads the gate: either value takes effect.
    Read,
    /// Kuota lacks what the gate turns on (the text says what): enabling it has no effect.
    NotImplemented(&'static str),
    /// Kuota does not read the gate and has one behaviour whatever its value: a value other than
    /// Kueue's default has no effect.
    NotRead,
}

impl Feature {
    /// What setting this gate does in Kuota. Every gate is listed, so that a gate added to the
    /// table is classified rather than silently ignored; a setting without effect gets a warning
    /// at start-up naming it (see [`FeatureGates::warnings`]).
    pub const fn effect(self) -> Effect {
        use Feature::*;
        match self {
            PartialAdmission
            | VisibilityOnDemand
            | DisableWaitForPodsReady
            | TopologyAwareScheduling
            | LocalQueueMetrics
            | QuotaCheckStrategy
            | ReclaimablePods
            | AssignQueueLabelsForPods
            | AdmissionGatedBy
            | RejectUpdatesToCQWithInvalidOnFlavors
            | FinishOrphanedWorkloads
            | WorkloadIdentifierAnnotations
            | WorkloadPriorityClassDefaulting
            | CleanupProvisioningRequestsOnEviction
            | WorkloadValidateResourcesAreNonNegative
            | TASValidateWorkloadSliceSize
            | WorkloadValidationForPodSetMetadata
            | PrioritizePreemptorWorkloads
            | SkipAncestorCheckForDeletedWorkloads
            | PriorityBoost
            | RecomputeAssignmentUponPreemptionTargetsOverlap
            | AdmissionFairSharing => Effect::Read,
            TASProfileMixed
            | TASFailedNodeReplacement
            | TASFailedNodeReplacementFailFast
            | TASReplaceNodeOnPodTermination
            | TASReplaceNodeDueToNotReadyOverFixedTime
            | TASBalancedPlacement
            | TASAssignmentsEncodingByHostnamePrefix
            | TASReplaceNodeOnNodeTaints
            | TASMultiLayerTopology
            | TASRespectNodeAffinityPreferred
            | TASHandleOverlappingFlavors
            | TASCacheNodeMatchResults
            | TASCachingRemainingResources
            | TASCacheTopologyTree => Effect::NotImplemented(
                "Kuota places topology-aware workloads as Kueue's default TAS profile does and does not implement this variant of it",
            ),
            ElasticJobsViaWorkloadSlices | ElasticJobsViaWorkloadSlicesWithTAS => {
                Effect::NotImplemented(
                    "Kuota does not implement workload slices; elastic jobs are refused by the webhook",
                )
            }
            MultiKueue
            | MultiKueueAdaptersForCustomJobs
            | MultiKueueKubeConfigPathValidation
            | MultiKueueClusterProfile
            | MultiKueueOrchestratedPreemption
            | MultiKueueIncrementalDispatcherConfig
            | MultiKueueIncrementalDispatcherRespectConfigOrder
            | MultiKueueManagerQuotaAutomation
            | MultiKueueRemoteSpecSync => Effect::NotImplemented(
                "Kuota does not implement MultiKueue; workloads are admitted in this cluster only",
            ),
            KueueDRAIntegration
            | KueueDRAIntegrationExtendedResource
            | KueueDRARejectWorkloadsWhenDRADisabled
            | KueueDRAIntegrationPartitionableDevices
            | KueueDRAIntegrationConsumableCapacity => Effect::NotImplemented(
                "Kuota does not count dynamic resource allocation claims against quota",
            ),
            SparkApplicationIntegration => {
                Effect::NotImplemented("Kuota has no SparkApplication integration")
            }
            ConcurrentAdmission => Effect::NotImplemented(
                "Kuota validates a ClusterQueue's concurrentAdmissionPolicy but assigns flavors as if it had none",
            ),
            FlavorFungibility
            | PrioritySortingWithinCohort
            | FairSharingPreemptWithinNominal
            | FairSharingPrioritizeNonBorrowing
            | SkipReassignmentForPodOwnedWorkloads
            | ManagedJobsNamespaceSelectorAlwaysRespected
            | WorkloadRequestUseMergePatch
            | FailureRecoveryPolicy
            | TLSOptions
            | RemoveFinalizersWithStrictPatch
            | SchedulingEquivalenceHashing
            | CustomMetricLabels
            | ShortWorkloadNames
            | FastQuotaReleaseInPodIntegration
            | MetricForWorkloadCreationLatency
            | MetricsForCohorts
            | UnadmittedWorkloadsObservability
            | UnadmittedWorkloadsExplicitStatus
            | DeferRayServiceFinalizationForRedisCleanup
            | SchedulerLibraryIntegration
            | VectorizedResourceRequests
            | LWSImmutableGroupSize
            | FlavorFungibilityPreserveScanProgress
            | PodIntegrationValidateGroupOwner
            | ValidateRayAndSparkJobUpdates
            // A head whose placement an earlier decision of the pass took is always placed again.
            | TASRecomputeAssignmentWithinSchedulingCycle => Effect::NotRead,
        }
    }
}

impl fmt::Display for Feature {
    fn fmt(&self, out: &mut fmt::Formatter<'_>) -> fmt::Result {
        out.write_str(self.name())
    }
}

impl FromStr for Feature {
    type Err = FeatureGateError;

    fn from_str(name: &str) -> Result<Self, Self::Err> {
        Feature::ALL
            .iter()
            .copied()
            .find(|feature| feature.name() == name)
            .ok_or_else(|| FeatureGateError::Unknown(name.to_owned()))
    }
}

/// Why a set of feature gate values is refused.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum FeatureGateError {
    /// A name Kueue does not know.
    #[error("unknown feature gate {0:?}")]
    Unknown(String),
    /// A locked gate set to the value it is not locked to.
    #[error("cannot set feature gate {feature} to {value}, feature is locked to {}", .feature.default_enabled())]
    Locked { feature: Feature, value: bool },
    /// A `Name` without `=value` in the flag.
    #[error("missing bool value for {0}")]
    MissingValue(String),
    /// A value in the flag that is not a boolean.
    #[error("invalid value of {name}={value}: must be true or false")]
    InvalidValue { name: String, value: String },
    /// An enabled gate whose prerequisite gates are off.
    #[error(
        "{feature} is enabled, but depends on features that are disabled: [{}]",
        .disabled.iter().map(|f| f.name()).collect::<Vec<_>>().join(" ")
    )]
    DisabledDependencies {
        feature: Feature,
        disabled: Vec<Feature>,
    },
    /// Both `featureGates` in the file and `--feature-gates` were given.
    #[error("feature gates for CLI and configuration cannot both be specified")]
    BothSources,
}

/// The state of every feature gate: defaults plus what was set explicitly.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FeatureGates {
    explicit: BTreeMap<Feature, bool>,
}

/// Go's `strconv.ParseBool`, which `--feature-gates` values go through.
fn parse_go_bool(text: &str) -> Option<bool> {
    match text {
        "1" | "t" | "T" | "true" | "TRUE" | "True" => Some(true),
        "0" | "f" | "F" | "false" | "FALSE" | "False" => Some(false),
        _ => None,
    }
}

impl FeatureGates {
    /// Whether `feature` is on.
    pub fn enabled(&self, feature: Feature) -> bool {
        self.explicit
            .get(&feature)
            .copied()
            .unwrap_or(feature.default_enabled())
    }

    /// The gates set explicitly, with their values.
    pub fn explicit(&self) -> &BTreeMap<Feature, bool> {
        &self.explicit
    }

    /// The same gates with `feature` set to `enabled`, unchecked: for building gates in code.
    pub fn with(mut self, feature: Feature, enabled: bool) -> Self {
        self.explicit.insert(feature, enabled);
        self
    }

    /// Gates from a name → value map (`Configuration.featureGates`).
    pub fn from_map(values: &BTreeMap<String, bool>) -> Result<Self, FeatureGateError> {
        Self::from_pairs(values.iter().map(|(name, value)| (name.as_str(), *value)))
    }

    /// Gates from the `--feature-gates` flag: `Name=true,Other=false` (empty items are skipped,
    /// values are Go booleans such as `true`, `false`, `1`, `0`).
    pub fn parse(flag: &str) -> Result<Self, FeatureGateError> {
        let mut pairs = Vec::new();
        for item in flag.split(',').filter(|item| !item.is_empty()) {
            let (name, value) = match item.split_once('=') {
                Some((name, value)) => (name.trim(), value.trim()),
                None => return Err(FeatureGateError::MissingValue(item.trim().to_owned())),
            };
            let value = parse_go_bool(value).ok_or_else(|| FeatureGateError::InvalidValue {
                name: name.to_owned(),
                value: value.to_owned(),
            })?;
            pairs.push((name, value));
        }
        Self::from_pairs(pairs)
    }

    /// Gates from the flag or the configuration map; giving both is an error, as in Kueue
    /// (an empty flag counts as not given, an empty map as given).
    pub fn from_sources(
        flag: Option<&str>,
        map: Option<&BTreeMap<String, bool>>,
    ) -> Result<Self, FeatureGateError> {
        match (flag.filter(|flag| !flag.is_empty()), map) {
            (Some(_), Some(_)) => Err(FeatureGateError::BothSources),
            (Some(flag), None) => Self::parse(flag),
            (None, Some(map)) => Self::from_map(map),
            (None, None) => Ok(Self::default()),
        }
    }

    /// Warnings for what was set: those Kueue logs (GA and deprecated gates go away in later
    /// releases), and one for each gate set to a value that has no effect in Kuota ([`Effect`]).
    pub fn warnings(&self) -> Vec<String> {
        let lifecycle = self
            .explicit
            .iter()
            .filter_map(|(feature, value)| match feature.stage() {
                Stage::Ga => Some(format!(
                    "Setting GA feature gate {feature}={value}. It will be removed in a future release."
                )),
                Stage::Deprecated => Some(format!(
                    "Setting deprecated feature gate {feature}={value}. It will be removed in a future release."
                )),
                Stage::Alpha | Stage::Beta => None,
            });
        let without_effect = self
            .explicit
            .iter()
            .filter_map(|(feature, &value)| match feature.effect() {
                Effect::Read => None,
                Effect::NotImplemented(why) => {
                    value.then(|| format!("feature gate {feature}=true has no effect: {why}"))
                }
                Effect::NotRead => (value != feature.default_enabled()).then(|| {
                    format!("feature gate {feature}={value} has no effect: Kuota does not read this gate")
                }),
            });
        lifecycle.chain(without_effect).collect()
    }

    fn from_pairs<'a>(
        pairs: impl IntoIterator<Item = (&'a str, bool)>,
    ) -> Result<Self, FeatureGateError> {
        let mut gates = FeatureGates::default();
        for (name, value) in pairs {
            let feature: Feature = name.parse()?;
            if feature.locked_to_default() && value != feature.default_enabled() {
                return Err(FeatureGateError::Locked { feature, value });
            }
            gates.explicit.insert(feature, value);
        }
        for feature in Feature::ALL.iter().copied() {
            if !gates.enabled(feature) {
                continue;
            }
            let disabled: Vec<Feature> = feature
                .dependencies()
                .iter()
                .copied()
                .filter(|dependency| !gates.enabled(*dependency))
                .collect();
            if !disabled.is_empty() {
                return Err(FeatureGateError::DisabledDependencies { feature, disabled });
            }
        }
        Ok(gates)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn map(entries: &[(&str, bool)]) -> BTreeMap<String, bool> {
        entries
            .iter()
            .map(|(name, value)| (name.to_string(), *value))
            .collect()
    }

    #[test]
    fn table_matches_kueue_defaults() {
        assert_eq!(Feature::ALL.len(), 80);
        let cases = [
            (Feature::PartialAdmission, true, Stage::Beta, false),
            (Feature::TopologyAwareScheduling, true, Stage::Beta, false),
            (Feature::LocalQueueMetrics, true, Stage::Beta, false),
            (Feature::DisableWaitForPodsReady, false, Stage::Alpha, false),
            (
                Feature::UnadmittedWorkloadsExplicitStatus,
                false,
                Stage::Beta,
                false,
            ),
            (
                Feature::TASReplaceNodeDueToNotReadyOverFixedTime,
                false,
                Stage::Deprecated,
                false,
            ),
            (
                Feature::ManagedJobsNamespaceSelectorAlwaysRespected,
                true,
                Stage::Ga,
                true,
            ),
            (Feature::TLSOptions, true, Stage::Ga, true),
            (
                Feature::WorkloadPriorityClassDefaulting,
                true,
                Stage::Beta,
                false,
            ),
            (Feature::ShortWorkloadNames, false, Stage::Alpha, false),
        ];
        for (feature, default, stage, locked) in cases {
            assert_eq!(feature.default_enabled(), default, "{feature}");
            assert_eq!(feature.stage(), stage, "{feature}");
            assert_eq!(feature.locked_to_default(), locked, "{feature}");
        }
    }

    #[test]
    fn names_round_trip() {
        for feature in Feature::ALL {
            assert_eq!(feature.name().parse::<Feature>(), Ok(*feature));
        }
    }

    #[test]
    fn defaults_dependencies_are_consistent() {
        assert_eq!(
            FeatureGates::from_map(&BTreeMap::new()),
            Ok(FeatureGates::default())
        );
    }

    #[test]
    fn parses_the_flag() {
        let gates = FeatureGates::parse(
            "TopologyAwareScheduling=true, PartialAdmission=false,,ShortWorkloadNames=1",
        )
        .unwrap();
        assert!(gates.enabled(Feature::TopologyAwareScheduling));
        assert!(!gates.enabled(Feature::PartialAdmission));
        assert!(gates.enabled(Feature::ShortWorkloadNames));
        assert!(!gates.enabled(Feature::ConcurrentAdmission));
        assert_eq!(gates.explicit().len(), 3);
    }

    #[test]
    fn refuses_bad_settings() {
        let cases = [
            (
                FeatureGates::parse("Foo=true"),
                "unknown feature gate \"Foo\"",
            ),
            (
                FeatureGates::parse("PartialAdmission"),
                "missing bool value for PartialAdmission",
            ),
            (
                FeatureGates::parse("PartialAdmission=yes"),
                "invalid value of PartialAdmission=yes: must be true or false",
            ),
            (
                FeatureGates::parse("TLSOptions=false"),
                "cannot set feature gate TLSOptions to false, feature is locked to true",
            ),
            (
                FeatureGates::from_map(&map(&[("TopologyAwareScheduling", false)])),
                "TASProfileMixed is enabled, but depends on features that are disabled: [TopologyAwareScheduling]",
            ),
            (
                FeatureGates::from_map(&map(&[
                    ("TopologyAwareScheduling", false),
                    ("TASFailedNodeReplacement", true),
                    ("TASProfileMixed", false),
                ])),
                "TASFailedNodeReplacement is enabled, but depends on features that are disabled: [TopologyAwareScheduling]",
            ),
            (
                FeatureGates::from_sources(Some("PartialAdmission=true"), Some(&BTreeMap::new())),
                "feature gates for CLI and configuration cannot both be specified",
            ),
        ];
        for (result, message) in cases {
            assert_eq!(result.unwrap_err().to_string(), message);
        }
    }

    #[test]
    fn one_source_at_a_time() {
        let from_map =
            FeatureGates::from_sources(Some(""), Some(&map(&[("LocalQueueMetrics", false)])))
                .unwrap();
        assert!(!from_map.enabled(Feature::LocalQueueMetrics));
        let from_flag = FeatureGates::from_sources(Some("LocalQueueMetrics=false"), None).unwrap();
        assert_eq!(from_flag, from_map);
        assert_eq!(
            FeatureGates::from_sources(None, None),
            Ok(FeatureGates::default())
        );
    }

    #[test]
    fn warns_about_gates_set_to_values_kuota_does_not_act_on() {
        let gates = FeatureGates::parse(
            "TopologyAwareScheduling=true,TASBalancedPlacement=true,LocalQueueMetrics=false,MultiKueue=false,VisibilityOnDemand=true,PrioritySortingWithinCohort=false,MetricsForCohorts=true,WorkloadRequestUseMergePatch=true,ShortWorkloadNames=false",
        )
        .unwrap();
        assert_eq!(
            gates.warnings(),
            [
                "feature gate PrioritySortingWithinCohort=false has no effect: Kuota does not read this gate",
                "feature gate TASBalancedPlacement=true has no effect: Kuota places topology-aware workloads as Kueue's default TAS profile does and does not implement this variant of it",
                "feature gate WorkloadRequestUseMergePatch=true has no effect: Kuota does not read this gate",
            ]
        );
        // Defaults are Kueue's, and only what was set is warned about.
        assert_eq!(FeatureGates::default().warnings(), Vec::<String>::new());
    }

    #[test]
    fn warns_about_ga_and_deprecated_gates() {
        let gates = FeatureGates::parse(
            "TLSOptions=true,TASReplaceNodeDueToNotReadyOverFixedTime=false,PartialAdmission=true",
        )
        .unwrap();
        assert_eq!(
            gates.warnings(),
            [
                "Setting deprecated feature gate TASReplaceNodeDueToNotReadyOverFixedTime=false. It will be removed in a future release.",
                "Setting GA feature gate TLSOptions=true. It will be removed in a future release.",
            ]
        );
    }
}
