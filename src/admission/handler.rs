//! [`KuotaAdmission`]: the [`AdmissionHandler`] behind every path of the webhook table, and the
//! [`Converter`] for `/convert`.
//!
//! Denials carry HTTP code 403 and reason `Forbidden`, as controller-runtime answers for
//! Kueue, so `kubectl` prints `Error from server (Forbidden): ... admission webhook
//! "vjob.kb.io" denied the request: <message>`.

use std::collections::HashMap;
use std::sync::Arc;

use futures::FutureExt;
use futures::future::BoxFuture;
use kube::core::Status;
use kube::core::admission::{AdmissionRequest, AdmissionResponse, Operation};
use serde::de::DeserializeOwned;
use serde_json::Value;
use tracing::{info, warn};

use super::jobs::{default_job, validate_job};
use super::kueue;
use super::lookup::ClusterLookup;
use super::table::{KueueKind, Target, webhook_table};
use crate::api::v1beta2::{ClusterQueue, Cohort, ResourceFlavor, Workload};
use crate::config::Configuration;
use crate::k8s::field::{FieldError, aggregate};
use crate::k8s::json;
use crate::webhook::{AdmissionHandler, AdmissionRoute, Converter, RawObject, WebhookType};

/// The admission handler for every job kind and Kueue kind Kuota serves.
pub struct KuotaAdmission {
    config: Arc<Configuration>,
    state: Arc<dyn ClusterLookup>,
    targets: HashMap<String, Target>,
}

impl KuotaAdmission {
    /// A handler answering with `config` and reading the cluster through `state`.
    pub fn new(config: Arc<Configuration>, state: Arc<dyn ClusterLookup>) -> Self {
        let targets = webhook_table()
            .into_iter()
            .map(|entry| (entry.route.path, entry.target))
            .collect();
        Self {
            config,
            state,
            targets,
        }
    }

    async fn decide(
        &self,
        route: &AdmissionRoute,
        request: &AdmissionRequest<RawObject>,
    ) -> AdmissionResponse {
        let Some(target) = self.targets.get(&route.path).copied() else {
            return AdmissionResponse::from(request);
        };
        if !route.matches(request) {
            info!(
                expected = %format!("{}/{}", route.group, route.kind),
                "kind not handled by this webhook; allowing unchanged"
            );
            return AdmissionResponse::from(request);
        }
        if !matches!(request.operation, Operation::Create | Operation::Update) {
            return AdmissionResponse::from(request);
        }
        let Some(object) = request.object.as_ref().map(RawObject::json) else {
            return deny(request, "the request has no object");
        };
        let old = request
            .old_object
            .as_ref()
            .filter(|_| request.operation == Operation::Update)
            .map(RawObject::json);
        let create = request.operation == Operation::Create;
        match (target, route.webhook_type) {
            (Target::Job(framework), _)
                if !self.config.integrations.is_enabled(framework.name()) =>
            {
                AdmissionResponse::from(request)
            }
            (Target::Job(framework), WebhookType::Mutating) if create => {
                let namespace = namespace_of(request, object);
                let defaulted = default_job(
                    framework,
                    &self.config,
                    self.state.as_ref(),
                    &namespace,
                    object,
                )
                .await;
                patched(request, object, &defaulted)
            }
            (Target::Job(framework), WebhookType::Validating) => {
                let namespace = namespace_of(request, object);
                let verdict = validate_job(
                    framework,
                    &self.config,
                    self.state.as_ref(),
                    &namespace,
                    old,
                    object,
                )
                .await;
                let mut response = match verdict.denial {
                    Some(message) => deny(request, &message),
                    None => AdmissionResponse::from(request),
                };
                if !verdict.warnings.is_empty() {
                    response.warnings = Some(verdict.warnings);
                }
                response
            }
            (
                Target::Kueue(KueueKind::ClusterQueue | KueueKind::ResourceFlavor),
                WebhookType::Mutating,
            ) if create => {
                let mut defaulted = object.clone();
                kueue::add_resource_in_use_finalizer(&mut defaulted);
                patched(request, object, &defaulted)
            }
            (Target::Kueue(KueueKind::Workload), WebhookType::Mutating) if create => {
                let mut defaulted = object.clone();
                kueue::default_workload(&mut defaulted, &self.config.feature_gates);
                patched(request, object, &defaulted)
            }
            (Target::Kueue(kind), WebhookType::Validating) => {
                let gates = &self.config.feature_gates;
                let violations = match kind {
                    KueueKind::ClusterQueue => typed(object, old, |new: &ClusterQueue, old| {
                        kueue::validate_cluster_queue(new, old, gates)
                    }),
                    KueueKind::Cohort => {
                        typed(object, old, |new: &Cohort, _| kueue::validate_cohort(new))
                    }
                    KueueKind::ResourceFlavor => typed(object, old, |new: &ResourceFlavor, _| {
                        kueue::validate_resource_flavor(new)
                    }),
                    KueueKind::Workload => typed(object, old, |new: &Workload, old| {
                        kueue::validate_workload(new, old, gates)
                    }),
                };
                match violations {
                    Ok(violations) => match aggregate(&violations) {
                        Some(message) => deny(request, &message),
                        None => AdmissionResponse::from(request),
                    },
                    Err(message) => deny(request, &message),
                }
            }
            _ => AdmissionResponse::from(request),
        }
    }
}

