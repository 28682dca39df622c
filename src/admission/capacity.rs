//! Whether a job could ever fit its ClusterQueue, judged at `kubectl apply` time.
//!
//! The quota objects are converted to the quota core's model by [`from_api`], as the
//! admitter converts them (an unreadable quota refuses the check), and every PodSet's requests are
//! compared with the most the ClusterQueue could give a single workload with everything else
//! idle: nominal quota plus what it may borrow. The check is deliberately one-sided: it only
//! reports a job that can never be admitted, never one that merely has to wait. So requests are
//! a lower bound of what Kueue would count (inputs of resource transformations are left out,
//! RuntimeClass overhead is not added) and quotas an upper bound.
//!
//! Texts (one per problem, joined with `"; "` by the caller):
//! - `the job requests cpu: 20 in pod set main (4 pods × 5), but ClusterQueue "team-a" can never
//!   give more than 8 (nominal quota plus what it may borrow)`; with several flavors the limit
//!   reads `8 in flavor "on-demand" or 4 in flavor "spot"`; with partial admission the count
//!   reads `(at least 2 pods × 5)`;
//! - `the job requests cpu: 6, memory: 10Gi in pod set main, but no flavor of ClusterQueue
//!   "team-a" can ever give all of it (flavor "a": at most cpu: 8, memory: 4Gi; flavor "b": at
//!   most cpu: 4, memory: 16Gi)` when each resource fits some flavor but no flavor fits all;
//! - `the job requests cpu: 12 across its pod sets (launcher: 2, worker: 10), but ClusterQueue
//!   "team-a" can never give more than 8 (nominal quota plus what it may borrow)`;
//! - `the job requests nvidia.com/gpu: 1 in pod set main, but ClusterQueue "team-a" has no quota
//!   for nvidia.com/gpu; it covers cpu, memory` (only with `quotaCheckStrategy:
//!   BlockUndeclared`, Kueue's default, under which such a job never gets a flavor).

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, PoisonError};

use jiff::Timestamp;
use k8s_openapi::api::core::v1::{LimitRange, PodSpec};

use super::lookup::QuotaObjects;
use crate::config::{QuotaCheckStrategy, Resources, TransformationStrategy};
use crate::jobs::{PodSet, Requests, pod_requests};
use crate::k8s::quantity::{QuantityError, format_quantity};
use crate::quota::from_api::{self, QueueReferences, QuotaError, Refuse};
use crate::quota::model::{self, PODS_RESOURCE};
use crate::quota::{Snapshot, max_possible};

/// What one PodSet of a job needs at the least.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Demand {
    /// PodSet name.
    pub pod_set: String,
    /// Fewest pods the PodSet can be admitted with.
    pub count: i32,
    /// Whether `count` is a partial-admission minimum below the PodSet's full count.
    pub partial: bool,
    /// Requests of one pod, after LimitRange defaults, with excluded resources removed.
    pub per_pod: Requests,
}

impl Demand {
    /// Requests of the whole PodSet (`per_pod × count`, saturating).
    pub fn total(&self) -> Requests {
        crate::jobs::scale_requests(&self.per_pod, self.count)
    }
}

/// The demands of a job's PodSets in a namespace with these LimitRanges.
///
/// Resources under `resources.excludeResourcePrefixes` and the inputs of
/// `resources.transformations` are left out (the check must never overstate a request);
/// `partial_admission` (the gate) lets a PodSet count with its `minCount`.
pub fn demands(
    pod_sets: &[PodSet],
    limit_ranges: &[LimitRange],
    resources: &Resources,
    partial_admission: bool,
) -> Result<Vec<Demand>, QuantityError> {
    let empty = PodSpec::default();
    pod_sets
        .iter()
        .map(|pod_set| {
            let spec = pod_set.template.spec.as_ref().unwrap_or(&empty);
            let mut per_pod = pod_requests(spec, limit_ranges)?;
            per_pod.retain(|name, _| counted(name, resources));
            let (count, partial) = match pod_set.min_count {
                Some(min) if partial_admission && min < pod_set.count => (min.max(0), true),
                _ => (pod_set.count, false),
            };
            Ok(Demand {
                pod_set: pod_set.name.clone(),
                count,
                partial,
                per_pod,
            })
        })
        .collect()
}

