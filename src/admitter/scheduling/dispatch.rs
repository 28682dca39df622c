//! Status writes, one in flight per workload (later ones queue behind it, so writes to one
//! workload stay in order), and the retry backoff for admissions the API server refused.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

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
}

impl UpdateKind {
    pub(super) fn of(update: &Update) -> Self {
        match update {
            Update::Admit { .. } => Self::Admit,
            Update::Pending { .. } => Self::Pending,
            Update::Evict { .. } => Self::Evict,
        }
    }
}

pub(super) type Finished = (String, UpdateKind, Outcome);

pub(super) struct Dispatcher {
    applier: Arc<Applier>,
    pub(super) tasks: JoinSet<Finished>,
    /// Workload of each running task, to free its slot even if the task panicked.
    pub(super) task_keys: HashMap<tokio::task::Id, String>,
    busy: HashSet<String>,
    queued: HashMap<String, Update>,
}

impl Dispatcher {
    pub(super) fn new(applier: Applier) -> Self {
        Self {
            applier: Arc::new(applier),
            tasks: JoinSet::new(),
            task_keys: HashMap::new(),
            busy: HashSet::new(),
            queued: HashMap::new(),
        }
    }

    /// Starts writing `update`, or queues it behind the write in flight for the same
    /// workload (replacing an older queued one), so writes to one workload stay in order.
    pub(super) fn dispatch(&mut self, key: String, update: Update) {
        if self.busy.contains(&key) {
            self.queued.insert(key, update);
            return;
        }
        self.busy.insert(key.clone());
        let applier = Arc::clone(&self.applier);
        let task_key = key.clone();
        let task = self.tasks.spawn(async move {
            let kind = UpdateKind::of(&update);
            let outcome = applier.apply(&key, &update).await;
            (key, kind, outcome)
        });
        self.task_keys.insert(task.id(), task_key);
    }

    /// Notes that the write for `key` ended and starts the queued one, if any.
    pub(super) fn done(&mut self, key: &str) {
        self.busy.remove(key);
        if let Some(update) = self.queued.remove(key) {
            self.dispatch(key.to_owned(), update);
        }
    }
}
