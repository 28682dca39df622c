//! Builders for scheduler test fixtures and expected decisions.

use std::collections::BTreeMap;
use std::sync::Arc;

use jiff::Timestamp;

use super::super::model::*;
use super::super::{Decision, PendingReason, PreemptionReason, Victim};

/// A timestamp `seconds` after the epoch.
pub fn ts(seconds: i64) -> Timestamp {
    Timestamp::from_second(seconds).expect("valid test timestamp")
}

// === Flavors ===

pub fn flavor(name: &str) -> ResourceFlavor {
    ResourceFlavor {
        name: name.to_owned(),
        ..ResourceFlavor::default()
    }
}

pub trait FlavorExt {
    fn label(self, key: &str, value: &str) -> Self;
    fn taint(self, key: &str, value: &str, effect: TaintEffect) -> Self;
    fn tolerate(self, toleration: Toleration) -> Self;
}

impl FlavorExt for ResourceFlavor {
    fn label(mut self, key: &str, value: &str) -> Self {
        self.node_labels.insert(key.to_owned(), value.to_owned());
        self
    }

    fn taint(mut self, key: &str, value: &str, effect: TaintEffect) -> Self {
        self.node_taints.push(Taint {
            key: key.to_owned(),
            value: value.to_owned(),
            effect,
        });
        self
    }

    fn tolerate(mut self, toleration: Toleration) -> Self {
        self.tolerations.push(toleration);
        self
    }
}

pub fn toleration(key: &str, value: &str, effect: Option<TaintEffect>) -> Toleration {
    Toleration {
        key: key.to_owned(),
        operator: TolerationOperator::Equal,
        value: value.to_owned(),
        effect,
    }
}

// === Quotas ===

pub fn rq(name: &str, nominal: Quantity) -> ResourceQuota {
    ResourceQuota {
        name: name.to_owned(),
        nominal,
        borrowing_limit: None,
        lending_limit: None,
    }
}

pub fn rq_limits(
    name: &str,
    nominal: Quantity,
    borrowing: Option<Quantity>,
    lending: Option<Quantity>,
) -> ResourceQuota {
    ResourceQuota {
        name: name.to_owned(),
        nominal,
        borrowing_limit: borrowing,
        lending_limit: lending,
    }
}

pub fn fq(name: &str, resources: Vec<ResourceQuota>) -> FlavorQuotas {
    FlavorQuotas {
        name: name.to_owned(),
        resources,
    }
}

pub fn group(covered: &[&str], flavors: Vec<FlavorQuotas>) -> ResourceGroup {
    ResourceGroup {
        covered_resources: covered.iter().map(|r| (*r).to_owned()).collect(),
        flavors,
    }
}

/// A ClusterQueue with one resource group covering `cpu` in flavor `default`.
pub fn cq_cpu(name: &str, nominal: Quantity) -> ClusterQueue {
    ClusterQueue::new(name).group(group(
        &["cpu"],
        vec![fq("default", vec![rq("cpu", nominal)])],
    ))
}

pub trait QueueExt {
    fn group(self, group: ResourceGroup) -> Self;
    fn cohort(self, cohort: &str) -> Self;
    fn strict(self) -> Self;
    fn within(self, policy: PreemptionPolicy) -> Self;
    fn reclaim(self, policy: PreemptionPolicy) -> Self;
    fn borrow_within_cohort(self, threshold: Option<i32>) -> Self;
    fn fungibility(
        self,
        when_can_borrow: FungibilityPolicy,
        when_can_preempt: FungibilityPolicy,
    ) -> Self;
    fn stop(self, policy: StopPolicy) -> Self;
    fn weight(self, weight: f64) -> Self;
    fn namespaces(self, selector: Option<LabelSelector>) -> Self;
}

impl QueueExt for ClusterQueue {
    fn group(mut self, group: ResourceGroup) -> Self {
        self.resource_groups.push(group);
        self
    }

    fn cohort(mut self, cohort: &str) -> Self {
        self.cohort = Some(cohort.to_owned());
        self
    }

    fn strict(mut self) -> Self {
        self.queueing_strategy = QueueingStrategy::StrictFifo;
        self
    }

