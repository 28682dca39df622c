//! Kubernetes Events recorded on jobs and Workloads (`events.k8s.io/v1`, shown by
//! `kubectl describe`), through the one recorder set-up every reporter shares. Recording is best
//! effort: events are written in the background, a failure is logged, never retried, and an
//! event that finds the backlog full is dropped (and counted: `kuota_events_dropped_total`).
//! Notes are truncated as Kueue truncates them.

use std::sync::Arc;

use futures::StreamExt;
use jiff::Timestamp;
use k8s_openapi::api::core::v1::ObjectReference;
use k8s_openapi::api::events::v1::Event as K8sEvent;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};
use kube::{
    Api, Client,
    api::PostParams,
    runtime::events::{EventType, Reporter},
};
use prometheus_client::metrics::counter::Counter;
use tokio::sync::mpsc::{self, error::TrySendError};

use crate::k8s::conditions::{MAX_EVENT_MESSAGE, truncate_message};

/// Name the job controllers report events as (Kueue's job reconcilers use the same).
pub const JOB_CONTROLLER_NAME: &str = "kueue-job-controller";

/// Events a recorder writes at once. Events only describe the status writes, yet on Kueue's
/// scheduler benchmark writing them 8 at a time took a fifth of the API server's CPU and made
/// the run a fifth longer than writing none (BENCHMARKS.md). One at a time keeps up while the
/// API server has room, and when it is saturated leaves it to the status writes: the backlog
/// fills and the rest are dropped, as Kueue's rate-limited recorder drops them.
const EVENTS_IN_FLIGHT: usize = 1;

/// Events that may wait to be written; past that new ones are dropped, as client-go's
/// broadcaster (Kueue's recorder) drops events once 1,000 wait.
const EVENT_BACKLOG: usize = 1000;

/// One event to record: type, Kueue's reason and the human-readable note.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Event {
    /// `Normal` or `Warning`.
    pub type_: EventType,
    /// Reason, e.g. `CreatedWorkload`.
    pub reason: String,
    /// Message, e.g. `Created Workload: ns/job-sample-8c7e2`.
    pub note: String,
}

/// Records [`Event`]s on objects.
///
/// Each record is one create, queued for a background writer that runs as long as a clone of
/// the recorder lives. kube's `Recorder` folds repeats into series, but it keeps every event of
/// the last six minutes and sweeps them all, under one lock, at each publish: with thousands of
/// Workloads that cost more CPU and memory than the scheduling did.
#[derive(Clone)]
pub struct EventRecorder {
    reporter: Arc<Reporter>,
    backlog: mpsc::Sender<K8sEvent>,
    /// Events dropped so far (`kuota_events_dropped_total` of this reporter).
    dropped: Counter,
}

impl EventRecorder {
    /// A recorder reporting as `controller`, from the instance named by `POD_NAME`, counting
    /// the events it drops in `dropped`. Starts its writer on the current Tokio runtime.
    pub fn new(client: Client, controller: &str, dropped: Counter) -> Self {
        let reporter = Reporter {
            controller: controller.to_string(),
            instance: std::env::var("POD_NAME").ok(),
        };
        let (backlog, queued) = mpsc::channel(EVENT_BACKLOG);
        tokio::spawn(write_events(client, queued));
        EventRecorder {
            reporter: Arc::new(reporter),
            backlog,
            dropped,
        }
    }

    /// Queues the event on the object for writing; drops it when the backlog is full.
    pub fn record(&self, object: &ObjectReference, event: &Event) {
        let body = event_object(&self.reporter, object, event, Timestamp::now());
        if let Err(TrySendError::Full(_)) = self.backlog.try_send(body) {
            let dropped = self.dropped.inc() + 1;
            // One line per thousand: a slow API server drops many, and logging each would add
            // to what is already too much.
            if dropped % 1000 == 1 {
                tracing::warn!(
                    reason = %event.reason,
                    name = object.name.as_deref().unwrap_or_default(),
                    namespace = object.namespace.as_deref().unwrap_or_default(),
                    dropped,
                    "dropping events: {EVENT_BACKLOG} wait to be written"
                );
            }
        }
    }
}

/// Writes the queued events, [`EVENTS_IN_FLIGHT`] at a time, oldest first, until every
/// recorder is gone.
async fn write_events(client: Client, mut queued: mpsc::Receiver<K8sEvent>) {
    futures::stream::poll_fn(|context| queued.poll_recv(context))
        .for_each_concurrent(EVENTS_IN_FLIGHT, |event| {
            let client = client.clone();
            async move {
                let namespace = event.metadata.namespace.as_deref().unwrap_or("default");
                let events: Api<K8sEvent> = Api::namespaced(client, namespace);
                if let Err(error) = events.create(&PostParams::default(), &event).await {
                    let regarding = event.regarding.as_ref();
                    tracing::warn!(
                        reason = event.reason.as_deref().unwrap_or_default(),
                        name = regarding.and_then(|object| object.name.as_deref()).unwrap_or_default(),
                        namespace = regarding.and_then(|object| object.namespace.as_deref()).unwrap_or_default(),
                        %error,
                        "cannot record event"
                    );
                }
            }
        })
        .await;
}