impl AdmissionHandler for KuotaAdmission {
    fn routes(&self) -> Vec<AdmissionRoute> {
        webhook_table()
            .into_iter()
            .map(|entry| entry.route)
            .collect()
    }

    fn admit<'a>(
        &'a self,
        route: &'a AdmissionRoute,
        request: &'a AdmissionRequest<RawObject>,
    ) -> BoxFuture<'a, AdmissionResponse> {
        self.decide(route, request).boxed()
    }
}

/// The request's namespace, or the object's.
fn namespace_of(request: &AdmissionRequest<RawObject>, object: &Value) -> String {
    request
        .namespace
        .clone()
        .filter(|namespace| !namespace.is_empty())
        .or_else(|| {
            json::at(object, "/metadata/namespace")
                .and_then(Value::as_str)
                .map(str::to_owned)
        })
        .unwrap_or_default()
}

/// Decodes the new (and old) object as `K` and validates them.
fn typed<K: DeserializeOwned>(
    object: &Value,
    old: Option<&Value>,
    validate: impl FnOnce(&K, Option<&K>) -> Vec<FieldError>,
) -> Result<Vec<FieldError>, String> {
    let decode = |value: &Value| {
        K::deserialize(value).map_err(|err| format!("cannot decode the object: {err}"))
    };
    let new = decode(object)?;
    let old = old.map(decode).transpose()?;
    Ok(validate(&new, old.as_ref()))
}

/// A refusal as controller-runtime sends it: code 403, reason `Forbidden`.
fn deny(request: &AdmissionRequest<RawObject>, message: &str) -> AdmissionResponse {
    let mut response = AdmissionResponse::from(request);
    response.allowed = false;
    response.result = Status::failure(message, "Forbidden").with_code(403);
    response
}

/// Allowed, with a JSON patch from `before` to `after` when they differ.
fn patched(
    request: &AdmissionRequest<RawObject>,
    before: &Value,
    after: &Value,
) -> AdmissionResponse {
    let patch = json_patch::diff(before, after);
    let response = AdmissionResponse::from(request);
    if patch.0.is_empty() {
        return response;
    }
    match response.with_patch(patch) {
        Ok(response) => response,
        Err(err) => {
            warn!(%err, "cannot serialize the patch");
            deny(request, &format!("cannot serialize the patch: {err}"))
        }
    }
}

/// The `/convert` converter: Kueue objects between `v1beta1` and `v1beta2`.
pub fn converter() -> Converter {
    Converter::new(crate::api::conversion::convert)
}

#[cfg(test)]
mod tests;
