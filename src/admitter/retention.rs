//! `objectRetentionPolicies.workloads.afterFinished`: a Workload that has been finished for that
//! long is deleted, as Kueue's Workload controller deletes it (Kuota's finalizer taken off
//! first, so that the deletion does not hang; event `Deleted`). The admitter's Workload store
//! lets finished Workloads go, so retention keeps its own small record of them, and only when
//! the option is set.

use std::collections::{BTreeSet, HashMap};
use std::time::Duration;

use futures::StreamExt;
use jiff::{SignedDuration, Timestamp};
use kube::api::{DeleteParams, Preconditions};
use kube::runtime::events::EventType;
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Api, Client, Resource, ResourceExt};

use crate::api::constants::{RESOURCE_IN_USE_FINALIZER, condition};
use crate::api::v1beta2::Workload;
use crate::k8s::events::{Event, EventRecorder};
use crate::k8s::finalizers;
use crate::metrics::EventMetrics;

/// Kueue's Workload controller, which reports the deletion.
const EVENT_REPORTER: &str = "kueue-workload-controller";
/// Kueue's event message for the deletion.
const DELETED_MESSAGE: &str = "Deleted finished workload due to elapsed retention";
/// A deletion that failed is tried again after this long.
const RETRY_INTERVAL: SignedDuration = SignedDuration::from_secs(10);
/// Longest sleep without a due deletion; the watch wakes the loop on any change anyway.
const IDLE_WAKE: Duration = Duration::from_secs(3600);

/// A finished Workload waiting for its retention to elapse.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Retained {
    pub namespace: String,
    pub name: String,
    /// When it is to be deleted.
    pub due: Timestamp,
}

/// The retention entry for `workload`, keyed by its uid: only a finished Workload has one, due
/// `retention` after its `Finished` condition turned true.
pub fn retained(workload: &Workload, retention: Duration) -> Option<(String, Retained)> {
    let finished = workload.true_condition(condition::FINISHED)?;
    let uid = workload.uid()?;
    let retention = SignedDuration::try_from(retention).unwrap_or(SignedDuration::MAX);
    let due = finished
        .last_transition_time
        .0
        .checked_add(retention)
        .unwrap_or(Timestamp::MAX);
    Some((
        uid,
        Retained {
            namespace: workload.namespace().unwrap_or_default(),
            name: workload.name_any(),
            due,
        },
    ))
}

/// The finished Workloads waiting for deletion, by uid and in the order they fall due, so that
/// a watch event or a wake-up costs a lookup rather than a scan of all of them.
#[derive(Debug, Default)]
pub struct Record {
    by_uid: HashMap<String, Retained>,
    by_due: BTreeSet<(Timestamp, String)>,
}

impl Record {
    /// Keeps `entry` unless `uid` is kept already (its due time may have been put off).
    fn keep(&mut self, uid: String, entry: Retained) {
        if !self.by_uid.contains_key(&uid) {
            self.by_due.insert((entry.due, uid.clone()));
            self.by_uid.insert(uid, entry);
        }
    }

    fn forget(&mut self, uid: &str) {
        if let Some(entry) = self.by_uid.remove(uid) {
            self.by_due.remove(&(entry.due, uid.to_owned()));
        }
    }

    fn put_off(&mut self, uid: &str, due: Timestamp) {
        if let Some(entry) = self.by_uid.get_mut(uid) {
            self.by_due.remove(&(entry.due, uid.to_owned()));
            entry.due = due;
            self.by_due.insert((due, uid.to_owned()));
        }
    }

    fn clear(&mut self) {
        self.by_uid.clear();
        self.by_due.clear();
    }

    fn get(&self, uid: &str) -> Option<&Retained> {
        self.by_uid.get(uid)
    }

    /// The uids due for deletion at `now`, and when the next of the others is due.
    pub fn due(&self, now: Timestamp) -> (Vec<String>, Option<Timestamp>) {
        let due_now = self
            .by_due
            .iter()
            .take_while(|(due, _)| *due <= now)
            .map(|(_, uid)| uid.clone())
            .collect();
        let next = self
            .by_due
            .iter()
            .map(|(due, _)| *due)
            .find(|due| *due > now);
        (due_now, next)
    }
}

