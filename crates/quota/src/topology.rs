//! Topology-aware placement: where in a TAS flavor's Topology the pods of one PodSet go.
//!
//! The caller adds the free capacity of each node of the flavor (allocatable, minus pods that
//! are not Kueue's, for Ready and schedulable nodes matching the flavor's labels); the usage of
//! workloads admitted with a topology assignment is taken off with [`TopologyCapacity::take`].
//! As in Kueue, capacity is summed per lowest-level domain (a node when the Topology ends with
//! the hostname level), pods (or slices) are counted per domain, and they are placed as Kueue's
//! default profile places them: BestFit for required and preferred requests (largest domains
//! first, the last one the tightest that takes what is left), LeastFreeCapacity for
//! unconstrained ones (smallest domains first).

use std::cmp::Reverse;
use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, OnceLock};

use crate::model::{PODS_RESOURCE, Quantity};

/// The label Kubernetes gives each node its name under; a Topology may only have it last.
pub const HOSTNAME_LABEL: &str = "kubernetes.io/hostname";

/// Free capacity in a TAS flavor's Topology, per lowest-level domain.
#[derive(Clone, Debug, Default)]
pub struct TopologyCapacity {
    /// The Topology's name (it appears in Kueue's messages).
    pub topology: String,
    /// Node label of each level, highest first.
    pub levels: Vec<String>,
    /// What is free in each lowest-level domain, by the domain's value of every level.
    leaves: BTreeMap<Vec<String>, BTreeMap<String, Quantity>>,
    /// The domains' shape, worked out on first use and shared by clones: taking capacity off
    /// leaves it as it is, so a scheduling pass places every PodSet on one shape.
    shape: Arc<OnceLock<Shape>>,
}

impl PartialEq for TopologyCapacity {
    fn eq(&self, other: &Self) -> bool {
        (&self.topology, &self.levels, &self.leaves)
            == (&other.topology, &other.levels, &other.leaves)
    }
}

impl Eq for TopologyCapacity {}

/// The domains of every level, highest first, each with its values and its children one level
/// down; the lowest level's domains are the leaves, in order.
#[derive(Debug, Default)]
struct Shape {
    levels: Vec<Vec<ShapeDomain>>,
    /// Lowest-level domain by its value of the lowest level (the first such, in order):
    /// how an assignment given by hostname alone names it.
    by_last_value: HashMap<String, usize>,
}

#[derive(Debug)]
struct ShapeDomain {
    values: Vec<String>,
    children: Vec<usize>,
}

/// How strictly the pods of a PodSet must stay together.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PlacementMode {
    /// All in one domain of the level, or not admitted.
    Required,
    /// In as few domains as possible, starting at the level and going up.
    Preferred,
    /// Anywhere, filling the domains with the least free capacity first.
    Unconstrained,
}

/// What one PodSet asks of a Topology.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PlacementRequest {
    /// Index in the Topology's levels of the level the mode is about.
    pub level: usize,
    /// Required, preferred or unconstrained.
    pub mode: PlacementMode,
    /// Pods to place.
    pub count: i32,
    /// Requests of one pod.
    pub per_pod: BTreeMap<String, Quantity>,
    /// Slices that must each fit in one domain of a level; `None` places pods one by one.
    pub slices: Option<SliceRequest>,
}

/// What one PodSet asks of the Topology of the flavor it is assigned.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TopologyNeed {
    /// The topology-aware flavor.
    pub flavor: String,
    /// Where its pods must go.
    pub request: PlacementRequest,
}

/// A PodSet split into equal slices, each kept within one domain of a level.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SliceRequest {
    /// Index in the Topology's levels, at or below the request's level.
    pub level: usize,
    /// Pods per slice; it divides the PodSet's count.
    pub size: i32,
}

/// Where the pods go: Kueue's `topologyAssignment` in its `values + count` shape.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct TopologyAssignment {
    /// The levels the values are given for: the hostname level alone when the Topology has
    /// it (a node names its domain), every level otherwise.
    pub levels: Vec<String>,
    /// Lowest-level domains and how many pods each takes, ordered by their values.
    pub domains: Vec<TopologyDomain>,
}

