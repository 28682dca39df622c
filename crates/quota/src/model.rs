//! Plain data the scheduler works on: flavors, queues, cohorts and workloads.
//!
//! Quantities are `i64` in a canonical unit the caller chooses per resource (for example
//! millicores for `cpu`, bytes for `memory`); the scheduler treats them as opaque integers and
//! prints them through [`SchedulerConfig::format_quantity`](super::SchedulerConfig).

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

use jiff::Timestamp;

pub use crate::topology::{PlacementMode, TopologyAssignment, TopologyDomain};

/// A quantity of one resource in the caller's canonical unit.
pub type Quantity = i64;

/// The resource name Kueue counts pods under when a ClusterQueue covers it.
pub const PODS_RESOURCE: &str = "pods";

/// A (flavor, resource) pair, the unit quota is accounted in.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct FlavorResource {
    /// ResourceFlavor name.
    pub flavor: String,
    /// Resource name, e.g. `cpu`.
    pub resource: String,
}

impl FlavorResource {
    /// Builds a pair from borrowed names.
    pub fn new(flavor: &str, resource: &str) -> Self {
        Self {
            flavor: flavor.to_owned(),
            resource: resource.to_owned(),
        }
    }
}

// === Node placement ===

/// Effect of a node taint.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum TaintEffect {
    /// Pods that do not tolerate the taint are not scheduled.
    NoSchedule,
    /// The scheduler tries to avoid the node.
    PreferNoSchedule,
    /// Running pods that do not tolerate the taint are evicted.
    NoExecute,
}

impl TaintEffect {
    /// The Kubernetes spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::NoSchedule => "NoSchedule",
            Self::PreferNoSchedule => "PreferNoSchedule",
            Self::NoExecute => "NoExecute",
        }
    }
}

/// A taint carried by the nodes of a flavor.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Taint {
    /// Taint key.
    pub key: String,
    /// Taint value (may be empty).
    pub value: String,
    /// Taint effect.
    pub effect: TaintEffect,
}

impl fmt::Display for Taint {
    /// Renders like Go's `%s` of a `corev1.Taint` value, which Kueue puts into its messages.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{{{} {} {} <nil>}}",
            self.key,
            self.value,
            self.effect.as_str()
        )
    }
}

/// Operator of a toleration.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum TolerationOperator {
    /// The value must equal the taint's value (also the meaning of an empty operator).
    #[default]
    Equal,
    /// Any value matches.
    Exists,
}

/// A toleration of a pod or a flavor.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct Toleration {
    /// Key to match; empty matches every key.
    pub key: String,
    /// How the value is compared.
    pub operator: TolerationOperator,
    /// Value for `Equal`.
    pub value: String,
    /// Effect to match; `None` matches every effect.
    pub effect: Option<TaintEffect>,
}

impl Toleration {
    /// Whether this toleration tolerates `taint` (Kubernetes `ToleratesTaint`).
    pub fn tolerates(&self, taint: &Taint) -> bool {
        if self.effect.is_some_and(|effect| effect != taint.effect) {
            return false;
        }
        if !self.key.is_empty() && self.key != taint.key {
            return false;
        }
        match self.operator {
            TolerationOperator::Exists => true,
            TolerationOperator::Equal => self.value == taint.value,
        }
    }
}

/// Operator of a node selector requirement.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum NodeSelectorOperator {
    /// The label is present and its value is listed.
    In,
    /// The label is absent or its value is not listed.
    NotIn,
    /// The label is present.
    Exists,
    /// The label is absent.
    DoesNotExist,
    /// The label is an integer greater than the single listed value.
    Gt,
    /// The label is an integer less than the single listed value.
    Lt,
}

/// One expression of a node selector term.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct NodeSelectorRequirement {
    /// Label key.
    pub key: String,
    /// Comparison.
    pub operator: NodeSelectorOperator,
    /// Values compared against.
    pub values: Vec<String>,
}

