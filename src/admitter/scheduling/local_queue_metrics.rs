//! Kueue's `kueue_local_queue_*` gauges: which LocalQueues export them (the
//! `LocalQueueMetrics` gate, `metrics.localQueueMetrics.enable` and its `localQueueSelector`)
//! and what each shows after a cycle, computed purely from the cycle's results.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use kube::ResourceExt;
use kube::core::{Selector, SelectorExt};

use crate::admitter::scheduling::cluster_state::{Converted, LocalQueueRef};
use crate::admitter::writers::queue_status::{QueueUsage, declared};
use crate::api::constants::condition;
use crate::api::v1beta2 as api;
use crate::config::{Configuration, Feature};
use crate::k8s::conditions::find_true;
use crate::metrics::{LocalQueueGauges, LocalQueueResource};
use crate::quota::from_api::base_units;
use crate::quota::model::FlavorResource;
use crate::quota::{PendingCounts, Queues};

/// Which LocalQueues export metrics.
#[derive(Clone, Debug)]
pub enum LocalQueueSelection {
    /// None: the gate or `metrics.localQueueMetrics.enable` is off.
    Off,
    /// Those whose labels match (an empty selector matches every LocalQueue).
    Matching(Selector),
}

impl LocalQueueSelection {
    /// Kueue's rule: the `LocalQueueMetrics` gate and `enable` both on, then the selector.
    pub fn from_config(config: &Configuration) -> Self {
        let settings = &config.metrics.local_queue_metrics;
        if !settings.enable || !config.feature_gates.enabled(Feature::LocalQueueMetrics) {
            return Self::Off;
        }
        let Some(selector) = &settings.local_queue_selector else {
            return Self::Matching(Selector::default());
        };
        match Selector::try_from(selector.clone()) {
            Ok(selector) => Self::Matching(selector),
            // The configuration's validation refuses such selectors, so this is not expected.
            Err(error) => {
                tracing::error!(%error, "metrics.localQueueMetrics.localQueueSelector cannot be used; no LocalQueue metrics are exported");
                Self::Off
            }
        }
    }

    /// The (namespace, name) of every selected LocalQueue.
    pub fn exposed(&self, local_queues: &[Arc<api::LocalQueue>]) -> BTreeSet<(String, String)> {
        let Self::Matching(selector) = self else {
            return BTreeSet::new();
        };
        local_queues
            .iter()
            .filter(|local_queue| selector.matches(local_queue.labels()))
            .map(|local_queue| {
                (
                    local_queue.namespace().unwrap_or_default(),
                    local_queue.name_any(),
                )
            })
            .collect()
    }
}

/// Workloads waiting per LocalQueue: `active` when the queues would still evaluate them,
/// `inadmissible` when parked, and also for workloads that cannot wait in any ClusterQueue
/// (their LocalQueue is stopped, say). Workloads the cycle just admitted have left the queues
/// and are not counted.
pub fn pending_by_local_queue(
    converted: &Converted,
    queues: &Queues,
) -> BTreeMap<LocalQueueRef, PendingCounts> {
    // Counted by (namespace, LocalQueue name) from a walk of the queues, hashed: thousands
    // wait in a few LocalQueues, and looking each one up in the queues cost most of a pass's
    // metrics. A queue's workloads mostly come from one LocalQueue, so a run of the same
    // LocalQueue is counted before it is hashed once.
    let mut pending: foldhash::HashMap<(&str, &str), PendingCounts> = foldhash::HashMap::default();
    let mut run: Option<(&str, &str)> = None;
    let mut run_counts = PendingCounts::default();
    queues.for_each_pending(|workload, parked| {
        let namespace = workload
            .key
            .split_once('/')
            .map_or("", |(namespace, _)| namespace);
        let local_queue = (namespace, workload.local_queue.as_str());
        if run != Some(local_queue)
            && let Some(ended) = run.replace(local_queue)
        {
            add(
                pending.entry(ended).or_default(),
                std::mem::take(&mut run_counts),
            );
        }
        if parked {
            run_counts.inadmissible += 1;
        } else {
            run_counts.active += 1;
        }
    });
    if let Some(ended) = run {
        add(pending.entry(ended).or_default(), run_counts);
    }
    for unqueued in &converted.unqueued {
        let local_queue = &unqueued.local_queue;
        pending
            .entry((&*local_queue.namespace, &*local_queue.name))
            .or_default()
            .inadmissible += 1;
    }
    pending
        .into_iter()
        .map(|((namespace, name), counts)| (LocalQueueRef::new(namespace, name), counts))
        .collect()
}

