//! The webhook's axum router: admission paths from the [`AdmissionHandler`], `/convert` for CRD
//! conversion, and well-formed JSON answers for everything that goes wrong on the way.
//!
//! `router()` needs no socket, so tests drive it with `tower::ServiceExt::oneshot`.

use std::collections::HashMap;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::Json;
use axum::Router;
use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, FromRequest, Request, State};
use axum::http::StatusCode;
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use futures::FutureExt;
use tower_http::trace::TraceLayer;
use tracing::field::Empty;
use tracing::{Instrument, Span, debug, error, info, info_span, warn};

use super::review::{self, ReviewError};
use super::{AdmissionHandler, AdmissionRoute, Converter, WebhookType};
use crate::metrics::{MetricsRegistry, RequestResult, UNMATCHED_PATH};

/// Path of the CRD conversion webhook, as in Kueue's CRD manifests.
pub const CONVERT_PATH: &str = "/convert";

/// Bounds on what one request may cost the server.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RequestLimits {
    /// Largest accepted body; larger bodies get HTTP 413. An object in etcd is at most
    /// ~1.5 MiB and an UPDATE review carries two of them, so 8 MiB leaves ample room.
    pub max_body_bytes: usize,
    /// Time from the request head to the answer (body read and handler included); after it
    /// the client gets HTTP 408. The API server itself gives up after at most 30 s.
    pub request_timeout: Duration,
    /// Time a new connection may take to send its first request (any protocol) or an HTTP/1
    /// request head; also the longest an idle HTTP/1 keep-alive connection is kept.
    pub header_read_timeout: Duration,
    /// Time a client may take for the TLS handshake.
    pub tls_handshake_timeout: Duration,
}

impl Default for RequestLimits {
    fn default() -> Self {
        Self {
            max_body_bytes: 8 * 1024 * 1024,
            request_timeout: Duration::from_secs(10),
            header_read_timeout: Duration::from_secs(10),
            tls_handshake_timeout: Duration::from_secs(10),
        }
    }
}

/// Everything the webhook router needs. The router shares it behind one `Arc`, so a request
/// costs one reference count, not one per field.
#[derive(Clone)]
pub struct WebhookState {
    handler: Arc<dyn AdmissionHandler>,
    routes: Arc<HashMap<String, AdmissionRoute>>,
    converter: Option<Converter>,
    metrics: Arc<MetricsRegistry>,
    limits: RequestLimits,
}

impl std::fmt::Debug for WebhookState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WebhookState")
            .field("routes", &self.routes.keys().collect::<Vec<_>>())
            .field("converter", &self.converter.is_some())
            .field("limits", &self.limits)
            .finish_non_exhaustive()
    }
}

impl WebhookState {
    /// State serving `handler.routes()`, with default limits and no `/convert`.
    pub fn new(handler: Arc<dyn AdmissionHandler>, metrics: Arc<MetricsRegistry>) -> Self {
        let mut routes = HashMap::new();
        for route in handler.routes() {
            if routes.contains_key(&route.path) {
                warn!(path = %route.path, "admission path listed twice; keeping the first");
                continue;
            }
            routes.insert(route.path.clone(), route);
        }
        Self {
            handler,
            routes: Arc::new(routes),
            converter: None,
            metrics,
            limits: RequestLimits::default(),
        }
    }

    /// Also serves `/convert` with `converter`.
    pub fn with_converter(mut self, converter: Converter) -> Self {
        self.converter = Some(converter);
        self
    }

    /// Replaces the request limits.
    pub fn with_limits(mut self, limits: RequestLimits) -> Self {
        self.limits = limits;
        self
    }

    /// The request limits.
    pub fn limits(&self) -> RequestLimits {
        self.limits
    }

    /// The metrics registry.
    pub fn metrics(&self) -> &Arc<MetricsRegistry> {
        &self.metrics
    }

    /// The admission routes served, in no particular order.
    pub fn routes(&self) -> impl Iterator<Item = &AdmissionRoute> {
        self.routes.values()
    }

