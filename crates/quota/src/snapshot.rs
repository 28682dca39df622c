//! The scheduler's view of the cluster: flavors, the cohort tree with quotas and usage, and the
//! admitted workloads. Quota math follows Kueue's `resource_node.go`: every ClusterQueue and
//! Cohort is a node with nominal quotas, a subtree quota (its own nominal plus what its children
//! lend up) and a usage (for cohorts: what children use beyond the capacity they keep local).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use foldhash::HashMapExt;
use jiff::Timestamp;

use super::admission_fair_sharing::{
    AdmissionFairSharingConfig, LocalQueueUsage, entry_penalty, local_queue_key, weighted_usage,
};
use super::model::{
    Admission, ClusterQueue, Cohort, FlavorResource, Quantity, ResourceFlavor, ResourceGroup,
    StopPolicy, Workload,
};
use super::topology::{TopologyAssignment, TopologyCapacity, TopologyNeed};

/// Prints a quantity of a resource for messages, e.g. `("cpu", 500) -> "500m"`.
pub type QuantityFormatter = fn(resource: &str, value: Quantity) -> String;

/// Prints the raw integer.
pub fn format_plain(_resource: &str, value: Quantity) -> String {
    value.to_string()
}

/// A fair-sharing preemption strategy (Kueue `fairSharing.preemptionStrategies`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FairSharingStrategy {
    /// Preempt if the preemptor's share stays at most the target's share after preemption.
    LessThanOrEqualToFinalShare,
    /// Preempt if the preemptor's share stays below the target's share before preemption.
    LessThanInitialShare,
}

/// Fair sharing settings; present in [`SchedulerConfig`] when the Configuration has `fairSharing`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FairSharingConfig {
    /// Strategies tried in order; empty means Kueue's default (both, final share first).
    pub preemption_strategies: Vec<FairSharingStrategy>,
}

impl FairSharingConfig {
    /// The strategies in effect.
    pub(super) fn strategies(&self) -> Vec<FairSharingStrategy> {
        if self.preemption_strategies.is_empty() {
            vec![
                FairSharingStrategy::LessThanOrEqualToFinalShare,
                FairSharingStrategy::LessThanInitialShare,
            ]
        } else {
            self.preemption_strategies.clone()
        }
    }
}

/// Scheduler settings derived from the controller Configuration and feature gates.
#[derive(Clone, Debug)]
pub struct SchedulerConfig {
    /// Fair sharing; `None` uses the classical order and preemption.
    pub fair_sharing: Option<FairSharingConfig>,
    /// The `PartialAdmission` feature gate (on by default in Kueue).
    pub partial_admission: bool,
    /// The `PrioritizePreemptorWorkloads` feature gate (off by default in Kueue): heads that
    /// wait for their victims go first in a cycle, so that no other head claims those victims.
    pub prioritize_preemptors: bool,
    /// The `RecomputeAssignmentUponPreemptionTargetsOverlap` feature gate (on by default in
    /// Kueue): a head whose victims an earlier head of the cycle claimed is assigned again, on
    /// the flavors it first chose, as if those victims were gone, instead of waiting for the
    /// next cycle.
    pub recompute_overlapping_targets: bool,
    /// `waitForPodsReady.blockAdmission`: nothing is admitted while a workload holding quota
    /// is not `PodsReady`, so one workload at a time starts its pods.
    pub block_admission: bool,
    /// Renders quantities in messages.
    pub format_quantity: QuantityFormatter,
    /// `admissionFairSharing` with its feature gate on; `None` leaves LocalQueues unordered
    /// even in ClusterQueues that ask for it, as Kueue does.
    pub admission_fair_sharing: Option<AdmissionFairSharingConfig>,
}

impl Default for SchedulerConfig {
    fn default() -> Self {
        Self {
            fair_sharing: None,
            partial_admission: true,
            prioritize_preemptors: false,
            recompute_overlapping_targets: true,
            block_admission: false,
            format_quantity: format_plain,
            admission_fair_sharing: None,
        }
    }
}

/// Quota of a node for one (flavor, resource).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct Quota {
    pub(super) nominal: Quantity,
    pub(super) borrowing_limit: Option<Quantity>,
    pub(super) lending_limit: Option<Quantity>,
}

/// A node of the cohort tree (ClusterQueue or Cohort).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(super) enum NodeId {
    ClusterQueue(usize),
    Cohort(usize),
}

/// Quotas and usage of a node.
#[derive(Clone, Debug, Default)]
pub(super) struct ResourceNode {
    pub(super) quotas: Arc<BTreeMap<FlavorResource, Quota>>,
    pub(super) subtree_quota: Arc<BTreeMap<FlavorResource, Quantity>>,
    pub(super) usage: BTreeMap<FlavorResource, Quantity>,
    /// Index of the parent cohort.
    pub(super) parent: Option<usize>,
    pub(super) fair_weight: f64,
}