/// The `events.k8s.io/v1` Event for `event` on `object` at `now`, named and filled as kube's
/// recorder names and fills a new one.
fn event_object(
    reporter: &Reporter,
    object: &ObjectReference,
    event: &Event,
    now: Timestamp,
) -> K8sEvent {
    K8sEvent {
        action: Some(event.reason.clone()),
        reason: Some(event.reason.clone()),
        event_time: Some(MicroTime(now)),
        regarding: Some(object.clone()),
        note: Some(truncate_message(&event.note, MAX_EVENT_MESSAGE)),
        metadata: ObjectMeta {
            namespace: object.namespace.clone(),
            name: Some(format!(
                "{}.{:x}",
                object.name.as_deref().unwrap_or(&reporter.controller),
                now.as_nanosecond()
            )),
            ..ObjectMeta::default()
        },
        reporting_controller: Some(reporter.controller.clone()),
        reporting_instance: Some(
            reporter
                .instance
                .clone()
                .unwrap_or_else(|| reporter.controller.clone()),
        ),
        type_: Some(match event.type_ {
            EventType::Normal => "Normal".to_owned(),
            EventType::Warning => "Warning".to_owned(),
        }),
        ..K8sEvent::default()
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use axum::http::{Request, Response};
    use pretty_assertions::assert_eq;
    use serde_json::json;

    use super::*;

    fn workload(name: &str) -> ObjectReference {
        ObjectReference {
            api_version: Some("kueue.x-k8s.io/v1beta2".to_owned()),
            kind: Some("Workload".to_owned()),
            name: Some(name.to_owned()),
            namespace: Some("ns".to_owned()),
            ..ObjectReference::default()
        }
    }

    #[tokio::test(flavor = "current_thread")]
    async fn events_beyond_the_backlog_are_dropped_and_few_are_written_at_once() {
        // An API server that takes every request and answers none.
        let requests = Arc::new(AtomicUsize::new(0));
        let seen = Arc::clone(&requests);
        let service = tower::service_fn(move |_: Request<kube::client::Body>| {
            seen.fetch_add(1, Ordering::Relaxed);
            futures::future::pending::<Result<Response<axum::body::Body>, std::convert::Infallible>>(
            )
        });
        let dropped = Counter::default();
        let recorder = EventRecorder::new(
            Client::new(service, "default"),
            "kueue-admission",
            dropped.clone(),
        );
        let event = Event {
            type_: EventType::Normal,
            reason: "QuotaReserved".to_owned(),
            note: "Quota reserved in ClusterQueue cq".to_owned(),
        };

        // The writer has not run yet: the backlog takes EVENT_BACKLOG, the rest are dropped.
        for index in 0..EVENT_BACKLOG + 5 {
            recorder.record(&workload(&format!("wl-{index}")), &event);
        }
        assert_eq!(dropped.get(), 5);

        for _ in 0..100 {
            tokio::task::yield_now().await;
        }
        assert_eq!(requests.load(Ordering::Relaxed), EVENTS_IN_FLIGHT);
        // What the writer took made room for as many.
        for index in 0..EVENTS_IN_FLIGHT + 1 {
            recorder.record(&workload(&format!("late-{index}")), &event);
        }
        assert_eq!(dropped.get(), 6);
    }

    #[test]
    fn the_event_names_its_object_reporter_and_truncated_note() {
        let reporter = Reporter {
            controller: "kueue-admission".to_owned(),
            instance: None,
        };
        let object = ObjectReference {
            api_version: Some("kueue.x-k8s.io/v1beta2".to_owned()),
            kind: Some("Workload".to_owned()),
            name: Some("wl".to_owned()),
            namespace: Some("ns".to_owned()),
            uid: Some("uid-1".to_owned()),
            ..ObjectReference::default()
        };
        let event = Event {
            type_: EventType::Warning,
            reason: "Pending".to_owned(),
            note: "x".repeat(MAX_EVENT_MESSAGE + 10),
        };
        let now = Timestamp::from_second(1_000).unwrap();
        let value = serde_json::to_value(event_object(&reporter, &object, &event, now)).unwrap();
        let note = value["note"].as_str().unwrap().to_owned();
        assert_eq!(note.len(), MAX_EVENT_MESSAGE);
        assert!(note.ends_with(" ..."));
        assert_eq!(
            value,
            json!({
                "apiVersion": "events.k8s.io/v1",
                "kind": "Event",
                "metadata": {"name": "wl.e8d4a51000", "namespace": "ns"},
                "action": "Pending",
                "reason": "Pending",
                "eventTime": "1970-01-01T00:16:40.000000Z",
                "note": note,
                "regarding": {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload", "name": "wl", "namespace": "ns", "uid": "uid-1"},
                "reportingController": "kueue-admission",
                "reportingInstance": "kueue-admission",
                "type": "Warning",
            })
        );
    }
}
