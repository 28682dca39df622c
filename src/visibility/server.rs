//! The HTTPS server of the visibility API: Kueue's paths, discovery documents and error
//! statuses, each request authenticated as coming from the API server's front proxy
//! ([`front_proxy`](super::front_proxy)) and authorized with a SubjectAccessReview for the
//! resource it reads, as a `k8s.io/apiserver` server behind an APIService does.

use std::collections::BTreeMap;
use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::{Path, Query, Request, State};
use axum::http::StatusCode;
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Extension, Json, Router};
use axum_server::accept::Accept;
use axum_server::tls_rustls::{RustlsAcceptor, RustlsConfig};
use futures::future::BoxFuture;
use k8s_openapi::api::authorization::v1::{ResourceAttributes, SubjectAccessReview};
use kube::Client;
use kube::api::{Api, PostParams};
use serde_json::{Value, json};
use tokio::net::TcpStream;
use tokio::task::JoinHandle;
use tokio_rustls::server::TlsStream;
use tower::Layer;

use super::front_proxy::RequestHeaderAuth;
use super::pending::{Page, PendingLists, PendingWorkload, UnknownQueue};
use super::{GROUP, VERSIONS};
use crate::admitter::scheduling::cluster_state::ClusterState;
use crate::quota::from_api::ConversionOptions;
use crate::stores::Stores;
use crate::webhook::metrics_auth::{Caller, review_of};

/// Longest wait for a TLS handshake, and for a request's headers.
const CLIENT_TIMEOUT: Duration = Duration::from_secs(10);
/// How long requests in flight may take to finish after shutdown starts.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(5);
/// How long a request waits for the watch caches of a replica that is still starting.
const STORES_WAIT: Duration = Duration::from_secs(5);

/// Decides SubjectAccessReviews: the API server in production, fakes in tests.
pub trait Authorizer: Send + Sync {
    /// Whether the review is allowed; an error when no answer came.
    fn allows(&self, review: SubjectAccessReview) -> BoxFuture<'_, Result<bool, String>>;
}

/// Creates SubjectAccessReviews through the API.
pub struct ApiServerAuthorizer(pub Client);

impl Authorizer for ApiServerAuthorizer {
    fn allows(&self, review: SubjectAccessReview) -> BoxFuture<'_, Result<bool, String>> {
        Box::pin(async move {
            let api: Api<SubjectAccessReview> = Api::all(self.0.clone());
            let answer =
                tokio::time::timeout(CLIENT_TIMEOUT, api.create(&PostParams::default(), &review))
                    .await
                    .map_err(|_| format!("no answer within {}s", CLIENT_TIMEOUT.as_secs()))?
                    .map_err(|err| err.to_string())?;
            let status = answer.status.unwrap_or_default();
            Ok(status.allowed && status.denied != Some(true))
        })
    }
}

/// Where the cluster's objects are read from: the replica's watch caches in production.
pub trait ClusterSource: Send + Sync {
    /// The objects now; `None` while the caches have not synced.
    fn read(&self) -> BoxFuture<'_, Option<ClusterState>>;
}

impl ClusterSource for Stores {
    fn read(&self) -> BoxFuture<'_, Option<ClusterState>> {
        Box::pin(async move {
            self.wait_until_ready(STORES_WAIT).await.ok()?;
            Some(ClusterState::read(self))
        })
    }
}

/// What the handlers read.
#[derive(Clone)]
pub struct VisibilityState {
    /// The cluster the lists are read from.
    pub cluster: Arc<dyn ClusterSource>,
    /// How workloads are converted, as the admitter converts them.
    pub options: ConversionOptions,
    /// Admission fair sharing's resource weights, when it is on.
    pub admission_fair_sharing: Option<BTreeMap<String, f64>>,
    /// The front proxy's published settings.
    pub front_proxy: Arc<RequestHeaderAuth>,
    /// Who decides access.
    pub authorizer: Arc<dyn Authorizer>,
}

/// The common name of the verified client certificate a connection presented, if any.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ProxyName(pub Option<String>);

