//! `kuota explain KIND/NAME`: one line saying why a job is not running and what it waits for,
//! decided with what the admitter uses: the same conversion of the cluster, the visibility
//! API's queue order for what is ahead of it, and one scheduling cycle of the quota core for
//! the job alone against the quota held now, whose verdict says which resource of which flavor
//! is short and by how much.

use std::sync::Arc;

use jiff::Timestamp;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{ApiResource, DynamicObject, ListParams};
use kube::{Api, Client, Resource, ResourceExt};

use super::pending::PendingLists;
use crate::admitter::scheduling::cluster_state::{self, ClusterState, Converted};
use crate::api::constants::{JOB_UID_LABEL, condition};
use crate::api::v1beta2::{self as api, CheckState, StopPolicy};
use crate::jobs::{self, JobFramework};
use crate::quota::from_api::{ConversionOptions, workload_key};
use crate::quota::node_usage::{self, NodeUsage};
use crate::quota::{Decision, Queues, SchedulerConfig, cycle};

/// What `kuota explain` is asked about: a job of one of the frameworks, or a Workload.
#[derive(Clone, Copy)]
pub enum Kind {
    /// A job kind of the framework table.
    Job(&'static dyn JobFramework),
    /// A Workload named directly.
    Workload,
}

impl std::fmt::Debug for Kind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Job(framework) => write!(f, "Job({})", framework.kind().gvk_string()),
            Self::Workload => write!(f, "Workload"),
        }
    }
}

/// Why `kuota explain` could not answer.
#[derive(Debug, thiserror::Error)]
pub enum ExplainError {
    /// The argument is not `KIND/NAME` with a kind Kuota knows.
    #[error("{0:?}: expected KIND/NAME with KIND one of workload, {kinds}", kinds = known_kinds())]
    Target(String),
    /// The object does not exist.
    #[error("{kind} {name:?} not found in namespace {namespace:?}")]
    NotFound {
        /// Its kind, as written.
        kind: String,
        /// Its name.
        name: String,
        /// Its namespace.
        namespace: String,
    },
    /// No client for the cluster.
    #[error("cannot reach the cluster: {0}")]
    Client(String),
    /// Reading the cluster failed.
    #[error("{0}")]
    Kube(#[from] kube::Error),
}

fn known_kinds() -> String {
    jobs::FRAMEWORKS
        .iter()
        .map(|framework| framework.kind().kind.to_lowercase())
        .collect::<Vec<_>>()
        .join(", ")
}

/// Reads `KIND/NAME`: the kind in any case, singular or plural, optionally with its group
/// (`job/x`, `jobs.batch/x`, `RayJob/x`, `workload/x`, `wl/x`).
pub fn parse_target(text: &str) -> Result<(Kind, String), ExplainError> {
    let bad = || ExplainError::Target(text.to_owned());
    let (kind, name) = text.split_once('/').ok_or_else(bad)?;
    if name.is_empty() || name.contains('/') {
        return Err(bad());
    }
    let kind = kind.to_lowercase();
    let (short, group) = kind.split_once('.').unwrap_or((&kind, ""));
    if ["workload", "workloads", "wl"].contains(&short)
        && (group.is_empty() || group == crate::api::constants::GROUP)
    {
        return Ok((Kind::Workload, name.to_owned()));
    }
    jobs::FRAMEWORKS
        .iter()
        .find(|framework| {
            let job = framework.kind();
            (short == job.kind.to_lowercase() || short == job.plural)
                && (group.is_empty() || group == job.group)
        })
        .map(|framework| (Kind::Job(*framework), name.to_owned()))
        .ok_or_else(bad)
}

/// The thing explained: how the answer names it, and what Kuota made of it.
#[derive(Clone, Debug)]
pub struct Subject {
    /// `kind/name`, as the answer starts.
    pub label: String,
    /// Its `kueue.x-k8s.io/queue-name` label (for a job).
    pub queue_label: Option<String>,
    /// Its Workload, when there is one.
    pub workload: Option<Arc<api::Workload>>,
}

/// Reads what `explain` needs from the API server, once.
pub async fn read(
    client: &Client,
    namespace: &str,
    kind: Kind,
    name: &str,
) -> Result<(Subject, ClusterState), ExplainError> {
    let state = ClusterState {
        cluster_queues: list_all(client).await?,
        local_queues: list_all(client).await?,
        cohorts: list_all(client).await?,
        resource_flavors: list_all(client).await?,
        admission_checks: list_all(client).await?,
        workloads: list_all(client).await?,
        namespaces: list_all(client).await?,
        limit_ranges: list_all(client).await?,
        topologies: list_all(client).await?,
        nodes: list_all(client).await?,
        node_usage: Arc::new(node_usage(client).await?),
    };
    let not_found = |kind: &str| ExplainError::NotFound {
        kind: kind.to_owned(),
        name: name.to_owned(),
        namespace: namespace.to_owned(),
    };
    let subject = match kind {
        Kind::Workload => {
            let workload = state
                .workloads
                .iter()
                .find(|w| w.name_any() == name && w.namespace().as_deref() == Some(namespace))
                .cloned()
                .ok_or_else(|| not_found("workload"))?;
            Subject {
                label: format!("workload/{name}"),
                queue_label: workload.spec.queue_name.clone(),
                workload: Some(workload),
            }
        }
        Kind::Job(framework) => {
            let job_kind = framework.kind();
            let resource: ApiResource = job_kind.api_resource();
            let api: Api<DynamicObject> =
                Api::namespaced_with(client.clone(), namespace, &resource);
            let job = api
                .get_opt(name)
                .await?
                .ok_or_else(|| not_found(&job_kind.kind.to_lowercase()))?;
            let uid = job.uid().unwrap_or_default();
            let workload = state
                .workloads
                .iter()
                .find(|w| {
                    w.namespace().as_deref() == Some(namespace)
                        && (w.labels().get(JOB_UID_LABEL) == Some(&uid)
                            || w.owner_references().iter().any(|owner| owner.uid == uid))
                })
                .cloned();
            Subject {
                label: format!("{}/{name}", job_kind.kind.to_lowercase()),
                queue_label: job
                    .labels()
                    .get(crate::api::constants::QUEUE_NAME_LABEL)
                    .cloned(),
                workload,
            }
        }
    };
    Ok((subject, state))
}

async fn list_all<K>(client: &Client) -> Result<Vec<Arc<K>>, kube::Error>
where
    K: Resource<DynamicType = ()> + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    let items = Api::<K>::all(client.clone())
        .list(&ListParams::default())
        .await?
        .items;
    Ok(items.into_iter().map(Arc::new).collect())
}