impl NodeSelectorRequirement {
    /// Whether a node with `labels` satisfies this requirement.
    pub fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        let value = labels.get(&self.key);
        match self.operator {
            NodeSelectorOperator::In => value.is_some_and(|v| self.values.contains(v)),
            NodeSelectorOperator::NotIn => value.is_none_or(|v| !self.values.contains(v)),
            NodeSelectorOperator::Exists => value.is_some(),
            NodeSelectorOperator::DoesNotExist => value.is_none(),
            NodeSelectorOperator::Gt | NodeSelectorOperator::Lt => {
                let [bound] = self.values.as_slice() else {
                    return false;
                };
                let (Some(Ok(actual)), Ok(bound)) =
                    (value.map(|v| v.parse::<i64>()), bound.parse::<i64>())
                else {
                    return false;
                };
                if self.operator == NodeSelectorOperator::Gt {
                    actual > bound
                } else {
                    actual < bound
                }
            }
        }
    }
}

/// A node selector term: all expressions must hold.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct NodeSelectorTerm {
    /// Expressions ANDed together.
    pub match_expressions: Vec<NodeSelectorRequirement>,
}

// === Label selectors (namespaces) ===

/// Operator of a label selector requirement.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum LabelSelectorOperator {
    /// The label is present and its value is listed.
    In,
    /// The label is absent or its value is not listed.
    NotIn,
    /// The label is present.
    Exists,
    /// The label is absent.
    DoesNotExist,
}

/// One expression of a label selector.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct LabelSelectorRequirement {
    /// Label key.
    pub key: String,
    /// Comparison.
    pub operator: LabelSelectorOperator,
    /// Values compared against.
    pub values: Vec<String>,
}

/// A Kubernetes label selector; the empty selector matches everything.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct LabelSelector {
    /// Labels that must be present with these values.
    pub match_labels: BTreeMap<String, String>,
    /// Further requirements, ANDed.
    pub match_expressions: Vec<LabelSelectorRequirement>,
}

impl LabelSelector {
    /// Whether an object with `labels` is selected.
    pub fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        self.match_labels
            .iter()
            .all(|(key, value)| labels.get(key) == Some(value))
            && self.match_expressions.iter().all(|requirement| {
                let value = labels.get(&requirement.key);
                match requirement.operator {
                    LabelSelectorOperator::In => {
                        value.is_some_and(|v| requirement.values.contains(v))
                    }
                    LabelSelectorOperator::NotIn => {
                        value.is_none_or(|v| !requirement.values.contains(v))
                    }
                    LabelSelectorOperator::Exists => value.is_some(),
                    LabelSelectorOperator::DoesNotExist => value.is_none(),
                }
            })
    }
}

// === ResourceFlavor, ClusterQueue, Cohort ===

/// A ResourceFlavor: the node shape a quota applies to.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ResourceFlavor {
    /// Flavor name.
    pub name: String,
    /// Labels of the nodes of this flavor.
    pub node_labels: BTreeMap<String, String>,
    /// Taints of the nodes of this flavor.
    pub node_taints: Vec<Taint>,
    /// Tolerations added to pods admitted to this flavor.
    pub tolerations: Vec<Toleration>,
    /// For a flavor of topology-aware scheduling (it names a Topology): the Topology's level
    /// node labels, highest first; empty while the Topology is not known.
    pub topology_levels: Option<Vec<String>>,
}

/// Quota of one resource in one flavor.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ResourceQuota {
    /// Resource name.
    pub name: String,
    /// Guaranteed quota.
    pub nominal: Quantity,
    /// Most this node may borrow from its cohort; `None` is unlimited.
    pub borrowing_limit: Option<Quantity>,
    /// Most of the nominal quota this node lends to its cohort; `None` lends all of it.
    pub lending_limit: Option<Quantity>,
}

/// The quotas of one flavor inside a resource group.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FlavorQuotas {
    /// Flavor name.
    pub name: String,
    /// Quota per covered resource.
    pub resources: Vec<ResourceQuota>,
}

/// A set of resources that are always assigned the same flavor, with flavors in order of preference.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ResourceGroup {
    /// Resources of this group.
    pub covered_resources: Vec<String>,
    /// Flavors, tried in this order.
    pub flavors: Vec<FlavorQuotas>,
}

/// How a ClusterQueue orders its pending workloads.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum QueueingStrategy {
    /// An inadmissible head blocks the workloads behind it.
    StrictFifo,
    /// An inadmissible workload is set aside and the next one is tried.
    #[default]
    BestEffortFifo,
}

