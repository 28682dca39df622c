//! Admission fair sharing (Kueue's `AdmissionFairSharing`): within a ClusterQueue whose
//! `admissionScope.admissionMode` is `UsageBasedAdmissionFairSharing`, the pending workloads of
//! the LocalQueue that recently used the least go first, and preemption within the queue takes
//! from the LocalQueue that used the most first.
//!
//! A LocalQueue's usage is its decayed consumption per resource, in Kubernetes' base units (cores
//! for `cpu`, bytes for `memory`), weighted per resource and divided by the LocalQueue's
//! `fairSharing.weight`. The caller keeps the consumption between cycles ([`decayed`] at each
//! sampling, [`entry_penalty`] charged on each admission); a cycle charges the penalty of what
//! it admits at once, so that one LocalQueue does not take every admission of the cycle.

use std::collections::BTreeMap;

use super::model::{FlavorResource, Quantity, Workload};

/// The scheduler's side of `admissionFairSharing`.
#[derive(Clone, Debug)]
pub struct AdmissionFairSharingConfig {
    /// Weight per resource name; a resource not listed weighs 1.
    pub resource_weights: BTreeMap<String, f64>,
    /// Share of a workload's requests charged to its LocalQueue on admission: what one sampling
    /// interval at that usage would add (`1 - 0.5^(interval / half-life)`; 0 without decay).
    pub entry_penalty_rate: f64,
    /// A canonical quantity in the resource's base unit (the model's `cpu` is in millicores).
    pub base_units: fn(&str, Quantity) -> f64,
}

/// One LocalQueue's standing, as the caller computed it before the cycle.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LocalQueueUsage {
    /// Weighted consumption divided by the weight ([`weighted_usage`]).
    pub usage: f64,
    /// The LocalQueue's `fairSharing.weight` (default 1).
    pub weight: f64,
}

/// `namespace/name` of the LocalQueue a workload was submitted to.
pub fn local_queue_key(workload: &Workload) -> String {
    let namespace = workload
        .key
        .split_once('/')
        .map_or("", |(namespace, _)| namespace);
    format!("{namespace}/{}", workload.local_queue)
}

/// The decay factor of `elapsed` seconds with a half-life of `half_life` seconds: the share of
/// the current usage that replaces as much of the history.
pub fn decay_rate(elapsed: f64, half_life: f64) -> f64 {
    if half_life <= 0.0 || elapsed <= 0.0 {
        return 0.0;
    }
    1.0 - 0.5_f64.powf(elapsed / half_life)
}

/// The consumption after `elapsed` seconds at `current` usage: the history decays by
/// [`decay_rate`] and the current usage takes that share.
pub fn decayed(
    history: &BTreeMap<String, f64>,
    current: &BTreeMap<String, f64>,
    elapsed: f64,
    half_life: f64,
) -> BTreeMap<String, f64> {
    let rate = decay_rate(elapsed, half_life);
    let mut consumed: BTreeMap<String, f64> = history
        .iter()
        .map(|(resource, value)| (resource.clone(), value * (1.0 - rate)))
        .collect();
    for (resource, value) in current {
        *consumed.entry(resource.clone()).or_default() += value * rate;
    }
    consumed
}

/// What an admission with `usage` charges its LocalQueue, per resource in base units.
pub fn entry_penalty(
    usage: &BTreeMap<FlavorResource, Quantity>,
    config: &AdmissionFairSharingConfig,
) -> BTreeMap<String, f64> {
    let mut penalty: BTreeMap<String, f64> = BTreeMap::new();
    for (fr, value) in usage {
        *penalty.entry(fr.resource.clone()).or_default() +=
            (config.base_units)(&fr.resource, *value) * config.entry_penalty_rate;
    }
    penalty
}

/// The usage that orders LocalQueues: consumption weighted per resource, divided by the
/// LocalQueue's weight; a weight of 0 (or less) puts the LocalQueue last.
pub fn weighted_usage(
    consumed: &BTreeMap<String, f64>,
    resource_weights: &BTreeMap<String, f64>,
    local_queue_weight: f64,
) -> f64 {
    if local_queue_weight <= 0.0 {
        return f64::INFINITY;
    }
    let total: f64 = consumed
        .iter()
        .map(|(resource, value)| resource_weights.get(resource).copied().unwrap_or(1.0) * value)
        .sum();
    total / local_queue_weight
}