/// What the pods outside topology-aware placement take on each node, listed with the
/// selectors of the admitter's watch.
async fn node_usage(client: &Client) -> Result<NodeUsage, kube::Error> {
    let params = ListParams::default()
        .labels(&node_usage::label_selector())
        .fields(node_usage::FIELD_SELECTOR);
    let pods = Api::<Pod>::all(client.clone()).list(&params).await?;
    Ok(NodeUsage::of_pods(pods.items))
}

fn stop_policy_name(policy: Option<StopPolicy>) -> Option<&'static str> {
    match policy.unwrap_or_default() {
        StopPolicy::None => None,
        StopPolicy::Hold => Some("Hold"),
        StopPolicy::HoldAndDrain => Some("HoldAndDrain"),
    }
}

fn check_state_name(state: CheckState) -> &'static str {
    match state {
        CheckState::Pending => "Pending",
        CheckState::Ready => "Ready",
        CheckState::Retry => "Retry",
        CheckState::Rejected => "Rejected",
    }
}

/// The one line for `subject` in `state` at `now`.
pub fn explain(
    subject: &Subject,
    state: &ClusterState,
    options: &ConversionOptions,
    scheduler: SchedulerConfig,
    now: Timestamp,
) -> String {
    let label = &subject.label;
    let Some(workload) = &subject.workload else {
        return match &subject.queue_label {
            None => format!("{label} is not queued: it has no kueue.x-k8s.io/queue-name label"),
            Some(_) => {
                format!("{label} has no Workload yet: Kuota creates it when it sees the job")
            }
        };
    };
    let name = workload.name_any();
    let namespace = workload.namespace().unwrap_or_default();
    if let Some(finished) = workload.true_condition(condition::FINISHED) {
        return format!("{label} has finished: {}", finished.message);
    }
    if !workload.spec.is_active() {
        return format!(
            "{label} is deactivated: its Workload {name} is inactive; `kubectl kueue resume workload {name}` queues it again"
        );
    }
    let admission_queue = workload
        .status
        .as_ref()
        .and_then(|status| status.admission.as_ref())
        .map(|admission| admission.cluster_queue.clone());
    if workload.is_condition_true(condition::ADMITTED) {
        let cq = admission_queue.unwrap_or_default();
        return format!("{label} is admitted in ClusterQueue {cq:?}: Kuota holds nothing back");
    }
    if workload.is_condition_true(condition::QUOTA_RESERVED) {
        let cq = admission_queue.unwrap_or_default();
        let waiting = workload
            .status
            .iter()
            .flat_map(|status| &status.admission_checks)
            .find(|check| check.state != CheckState::Ready);
        return match waiting {
            Some(check) if check.message.is_empty() => format!(
                "{label} holds quota in ClusterQueue {cq:?} and waits for admission check {:?} ({})",
                check.name,
                check_state_name(check.state)
            ),
            Some(check) => format!(
                "{label} holds quota in ClusterQueue {cq:?} and waits for admission check {:?} ({}: {})",
                check.name,
                check_state_name(check.state),
                check.message
            ),
            None => format!("{label} holds quota in ClusterQueue {cq:?} and is being admitted"),
        };
    }
    let Some(queue) = workload.spec.queue_name.as_deref() else {
        return format!("{label} is not queued: its Workload {name} names no LocalQueue");
    };
    let local_queue = state
        .local_queues
        .iter()
        .find(|lq| lq.name_any() == queue && lq.namespace().as_deref() == Some(namespace.as_str()));
    let Some(local_queue) = local_queue else {
        return format!(
            "{label} waits for LocalQueue {queue:?}, which does not exist in namespace {namespace:?}"
        );
    };
    if let Some(policy) = stop_policy_name(local_queue.spec.stop_policy) {
        return format!(
            "{label} waits: LocalQueue {queue:?} is stopped ({policy}); `kubectl kueue resume localqueue {queue}` restarts it"
        );
    }
    let cq = local_queue.spec.cluster_queue.clone().unwrap_or_default();
    let Some(cluster_queue) = state.cluster_queues.iter().find(|c| c.name_any() == cq) else {
        return format!(
            "{label} waits: ClusterQueue {cq:?} of LocalQueue {queue:?} does not exist"
        );
    };
    if let Some(policy) = stop_policy_name(cluster_queue.spec.stop_policy) {
        return format!(
            "{label} waits: ClusterQueue {cq:?} is stopped ({policy}); `kubectl kueue resume clusterqueue {cq}` restarts it"
        );
    }
    let converted = cluster_state::convert(state, options);
    let fair_sharing = scheduler
        .admission_fair_sharing
        .as_ref()
        .map(|config| config.resource_weights.clone());
    let snapshot = converted.snapshot(scheduler, now);
    let known_end = first_known_end(&converted, &cq, now);
    let lists = PendingLists::of(state, converted, fair_sharing.as_ref());
    let Some(standing) = lists.standing(&workload_key(workload)) else {
        return format!(
            "{label} is not pending in ClusterQueue {cq:?}: {}",
            pending_message(workload)
        );
    };
    let mut alone = Queues::new();
    alone.push(standing.workload.clone());
    let with_known_end = |message: String| match &known_end {
        Some(end) => format!("{message}; {end}"),
        None => message,
    };
    let verdict = cycle(&snapshot, &mut alone)
        .into_iter()
        .find_map(|decision| match decision {
            Decision::Admit { .. } => Some(if standing.ahead == 0 {
                "it fits in the free quota and is admitted in the next scheduling cycle".to_owned()
            } else {
                "it fits in the free quota once the workloads ahead of it are admitted".to_owned()
            }),
            Decision::Preempt { message, .. } | Decision::Inadmissible { message, .. } => {
                Some(with_known_end(message))
            }
            Decision::Evict { .. } => None,
        })
        .unwrap_or_else(|| pending_message(workload));
    let higher = &standing.higher_priority_ahead;
    let place = match (standing.ahead, higher.len()) {
        (0, _) => "first".to_owned(),
        (ahead, 0) => format!("behind {ahead} of the same or lower priority"),
        (ahead, count) => format!(
            "behind {ahead} ({count} of higher priority: {})",
            named(higher)
        ),
    };
    format!(
        "{label} is pending in ClusterQueue {:?}, {place}: {verdict}",
        standing.cluster_queue
    )
}

