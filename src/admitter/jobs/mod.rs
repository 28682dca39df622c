//! The job side of the admitter: one kube-runtime `Controller` per enabled job framework keeps a
//! Workload for each managed job, starts the job once its Workload is admitted, stops it when
//! the Workload is evicted and finishes the Workload when the job finishes (Kueue's
//! `jobframework` reconciler). A second controller, over the metadata of job-owned Workloads,
//! finishes the Workloads whose job is gone (releasing their quota) and lets go of them, so the
//! garbage collector can delete them. Its watch is the only one of job-owned Workloads: it also
//! wakes the controller of each changed Workload's job, as one informer does for all of Kueue's
//! reconcilers.
//!
//! The decisions are pure ([`reconcile_decision`]); this module reads their inputs (the job from
//! the controller's cache, its Workload fresh from the API server, flavors, namespaces and
//! priority classes from the shared [`Stores`]) and carries out the one step decided. Writes
//! are guarded by `resourceVersion`; a conflict re-reads and retries.

mod decision;
mod status;

pub use status::requeue_backoff;
pub mod workload_builder;

#[cfg(test)]
mod tests;

use std::{
    collections::BTreeMap,
    future::Future,
    sync::{Arc, RwLock},
    time::Duration,
};

use futures::{FutureExt, StreamExt, channel::mpsc, future::BoxFuture};
use jiff::Timestamp;
use json_patch::{PatchOperation, TestOperation, jsonptr::PointerBuf};
use k8s_openapi::api::core::v1::{Namespace, ObjectReference};
use kube::{
    Api, Client, Resource, ResourceExt,
    api::{DeleteParams, ListParams, Patch, PatchParams},
    core::{ApiResource, DynamicObject, PartialObjectMeta},
    runtime::{
        Controller, WatchStreamExt,
        controller::{Action, Config as ControllerConfig},
        reflector::{self, ObjectRef, Store},
        watcher,
    },
};
use serde_json::{Value, json};

pub use decision::{
    DecisionError, JobAction, JobInput, JobSettings, Parent, reconcile_decision, stop_step,
};

use crate::admitter::jobs::workload_builder::{PodPriorityClass, PriorityClasses, PriorityError};
use crate::admitter::writers::status_apply::apply_status;
use crate::api::constants::{JOB_UID_LABEL, RESOURCE_IN_USE_FINALIZER, condition};
use crate::api::v1beta2::{ResourceFlavorSpec, Workload, WorkloadStatus};
use crate::config::Configuration;
use crate::jobs::{self, FRAMEWORKS, JobFramework};
use crate::k8s::events::{Event, EventRecorder, JOB_CONTROLLER_NAME};
use crate::k8s::json::{self, merge_patch};
use crate::metrics::EventMetrics;
use crate::stores::{Stores, kept, strip_bookkeeping};

/// A Workload's metadata, as the controller of orphaned Workloads watches it.
type WorkloadMeta = PartialObjectMeta<Workload>;

/// Workers per controller when `controller.groupKindConcurrency` does not name the kind.
const DEFAULT_CONCURRENCY: u16 = 5;
/// How often a missing job API (CRD not installed) is looked for again.
const API_RETRY_INTERVAL: Duration = Duration::from_secs(30);
/// Retry delay after a write lost an optimistic-concurrency race.
const CONFLICT_RETRY: Duration = Duration::from_secs(1);
/// Retry delay after other errors.
const ERROR_RETRY: Duration = Duration::from_secs(10);

