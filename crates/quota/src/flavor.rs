//! Flavor assignment (Kueue `flavorassigner`): for every PodSet and resource group, pick the
//! first flavor, in the ClusterQueue's order, whose nodes the pods may run on and whose quota
//! fits, possibly by borrowing or preempting as the flavor fungibility allows.

use std::collections::{BTreeMap, BTreeSet};

use super::decision::PendingReason;
use super::model::{
    Admission, BorrowWithinCohortPolicy, ClusterQueue, FlavorFungibility, FlavorResource,
    FungibilityPolicy, FungibilityPreference, PODS_RESOURCE, PodSet, PodSetAssignment,
    PreemptionPolicy, Quantity, ResourceFlavor, ResourceGroup, TaintEffect, TopologyLevel,
    Workload,
};
use super::preemption::{self, Possibility};
use super::snapshot::{NodeId, Snapshot};
use super::topology::{
    PlacementMode, PlacementRequest, SliceRequest, TopologyAssignment, TopologyCapacity,
    TopologyNeed,
};

/// How a flavor can be assigned to a resource.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum Mode {
    /// Not enough quota even with preemption.
    NoFit,
    /// Fits once other workloads are preempted.
    Preempt,
    /// Fits in unused quota, possibly borrowing.
    Fit,
}

/// Finer grained mode used to compare flavors.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum PreemptionMode {
    NoFit,
    /// Preemption would be needed but finds no victims.
    NoCandidates,
    Preempt,
    Reclaim,
    Fit,
}

impl PreemptionMode {
    fn mode(self) -> Mode {
        match self {
            Self::NoFit => Mode::NoFit,
            Self::NoCandidates | Self::Preempt | Self::Reclaim => Mode::Preempt,
            Self::Fit => Mode::Fit,
        }
    }

    fn from_possibility(possibility: Possibility) -> Self {
        match possibility {
            Possibility::NoCandidates => Self::NoCandidates,
            Possibility::Preempt => Self::Preempt,
            Possibility::Reclaim => Self::Reclaim,
        }
    }
}

/// A preemption mode with the cohort level the quota comes from (0: the queue itself).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct GranularMode {
    preemption: PreemptionMode,
    borrowing: i32,
}

impl GranularMode {
    const WORST: Self = Self {
        preemption: PreemptionMode::NoFit,
        borrowing: i32::MAX,
    };
    const BEST: Self = Self {
        preemption: PreemptionMode::Fit,
        borrowing: 0,
    };

    /// Whether `self` is better than `other` under the queue's fungibility preference.
    fn preferred_over(self, other: Self, fungibility: &FlavorFungibility) -> bool {
        if self.preemption == PreemptionMode::NoFit {
            return false;
        }
        if other.preemption == PreemptionMode::NoFit {
            return true;
        }
        let self_no_candidates = self.preemption == PreemptionMode::NoCandidates;
        if self_no_candidates != (other.preemption == PreemptionMode::NoCandidates) {
            return !self_no_candidates;
        }
        if fungibility.preference == Some(FungibilityPreference::PreemptionOverBorrowing) {
            if self.borrowing != other.borrowing {
                return self.borrowing < other.borrowing;
            }
            return self.preemption > other.preemption;
        }
        if self.preemption != other.preemption {
            return self.preemption > other.preemption;
        }
        self.borrowing < other.borrowing
    }

    fn should_try_next_flavor(self, fungibility: &FlavorFungibility) -> bool {
        match self.preemption {
            PreemptionMode::NoFit | PreemptionMode::NoCandidates => true,
            PreemptionMode::Preempt | PreemptionMode::Reclaim
                if fungibility.when_can_preempt == FungibilityPolicy::TryNextFlavor =>
            {
                true
            }
            _ => {
                self.borrowing != 0
                    && fungibility.when_can_borrow == FungibilityPolicy::TryNextFlavor
            }
        }
    }
}

/// The flavor chosen for one resource of a PodSet.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct FlavorChoice {
    pub(super) flavor: String,
    pub(super) mode: Mode,
    borrow: i32,
}

/// What was learnt about a flavor while assigning a PodSet.
#[derive(Clone, Debug)]
struct Attempt {
    flavor: String,
    mode: Mode,
    no_fit_reason: Option<PendingReason>,
}

