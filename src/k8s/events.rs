//! Kubernetes Events recorded on jobs and Workloads (`events.k8s.io/v1`, shown by
//! `kubectl describe`), through the one recorder set-up every reporter shares. Recording is best
//! effort: a failure is logged, never retried. Notes are truncated as Kueue truncates them.

use jiff::Timestamp;
use k8s_openapi::api::core::v1::ObjectReference;
use k8s_openapi::api::events::v1::Event as K8sEvent;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};
use kube::{
    Api, Client,
    api::PostParams,
    runtime::events::{EventType, Reporter},
};

use crate::k8s::conditions::{MAX_EVENT_MESSAGE, truncate_message};

/// Name the job controllers report events as (Kueue's job reconcilers use the same).
pub const JOB_CONTROLLER_NAME: &str = "kueue-job-controller";

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
/// Each record is one create. kube's `Recorder` folds repeats into series, but it keeps every
/// event of the last six minutes and sweeps them all, under one lock, at each publish: with
/// thousands of Workloads that cost more CPU and memory than the scheduling did.
#[derive(Clone)]
pub struct EventRecorder {
    client: Client,
    reporter: Reporter,
}

impl EventRecorder {
    /// A recorder reporting as `controller`, from the instance named by `POD_NAME`.
    pub fn new(client: Client, controller: &str) -> Self {
        let reporter = Reporter {
            controller: controller.to_string(),
            instance: std::env::var("POD_NAME").ok(),
        };
        EventRecorder { client, reporter }
    }

    /// Records the event on the object; failures are logged.
    pub async fn record(&self, object: &ObjectReference, event: &Event) {
        let body = event_object(&self.reporter, object, event, Timestamp::now());
        let namespace = object.namespace.as_deref().unwrap_or("default");
        let events: Api<K8sEvent> = Api::namespaced(self.client.clone(), namespace);
        if let Err(error) = events.create(&PostParams::default(), &body).await {
            tracing::warn!(
                reason = %event.reason,
                name = object.name.as_deref().unwrap_or_default(),
                namespace = object.namespace.as_deref().unwrap_or_default(),
                %error,
                "cannot record event"
            );
        }
    }
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
    use pretty_assertions::assert_eq;
    use serde_json::json;

    use super::*;

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