fn counted(resource: &str, resources: &Resources) -> bool {
    let excluded = resources
        .exclude_resource_prefixes
        .iter()
        .any(|prefix| resource.starts_with(prefix.as_str()));
    // A replaced input turns into outputs this check does not compute; leaving it out keeps
    // the verdict one-sided. A retained input stays as it is and is counted.
    let replaced = resources.transformations.iter().any(|transformation| {
        transformation.input == resource
            && transformation.strategy == TransformationStrategy::Replace
    });
    !excluded && !replaced
}

/// A quota-core snapshot holding the quotas and cohort tree of `objects`, with no usage.
pub fn snapshot(objects: &QuotaObjects) -> Result<Snapshot, QuotaError> {
    // AdmissionChecks gate admission, never what could fit: they are left out.
    let references = QueueReferences::of(&objects.resource_flavors, &[], None);
    let mut builder = Snapshot::builder(Timestamp::now());
    for flavor in &objects.resource_flavors {
        // Whether a job could ever fit is a matter of quota: topology is left out.
        builder = builder.flavor(from_api::resource_flavor(flavor, None));
    }
    for cohort in &objects.cohorts {
        builder = builder.cohort(from_api::cohort(cohort, &Refuse)?);
    }
    for cluster_queue in &objects.cluster_queues {
        builder = builder.cluster_queue(from_api::cluster_queue(
            cluster_queue,
            &references,
            &Refuse,
        )?);
    }
    Ok(builder.build())
}

/// The last [`snapshot`], kept while no quota object changes: building one is linear in the
/// cluster's ClusterQueues, Cohorts and ResourceFlavors, and every validated job reads one.
#[derive(Debug, Default)]
pub struct SnapshotCache {
    last: Mutex<Option<(Versions, Arc<Snapshot>)>>,
}

/// The `resourceVersion` of each quota object by name, one map per kind: what a snapshot was
/// built from. Checked against the objects of each review without copying their names.
#[derive(Debug)]
struct Versions([HashMap<String, String>; 3]);

impl Versions {
    /// `None` if an object has no `resourceVersion` (it was never stored).
    fn of(objects: &QuotaObjects) -> Option<Self> {
        fn of_kind<K: kube::Resource>(objects: &[Arc<K>]) -> Option<HashMap<String, String>> {
            objects
                .iter()
                .map(|object| {
                    let metadata = object.meta();
                    Some((
                        metadata.name.clone().unwrap_or_default(),
                        metadata.resource_version.clone()?,
                    ))
                })
                .collect()
        }
        Some(Self([
            of_kind(&objects.cluster_queues)?,
            of_kind(&objects.cohorts)?,
            of_kind(&objects.resource_flavors)?,
        ]))
    }

    /// Whether `objects` are exactly these versions.
    fn are(&self, objects: &QuotaObjects) -> bool {
        fn same<K: kube::Resource>(versions: &HashMap<String, String>, objects: &[Arc<K>]) -> bool {
            versions.len() == objects.len()
                && objects.iter().all(|object| {
                    let metadata = object.meta();
                    metadata.resource_version.is_some()
                        && versions.get(metadata.name.as_deref().unwrap_or_default())
                            == metadata.resource_version.as_ref()
                })
        }
        let [cluster_queues, cohorts, flavors] = &self.0;
        same(cluster_queues, &objects.cluster_queues)
            && same(cohorts, &objects.cohorts)
            && same(flavors, &objects.resource_flavors)
    }
}

