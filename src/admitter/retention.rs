//! `objectRetentionPolicies.workloads.afterFinished`: a Workload that has been finished for that
//! long is deleted, as Kueue's Workload controller deletes it (Kuota's finalizer taken off
//! first, so that the deletion does not hang; event `Deleted`). The admitter's Workload store
//! lets finished Workloads go, so retention keeps its own small record of them, and only when
//! the option is set.

use std::collections::HashMap;
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

/// The uids due for deletion at `now`, and when the next of the others is due.
pub fn due(
    retained: &HashMap<String, Retained>,
    now: Timestamp,
) -> (Vec<String>, Option<Timestamp>) {
    let mut due_now: Vec<String> = retained
        .iter()
        .filter(|(_, entry)| entry.due <= now)
        .map(|(uid, _)| uid.clone())
        .collect();
    due_now.sort();
    let next = retained
        .values()
        .map(|entry| entry.due)
        .filter(|at| *at > now)
        .min();
    (due_now, next)
}

/// Follows `event` in the record of finished Workloads.
fn follow(
    retained: &mut HashMap<String, Retained>,
    event: watcher::Event<Workload>,
    retention: Duration,
) {
    match event {
        watcher::Event::Init => retained.clear(),
        watcher::Event::InitApply(workload) | watcher::Event::Apply(workload) => {
            match self::retained(&workload, retention) {
                // A deletion already asked for is not asked for again.
                Some((uid, entry)) if workload.meta().deletion_timestamp.is_none() => {
                    retained.entry(uid).or_insert(entry);
                }
                _ => {
                    if let Some(uid) = workload.uid() {
                        retained.remove(&uid);
                    }
                }
            }
        }
        watcher::Event::Delete(workload) => {
            if let Some(uid) = workload.uid() {
                retained.remove(&uid);
            }
        }
        watcher::Event::InitDone => {}
    }
}

/// Deletes finished Workloads once `retention` has elapsed since they finished, until the
/// watch ends.
pub async fn delete_finished(client: Client, retention: Duration) {
    let all: Api<Workload> = Api::all(client.clone());
    let recorder = EventRecorder::new(client.clone(), EVENT_REPORTER);
    let mut events = watcher(all, watcher::Config::default())
        .default_backoff()
        .boxed();
    let mut retained: HashMap<String, Retained> = HashMap::new();
    tracing::info!(
        ?retention,
        "deleting finished Workloads after their retention"
    );
    loop {
        let now = Timestamp::now();
        let (due_now, _) = due(&retained, now);
        for uid in due_now {
            let Some(entry) = retained.get(&uid).cloned() else {
                continue;
            };
            if delete(&client, &recorder, &uid, &entry).await {
                retained.remove(&uid);
            } else if let Some(entry) = retained.get_mut(&uid) {
                entry.due = now.checked_add(RETRY_INTERVAL).unwrap_or(Timestamp::MAX);
            }
        }
        let (_, next) = due(&retained, Timestamp::now());
        let wait = next
            .and_then(|at| Duration::try_from(at.duration_since(Timestamp::now())).ok())
            .unwrap_or(IDLE_WAKE)
            .min(IDLE_WAKE);
        tokio::select! {
            event = events.next() => match event {
                Some(Ok(event)) => follow(&mut retained, event, retention),
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
            recorder.record(&workload.object_ref(&()), &event).await;
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
        let retained: HashMap<String, Retained> = [
            ("uid-b".to_owned(), entry("b", 100)),
            ("uid-a".to_owned(), entry("a", 50)),
            ("uid-c".to_owned(), entry("c", 300)),
            ("uid-d".to_owned(), entry("d", 200)),
        ]
        .into_iter()
        .collect();
        assert_eq!(
            due(&retained, at(100)),
            (vec!["uid-a".to_owned(), "uid-b".to_owned()], Some(at(200)))
        );
        assert_eq!(due(&retained, at(10)), (Vec::new(), Some(at(50))));
        assert_eq!(
            due(&retained, at(300)).1,
            None,
            "nothing is due later than the last"
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
        let mut record = HashMap::new();
        follow(
            &mut record,
            watcher::Event::Apply(pending.clone()),
            retention,
        );
        assert!(record.is_empty());
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
        assert!(record.is_empty());
        follow(&mut record, watcher::Event::Init, retention);
        follow(
            &mut record,
            watcher::Event::InitApply(finished.clone()),
            retention,
        );
        follow(&mut record, watcher::Event::InitDone, retention);
        assert_eq!(record.len(), 1);
        follow(&mut record, watcher::Event::Init, retention);
        assert!(record.is_empty(), "a relist starts the record again");
    }
}
