//! Fair sharing (Kueue `fair_sharing.go`, `fair_sharing_iterator.go`): the dominant resource
//! share of a node, and the tournament that picks which ClusterQueue's head is scheduled next.

use std::cmp::Ordering;
use std::collections::BTreeMap;

use jiff::Timestamp;

use super::model::{FlavorResource, Quantity};
use super::snapshot::{NodeId, Snapshot};

/// Dominant resource share of a node: how much it borrows, relative to what its cohort tree
/// could lend, for the resource where that ratio is highest.
#[derive(Clone, Debug)]
pub(super) struct Drs {
    weight: f64,
    /// Borrowed amount per 1000 of lendable capacity.
    ratio: f64,
    dominant_resource: String,
    pub(super) borrowing: bool,
    borrowed: Vec<FlavorResource>,
}

impl Drs {
    fn zero(weight: f64) -> Self {
        Self {
            weight,
            ratio: 0.0,
            dominant_resource: String::new(),
            borrowing: false,
            borrowed: Vec::new(),
        }
    }

    fn is_zero(&self) -> bool {
        self.ratio == 0.0
    }

    fn zero_weight_borrows(&self) -> bool {
        self.weight == 0.0 && !self.is_zero()
    }

    /// The share divided by the weight; infinite for a borrowing node of weight 0.
    pub(super) fn precise_weighted_share(&self) -> f64 {
        if self.is_zero() {
            0.0
        } else if self.weight == 0.0 {
            f64::INFINITY
        } else {
            self.ratio / self.weight
        }
    }

    /// The value Kueue reports in `status.fairSharing.weightedShare`.
    pub(super) fn rounded_weighted_share(&self) -> i64 {
        if self.zero_weight_borrows() {
            i64::MAX
        } else {
            // Shares are small non-negative values; the cast saturates anyway.
            self.precise_weighted_share().ceil() as i64
        }
    }

    /// Kueue's `CompareDRS`.
    pub(super) fn compare(&self, other: &Self) -> Ordering {
        match (self.zero_weight_borrows(), other.zero_weight_borrows()) {
            (true, true) => self.ratio.total_cmp(&other.ratio),
            (true, false) => Ordering::Greater,
            (false, true) => Ordering::Less,
            (false, false) => self
                .precise_weighted_share()
                .total_cmp(&other.precise_weighted_share()),
        }
    }

    /// Whether the node borrows on any (flavor, resource) of `requested`.
    fn borrowing_on(&self, requested: &BTreeMap<FlavorResource, Quantity>) -> bool {
        self.borrowed
            .iter()
            .any(|fr| requested.get(fr).is_some_and(|quantity| *quantity > 0))
    }
}

/// The dominant resource share of a node in the current snapshot state.
pub(super) fn dominant_resource_share(snapshot: &Snapshot, id: NodeId) -> Drs {
    let node = snapshot.node(id);
    let mut drs = Drs::zero(node.fair_weight);
    let Some(parent) = snapshot.parent(id) else {
        return drs;
    };

    let mut borrowed_per_resource: BTreeMap<&str, Quantity> = BTreeMap::new();
    for (fr, quota) in node.subtree_quota.iter() {
        let borrowed = node.used(fr).saturating_sub(*quota);
        if borrowed > 0 {
            let entry = borrowed_per_resource
                .entry(fr.resource.as_str())
                .or_insert(0);
            *entry = entry.saturating_add(borrowed);
            drs.borrowed.push(fr.clone());
        }
    }
    if borrowed_per_resource.is_empty() {
        return drs;
    }
    drs.borrowing = true;

    let lendable = lendable(snapshot, parent);
    for (resource, borrowed) in borrowed_per_resource {
        let Some(&lendable) = lendable.get(resource).filter(|lendable| **lendable > 0) else {
            continue;
        };
        let ratio = borrowed as f64 * 1000.0 / lendable as f64;
        if ratio > drs.ratio || (ratio == drs.ratio && resource < drs.dominant_resource.as_str()) {
            drs.ratio = ratio;
            drs.dominant_resource = resource.to_owned();
        }
    }
    drs
}