impl SnapshotCache {
    /// The snapshot of `objects`, built only when they are not the versions last built from.
    /// Objects without a `resourceVersion` (never stored) are always built from.
    pub fn snapshot(&self, objects: &QuotaObjects) -> Result<Arc<Snapshot>, QuotaError> {
        let mut last = self.last.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some((built_from, built)) = last.as_ref()
            && built_from.are(objects)
        {
            return Ok(built.clone());
        }
        let built = Arc::new(snapshot(objects)?);
        if let Some(versions) = Versions::of(objects) {
            *last = Some((versions, built.clone()));
        }
        Ok(built)
    }
}

/// Why the job's `demands` can never be admitted by `cluster_queue` of `snapshot`; empty when
/// they could (or the queue is not in the snapshot).
pub fn never_fits(
    snapshot: &Snapshot,
    cluster_queue: &str,
    demands: &[Demand],
    strategy: QuotaCheckStrategy,
) -> Vec<String> {
    let Some(spec) = snapshot.cluster_queue(cluster_queue) else {
        return Vec::new();
    };
    let check = Check {
        name: cluster_queue,
        spec,
        limits: Limits::new(snapshot, cluster_queue),
    };
    let covers_pods = check.covered().contains(&PODS_RESOURCE);

    let mut problems = Vec::new();
    // Resources already reported for a PodSet are not reported again for the whole job.
    let mut reported: Vec<String> = Vec::new();
    let mut totals: Vec<Requests> = Vec::new();
    for demand in demands {
        let mut total = demand.total();
        if covers_pods {
            total.insert(PODS_RESOURCE.to_owned(), i64::from(demand.count));
        }
        total.retain(|_, value| *value > 0);
        if strategy == QuotaCheckStrategy::BlockUndeclared {
            problems.extend(check.undeclared(demand, &total, &mut reported));
        }
        for group in &spec.resource_groups {
            problems.extend(check.pod_set_in_group(demand, &total, group, &mut reported));
        }
        totals.push(total);
    }
    if demands.len() > 1 {
        problems.extend(check.job_totals(demands, &totals, &reported));
    }
    problems
}

/// One ClusterQueue's limits, and the messages about them.
struct Check<'a> {
    name: &'a str,
    spec: &'a model::ClusterQueue,
    limits: Limits,
}

