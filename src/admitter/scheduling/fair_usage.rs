//! Admission fair sharing's record of what each LocalQueue consumed (Kueue's usage ledger and
//! its LocalQueue sampling): every `usageSamplingInterval` the consumption decays toward what
//! the LocalQueue's admitted workloads use, with `usageHalfLifeTime` as half-life; each
//! admission in a ClusterQueue with `UsageBasedAdmissionFairSharing` is charged at once (the
//! entry penalty), and refunded if its write fails. The record starts from the LocalQueue's
//! `status.fairSharing.admissionFairSharingStatus`, so a restart or a new leader goes on from
//! what the last one reported, and each sampling is reported there.

use std::collections::BTreeMap;
use std::sync::Arc;

use jiff::Timestamp;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

use super::cluster_state::{Holder, LocalQueueRef};
use crate::api::v1beta2 as api;
use crate::config::AdmissionFairSharing;
use crate::k8s::quantity::{format_quantity, resource_value};
use crate::quota::from_api::{base_units, fair_weight};
use crate::quota::{LocalQueueUsage, decayed, weighted_usage};

/// What one LocalQueue consumed.
#[derive(Clone, Debug, PartialEq)]
struct Consumption {
    /// Per resource, in base units (cores for `cpu`).
    resources: BTreeMap<String, f64>,
    /// When it last decayed.
    sampled_at: Timestamp,
    /// What the last sampling found, as the LocalQueue's status shows it.
    reported: api::AdmissionFairSharingStatus,
}

/// The record of every LocalQueue's consumption, kept by the scheduler between passes.
#[derive(Clone, Debug, Default)]
pub struct UsageLedger {
    /// `admissionFairSharing` with its gate on; `None` keeps no record.
    settings: Option<AdmissionFairSharing>,
    queues: BTreeMap<LocalQueueRef, Consumption>,
    /// Admissions charged whose status write has not come back yet.
    charges: BTreeMap<String, (LocalQueueRef, BTreeMap<String, f64>)>,
}

impl UsageLedger {
    /// A ledger for `settings`; `None` (admission fair sharing off) records nothing.
    pub fn new(settings: Option<AdmissionFairSharing>) -> Self {
        Self {
            settings,
            ..Self::default()
        }
    }

    /// Starts the record of new LocalQueues from their status, forgets deleted ones, and decays
    /// those whose sampling interval has passed toward what their admitted `holders` use.
    pub fn sample(
        &mut self,
        local_queues: &[Arc<api::LocalQueue>],
        holders: &[Holder],
        now: Timestamp,
    ) {
        let Some(settings) = &self.settings else {
            return;
        };
        let mut known = BTreeMap::new();
        for local_queue in local_queues {
            let reference = LocalQueueRef::of(local_queue);
            let consumption = self
                .queues
                .remove(&reference)
                .unwrap_or_else(|| seeded(local_queue, now));
            known.insert(reference, consumption);
        }
        self.queues = known;
        let due: Vec<LocalQueueRef> = self
            .queues
            .iter()
            .filter(|(_, consumption)| due_at(consumption, settings) <= now)
            .map(|(reference, _)| reference.clone())
            .collect();
        if due.is_empty() {
            return;
        }
        let mut in_use: BTreeMap<&LocalQueueRef, BTreeMap<String, f64>> = BTreeMap::new();
        for holder in holders.iter().filter(|holder| holder.admitted) {
            let (Some(local_queue), Some(admission)) =
                (&holder.local_queue, &holder.workload.admission)
            else {
                continue;
            };
            let used = in_use.entry(local_queue).or_default();
            for (fr, value) in admission.usage() {
                *used.entry(fr.resource.clone()).or_default() += base_units(&fr.resource, value);
            }
        }
        let half_life = settings.usage_half_life_time.as_secs_f64();
        for reference in &due {
            let Some(consumption) = self.queues.get_mut(reference) else {
                continue;
            };
            consumption.resources = if half_life == 0.0 {
                // Kueue keeps no history without a half-life.
                BTreeMap::new()
            } else {
                let elapsed = now.duration_since(consumption.sampled_at).as_secs_f64();
                let current = in_use.get(reference).cloned().unwrap_or_default();
                decayed(&consumption.resources, &current, elapsed, half_life)
            };
            consumption.sampled_at = now;
            consumption.reported = status(&consumption.resources, now);
        }
    }

