//! The ProvisioningRequest admission check (`kueue.x-k8s.io/provisioning-request`): asks the
//! cluster autoscaler for capacity before a Workload holding quota is admitted, through the
//! autoscaler's `autoscaling.x-k8s.io/v1` ProvisioningRequests.
//!
//! The autoscaler's CRD may be installed after Kuota starts (Kueue needs a restart then): the
//! check looks for the API every few seconds and starts its watches once it is served.

pub mod plan;
pub mod request;

use std::{sync::Arc, time::Duration};

use futures::StreamExt;
use jiff::Timestamp;
use k8s_openapi::api::core::v1::PodTemplate;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kube::{
    Api, Client, Resource, ResourceExt,
    api::{DeleteParams, Patch, PatchParams, PostParams},
    runtime::{
        WatchStreamExt,
        events::EventType,
        reflector::{self, Store},
        watcher,
    },
};
use serde_json::json;
use tokio::sync::Notify;

use crate::api::constants::MANAGED_LABEL;
use crate::api::v1beta2::{AdmissionCheck, ProvisioningRequestConfig, Workload};
use crate::k8s::conditions::set_condition;
use crate::k8s::events::{Event, EventRecorder};
use crate::metrics::EventMetrics;
use crate::stores::{Changed, Stores};
use plan::{Action, Snapshot};
use request::ProvisioningRequest;

/// How often the autoscaler's API is looked for until it is served.
const DISCOVERY_INTERVAL: Duration = Duration::from_secs(5);
/// Longest time between two passes when nothing changes (backoffs and missed events).
const RESYNC_INTERVAL: Duration = Duration::from_secs(10);
/// Time to gather changes before a pass.
const GATHER: Duration = Duration::from_millis(100);
/// Event reporter and field manager of the check's writes.
const EVENT_REPORTER: &str = "kueue-provisioning-request-controller";

/// Runs the check until the future is dropped: waits for the autoscaler's API, then keeps
/// the check states of Workloads holding quota in line with their ProvisioningRequests.
pub async fn run(client: Client, stores: Stores, cleanup_on_eviction: bool, events: EventMetrics) {
    while !serves_requests(&client).await {
        tokio::time::sleep(DISCOVERY_INTERVAL).await;
    }
    tracing::info!("ProvisioningRequests are served; the provisioning-request check runs");
    let changed = Arc::new(Notify::new());
    let requests_api: Api<ProvisioningRequest> = Api::all(client.clone());
    let managed = watcher::Config::default().labels(&format!("{MANAGED_LABEL}=true"));
    let (requests, requests_watch) = reflect(requests_api, managed, changed.clone());
    let (configs, configs_watch) = reflect(
        Api::<ProvisioningRequestConfig>::all(client.clone()),
        watcher::Config::default(),
        changed.clone(),
    );
    let check = Check {
        recorder: EventRecorder::new(
            client.clone(),
            EVENT_REPORTER,
            events.dropped(EVENT_REPORTER),
        ),
        client,
        stores,
        requests,
        configs,
        cleanup_on_eviction,
    };
    futures::join!(requests_watch, configs_watch, check.reconcile(changed));
}

/// Whether the API server serves `autoscaling.x-k8s.io/v1` provisioningrequests.
async fn serves_requests(client: &Client) -> bool {
    let group_version = ProvisioningRequest::api_version(&());
    match client.list_api_group_resources(&group_version).await {
        Ok(list) => list
            .resources
            .iter()
            .any(|resource| resource.name == ProvisioningRequest::plural(&())),
        Err(_) => false,
    }
}

/// A store of `K` filled by a watch that notifies `changed` on every event.
fn reflect<K>(
    api: Api<K>,
    config: watcher::Config,
    changed: Arc<Notify>,
) -> (Store<K>, impl Future<Output = ()>)
where
    K: Resource + Clone + std::fmt::Debug + serde::de::DeserializeOwned + Send + Sync + 'static,
    K::DynamicType: Default + Eq + std::hash::Hash + Clone + Send + Sync,
{
    let (reader, writer) = reflector::store();
    let stream = watcher(api, config.any_semantic())
        .default_backoff()
        .modify(|object: &mut K| object.meta_mut().managed_fields = None)
        .reflect(writer);
    let driver = async move {
        futures::pin_mut!(stream);
        while let Some(event) = stream.next().await {
            match event {
                Ok(_) => changed.notify_one(),
                Err(err) => tracing::warn!(%err, "watch error; retrying with backoff"),
            }
        }
    };
    (reader, driver)
}

struct Check {
    client: Client,
    recorder: EventRecorder,
    stores: Stores,
    requests: Store<ProvisioningRequest>,
    configs: Store<ProvisioningRequestConfig>,
    cleanup_on_eviction: bool,
}

impl Check {
    /// One pass after every batch of changes, and at least every [`RESYNC_INTERVAL`].
    async fn reconcile(&self, changed: Arc<Notify>) {
        let mut store_changes = self.stores.subscribe();
        let (Ok(()), Ok(())) = futures::join!(
            self.requests.wait_until_ready(),
            self.configs.wait_until_ready()
        ) else {
            tracing::error!("the ProvisioningRequest watches stopped before their first list");
            return;
        };
        loop {
            self.pass().await;
            let relevant = async {
                loop {
                    match store_changes.recv().await {
                        Ok(
                            Changed::Workload | Changed::AdmissionCheck | Changed::ResourceFlavor,
                        )
                        | Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => return,
                        Ok(_) => {}
                        Err(tokio::sync::broadcast::error::RecvError::Closed) => {
                            futures::future::pending::<()>().await;
                        }
                    }
                }
            };
            tokio::select! {
                () = relevant => {}
                () = changed.notified() => {}
                () = tokio::time::sleep(RESYNC_INTERVAL) => {}
            }
            tokio::time::sleep(GATHER).await;
        }
    }

