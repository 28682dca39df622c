//! Which gated pods of a PodSet go to which domain of its topology assignment (Kueue's
//! `TopologyUngater`): pure, so every placement rule is tested without a cluster.

use std::collections::BTreeMap;

use crate::api::v1beta1::TopologyAssignment;

/// A live pod of a PodSet placed in a topology, as the ungater sees it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PodView<'a> {
    pub name: &'a str,
    /// Still held by the topology scheduling gate.
    pub gated: bool,
    /// The pod's value of the PodSet's pod index label, when it has a readable one.
    pub index: Option<i64>,
    /// The pod's value of the PodSet's sub-group index label (which copy of a replicated Job
    /// it belongs to, say), when the PodSet has one and the pod a readable value.
    pub sub_group: Option<i64>,
    /// The pod's nodeSelector: for an ungated pod, it names the domain the pod took.
    pub node_selector: &'a BTreeMap<String, String>,
}

/// A gated pod to let go, and the node labels of its domain to add to its nodeSelector.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Ungate {
    pub pod: String,
    pub node_selector: BTreeMap<String, String>,
}

/// The domain of every gated pod that can have one now, by pod name.
///
/// Pods already let go take their domain's places first. A pod's rank is its index, or, for a
/// PodSet made of `sub_groups` equal copies whose pods repeat the same indexes (a JobSet's
/// replicated Job with several replicas), its copy's number times the pods per copy plus its
/// index. When every pod has a distinct rank below the assignment's pod count, a pod's rank
/// says its domain (pods of neighbouring ranks share a domain, as Kueue ranks them, which keeps
/// collective neighbours close); otherwise gated pods fill the domains with places left in
/// order, by name. A pod without a place (more pods than the assignment counts) stays gated.
pub fn ungate(
    assignment: &TopologyAssignment,
    pods: &[PodView<'_>],
    sub_groups: Option<i64>,
) -> Vec<Ungate> {
    let selectors: Vec<BTreeMap<String, String>> = assignment
        .domains
        .iter()
        .map(|domain| {
            assignment
                .levels
                .iter()
                .cloned()
                .zip(domain.values.iter().cloned())
                .collect()
        })
        .collect();
    let total: i64 = assignment
        .domains
        .iter()
        .map(|domain| i64::from(domain.count.max(0)))
        .sum();

    let mut gated: Vec<&PodView<'_>> = pods.iter().filter(|pod| pod.gated).collect();
    gated.sort_by_key(|pod| pod.name);

    let per_group = sub_groups
        .filter(|groups| *groups > 0 && total % groups == 0)
        .map(|groups| total / groups);
    let rank = |pod: &PodView<'_>| match sub_groups {
        None => pod.index,
        Some(_) => {
            let (size, group, index) = (per_group?, pod.sub_group?, pod.index?);
            ((0..size).contains(&index) && group >= 0).then_some(group * size + index)
        }
    };

    if ranks_are_distinct(pods.iter().map(rank), total) {
        let mut ends = Vec::with_capacity(assignment.domains.len());
        let mut end = 0;
        for domain in &assignment.domains {
            end += i64::from(domain.count.max(0));
            ends.push(end);
        }
        return gated
            .into_iter()
            .filter_map(|pod| {
                let rank = rank(pod)?;
                let domain = ends.iter().position(|end| rank < *end)?;
                Some(Ungate {
                    pod: pod.name.to_string(),
                    node_selector: selectors[domain].clone(),
                })
            })
            .collect();
    }

    let mut places: Vec<i64> = assignment
        .domains
        .iter()
        .map(|domain| i64::from(domain.count.max(0)))
        .collect();
    for pod in pods.iter().filter(|pod| !pod.gated) {
        if let Some(domain) = selectors.iter().position(|selector| {
            selector
                .iter()
                .all(|(key, value)| pod.node_selector.get(key) == Some(value))
        }) {
            places[domain] -= 1;
        }
    }
    let mut ungated = Vec::new();
    for pod in gated {
        let Some(domain) = places.iter().position(|left| *left > 0) else {
            break;
        };
        places[domain] -= 1;
        ungated.push(Ungate {
            pod: pod.name.to_string(),
            node_selector: selectors[domain].clone(),
        });
    }
    ungated
}

/// Whether every pod has a rank of its own below `total`, so that ranks can say domains.
fn ranks_are_distinct(mut ranks: impl Iterator<Item = Option<i64>>, total: i64) -> bool {
    let mut seen = std::collections::BTreeSet::new();
    ranks.all(|rank| rank.is_some_and(|rank| (0..total).contains(&rank) && seen.insert(rank)))
}

#[cfg(test)]
mod tests;