/// One lowest-level domain of an assignment.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct TopologyDomain {
    /// The domain's value of each of the assignment's levels.
    pub values: Vec<String>,
    /// Pods placed in it.
    pub count: i32,
}

/// The order domains are filled in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Fill {
    /// Largest first; the last one the tightest that takes the rest.
    BestFit,
    /// Smallest first.
    LeastFree,
}

/// A domain while placing: its values down to its level, how many units fit in it (slices
/// at and above the slice level, pods below it), how many pods, and its children one level
/// down.
#[derive(Debug)]
struct Domain<'a> {
    values: &'a [String],
    units: i64,
    pods: i64,
    children: &'a [usize],
}

impl Domain<'_> {
    /// The order of domains taking the same number of units: the fuller first (less room
    /// left over), then by values for determinism.
    fn tie_break(&self) -> (i64, &[String]) {
        (self.pods, self.values)
    }
}

/// Domains per level, highest first.
type Tree<'a> = Vec<Vec<Domain<'a>>>;

/// Kueue's exclusion statistics: how many lowest-level domains there are and, of those that
/// take no pod, how many for want of each resource.
#[derive(Debug, Default)]
struct Exclusions {
    leaves: usize,
    by_resource: BTreeMap<String, usize>,
}

impl TopologyCapacity {
    /// An empty Topology of these levels.
    pub fn new(topology: &str, levels: Vec<String>) -> Self {
        Self {
            topology: topology.to_owned(),
            levels,
            leaves: BTreeMap::new(),
            shape: Arc::default(),
        }
    }

    /// Adds a node by its value of each level label; a node missing one is not in the
    /// Topology and is left out.
    pub fn add_node(&mut self, values: Vec<String>, free: &BTreeMap<String, Quantity>) {
        if values.len() != self.levels.len() || self.levels.is_empty() {
            return;
        }
        if !self.leaves.contains_key(&values) {
            self.shape = Arc::default();
        }
        let leaf = self.leaves.entry(values).or_default();
        for (resource, quantity) in free {
            let total = leaf.entry(resource.clone()).or_insert(0);
            *total = total.saturating_add(*quantity);
        }
    }

    /// Takes what `assignment` places, `per_pod` for each pod, off the free capacity.
    pub fn take(&mut self, assignment: &TopologyAssignment, per_pod: &BTreeMap<String, Quantity>) {
        self.adjust(assignment, per_pod, -1);
    }

    /// Gives back what [`Self::take`] took for `assignment`, as when its workload is gone.
    pub fn give_back(
        &mut self,
        assignment: &TopologyAssignment,
        per_pod: &BTreeMap<String, Quantity>,
    ) {
        self.adjust(assignment, per_pod, 1);
    }

    /// Adds (`sign` 1) or takes off (`sign` -1) what `assignment` places.
    fn adjust(
        &mut self,
        assignment: &TopologyAssignment,
        per_pod: &BTreeMap<String, Quantity>,
        sign: i64,
    ) {
        let by_hostname = self.by_hostname(assignment);
        let shape = Arc::clone(&self.shape);
        let shape = shape.get_or_init(|| self.work_out_shape());
        for domain in &assignment.domains {
            let leaf =
                leaf_key(shape, domain, by_hostname).and_then(|key| self.leaves.get_mut(key));
            let Some(free) = leaf else { continue };
            for (resource, quantity) in with_pod_count(per_pod) {
                // A domain that does not report its pod count does not limit it either.
                if resource == PODS_RESOURCE && !free.contains_key(PODS_RESOURCE) {
                    continue;
                }
                let used = quantity.saturating_mul(i64::from(domain.count));
                let left = free.entry(resource).or_insert(0);
                *left = left.saturating_add(used.saturating_mul(sign));
            }
        }
    }

    /// Whether what `assignment` places, `per_pod` for each pod, is free: each domain it names
    /// still takes its pods. A domain this Topology does not have takes none.
    pub fn has_room(
        &self,
        assignment: &TopologyAssignment,
        per_pod: &BTreeMap<String, Quantity>,
    ) -> bool {
        let by_hostname = self.by_hostname(assignment);
        let shape = self.shape.get_or_init(|| self.work_out_shape());
        let requests = with_pod_count(per_pod);
        assignment.domains.iter().all(|domain| {
            leaf_key(shape, domain, by_hostname)
                .and_then(|key| self.leaves.get(key))
                .is_some_and(|free| pods_fitting(free, &requests).0 >= i64::from(domain.count))
        })
    }