/// The assignment of one PodSet.
#[derive(Clone, Debug)]
pub(super) struct PodSetResult {
    pub(super) name: String,
    pub(super) count: i32,
    /// Total requests of the PodSet (including `pods` when covered).
    requests: BTreeMap<String, Quantity>,
    pub(super) flavors: BTreeMap<String, FlavorChoice>,
    /// Where the pods go in the chosen flavor's Topology, when it is topology-aware.
    topology: Option<TopologyAssignment>,
    /// What the pods ask of that Topology, which preemption must make room for.
    topology_need: Option<TopologyNeed>,
    /// Why flavors could not be assigned outright; empty when everything fits.
    reasons: Vec<String>,
    attempts: Vec<Attempt>,
}

impl PodSetResult {
    fn mode(&self) -> Mode {
        if self.reasons.is_empty() {
            return Mode::Fit;
        }
        self.flavors
            .values()
            .map(|choice| choice.mode)
            .min()
            .unwrap_or(Mode::NoFit)
    }

    fn record_attempt(&mut self, flavor: &str, mode: Mode, no_fit_reason: Option<PendingReason>) {
        match self
            .attempts
            .iter_mut()
            .find(|attempt| attempt.flavor == flavor)
        {
            Some(existing) => {
                existing.mode = existing.mode.min(mode);
                existing.no_fit_reason =
                    PendingReason::most_severe(existing.no_fit_reason, no_fit_reason);
            }
            None => self.attempts.push(Attempt {
                flavor: flavor.to_owned(),
                mode,
                no_fit_reason,
            }),
        }
    }
}

/// Flavors for every PodSet of a workload, with the usage they add.
#[derive(Clone, Debug)]
pub(super) struct Assignment {
    pub(super) pod_sets: Vec<PodSetResult>,
    /// Highest cohort level any resource borrows from (0: no borrowing).
    pub(super) borrowing: i32,
    pub(super) usage: BTreeMap<FlavorResource, Quantity>,
    pub(super) no_fit_reason: Option<PendingReason>,
}

impl Assignment {
    /// The worst mode over all PodSets.
    pub(super) fn mode(&self) -> Mode {
        self.pod_sets
            .iter()
            .map(PodSetResult::mode)
            .min()
            .unwrap_or(Mode::NoFit)
    }

    /// Kueue's `couldn't assign flavors to pod set ...` message.
    pub(super) fn message(&self) -> String {
        self.pod_sets
            .iter()
            .filter(|pod_set| !pod_set.reasons.is_empty())
            .map(|pod_set| {
                let mut reasons = pod_set.reasons.clone();
                reasons.sort();
                format!(
                    "couldn't assign flavors to pod set {}: {}",
                    pod_set.name,
                    reasons.join(", ")
                )
            })
            .collect::<Vec<_>>()
            .join("; ")
    }

    /// The (flavor, resource) pairs that need preemption.
    pub(super) fn needs_preemption(&self) -> BTreeSet<FlavorResource> {
        self.pod_sets
            .iter()
            .flat_map(|pod_set| {
                pod_set
                    .flavors
                    .iter()
                    .filter(|(_, choice)| choice.mode == Mode::Preempt)
                    .map(|(resource, choice)| FlavorResource::new(&choice.flavor, resource))
            })
            .collect()
    }

    /// What the PodSets ask of their flavors' Topologies, in PodSet order: under preemption
    /// all of them are placed again once the victims are gone.
    pub(super) fn topology_needs(&self) -> Vec<TopologyNeed> {
        self.pod_sets
            .iter()
            .filter_map(|pod_set| pod_set.topology_need.clone())
            .collect()
    }

    /// Where the PodSets of [`Self::topology_needs`] were placed, in the same order; one that
    /// needs preemption to be placed has no placement, and ends the list.
    pub(super) fn topology_placements(&self) -> Vec<&TopologyAssignment> {
        self.pod_sets
            .iter()
            .filter(|pod_set| pod_set.topology_need.is_some())
            .map_while(|pod_set| pod_set.topology.as_ref())
            .collect()
    }

    /// The admission to write for this assignment.
    pub(super) fn to_admission(&self, cluster_queue: &str) -> Admission {
        Admission {
            cluster_queue: cluster_queue.to_owned(),
            pod_set_assignments: self
                .pod_sets
                .iter()
                .map(|pod_set| PodSetAssignment {
                    name: pod_set.name.clone(),
                    flavors: pod_set
                        .flavors
                        .iter()
                        .map(|(resource, choice)| (resource.clone(), choice.flavor.clone()))
                        .collect(),
                    resource_usage: pod_set
                        .flavors
                        .keys()
                        .map(|resource| {
                            (
                                resource.clone(),
                                pod_set.requests.get(resource).copied().unwrap_or(0),
                            )
                        })
                        .collect(),
                    count: pod_set.count,
                    topology: pod_set.topology.clone(),
                })
                .collect(),
        }
    }