    /// Each LocalQueue's standing for the scheduling cycle (empty when admission fair sharing
    /// is off), keyed `namespace/name`.
    pub fn usages(
        &self,
        local_queues: &[Arc<api::LocalQueue>],
    ) -> foldhash::HashMap<String, LocalQueueUsage> {
        local_queues
            .iter()
            .filter_map(|local_queue| {
                let reference = LocalQueueRef::of(local_queue);
                let standing = self.standing(&reference, local_queue)?;
                Some((reference.to_string(), standing))
            })
            .collect()
    }

    /// A LocalQueue's usage: its consumption weighted per resource, divided by its weight;
    /// `None` when admission fair sharing is off.
    pub fn usage(&self, local_queue: &api::LocalQueue) -> Option<f64> {
        self.standing(&LocalQueueRef::of(local_queue), local_queue)
            .map(|standing| standing.usage)
    }

    fn standing(
        &self,
        reference: &LocalQueueRef,
        local_queue: &api::LocalQueue,
    ) -> Option<LocalQueueUsage> {
        let settings = self.settings.as_ref()?;
        let weight = fair_weight(local_queue.spec.fair_sharing.as_ref());
        let usage = self.queues.get(reference).map_or(0.0, |consumption| {
            weighted_usage(&consumption.resources, &settings.resource_weights, weight)
        });
        Some(LocalQueueUsage { usage, weight })
    }

    /// Charges an admission's entry penalty (per resource, base units) to its LocalQueue until
    /// its write comes back: kept if written, refunded if not.
    pub fn charge(
        &mut self,
        workload: &str,
        local_queue: &LocalQueueRef,
        penalty: BTreeMap<String, f64>,
    ) {
        let Some(consumption) = self.queues.get_mut(local_queue) else {
            return;
        };
        for (resource, value) in &penalty {
            *consumption.resources.entry(resource.clone()).or_default() += value;
        }
        self.charges
            .insert(workload.to_owned(), (local_queue.clone(), penalty));
    }

    /// The admission of `workload` was written: its charge stays.
    pub fn written(&mut self, workload: &str) {
        self.charges.remove(workload);
    }

    /// The admission of `workload` was not written: its charge is taken back.
    pub fn refund(&mut self, workload: &str) {
        let Some((local_queue, penalty)) = self.charges.remove(workload) else {
            return;
        };
        if let Some(consumption) = self.queues.get_mut(&local_queue) {
            for (resource, value) in penalty {
                if let Some(consumed) = consumption.resources.get_mut(&resource) {
                    *consumed = (*consumed - value).max(0.0);
                }
            }
        }
    }

    /// What the LocalQueue's status reports, once it has been sampled.
    pub fn status(&self, local_queue: &LocalQueueRef) -> Option<&api::AdmissionFairSharingStatus> {
        self.queues
            .get(local_queue)
            .map(|consumption| &consumption.reported)
    }

    /// When the next LocalQueue is due for sampling.
    pub fn next_sample_at(&self) -> Option<Timestamp> {
        let settings = self.settings.as_ref()?;
        self.queues
            .values()
            .map(|consumption| due_at(consumption, settings))
            .min()
    }
}

fn due_at(consumption: &Consumption, settings: &AdmissionFairSharing) -> Timestamp {
    let interval = jiff::SignedDuration::try_from(settings.usage_sampling_interval)
        .unwrap_or(jiff::SignedDuration::MAX);
    consumption
        .sampled_at
        .checked_add(interval)
        .unwrap_or(Timestamp::MAX)
}