impl ProxyName {
    fn of(certificates: Option<&[rustls::pki_types::CertificateDer<'_>]>) -> Self {
        let name = certificates
            .and_then(|chain| chain.first())
            .and_then(|leaf| x509_parser::parse_x509_certificate(leaf).ok())
            .and_then(|(_, cert)| {
                cert.subject()
                    .iter_common_name()
                    .next()
                    .and_then(|cn| cn.as_str().ok().map(str::to_owned))
            });
        Self(name)
    }
}

/// The routes, behind front-proxy authentication.
pub fn router(state: VisibilityState) -> Router {
    let base = format!("/apis/{GROUP}");
    Router::new()
        .route("/apis", get(group_list))
        .route(&base, get(group))
        .route(&format!("{base}/{{version}}"), get(resource_list))
        .route(
            &format!("{base}/{{version}}/clusterqueues/{{name}}/pendingworkloads"),
            get(in_cluster_queue),
        )
        .route(
            &format!(
                "{base}/{{version}}/namespaces/{{namespace}}/localqueues/{{name}}/pendingworkloads"
            ),
            get(in_local_queue),
        )
        .fallback(|| async { not_found_path().into_response() })
        .layer(middleware::from_fn_with_state(state.clone(), authenticate))
        .with_state(state)
}

async fn authenticate(
    State(state): State<VisibilityState>,
    proxy: Option<Extension<ProxyName>>,
    mut request: Request,
    next: Next,
) -> Response {
    let proxy = proxy.map(|Extension(name)| name).unwrap_or_default();
    match state
        .front_proxy
        .caller(proxy.0.as_deref(), request.headers())
    {
        Ok(caller) => {
            request.extensions_mut().insert(caller);
            next.run(request).await
        }
        Err(why) => {
            tracing::debug!(?why, "visibility request not authenticated");
            Failure::new(StatusCode::UNAUTHORIZED, "Unauthorized", "Unauthorized").into_response()
        }
    }
}

fn group_version(version: &str) -> Value {
    json!({"groupVersion": format!("{GROUP}/{version}"), "version": version})
}

fn api_group() -> Value {
    json!({
        "name": GROUP,
        "versions": VERSIONS.iter().map(|version| group_version(version)).collect::<Vec<_>>(),
        "preferredVersion": group_version(VERSIONS[0]),
    })
}

async fn group_list() -> Response {
    Json(json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": [api_group()]}))
        .into_response()
}

async fn group() -> Response {
    let mut group = api_group();
    group["kind"] = json!("APIGroup");
    group["apiVersion"] = json!("v1");
    Json(group).into_response()
}

async fn resource_list(Path(version): Path<String>) -> Response {
    if !VERSIONS.contains(&version.as_str()) {
        return not_found_path().into_response();
    }
    let resource = |name: &str, singular: &str, namespaced: bool, verbs: &[&str]| {
        json!({
            "name": name, "singularName": singular, "namespaced": namespaced,
            "kind": "PendingWorkloadsSummary", "verbs": verbs,
        })
    };
    Json(json!({
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": format!("{GROUP}/{version}"),
        "resources": [
            resource("clusterqueues", "clusterqueue", false, &[]),
            resource("clusterqueues/pendingworkloads", "", false, &["get"]),
            resource("localqueues", "localqueue", true, &[]),
            resource("localqueues/pendingworkloads", "", true, &["get"]),
        ],
    }))
    .into_response()
}

/// `limit` and `offset` as the request gives them.
#[derive(Debug, Default, serde::Deserialize)]
struct PageQuery {
    limit: Option<String>,
    offset: Option<String>,
}

impl PageQuery {
    fn page(&self) -> Result<Page, Failure> {
        let number = |name: &str, value: &Option<String>| -> Result<Option<i64>, Failure> {
            value
                .as_deref()
                .map(|text| {
                    text.parse::<i64>().map_err(|_| {
                        let message = format!("{name}: invalid value {text:?}: not an integer");
                        Failure::new(StatusCode::BAD_REQUEST, "BadRequest", message)
                    })
                })
                .transpose()
        };
        Ok(Page::bounded(
            number("limit", &self.limit)?,
            number("offset", &self.offset)?,
        ))
    }
}

/// The resource a pending-workloads request reads.
struct Target<'a> {
    version: &'a str,
    resource: &'static str,
    namespace: Option<&'a str>,
    name: &'a str,
}

impl Target<'_> {
    fn review(&self, caller: &Caller) -> SubjectAccessReview {
        let mut review = review_of(caller);
        review.spec.resource_attributes = Some(ResourceAttributes {
            group: Some(GROUP.to_owned()),
            version: Some(self.version.to_owned()),
            resource: Some(self.resource.to_owned()),
            subresource: Some("pendingworkloads".to_owned()),
            namespace: self.namespace.map(str::to_owned),
            name: Some(self.name.to_owned()),
            verb: Some("get".to_owned()),
            ..ResourceAttributes::default()
        });
        review
    }