/// Follows `event` in the record of finished Workloads.
fn follow(record: &mut Record, event: watcher::Event<Workload>, retention: Duration) {
    match event {
        watcher::Event::Init => record.clear(),
        watcher::Event::InitApply(workload) | watcher::Event::Apply(workload) => {
            match retained(&workload, retention) {
                // A deletion already asked for is not asked for again.
                Some((uid, entry)) if workload.meta().deletion_timestamp.is_none() => {
                    record.keep(uid, entry);
                }
                _ => {
                    if let Some(uid) = workload.uid() {
                        record.forget(&uid);
                    }
                }
            }
        }
        watcher::Event::Delete(workload) => {
            if let Some(uid) = workload.uid() {
                record.forget(&uid);
            }
        }
        watcher::Event::InitDone => {}
    }
}

/// Deletes finished Workloads once `retention` has elapsed since they finished, until the
/// watch ends.
pub async fn delete_finished(client: Client, retention: Duration, event_metrics: EventMetrics) {
    let all: Api<Workload> = Api::all(client.clone());
    let recorder = EventRecorder::new(
        client.clone(),
        EVENT_REPORTER,
        event_metrics.dropped(EVENT_REPORTER),
    );
    let mut events = watcher(all, watcher::Config::default())
        .default_backoff()
        .boxed();
    let mut record = Record::default();
    tracing::info!(
        ?retention,
        "deleting finished Workloads after their retention"
    );
    loop {
        let now = Timestamp::now();
        let (due_now, _) = record.due(now);
        for uid in due_now {
            let Some(entry) = record.get(&uid).cloned() else {
                continue;
            };
            if delete(&client, &recorder, &uid, &entry).await {
                record.forget(&uid);
            } else {
                record.put_off(
                    &uid,
                    now.checked_add(RETRY_INTERVAL).unwrap_or(Timestamp::MAX),
                );
            }
        }
        let (_, next) = record.due(Timestamp::now());
        let wait = next
            .and_then(|at| Duration::try_from(at.duration_since(Timestamp::now())).ok())
            .unwrap_or(IDLE_WAKE)
            .min(IDLE_WAKE);
        tokio::select! {
            event = events.next() => match event {
                Some(Ok(event)) => follow(&mut record, event, retention),
                Some(Err(error)) => tracing::warn!(%error, "watching Workloads for retention"),
                None => return,
            },
            () = tokio::time::sleep(wait) => {}
        }
    }
}