/// A preemption policy (`withinClusterQueue` or `reclaimWithinCohort`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum PreemptionPolicy {
    /// Never preempt.
    #[default]
    Never,
    /// Preempt workloads of strictly lower priority.
    LowerPriority,
    /// Preempt lower priority workloads, or equal priority ones queued later.
    LowerOrNewerEqualPriority,
    /// Preempt any workload.
    Any,
}

/// Policy of `borrowWithinCohort`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum BorrowWithinCohortPolicy {
    /// Never preempt while borrowing.
    #[default]
    Never,
    /// Preempt lower priority workloads of other queues while borrowing.
    LowerPriority,
}

/// `preemption.borrowWithinCohort`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BorrowWithinCohort {
    /// Whether preemption while borrowing is allowed.
    pub policy: BorrowWithinCohortPolicy,
    /// Only workloads with priority at most this may be preempted while borrowing.
    pub max_priority_threshold: Option<i32>,
}

/// `ClusterQueue.spec.preemption`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PreemptionConfig {
    /// Preemption among the ClusterQueue's own workloads.
    pub within_cluster_queue: PreemptionPolicy,
    /// Preemption of workloads of other queues that borrow from the cohort.
    pub reclaim_within_cohort: PreemptionPolicy,
    /// Preemption while the preemptor itself borrows.
    pub borrow_within_cohort: BorrowWithinCohort,
}

/// A flavor fungibility policy.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FungibilityPolicy {
    /// Stop searching at this flavor.
    MayStopSearch,
    /// Keep trying later flavors.
    TryNextFlavor,
}

/// Which of borrowing or preemption is preferred when both are needed somewhere.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FungibilityPreference {
    /// Prefer the flavor needing less preemption, then less borrowing (the default).
    BorrowingOverPreemption,
    /// Prefer the flavor needing less borrowing, then less preemption.
    PreemptionOverBorrowing,
}

/// `ClusterQueue.spec.flavorFungibility`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FlavorFungibility {
    /// What to do when a flavor fits by borrowing.
    pub when_can_borrow: FungibilityPolicy,
    /// What to do when a flavor fits by preempting.
    pub when_can_preempt: FungibilityPolicy,
    /// Tie-break between borrowing and preemption.
    pub preference: Option<FungibilityPreference>,
}

impl Default for FlavorFungibility {
    fn default() -> Self {
        Self {
            when_can_borrow: FungibilityPolicy::MayStopSearch,
            when_can_preempt: FungibilityPolicy::TryNextFlavor,
            preference: None,
        }
    }
}

/// `ClusterQueue.spec.stopPolicy`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum StopPolicy {
    /// The queue runs.
    #[default]
    None,
    /// No new admissions.
    Hold,
    /// No new admissions and admitted workloads are evicted.
    HoldAndDrain,
}

/// A ClusterQueue as the scheduler needs it.
#[derive(Clone, Debug, PartialEq)]
pub struct ClusterQueue {
    /// Name.
    pub name: String,
    /// Cohort this queue belongs to.
    pub cohort: Option<String>,
    /// Quotas.
    pub resource_groups: Vec<ResourceGroup>,
    /// Queue order semantics.
    pub queueing_strategy: QueueingStrategy,
    /// Namespaces whose workloads may use this queue; `None` selects no namespace.
    pub namespace_selector: Option<LabelSelector>,
    /// Preemption policies.
    pub preemption: PreemptionConfig,
    /// Flavor search policy.
    pub flavor_fungibility: FlavorFungibility,
    /// Stop policy.
    pub stop_policy: StopPolicy,
    /// Fair sharing weight (default 1).
    pub fair_sharing_weight: f64,
    /// `admissionScope.admissionMode: UsageBasedAdmissionFairSharing`: pending workloads are
    /// taken from the LocalQueue that recently used the least first.
    pub admission_fair_sharing: bool,
    /// False when the caller found the queue unusable (e.g. missing flavors or admission checks).
    pub active: bool,
}

impl ClusterQueue {
    /// A queue with defaults: no cohort, BestEffortFIFO, all namespaces, no preemption, active.
    pub fn new(name: &str) -> Self {
        Self {
            name: name.to_owned(),
            cohort: None,
            resource_groups: Vec::new(),
            queueing_strategy: QueueingStrategy::default(),
            namespace_selector: Some(LabelSelector::default()),
            preemption: PreemptionConfig::default(),
            flavor_fungibility: FlavorFungibility::default(),
            stop_policy: StopPolicy::default(),
            fair_sharing_weight: 1.0,
            admission_fair_sharing: false,
            active: true,
        }
    }
}

