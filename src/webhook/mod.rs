//! The admission and conversion webhook: an HTTPS server (axum + rustls) that answers the API
//! server's AdmissionReview and ConversionReview calls, plus a plain-HTTP port for probes; and
//! the HTTPS metrics server, behind TokenReview and SubjectAccessReview as Kueue's.
//!
//! The server knows nothing about jobs or queues. What to do with a request is decided by an
//! [`AdmissionHandler`] (which also lists the paths it serves) and, for `/convert`, by a
//! [`Converter`].

pub mod health;
pub mod metrics_auth;
pub mod metrics_server;
pub mod review;
pub mod router;
pub mod server;

use std::fmt::Display;
use std::sync::Arc;

use futures::future::BoxFuture;
use kube::core::admission::{AdmissionRequest, AdmissionResponse};
use serde_json::Value;

pub use health::{Readiness, WEBHOOK_COMPONENT, health_router};
pub use metrics_auth::{ApiServerReviewer, MetricsAuthorizer};
pub use metrics_server::{
    MetricsCertSource, MetricsServerError, MetricsServerHandle, metrics_cert_source, serve_metrics,
};
pub use review::RawObject;
pub use router::{CONVERT_PATH, RequestLimits, WebhookState, router};
pub use server::{ServerError, ServerHandle, TlsSource, WebhookServerConfig, serve};

/// Whether a webhook may change the object (mutating) or only accept or reject it (validating).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum WebhookType {
    /// A `MutatingWebhookConfiguration` entry.
    Mutating,
    /// A `ValidatingWebhookConfiguration` entry.
    Validating,
}

/// One admission path the server answers, and the object kind it expects there.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct AdmissionRoute {
    /// URL path as in the webhook configuration, e.g. `/mutate-batch-v1-job`.
    pub path: String,
    /// Mutating or validating.
    pub webhook_type: WebhookType,
    /// API group of the expected object (`""` for the core group).
    pub group: String,
    /// Kind of the expected object, e.g. `Job`.
    pub kind: String,
}

impl AdmissionRoute {
    /// A route at `path` for objects of `group`/`kind`.
    pub fn new(
        path: impl Into<String>,
        webhook_type: WebhookType,
        group: impl Into<String>,
        kind: impl Into<String>,
    ) -> Self {
        Self {
            path: path.into(),
            webhook_type,
            group: group.into(),
            kind: kind.into(),
        }
    }

    /// Whether the request is about the kind this route expects (versions may differ).
    pub fn matches(&self, request: &AdmissionRequest<RawObject>) -> bool {
        request.kind.group == self.group && request.kind.kind == self.kind
    }
}

/// Decides admission requests; implemented by the mutating and validating webhooks.
pub trait AdmissionHandler: Send + Sync {
    /// The paths served, each with the kind it expects. Read once when the router is built.
    fn routes(&self) -> Vec<AdmissionRoute>;

    /// Answers a request that arrived at `route`.
    ///
    /// For a mutating route this is only called when the request's kind matches the route; a
    /// validating route sees every request sent to it. The server overwrites the response's uid
    /// and apiVersion with the request's, so `AdmissionResponse::from(request)` and
    /// `AdmissionResponse::invalid(..)` are both fine to return.
    fn admit<'a>(
        &'a self,
        route: &'a AdmissionRoute,
        request: &'a AdmissionRequest<RawObject>,
    ) -> BoxFuture<'a, AdmissionResponse>;
}

type ConvertFn = dyn Fn(Value, &str) -> Result<Value, String> + Send + Sync;

/// Converts one custom resource to a desired `apiVersion` for the `/convert` endpoint.
#[derive(Clone)]
pub struct Converter(Arc<ConvertFn>);

impl std::fmt::Debug for Converter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Converter")
    }
}

impl Converter {
    /// Wraps a conversion function `(object, desired_api_version) -> converted object`.
    pub fn new<F, E>(convert: F) -> Self
    where
        F: Fn(Value, &str) -> Result<Value, E> + Send + Sync + 'static,
        E: Display,
    {
        Self(Arc::new(move |object, desired| {
            convert(object, desired).map_err(|err| err.to_string())
        }))
    }

    /// Converts one object; the error is the message returned to the API server.
    pub fn convert(&self, object: Value, desired_api_version: &str) -> Result<Value, String> {
        (self.0)(object, desired_api_version)
    }
}