/// Why a reconcile failed; it is retried.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// An API call failed.
    #[error(transparent)]
    Kube(#[from] kube::Error),
    /// No decision could be made.
    #[error(transparent)]
    Decision(#[from] DecisionError),
    /// A priority class the job names does not exist.
    #[error(transparent)]
    MissingPriorityClass(#[from] PriorityError),
    /// The job changed since it was read (its patch's `resourceVersion` test failed).
    #[error("the job changed since it was read")]
    JobChanged,
    /// An object could not be turned into JSON.
    #[error("cannot serialize {what}: {source}")]
    Serialize {
        /// What was serialized.
        what: &'static str,
        /// Why it failed.
        source: serde_json::Error,
    },
}

impl Error {
    /// True when another writer changed the object first.
    fn is_conflict(&self) -> bool {
        matches!(self, Error::JobChanged)
            || matches!(self, Error::Kube(kube::Error::Api(status)) if status.code == 409)
    }
}

type Shutdown = futures::future::Shared<BoxFuture<'static, ()>>;

/// What every job controller shares.
struct SharedContext {
    client: Client,
    config: Arc<Configuration>,
    settings: JobSettings,
    stores: Stores,
    events: EventRecorder,
    /// The running framework controllers, by framework name.
    running: RwLock<BTreeMap<&'static str, RunningFramework>>,
}

/// What the other controllers reach of a running framework controller.
struct RunningFramework {
    /// Its cache of jobs.
    jobs: Store<DynamicObject>,
    /// Its job kind, as the references to its jobs carry it.
    api_resource: ApiResource,
    /// Wakes it for a job whose Workload changed.
    wake: mpsc::UnboundedSender<ObjectRef<DynamicObject>>,
}

/// One framework's controller context.
struct FrameworkContext {
    shared: Arc<SharedContext>,
    framework: &'static dyn JobFramework,
    api_resource: ApiResource,
}

/// Runs the job controllers until `shutdown` resolves: one controller per framework enabled in
/// `integrations.frameworks` (each waits, retrying every 30 s, until its API exists, as Kueue
/// waits for a CRD installed after it started), and the controller that lets go of Workloads
/// whose job is gone. The caller drives the stores and should wait until they are ready first
/// (flavors and priority classes are read from them; a miss is retried after 10 s).
pub async fn run_job_controllers(
    client: Client,
    config: Arc<Configuration>,
    stores: Stores,
    events: EventMetrics,
    shutdown: impl Future<Output = ()> + Send + 'static,
) {
    let shutdown: Shutdown = shutdown.boxed().shared();
    let shared = Arc::new(SharedContext {
        events: EventRecorder::new(
            client.clone(),
            JOB_CONTROLLER_NAME,
            events.dropped(JOB_CONTROLLER_NAME),
        ),
        settings: JobSettings::from_config(&config),
        client,
        config,
        stores,
        running: RwLock::new(BTreeMap::new()),
    });
    let mut controllers: Vec<BoxFuture<'static, ()>> = FRAMEWORKS
        .iter()
        .copied()
        .filter(|framework| shared.config.integrations.is_enabled(framework.name()))
        .map(|framework| run_framework(framework, shared.clone(), shutdown.clone()).boxed())
        .collect();
    controllers.push(run_orphan_controller(shared, shutdown).boxed());
    futures::future::join_all(controllers).await;
}

async fn run_framework(
    framework: &'static dyn JobFramework,
    shared: Arc<SharedContext>,
    shutdown: Shutdown,
) {
    let kind = framework.kind();
    let api_resource = kind.api_resource();
    let jobs: Api<DynamicObject> = Api::all_with(shared.client.clone(), &api_resource);
    if !wait_for_api(&jobs, framework, shutdown.clone()).await {
        return;
    }
    let concurrency = concurrency(&shared.config, &format!("{}.{}", kind.kind, kind.group));
    // The controller's cache of jobs is trimmed as the shared stores are: managedFields are
    // often much of a job, and finished jobs stay until their TTL.
    let writer = reflector::store::Writer::new(api_resource.clone());
    let reader = writer.as_reader();
    let trimmed_jobs = watcher(jobs, watcher::Config::default().any_semantic())
        .default_backoff()
        .modify(strip_bookkeeping)
        .reflect(writer)
        .applied_objects();
    // Woken by the orphan controller's watch of job-owned Workloads: one watch for all
    // frameworks, where `owns` would open one per framework, each decoding every Workload.
    let (wake, woken) = mpsc::unbounded();
    let controller = Controller::for_stream_with(trimmed_jobs, reader, api_resource.clone())
        .reconcile_on(woken)
        .with_config(ControllerConfig::default().concurrency(concurrency))
        .graceful_shutdown_on(shutdown);
    if let Ok(mut running) = shared.running.write() {
        let running_framework = RunningFramework {
            jobs: controller.store(),
            api_resource: api_resource.clone(),
            wake,
        };
        running.insert(framework.name(), running_framework);
    }
    tracing::info!(framework = framework.name(), "job controller started");
    let context = Arc::new(FrameworkContext {
        shared,
        framework,
        api_resource,
    });
    controller
        .run(reconcile_job, job_error_policy, context)
        .for_each(|result| async move {
            if let Err(error) = result {
                tracing::debug!(framework = framework.name(), %error, "job reconcile did not complete");
            }
        })
        .await;
}

/// Waits until the job kind's API is served; false when shut down first.
async fn wait_for_api(
    jobs: &Api<DynamicObject>,
    framework: &dyn JobFramework,
    shutdown: Shutdown,
) -> bool {
    loop {
        match jobs.list_metadata(&ListParams::default().limit(1)).await {
            Ok(_) => return true,
            Err(error) => tracing::warn!(
                framework = framework.name(),
                %error,
                "the API of an enabled framework is not available (is its CRD installed?); retrying in {}s",
                API_RETRY_INTERVAL.as_secs()
            ),
        }
        tokio::select! {
            () = tokio::time::sleep(API_RETRY_INTERVAL) => {}
            () = shutdown.clone() => return false,
        }
    }
}

fn concurrency(config: &Configuration, group_kind: &str) -> u16 {
    config
        .controller
        .group_kind_concurrency
        .get(group_kind)
        .and_then(|workers| u16::try_from(*workers).ok())
        .filter(|workers| *workers > 0)
        .unwrap_or(DEFAULT_CONCURRENCY)
}

fn job_error_policy(
    job: Arc<DynamicObject>,
    error: &Error,
    context: Arc<FrameworkContext>,
) -> Action {
    if error.is_conflict() {
        tracing::debug!(job = %key_of(job.as_ref()), %error, "conflict; retrying");
        return Action::requeue(CONFLICT_RETRY);
    }
    tracing::warn!(
        framework = context.framework.name(),
        job = %key_of(job.as_ref()),
        %error,
        "job reconcile failed; retrying"
    );
    Action::requeue(ERROR_RETRY)
}

#[tracing::instrument(skip_all, fields(framework = context.framework.name(), job = %key_of(object.as_ref())))]
async fn reconcile_job(
    object: Arc<DynamicObject>,
    context: Arc<FrameworkContext>,
) -> Result<Action, Error> {
    let shared = &context.shared;
    let framework = context.framework;
    let job = serde_json::to_value(object.as_ref()).map_err(|source| Error::Serialize {
        what: "job",
        source,
    })?;
    let namespace = object.namespace().unwrap_or_default();
    let namespace_labels = namespace_labels(shared, &namespace).await?;
    let parent = parent_of(shared, &object, &namespace).await?;
    let workloads: Api<Workload> = Api::namespaced(shared.client.clone(), &namespace);
    let uid = object.uid().unwrap_or_default();
    let workload = workloads
        .get_opt(&jobs::workload_name_for(framework, &job))
        .await?
        .filter(|workload| is_controlled_by(workload, &uid));
    let flavors = flavors(&shared.stores);
    let priority_classes = priority_classes(&shared.stores);
    let input = JobInput {
        framework,
        job: &job,
        namespace_labels: namespace_labels.as_ref(),
        parent,
        workload: workload.as_ref(),
        flavors: &flavors,
        priority_classes: &priority_classes,
        settings: &shared.settings,
        now: Timestamp::now(),
    };
    let action = reconcile_decision(&input)?;
    tracing::debug!(action = action.name(), "decided");
    let job_ref = object.object_ref(&context.api_resource);
    match action {
        JobAction::Ignore | JobAction::Nothing => Ok(Action::await_change()),
        JobAction::RequeueAfter(after) => Ok(Action::requeue(after)),
        JobAction::CreateWorkload(new) => {
            match workloads.create(&Default::default(), &new).await {
                Ok(created) => {
                    let note = format!("Created Workload: {namespace}/{}", created.name_any());
                    shared
                        .events
                        .record(&job_ref, &normal("CreatedWorkload", note));
                    Ok(Action::await_change())
                }
                // The cache had not seen it yet; the next reconcile finds it.
                Err(kube::Error::Api(status)) if status.code == 409 => {
                    Ok(Action::requeue(CONFLICT_RETRY))
                }
                Err(error) => Err(error.into()),
            }
        }
        JobAction::MissingPriorityClass(missing) => {
            if let PriorityError::WorkloadPriorityClassNotFound(_) = &missing {
                let event = Event {
                    type_: kube::runtime::events::EventType::Warning,
                    reason: "WorkloadPriorityClassNotFound".to_string(),
                    note: missing.to_string(),
                };
                shared.events.record(&job_ref, &event);
            }
            Err(missing.into())
        }
        JobAction::PatchJob { job: target, event } => {
            let jobs: Api<DynamicObject> =
                Api::namespaced_with(shared.client.clone(), &namespace, &context.api_resource);
            let patched = jobs
                .patch(
                    &object.name_any(),
                    &PatchParams::default(),
                    &Patch::Json::<()>(guarded_patch(&job, &target)),
                )
                .await;
            match patched {
                Ok(_) => {}
                // A failed `test` operation is answered with 422 Invalid.
                Err(kube::Error::Api(status)) if status.code == 422 => {
                    return Err(Error::JobChanged);
                }
                Err(error) => return Err(error.into()),
            }
            record(shared, &job_ref, event);
            Ok(Action::await_change())
        }
        JobAction::DeleteJob { event } => {
            let jobs: Api<DynamicObject> =
                Api::namespaced_with(shared.client.clone(), &namespace, &context.api_resource);
            match jobs
                .delete(&object.name_any(), &DeleteParams::background())
                .await
            {
                Ok(_) => record(shared, &job_ref, Some(event)),
                Err(kube::Error::Api(status)) if status.code == 404 => {}
                Err(error) => return Err(error.into()),
            }
            Ok(Action::await_change())
        }
        JobAction::ClearJobStartTime => {
            let jobs: Api<DynamicObject> =
                Api::namespaced_with(shared.client.clone(), &namespace, &context.api_resource);
            jobs.patch_status(
                &object.name_any(),
                &PatchParams::default(),
                &Patch::Merge(json!({"status": {"startTime": null}})),
            )
            .await?;
            Ok(Action::await_change())
        }
        other => {
            // Every remaining step writes the Workload the decision was made on.
            let Some(workload) = workload else {
                return Ok(Action::await_change());
            };
            apply_to_workload(shared, &workloads, &workload, other, &job_ref).await?;
            Ok(Action::await_change())
        }
    }
}

/// Carries out a step that writes the job's Workload.
async fn apply_to_workload(
    shared: &SharedContext,
    workloads: &Api<Workload>,
    workload: &Workload,
    action: JobAction,
    job_ref: &ObjectReference,
) -> Result<(), Error> {
    let name = workload.name_any();
    match action {
        JobAction::UpdateWorkloadSpec { spec, event } => {
            let old = to_json(&workload.spec, "workload spec")?;
            let new = to_json(spec.as_ref(), "workload spec")?;
            let body = json!({
                "metadata": {"resourceVersion": workload.resource_version()},
                "spec": merge_patch(&old, &new),
            });
            workloads
                .patch(&name, &PatchParams::default(), &Patch::Merge(&body))
                .await?;
            record(shared, job_ref, event);
        }
        JobAction::DeleteWorkload { event } => {
            if has_finalizer(workload) {
                remove_finalizer(workloads, workload).await?;
            }
            match workloads.delete(&name, &DeleteParams::background()).await {
                Ok(_) => record(shared, job_ref, Some(event)),
                Err(kube::Error::Api(status)) if status.code == 404 => {}
                Err(error) => return Err(error.into()),
            }
        }
        JobAction::PatchWorkloadStatus {
            status,
            job_event,
            workload_event,
        } => {
            patch_workload_status(workloads, workload, &status).await?;
            record(shared, job_ref, job_event);
            record(shared, &workload.object_ref(&()), workload_event);
        }
        JobAction::RemoveFinalizer { event } => {
            remove_finalizer(workloads, workload).await?;
            record(shared, job_ref, event);
        }
        JobAction::Ignore
        | JobAction::Nothing
        | JobAction::RequeueAfter(_)
        | JobAction::CreateWorkload(_)
        | JobAction::MissingPriorityClass(_)
        | JobAction::PatchJob { .. }
        | JobAction::DeleteJob { .. }
        | JobAction::ClearJobStartTime => {}
    }
    Ok(())
}

/// Labels of the namespace, from the cache or, for a namespace the cache has not seen yet,
/// from the API server; `None` when it does not exist.
async fn namespace_labels(
    shared: &SharedContext,
    namespace: &str,
) -> Result<Option<BTreeMap<String, String>>, Error> {
    if let Some(cached) = shared.stores.namespaces.get(&ObjectRef::new(namespace)) {
        return Ok(Some(cached.labels().clone()));
    }
    let namespaces: Api<Namespace> = Api::all(shared.client.clone());
    Ok(namespaces
        .get_opt(namespace)
        .await?
        .map(|namespace| namespace.labels().clone()))
}

/// Whether the job's controller is a job Kuota manages, and if so whether that job's Workload
/// is admitted (Kueue looks one level up the ownership chain per reconcile).
async fn parent_of(
    shared: &SharedContext,
    job: &DynamicObject,
    namespace: &str,
) -> Result<Parent, Error> {
    let Some(owner) = job
        .owner_references()
        .iter()
        .find(|owner| owner.controller == Some(true))
    else {
        return Ok(Parent::None);
    };
    let Some(framework) = enabled_framework(&shared.config, &owner.api_version, &owner.kind) else {
        return Ok(Parent::None);
    };
    let api_resource = framework.kind().api_resource();
    let parents: Api<DynamicObject> =
        Api::namespaced_with(shared.client.clone(), namespace, &api_resource);
    let Some(parent) = parents
        .get_opt(&owner.name)
        .await?
        .filter(|parent| parent.uid().as_deref() == Some(owner.uid.as_str()))
    else {
        return Ok(Parent::Missing);
    };
    let parent_json = to_json(&parent, "parent job")?;
    if !shared.settings.manage_jobs_without_queue_name && jobs::queue_name(&parent_json).is_none() {
        return Ok(Parent::Unmanaged);
    }
    let workloads: Api<Workload> = Api::namespaced(shared.client.clone(), namespace);
    let workload_admitted = workloads
        .get_opt(&jobs::workload_name_for(framework, &parent_json))
        .await?
        .is_some_and(|workload| {
            is_controlled_by(&workload, &owner.uid)
                && workload.is_condition_true(condition::ADMITTED)
                && !workload.is_condition_true(condition::FINISHED)
        });
    Ok(Parent::Managed { workload_admitted })
}

/// The enabled framework of this `apiVersion` and kind.
fn enabled_framework(
    config: &Configuration,
    api_version: &str,
    kind: &str,
) -> Option<&'static dyn JobFramework> {
    let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
    jobs::by_gvk(group, version, kind)
        .filter(|framework| config.integrations.is_enabled(framework.name()))
}

fn flavors(stores: &Stores) -> BTreeMap<String, ResourceFlavorSpec> {
    stores
        .resource_flavors
        .state()
        .iter()
        .map(|flavor| (flavor.name_any(), flavor.spec.clone()))
        .collect()
}

fn priority_classes(stores: &Stores) -> PriorityClasses {
    PriorityClasses {
        workload: stores
            .workload_priority_classes
            .state()
            .iter()
            .map(|class| (class.name_any(), class.spec.value))
            .collect(),
        pod: stores
            .priority_classes
            .state()
            .iter()
            .map(|class| {
                let priority = PodPriorityClass {
                    value: class.value,
                    global_default: class.global_default.unwrap_or(false),
                };
                (class.name_any(), priority)
            })
            .collect(),
    }
}

// === The Workload side: letting go of Workloads whose job is gone ===

/// Watches, as metadata only, the job-owned Workloads a gone job can leave behind: those that
/// still hold the `resource-in-use` finalizer and those that lost their owner reference (Kueue
/// finishes those too). A Workload that finishes with its job loses the finalizer and leaves the
/// store, so the store follows the live Workloads, not every Workload ever run, and holds no
/// pod templates (the shared store has those). Every change the watch sees, kept or not, wakes
/// the controller of the Workload's job.
async fn run_orphan_controller(shared: Arc<SharedContext>, shutdown: Shutdown) {
    let concurrency = concurrency(&shared.config, "Workload.kueue.x-k8s.io");
    let (reader, writer) = reflector::store();
    let config = watcher::Config::default()
        .labels(JOB_UID_LABEL)
        .any_semantic();
    let waker = shared.clone();
    let workloads = watcher(Api::<WorkloadMeta>::all(shared.client.clone()), config)
        .default_backoff()
        .modify(strip_bookkeeping)
        .inspect(move |event| {
            if let Ok(
                watcher::Event::Apply(workload)
                | watcher::Event::InitApply(workload)
                | watcher::Event::Delete(workload),
            ) = event
                && let Ok(running) = waker.running.read()
            {
                wake_owners(&running, workload);
            }
        })
        .filter_map(|event| futures::future::ready(kept(event, may_be_orphaned)))
        .reflect(writer)
        .touched_objects();
    Controller::for_stream(workloads, reader)
        .with_config(ControllerConfig::default().concurrency(concurrency))
        .graceful_shutdown_on(shutdown)
        .run(reconcile_workload, workload_error_policy, shared)
        .for_each(|result| async move {
            if let Err(error) = result {
                tracing::debug!(%error, "workload reconcile did not complete");
            }
        })
        .await;
}

/// Wakes the running controller of each job that owns `workload`, matching the owner
/// references by `apiVersion` and `kind` as kube's `owns` does.
fn wake_owners(running: &BTreeMap<&'static str, RunningFramework>, workload: &impl Resource) {
    let namespace = workload.meta().namespace.as_deref().unwrap_or_default();
    for owner in workload.owner_references() {
        let controller = running.values().find(|framework| {
            framework.api_resource.kind == owner.kind
                && framework.api_resource.api_version == owner.api_version
        });
        if let Some(framework) = controller {
            let job =
                ObjectRef::new_with(&owner.name, framework.api_resource.clone()).within(namespace);
            // A controller that stopped no longer needs waking.
            let _ = framework.wake.unbounded_send(job);
        }
    }
}

fn workload_error_policy(
    workload: Arc<WorkloadMeta>,
    error: &Error,
    _: Arc<SharedContext>,
) -> Action {
    if error.is_conflict() {
        return Action::requeue(CONFLICT_RETRY);
    }
    tracing::warn!(workload = %key_of(workload.as_ref()), %error, "workload reconcile failed; retrying");
    Action::requeue(ERROR_RETRY)
}

/// Whether the Workload's job still holds it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Owner {
    /// The job exists; its controller takes care of the Workload.
    Present,
    /// The job is being deleted: the Workload goes with it.
    Deleting,
    /// The job is gone, or the Workload lost its owner reference.
    Gone,
    /// Not Kuota's: owned by something that is not an enabled job kind.
    Foreign,
}

