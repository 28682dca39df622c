//! The metrics endpoint as Kueue 0.19 serves it: HTTPS on `metrics.bindAddress`, `/metrics`
//! behind a [`MetricsAuthorizer`], with the certificate controller-runtime's metrics server
//! would use (see [`metrics_cert_source`]).

use std::future::Future;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::extract::{Request, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::any;
use tokio::task::JoinHandle;
use tracing::info;

use super::metrics_auth::{MetricsAuthorizer, Refusal};
use crate::metrics::{MetricsRegistry, OPENMETRICS_CONTENT_TYPE};
use crate::tls::certs::{CertError, CertificateAuthority, TLS_CERT_FILE, TLS_KEY_FILE};
use crate::tls::serving::{self as tls, TlsError, TlsHandle};

/// The one path served.
pub const METRICS_PATH: &str = "/metrics";
/// Where Kueue reads the metrics certificate when its internal certificate management is off.
pub const MOUNTED_CERT_DIR: &str = "/etc/kueue/metrics/certs";
/// Validity of the self-signed certificate (client-go's, which controller-runtime uses).
pub const SELF_SIGNED_VALIDITY: Duration = Duration::from_secs(365 * 24 * 3600);
/// How often a certificate directory is read for changes.
const CERT_DIR_POLL_INTERVAL: Duration = Duration::from_secs(10);
/// Longest wait for a TLS handshake, and for a request's headers.
const CLIENT_TIMEOUT: Duration = Duration::from_secs(10);
/// How long scrapes in flight may take to finish after shutdown starts.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(5);

/// controller-runtime's default certificate directory for its metrics server, used when it
/// holds a certificate and key.
pub fn default_cert_dir() -> PathBuf {
    std::env::temp_dir()
        .join("k8s-metrics-server")
        .join("serving-certs")
}

/// Where the metrics server's certificate comes from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MetricsCertSource {
    /// Minted at start for `localhost` and `127.0.0.1`; scrapers skip verification, as Kueue's
    /// ServiceMonitor does.
    SelfSigned,
    /// `tls.crt` and `tls.key` in a directory, reloaded when they change.
    CertDir(PathBuf),
}

/// Kueue's choice: with internal certificate management off, the mounted pair (which must
/// exist); otherwise controller-runtime's: the pair in `default_dir` when both files exist,
/// else a self-signed certificate.
pub fn metrics_cert_source(
    internal_cert_management: bool,
    default_dir: &Path,
) -> MetricsCertSource {
    if !internal_cert_management {
        return MetricsCertSource::CertDir(PathBuf::from(MOUNTED_CERT_DIR));
    }
    let pair_exists = [TLS_CERT_FILE, TLS_KEY_FILE]
        .iter()
        .all(|file| default_dir.join(file).exists());
    if pair_exists {
        MetricsCertSource::CertDir(default_dir.to_path_buf())
    } else {
        MetricsCertSource::SelfSigned
    }
}

/// A certificate for `localhost` and `127.0.0.1` issued by a fresh CA, served with that CA
/// after it (as client-go's self-signed pair).
pub fn self_signed_cert() -> Result<(String, String), CertError> {
    let ca = CertificateAuthority::generate("localhost-ca", "kuota", SELF_SIGNED_VALIDITY)?;
    let serving = ca.issue_serving_cert(
        &["localhost".to_owned()],
        &[IpAddr::V4(Ipv4Addr::LOCALHOST)],
        SELF_SIGNED_VALIDITY,
    )?;
    Ok((
        format!("{}{}", serving.cert_pem, serving.ca_pem),
        serving.key_pem,
    ))
}