/// The earliest end known among the workloads running in `cluster_queue`: only a maximum
/// execution time bounds how long a workload runs.
fn first_known_end(converted: &Converted, cluster_queue: &str, now: Timestamp) -> Option<String> {
    let (key, deadline) = converted
        .execution_deadlines
        .iter()
        .filter(|(key, _)| {
            converted.holders.iter().any(|holder| {
                holder.workload.key == *key && holder.workload.cluster_queue == cluster_queue
            })
        })
        .min_by_key(|(_, deadline)| deadline.at)?;
    let seconds = u64::try_from(deadline.at.duration_since(now).as_secs()).unwrap_or(0);
    let within = if seconds < 60 {
        format!("{seconds}s")
    } else {
        format!("{} min", seconds.div_ceil(60))
    };
    Some(format!(
        "{key}, running here, ends within {within} (its maximum execution time)"
    ))
}

/// At most [`NAMED_AHEAD`] keys, then how many more.
fn named(keys: &[&str]) -> String {
    let shown = keys[..keys.len().min(NAMED_AHEAD)].join(", ");
    match keys.len().saturating_sub(NAMED_AHEAD) {
        0 => shown,
        more => format!("{shown} and {more} more"),
    }
}

/// How many workloads ahead of higher priority a line names.
const NAMED_AHEAD: usize = 3;

/// The message of the workload's `QuotaReserved` condition, as the admitter last wrote it.
fn pending_message(workload: &api::Workload) -> String {
    workload
        .condition(condition::QUOTA_RESERVED)
        .map(|condition| condition.message.clone())
        .unwrap_or_else(|| "the admitter has not looked at it yet".to_owned())
}

#[cfg(test)]
mod tests;