impl ResourceNode {
    pub(super) fn quota(&self, fr: &FlavorResource) -> Quota {
        self.quotas.get(fr).copied().unwrap_or_default()
    }

    pub(super) fn subtree(&self, fr: &FlavorResource) -> Quantity {
        self.subtree_quota.get(fr).copied().unwrap_or(0)
    }

    pub(super) fn used(&self, fr: &FlavorResource) -> Quantity {
        self.usage.get(fr).copied().unwrap_or(0)
    }

    /// Capacity that stays inside this subtree because of a lending limit.
    pub(super) fn local_quota(&self, fr: &FlavorResource) -> Quantity {
        match self.quota(fr).lending_limit {
            Some(lending_limit) => self.subtree(fr).saturating_sub(lending_limit).max(0),
            None => 0,
        }
    }

    /// Local capacity not yet used.
    pub(super) fn local_available(&self, fr: &FlavorResource) -> Quantity {
        self.local_quota(fr).saturating_sub(self.used(fr)).max(0)
    }

    /// Whether usage (plus `extra`) exceeds the subtree quota.
    pub(super) fn borrowing_with(&self, fr: &FlavorResource, extra: Quantity) -> bool {
        self.subtree(fr) < self.used(fr).saturating_add(extra)
    }

    fn add(&mut self, fr: &FlavorResource, delta: Quantity) {
        // Looked up before inserting: `entry` would copy the key's two strings on every call,
        // and the cycle adds and removes usage many times per workload it tries.
        match self.usage.get_mut(fr) {
            Some(used) => *used = used.saturating_add(delta),
            None => {
                self.usage.insert(fr.clone(), delta);
            }
        }
    }
}

/// Why a ClusterQueue admits nothing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Inactive {
    /// `stopPolicy` is Hold or HoldAndDrain.
    Stopped,
    /// The caller marked it inactive, or its cohort has a cycle.
    NotActive,
}

#[derive(Clone, Debug)]
pub(super) struct ClusterQueueNode {
    pub(super) spec: Arc<ClusterQueue>,
    pub(super) node: ResourceNode,
    /// Keys of the admitted workloads.
    pub(super) workloads: BTreeSet<Arc<str>>,
    pub(super) inactive: Option<Inactive>,
}

#[derive(Clone, Debug)]
pub(super) struct CohortNode {
    pub(super) name: String,
    pub(super) node: ResourceNode,
    /// All child queues (also inactive ones: their quota and usage still count).
    pub(super) child_cqs: Vec<usize>,
    pub(super) child_cohorts: Vec<usize>,
}

/// An admitted workload and the usage it holds.
#[derive(Debug)]
pub(super) struct AdmittedWorkload {
    /// The workload's key, shared by the snapshot's maps: the cycle clones the snapshot and
    /// its preemption search takes workloads out and puts them back, without copying keys.
    pub(super) key: Arc<str>,
    pub(super) workload: Arc<Workload>,
    pub(super) cq: usize,
    pub(super) usage: BTreeMap<FlavorResource, Quantity>,
}

/// Everything the scheduler reads: build it with [`Snapshot::builder`] from the caller's stores.
///
/// Workloads with an admission count against their ClusterQueue and up the cohort tree.
/// A cohort named by a ClusterQueue or as a parent but without a Cohort object is implicit
/// (no quotas of its own); ClusterQueues under a cohort cycle admit nothing.
#[derive(Clone, Debug)]
pub struct Snapshot {
    pub(super) config: Arc<SchedulerConfig>,
    pub(super) now: Timestamp,
    pub(super) flavors: Arc<BTreeMap<String, ResourceFlavor>>,
    pub(super) cqs: Vec<ClusterQueueNode>,
    pub(super) cq_index: Arc<BTreeMap<String, usize>>,
    pub(super) cohorts: Vec<CohortNode>,
    pub(super) cohort_index: Arc<BTreeMap<String, usize>>,
    /// By key; hashed, since it is only looked up (the ClusterQueues' sets keep the order).
    pub(super) workloads: foldhash::HashMap<Arc<str>, Arc<AdmittedWorkload>>,
    /// Victims of preemptions decided in the current cycle: they still hold their quota until
    /// they are gone, but no other preemptor may count on them.
    pub(super) claimed: BTreeSet<Arc<str>>,
    /// Free capacity of each topology-aware flavor the caller knows the nodes of, less what
    /// admitted workloads' topology assignments take.
    pub(super) topologies: BTreeMap<String, TopologyCapacity>,
    /// The same before any admitted workload's assignment is taken off, as the caller gave
    /// it: whether preempting could ever make room for a placement (Kueue's
    /// `WithSimulateEmpty`).
    pub(super) empty_topologies: BTreeMap<String, Arc<TopologyCapacity>>,
    /// Admission fair sharing's usage per LocalQueue (`namespace/name`); a cycle adds the
    /// entry penalties of its admissions.
    pub(super) local_queue_usage: Arc<foldhash::HashMap<String, LocalQueueUsage>>,
}