fn add(total: &mut PendingCounts, counts: PendingCounts) {
    total.active += counts.active;
    total.inadmissible += counts.inadmissible;
}

/// A LocalQueue's gauges from its new status, its ClusterQueue (and whether that is active),
/// the usage of its quota holders and its pending workloads. As in Kueue, nothing waiting
/// behind an inactive ClusterQueue counts as active.
pub fn local_queue_gauges(
    status: &api::LocalQueueStatus,
    cluster_queue: Option<(&api::ClusterQueue, bool)>,
    usage: &QueueUsage,
    pending: PendingCounts,
) -> LocalQueueGauges {
    let count = |n: usize| i64::try_from(n).unwrap_or(i64::MAX);
    let (active, inadmissible) = match cluster_queue {
        Some((_, true)) => (pending.active, pending.inadmissible),
        _ => (0, pending.active + pending.inadmissible),
    };
    let resources = cluster_queue
        .map(|(cluster_queue, _)| {
            declared(cluster_queue)
                .into_iter()
                .flat_map(|(flavor, resources)| {
                    resources.into_iter().map(move |resource| {
                        let fr = FlavorResource::new(&flavor, &resource);
                        let amount = |held: &BTreeMap<FlavorResource, i64>| {
                            base_units(&resource, held.get(&fr).copied().unwrap_or(0))
                        };
                        LocalQueueResource {
                            reserved: amount(&usage.reserved),
                            in_use: amount(&usage.in_use),
                            flavor: flavor.clone(),
                            resource,
                        }
                    })
                })
                .collect()
        })
        .unwrap_or_default();
    LocalQueueGauges {
        pending_active: count(active),
        pending_inadmissible: count(inadmissible),
        reserving: i64::from(usage.reserving),
        admitted: i64::from(usage.admitted),
        active: find_true(&status.conditions, condition::ACTIVE).is_some(),
        resources,
        admission_fair_sharing: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::admitter::scheduling::cluster_state::{PendingWorkload, Unqueued};
    use crate::config::LoadOptions;
    use crate::k8s::conditions::new_condition;
    use crate::quota::PendingReason;
    use crate::testing::objects::{cluster_queue, local_queue};

    fn configuration(metrics: &str, gates: Option<&str>) -> Configuration {
        let yaml = format!(
            "apiVersion: config.kueue.x-k8s.io/v1beta2\nkind: Configuration\nmetrics: {metrics}\n"
        );
        let options = LoadOptions {
            feature_gates_flag: gates.map(str::to_owned),
            ..LoadOptions::default()
        };
        Configuration::from_yaml(&yaml, &options).unwrap()
    }

    fn labelled(namespace: &str, name: &str, labels: &[(&str, &str)]) -> Arc<api::LocalQueue> {
        let mut queue = local_queue(namespace, name, "cq");
        queue.metadata.labels = Some(
            labels
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect(),
        );
        Arc::new(queue)
    }

    fn pair(namespace: &str, name: &str) -> (String, String) {
        (namespace.to_owned(), name.to_owned())
    }

    #[test]
    fn selection_follows_the_gate_the_switch_and_the_selector() {
        let queues = [
            labelled("a", "team", &[("metrics", "on")]),
            labelled("b", "other", &[]),
        ];
        let all = BTreeSet::from([pair("a", "team"), pair("b", "other")]);
        let by_default = LocalQueueSelection::from_config(&configuration("{}", None));
        assert_eq!(by_default.exposed(&queues), all);

        let selected = LocalQueueSelection::from_config(&configuration(
            "{localQueueMetrics: {enable: true, localQueueSelector: {matchLabels: {metrics: 'on'}}}}",
            None,
        ));
        assert_eq!(
            selected.exposed(&queues),
            BTreeSet::from([pair("a", "team")])
        );

        let switched_off = configuration("{localQueueMetrics: {enable: false}}", None);
        assert!(
            LocalQueueSelection::from_config(&switched_off)
                .exposed(&queues)
                .is_empty()
        );
        let gate_off = configuration("{}", Some("LocalQueueMetrics=false"));
        assert!(
            LocalQueueSelection::from_config(&gate_off)
                .exposed(&queues)
                .is_empty()
        );
    }

    fn waiting(key: &str, local_queue: &str) -> PendingWorkload {
        let namespace = key.split_once('/').unwrap().0;
        let mut workload =
            crate::quota::model::Workload::new(key, "cq", jiff::Timestamp::UNIX_EPOCH);
        workload.local_queue = local_queue.to_owned();
        PendingWorkload {
            workload: std::sync::Arc::new(workload),
            local_queue: LocalQueueRef::new(namespace, local_queue),
            unchanged: false,
        }
    }

    // Parking is the quota core's business (its own tests cover `Queues::is_inadmissible`);
    // here: queued ones count as active in their namespace's LocalQueue, unqueued ones as
    // inadmissible, admitted ones not.
    #[test]
    fn pending_counts_skip_the_just_admitted_and_count_the_unqueued_as_inadmissible() {
        let mut queues = Queues::new();
        let first = waiting("ns/first", "lq");
        let second = waiting("ns/second", "lq");
        let elsewhere = waiting("team/third", "lq");
        // Queued after `elsewhere`: its LocalQueue's count resumes after another's.
        let mut later = waiting("ns/later", "lq");
        Arc::make_mut(&mut later.workload).queue_timestamp =
            jiff::Timestamp::UNIX_EPOCH + jiff::SignedDuration::from_secs(1);
        for queued in [&first, &second, &elsewhere, &later] {
            queues.push(Arc::clone(&queued.workload));
        }
        let converted = Converted {
            pending: vec![
                first,
                second,
                elsewhere,
                later,
                waiting("ns/admitted", "lq"),
            ],
            unqueued: vec![Unqueued {
                workload: "ns/stopped".to_owned(),
                local_queue: LocalQueueRef::new("ns", "stopped"),
                reason: PendingReason::Suspended,
                message: String::new(),
            }],
            ..Converted::default()
        };
        assert_eq!(
            pending_by_local_queue(&converted, &queues),
            BTreeMap::from([
                (
                    LocalQueueRef::new("ns", "lq"),
                    PendingCounts {
                        active: 3,
                        inadmissible: 0
                    }
                ),
                (
                    LocalQueueRef::new("ns", "stopped"),
                    PendingCounts {
                        active: 0,
                        inadmissible: 1
                    }
                ),
                (
                    LocalQueueRef::new("team", "lq"),
                    PendingCounts {
                        active: 1,
                        inadmissible: 0
                    }
                ),
            ])
        );
    }

    fn active_status(active: bool) -> api::LocalQueueStatus {
        api::LocalQueueStatus {
            conditions: vec![
                new_condition(condition::ACTIVE, active, "Ready").at(jiff::Timestamp::UNIX_EPOCH),
            ],
            ..api::LocalQueueStatus::default()
        }
    }

    #[test]
    fn gauges_report_usage_per_declared_flavor_in_kueues_units() {
        let queue = cluster_queue("cq")
            .group(
                &["cpu", "memory"],
                &[
                    ("on-demand", &[("cpu", "4"), ("memory", "8Gi")]),
                    ("spot", &[("cpu", "2"), ("memory", "4Gi")]),
                ],
            )
            .build();
        let usage = QueueUsage {
            reserving: 2,
            admitted: 1,
            reserved: BTreeMap::from([
                (FlavorResource::new("on-demand", "cpu"), 1500),
                (FlavorResource::new("on-demand", "memory"), 1 << 30),
            ]),
            in_use: BTreeMap::from([(FlavorResource::new("on-demand", "cpu"), 500)]),
        };
        let pending = PendingCounts {
            active: 1,
            inadmissible: 2,
        };
        let gauges =
            local_queue_gauges(&active_status(true), Some((&queue, true)), &usage, pending);
        let amount =
            |flavor: &str, resource: &str, reserved: f64, in_use: f64| LocalQueueResource {
                flavor: flavor.to_owned(),
                resource: resource.to_owned(),
                reserved,
                in_use,
            };
        assert_eq!(
            gauges,
            LocalQueueGauges {
                pending_active: 1,
                pending_inadmissible: 2,
                reserving: 2,
                admitted: 1,
                active: true,
                resources: vec![
                    amount("on-demand", "cpu", 1.5, 0.5),
                    amount("on-demand", "memory", 1_073_741_824.0, 0.0),
                    amount("spot", "cpu", 0.0, 0.0),
                    amount("spot", "memory", 0.0, 0.0),
                ],
                admission_fair_sharing: None,
            }
        );

        let behind_inactive = local_queue_gauges(
            &active_status(false),
            Some((&queue, false)),
            &usage,
            pending,
        );
        assert_eq!(
            (
                behind_inactive.pending_active,
                behind_inactive.pending_inadmissible,
                behind_inactive.active
            ),
            (0, 3, false)
        );
        let without_cluster_queue =
            local_queue_gauges(&active_status(false), None, &QueueUsage::default(), pending);
        assert_eq!(without_cluster_queue.resources, Vec::new());
        assert_eq!(without_cluster_queue.pending_inadmissible, 3);
    }
}