#[tracing::instrument(skip_all, fields(workload = %key_of(workload.as_ref())))]
async fn reconcile_workload(
    workload: Arc<WorkloadMeta>,
    shared: Arc<SharedContext>,
) -> Result<Action, Error> {
    let owner = owner_state(&shared, workload.as_ref()).await?;
    let namespace = workload.namespace().unwrap_or_default();
    let workloads: Api<Workload> = Api::namespaced(shared.client.clone(), &namespace);
    match owner {
        Owner::Present | Owner::Foreign => {}
        Owner::Deleting => {
            if has_finalizer(workload.as_ref()) {
                remove_finalizer(&workloads, workload.as_ref()).await?;
            }
        }
        Owner::Gone => {
            // The store holds metadata only: finishing needs the Workload's status.
            let Some(mut current) = workloads.get_opt(&workload.name_any()).await? else {
                return Ok(Action::await_change());
            };
            if current.metadata.deletion_timestamp.is_none()
                && shared.settings.finish_orphaned_workloads
                && !current.is_condition_true(condition::FINISHED)
            {
                let finished = status::finish_orphaned(&current, Timestamp::now());
                current = patch_workload_status(&workloads, &current, &finished).await?;
            }
            if has_finalizer(&current) {
                remove_finalizer(&workloads, &current).await?;
            }
        }
    }
    Ok(Action::await_change())
}

