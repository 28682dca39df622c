//! Status writes, one in flight per workload (later ones queue behind it, so writes to one
//! workload stay in order), and the retry backoff for admissions the API server refused.

use std::sync::Arc;

// foldhash rather than SipHash: a pass asks about the backoff of every pending workload.
use foldhash::{HashMap, HashMapExt};

use jiff::Timestamp;
use tokio::task::JoinSet;

use crate::admitter::writers::workload_status::{Applier, Outcome, Update};

/// Longest wait before retrying an admission the API server refused.
const MAX_RETRY_BACKOFF_SECONDS: i64 = 60;

/// Retry backoff for admissions the API server refused.
#[derive(Clone, Debug, Default)]
pub(super) struct Backoff {
    waiting: HashMap<String, (u32, Timestamp)>,
}

impl Backoff {
    pub(super) fn failed(&mut self, key: &str, now: Timestamp) {
        let failures = self.waiting.get(key).map_or(0, |(count, _)| *count) + 1;
        let seconds = 2_i64
            .saturating_pow(failures.saturating_sub(1))
            .min(MAX_RETRY_BACKOFF_SECONDS);
        let until = now
            .checked_add(jiff::SignedDuration::from_secs(seconds))
            .unwrap_or(now);
        self.waiting.insert(key.to_owned(), (failures, until));
    }

    pub(super) fn succeeded(&mut self, key: &str) {
        self.waiting.remove(key);
    }

    pub(super) fn is_waiting(&self, key: &str, now: Timestamp) -> bool {
        self.waiting.get(key).is_some_and(|(_, until)| *until > now)
    }

    pub(super) fn next_retry(&self, now: Timestamp) -> Option<Timestamp> {
        self.waiting
            .values()
            .map(|(_, until)| *until)
            .filter(|until| *until > now)
            .min()
    }
}

/// Which kind of update a finished write was.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum UpdateKind {
    Admit,
    Pending,
    Evict,
    /// What the AdmissionChecks decided (`Admitted`, the deactivation target), or the
    /// deactivation a target calls for.
    Checks,
}

impl UpdateKind {
    pub(super) fn of(update: &Update) -> Self {
        match update {
            Update::Admit { .. } => Self::Admit,
            Update::ChecksReady
            | Update::ChecksRejected { .. }
            | Update::ExecutionTimeExceeded { .. }
            | Update::MarkInactive => Self::Checks,
            Update::Pending { .. } => Self::Pending,
            // An eviction when the workload holds quota; otherwise tracked by nothing.
            Update::Evict { .. } | Update::RetryChecks { .. } | Update::Deactivate => Self::Evict,
            // A condition of a pending workload: an admission may overtake it.
            Update::Requeue(_) => Self::Pending,
        }
    }
}

pub(super) type Finished = (String, UpdateKind, Outcome);

/// The write in flight for a workload.
struct Running {
    id: tokio::task::Id,
    kind: UpdateKind,
    abort: tokio::task::AbortHandle,
}

pub(super) struct Dispatcher {
    applier: Arc<Applier>,
    pub(super) tasks: JoinSet<Finished>,
    /// Workload of each task, to free its slot even if the task panicked.
    task_keys: HashMap<tokio::task::Id, String>,
    running: HashMap<String, Running>,
    queued: HashMap<String, Update>,
    /// Workloads whose queued admission a later write replaced: it will never be written.
    superseded_admissions: Vec<String>,
}

impl Dispatcher {
    pub(super) fn new(applier: Applier) -> Self {
        Self {
            applier: Arc::new(applier),
            tasks: JoinSet::new(),
            task_keys: HashMap::new(),
            running: HashMap::new(),
            queued: HashMap::new(),
            superseded_admissions: Vec::new(),
        }
    }