/// A Cohort object: a node of the cohort tree with optional quotas of its own.
#[derive(Clone, Debug, PartialEq)]
pub struct Cohort {
    /// Name.
    pub name: String,
    /// Parent cohort.
    pub parent: Option<String>,
    /// Quotas owned by the cohort itself.
    pub resource_groups: Vec<ResourceGroup>,
    /// Fair sharing weight (default 1).
    pub fair_sharing_weight: f64,
}

impl Cohort {
    /// A cohort without parent, quotas or special weight.
    pub fn new(name: &str) -> Self {
        Self {
            name: name.to_owned(),
            parent: None,
            resource_groups: Vec::new(),
            fair_sharing_weight: 1.0,
        }
    }
}

// === Workloads ===

/// Hashes the numbers of `pod_sets` alone (counts and requests): they set most differing
/// PodSets apart, and hashing their strings (names, resource names, selectors) would cost far
/// more. PodSets that differ only in strings share a hash and are told apart by `Eq`.
pub fn hash_pod_set_numbers<H: std::hash::Hasher>(pod_sets: &[PodSet], state: &mut H) {
    use std::hash::Hash;
    for pod_set in pod_sets {
        pod_set.count.hash(state);
        pod_set.min_count.hash(state);
        for quantity in pod_set.requests.values() {
            quantity.hash(state);
        }
    }
}

/// A group of identical pods of a workload.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct PodSet {
    /// PodSet name.
    pub name: String,
    /// Number of pods.
    pub count: i32,
    /// Fewest pods the workload accepts (partial admission).
    pub min_count: Option<i32>,
    /// Requests of one pod.
    pub requests: BTreeMap<String, Quantity>,
    /// `nodeSelector` of the pod template.
    pub node_selector: BTreeMap<String, String>,
    /// Terms of `requiredDuringSchedulingIgnoredDuringExecution` (ORed); empty means none.
    pub node_affinity: Vec<NodeSelectorTerm>,
    /// Tolerations of the pod template.
    pub tolerations: Vec<Toleration>,
    /// What the PodSet explicitly asks of topology-aware scheduling, if anything.
    pub topology: Option<TopologyRequest>,
}

/// The topology level a PodSet's placement is about (Kueue's `levelKey`).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum TopologyLevel {
    /// A required or preferred level.
    Named(String),
    /// The Topology's highest level (a request for slices only).
    Highest,
    /// The Topology's lowest level (an unconstrained request).
    Lowest,
    /// None (`unconstrained: false` alone): no flavor has it.
    Unresolvable,
}

/// A PodSet's explicit topology request.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct TopologyRequest {
    /// The level of the placement.
    pub level: TopologyLevel,
    /// Required, preferred or unconstrained (a request for slices alone is preferred at the
    /// highest level).
    pub mode: PlacementMode,
    /// The levels slices must fit in (the slice level, then the constraint layers); empty
    /// means the lowest level.
    pub slice_levels: Vec<String>,
    /// Pods per slice, with a slice level.
    pub slice_size: Option<i32>,
}

impl TopologyRequest {
    /// Whether a Topology with these levels (highest first) has every level the request names
    /// (Kueue `TASFlavorSnapshot.HasLevel`).
    pub fn fits_levels(&self, levels: &[String]) -> bool {
        let has = |level: &str| levels.iter().any(|known| known == level);
        let main = match &self.level {
            TopologyLevel::Named(level) => has(level),
            TopologyLevel::Highest | TopologyLevel::Lowest => !levels.is_empty(),
            TopologyLevel::Unresolvable => false,
        };
        let slices = if self.slice_levels.is_empty() {
            !levels.is_empty()
        } else {
            self.slice_levels.iter().all(|level| has(level))
        };
        main && slices
    }
}