    /// Whether `assignment` names its domains by hostname alone (Kueue's encoding when the
    /// Topology ends with the hostname level) rather than by their values at every level.
    fn by_hostname(&self, assignment: &TopologyAssignment) -> bool {
        assignment.levels.len() == 1 && self.levels.len() > 1
    }

    /// Places `request`, or says in Kueue's words how many of its pods would fit.
    pub fn place(&self, request: &PlacementRequest) -> Result<TopologyAssignment, String> {
        let count = i64::from(request.count.max(0));
        let lowest = self.levels.len().saturating_sub(1);
        let slices = request.slices.unwrap_or(SliceRequest {
            level: lowest,
            size: 1,
        });
        let size = i64::from(slices.size.max(1));
        if self.levels.is_empty() || request.level > lowest || slices.level > lowest {
            return Err(self.not_fit_message(0, count / size, size, &Exclusions::default()));
        }
        if count == 0 {
            return Ok(self.assignment(Vec::new()));
        }
        let shape = self.shape.get_or_init(|| self.work_out_shape());
        let (tree, exclusions) = self.tree(shape, &request.per_pod, slices.level, size);
        let wanted = count / size;
        let (level, order, chosen) = match request.mode {
            PlacementMode::Required => (
                request.level,
                Fill::BestFit,
                tightest(&tree[request.level], wanted).map(|domain| vec![(domain, wanted)]),
            ),
            PlacementMode::Preferred => (0..=request.level)
                .rev()
                .find_map(|level| {
                    tightest(&tree[level], wanted).map(|domain| (level, vec![(domain, wanted)]))
                })
                .map_or_else(
                    || {
                        (
                            0,
                            Fill::BestFit,
                            fill(&tree[0], all(&tree[0]), wanted, Fill::BestFit),
                        )
                    },
                    |(level, chosen)| (level, Fill::BestFit, Some(chosen)),
                ),
            PlacementMode::Unconstrained => {
                let level = request.slices.map_or(lowest, |slices| slices.level);
                let chosen = tightest(&tree[level], wanted)
                    .map(|domain| vec![(domain, wanted)])
                    .or_else(|| fill(&tree[level], all(&tree[level]), wanted, Fill::LeastFree));
                (level, Fill::LeastFree, chosen)
            }
        };
        let Some(chosen) = chosen else {
            let fitting = match request.mode {
                PlacementMode::Required => tree[level].iter().map(|d| d.units).max(),
                PlacementMode::Preferred | PlacementMode::Unconstrained => {
                    Some(tree[level].iter().map(|d| d.units).sum())
                }
            };
            return Err(self.not_fit_message(fitting.unwrap_or(0), wanted, size, &exclusions));
        };
        let mut current = chosen;
        for parent_level in level..lowest {
            let mut next = Vec::new();
            for (parent, units) in current {
                // Below the slice level the units are pods.
                let wanted = if parent_level == slices.level {
                    units * size
                } else {
                    units
                };
                let children = &tree[parent_level][parent].children;
                // The parent's units are its children's, so they always take them.
                let picked = fill(&tree[parent_level + 1], children.to_vec(), wanted, order);
                next.extend(picked.unwrap_or_default());
            }
            current = next;
        }
        let pods_per_unit = if slices.level == lowest { size } else { 1 };
        Ok(self.assignment(
            current
                .into_iter()
                .map(|(leaf, units)| (tree[lowest][leaf].values, units * pods_per_unit))
                .collect(),
        ))
    }