    fn path_label(&self, path: &str) -> String {
        let served =
            self.routes.contains_key(path) || (path == CONVERT_PATH && self.converter.is_some());
        if served { path } else { UNMATCHED_PATH }.to_owned()
    }
}

/// The webhook router: `POST <route path>` for admission, `POST /convert` when a converter is
/// set, JSON `metav1.Status` errors (400, 404, 405, 408, 413, 500) otherwise.
pub fn router(state: WebhookState) -> Router {
    let state = Arc::new(state);
    let mut router = Router::new().route("/{webhook}", post(admit).fallback(method_not_allowed));
    if state.converter.is_some() {
        router = router.route(CONVERT_PATH, post(convert).fallback(method_not_allowed));
    }
    router
        .fallback(not_found)
        .layer(DefaultBodyLimit::max(state.limits.max_body_bytes))
        .layer(middleware::from_fn_with_state(state.clone(), observe))
        .layer(TraceLayer::new_for_http())
        .with_state(state)
}

/// Bounds the whole request by the request timeout and records its metrics.
async fn observe(State(state): State<Arc<WebhookState>>, request: Request, next: Next) -> Response {
    let started = Instant::now();
    let path = state.path_label(request.uri().path());
    let timeout = state.limits.request_timeout;
    let response = match tokio::time::timeout(timeout, next.run(request)).await {
        Ok(response) => response,
        Err(_) => {
            warn!(%path, ?timeout, "request not complete in time");
            error_response(
                StatusCode::REQUEST_TIMEOUT,
                "Timeout",
                &format!("request not complete within {timeout:?}"),
                RequestResult::Timeout,
            )
        }
    };
    let result = response
        .extensions()
        .get::<RequestResult>()
        .copied()
        .unwrap_or_else(|| result_from_status(response.status()));
    state
        .metrics
        .webhook
        .observe_request(&path, result, started.elapsed().as_secs_f64());
    response
}

fn result_from_status(status: StatusCode) -> RequestResult {
    match status {
        StatusCode::NOT_FOUND => RequestResult::NotFound,
        StatusCode::PAYLOAD_TOO_LARGE => RequestResult::TooLarge,
        StatusCode::REQUEST_TIMEOUT => RequestResult::Timeout,
        status if status.is_client_error() => RequestResult::Malformed,
        status if status.is_server_error() => RequestResult::InternalError,
        _ => RequestResult::Allowed,
    }
}

async fn admit(State(state): State<Arc<WebhookState>>, request: Request) -> Response {
    let Some(route) = state.routes.get(request.uri().path()) else {
        return not_found_at(request.uri().path());
    };
    let path = route.path.as_str();
    let body = match read_body(request, &state, path).await {
        Ok(body) => body,
        Err(response) => return response,
    };
    let request = match review::parse_admission_review(&body) {
        Ok(request) => request,
        Err(err) => return malformed(&err, path),
    };
    // Built once with every field: recording them one by one formats the span's fields again
    // at each record, on every request.
    let span = info_span!(
        "admission",
        path,
        uid = request.uid.as_str(),
        kind = review::kind_label(&request),
        namespace = request.namespace.as_deref().unwrap_or(""),
        name = request.name.as_str(),
        operation = review::operation_name(&request.operation),
    );
    async {
        let response = if route.webhook_type == WebhookType::Mutating && !route.matches(&request) {
            // The configuration sent us a kind this path does not mutate. Denying (failing
            // closed) would block every such object in the cluster over a configuration
            // mismatch, so the object passes unchanged; validating paths decide for themselves.
            info!(
                expected = %format!("{}/{}", route.group, route.kind),
                "kind not handled by this mutating webhook; allowing unchanged"
            );
            review::allow_unchanged(&request)
        } else {
            let decision = AssertUnwindSafe(state.handler.admit(route, &request))
                .catch_unwind()
                .await;
            match decision {
                Ok(response) => review::bind_to_request(response, &request),
                Err(_) => {
                    error!("admission handler panicked");
                    return error_response(
                        StatusCode::INTERNAL_SERVER_ERROR,
                        "InternalError",
                        "admission handler failed",
                        RequestResult::InternalError,
                    );
                }
            }
        };

        let result = match (response.allowed, response.patch.is_some()) {
            (false, _) => RequestResult::Denied,
            (true, true) => RequestResult::Patched,
            (true, false) => RequestResult::Allowed,
        };
        if response.allowed {
            debug!(patched = response.patch.is_some(), "admission allowed");
        } else {
            info!(reason = %response.result.message, "admission denied");
        }
        with_result(Json(response.into_review()).into_response(), result)
    }
    .instrument(span)
    .await
}