    /// The generic API server's refusal.
    fn forbidden(&self, caller: &Caller) -> Failure {
        let scope = match self.namespace {
            Some(namespace) => format!("in the namespace {namespace:?}"),
            None => "at the cluster scope".to_owned(),
        };
        let message = format!(
            "{resource}.{GROUP} {name:?} is forbidden: User {user:?} cannot get resource \"{resource}/pendingworkloads\" in API group {GROUP:?} {scope}",
            resource = self.resource,
            name = self.name,
            user = caller.name,
        );
        let details = json!({"name": self.name, "group": GROUP, "kind": self.resource});
        Failure::new(StatusCode::FORBIDDEN, "Forbidden", message).with_details(details)
    }

    async fn authorize(&self, state: &VisibilityState, caller: &Caller) -> Result<(), Failure> {
        match state.authorizer.allows(self.review(caller)).await {
            Ok(true) => Ok(()),
            Ok(false) => Err(self.forbidden(caller)),
            Err(error) => {
                let message = format!("authorization of user {:?} failed: {error}", caller.name);
                Err(Failure::new(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    "InternalError",
                    message,
                ))
            }
        }
    }
}

async fn lists(state: &VisibilityState) -> Result<PendingLists, Failure> {
    let Some(cluster) = state.cluster.read().await else {
        return Err(Failure::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "ServiceUnavailable",
            "the watch caches of this replica are not synced yet",
        ));
    };
    Ok(PendingLists::read(
        &cluster,
        &state.options,
        state.admission_fair_sharing.as_ref(),
    ))
}

async fn in_cluster_queue(
    State(state): State<VisibilityState>,
    Extension(caller): Extension<Caller>,
    Path((version, name)): Path<(String, String)>,
    Query(query): Query<PageQuery>,
) -> Result<Response, Failure> {
    let target = Target {
        version: &version,
        resource: "clusterqueues",
        namespace: None,
        name: &name,
    };
    answer(&state, &caller, &target, &query, |lists, page| {
        lists.in_cluster_queue(&name, page)
    })
    .await
}

async fn in_local_queue(
    State(state): State<VisibilityState>,
    Extension(caller): Extension<Caller>,
    Path((version, namespace, name)): Path<(String, String, String)>,
    Query(query): Query<PageQuery>,
) -> Result<Response, Failure> {
    let target = Target {
        version: &version,
        resource: "localqueues",
        namespace: Some(&namespace),
        name: &name,
    };
    answer(&state, &caller, &target, &query, |lists, page| {
        lists.in_local_queue(&namespace, &name, page)
    })
    .await
}

async fn answer(
    state: &VisibilityState,
    caller: &Caller,
    target: &Target<'_>,
    query: &PageQuery,
    list: impl FnOnce(&PendingLists, Page) -> Result<Vec<PendingWorkload>, UnknownQueue>,
) -> Result<Response, Failure> {
    if !VERSIONS.contains(&target.version) {
        return Err(not_found_path());
    }
    let page = query.page()?;
    target.authorize(state, caller).await?;
    let lists = lists(state).await?;
    let items = list(&lists, page).map_err(|unknown| {
        let (kind, name) = match &unknown {
            UnknownQueue::ClusterQueue(name) => ("clusterqueue", name),
            UnknownQueue::LocalQueue(name) => ("localqueue", name),
        };
        let message = format!("{kind}.{GROUP} {name:?} not found");
        let details = json!({"name": name, "group": GROUP, "kind": kind});
        Failure::new(StatusCode::NOT_FOUND, "NotFound", message).with_details(details)
    })?;
    Ok(Json(json!({
        "kind": "PendingWorkloadsSummary",
        "apiVersion": format!("{GROUP}/{}", target.version),
        "metadata": {"creationTimestamp": null},
        "items": items,
    }))
    .into_response())
}

fn not_found_path() -> Failure {
    Failure::new(
        StatusCode::NOT_FOUND,
        "NotFound",
        "the server could not find the requested resource",
    )
    .with_details(json!({}))
}

/// A `metav1.Status` failure.
struct Failure {
    code: StatusCode,
    reason: &'static str,
    message: String,
    details: Option<Value>,
}

impl Failure {
    fn new(code: StatusCode, reason: &'static str, message: impl Into<String>) -> Self {
        Self {
            code,
            reason,
            message: message.into(),
            details: None,
        }
    }

    fn with_details(mut self, details: Value) -> Self {
        self.details = Some(details);
        self
    }
}