    /// The domains of every level with their children, from the leaves (each leaf is a new
    /// lowest-level domain; a domain seen for the first time joins its parent's children).
    fn work_out_shape(&self) -> Shape {
        let mut shape = Shape {
            levels: (0..self.levels.len()).map(|_| Vec::new()).collect(),
            by_last_value: HashMap::new(),
        };
        let Some(lowest) = self.levels.len().checked_sub(1) else {
            return shape;
        };
        let mut index: Vec<BTreeMap<&[String], usize>> = vec![BTreeMap::new(); self.levels.len()];
        for values in self.leaves.keys() {
            let mut new_child: Option<usize> = None;
            for level in (0..=lowest).rev() {
                let prefix = &values[..=level];
                let (position, created) = match index[level].get(prefix) {
                    Some(&position) => (position, false),
                    None => {
                        shape.levels[level].push(ShapeDomain {
                            values: prefix.to_vec(),
                            children: Vec::new(),
                        });
                        index[level].insert(prefix, shape.levels[level].len() - 1);
                        (shape.levels[level].len() - 1, true)
                    }
                };
                if level == lowest
                    && let Some(last) = values.last()
                {
                    shape.by_last_value.entry(last.clone()).or_insert(position);
                }
                if let Some(child) = new_child {
                    shape.levels[level][position].children.push(child);
                }
                if !created {
                    break;
                }
                new_child = Some(position);
            }
        }
        shape
    }

    /// Domains of every level, with the units of `per_pod` pods that fit in each, and the
    /// lowest-level domains that take none.
    fn tree<'a>(
        &'a self,
        shape: &'a Shape,
        per_pod: &BTreeMap<String, Quantity>,
        slice_level: usize,
        size: i64,
    ) -> (Tree<'a>, Exclusions) {
        let requests = with_pod_count(per_pod);
        let mut exclusions = Exclusions {
            leaves: self.leaves.len(),
            by_resource: BTreeMap::new(),
        };
        let lowest = self.levels.len() - 1;
        let mut tree: Tree<'a> = shape
            .levels
            .iter()
            .map(|domains| {
                domains
                    .iter()
                    .map(|domain| Domain {
                        values: &domain.values,
                        units: 0,
                        pods: 0,
                        children: &domain.children,
                    })
                    .collect()
            })
            .collect();
        // The leaves are the lowest level's domains, in the same order.
        for (leaf, free) in tree[lowest].iter_mut().zip(self.leaves.values()) {
            let (pods, limiting) = pods_fitting(free, &requests);
            if let (0, Some(resource)) = (pods, limiting) {
                *exclusions.by_resource.entry(resource).or_insert(0) += 1;
            }
            leaf.pods = pods;
            leaf.units = if slice_level == lowest {
                pods / size
            } else {
                pods
            };
        }
        // Pods are summed up to the slice level, counted as slices there, slices summed above.
        for level in (0..lowest).rev() {
            for position in 0..tree[level].len() {
                let (children_units, children_pods) = tree[level][position]
                    .children
                    .iter()
                    .map(|&child| (tree[level + 1][child].units, tree[level + 1][child].pods))
                    .fold((0, 0), |(units, pods), (u, p)| (units + u, pods + p));
                tree[level][position].pods = children_pods;
                tree[level][position].units = if level == slice_level {
                    children_units / size
                } else {
                    children_units
                };
            }
        }
        (tree, exclusions)
    }

    /// The assignment of `placed` pods to lowest-level domains.
    fn assignment(&self, placed: Vec<(&[String], i64)>) -> TopologyAssignment {
        let by_hostname = self
            .levels
            .last()
            .is_some_and(|level| level == HOSTNAME_LABEL);
        let levels = if by_hostname {
            vec![HOSTNAME_LABEL.to_owned()]
        } else {
            self.levels.clone()
        };
        let mut domains: Vec<TopologyDomain> = placed
            .into_iter()
            .filter(|(_, pods)| *pods > 0)
            .map(|(values, pods)| TopologyDomain {
                values: if by_hostname {
                    values.last().cloned().into_iter().collect()
                } else {
                    values.to_vec()
                },
                count: i32::try_from(pods).unwrap_or(i32::MAX),
            })
            .collect();
        domains.sort_by(|a, b| a.values.cmp(&b.values));
        TopologyAssignment { levels, domains }
    }

    /// Kueue's message when only `fitting` of `wanted` units (pods, or slices of `size`) fit,
    /// with the domains that take none when there are any.
    fn not_fit_message(
        &self,
        fitting: i64,
        wanted: i64,
        size: i64,
        excluded: &Exclusions,
    ) -> String {
        let topology = &self.topology;
        let unit = if size == 1 { "pod" } else { "slice" };
        let mut message = if fitting == 0 {
            format!("topology {topology:?} doesn't allow to fit any of {wanted} {unit}(s)")
        } else {
            format!("topology {topology:?} allows to fit only {fitting} out of {wanted} {unit}(s)")
        };
        if !excluded.by_resource.is_empty() {
            let reasons: Vec<String> = excluded
                .by_resource
                .iter()
                .map(|(resource, leaves)| format!("resource {resource:?}: {leaves}"))
                .collect();
            message.push_str(&format!(
                ". Total nodes: {}; excluded: {}",
                excluded.leaves,
                reasons.join(", ")
            ));
        }
        message
    }
}