    /// Starts writing `update`, or queues it behind the write in flight for the same
    /// workload (replacing an older queued one), so writes to one workload stay in order. An
    /// admission or eviction does not wait for a pending status in flight: that write is
    /// cancelled (it is outdated, and the new write re-reads the workload if it landed). A
    /// queued admission replaced by another kind of write is reported by
    /// [`Self::take_superseded_admissions`].
    pub(super) fn dispatch(&mut self, key: String, update: Update) {
        let kind = UpdateKind::of(&update);
        if let Some(running) = self.running.get(&key) {
            if running.kind != UpdateKind::Pending || kind == UpdateKind::Pending {
                let replaced = self.queued.insert(key.clone(), update);
                if kind != UpdateKind::Admit
                    && replaced
                        .is_some_and(|replaced| UpdateKind::of(&replaced) == UpdateKind::Admit)
                {
                    self.superseded_admissions.push(key);
                }
                return;
            }
            running.abort.abort();
            self.running.remove(&key);
        }
        self.queued.remove(&key);
        let applier = Arc::clone(&self.applier);
        let task_key = key.clone();
        let abort = self.tasks.spawn(async move {
            let outcome = applier.apply(&task_key, &update).await;
            (task_key, kind, outcome)
        });
        let id = abort.id();
        self.task_keys.insert(id, key.clone());
        self.running.insert(key, Running { id, kind, abort });
    }

    /// Notes that task `id` ended; returns its workload if that task was still the
    /// workload's write in flight (not cancelled in favour of a newer one), after starting the
    /// write queued behind it.
    pub(super) fn done(&mut self, id: tokio::task::Id) -> Option<String> {
        let key = self.task_keys.remove(&id)?;
        if self
            .running
            .get(&key)
            .is_none_or(|running| running.id != id)
        {
            return None;
        }
        self.running.remove(&key);
        if let Some(update) = self.queued.remove(&key) {
            self.dispatch(key.clone(), update);
        }
        Some(key)
    }

    /// The workloads whose queued admission was replaced since the last call: what was
    /// counted for those admissions must be taken back.
    pub(super) fn take_superseded_admissions(&mut self) -> Vec<String> {
        std::mem::take(&mut self.superseded_admissions)
    }
}

#[cfg(test)]
mod tests {
    use std::convert::Infallible;

    use axum::http::{Request, Response};
    use kube::Client;
    use kube::runtime::reflector;

    use super::*;
    use crate::admitter::writers::workload_status::Applier;
    use crate::metrics::{MetricsRegistry, ReplicaRole};
    use crate::quota::model::Admission;

    fn dispatcher() -> Dispatcher {
        // An API server that never answers: a write stays in flight until the test ends.
        let service = tower::service_fn(|_: Request<kube::client::Body>| {
            futures::future::pending::<Result<Response<axum::body::Body>, Infallible>>()
        });
        let (workloads, _writer) = reflector::store();
        let metrics = MetricsRegistry::new();
        Dispatcher::new(Applier::new(
            Client::new(service, "default"),
            workloads,
            metrics.admitter.clone(),
            &metrics.events,
            ReplicaRole::Standalone,
        ))
    }

    fn admit() -> Update {
        Update::Admit {
            admission: Admission {
                cluster_queue: "cq".to_owned(),
                pod_set_assignments: Vec::new(),
            },
            generation: Some(1),
            checks: Vec::new(),
        }
    }

    fn evict() -> Update {
        Update::Evict {
            reason: "Preempted".to_owned(),
            message: "Preempted to accommodate a workload".to_owned(),
            preemption: None,
        }
    }

    #[tokio::test(flavor = "current_thread")]
    async fn a_queued_admission_replaced_by_an_eviction_is_reported_once() {
        let mut dispatcher = dispatcher();
        dispatcher.dispatch("ns/a".to_owned(), evict());
        dispatcher.dispatch("ns/a".to_owned(), admit());
        assert_eq!(
            dispatcher.take_superseded_admissions(),
            Vec::<String>::new()
        );

        dispatcher.dispatch("ns/a".to_owned(), evict());
        assert_eq!(dispatcher.take_superseded_admissions(), ["ns/a"]);
        assert_eq!(
            dispatcher.take_superseded_admissions(),
            Vec::<String>::new()
        );

        // An admission that replaces another is written in its place.
        dispatcher.dispatch("ns/a".to_owned(), admit());
        dispatcher.dispatch("ns/a".to_owned(), admit());
        assert_eq!(
            dispatcher.take_superseded_admissions(),
            Vec::<String>::new()
        );
    }
}