    fn within(mut self, policy: PreemptionPolicy) -> Self {
        self.preemption.within_cluster_queue = policy;
        self
    }

    fn reclaim(mut self, policy: PreemptionPolicy) -> Self {
        self.preemption.reclaim_within_cohort = policy;
        self
    }

    fn borrow_within_cohort(mut self, threshold: Option<i32>) -> Self {
        self.preemption.borrow_within_cohort = BorrowWithinCohort {
            policy: BorrowWithinCohortPolicy::LowerPriority,
            max_priority_threshold: threshold,
        };
        self
    }

    fn fungibility(
        mut self,
        when_can_borrow: FungibilityPolicy,
        when_can_preempt: FungibilityPolicy,
    ) -> Self {
        self.flavor_fungibility = FlavorFungibility {
            when_can_borrow,
            when_can_preempt,
            preference: None,
        };
        self
    }

    fn stop(mut self, policy: StopPolicy) -> Self {
        self.stop_policy = policy;
        self
    }

    fn weight(mut self, weight: f64) -> Self {
        self.fair_sharing_weight = weight;
        self
    }

    fn namespaces(mut self, selector: Option<LabelSelector>) -> Self {
        self.namespace_selector = selector;
        self
    }
}

// === Workloads ===

pub fn pod_set(name: &str, count: i32) -> PodSet {
    PodSet {
        name: name.to_owned(),
        count,
        ..PodSet::default()
    }
}

pub trait PodSetExt {
    fn req(self, resource: &str, quantity: Quantity) -> Self;
    fn min(self, min_count: i32) -> Self;
    fn selector(self, key: &str, value: &str) -> Self;
    fn affinity(self, term: Vec<NodeSelectorRequirement>) -> Self;
    fn tolerate(self, toleration: Toleration) -> Self;
}

impl PodSetExt for PodSet {
    fn req(mut self, resource: &str, quantity: Quantity) -> Self {
        self.requests.insert(resource.to_owned(), quantity);
        self
    }

    fn min(mut self, min_count: i32) -> Self {
        self.min_count = Some(min_count);
        self
    }

    fn selector(mut self, key: &str, value: &str) -> Self {
        self.node_selector.insert(key.to_owned(), value.to_owned());
        self
    }

    fn affinity(mut self, term: Vec<NodeSelectorRequirement>) -> Self {
        self.node_affinity.push(NodeSelectorTerm {
            match_expressions: term,
        });
        self
    }

    fn tolerate(mut self, toleration: Toleration) -> Self {
        self.tolerations.push(toleration);
        self
    }
}

pub fn requirement(
    key: &str,
    operator: NodeSelectorOperator,
    values: &[&str],
) -> NodeSelectorRequirement {
    NodeSelectorRequirement {
        key: key.to_owned(),
        operator,
        values: values.iter().map(|v| (*v).to_owned()).collect(),
    }
}

/// A pending workload `ns/<name>` with UID `uid-<name>`, queued at `created`, one PodSet `main`
/// of one pod requesting `cpu`.
pub fn wl(name: &str, cq: &str, created: i64, cpu: Quantity) -> Workload {
    Workload::new(&format!("ns/{name}"), cq, ts(created))
        .uid(&format!("uid-{name}"))
        .pod_sets(vec![pod_set("main", 1).req("cpu", cpu)])
}

pub trait WorkloadExt {
    fn uid(self, uid: &str) -> Self;
    fn local_queue(self, name: &str) -> Self;
    fn priority(self, priority: i64) -> Self;
    fn pod_sets(self, pod_sets: Vec<PodSet>) -> Self;
    fn namespace_label(self, key: &str, value: &str) -> Self;
    /// Admits every requested resource of every PodSet to `flavor` of `cq`, reserved at `at`.
    fn admitted_in(self, cq: &str, flavor: &str, at: i64) -> Self;
    fn evicted(self) -> Self;
    fn requeue_at(self, at: i64) -> Self;
}

impl WorkloadExt for Workload {
    fn uid(mut self, uid: &str) -> Self {
        self.uid = uid.to_owned();
        self
    }

    fn local_queue(mut self, name: &str) -> Self {
        self.local_queue = name.to_owned();
        self
    }

    fn priority(mut self, priority: i64) -> Self {
        self.priority = priority;
        self
    }