/// Flavors and usage reserved for one PodSet.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PodSetAssignment {
    /// PodSet name.
    pub name: String,
    /// Flavor per resource.
    pub flavors: BTreeMap<String, String>,
    /// Total usage of the PodSet per resource.
    pub resource_usage: BTreeMap<String, Quantity>,
    /// Pods admitted (less than the PodSet count under partial admission).
    pub count: i32,
    /// Where in its flavor's Topology the pods go, for a topology-aware flavor whose
    /// capacity the snapshot knows.
    pub topology: Option<TopologyAssignment>,
}

/// `Workload.status.admission`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Admission {
    /// ClusterQueue holding the quota.
    pub cluster_queue: String,
    /// One assignment per PodSet.
    pub pod_set_assignments: Vec<PodSetAssignment>,
}

impl Admission {
    /// Usage per (flavor, resource) reserved by this admission.
    pub fn usage(&self) -> BTreeMap<FlavorResource, Quantity> {
        let mut usage = BTreeMap::new();
        for assignment in &self.pod_set_assignments {
            for (resource, flavor) in &assignment.flavors {
                let quantity = assignment
                    .resource_usage
                    .get(resource)
                    .copied()
                    .unwrap_or(0);
                let entry = usage
                    .entry(FlavorResource::new(flavor, resource))
                    .or_insert(0);
                *entry = Quantity::saturating_add(*entry, quantity);
            }
        }
        usage
    }
}

/// A workload: pending in a queue, or admitted and holding quota.
#[derive(Clone, Debug, PartialEq)]
pub struct Workload {
    /// `namespace/name`.
    pub key: String,
    /// Workload UID.
    pub uid: String,
    /// UID of the owning job (label `kueue.x-k8s.io/job-uid`), used in preemption messages.
    pub job_uid: Option<String>,
    /// Labels of the workload's namespace, matched against the ClusterQueue's namespace selector.
    /// Shared: every workload of a namespace has the same, and a cycle's working snapshot
    /// copies the admitted ones.
    pub namespace_labels: Arc<BTreeMap<String, String>>,
    /// The LocalQueue it was submitted to (`spec.queueName`), in the namespace of its key.
    pub local_queue: String,
    /// ClusterQueue the workload's LocalQueue points to.
    pub cluster_queue: String,
    /// Effective priority: `spec.priority`, plus the `kueue.x-k8s.io/priority-boost`
    /// annotation under `PriorityBoost` (two 32-bit values, so their sum is 64-bit, as in Kueue).
    pub priority: i64,
    /// Queue-order timestamp (creation, or eviction time when requeued after eviction).
    pub queue_timestamp: Timestamp,
    /// PodSets; shared with the shapes the queues remember and the copies a cycle's working
    /// snapshot makes.
    pub pod_sets: Arc<[PodSet]>,
    /// Reservation, when admitted.
    pub admission: Option<Admission>,
    /// When QuotaReserved last became true (newer admissions are preempted first).
    pub quota_reserved_at: Option<Timestamp>,
    /// Whether an eviction is already under way (evicted workloads are preempted first).
    pub evicted: bool,
    /// `status.requeueState.requeueAt`: not retried before this time.
    pub requeue_at: Option<Timestamp>,
    /// Its `PodsReady` condition is true; read for workloads holding quota, which
    /// `waitForPodsReady.blockAdmission` waits for.
    pub pods_ready: bool,
}