/// Collects the objects a [`Snapshot`] is built from.
#[derive(Debug)]
pub struct SnapshotBuilder {
    config: SchedulerConfig,
    now: Timestamp,
    flavors: Vec<ResourceFlavor>,
    cohorts: Vec<Cohort>,
    cluster_queues: Vec<ClusterQueue>,
    workloads: Vec<Arc<Workload>>,
    topologies: BTreeMap<String, Arc<TopologyCapacity>>,
}

impl SnapshotBuilder {
    /// The free capacity of a topology-aware flavor's nodes (allocatable less what pods
    /// outside Kueue's workloads use); without it, that flavor's PodSets get no topology
    /// assignment. An `Arc` is shared as is: the snapshot copies it once, to take admitted
    /// workloads off.
    pub fn topology(mut self, flavor: &str, capacity: impl Into<Arc<TopologyCapacity>>) -> Self {
        self.topologies.insert(flavor.to_owned(), capacity.into());
        self
    }

    /// Sets the scheduler configuration.
    pub fn config(mut self, config: SchedulerConfig) -> Self {
        self.config = config;
        self
    }

    /// Adds a ResourceFlavor.
    pub fn flavor(mut self, flavor: ResourceFlavor) -> Self {
        self.flavors.push(flavor);
        self
    }

    /// Adds a Cohort object.
    pub fn cohort(mut self, cohort: Cohort) -> Self {
        self.cohorts.push(cohort);
        self
    }

    /// Adds a ClusterQueue.
    pub fn cluster_queue(mut self, cluster_queue: ClusterQueue) -> Self {
        self.cluster_queues.push(cluster_queue);
        self
    }

    /// Adds a workload holding quota; workloads without an admission are ignored. An `Arc` is
    /// shared as is, so that a caller holding its workloads across snapshots copies none.
    pub fn admitted(mut self, workload: impl Into<Arc<Workload>>) -> Self {
        self.workloads.push(workload.into());
        self
    }