    fn pod_sets(mut self, pod_sets: Vec<PodSet>) -> Self {
        self.pod_sets = pod_sets.into();
        self
    }

    fn namespace_label(mut self, key: &str, value: &str) -> Self {
        Arc::make_mut(&mut self.namespace_labels).insert(key.to_owned(), value.to_owned());
        self
    }

    fn admitted_in(mut self, cq: &str, flavor: &str, at: i64) -> Self {
        self.admission = Some(Admission {
            cluster_queue: cq.to_owned(),
            pod_set_assignments: self
                .pod_sets
                .iter()
                .map(|pod_set| PodSetAssignment {
                    name: pod_set.name.clone(),
                    flavors: pod_set
                        .requests
                        .keys()
                        .map(|r| (r.clone(), flavor.to_owned()))
                        .collect(),
                    resource_usage: pod_set
                        .requests
                        .iter()
                        .map(|(r, q)| (r.clone(), q * Quantity::from(pod_set.count)))
                        .collect(),
                    count: pod_set.count,
                    topology: None,
                })
                .collect(),
        });
        self.quota_reserved_at = Some(ts(at));
        self
    }

    fn evicted(mut self) -> Self {
        self.evicted = true;
        self
    }

    fn requeue_at(mut self, at: i64) -> Self {
        self.requeue_at = Some(ts(at));
        self
    }
}

// === Expected decisions ===

/// `(podset, [(resource, flavor, usage)], count)`.
pub type ExpectedPodSet<'a> = (&'a str, &'a [(&'a str, &'a str, Quantity)], i32);

pub fn admit(name: &str, cq: &str, pod_sets: &[ExpectedPodSet<'_>]) -> Decision {
    Decision::Admit {
        workload: format!("ns/{name}"),
        admission: Admission {
            cluster_queue: cq.to_owned(),
            pod_set_assignments: pod_sets
                .iter()
                .map(|(pod_set, resources, count)| PodSetAssignment {
                    name: (*pod_set).to_owned(),
                    flavors: resources
                        .iter()
                        .map(|(r, f, _)| ((*r).to_owned(), (*f).to_owned()))
                        .collect(),
                    resource_usage: resources
                        .iter()
                        .map(|(r, _, q)| ((*r).to_owned(), *q))
                        .collect::<BTreeMap<_, _>>(),
                    count: *count,
                    topology: None,
                })
                .collect(),
        },
    }
}

/// Admission of a single `main` PodSet of one pod using `cpu` in `flavor`.
pub fn admit_cpu(name: &str, cq: &str, flavor: &str, cpu: Quantity) -> Decision {
    admit(name, cq, &[("main", &[("cpu", flavor, cpu)], 1)])
}

pub fn inadmissible(name: &str, reason: PendingReason, message: &str) -> Decision {
    Decision::Inadmissible {
        workload: format!("ns/{name}"),
        reason,
        message: message.to_owned(),
    }
}

pub fn preempt(name: &str, victims: Vec<Victim>, message: &str) -> Decision {
    Decision::Preempt {
        workload: format!("ns/{name}"),
        victims,
        reason: PendingReason::WaitingForPreemptedWorkloads,
        message: message.to_owned(),
    }
}

/// A victim of preemptor `ns/<preemptor>` (UID `uid-<preemptor>`, no job UID).
pub fn victim(
    name: &str,
    cq: &str,
    reason: PreemptionReason,
    preemptor: &str,
    paths: (&str, &str),
) -> Victim {
    Victim {
        workload: format!("ns/{name}"),
        cluster_queue: cq.to_owned(),
        reason,
        message: format!(
            "Preempted to accommodate a workload (UID: uid-{preemptor}, JobUID: UNKNOWN) due to {}; preemptor path: {}; preemptee path: {}",
            reason.human_readable(),
            paths.0,
            paths.1
        ),
    }
}

/// `couldn't assign flavors to pod set main: <reasons>`.
pub fn main_msg(reasons: &str) -> String {
    format!("couldn't assign flavors to pod set main: {reasons}")
}

pub fn unused(resource: &str, flavor: &str, more: Quantity) -> String {
    format!("insufficient unused quota for {resource} in flavor {flavor}, {more} more needed")
}