async fn convert(State(state): State<Arc<WebhookState>>, request: Request) -> Response {
    let span = info_span!(
        "conversion",
        uid = Empty,
        desired_api_version = Empty,
        objects = Empty
    );
    async move {
        let Some(converter) = state.converter.clone() else {
            return not_found_at(CONVERT_PATH);
        };
        let body = match read_body(request, &state, CONVERT_PATH).await {
            Ok(body) => body,
            Err(response) => return response,
        };
        let request = match review::parse_conversion_review(&body) {
            Ok(request) => request,
            Err(err) => return malformed(&err, CONVERT_PATH),
        };
        let span = Span::current();
        span.record("uid", request.uid.as_str());
        span.record("desired_api_version", request.desired_api_version.as_str());
        span.record("objects", request.objects.len());

        let response = review::convert_objects(request, &converter);
        let result = if response.result.is_failure() {
            warn!(message = %response.result.message, "conversion failed");
            RequestResult::ConversionFailed
        } else {
            debug!("conversion done");
            RequestResult::Converted
        };
        with_result(Json(response.into_review()).into_response(), result)
    }
    .instrument(span)
    .await
}

/// Reads the body within the size limit set by `DefaultBodyLimit`; `path` names the webhook in
/// the log.
async fn read_body(request: Request, state: &WebhookState, path: &str) -> Result<Bytes, Response> {
    Bytes::from_request(request, state)
        .await
        .map_err(|rejection| {
            if rejection.status() == StatusCode::PAYLOAD_TOO_LARGE {
                let limit = state.limits.max_body_bytes;
                warn!(path, limit, "request body too large");
                error_response(
                    StatusCode::PAYLOAD_TOO_LARGE,
                    "RequestEntityTooLarge",
                    &format!("request body exceeds the limit of {limit} bytes"),
                    RequestResult::TooLarge,
                )
            } else {
                let message = rejection.body_text();
                warn!(path, %message, "cannot read request body");
                error_response(
                    StatusCode::BAD_REQUEST,
                    "BadRequest",
                    &message,
                    RequestResult::Malformed,
                )
            }
        })
}

fn malformed(err: &ReviewError, path: &str) -> Response {
    warn!(path, error = %err, "rejecting malformed review");
    error_response(
        StatusCode::BAD_REQUEST,
        "BadRequest",
        &err.to_string(),
        RequestResult::Malformed,
    )
}

async fn not_found(request: Request) -> Response {
    not_found_at(request.uri().path())
}

fn not_found_at(path: &str) -> Response {
    debug!(path, "no webhook at path");
    error_response(
        StatusCode::NOT_FOUND,
        "NotFound",
        &format!("no webhook is served at {path}"),
        RequestResult::NotFound,
    )
}

async fn method_not_allowed(request: Request) -> Response {
    error_response(
        StatusCode::METHOD_NOT_ALLOWED,
        "MethodNotAllowed",
        &format!("{} is not allowed; webhooks take POST", request.method()),
        RequestResult::Malformed,
    )
}

fn error_response(
    status: StatusCode,
    reason: &str,
    message: &str,
    result: RequestResult,
) -> Response {
    let body = review::error_status(status.as_u16(), reason, message);
    with_result((status, Json(body)).into_response(), result)
}

fn with_result(mut response: Response, result: RequestResult) -> Response {
    response.extensions_mut().insert(result);
    response
}