    /// Builds the cohort tree and accumulates quotas and usage.
    pub fn build(self) -> Snapshot {
        let SnapshotBuilder {
            config,
            now,
            flavors,
            cohorts,
            cluster_queues,
            workloads,
            topologies: empty_topologies,
        } = self;

        let flavors: BTreeMap<String, ResourceFlavor> = flavors
            .into_iter()
            .map(|flavor| (flavor.name.clone(), flavor))
            .collect();

        // Explicit cohorts, then implicit ones named by queues or as parents.
        let mut cohort_specs: BTreeMap<String, Cohort> = cohorts
            .into_iter()
            .map(|cohort| (cohort.name.clone(), cohort))
            .collect();
        let implicit: Vec<String> = cluster_queues
            .iter()
            .filter_map(|cq| cq.cohort.clone())
            .chain(
                cohort_specs
                    .values()
                    .filter_map(|cohort| cohort.parent.clone()),
            )
            .collect();
        for name in implicit {
            cohort_specs
                .entry(name.clone())
                .or_insert_with(|| Cohort::new(&name));
        }

        let cohort_index: BTreeMap<String, usize> = cohort_specs
            .keys()
            .enumerate()
            .map(|(index, name)| (name.clone(), index))
            .collect();
        let has_cycle: Vec<bool> = cohort_specs
            .values()
            .map(|cohort| {
                let mut seen = BTreeSet::from([cohort.name.as_str()]);
                let mut parent = cohort.parent.as_deref();
                while let Some(name) = parent {
                    if !seen.insert(name) {
                        return true;
                    }
                    parent = cohort_specs.get(name).and_then(|c| c.parent.as_deref());
                }
                false
            })
            .collect();

        let mut cohort_nodes: Vec<CohortNode> = cohort_specs
            .values()
            .map(|cohort| CohortNode {
                name: cohort.name.clone(),
                node: ResourceNode {
                    quotas: Arc::new(quotas_of(&cohort.resource_groups)),
                    fair_weight: cohort.fair_sharing_weight,
                    ..ResourceNode::default()
                },
                child_cqs: Vec::new(),
                child_cohorts: Vec::new(),
            })
            .collect();
        for (index, cohort) in cohort_specs.values().enumerate() {
            let parent = cohort
                .parent
                .as_ref()
                .and_then(|name| cohort_index.get(name))
                .copied();
            if let (Some(parent), false) = (parent, has_cycle[index]) {
                cohort_nodes[index].node.parent = Some(parent);
                cohort_nodes[parent].child_cohorts.push(index);
            }
        }

        let mut sorted_queues = cluster_queues;
        sorted_queues.sort_by(|a, b| a.name.cmp(&b.name));
        sorted_queues.dedup_by(|a, b| a.name == b.name);
        let cq_index: BTreeMap<String, usize> = sorted_queues
            .iter()
            .enumerate()
            .map(|(index, cq)| (cq.name.clone(), index))
            .collect();
        let mut cqs: Vec<ClusterQueueNode> = Vec::with_capacity(sorted_queues.len());
        for (index, spec) in sorted_queues.into_iter().enumerate() {
            let cohort = spec
                .cohort
                .as_ref()
                .and_then(|name| cohort_index.get(name))
                .copied();
            let in_cycle = cohort.is_some_and(|cohort| has_cycle[cohort]);
            let parent = cohort.filter(|_| !in_cycle);
            if let Some(parent) = parent {
                cohort_nodes[parent].child_cqs.push(index);
            }
            let inactive = if spec.stop_policy != StopPolicy::None {
                Some(Inactive::Stopped)
            } else if !spec.active || in_cycle {
                Some(Inactive::NotActive)
            } else {
                None
            };
            let quotas = quotas_of(&spec.resource_groups);
            let subtree = quotas
                .iter()
                .map(|(fr, quota)| (fr.clone(), quota.nominal))
                .collect();
            cqs.push(ClusterQueueNode {
                node: ResourceNode {
                    quotas: Arc::new(quotas),
                    subtree_quota: Arc::new(subtree),
                    usage: BTreeMap::new(),
                    parent,
                    fair_weight: spec.fair_sharing_weight,
                },
                spec: Arc::new(spec),
                workloads: BTreeSet::new(),
                inactive,
            });
        }

        let mut topologies: BTreeMap<String, TopologyCapacity> = empty_topologies
            .iter()
            .map(|(flavor, capacity)| (flavor.clone(), TopologyCapacity::clone(capacity)))
            .collect();
        let mut admitted = foldhash::HashMap::with_capacity(workloads.len());
        for workload in workloads {
            let Some(admission) = &workload.admission else {
                continue;
            };
            let Some(&cq) = cq_index.get(&admission.cluster_queue) else {
                continue;
            };
            if admitted.contains_key(workload.key.as_str()) {
                continue;
            }
            let key: Arc<str> = Arc::from(workload.key.as_str());
            let usage = admission.usage();
            for (fr, quantity) in &usage {
                cqs[cq].node.add(fr, *quantity);
            }
            take_topology(&mut topologies, &workload, admission);
            cqs[cq].workloads.insert(Arc::clone(&key));
            admitted.insert(
                Arc::clone(&key),
                Arc::new(AdmittedWorkload {
                    key,
                    workload,
                    cq,
                    usage,
                }),
            );
        }

        let mut snapshot = Snapshot {
            config: Arc::new(config),
            now,
            flavors: Arc::new(flavors),
            cqs,
            cq_index: Arc::new(cq_index),
            cohorts: cohort_nodes,
            cohort_index: Arc::new(cohort_index),
            workloads: admitted,
            claimed: BTreeSet::new(),
            topologies,
            empty_topologies,
            local_queue_usage: Arc::default(),
        };
        let roots: Vec<usize> = (0..snapshot.cohorts.len())
            .filter(|&index| snapshot.cohorts[index].node.parent.is_none() && !has_cycle[index])
            .collect();
        for root in roots {
            snapshot.accumulate_cohort(root);
        }
        snapshot
    }
}

/// Takes the pods `admission` places by topology off the free capacity of their flavors.
pub(super) fn take_topology(
    topologies: &mut BTreeMap<String, TopologyCapacity>,
    workload: &Workload,
    admission: &Admission,
) {
    adjust_topology(topologies, workload, admission, TopologyCapacity::take);
}

/// Gives back what [`take_topology`] took for `admission`.
fn give_back_topology(
    topologies: &mut BTreeMap<String, TopologyCapacity>,
    workload: &Workload,
    admission: &Admission,
) {
    adjust_topology(topologies, workload, admission, TopologyCapacity::give_back);
}

fn adjust_topology(
    topologies: &mut BTreeMap<String, TopologyCapacity>,
    workload: &Workload,
    admission: &Admission,
    adjust: fn(&mut TopologyCapacity, &TopologyAssignment, &BTreeMap<String, Quantity>),
) {
    if topologies.is_empty() {
        return;
    }
    for assignment in &admission.pod_set_assignments {
        let Some(placed) = &assignment.topology else {
            continue;
        };
        let Some(pod_set) = workload.pod_sets.iter().find(|p| p.name == assignment.name) else {
            continue;
        };
        let flavor = assignment
            .flavors
            .values()
            .find(|flavor| topologies.contains_key(*flavor));
        if let Some(capacity) = flavor.and_then(|flavor| topologies.get_mut(flavor)) {
            adjust(capacity, placed, &pod_set.requests);
        }
    }
}

