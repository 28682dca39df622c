//! Which parked (inadmissible) workloads a change in the cluster makes worth retrying: the
//! scheduler compares what it observes with what it saw last cycle.

use std::collections::{BTreeMap, BTreeSet};

use crate::admitter::scheduling::cluster_state::Converted;
use crate::quota::Decision;
use crate::quota::model::{self, FlavorResource, Quantity};

/// Which parked workloads a change makes worth retrying.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Requeue {
    /// The cohort tree of this ClusterQueue.
    ClusterQueue(String),
    /// The tree of this Cohort.
    Cohort(String),
    /// Every queue.
    All,
}

/// What the scheduler saw last time, to tell what changed.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Observed {
    cluster_queues: BTreeMap<String, model::ClusterQueue>,
    cohorts: BTreeMap<String, model::Cohort>,
    flavors: BTreeMap<String, model::ResourceFlavor>,
    holders: BTreeMap<String, (String, BTreeMap<FlavorResource, Quantity>)>,
    topology_version: u64,
}

impl Observed {
    /// What `converted` shows.
    pub fn of(converted: &Converted) -> Self {
        Self {
            cluster_queues: converted
                .cluster_queues
                .iter()
                .map(|cq| (cq.name.clone(), cq.clone()))
                .collect(),
            cohorts: converted
                .cohorts
                .iter()
                .map(|cohort| (cohort.name.clone(), cohort.clone()))
                .collect(),
            flavors: converted
                .flavors
                .iter()
                .map(|flavor| (flavor.name.clone(), flavor.clone()))
                .collect(),
            holders: converted
                .holders
                .iter()
                .filter_map(|holder| {
                    let admission = holder.workload.admission.as_ref()?;
                    Some((
                        holder.workload.key.clone(),
                        (admission.cluster_queue.clone(), admission.usage()),
                    ))
                })
                .collect(),
            topology_version: converted.topology_version,
        }
    }

    /// Records the admissions among `decisions` as quota holders.
    pub fn note_admissions(&mut self, decisions: &[Decision]) {
        for decision in decisions {
            if let Decision::Admit {
                workload,
                admission,
            } = decision
            {
                self.holders.insert(
                    workload.clone(),
                    (admission.cluster_queue.clone(), admission.usage()),
                );
            }
        }
    }

    /// The requeues the change from `self` to `current` calls for: a quota holder gone or
    /// using less releases quota in its ClusterQueue; a changed ClusterQueue, Cohort or
    /// ResourceFlavor, or free capacity of topology-aware flavors, may make parked workloads
    /// admissible.
    pub fn requeues(&self, current: &Observed) -> BTreeSet<Requeue> {
        let mut requeues = BTreeSet::new();
        if self.flavors != current.flavors || self.topology_version != current.topology_version {
            requeues.insert(Requeue::All);
        }
        for (name, queue) in &self.cluster_queues {
            if current.cluster_queues.get(name) != Some(queue) {
                requeues.insert(Requeue::ClusterQueue(name.clone()));
                if let Some(cohort) = &queue.cohort {
                    requeues.insert(Requeue::Cohort(cohort.clone()));
                }
            }
        }
        for name in current.cluster_queues.keys() {
            if !self.cluster_queues.contains_key(name) {
                requeues.insert(Requeue::ClusterQueue(name.clone()));
            }
        }
        let cohort_names: BTreeSet<&String> =
            self.cohorts.keys().chain(current.cohorts.keys()).collect();
        for name in cohort_names {
            if self.cohorts.get(name) != current.cohorts.get(name) {
                requeues.insert(Requeue::Cohort(name.clone()));
            }
        }
        for (key, (queue, usage)) in &self.holders {
            let released = match current.holders.get(key) {
                None => true,
                Some((now_queue, now_usage)) => {
                    now_queue != queue
                        || usage
                            .iter()
                            .any(|(fr, before)| now_usage.get(fr).copied().unwrap_or(0) < *before)
                }
            };
            if released {
                requeues.insert(Requeue::ClusterQueue(queue.clone()));
            }
        }
        requeues
    }
}