impl Check<'_> {
    fn covered(&self) -> Vec<&str> {
        self.spec
            .resource_groups
            .iter()
            .flat_map(|group| group.covered_resources.iter().map(String::as_str))
            .collect()
    }

    /// Requested resources the queue has no quota for at all.
    fn undeclared(
        &self,
        demand: &Demand,
        total: &Requests,
        reported: &mut Vec<String>,
    ) -> Vec<String> {
        let covered = self.covered();
        let mut problems = Vec::new();
        for (resource, value) in total {
            if !covered.contains(&resource.as_str()) {
                let listed = if covered.is_empty() {
                    "no resources".to_owned()
                } else {
                    covered.join(", ")
                };
                problems.push(format!(
                    "the job requests {} in pod set {}, but ClusterQueue {:?} has no quota for {resource}; it covers {listed}",
                    amount(resource, *value),
                    demand.pod_set,
                    self.name,
                ));
                reported.push(resource.clone());
            }
        }
        problems
    }

    /// The PodSet's requests of the group's resources against each flavor of the group: a
    /// flavor must give all of them.
    fn pod_set_in_group(
        &self,
        demand: &Demand,
        total: &Requests,
        group: &model::ResourceGroup,
        reported: &mut Vec<String>,
    ) -> Vec<String> {
        let requested: Vec<(&String, i64)> = total
            .iter()
            .filter(|(name, _)| group.covered_resources.contains(name))
            .map(|(name, value)| (name, *value))
            .collect();
        let limit =
            |flavor: &model::FlavorQuotas, resource: &str| self.limits.get(&flavor.name, resource);
        let fits = |flavor: &model::FlavorQuotas| {
            requested
                .iter()
                .all(|(resource, value)| *value <= limit(flavor, resource))
        };
        if requested.is_empty() || group.flavors.iter().any(fits) {
            return Vec::new();
        }
        reported.extend(requested.iter().map(|(resource, _)| (*resource).clone()));

        let beyond_every_flavor: Vec<&(&String, i64)> = requested
            .iter()
            .filter(|(resource, value)| {
                group
                    .flavors
                    .iter()
                    .all(|flavor| *value > limit(flavor, resource))
            })
            .collect();
        if beyond_every_flavor.is_empty() {
            let flavors: Vec<String> = group
                .flavors
                .iter()
                .map(|flavor| {
                    let at_most: Vec<String> = requested
                        .iter()
                        .map(|(resource, _)| amount(resource, limit(flavor, resource)))
                        .collect();
                    format!("flavor {:?}: at most {}", flavor.name, at_most.join(", "))
                })
                .collect();
            let wanted: Vec<String> = requested
                .iter()
                .map(|(resource, value)| amount(resource, *value))
                .collect();
            return vec![format!(
                "the job requests {} in pod set {}{}, but no flavor of ClusterQueue {:?} can ever give all of it ({})",
                wanted.join(", "),
                demand.pod_set,
                pods_phrase(demand, None),
                self.name,
                flavors.join("; "),
            )];
        }
        beyond_every_flavor
            .into_iter()
            .map(|(resource, value)| {
                let most: Vec<String> = group
                    .flavors
                    .iter()
                    .map(|flavor| {
                        let most = quantity(resource, limit(flavor, resource));
                        if group.flavors.len() == 1 {
                            most
                        } else {
                            format!("{most} in flavor {:?}", flavor.name)
                        }
                    })
                    .collect();
                format!(
                    "the job requests {} in pod set {}{}, but ClusterQueue {:?} can never give more than {} (nominal quota plus what it may borrow)",
                    amount(resource, *value),
                    demand.pod_set,
                    pods_phrase(demand, Some(resource)),
                    self.name,
                    most.join(" or "),
                )
            })
            .collect()
    }

    /// The job's PodSets together against all flavors of each group together.
    fn job_totals(
        &self,
        demands: &[Demand],
        totals: &[Requests],
        reported: &[String],
    ) -> Vec<String> {
        let mut sums: BTreeMap<&str, i64> = BTreeMap::new();
        for (resource, value) in totals.iter().flatten() {
            let sum = sums.entry(resource.as_str()).or_default();
            *sum = sum.saturating_add(*value);
        }
        let mut problems = Vec::new();
        for (resource, sum) in sums {
            if reported.iter().any(|done| done == resource) {
                continue;
            }
            let Some(group) = self
                .spec
                .resource_groups
                .iter()
                .find(|group| group.covered_resources.iter().any(|r| r == resource))
            else {
                continue;
            };
            let capacity = group.flavors.iter().fold(0i64, |acc, flavor| {
                acc.saturating_add(self.limits.get(&flavor.name, resource))
            });
            if sum <= capacity {
                continue;
            }
            let parts: Vec<String> = demands
                .iter()
                .zip(totals)
                .filter_map(|(demand, total)| {
                    let value = total.get(resource)?;
                    Some(format!(
                        "{}: {}",
                        demand.pod_set,
                        quantity(resource, *value)
                    ))
                })
                .collect();
            problems.push(format!(
                "the job requests {} across its pod sets ({}), but ClusterQueue {:?} can never give more than {} (nominal quota plus what it may borrow)",
                amount(resource, sum),
                parts.join(", "),
                self.name,
                quantity(resource, capacity),
            ));
        }
        problems
    }
}

/// `max_possible` per (flavor, resource) of one ClusterQueue, computed once per resource. A
/// queue has a handful of pairs: a list read without building keys beats a map.
struct Limits(Vec<(String, String, i64)>);

