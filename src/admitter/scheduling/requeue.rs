//! Which parked (inadmissible) workloads a change in the cluster makes worth retrying: the
//! scheduler compares what it observes with what it saw last cycle.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

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
    holders: foldhash::HashMap<String, Held>,
    topology_version: u64,
}

/// The quota a workload was seen holding.
#[derive(Clone, Debug, PartialEq)]
enum Held {
    /// The converted workload with its admission, shared with the conversion cache: the same
    /// `Arc` in the next pass is the same admission, with no usage to work out and compare.
    Converted(Arc<model::Workload>),
    /// Admitted by the cycle, not shown by the stores yet.
    Admitted {
        cluster_queue: String,
        usage: BTreeMap<FlavorResource, Quantity>,
    },
}

impl Held {
    /// Whether `now`, what the same workload holds next (`None`: nothing), may let a parked
    /// workload in: less quota held, or the same at another priority, which parked workloads
    /// may now preempt (Kueue requeues on a holder's priority change too).
    fn may_let_others_in(&self, now: Option<&Held>) -> bool {
        let Some(now) = now else {
            return true;
        };
        if let (Held::Converted(before), Held::Converted(now)) = (self, now) {
            if Arc::ptr_eq(before, now) {
                return false;
            }
            if before.priority != now.priority {
                return true;
            }
        }
        let (Some(queue), Some(now_queue)) = (self.cluster_queue(), now.cluster_queue()) else {
            return true;
        };
        let (usage, now_usage) = (self.usage(), now.usage());
        now_queue != queue
            || usage
                .iter()
                .any(|(fr, before)| now_usage.get(fr).copied().unwrap_or(0) < *before)
    }

    fn cluster_queue(&self) -> Option<&str> {
        match self {
            Held::Converted(workload) => workload
                .admission
                .as_ref()
                .map(|admission| admission.cluster_queue.as_str()),
            Held::Admitted { cluster_queue, .. } => Some(cluster_queue),
        }
    }

    fn usage(&self) -> BTreeMap<FlavorResource, Quantity> {
        match self {
            Held::Converted(workload) => workload
                .admission
                .as_ref()
                .map(model::Admission::usage)
                .unwrap_or_default(),
            Held::Admitted { usage, .. } => usage.clone(),
        }
    }
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
                .filter(|holder| holder.workload.admission.is_some())
                .map(|holder| {
                    let held = Held::Converted(Arc::clone(&holder.workload));
                    (holder.workload.key.clone(), held)
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
                let held = Held::Admitted {
                    cluster_queue: admission.cluster_queue.clone(),
                    usage: admission.usage(),
                };
                self.holders.insert(workload.clone(), held);
            }
        }
    }

    /// The requeues the change from `self` to `current` calls for: a quota holder gone, using
    /// less or at another priority may let parked workloads of its ClusterQueue in; a changed
    /// ClusterQueue, Cohort or ResourceFlavor, or free capacity of topology-aware flavors, may
    /// make parked workloads admissible.
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
        for (key, held) in &self.holders {
            if let Some(queue) = held.cluster_queue()
                && held.may_let_others_in(current.holders.get(key))
            {
                requeues.insert(Requeue::ClusterQueue(queue.to_owned()));
            }
        }
        requeues
    }
}