    async fn pass(&self) {
        let (checks, configs, flavors, workloads, requests) = (
            self.stores.admission_checks.state(),
            self.configs.state(),
            self.stores.resource_flavors.state(),
            self.stores.workloads.state(),
            self.requests.state(),
        );
        let snapshot = Snapshot {
            checks: &checks,
            configs: &configs,
            flavors: &flavors,
            workloads: &workloads,
            requests: &requests,
            cleanup_on_eviction: self.cleanup_on_eviction,
            now: Timestamp::now(),
        };
        for action in plan::plan(&snapshot) {
            if let Err(error) = self.execute(&checks, action).await {
                tracing::warn!(%error, "provisioning-request check write failed; retried next pass");
            }
        }
    }

    async fn execute(
        &self,
        checks: &[Arc<AdmissionCheck>],
        action: Action,
    ) -> Result<(), kube::Error> {
        let params = PatchParams {
            field_manager: Some(EVENT_REPORTER.to_owned()),
            ..PatchParams::default()
        };
        match action {
            Action::SetActive { check, condition } => {
                let mut conditions = checks
                    .iter()
                    .find(|known| known.name_any() == check)
                    .and_then(|known| known.status.as_ref())
                    .map(|status| status.conditions.clone())
                    .unwrap_or_default();
                set_condition(&mut conditions, condition);
                let body = json!({"status": {"conditions": conditions}});
                Api::<AdmissionCheck>::all(self.client.clone())
                    .patch_status(&check, &params, &Patch::Merge(&body))
                    .await?;
            }
            Action::SetCheckStates {
                workload,
                states,
                notes,
            } => {
                let body = json!({
                    "metadata": {"resourceVersion": workload.resource_version()},
                    "status": {"admissionChecks": states},
                });
                let api: Api<Workload> = Api::namespaced(
                    self.client.clone(),
                    &workload.namespace().unwrap_or_default(),
                );
                match api
                    .patch_status(&workload.name_any(), &params, &Patch::Merge(&body))
                    .await
                {
                    Ok(_) => {}
                    // A newer version is in flight to the store; the next pass decides again.
                    Err(kube::Error::Api(status)) if status.code == 409 => return Ok(()),
                    Err(error) => return Err(error),
                }
                for note in notes {
                    self.record(&workload, EventType::Normal, "AdmissionCheckUpdated", note);
                }
            }
            Action::Provision {
                workload,
                templates,
                request,
            } => self.provision(&workload, templates, *request).await?,
            Action::Delete { namespace, name } => {
                let api: Api<ProvisioningRequest> =
                    Api::namespaced(self.client.clone(), &namespace);
                match api.delete(&name, &DeleteParams::background()).await {
                    Ok(_) => {}
                    Err(kube::Error::Api(status)) if status.code == 404 => {}
                    Err(error) => return Err(error),
                }
            }
        }
        Ok(())
    }

    fn record(&self, workload: &Workload, type_: EventType, reason: &str, note: String) {
        let event = Event {
            type_,
            reason: reason.to_owned(),
            note,
        };
        self.recorder.record(&workload.object_ref(&()), &event);
    }

    /// Kueue's order: the PodTemplates (owned by the Workload), the request, then the templates
    /// handed to the request so they go with it. What exists already (a pass that ran before
    /// the store showed its writes) is left as it is.
    async fn provision(
        &self,
        workload: &Workload,
        templates: Vec<PodTemplate>,
        request: ProvisioningRequest,
    ) -> Result<(), kube::Error> {
        let namespace = workload.namespace().unwrap_or_default();
        let template_api: Api<PodTemplate> = Api::namespaced(self.client.clone(), &namespace);
        let names: Vec<String> = templates.iter().map(ResourceExt::name_any).collect();
        for template in templates {
            let name = template.name_any();
            match template_api.create(&PostParams::default(), &template).await {
                Ok(_) => {}
                Err(kube::Error::Api(status)) if status.code == 409 => {}
                Err(error) => {
                    let note = format!("Error creating PodTemplate {name:?}: {error}");
                    self.record(workload, EventType::Warning, "FailedCreate", note);
                    return Err(error);
                }
            }
        }
        let request_api: Api<ProvisioningRequest> =
            Api::namespaced(self.client.clone(), &namespace);
        let created = match request_api.create(&PostParams::default(), &request).await {
            Ok(created) => created,
            Err(kube::Error::Api(status)) if status.code == 409 => return Ok(()),
            Err(error) => {
                let note = format!(
                    "Error creating ProvisioningRequest {:?}: {error}",
                    request.name_any()
                );
                self.record(workload, EventType::Warning, "FailedCreate", note);
                return Err(error);
            }
        };
        let note = format!("Created ProvisioningRequest: {:?}", created.name_any());
        self.record(
            workload,
            EventType::Normal,
            "ProvisioningRequestCreated",
            note,
        );
        let owner = OwnerReference {
            api_version: ProvisioningRequest::api_version(&()).into_owned(),
            kind: ProvisioningRequest::kind(&()).into_owned(),
            name: created.name_any(),
            uid: created.uid().unwrap_or_default(),
            controller: Some(true),
            block_owner_deletion: Some(true),
        };
        let body = json!({"metadata": {"ownerReferences": [owner]}});
        for name in names {
            template_api
                .patch(&name, &PatchParams::default(), &Patch::Merge(&body))
                .await?;
        }
        Ok(())
    }
}