impl IntoResponse for Failure {
    fn into_response(self) -> Response {
        let mut body = json!({
            "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": self.message, "reason": self.reason, "code": self.code.as_u16(),
        });
        if let Some(details) = self.details {
            body["details"] = details;
        }
        (self.code, Json(body)).into_response()
    }
}

/// Completes the TLS handshake, then hands the connection's service the name of the client
/// certificate it presented.
#[derive(Clone)]
struct ProxyNameAcceptor(RustlsAcceptor);

type Tls<S> = <RustlsAcceptor as Accept<TcpStream, S>>::Service;

impl<S> Accept<TcpStream, S> for ProxyNameAcceptor
where
    RustlsAcceptor: Accept<TcpStream, S, Stream = TlsStream<TcpStream>>,
    <RustlsAcceptor as Accept<TcpStream, S>>::Future: Send + 'static,
{
    type Stream = TlsStream<TcpStream>;
    type Service = <Extension<ProxyName> as Layer<Tls<S>>>::Service;
    type Future = BoxFuture<'static, io::Result<(Self::Stream, Self::Service)>>;

    fn accept(&self, stream: TcpStream, service: S) -> Self::Future {
        let handshake = self.0.accept(stream, service);
        Box::pin(async move {
            let (stream, service) = handshake.await?;
            let name = ProxyName::of(stream.get_ref().1.peer_certificates());
            Ok((stream, Extension(name).layer(service)))
        })
    }
}

/// Why the visibility server could not start or stopped.
#[derive(Debug, thiserror::Error)]
pub enum VisibilityServerError {
    /// The listener could not be bound.
    #[error("cannot listen on {address} for the visibility API: {source}")]
    Bind {
        /// The requested address.
        address: SocketAddr,
        /// The underlying error.
        source: io::Error,
    },
    /// The listener failed while serving.
    #[error("visibility listener failed: {0}")]
    Serve(io::Error),
    /// The listener task panicked or was cancelled.
    #[error("visibility listener task ended abnormally: {0}")]
    Task(tokio::task::JoinError),
}

/// A running visibility server.
#[derive(Debug)]
pub struct VisibilityServerHandle {
    address: SocketAddr,
    control: axum_server::Handle<SocketAddr>,
    task: JoinHandle<io::Result<()>>,
}

/// Binds `address` and serves the visibility API with `tls`.
pub fn serve_visibility(
    address: SocketAddr,
    tls: rustls::ServerConfig,
    state: VisibilityState,
) -> Result<VisibilityServerHandle, VisibilityServerError> {
    let bind_error = |source| VisibilityServerError::Bind { address, source };
    let listener = std::net::TcpListener::bind(address).map_err(bind_error)?;
    listener.set_nonblocking(true).map_err(bind_error)?;
    let bound = listener.local_addr().map_err(bind_error)?;
    let acceptor = ProxyNameAcceptor(
        RustlsAcceptor::new(RustlsConfig::from_config(Arc::new(tls)))
            .handshake_timeout(CLIENT_TIMEOUT),
    );
    let mut server = axum_server::from_tcp(listener)
        .map_err(bind_error)?
        .acceptor(acceptor);
    server
        .http_builder()
        .http1()
        .header_read_timeout(Some(CLIENT_TIMEOUT));
    let control = axum_server::Handle::new();
    let task = tokio::spawn(
        server
            .handle(control.clone())
            .serve(router(state).into_make_service()),
    );
    tracing::info!(address = %bound, "visibility API serving");
    Ok(VisibilityServerHandle {
        address: bound,
        control,
        task,
    })
}

impl VisibilityServerHandle {
    /// The bound address (the real port when 0 was requested).
    pub fn address(&self) -> SocketAddr {
        self.address
    }

    /// Serves until `signal` completes, then lets requests in flight finish; returns early
    /// with the failure if the listener fails first.
    pub async fn run_until(
        mut self,
        signal: impl Future<Output = ()>,
    ) -> Result<(), VisibilityServerError> {
        let ended = tokio::select! {
            () = signal => {
                self.control.graceful_shutdown(Some(SHUTDOWN_GRACE));
                (&mut self.task).await
            }
            ended = &mut self.task => ended,
        };
        match ended {
            Ok(Ok(())) => Ok(()),
            Ok(Err(error)) => Err(VisibilityServerError::Serve(error)),
            Err(error) => Err(VisibilityServerError::Task(error)),
        }
    }
}

#[cfg(test)]
mod tests;