    fn append(&mut self, pod_set: PodSetResult) {
        for (resource, choice) in &pod_set.flavors {
            self.borrowing = self.borrowing.max(choice.borrow);
            let quantity = pod_set.requests.get(resource).copied().unwrap_or(0);
            let entry = self
                .usage
                .entry(FlavorResource::new(&choice.flavor, resource))
                .or_insert(0);
            *entry = entry.saturating_add(quantity);
        }
        self.pod_sets.push(pod_set);
    }

    /// Kueue's `resolveNoFitReason`: per PodSet the mildest blocker among alternative flavors of a
    /// resource group, the most severe across groups and PodSets.
    fn resolve_no_fit_reason(&mut self, cluster_queue: &ClusterQueue) {
        if self.mode() != Mode::NoFit {
            return;
        }
        let mut overall = None;
        for pod_set in self
            .pod_sets
            .iter()
            .filter(|pod_set| pod_set.mode() == Mode::NoFit)
        {
            if pod_set.attempts.is_empty() {
                overall =
                    PendingReason::most_severe(overall, Some(PendingReason::NoMatchingFlavor));
                continue;
            }
            let mut group_minimum: BTreeMap<i64, Option<PendingReason>> = BTreeMap::new();
            for (position, attempt) in pod_set.attempts.iter().enumerate() {
                if attempt.mode != Mode::NoFit {
                    continue;
                }
                let mut groups: Vec<i64> = cluster_queue
                    .resource_groups
                    .iter()
                    .enumerate()
                    .filter(|(_, group)| {
                        group
                            .flavors
                            .iter()
                            .any(|flavor| flavor.name == attempt.flavor)
                    })
                    .map(|(index, _)| index as i64)
                    .collect();
                if groups.is_empty() {
                    groups.push(-1 - position as i64);
                }
                for group in groups {
                    let current = group_minimum.entry(group).or_insert(attempt.no_fit_reason);
                    if PendingReason::severity(attempt.no_fit_reason)
                        < PendingReason::severity(*current)
                    {
                        *current = attempt.no_fit_reason;
                    }
                }
            }
            let pod_set_reason = group_minimum.values().fold(None, |worst, reason| {
                PendingReason::most_severe(worst, *reason)
            });
            // Only a resource the queue does not cover fails without a failed flavor attempt
            // (Kueue leaves the reason empty there, which is not a valid condition reason).
            overall = PendingReason::most_severe(
                overall,
                pod_set_reason.or(Some(PendingReason::NoMatchingFlavor)),
            );
        }
        self.no_fit_reason = overall;
    }
}

/// Outcome of checking one (flavor, resource) against quota.
struct QuotaCheck {
    mode: PreemptionMode,
    borrow: i32,
    reason: Option<String>,
    no_fit_reason: Option<PendingReason>,
}