async fn owner_state(shared: &SharedContext, workload: &impl Resource) -> Result<Owner, Error> {
    let Some(owner) = workload
        .owner_references()
        .iter()
        .find(|owner| owner.controller == Some(true))
    else {
        // Orphaned (the job was deleted with `--cascade=orphan`) or deleted without its job.
        return Ok(if workload.owner_references().is_empty() {
            Owner::Gone
        } else {
            Owner::Foreign
        });
    };
    let Some(framework) = enabled_framework(&shared.config, &owner.api_version, &owner.kind) else {
        return Ok(Owner::Foreign);
    };
    let namespace = workload.namespace().unwrap_or_default();
    // The controller's cache answers the common case without a request.
    let cached = shared.running.read().ok().and_then(|running| {
        let controller = running.get(framework.name())?;
        let job = ObjectRef::new_with(&owner.name, controller.api_resource.clone());
        controller.jobs.get(&job.within(&namespace))
    });
    if workload.meta().deletion_timestamp.is_none()
        && cached.as_ref().is_some_and(|job| {
            job.uid().as_deref() == Some(owner.uid.as_str())
                && job.metadata.deletion_timestamp.is_none()
        })
    {
        return Ok(Owner::Present);
    }
    let jobs: Api<DynamicObject> = Api::namespaced_with(
        shared.client.clone(),
        &namespace,
        &framework.kind().api_resource(),
    );
    Ok(match jobs.get_opt(&owner.name).await? {
        Some(job) if job.uid().as_deref() == Some(owner.uid.as_str()) => {
            if job.metadata.deletion_timestamp.is_some() {
                Owner::Deleting
            } else {
                Owner::Present
            }
        }
        _ => Owner::Gone,
    })
}