/// Quotas per (flavor, resource) declared by resource groups.
fn quotas_of(resource_groups: &[ResourceGroup]) -> BTreeMap<FlavorResource, Quota> {
    let mut quotas = BTreeMap::new();
    for group in resource_groups {
        for flavor in &group.flavors {
            for resource in &flavor.resources {
                quotas.insert(
                    FlavorResource::new(&flavor.name, &resource.name),
                    Quota {
                        nominal: resource.nominal,
                        borrowing_limit: resource.borrowing_limit,
                        lending_limit: resource.lending_limit,
                    },
                );
            }
        }
    }
    quotas
}

impl Snapshot {
    /// Starts a snapshot taken at `now` (used for requeue backoff and preemption ordering).
    pub fn builder(now: Timestamp) -> SnapshotBuilder {
        SnapshotBuilder {
            config: SchedulerConfig::default(),
            now,
            flavors: Vec::new(),
            cohorts: Vec::new(),
            cluster_queues: Vec::new(),
            workloads: Vec::new(),
            topologies: BTreeMap::new(),
        }
    }

    /// The time this snapshot was taken.
    pub fn now(&self) -> Timestamp {
        self.now
    }

    /// The scheduler configuration.
    pub fn config(&self) -> &SchedulerConfig {
        &self.config
    }

    /// Admission fair sharing's usage per LocalQueue (`namespace/name`); a LocalQueue left out
    /// has used nothing and weighs 1.
    #[must_use]
    pub fn with_local_queue_usage(
        mut self,
        usages: foldhash::HashMap<String, LocalQueueUsage>,
    ) -> Self {
        self.local_queue_usage = Arc::new(usages);
        self
    }

    /// The LocalQueue usages that order the ClusterQueue's pending workloads, when it uses
    /// admission fair sharing.
    pub(super) fn admission_fair_sharing(
        &self,
        cq: usize,
    ) -> Option<&foldhash::HashMap<String, LocalQueueUsage>> {
        (self.config.admission_fair_sharing.is_some() && self.cqs[cq].spec.admission_fair_sharing)
            .then_some(&*self.local_queue_usage)
    }

    /// Admission fair sharing's usage of the workload's LocalQueue, when its ClusterQueue
    /// uses admission fair sharing.
    pub(super) fn local_queue_usage_of(&self, cq: usize, workload: &Workload) -> Option<f64> {
        let usages = self.admission_fair_sharing(cq)?;
        Some(
            usages
                .get(&local_queue_key(workload))
                .map_or(0.0, |usage| usage.usage),
        )
    }

    /// Charges the entry penalty of an admission to its LocalQueue, so that later heads of
    /// the cycle see it.
    pub(super) fn charge_entry_penalty(
        &mut self,
        cq: usize,
        workload: &Workload,
        usage: &BTreeMap<FlavorResource, Quantity>,
    ) {
        let Some(config) = &self.config.admission_fair_sharing else {
            return;
        };
        if !self.cqs[cq].spec.admission_fair_sharing {
            return;
        }
        let penalty = entry_penalty(usage, config);
        let usages = Arc::make_mut(&mut self.local_queue_usage);
        let standing = usages
            .entry(local_queue_key(workload))
            .or_insert(LocalQueueUsage {
                usage: 0.0,
                weight: 1.0,
            });
        standing.usage += weighted_usage(&penalty, &config.resource_weights, standing.weight);
    }

    /// The ClusterQueue named `name`.
    pub fn cluster_queue(&self, name: &str) -> Option<&ClusterQueue> {
        self.cq_index
            .get(name)
            .map(|&index| self.cqs[index].spec.as_ref())
    }

    /// Usage of a ClusterQueue per (flavor, resource), as derived from admitted workloads.
    pub fn cluster_queue_usage(&self, name: &str) -> Option<&BTreeMap<FlavorResource, Quantity>> {
        self.cq_index
            .get(name)
            .map(|&index| &self.cqs[index].node.usage)
    }

    /// Names of the ClusterQueues in the same cohort tree as `cluster_queue`, itself included.
    pub fn cohort_tree_queues(&self, cluster_queue: &str) -> Vec<String> {
        let Some(&index) = self.cq_index.get(cluster_queue) else {
            return Vec::new();
        };
        match self.cqs[index].node.parent {
            Some(parent) => self.all_queues_below(self.root_of(parent)),
            None => vec![cluster_queue.to_owned()],
        }
    }

    /// Names of the ClusterQueues in the tree containing cohort `cohort`.
    pub fn cohort_queues(&self, cohort: &str) -> Vec<String> {
        let Some(&index) = self.cohort_index.get(cohort) else {
            return Vec::new();
        };
        self.all_queues_below(self.root_of(index))
    }