/// Capacity of each resource (over all flavors) the tree could lend to `node`'s children.
fn lendable(snapshot: &Snapshot, node: NodeId) -> BTreeMap<&str, Quantity> {
    let root = match node {
        NodeId::Cohort(cohort) => NodeId::Cohort(snapshot.root_of(cohort)),
        NodeId::ClusterQueue(_) => node,
    };
    let mut lendable: BTreeMap<&str, Quantity> = BTreeMap::new();
    for fr in snapshot.node(root).subtree_quota.keys() {
        let entry = lendable.entry(fr.resource.as_str()).or_insert(0);
        *entry = entry.saturating_add(snapshot.potential_available(node, fr));
    }
    lendable
}

impl Snapshot {
    /// `status.fairSharing.weightedShare` of a ClusterQueue.
    pub fn cluster_queue_weighted_share(&self, name: &str) -> Option<i64> {
        let &index = self.cq_index.get(name)?;
        Some(dominant_resource_share(self, NodeId::ClusterQueue(index)).rounded_weighted_share())
    }

    /// `status.fairSharing.weightedShare` of a Cohort.
    pub fn cohort_weighted_share(&self, name: &str) -> Option<i64> {
        let &index = self.cohort_index.get(name)?;
        Some(dominant_resource_share(self, NodeId::Cohort(index)).rounded_weighted_share())
    }
}

/// A head competing in the fair sharing tournament.
pub(super) struct Contender<'a> {
    pub(super) cq: usize,
    /// A preemptor waiting for its victims, to go first (`PrioritizePreemptorWorkloads`).
    pub(super) preemptor: bool,
    pub(super) usage: &'a BTreeMap<FlavorResource, Quantity>,
    pub(super) priority: i64,
    pub(super) timestamp: Timestamp,
}

/// Index of the contender to process next: the first queue's own head if it has no cohort,
/// otherwise the winner of the tournament in its cohort tree, where at every cohort the child
/// with the lowest share after admitting its head wins.
pub(super) fn next_contender(
    snapshot: &mut Snapshot,
    contenders: &[Contender<'_>],
) -> Option<usize> {
    let first = contenders.first()?;
    let Some(parent) = snapshot.cqs[first.cq].node.parent else {
        return Some(0);
    };
    let root = snapshot.root_of(parent);

    let mut shares: BTreeMap<(usize, usize), Drs> = BTreeMap::new();
    for (index, contender) in contenders.iter().enumerate() {
        let Some(parent) = snapshot.cqs[contender.cq].node.parent else {
            continue;
        };
        if snapshot.root_of(parent) != root {
            continue;
        }
        snapshot.add_cq_usage(contender.cq, contender.usage);
        let mut drs = dominant_resource_share(snapshot, NodeId::ClusterQueue(contender.cq));
        for ancestor in snapshot.ancestors(NodeId::ClusterQueue(contender.cq)) {
            let ancestor_drs = dominant_resource_share(snapshot, NodeId::Cohort(ancestor));
            shares.insert((ancestor, index), std::mem::replace(&mut drs, ancestor_drs));
        }
        snapshot.remove_cq_usage(contender.cq, contender.usage);
    }
    tournament(snapshot, root, contenders, &shares)
}

fn tournament(
    snapshot: &Snapshot,
    cohort: usize,
    contenders: &[Contender<'_>],
    shares: &BTreeMap<(usize, usize), Drs>,
) -> Option<usize> {
    let mut candidates: Vec<usize> = snapshot.cohorts[cohort]
        .child_cohorts
        .iter()
        .filter_map(|&child| tournament(snapshot, child, contenders, shares))
        .collect();
    for cq in snapshot.schedulable_child_cqs(cohort) {
        candidates.extend(contenders.iter().position(|contender| contender.cq == cq));
    }
    let zero = Drs::zero(1.0);
    let share = |index: usize| shares.get(&(cohort, index)).unwrap_or(&zero);
    let less = |a: usize, b: usize| {
        if contenders[a].preemptor != contenders[b].preemptor {
            return contenders[a].preemptor;
        }
        let (a_drs, b_drs) = (share(a), share(b));
        let a_borrowing = a_drs.borrowing_on(contenders[a].usage);
        if a_borrowing != b_drs.borrowing_on(contenders[b].usage) {
            return !a_borrowing;
        }
        match a_drs.compare(b_drs) {
            Ordering::Less => true,
            Ordering::Greater => false,
            Ordering::Equal if contenders[a].priority != contenders[b].priority => {
                contenders[a].priority > contenders[b].priority
            }
            Ordering::Equal => contenders[a].timestamp < contenders[b].timestamp,
        }
    };
    candidates
        .into_iter()
        .reduce(|best, current| if less(current, best) { current } else { best })
}