/// Deletes one retained Workload; returns whether it is gone or going (false: try again).
async fn delete(client: &Client, recorder: &EventRecorder, uid: &str, entry: &Retained) -> bool {
    let api: Api<Workload> = Api::namespaced(client.clone(), &entry.namespace);
    let workload = match api.get_opt(&entry.name).await {
        Ok(Some(workload)) if workload.uid().as_deref() == Some(uid) => workload,
        Ok(_) => return true,
        Err(error) => {
            tracing::warn!(%error, namespace = %entry.namespace, name = %entry.name, "cannot read a finished Workload");
            return false;
        }
    };
    if workload.meta().deletion_timestamp.is_some() {
        return true;
    }
    let removed = finalizers::remove(&api, &workload, RESOURCE_IN_USE_FINALIZER).await;
    let params = DeleteParams {
        preconditions: Some(Preconditions {
            uid: Some(uid.to_owned()),
            resource_version: None,
        }),
        ..DeleteParams::default()
    };
    let deleted = match removed {
        Ok(()) => api.delete(&entry.name, &params).await.map(|_| ()),
        Err(error) => Err(error),
    };
    match deleted {
        Ok(()) => {
            tracing::info!(namespace = %entry.namespace, name = %entry.name, "deleted a finished Workload after its retention");
            let event = Event {
                type_: EventType::Normal,
                reason: "Deleted".to_owned(),
                note: DELETED_MESSAGE.to_owned(),
            };
            recorder.record(&workload.object_ref(&()), &event);
            true
        }
        Err(kube::Error::Api(status)) if status.code == 404 => true,
        // Changed since it was read (its finalizers) or replaced (uid): look again soon.
        Err(error) => {
            tracing::warn!(%error, namespace = %entry.namespace, name = %entry.name, "cannot delete a finished Workload");
            false
        }
    }
}

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;

    use super::*;
    use crate::testing::objects::workload;

    fn at(second: i64) -> Timestamp {
        Timestamp::from_second(second).unwrap()
    }

    #[test]
    fn a_finished_workload_is_due_its_retention_after_it_finished() {
        let finished = workload("ns", "wl")
            .condition("Finished", "True", "Succeeded", "done", 1_000)
            .build();
        let (uid, entry) = retained(&finished, Duration::from_secs(60)).expect("finished");
        assert_eq!(Some(uid), finished.uid());
        assert_eq!(
            entry,
            Retained {
                namespace: "ns".to_owned(),
                name: "wl".to_owned(),
                due: at(1_060),
            }
        );
    }

    #[test]
    fn unfinished_workloads_are_not_retained() {
        let pending = workload("ns", "wl")
            .condition("QuotaReserved", "False", "Pending", "waiting", 1_000)
            .build();
        let unfinished = workload("ns", "wl2")
            .condition("Finished", "False", "Pending", "", 1_000)
            .build();
        assert_eq!(retained(&pending, Duration::from_secs(60)), None);
        assert_eq!(retained(&unfinished, Duration::from_secs(60)), None);
    }

    #[test]
    fn due_gives_what_is_due_now_and_when_the_next_is() {
        let entry = |name: &str, due: i64| Retained {
            namespace: "ns".to_owned(),
            name: name.to_owned(),
            due: at(due),
        };
        let mut record = Record::default();
        for (uid, name, due) in [
            ("uid-b", "b", 100),
            ("uid-a", "a", 50),
            ("uid-c", "c", 300),
            ("uid-d", "d", 200),
        ] {
            record.keep(uid.to_owned(), entry(name, due));
        }
        assert_eq!(
            record.due(at(100)),
            (vec!["uid-a".to_owned(), "uid-b".to_owned()], Some(at(200)))
        );
        assert_eq!(record.due(at(10)), (Vec::new(), Some(at(50))));
        assert_eq!(
            record.due(at(300)).1,
            None,
            "nothing is due later than the last"
        );
        record.put_off("uid-a", at(250));
        record.forget("uid-b");
        assert_eq!(record.due(at(100)), (Vec::new(), Some(at(200))));
        assert_eq!(
            record.due(at(260)),
            (vec!["uid-d".to_owned(), "uid-a".to_owned()], Some(at(300))),
            "in the order they fall due"
        );
        record.keep("uid-a".to_owned(), entry("a", 50));
        assert_eq!(
            record.get("uid-a").map(|entry| entry.due),
            Some(at(250)),
            "a put-off deletion stays put off when the Workload changes"
        );
    }

    #[test]
    fn the_record_follows_finishing_deletion_and_relists() {
        let retention = Duration::from_secs(60);
        let pending = workload("ns", "wl").build();
        let finished = workload("ns", "wl")
            .condition("Finished", "True", "Succeeded", "done", 1_000)
            .build();
        let uid = finished.uid().expect("uid");
        let mut record = Record::default();
        follow(
            &mut record,
            watcher::Event::Apply(pending.clone()),
            retention,
        );
        assert_eq!(record.due(at(0)), (Vec::new(), None));
        follow(
            &mut record,
            watcher::Event::Apply(finished.clone()),
            retention,
        );
        assert_eq!(record.get(&uid).map(|entry| entry.due), Some(at(1_060)));
        follow(
            &mut record,
            watcher::Event::Delete(finished.clone()),
            retention,
        );
        assert_eq!(record.due(at(0)), (Vec::new(), None));
        follow(&mut record, watcher::Event::Init, retention);
        follow(
            &mut record,
            watcher::Event::InitApply(finished.clone()),
            retention,
        );
        follow(&mut record, watcher::Event::InitDone, retention);
        assert_eq!(record.due(at(2_000)), (vec![uid.clone()], None));
        follow(&mut record, watcher::Event::Init, retention);
        assert_eq!(
            record.due(at(2_000)),
            (Vec::new(), None),
            "a relist starts the record again"
        );
    }
}