/// The record of a LocalQueue first seen: what its status reports (Kueue's `consumedResources`
/// survive a restart), sampled from now on.
fn seeded(local_queue: &api::LocalQueue, now: Timestamp) -> Consumption {
    let reported = reported_status(local_queue);
    let resources = reported.map(consumed).unwrap_or_default();
    Consumption {
        reported: reported.cloned().unwrap_or_else(|| status(&resources, now)),
        resources,
        sampled_at: now,
    }
}

/// The usage a LocalQueue's status last reported, weighted with `resource_weights`: what the
/// visibility API orders a fair-sharing ClusterQueue's pending workloads by, on any replica.
pub fn reported_usage(
    local_queue: &api::LocalQueue,
    resource_weights: &BTreeMap<String, f64>,
) -> f64 {
    let resources = reported_status(local_queue)
        .map(consumed)
        .unwrap_or_default();
    weighted_usage(
        &resources,
        resource_weights,
        fair_weight(local_queue.spec.fair_sharing.as_ref()),
    )
}

fn reported_status(local_queue: &api::LocalQueue) -> Option<&api::AdmissionFairSharingStatus> {
    local_queue
        .status
        .as_ref()?
        .fair_sharing
        .as_ref()?
        .admission_fair_sharing_status
        .as_ref()
}

/// A reported consumption in base units.
fn consumed(reported: &api::AdmissionFairSharingStatus) -> BTreeMap<String, f64> {
    reported
        .consumed_resources
        .iter()
        .filter_map(|(resource, quantity)| {
            let value = resource_value(resource, quantity).ok()?;
            Some((resource.clone(), base_units(resource, value)))
        })
        .collect()
}

/// `status.fairSharing.admissionFairSharingStatus` for a consumption sampled at `at`.
fn status(resources: &BTreeMap<String, f64>, at: Timestamp) -> api::AdmissionFairSharingStatus {
    api::AdmissionFairSharingStatus {
        consumed_resources: resources
            .iter()
            .map(|(resource, value)| (resource.clone(), quantity(resource, *value)))
            .collect(),
        last_update: Time(at),
    }
}