/// Assigns flavors to a workload's PodSets against the working snapshot; `counts` overrides the
/// PodSet counts (partial admission); `nominated`, an earlier assignment of the same workload,
/// limits each PodSet's resources to the flavors it chose (Kueue's nomination mapping).
pub(super) fn assign(
    snapshot: &mut Snapshot,
    workload: &Workload,
    cq: usize,
    counts: Option<&[i32]>,
    nominated: Option<&Assignment>,
) -> Assignment {
    let spec = std::sync::Arc::clone(&snapshot.cqs[cq].spec);
    let covers_pods = group_of(&spec, PODS_RESOURCE).is_some();
    let mut assignment = Assignment {
        pod_sets: Vec::new(),
        borrowing: 0,
        usage: BTreeMap::new(),
        no_fit_reason: None,
    };

    // Topology places taken by this workload's earlier PodSets: a later PodSet in the same
    // flavor is placed around them.
    let mut placed: Vec<EarlierPlacement<'_>> = Vec::new();
    for (index, pod_set) in workload.pod_sets.iter().enumerate() {
        let count = counts
            .and_then(|counts| counts.get(index).copied())
            .unwrap_or(pod_set.count);
        let mut requests: BTreeMap<String, Quantity> = pod_set
            .requests
            .iter()
            .map(|(resource, per_pod)| {
                (
                    resource.clone(),
                    per_pod.saturating_mul(Quantity::from(count)),
                )
            })
            .collect();
        if covers_pods {
            requests.insert(PODS_RESOURCE.to_owned(), Quantity::from(count));
        }
        let mut result = PodSetResult {
            name: pod_set.name.clone(),
            count,
            requests: requests.clone(),
            flavors: BTreeMap::new(),
            topology: None,
            topology_need: None,
            reasons: Vec::new(),
            attempts: Vec::new(),
        };

        let mut failed = false;
        for (resource, quantity) in &requests {
            if (*quantity == 0 && group_of(&spec, resource).is_none())
                || result.flavors.contains_key(resource)
            {
                continue;
            }
            let search = FlavorSearch {
                workload,
                cq,
                spec: &spec,
                pod_set,
                requests: &requests,
                earlier: &placed,
                nominated: nominated
                    .and_then(|nominated| nominated.pod_sets.get(index))
                    .map(|pod_set| &pod_set.flavors),
            };
            let (flavors, reasons) =
                search.find(snapshot, resource, &assignment.usage, &mut result);
            if flavors.is_empty() {
                result.flavors.clear();
                result.reasons = reasons;
                failed = true;
                break;
            }
            result.flavors.extend(flavors);
            result.reasons.extend(reasons);
        }
        let topology_flavor = result
            .flavors
            .values()
            .find(|choice| snapshot.topologies.contains_key(&choice.flavor));
        if let (Some(choice), Some(topology)) = (topology_flavor, &result.topology) {
            placed.push(EarlierPlacement {
                flavor: choice.flavor.clone(),
                assignment: topology.clone(),
                per_pod: &pod_set.requests,
            });
        }
        assignment.append(result);
        if failed {
            break;
        }
    }
    assignment.resolve_no_fit_reason(&spec);
    assignment
}

/// The resource group of a queue covering `resource`.
pub(super) fn group_of<'a>(
    cluster_queue: &'a ClusterQueue,
    resource: &str,
) -> Option<&'a ResourceGroup> {
    cluster_queue.resource_groups.iter().find(|group| {
        group
            .covered_resources
            .iter()
            .any(|covered| covered == resource)
    })
}

/// Where an earlier PodSet of the workload was placed in a topology-aware flavor.
struct EarlierPlacement<'a> {
    flavor: String,
    assignment: TopologyAssignment,
    per_pod: &'a BTreeMap<String, Quantity>,
}

/// Context of the flavor search for one PodSet.
struct FlavorSearch<'a> {
    workload: &'a Workload,
    cq: usize,
    spec: &'a ClusterQueue,
    pod_set: &'a PodSet,
    requests: &'a BTreeMap<String, Quantity>,
    earlier: &'a [EarlierPlacement<'a>],
    /// The flavors an earlier assignment chose for this PodSet's resources, the only ones
    /// tried when set.
    nominated: Option<&'a BTreeMap<String, FlavorChoice>>,
}