/// The key in the leaves of the lowest-level domain an assignment's `domain` names.
fn leaf_key<'a>(
    shape: &'a Shape,
    domain: &'a TopologyDomain,
    by_hostname: bool,
) -> Option<&'a [String]> {
    if !by_hostname {
        return Some(&domain.values);
    }
    let leaf = *shape.by_last_value.get(domain.values.first()?)?;
    Some(&shape.levels.last()?.get(leaf)?.values)
}

/// `per_pod` with the pod itself counted, as nodes limit how many pods they take.
fn with_pod_count(per_pod: &BTreeMap<String, Quantity>) -> BTreeMap<String, Quantity> {
    let mut requests = per_pod.clone();
    requests.entry(PODS_RESOURCE.to_owned()).or_insert(1);
    requests
}

/// How many pods asking `requests` fit in `free`, and the resource that limits them (the
/// first by name among equals). A resource the domain does not report fits none, except the
/// pod count, which not every caller reports.
fn pods_fitting(
    free: &BTreeMap<String, Quantity>,
    requests: &BTreeMap<String, Quantity>,
) -> (i64, Option<String>) {
    requests
        .iter()
        .filter(|(_, quantity)| **quantity > 0)
        .filter_map(|(resource, quantity)| match free.get(resource) {
            Some(available) => Some(((*available).max(0) / quantity, resource)),
            None if resource == PODS_RESOURCE => None,
            None => Some((0, resource)),
        })
        .min()
        .map_or((i64::MAX, None), |(pods, resource)| {
            (pods, Some(resource.clone()))
        })
}

/// Every domain of a level, by position.
fn all(domains: &[Domain]) -> Vec<usize> {
    (0..domains.len()).collect()
}

/// The domain that takes `wanted` units with the least room to spare (then the first by its
/// values), if one does.
fn tightest(domains: &[Domain], wanted: i64) -> Option<usize> {
    (0..domains.len())
        .filter(|&domain| domains[domain].units >= wanted)
        .min_by_key(|&domain| (domains[domain].units, domains[domain].tie_break()))
}

/// `wanted` units spread over `candidates` in `order`, or `None` if they hold fewer.
fn fill(
    domains: &[Domain],
    mut candidates: Vec<usize>,
    wanted: i64,
    order: Fill,
) -> Option<Vec<(usize, i64)>> {
    candidates.retain(|&domain| domains[domain].units > 0);
    match order {
        Fill::BestFit => candidates
            .sort_by_key(|&domain| (Reverse(domains[domain].units), domains[domain].tie_break())),
        Fill::LeastFree => {
            candidates.sort_by_key(|&domain| (domains[domain].units, domains[domain].tie_break()))
        }
    }
    let mut picked = Vec::new();
    let mut remaining = wanted;
    for (position, &domain) in candidates.iter().enumerate() {
        if remaining == 0 {
            break;
        }
        let units = domains[domain].units;
        if order == Fill::BestFit && units >= remaining {
            // The last domain: the tightest of those left that takes the rest.
            let last = candidates[position..]
                .iter()
                .copied()
                .filter(|&other| domains[other].units >= remaining)
                .min_by_key(|&other| (domains[other].units, domains[other].tie_break()))
                .unwrap_or(domain);
            picked.push((last, remaining));
            remaining = 0;
            break;
        }
        let taken = units.min(remaining);
        picked.push((domain, taken));
        remaining -= taken;
    }
    (remaining == 0).then_some(picked)
}