    /// Names of all queues below `cohort`, schedulable or not.
    fn all_queues_below(&self, cohort: usize) -> Vec<String> {
        let node = &self.cohorts[cohort];
        let mut names: Vec<String> = node
            .child_cqs
            .iter()
            .map(|&cq| self.cqs[cq].spec.name.clone())
            .collect();
        for &child in &node.child_cohorts {
            names.extend(self.all_queues_below(child));
        }
        names
    }

    pub(super) fn node(&self, id: NodeId) -> &ResourceNode {
        match id {
            NodeId::ClusterQueue(index) => &self.cqs[index].node,
            NodeId::Cohort(index) => &self.cohorts[index].node,
        }
    }

    fn node_mut(&mut self, id: NodeId) -> &mut ResourceNode {
        match id {
            NodeId::ClusterQueue(index) => &mut self.cqs[index].node,
            NodeId::Cohort(index) => &mut self.cohorts[index].node,
        }
    }

    pub(super) fn parent(&self, id: NodeId) -> Option<NodeId> {
        self.node(id).parent.map(NodeId::Cohort)
    }

    /// Ancestors of a node, from its parent up to the root.
    pub(super) fn ancestors(&self, id: NodeId) -> Vec<usize> {
        let mut result = Vec::new();
        let mut current = self.node(id).parent;
        while let Some(cohort) = current {
            result.push(cohort);
            current = self.cohorts[cohort].node.parent;
        }
        result
    }

    pub(super) fn root_of(&self, cohort: usize) -> usize {
        self.ancestors(NodeId::Cohort(cohort))
            .last()
            .copied()
            .unwrap_or(cohort)
    }