impl FlavorSearch<'_> {
    /// Picks the flavor for the resource group of `resource`; returns the choices for every
    /// requested resource of the group and the reasons found along the way (empty on a fit).
    fn find(
        &self,
        snapshot: &mut Snapshot,
        resource: &str,
        assigned_usage: &BTreeMap<FlavorResource, Quantity>,
        result: &mut PodSetResult,
    ) -> (BTreeMap<String, FlavorChoice>, Vec<String>) {
        let Some(group) = group_of(self.spec, resource) else {
            return (
                BTreeMap::new(),
                vec![format!("resource {resource} unavailable in ClusterQueue")],
            );
        };
        let group_requests: Vec<(&String, Quantity)> = self
            .requests
            .iter()
            .filter(|(name, _)| group.covered_resources.contains(name))
            .map(|(name, quantity)| (name, *quantity))
            .collect();
        let fungibility = &self.spec.flavor_fungibility;

        let mut reasons = Vec::new();
        let mut best: BTreeMap<String, FlavorChoice> = BTreeMap::new();
        let mut best_mode = GranularMode::WORST;
        let mut placements: BTreeMap<&str, TopologyAssignment> = BTreeMap::new();
        let count = result.count;
        let pinned = self
            .nominated
            .map(|nominated| nominated.get(resource).map(|choice| choice.flavor.as_str()));
        for flavor in &group.flavors {
            if pinned.is_some_and(|pinned| pinned != Some(flavor.name.as_str())) {
                reasons.push(format!(
                    "skipping flavor {} as it is not found in the nomination mapping for resource {resource}",
                    flavor.name
                ));
                continue;
            }
            if let Some(reason) = self.check_flavor(snapshot, group, &flavor.name) {
                reasons.push(reason);
                result.record_attempt(
                    &flavor.name,
                    Mode::NoFit,
                    Some(PendingReason::NoMatchingFlavor),
                );
                continue;
            }

            let mut choices = BTreeMap::new();
            let mut representative = GranularMode::BEST;
            let mut flavor_no_fit = None;
            for &(name, quantity) in &group_requests {
                let fr = FlavorResource::new(&flavor.name, name);
                let assumed = assigned_usage.get(&fr).copied().unwrap_or(0);
                let check = self.fits_resource_quota(snapshot, &fr, assumed, quantity);
                if let Some(reason) = check.reason {
                    reasons.push(reason);
                    flavor_no_fit = PendingReason::most_severe(flavor_no_fit, check.no_fit_reason);
                }
                let mode = GranularMode {
                    preemption: check.mode,
                    borrowing: check.borrow,
                };
                if representative.preferred_over(mode, fungibility) {
                    representative = mode;
                }
                if representative.preemption == PreemptionMode::NoFit {
                    continue;
                }
                choices.insert(
                    name.clone(),
                    FlavorChoice {
                        flavor: flavor.name.clone(),
                        mode: check.mode.mode(),
                        borrow: check.borrow,
                    },
                );
            }
            // Placed only where the quota fits now: under preemption, the placement waits for
            // the victims to be gone. As in Kueue, a placement that fails needs preemption
            // too, and a PodSet that the Topology would not hold were no workload placed in it
            // never fits.
            match representative.preemption {
                PreemptionMode::NoFit => {}
                PreemptionMode::Fit => {
                    let free = snapshot.topologies.get(&flavor.name);
                    match self.place(free, &flavor.name, count) {
                        Some(Ok(placed)) => {
                            placements.insert(&flavor.name, placed);
                        }
                        Some(Err(reason)) => {
                            reasons.push(reason);
                            // Not even were no workload placed: no preemption makes room.
                            let empty = self.place_on_empty(snapshot, &flavor.name, count);
                            if matches!(empty, Some(Err(_))) {
                                let reason = Some(PendingReason::TopologyPlacementFailed);
                                result.record_attempt(&flavor.name, Mode::NoFit, reason);
                                continue;
                            }
                            representative.preemption = PreemptionMode::Preempt;
                            for choice in choices.values_mut() {
                                choice.mode = Mode::Preempt;
                            }
                        }
                        None => {}
                    }
                }
                _ => {
                    if let Some(Err(reason)) = self.place_on_empty(snapshot, &flavor.name, count) {
                        reasons.push(reason);
                        let reason = Some(PendingReason::TopologyPlacementFailed);
                        result.record_attempt(&flavor.name, Mode::NoFit, reason);
                        continue;
                    }
                }
            }
            result.record_attempt(
                &flavor.name,
                representative.preemption.mode(),
                flavor_no_fit,
            );

            if !representative.should_try_next_flavor(fungibility) {
                best = choices;
                best_mode = representative;
                break;
            }
            if representative.preferred_over(best_mode, fungibility) {
                best = choices;
                best_mode = representative;
            }
        }
        if best_mode.preemption == PreemptionMode::Fit {
            reasons.clear();
        }
        if let Some(chosen) = best.values().next() {
            if let Some(placed) = placements.remove(chosen.flavor.as_str()) {
                result.topology = Some(placed);
            }
            if let Some(request) = snapshot
                .topologies
                .get(&chosen.flavor)
                .and_then(|capacity| self.placement_request(capacity, count))
            {
                result.topology_need = Some(TopologyNeed {
                    flavor: chosen.flavor.clone(),
                    request,
                });
            }
        }
        (best, reasons)
    }

    /// The PodSet's placement in `free`, the capacity of `flavor`'s Topology, when it is known
    /// and the PodSet asks for topology (explicitly, or implicitly in a queue of
    /// topology-aware flavors alone, as an unconstrained request).
    fn place(
        &self,
        free: Option<&TopologyCapacity>,
        flavor: &str,
        count: i32,
    ) -> Option<Result<TopologyAssignment, String>> {
        let free = free?;
        let mut earlier = self
            .earlier
            .iter()
            .filter(|placement| placement.flavor == flavor)
            .peekable();
        let left_by_earlier;
        let capacity = if earlier.peek().is_none() {
            free
        } else {
            let mut left = free.clone();
            for placement in earlier {
                left.take(&placement.assignment, placement.per_pod);
            }
            left_by_earlier = left;
            &left_by_earlier
        };
        let request = self.placement_request(capacity, count)?;
        Some(capacity.place(&request))
    }

    /// The PodSet's placement in `flavor`'s Topology were no workload placed in it.
    fn place_on_empty(
        &self,
        snapshot: &Snapshot,
        flavor: &str,
        count: i32,
    ) -> Option<Result<TopologyAssignment, String>> {
        let empty = snapshot.empty_topologies.get(flavor)?;
        self.place(Some(empty), flavor, count)
    }

    /// What `count` pods of the PodSet ask of a Topology of `capacity`'s levels; `None` when
    /// it names a level the Topology does not have.
    fn placement_request(
        &self,
        capacity: &TopologyCapacity,
        count: i32,
    ) -> Option<PlacementRequest> {
        let levels = &capacity.levels;
        let position = |level: &str| levels.iter().position(|known| known == level);
        let lowest = levels.len().checked_sub(1)?;
        let (level, mode, slices) = match &self.pod_set.topology {
            None => (lowest, PlacementMode::Unconstrained, None),
            Some(request) => {
                let level = match &request.level {
                    TopologyLevel::Named(level) => position(level)?,
                    TopologyLevel::Highest => 0,
                    TopologyLevel::Lowest => lowest,
                    TopologyLevel::Unresolvable => return None,
                };
                let slices = match (request.slice_levels.first(), request.slice_size) {
                    (Some(level), Some(size)) => Some(SliceRequest {
                        level: position(level)?,
                        size,
                    }),
                    _ => None,
                };
                (level, request.mode, slices)
            }
        };
        Some(PlacementRequest {
            level,
            mode,
            count,
            per_pod: self.pod_set.requests.clone(),
            slices,
        })
    }

    /// Whether the PodSet may run on the flavor's nodes; `Some(reason)` if not.
    fn check_flavor(
        &self,
        snapshot: &Snapshot,
        group: &ResourceGroup,
        flavor_name: &str,
    ) -> Option<String> {
        let Some(flavor) = snapshot.flavors.get(flavor_name) else {
            return Some(format!("flavor {flavor_name} not found"));
        };
        if let Some(reason) = self.check_topology(snapshot, group, flavor) {
            return Some(reason);
        }
        let untolerated = flavor.node_taints.iter().find(|taint| {
            matches!(
                taint.effect,
                TaintEffect::NoSchedule | TaintEffect::NoExecute
            ) && !self
                .pod_set
                .tolerations
                .iter()
                .chain(&flavor.tolerations)
                .any(|t| t.tolerates(taint))
        });
        if let Some(taint) = untolerated {
            return Some(format!("untolerated taint {taint} in flavor {flavor_name}"));
        }
        if !matches_node_affinity(self.pod_set, &flavor.node_labels) {
            return Some(format!("flavor {flavor_name} doesn't match node affinity"));
        }
        None
    }

    /// Kueue's `checkPodSetAndFlavorMatchForTAS`: a PodSet asking for topology-aware
    /// scheduling needs a flavor that has it (with the levels it names), and one that does not
    /// ask cannot use such a flavor, unless every flavor of the queue has it (then it is asked
    /// for implicitly).
    fn check_topology(
        &self,
        snapshot: &Snapshot,
        group: &ResourceGroup,
        flavor: &ResourceFlavor,
    ) -> Option<String> {
        let name = &flavor.name;
        let Some(request) = &self.pod_set.topology else {
            let queue_is_topology_only = self
                .spec
                .resource_groups
                .iter()
                .flat_map(|group| &group.flavors)
                .all(|quotas| {
                    snapshot
                        .flavors
                        .get(&quotas.name)
                        .is_some_and(|flavor| flavor.topology_levels.is_some())
                });
            return (flavor.topology_levels.is_some() && !queue_is_topology_only)
                .then(|| format!("Flavor {name:?} supports only TopologyAwareScheduling"));
        };
        match &flavor.topology_levels {
            // A flavor of other resources than the PodSet's may still serve it.
            None => self
                .requests
                .keys()
                .any(|resource| group.covered_resources.contains(resource))
                .then(|| format!("Flavor {name:?} does not support TopologyAwareScheduling")),
            Some(levels) if levels.is_empty() => {
                Some(format!("Flavor {name:?} information missing in TAS cache"))
            }
            Some(levels) => (!request.fits_levels(levels))
                .then(|| format!("Flavor {name:?} does not contain the requested level")),
        }
    }

    /// Kueue's `fitsResourceQuota`: whether `requested` more of `fr` (on top of `assumed` from
    /// earlier PodSets) fits, fits by borrowing, needs preemption, or can never fit.
    fn fits_resource_quota(
        &self,
        snapshot: &mut Snapshot,
        fr: &FlavorResource,
        assumed: Quantity,
        requested: Quantity,
    ) -> QuotaCheck {
        let format = snapshot.config.format_quantity;
        let available = snapshot.available(self.cq, fr);
        let max_capacity = snapshot.potential_available(NodeId::ClusterQueue(self.cq), fr);
        let value = assumed.saturating_add(requested);

        if value > max_capacity {
            return QuotaCheck {
                mode: PreemptionMode::NoFit,
                borrow: 0,
                reason: Some(format!(
                    "insufficient quota for {resource} in flavor {flavor}, previously considered podsets requests ({assumed}) + current podset request ({requested}) > maximum capacity ({max})",
                    resource = fr.resource,
                    flavor = fr.flavor,
                    assumed = format(&fr.resource, assumed),
                    requested = format(&fr.resource, requested),
                    max = format(&fr.resource, max_capacity),
                )),
                no_fit_reason: Some(PendingReason::ExceedsMaxQuota),
            };
        }

        let (borrow, may_reclaim_in_hierarchy) =
            snapshot.lowest_fitting_subtree(self.cq, fr, value);
        if value <= available {
            return QuotaCheck {
                mode: PreemptionMode::Fit,
                borrow,
                reason: None,
                no_fit_reason: None,
            };
        }

        let reason = Some(format!(
            "insufficient unused quota for {resource} in flavor {flavor}, {missing} more needed",
            resource = fr.resource,
            flavor = fr.flavor,
            missing = format(&fr.resource, value - available),
        ));
        let nominal = snapshot.cqs[self.cq].node.quota(fr).nominal;
        if nominal >= value
            || may_reclaim_in_hierarchy
            || self.can_preempt_while_borrowing(snapshot)
        {
            let (possibility, borrow_after) =
                preemption::simulate(snapshot, self.workload, self.cq, fr, value);
            return QuotaCheck {
                mode: PreemptionMode::from_possibility(possibility),
                borrow: borrow_after,
                reason,
                no_fit_reason: None,
            };
        }
        QuotaCheck {
            mode: PreemptionMode::NoFit,
            borrow,
            reason,
            no_fit_reason: Some(PendingReason::WaitingForQuota),
        }
    }

    fn can_preempt_while_borrowing(&self, snapshot: &Snapshot) -> bool {
        let preemption = &self.spec.preemption;
        preemption.borrow_within_cohort.policy != BorrowWithinCohortPolicy::Never
            || (snapshot.config.fair_sharing.is_some()
                && preemption.reclaim_within_cohort != PreemptionPolicy::Never)
    }
}

/// Kueue's `flavorSelector`: the PodSet's node selector and required node affinity, restricted to
/// the label keys this flavor defines, must match the flavor's node labels.
pub(super) fn matches_node_affinity(
    pod_set: &PodSet,
    node_labels: &BTreeMap<String, String>,
) -> bool {
    let selector_matches = pod_set
        .node_selector
        .iter()
        .filter(|(key, _)| node_labels.contains_key(*key))
        .all(|(key, value)| node_labels.get(key) == Some(value));
    if !selector_matches {
        return false;
    }
    let mut terms = Vec::new();
    for term in &pod_set.node_affinity {
        let relevant: Vec<_> = term
            .match_expressions
            .iter()
            .filter(|requirement| node_labels.contains_key(&requirement.key))
            .collect();
        // A term left empty matches any flavor, and terms are ORed.
        if relevant.is_empty() {
            return true;
        }
        terms.push(relevant);
    }
    terms.is_empty()
        || terms.iter().any(|term| {
            term.iter()
                .all(|requirement| requirement.matches(node_labels))
        })
}
