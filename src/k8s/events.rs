//! Kubernetes Events recorded on jobs and Workloads (`events.k8s.io/v1`, shown by
//! `kubectl describe`), through the one recorder set-up every reporter shares. Recording is best
//! effort: a failure is logged, never retried. Notes are truncated as Kueue truncates them.

use k8s_openapi::api::core::v1::ObjectReference;
use kube::{
    Client,
    runtime::events::{Event as KubeEvent, EventType, Recorder, Reporter},
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
#[derive(Clone)]
pub struct EventRecorder {
    recorder: Recorder,
}

impl EventRecorder {
    /// A recorder reporting as `controller`, from the instance named by `POD_NAME`.
    pub fn new(client: Client, controller: &str) -> Self {
        let reporter = Reporter {
            controller: controller.to_string(),
            instance: std::env::var("POD_NAME").ok(),
        };
        EventRecorder {
            recorder: Recorder::new(client, reporter),
        }
    }

    /// Records the event on the object; failures are logged.
    pub async fn record(&self, object: &ObjectReference, event: &Event) {
        let published = self
            .recorder
            .publish(
                &KubeEvent {
                    type_: event.type_,
                    reason: event.reason.clone(),
                    note: Some(truncate_message(&event.note, MAX_EVENT_MESSAGE)),
                    action: event.reason.clone(),
                    secondary: None,
                },
                object,
            )
            .await;
        if let Err(error) = published {
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