impl Limits {
    fn new(snapshot: &Snapshot, cluster_queue: &str) -> Self {
        let mut limits = Vec::new();
        if let Some(spec) = snapshot.cluster_queue(cluster_queue) {
            for resource in spec
                .resource_groups
                .iter()
                .flat_map(|group| &group.covered_resources)
            {
                for (flavor, value) in
                    max_possible(snapshot, cluster_queue, resource).unwrap_or_default()
                {
                    limits.push((flavor, resource.clone(), value));
                }
            }
        }
        Self(limits)
    }

    fn get(&self, flavor: &str, resource: &str) -> i64 {
        self.0
            .iter()
            .find(|(f, r, _)| f == flavor && r == resource)
            .map_or(0, |(_, _, value)| *value)
    }
}

fn quantity(resource: &str, value: i64) -> String {
    format_quantity(resource, value).0
}

fn amount(resource: &str, value: i64) -> String {
    format!("{resource}: {}", quantity(resource, value))
}

/// ` (4 pods × 5)` for a PodSet of several pods (per-pod amount of `resource` if given).
fn pods_phrase(demand: &Demand, resource: Option<&str>) -> String {
    if demand.count == 1 && !demand.partial {
        return String::new();
    }
    let at_least = if demand.partial { "at least " } else { "" };
    let noun = if demand.count == 1 { "pod" } else { "pods" };
    match resource {
        Some(resource) => {
            let per_pod = if resource == PODS_RESOURCE {
                1
            } else {
                demand.per_pod.get(resource).copied().unwrap_or(0)
            };
            format!(
                " ({at_least}{} {noun} × {})",
                demand.count,
                quantity(resource, per_pod)
            )
        }
        None => format!(" ({at_least}{} {noun})", demand.count),
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::apimachinery::pkg::api::resource::Quantity;

    use super::*;
    use crate::api::v1beta2::{
        ClusterQueue, ClusterQueueSpec, Cohort, CohortSpec, FlavorQuotas, ResourceGroup,
        ResourceQuota,
    };
    use pretty_assertions::assert_eq;
    use std::sync::Arc;

    fn quota(name: &str, nominal: &str, borrowing: Option<&str>) -> ResourceQuota {
        ResourceQuota {
            name: name.to_owned(),
            nominal_quota: Quantity(nominal.to_owned()),
            borrowing_limit: borrowing.map(|b| Quantity(b.to_owned())),
            lending_limit: None,
        }
    }

    fn group(covered: &[&str], flavors: &[(&str, Vec<ResourceQuota>)]) -> ResourceGroup {
        ResourceGroup {
            covered_resources: covered.iter().map(|r| (*r).to_owned()).collect(),
            flavors: flavors
                .iter()
                .map(|(name, resources)| FlavorQuotas {
                    name: (*name).to_owned(),
                    resources: resources.clone(),
                })
                .collect(),
        }
    }

    fn cq(name: &str, cohort: Option<&str>, groups: Vec<ResourceGroup>) -> Arc<ClusterQueue> {
        Arc::new(ClusterQueue::new(
            name,
            ClusterQueueSpec {
                cohort_name: cohort.map(str::to_owned),
                resource_groups: groups,
                ..ClusterQueueSpec::default()
            },
        ))
    }

    fn demand(pod_set: &str, count: i32, per_pod: &[(&str, i64)]) -> Demand {
        Demand {
            pod_set: pod_set.to_owned(),
            count,
            partial: false,
            per_pod: per_pod
                .iter()
                .map(|(name, value)| ((*name).to_owned(), *value))
                .collect(),
        }
    }

    fn check(objects: QuotaObjects, cluster_queue: &str, demands: &[Demand]) -> Vec<String> {
        let snapshot = snapshot(&objects).unwrap();
        never_fits(
            &snapshot,
            cluster_queue,
            demands,
            QuotaCheckStrategy::BlockUndeclared,
        )
    }

    fn objects(cluster_queues: Vec<Arc<ClusterQueue>>) -> QuotaObjects {
        QuotaObjects {
            cluster_queues,
            ..QuotaObjects::default()
        }
    }

    #[test]
    fn a_cached_snapshot_lasts_while_the_quota_objects_keep_their_versions() {
        let team_a = |nominal: &str, version: Option<&str>| {
            let mut queue = ClusterQueue::clone(&cq(
                "team-a",
                None,
                vec![group(
                    &["cpu"],
                    &[("default", vec![quota("cpu", nominal, None)])],
                )],
            ));
            queue.metadata.resource_version = version.map(str::to_owned);
            objects(vec![Arc::new(queue)])
        };
        let verdict = |snapshot: &Snapshot| {
            never_fits(
                snapshot,
                "team-a",
                &[demand("main", 2, &[("cpu", 5000)])],
                QuotaCheckStrategy::BlockUndeclared,
            )
        };
        let too_big = vec![
            r#"the job requests cpu: 10 in pod set main (2 pods × 5), but ClusterQueue "team-a" can never give more than 8 (nominal quota plus what it may borrow)"#,
        ];
        let cache = SnapshotCache::default();

        let first = cache.snapshot(&team_a("8", Some("1"))).unwrap();
        assert_eq!(verdict(&first), too_big);
        let again = cache.snapshot(&team_a("8", Some("1"))).unwrap();
        assert!(Arc::ptr_eq(&first, &again), "same versions, same snapshot");

        let raised = cache.snapshot(&team_a("16", Some("2"))).unwrap();
        assert_eq!(verdict(&raised), Vec::<String>::new());

        // One object more, or one fewer, is another snapshot.
        let mut with_cohort = team_a("16", Some("2"));
        let mut cohort = Cohort::new("research", CohortSpec::default());
        cohort.metadata.resource_version = Some("3".to_owned());
        with_cohort.cohorts.push(Arc::new(cohort));
        let grown = cache.snapshot(&with_cohort).unwrap();
        assert!(!Arc::ptr_eq(&raised, &grown), "an object added");
        assert!(Arc::ptr_eq(&grown, &cache.snapshot(&with_cohort).unwrap()));
        let shrunk = cache.snapshot(&team_a("16", Some("2"))).unwrap();
        assert!(!Arc::ptr_eq(&grown, &shrunk), "an object gone");

        // Objects never stored have no version to tell them apart: always built from.
        let unstored = cache.snapshot(&team_a("8", None)).unwrap();
        assert_eq!(verdict(&unstored), too_big);
        let unstored_raised = cache.snapshot(&team_a("16", None)).unwrap();
        assert_eq!(verdict(&unstored_raised), Vec::<String>::new());
    }

    #[test]
    fn a_request_beyond_nominal_without_cohort_never_fits() {
        let team_a = cq(
            "team-a",
            None,
            vec![group(
                &["cpu"],
                &[("default", vec![quota("cpu", "8", None)])],
            )],
        );
        let problems = check(
            objects(vec![team_a]),
            "team-a",
            &[demand("main", 4, &[("cpu", 5000)])],
        );
        assert_eq!(
            problems,
            vec![
                r#"the job requests cpu: 20 in pod set main (4 pods × 5), but ClusterQueue "team-a" can never give more than 8 (nominal quota plus what it may borrow)"#
            ]
        );
        let fits = check(
            objects(vec![cq(
                "team-a",
                None,
                vec![group(
                    &["cpu"],
                    &[("default", vec![quota("cpu", "8", None)])],
                )],
            )]),
            "team-a",
            &[demand("main", 1, &[("cpu", 8000)])],
        );
        assert_eq!(fits, Vec::<String>::new());
    }

    #[test]
    fn borrowing_from_the_cohort_counts_up_to_the_borrowing_limit() {
        let one_group = |nominal: &str, borrowing: Option<&str>| {
            vec![group(
                &["cpu"],
                &[("default", vec![quota("cpu", nominal, borrowing)])],
            )]
        };
        let queues = || {
            objects(vec![
                cq("team-a", Some("org"), one_group("4", Some("2"))),
                cq("team-b", Some("org"), one_group("10", None)),
            ])
        };
        assert_eq!(
            check(queues(), "team-a", &[demand("main", 1, &[("cpu", 6000)])]),
            Vec::<String>::new()
        );
        assert_eq!(
            check(queues(), "team-a", &[demand("main", 1, &[("cpu", 7000)])]),
            vec![
                r#"the job requests cpu: 7 in pod set main, but ClusterQueue "team-a" can never give more than 6 (nominal quota plus what it may borrow)"#
            ]
        );
        // team-b has no borrowing limit: all of team-a's lendable quota counts.
        assert_eq!(
            check(queues(), "team-b", &[demand("main", 1, &[("cpu", 14000)])]),
            Vec::<String>::new()
        );
    }

    #[test]
    fn cohort_objects_contribute_their_own_quota() {
        let mut objects = objects(vec![cq(
            "team-a",
            Some("org"),
            vec![group(
                &["cpu"],
                &[("default", vec![quota("cpu", "2", None)])],
            )],
        )]);
        objects.cohorts.push(Arc::new(Cohort::new(
            "org",
            CohortSpec {
                resource_groups: vec![group(
                    &["cpu"],
                    &[("default", vec![quota("cpu", "3", None)])],
                )],
                ..CohortSpec::default()
            },
        )));
        assert_eq!(
            check(
                objects.clone(),
                "team-a",
                &[demand("main", 1, &[("cpu", 5000)])]
            ),
            Vec::<String>::new()
        );
        assert_eq!(
            check(objects, "team-a", &[demand("main", 1, &[("cpu", 5001)])]),
            vec![
                r#"the job requests cpu: 5001m in pod set main, but ClusterQueue "team-a" can never give more than 5 (nominal quota plus what it may borrow)"#
            ]
        );
    }

    #[test]
    fn several_flavors_are_named_and_mixed_shortfalls_explained() {
        let team_a = || {
            objects(vec![cq(
                "team-a",
                None,
                vec![group(
                    &["cpu", "memory"],
                    &[
                        (
                            "on-demand",
                            vec![quota("cpu", "8", None), quota("memory", "4Gi", None)],
                        ),
                        (
                            "spot",
                            vec![quota("cpu", "4", None), quota("memory", "16Gi", None)],
                        ),
                    ],
                )],
            )])
        };
        let gib = 1024 * 1024 * 1024;
        assert_eq!(
            check(team_a(), "team-a", &[demand("main", 1, &[("cpu", 10_000)])]),
            vec![
                r#"the job requests cpu: 10 in pod set main, but ClusterQueue "team-a" can never give more than 8 in flavor "on-demand" or 4 in flavor "spot" (nominal quota plus what it may borrow)"#
            ]
        );
        assert_eq!(
            check(
                team_a(),
                "team-a",
                &[demand("main", 2, &[("cpu", 3000), ("memory", 5 * gib)])]
            ),
            vec![
                r#"the job requests cpu: 6, memory: 10Gi in pod set main (2 pods), but no flavor of ClusterQueue "team-a" can ever give all of it (flavor "on-demand": at most cpu: 8, memory: 4Gi; flavor "spot": at most cpu: 4, memory: 16Gi)"#
            ]
        );
    }

    #[test]
    fn undeclared_resources_block_unless_ignored() {
        let team_a = || {
            objects(vec![cq(
                "team-a",
                None,
                vec![group(
                    &["cpu", "memory"],
                    &[(
                        "default",
                        vec![quota("cpu", "8", None), quota("memory", "8Gi", None)],
                    )],
                )],
            )])
        };
        let gpu_job = [demand("main", 1, &[("cpu", 1000), ("nvidia.com/gpu", 1)])];
        assert_eq!(
            check(team_a(), "team-a", &gpu_job),
            vec![
                r#"the job requests nvidia.com/gpu: 1 in pod set main, but ClusterQueue "team-a" has no quota for nvidia.com/gpu; it covers cpu, memory"#
            ]
        );
        let snapshot = snapshot(&team_a()).unwrap();
        assert_eq!(
            never_fits(
                &snapshot,
                "team-a",
                &gpu_job,
                QuotaCheckStrategy::IgnoreUndeclared
            ),
            Vec::<String>::new()
        );
    }

    #[test]
    fn pod_sets_are_summed_and_pods_counted_when_covered() {
        let team_a = || {
            objects(vec![cq(
                "team-a",
                None,
                vec![group(
                    &["cpu", "pods"],
                    &[(
                        "default",
                        vec![quota("cpu", "8", None), quota("pods", "5", None)],
                    )],
                )],
            )])
        };
        assert_eq!(
            check(
                team_a(),
                "team-a",
                &[
                    demand("launcher", 1, &[("cpu", 2000)]),
                    demand("worker", 2, &[("cpu", 4000)])
                ]
            ),
            vec![
                r#"the job requests cpu: 10 across its pod sets (launcher: 2, worker: 8), but ClusterQueue "team-a" can never give more than 8 (nominal quota plus what it may borrow)"#
            ]
        );
        assert_eq!(
            check(team_a(), "team-a", &[demand("main", 6, &[("cpu", 1000)])]),
            vec![
                r#"the job requests pods: 6 in pod set main (6 pods × 1), but ClusterQueue "team-a" can never give more than 5 (nominal quota plus what it may borrow)"#
            ]
        );
    }

    #[test]
    fn partial_admission_checks_the_minimum() {
        let team_a = || {
            objects(vec![cq(
                "team-a",
                None,
                vec![group(
                    &["cpu"],
                    &[("default", vec![quota("cpu", "4", None)])],
                )],
            )])
        };
        let mut partial = demand("main", 5, &[("cpu", 1000)]);
        partial.partial = true;
        assert_eq!(
            check(team_a(), "team-a", &[partial]),
            vec![
                r#"the job requests cpu: 5 in pod set main (at least 5 pods × 1), but ClusterQueue "team-a" can never give more than 4 (nominal quota plus what it may borrow)"#
            ]
        );
    }

    #[test]
    fn demands_apply_exclusions_transformations_and_min_count() {
        use crate::config::ResourceTransformation;
        use crate::jobs::PodSet;
        use k8s_openapi::api::core::v1::PodTemplateSpec;

        let template: PodTemplateSpec = serde_json::from_value(serde_json::json!({
            "spec": {"containers": [{"name": "c", "resources": {"requests": {
                "cpu": "1", "example.com/license": "1", "nvidia.com/mig-1g": "2"
            }}}]}
        }))
        .unwrap();
        let pod_set = PodSet {
            name: "main".to_owned(),
            template,
            count: 4,
            min_count: Some(2),
            topology_request: None,
        };
        let resources = Resources {
            quota_check_strategy: QuotaCheckStrategy::BlockUndeclared,
            exclude_resource_prefixes: vec!["example.com/".to_owned()],
            transformations: vec![ResourceTransformation {
                input: "nvidia.com/mig-1g".to_owned(),
                strategy: TransformationStrategy::Replace,
                multiply_by: None,
                outputs: BTreeMap::new(),
            }],
        };
        assert_eq!(
            demands(std::slice::from_ref(&pod_set), &[], &resources, true).unwrap(),
            vec![Demand {
                pod_set: "main".to_owned(),
                count: 2,
                partial: true,
                per_pod: BTreeMap::from([("cpu".to_owned(), 1000)]),
            }]
        );
        assert_eq!(
            demands(&[pod_set], &[], &resources, false).unwrap()[0].count,
            4
        );
    }
}