// === Writes ===

/// Writes a Workload's status as Kueue writes it (see [`apply_status`]); returns the updated
/// Workload.
async fn patch_workload_status(
    workloads: &Api<Workload>,
    workload: &Workload,
    new: &WorkloadStatus,
) -> Result<Workload, Error> {
    Ok(apply_status(workloads, workload, new).await?)
}

async fn remove_finalizer(
    workloads: &Api<Workload>,
    workload: &impl Resource,
) -> Result<(), Error> {
    let remaining: Vec<&String> = workload
        .finalizers()
        .iter()
        .filter(|finalizer| *finalizer != RESOURCE_IN_USE_FINALIZER)
        .collect();
    let body = json!({
        "metadata": {
            "resourceVersion": workload.resource_version(),
            "finalizers": remaining,
        }
    });
    match workloads
        .patch(
            &workload.name_any(),
            &PatchParams::default(),
            &Patch::Merge(&body),
        )
        .await
    {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(status)) if status.code == 404 => Ok(()),
        Err(error) => Err(error.into()),
    }
}

fn record(shared: &SharedContext, object: &ObjectReference, event: Option<Event>) {
    if let Some(event) = event {
        shared.events.record(object, &event);
    }
}

/// The JSON patch from `current` to `target`, applied only if the object was not changed since
/// it was read (a `test` of its `resourceVersion` comes first).
pub fn guarded_patch(current: &Value, target: &Value) -> json_patch::Patch {
    let mut patch = json_patch::diff(current, target);
    if let Some(version) = json::at(current, "/metadata/resourceVersion") {
        patch.0.insert(
            0,
            PatchOperation::Test(TestOperation {
                path: PointerBuf::from_tokens(["metadata", "resourceVersion"]),
                value: version.clone(),
            }),
        );
    }
    patch
}

fn to_json<T: serde::Serialize>(value: &T, what: &'static str) -> Result<Value, Error> {
    serde_json::to_value(value).map_err(|source| Error::Serialize { what, source })
}

fn normal(reason: &str, note: String) -> Event {
    Event {
        type_: kube::runtime::events::EventType::Normal,
        reason: reason.to_string(),
        note,
    }
}

/// Whether the controller of orphaned Workloads keeps the Workload in view.
fn may_be_orphaned(workload: &WorkloadMeta) -> bool {
    has_finalizer(workload) || workload.owner_references().is_empty()
}

fn has_finalizer(workload: &impl Resource) -> bool {
    workload
        .finalizers()
        .iter()
        .any(|finalizer| finalizer == RESOURCE_IN_USE_FINALIZER)
}

fn is_controlled_by(workload: &Workload, uid: &str) -> bool {
    workload
        .owner_references()
        .iter()
        .any(|owner| owner.controller == Some(true) && owner.uid == uid)
}

fn key_of<K: Resource>(object: &K) -> String {
    format!(
        "{}/{}",
        object.meta().namespace.as_deref().unwrap_or_default(),
        object.meta().name.as_deref().unwrap_or_default()
    )
}
