//! Resource requests of a pod and of a PodSet, as Kueue accounts them.
//!
//! Per pod: Kubernetes `PodRequests` (regular containers summed, init containers max'd against
//! that sum with restartable sidecars accumulating, pod-level `spec.resources` overriding cpu,
//! memory and hugepages, `spec.overhead` added), computed after Kueue's `AdjustResources`:
//! LimitRange `default`/`defaultRequest` fill missing limits/requests, then limits stand in for
//! missing requests. Sums are exact (nano precision) and converted to the canonical unit of
//! [`crate::k8s::quantity`] at the end, like Quantity arithmetic followed by `ResourceValue`.
//!
//! The caller copies `RuntimeClass.overhead.podFixed` into `spec.overhead` beforehand when a
//! `runtimeClassName` is set and the overhead is empty (that needs an API lookup).

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Container, LimitRange, PodSpec, ResourceRequirements};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;

use super::podset::PodSet;
use crate::k8s::quantity::{QuantityError, nano_to_value, parse_nano};

/// Resource name → amount in the canonical unit (milli-cores for cpu, base units otherwise).
pub type Requests = BTreeMap<String, i64>;

type QuantityList = BTreeMap<String, Quantity>;
type NanoList = BTreeMap<String, i128>;

/// Requests of one pod with this spec in a namespace with these LimitRanges.
pub fn pod_requests(
    spec: &PodSpec,
    limit_ranges: &[LimitRange],
) -> Result<Requests, QuantityError> {
    let defaults = LimitRangeDefaults::summarize(limit_ranges);

    let mut total = NanoList::new();
    for container in &spec.containers {
        add(&mut total, &container_requests(container, &defaults)?);
    }
    let mut sidecars = NanoList::new();
    let mut init_peak = NanoList::new();
    for container in spec.init_containers.iter().flatten() {
        let requests = container_requests(container, &defaults)?;
        let in_use = if container.restart_policy.as_deref() == Some("Always") {
            add(&mut total, &requests);
            add(&mut sidecars, &requests);
            sidecars.clone()
        } else {
            let mut in_use = requests;
            add(&mut in_use, &sidecars);
            in_use
        };
        keep_max(&mut init_peak, &in_use);
    }
    keep_max(&mut total, &init_peak);

    if let Some(pod_level) = &spec.resources {
        let requests = nano(&effective_requests(
            pod_level,
            &defaults.pod_limits,
            &defaults.pod_requests,
        ))?;
        for (name, value) in requests
            .into_iter()
            .filter(|(name, _)| is_pod_level_resource(name))
        {
            total.insert(name, value);
        }
    }
    if let Some(overhead) = &spec.overhead {
        add(&mut total, &nano(overhead)?);
    }

    Ok(total
        .into_iter()
        .map(|(name, value)| {
            let canonical = nano_to_value(&name, value);
            (name, canonical)
        })
        .collect())
}

/// Requests of the whole PodSet: per-pod requests × `count` (saturating).
pub fn total_requests(
    pod_set: &PodSet,
    limit_ranges: &[LimitRange],
) -> Result<Requests, QuantityError> {
    let empty = PodSpec::default();
    let spec = pod_set.template.spec.as_ref().unwrap_or(&empty);
    Ok(scale_requests(
        &pod_requests(spec, limit_ranges)?,
        pod_set.count,
    ))
}

/// Per-pod requests multiplied by a pod count (saturating).
pub fn scale_requests(per_pod: &Requests, count: i32) -> Requests {
    per_pod
        .iter()
        .map(|(name, value)| (name.clone(), value.saturating_mul(i64::from(count))))
        .collect()
}

/// Resources that pod-level `spec.resources` may set (Kubernetes `IsSupportedPodLevelResource`).
fn is_pod_level_resource(name: &str) -> bool {
    name == "cpu" || name == "memory" || name.starts_with("hugepages-")
}

/// LimitRange defaults merged across all LimitRanges, the first one seen winning per resource.
#[derive(Default)]
struct LimitRangeDefaults {
    container_limits: QuantityList,
    container_requests: QuantityList,
    pod_limits: QuantityList,
    pod_requests: QuantityList,
}

impl LimitRangeDefaults {
    fn summarize(limit_ranges: &[LimitRange]) -> Self {
        let mut defaults = LimitRangeDefaults::default();
        let items = limit_ranges
            .iter()
            .filter_map(|range| range.spec.as_ref())
            .flat_map(|spec| &spec.limits);
        for item in items {
            let (limits, requests) = match item.type_.as_str() {
                "Container" => (
                    &mut defaults.container_limits,
                    &mut defaults.container_requests,
                ),
                "Pod" => (&mut defaults.pod_limits, &mut defaults.pod_requests),
                _ => continue,
            };
            keep_first(limits, item.default.as_ref());
            keep_first(requests, item.default_request.as_ref());
        }
        defaults
    }
}

fn container_requests(
    container: &Container,
    defaults: &LimitRangeDefaults,
) -> Result<NanoList, QuantityError> {
    let empty = ResourceRequirements::default();
    let resources = container.resources.as_ref().unwrap_or(&empty);
    nano(&effective_requests(
        resources,
        &defaults.container_limits,
        &defaults.container_requests,
    ))
}

/// Requests after LimitRange defaults and limits-as-requests (Kueue `AdjustResources`).
fn effective_requests(
    resources: &ResourceRequirements,
    default_limits: &QuantityList,
    default_requests: &QuantityList,
) -> QuantityList {
    let mut limits = resources.limits.clone().unwrap_or_default();
    keep_first(&mut limits, Some(default_limits));
    let mut requests = resources.requests.clone().unwrap_or_default();
    keep_first(&mut requests, Some(default_requests));
    keep_first(&mut requests, Some(&limits));
    requests
}

fn keep_first(target: &mut QuantityList, source: Option<&QuantityList>) {
    for (name, quantity) in source.into_iter().flatten() {
        target
            .entry(name.clone())
            .or_insert_with(|| quantity.clone());
    }
}

fn nano(list: &QuantityList) -> Result<NanoList, QuantityError> {
    list.iter()
        .map(|(name, quantity)| Ok((name.clone(), parse_nano(&quantity.0)?)))
        .collect()
}

fn add(target: &mut NanoList, other: &NanoList) {
    for (name, value) in other {
        let sum = target.entry(name.clone()).or_default();
        *sum = sum.saturating_add(*value);
    }
}

fn keep_max(target: &mut NanoList, other: &NanoList) {
    for (name, value) in other {
        let kept = target.entry(name.clone()).or_insert(*value);
        *kept = (*kept).max(*value);
    }
}