/// Why the metrics server could not start or stopped.
#[derive(Debug, thiserror::Error)]
pub enum MetricsServerError {
    /// The self-signed certificate could not be minted.
    #[error("metrics certificate: {0}")]
    Mint(#[from] CertError),
    /// The certificate cannot be served.
    #[error("metrics certificate: {0}")]
    Tls(#[from] TlsError),
    /// The listener could not be bound.
    #[error("cannot listen on {address} for metrics: {source}")]
    Bind {
        /// The requested address.
        address: SocketAddr,
        /// The underlying error.
        source: std::io::Error,
    },
    /// The listener failed while serving.
    #[error("metrics listener failed: {0}")]
    Serve(std::io::Error),
    /// The listener task panicked or was cancelled.
    #[error("metrics listener task ended abnormally: {0}")]
    Task(tokio::task::JoinError),
}

#[derive(Clone)]
struct MetricsState {
    registry: Arc<MetricsRegistry>,
    authorizer: Arc<MetricsAuthorizer>,
}

/// `/metrics` behind `authorizer`; every other path is 404, unauthenticated, as Go's mux
/// answers.
pub fn metrics_router(
    registry: Arc<MetricsRegistry>,
    authorizer: Arc<MetricsAuthorizer>,
) -> Router {
    Router::new()
        .route(METRICS_PATH, any(metrics))
        .fallback(|| async { (StatusCode::NOT_FOUND, plain_text("404 page not found")) })
        .with_state(MetricsState {
            registry,
            authorizer,
        })
}

/// Go's `http.Error`: the text with a newline, as plain text the browser must not sniff.
fn plain_text(message: &str) -> Response {
    (
        [
            (
                header::CONTENT_TYPE,
                HeaderValue::from_static("text/plain; charset=utf-8"),
            ),
            (
                header::X_CONTENT_TYPE_OPTIONS,
                HeaderValue::from_static("nosniff"),
            ),
        ],
        format!("{message}\n"),
    )
        .into_response()
}

fn refused(refusal: &Refusal) -> Response {
    let mut response = plain_text(&refusal.message());
    *response.status_mut() = refusal.status();
    response
}

async fn metrics(State(state): State<MetricsState>, request: Request) -> Response {
    let authorization = request
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|value| value.to_str().ok());
    let decided = state
        .authorizer
        .authorize(
            authorization,
            request.method().as_str(),
            request.uri().path(),
        )
        .await;
    if let Err(refusal) = decided {
        return refused(&refusal);
    }
    match state.registry.encode() {
        Ok(text) => ([(header::CONTENT_TYPE, OPENMETRICS_CONTENT_TYPE)], text).into_response(),
        Err(_) => {
            let mut response = plain_text("cannot encode metrics");
            *response.status_mut() = StatusCode::INTERNAL_SERVER_ERROR;
            response
        }
    }
}

/// A running metrics server.
#[derive(Debug)]
pub struct MetricsServerHandle {
    address: SocketAddr,
    control: axum_server::Handle<SocketAddr>,
    task: JoinHandle<std::io::Result<()>>,
    watcher: Option<JoinHandle<()>>,
}

/// Binds `address` and serves the metrics over HTTPS with the certificate from `source`.
pub async fn serve_metrics(
    address: SocketAddr,
    source: &MetricsCertSource,
    registry: Arc<MetricsRegistry>,
    authorizer: Arc<MetricsAuthorizer>,
) -> Result<MetricsServerHandle, MetricsServerError> {
    let handle = match source {
        MetricsCertSource::SelfSigned => {
            let (cert_pem, key_pem) = self_signed_cert()?;
            TlsHandle::new(&cert_pem, &key_pem)?
        }
        MetricsCertSource::CertDir(dir) => {
            let (cert_pem, key_pem) = tls::read_cert_dir(dir)?;
            TlsHandle::new(&cert_pem, &key_pem)?
        }
    };
    let bind_error = |source| MetricsServerError::Bind { address, source };
    let listener = std::net::TcpListener::bind(address).map_err(bind_error)?;
    listener.set_nonblocking(true).map_err(bind_error)?;
    let bound = listener.local_addr().map_err(bind_error)?;
    let mut server = axum_server::tls_rustls::from_tcp_rustls(listener, handle.rustls_config())
        .map_err(bind_error)?
        .map(|acceptor| acceptor.handshake_timeout(CLIENT_TIMEOUT));
    server
        .http_builder()
        .http1()
        .header_read_timeout(Some(CLIENT_TIMEOUT));
    let control = axum_server::Handle::new();
    let app = metrics_router(registry, authorizer);
    let task = tokio::spawn(
        server
            .handle(control.clone())
            .serve(app.into_make_service()),
    );
    let watcher = match source {
        MetricsCertSource::CertDir(dir) => Some(tokio::spawn(tls::watch_cert_dir(
            handle.clone(),
            dir.clone(),
            CERT_DIR_POLL_INTERVAL,
        ))),
        MetricsCertSource::SelfSigned => None,
    };
    info!(address = %bound, not_after = %handle.not_after(), "metrics server listening");
    Ok(MetricsServerHandle {
        address: bound,
        control,
        task,
        watcher,
    })
}

impl MetricsServerHandle {
    /// The bound address (the real port when 0 was requested).
    pub fn address(&self) -> SocketAddr {
        self.address
    }