    /// Queues that can admit (and be preempted from), children of `cohort`.
    pub(super) fn schedulable_child_cqs(&self, cohort: usize) -> impl Iterator<Item = usize> + '_ {
        self.cohorts[cohort]
            .child_cqs
            .iter()
            .copied()
            .filter(|&cq| self.cqs[cq].inactive.is_none())
    }

    /// Schedulable queues anywhere below `cohort`.
    pub(super) fn subtree_queues(&self, cohort: usize) -> Vec<usize> {
        let mut result: Vec<usize> = self.schedulable_child_cqs(cohort).collect();
        for &child in &self.cohorts[cohort].child_cohorts {
            result.extend(self.subtree_queues(child));
        }
        result
    }

    /// Height of a cohort: 1 for a cohort of queues, one more per level of child cohorts.
    pub(super) fn cohort_height(&self, cohort: usize) -> i32 {
        let node = &self.cohorts[cohort];
        let children = self.schedulable_child_cqs(cohort).count() + node.child_cohorts.len();
        let mut height = i32::from(children > 0);
        for &child in &node.child_cohorts {
            height = height.max(self.cohort_height(child) + 1);
        }
        height
    }

    fn accumulate_cohort(&mut self, cohort: usize) {
        let mut subtree: BTreeMap<FlavorResource, Quantity> = self.cohorts[cohort]
            .node
            .quotas
            .iter()
            .map(|(fr, quota)| (fr.clone(), quota.nominal))
            .collect();
        let mut usage: BTreeMap<FlavorResource, Quantity> = BTreeMap::new();
        let children: Vec<NodeId> = self.cohorts[cohort]
            .child_cohorts
            .iter()
            .map(|&child| NodeId::Cohort(child))
            .chain(
                self.cohorts[cohort]
                    .child_cqs
                    .iter()
                    .map(|&child| NodeId::ClusterQueue(child)),
            )
            .collect();
        for child in children {
            if let NodeId::Cohort(child_cohort) = child {
                self.accumulate_cohort(child_cohort);
            }
            let node = self.node(child);
            for (fr, quota) in node.subtree_quota.iter() {
                let lent = quota.saturating_sub(node.local_quota(fr));
                let entry = subtree.entry(fr.clone()).or_insert(0);
                *entry = entry.saturating_add(lent);
            }
            for (fr, used) in &node.usage {
                let above_local = used.saturating_sub(node.local_quota(fr)).max(0);
                let entry = usage.entry(fr.clone()).or_insert(0);
                *entry = entry.saturating_add(above_local);
            }
        }
        let node = &mut self.cohorts[cohort].node;
        node.subtree_quota = Arc::new(subtree);
        node.usage = usage;
    }

    // === Quota math ===

    /// Capacity left for a node, respecting borrowing limits; negative when over-admitted.
    pub(super) fn available_raw(&self, id: NodeId, fr: &FlavorResource) -> Quantity {
        let node = self.node(id);
        let Some(parent) = self.parent(id) else {
            return node.subtree(fr).saturating_sub(node.used(fr));
        };
        let mut parent_available = self.available_raw(parent, fr);
        if let Some(borrowing_limit) = node.quota(fr).borrowing_limit {
            let local = node.local_quota(fr);
            let stored_in_parent = node.subtree(fr).saturating_sub(local);
            let used_in_parent = node.used(fr).saturating_sub(local).max(0);
            let with_max_from_parent = stored_in_parent
                .saturating_sub(used_in_parent)
                .saturating_add(borrowing_limit);
            parent_available = parent_available.min(with_max_from_parent);
        }
        node.local_available(fr).saturating_add(parent_available)
    }

    /// Capacity left for a ClusterQueue (never negative).
    pub(super) fn available(&self, cq: usize, fr: &FlavorResource) -> Quantity {
        self.available_raw(NodeId::ClusterQueue(cq), fr).max(0)
    }

    /// Most a node could ever get, assuming no usage, respecting borrowing limits.
    pub(super) fn potential_available(&self, id: NodeId, fr: &FlavorResource) -> Quantity {
        let node = self.node(id);
        let Some(parent) = self.parent(id) else {
            return node.subtree(fr);
        };
        let mut potential = node
            .local_quota(fr)
            .saturating_add(self.potential_available(parent, fr));
        if let Some(borrowing_limit) = node.quota(fr).borrowing_limit {
            potential = potential.min(node.subtree(fr).saturating_add(borrowing_limit));
        }
        potential
    }

    /// Whether a ClusterQueue would use more than its nominal quota with `extra` more.
    pub(super) fn cq_borrowing_with(
        &self,
        cq: usize,
        fr: &FlavorResource,
        extra: Quantity,
    ) -> bool {
        let node = &self.cqs[cq].node;
        node.quota(fr).nominal < node.used(fr).saturating_add(extra)
    }

    /// Adds usage to a node and bubbles what exceeds its local capacity up to its cohort.
    pub(super) fn add_usage(&mut self, id: NodeId, fr: &FlavorResource, value: Quantity) {
        let local_available = self.node(id).local_available(fr);
        self.node_mut(id).add(fr, value);
        if let Some(parent) = self.parent(id)
            && value > local_available
        {
            self.add_usage(parent, fr, value - local_available);
        }
    }

    /// Removes usage from a node and the part of it that was stored in its cohort.
    pub(super) fn remove_usage(&mut self, id: NodeId, fr: &FlavorResource, value: Quantity) {
        let node = self.node(id);
        let stored_in_parent = node.used(fr).saturating_sub(node.local_quota(fr));
        self.node_mut(id).add(fr, value.saturating_neg());
        if stored_in_parent <= 0 {
            return;
        }
        if let Some(parent) = self.parent(id) {
            self.remove_usage(parent, fr, value.min(stored_in_parent));
        }
    }

    /// Adds a usage map to a ClusterQueue.
    pub(super) fn add_cq_usage(&mut self, cq: usize, usage: &BTreeMap<FlavorResource, Quantity>) {
        for (fr, value) in usage {
            self.add_usage(NodeId::ClusterQueue(cq), fr, *value);
        }
    }

    /// Removes a usage map from a ClusterQueue.
    pub(super) fn remove_cq_usage(
        &mut self,
        cq: usize,
        usage: &BTreeMap<FlavorResource, Quantity>,
    ) {
        for (fr, value) in usage {
            self.remove_usage(NodeId::ClusterQueue(cq), fr, *value);
        }
    }

    /// Takes an admitted workload out of its queue, releasing its usage and the topology
    /// capacity its pods take.
    pub(super) fn remove_workload(&mut self, workload: &Arc<AdmittedWorkload>) {
        self.cqs[workload.cq].workloads.remove(&workload.key);
        self.workloads.remove(&workload.key);
        self.remove_cq_usage(workload.cq, &workload.usage);
        if let Some(admission) = &workload.workload.admission {
            give_back_topology(&mut self.topologies, &workload.workload, admission);
        }
    }

    /// Puts back a workload taken out with [`Self::remove_workload`].
    pub(super) fn add_workload(&mut self, workload: &Arc<AdmittedWorkload>) {
        self.cqs[workload.cq]
            .workloads
            .insert(Arc::clone(&workload.key));
        self.workloads
            .insert(Arc::clone(&workload.key), Arc::clone(workload));
        self.add_cq_usage(workload.cq, &workload.usage);
        if let Some(admission) = &workload.workload.admission {
            take_topology(&mut self.topologies, &workload.workload, admission);
        }
    }

    /// Whether every PodSet of `needs` finds a place in what its flavor's Topology has free,
    /// each around those placed before it.
    pub(super) fn topology_fits(&self, needs: &[TopologyNeed]) -> bool {
        self.place_all(needs).is_some()
    }

    /// Where every PodSet of `needs` goes in what its flavor's Topology has free, each around
    /// those placed before it; `None` when one finds no place.
    pub(super) fn place_all(&self, needs: &[TopologyNeed]) -> Option<Vec<TopologyAssignment>> {
        self.place_in_order(needs, |index, free| free.place(&needs[index].request).ok())
    }

    /// Whether `placed`, where the PodSets of `needs` were placed (in the same order), is still
    /// free: decisions made since may have taken it.
    pub(super) fn has_room_for(
        &self,
        needs: &[TopologyNeed],
        placed: &[&TopologyAssignment],
    ) -> bool {
        self.place_in_order(needs, |index, free| {
            let placement = *placed.get(index)?;
            free.has_room(placement, &needs[index].request.per_pod)
                .then(|| placement.clone())
        })
        .is_some()
    }

    /// Takes `placed`, where the PodSets of `needs` go (in the same order), off the free
    /// capacity of their flavors' Topologies.
    pub(super) fn take_placements(
        &mut self,
        needs: &[TopologyNeed],
        placed: &[TopologyAssignment],
    ) {
        for (need, placement) in needs.iter().zip(placed) {
            if let Some(capacity) = self.topologies.get_mut(&need.flavor) {
                capacity.take(placement, &need.request.per_pod);
            }
        }
    }

    /// The placements `place` gives each of `needs` in turn, in what its flavor's Topology has
    /// free less the placements before it; `None` when `place` gives none, or a flavor has no
    /// Topology here.
    fn place_in_order(
        &self,
        needs: &[TopologyNeed],
        mut place: impl FnMut(usize, &TopologyCapacity) -> Option<TopologyAssignment>,
    ) -> Option<Vec<TopologyAssignment>> {
        let mut left_by_earlier: BTreeMap<&str, TopologyCapacity> = BTreeMap::new();
        let mut placements = Vec::with_capacity(needs.len());
        for (index, need) in needs.iter().enumerate() {
            let flavor = need.flavor.as_str();
            let free = left_by_earlier
                .get(flavor)
                .or_else(|| self.topologies.get(flavor))?;
            let placed = place(index, free)?;
            if needs[index + 1..]
                .iter()
                .any(|later| later.flavor == flavor)
            {
                let mut left = free.clone();
                left.take(&placed, &need.request.per_pod);
                left_by_earlier.insert(flavor, left);
            }
            placements.push(placed);
        }
        Some(placements)
    }

    /// Whether the subtree quota of a node covers its usage for all of `frs`.
    pub(super) fn within_nominal(&self, id: NodeId, frs: &BTreeSet<FlavorResource>) -> bool {
        let node = self.node(id);
        frs.iter().all(|fr| node.subtree(fr) >= node.used(fr))
    }

    /// Height of the smallest subtree whose quota covers `value` more of `fr` for a queue,
    /// and whether quota could be reclaimed higher in the hierarchy.
    pub(super) fn lowest_fitting_subtree(
        &self,
        cq: usize,
        fr: &FlavorResource,
        value: Quantity,
    ) -> (i32, bool) {
        let node = &self.cqs[cq].node;
        let has_parent = node.parent.is_some();
        if !self.cq_borrowing_with(cq, fr, value) || !has_parent {
            return (0, has_parent);
        }
        let mut remaining = value.saturating_sub(node.local_available(fr));
        let ancestors = self.ancestors(NodeId::ClusterQueue(cq));
        for &cohort in &ancestors {
            let cohort_node = &self.cohorts[cohort].node;
            if !cohort_node.borrowing_with(fr, remaining) {
                return (self.cohort_height(cohort), cohort_node.parent.is_some());
            }
            remaining = remaining.saturating_sub(cohort_node.local_available(fr));
        }
        let root = ancestors.last().copied().unwrap_or_default();
        (self.cohort_height(root), false)
    }
}

/// Most quota a single workload in `cluster_queue` could ever get for `resource`, per flavor of
/// the resource group covering it, in the queue's flavor order: nominal quota plus what may be
/// borrowed from the cohort (bounded by borrowing limits, lending limits and the cohort's
/// capacity), ignoring current usage. `None` if the queue does not exist or does not cover the
/// resource.
pub fn max_possible(
    snapshot: &Snapshot,
    cluster_queue: &str,
    resource: &str,
) -> Option<Vec<(String, Quantity)>> {
    let &cq = snapshot.cq_index.get(cluster_queue)?;
    let group = snapshot.cqs[cq].spec.resource_groups.iter().find(|group| {
        group
            .covered_resources
            .iter()
            .any(|covered| covered == resource)
    })?;
    Some(
        group
            .flavors
            .iter()
            .map(|flavor| {
                let fr = FlavorResource::new(&flavor.name, resource);
                (
                    flavor.name.clone(),
                    snapshot.potential_available(NodeId::ClusterQueue(cq), &fr),
                )
            })
            .collect(),
    )
}