/// A consumption in base units as a quantity: millicores for `cpu`, whole units otherwise,
/// rounded to the nearest.
fn quantity(resource: &str, value: f64) -> k8s_openapi::apimachinery::pkg::api::resource::Quantity {
    let canonical = if resource == crate::k8s::quantity::CPU {
        value * 1000.0
    } else {
        value
    };
    // Saturating: a consumption beyond the i64 range is beyond any quota.
    #[allow(clippy::cast_possible_truncation)]
    let canonical = canonical.round() as i64;
    format_quantity(resource, canonical)
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use pretty_assertions::assert_eq;
    use serde_json::json;

    use super::*;
    use crate::quota::model::{self, PodSetAssignment};
    use crate::testing::objects::{local_queue, ts};

    fn settings(weights: &[(&str, f64)]) -> AdmissionFairSharing {
        AdmissionFairSharing {
            usage_half_life_time: Duration::from_secs(60),
            usage_sampling_interval: Duration::from_secs(60),
            resource_weights: weights
                .iter()
                .map(|(resource, weight)| ((*resource).to_owned(), *weight))
                .collect(),
        }
    }

    /// `ns/<name>` with a status that reports `consumed` at t=0, weighing `weight`.
    fn reported(name: &str, consumed: serde_json::Value, weight: &str) -> Arc<api::LocalQueue> {
        Arc::new(
            serde_json::from_value(json!({
            "metadata": {"name": name, "namespace": "ns"},
            "spec": {"clusterQueue": "cq", "fairSharing": {"weight": weight}},
            "status": {"fairSharing": {"weightedShare": 0, "admissionFairSharingStatus": {
                "consumedResources": consumed, "lastUpdate": "1970-01-01T00:00:00Z",
            }}},
            }))
            .expect("a LocalQueue"),
        )
    }

    /// An admitted workload of `ns/<local_queue>` holding `cpu` millicores.
    fn holding(local_queue: &str, cpu: i64) -> Holder {
        let mut workload = model::Workload::new("ns/w", "cq", ts(0));
        workload.admission = Some(model::Admission {
            cluster_queue: "cq".to_owned(),
            pod_set_assignments: vec![PodSetAssignment {
                name: "main".to_owned(),
                flavors: [("cpu".to_owned(), "default".to_owned())].into(),
                resource_usage: [("cpu".to_owned(), cpu)].into(),
                count: 1,
                topology: None,
            }],
        });
        Holder {
            workload: Arc::new(workload),
            local_queue: Some(LocalQueueRef::new("ns", local_queue)),
            admitted: true,
        }
    }

    fn usage_of(ledger: &UsageLedger, queues: &[Arc<api::LocalQueue>], name: &str) -> f64 {
        ledger.usages(queues)[&format!("ns/{name}")].usage
    }

    #[test]
    fn consumption_starts_from_the_status_and_decays_toward_the_admitted_usage() {
        let queues = vec![
            reported("a", json!({"cpu": "4", "memory": "1Ki"}), "2"),
            Arc::new(local_queue("ns", "b", "cq")),
        ];
        let mut ledger = UsageLedger::new(Some(settings(&[("memory", 0.0)])));
        ledger.sample(&queues, &[holding("b", 2000)], ts(100));
        // Seeded, not yet due: cpu 4 (memory weighs nothing), divided by a's weight of 2.
        assert_eq!(usage_of(&ledger, &queues, "a"), 2.0);
        assert_eq!(usage_of(&ledger, &queues, "b"), 0.0);
        assert_eq!(ledger.next_sample_at(), Some(ts(160)));

        // One half-life later: half the history, half the current use.
        ledger.sample(&queues, &[holding("b", 2000)], ts(160));
        assert_eq!(usage_of(&ledger, &queues, "a"), 1.0);
        assert_eq!(usage_of(&ledger, &queues, "b"), 1.0);
        let reported = |name: &str| {
            serde_json::to_value(ledger.status(&LocalQueueRef::new("ns", name)).unwrap()).unwrap()
        };
        assert_eq!(
            reported("a"),
            json!({"consumedResources": {"cpu": "2", "memory": "512"}, "lastUpdate": "1970-01-01T00:02:40Z"})
        );
        assert_eq!(
            reported("b"),
            json!({"consumedResources": {"cpu": "1"}, "lastUpdate": "1970-01-01T00:02:40Z"})
        );

        // A deleted LocalQueue is forgotten.
        ledger.sample(&queues[1..], &[], ts(170));
        assert_eq!(ledger.status(&LocalQueueRef::new("ns", "a")), None);
    }

    #[test]
    fn a_charge_stays_once_written_and_is_taken_back_if_not() {
        let queues = vec![Arc::new(local_queue("ns", "a", "cq"))];
        let mut ledger = UsageLedger::new(Some(settings(&[])));
        ledger.sample(&queues, &[], ts(0));
        let a = LocalQueueRef::new("ns", "a");
        ledger.charge("ns/w1", &a, [("cpu".to_owned(), 0.5)].into());
        ledger.charge("ns/w2", &a, [("cpu".to_owned(), 0.25)].into());
        assert_eq!(usage_of(&ledger, &queues, "a"), 0.75);
        ledger.written("ns/w1");
        ledger.refund("ns/w1");
        ledger.refund("ns/w2");
        assert_eq!(usage_of(&ledger, &queues, "a"), 0.5);
    }

    #[test]
    fn without_admission_fair_sharing_nothing_is_recorded() {
        let queues = vec![reported("a", json!({"cpu": "4"}), "1")];
        let mut ledger = UsageLedger::new(None);
        ledger.sample(&queues, &[], ts(0));
        assert!(ledger.usages(&queues).is_empty());
        assert_eq!(ledger.status(&LocalQueueRef::new("ns", "a")), None);
        assert_eq!(ledger.next_sample_at(), None);
    }
}