    /// Serves until `signal` completes, then lets scrapes in flight finish; returns early with
    /// the failure if the listener fails first.
    pub async fn run_until(
        mut self,
        signal: impl Future<Output = ()>,
    ) -> Result<(), MetricsServerError> {
        let ended = tokio::select! {
            () = signal => {
                self.control.graceful_shutdown(Some(SHUTDOWN_GRACE));
                (&mut self.task).await
            }
            ended = &mut self.task => ended,
        };
        if let Some(watcher) = &self.watcher {
            watcher.abort();
        }
        match ended {
            Ok(Ok(())) => Ok(()),
            Ok(Err(error)) => Err(MetricsServerError::Serve(error)),
            Err(error) => Err(MetricsServerError::Task(error)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tls::certs::inspect_certificate;
    use crate::webhook::metrics_auth::{Access, Caller, ReviewError, Reviewer};
    use axum::body::Body;
    use futures::future::BoxFuture;
    use tower::ServiceExt;

    /// Accepts token `reader`, who may `get` anything.
    struct OneReader;

    impl Reviewer for OneReader {
        fn review_token<'a>(
            &'a self,
            token: &'a str,
        ) -> BoxFuture<'a, Result<Option<Caller>, ReviewError>> {
            let caller = (token == "reader").then(|| Caller {
                name: "reader".to_owned(),
                ..Caller::default()
            });
            Box::pin(async move { Ok(caller) })
        }

        fn review_access<'a>(
            &'a self,
            _caller: &'a Caller,
            verb: &'a str,
            _path: &'a str,
        ) -> BoxFuture<'a, Result<Access, ReviewError>> {
            let access = if verb == "get" {
                Access::Allowed
            } else {
                Access::Denied
            };
            Box::pin(async move { Ok(access) })
        }
    }

    async fn call(router: &Router, method: &str, path: &str, token: Option<&str>) -> Response {
        let mut request = Request::builder().method(method).uri(path);
        if let Some(token) = token {
            request = request.header(header::AUTHORIZATION, format!("Bearer {token}"));
        }
        router
            .clone()
            .oneshot(request.body(Body::empty()).unwrap())
            .await
            .unwrap()
    }

    async fn text(response: Response) -> String {
        let body = axum::body::to_bytes(response.into_body(), usize::MAX)
            .await
            .unwrap();
        String::from_utf8(body.to_vec()).unwrap()
    }

    #[tokio::test]
    async fn metrics_are_served_only_to_allowed_callers() {
        let registry = Arc::new(MetricsRegistry::new());
        let router = metrics_router(
            registry.clone(),
            Arc::new(MetricsAuthorizer::new(Arc::new(OneReader))),
        );

        let allowed = call(&router, "GET", METRICS_PATH, Some("reader")).await;
        assert_eq!(allowed.status(), StatusCode::OK);
        assert_eq!(
            allowed.headers()[header::CONTENT_TYPE],
            OPENMETRICS_CONTENT_TYPE
        );
        assert_eq!(text(allowed).await, registry.encode().unwrap());

        let anonymous = call(&router, "GET", METRICS_PATH, None).await;
        assert_eq!(anonymous.status(), StatusCode::UNAUTHORIZED);
        assert_eq!(
            anonymous.headers()[header::CONTENT_TYPE],
            "text/plain; charset=utf-8"
        );
        assert_eq!(text(anonymous).await, "Unauthorized\n");

        let unknown = call(&router, "GET", METRICS_PATH, Some("stolen")).await;
        assert_eq!(unknown.status(), StatusCode::INTERNAL_SERVER_ERROR);
        assert_eq!(text(unknown).await, "Authentication failed\n");

        let posted = call(&router, "POST", METRICS_PATH, Some("reader")).await;
        assert_eq!(posted.status(), StatusCode::FORBIDDEN);
        assert_eq!(text(posted).await, "Authorization denied for user reader\n");

        let elsewhere = call(&router, "GET", "/healthz", None).await;
        assert_eq!(elsewhere.status(), StatusCode::NOT_FOUND);
        assert_eq!(text(elsewhere).await, "404 page not found\n");
    }

    #[test]
    fn the_certificate_comes_from_where_kueue_takes_it() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(
            metrics_cert_source(false, dir.path()),
            MetricsCertSource::CertDir(PathBuf::from(MOUNTED_CERT_DIR))
        );
        assert_eq!(
            metrics_cert_source(true, dir.path()),
            MetricsCertSource::SelfSigned
        );
        std::fs::write(dir.path().join(TLS_CERT_FILE), "").unwrap();
        assert_eq!(
            metrics_cert_source(true, dir.path()),
            MetricsCertSource::SelfSigned,
            "a certificate without its key"
        );
        std::fs::write(dir.path().join(TLS_KEY_FILE), "").unwrap();
        assert_eq!(
            metrics_cert_source(true, dir.path()),
            MetricsCertSource::CertDir(dir.path().to_path_buf())
        );
        assert!(default_cert_dir().ends_with("k8s-metrics-server/serving-certs"));
    }

    #[test]
    fn the_self_signed_certificate_names_localhost() {
        let (cert_pem, key_pem) = self_signed_cert().unwrap();
        let info = inspect_certificate(&cert_pem).unwrap();
        assert_eq!(info.dns_names, ["localhost"]);
        assert_eq!(info.ip_addresses, [IpAddr::V4(Ipv4Addr::LOCALHOST)]);
        assert!(!info.is_ca);
        assert_eq!(cert_pem.matches("BEGIN CERTIFICATE").count(), 2);
        TlsHandle::new(&cert_pem, &key_pem).expect("a servable pair");
    }
}