impl Workload {
    /// A pending workload with no PodSets yet.
    pub fn new(key: &str, cluster_queue: &str, queue_timestamp: Timestamp) -> Self {
        Self {
            key: key.to_owned(),
            uid: String::new(),
            job_uid: None,
            namespace_labels: Arc::default(),
            local_queue: String::new(),
            cluster_queue: cluster_queue.to_owned(),
            priority: 0,
            queue_timestamp,
            pod_sets: Arc::default(),
            admission: None,
            quota_reserved_at: None,
            evicted: false,
            requeue_at: None,
            pods_ready: false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    #[test]
    fn toleration_matching() {
        let taint = Taint {
            key: "spot".to_owned(),
            value: "true".to_owned(),
            effect: TaintEffect::NoSchedule,
        };
        let toleration = |key: &str, operator, value: &str, effect| Toleration {
            key: key.to_owned(),
            operator,
            value: value.to_owned(),
            effect,
        };
        let cases = [
            (
                toleration("spot", TolerationOperator::Equal, "true", None),
                true,
            ),
            (
                toleration("spot", TolerationOperator::Equal, "false", None),
                false,
            ),
            (
                toleration(
                    "spot",
                    TolerationOperator::Exists,
                    "",
                    Some(TaintEffect::NoSchedule),
                ),
                true,
            ),
            (
                toleration(
                    "spot",
                    TolerationOperator::Exists,
                    "",
                    Some(TaintEffect::NoExecute),
                ),
                false,
            ),
            (toleration("", TolerationOperator::Exists, "", None), true),
            (
                toleration("other", TolerationOperator::Exists, "", None),
                false,
            ),
        ];
        for (toleration, expected) in cases {
            assert_eq!(toleration.tolerates(&taint), expected, "{toleration:?}");
        }
        assert_eq!(taint.to_string(), "{spot true NoSchedule <nil>}");
    }

    #[test]
    fn node_selector_requirements() {
        let node = labels(&[("zone", "a"), ("gpus", "4")]);
        let requirement = |key: &str, operator, values: &[&str]| NodeSelectorRequirement {
            key: key.to_owned(),
            operator,
            values: values.iter().map(|v| (*v).to_owned()).collect(),
        };
        let cases = [
            (
                requirement("zone", NodeSelectorOperator::In, &["a", "b"]),
                true,
            ),
            (requirement("zone", NodeSelectorOperator::In, &["b"]), false),
            (
                requirement("zone", NodeSelectorOperator::NotIn, &["b"]),
                true,
            ),
            (
                requirement("rack", NodeSelectorOperator::NotIn, &["b"]),
                true,
            ),
            (requirement("zone", NodeSelectorOperator::Exists, &[]), true),
            (
                requirement("zone", NodeSelectorOperator::DoesNotExist, &[]),
                false,
            ),
            (requirement("gpus", NodeSelectorOperator::Gt, &["3"]), true),
            (requirement("gpus", NodeSelectorOperator::Lt, &["3"]), false),
            (
                requirement("gpus", NodeSelectorOperator::Gt, &["3", "4"]),
                false,
            ),
            (requirement("zone", NodeSelectorOperator::Gt, &["3"]), false),
        ];
        for (requirement, expected) in cases {
            assert_eq!(requirement.matches(&node), expected, "{requirement:?}");
        }
    }

    #[test]
    fn label_selectors() {
        let namespace = labels(&[("team", "ml"), ("env", "prod")]);
        let expression = |key: &str, operator, values: &[&str]| LabelSelectorRequirement {
            key: key.to_owned(),
            operator,
            values: values.iter().map(|v| (*v).to_owned()).collect(),
        };
        let cases = [
            (LabelSelector::default(), true),
            (
                LabelSelector {
                    match_labels: labels(&[("team", "ml")]),
                    ..LabelSelector::default()
                },
                true,
            ),
            (
                LabelSelector {
                    match_labels: labels(&[("team", "web")]),
                    ..LabelSelector::default()
                },
                false,
            ),
            (
                LabelSelector {
                    match_labels: labels(&[("team", "ml")]),
                    match_expressions: vec![expression(
                        "env",
                        LabelSelectorOperator::NotIn,
                        &["prod"],
                    )],
                },
                false,
            ),
            (
                LabelSelector {
                    match_expressions: vec![
                        expression("env", LabelSelectorOperator::In, &["prod", "staging"]),
                        expression("legacy", LabelSelectorOperator::DoesNotExist, &[]),
                    ],
                    ..LabelSelector::default()
                },
                true,
            ),
        ];
        for (selector, expected) in cases {
            assert_eq!(selector.matches(&namespace), expected, "{selector:?}");
        }
    }

    #[test]
    fn admission_usage_sums_per_flavor_and_resource() {
        let assignment = |name: &str, cpu: Quantity| PodSetAssignment {
            name: name.to_owned(),
            flavors: labels(&[("cpu", "default")]),
            resource_usage: BTreeMap::from([("cpu".to_owned(), cpu)]),
            count: 1,
            topology: None,
        };
        let admission = Admission {
            cluster_queue: "cq".to_owned(),
            pod_set_assignments: vec![assignment("driver", 2), assignment("workers", 6)],
        };
        assert_eq!(
            admission.usage(),
            BTreeMap::from([(FlavorResource::new("default", "cpu"), 8)])
        );
    }
}
