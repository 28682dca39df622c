//! Running the webhook: the HTTPS listener, the plain-HTTP probe listener, certificate reloads,
//! readiness and graceful shutdown.

use std::future::Future;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use tokio::net::TcpListener;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;
use tracing::{info, warn};

use super::health::{Readiness, WEBHOOK_COMPONENT, health_router};
use super::router::{WebhookState, router};
use crate::tls::serving::{self as tls, TlsError, TlsHandle};

/// Where the serving certificate comes from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TlsSource {
    /// PEM text held in memory, rotated by the owner through [`ServerHandle::tls`].
    InMemory {
        /// Leaf certificate (then any intermediates).
        cert_pem: String,
        /// Private key of the leaf.
        key_pem: String,
    },
    /// `tls.crt` and `tls.key` in a directory (a mounted Secret), polled for changes.
    CertDir {
        /// The directory, e.g. `/tmp/k8s-webhook-server/serving-certs`.
        dir: PathBuf,
        /// How often the files are read and compared.
        poll_interval: Duration,
    },
}

/// Where and how the webhook server listens.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WebhookServerConfig {
    /// HTTPS address for the API server's calls (port 0 picks a free port).
    pub listen_address: SocketAddr,
    /// Plain-HTTP address for `/healthz` and `/readyz` (port 0 picks a free port).
    pub health_listen_address: SocketAddr,
    /// The serving certificate.
    pub tls: TlsSource,
    /// How long in-flight requests may take to finish after shutdown starts.
    pub shutdown_grace: Duration,
}

impl WebhookServerConfig {
    /// Kueue's ports: webhook on 9443 (the Service's targetPort), probes on 8081.
    pub fn new(tls: TlsSource) -> Self {
        Self {
            listen_address: SocketAddr::from(([0, 0, 0, 0], 9443)),
            health_listen_address: SocketAddr::from(([0, 0, 0, 0], 8081)),
            tls,
            shutdown_grace: Duration::from_secs(15),
        }
    }
}

/// Why the webhook server could not start or stopped with an error.
#[derive(Debug, thiserror::Error)]
pub enum ServerError {
    /// The initial certificate cannot be served.
    #[error("webhook certificate: {0}")]
    Tls(#[from] TlsError),
    /// A listener could not be bound.
    #[error("cannot listen on {address}: {source}")]
    Bind {
        /// The requested address.
        address: SocketAddr,
        /// The underlying error.
        source: std::io::Error,
    },
    /// A listener failed while serving.
    #[error("{listener} listener failed: {source}")]
    Serve {
        /// `webhook` or `health`.
        listener: &'static str,
        /// The underlying error.
        source: std::io::Error,
    },
    /// A listener task panicked or was cancelled.
    #[error("{listener} listener task ended abnormally: {source}")]
    Task {
        /// `webhook` or `health`.
        listener: &'static str,
        /// The join error.
        source: tokio::task::JoinError,
    },
}

/// A running webhook server.
#[derive(Debug)]
pub struct ServerHandle {
    webhook_address: SocketAddr,
    health_address: SocketAddr,
    tls: TlsHandle,
    readiness: Readiness,
    shutdown_grace: Duration,
    webhook_control: axum_server::Handle<SocketAddr>,
    webhook_task: JoinHandle<std::io::Result<()>>,
    health_stop: oneshot::Sender<()>,
    health_task: JoinHandle<std::io::Result<()>>,
    watcher_task: Option<JoinHandle<()>>,
}

/// Binds both listeners, starts serving, and marks the [`WEBHOOK_COMPONENT`] ready.
///
/// Fails before binding when the initial certificate is missing, invalid, expired or does not
/// match its key. The returned handle serves until [`ServerHandle::shutdown`] or
/// [`ServerHandle::run_until`].
pub async fn serve(
    config: WebhookServerConfig,
    state: WebhookState,
    readiness: Readiness,
) -> Result<ServerHandle, ServerError> {
    readiness.require(WEBHOOK_COMPONENT);
    let limits = state.limits();
    let metrics = state.metrics().clone();

    let (tls, cert_dir) = match &config.tls {
        TlsSource::InMemory { cert_pem, key_pem } => (TlsHandle::new(cert_pem, key_pem)?, None),
        TlsSource::CertDir { dir, poll_interval } => {
            let (cert_pem, key_pem) = tls::read_cert_dir(dir)?;
            (
                TlsHandle::new(&cert_pem, &key_pem)?,
                Some((dir.clone(), *poll_interval)),
            )
        }
    };
    let tls = tls.with_metrics(metrics.webhook.clone());

    let webhook_listener = bind(config.listen_address).await?;
    let webhook_address = local_address(&webhook_listener, config.listen_address)?;
    let health_listener = bind(config.health_listen_address).await?;
    let health_address = local_address(&health_listener, config.health_listen_address)?;

    let webhook_listener = webhook_listener
        .into_std()
        .map_err(|source| ServerError::Bind {
            address: config.listen_address,
            source,
        })?;
    let mut webhook_server =
        axum_server::tls_rustls::from_tcp_rustls(webhook_listener, tls.rustls_config())
            .map_err(|source| ServerError::Bind {
                address: config.listen_address,
                source,
            })?
            .map(|acceptor| {
                // Without TCP_NODELAY a small h2 frame can wait for the client's delayed ACK:
                // a 40 ms stall every few hundred requests on a kept-alive connection.
                acceptor
                    .handshake_timeout(limits.tls_handshake_timeout)
                    .acceptor(axum_server::accept::NoDelayAcceptor::new())
            });
    webhook_server
        .http_builder()
        .http1()
        .header_read_timeout(Some(limits.header_read_timeout));
    webhook_server
        .http_builder()
        .http2()
        .keep_alive_interval(Some(Duration::from_secs(20)))
        .keep_alive_timeout(Duration::from_secs(20));
    let webhook_control = axum_server::Handle::new();
    // Also bounds HTTP/2 connections, which the HTTP/1 header timeout does not cover.
    let webhook_server = webhook_server.first_request_timeout(limits.header_read_timeout);
    let app = router(state);
    let webhook_task = tokio::spawn(
        webhook_server
            .handle(webhook_control.clone())
            .serve(app.into_make_service()),
    );

    let (health_stop, health_stopped) = oneshot::channel::<()>();
    let health_app = health_router(readiness.clone());
    let health_task = tokio::spawn(async move {
        axum::serve(health_listener, health_app)
            .with_graceful_shutdown(async {
                // A dropped sender means the handle is gone: stop as well.
                let _ = health_stopped.await;
            })
            .await
    });

    let watcher_task = cert_dir
        .map(|(dir, interval)| tokio::spawn(tls::watch_cert_dir(tls.clone(), dir, interval)));

    readiness.set_ready(WEBHOOK_COMPONENT);
    info!(%webhook_address, %health_address, not_after = %tls.not_after(), "webhook server listening");

    Ok(ServerHandle {
        webhook_address,
        health_address,
        tls,
        readiness,
        shutdown_grace: config.shutdown_grace,
        webhook_control,
        webhook_task,
        health_stop,
        health_task,
        watcher_task,
    })
}

async fn bind(address: SocketAddr) -> Result<TcpListener, ServerError> {
    TcpListener::bind(address)
        .await
        .map_err(|source| ServerError::Bind { address, source })
}

fn local_address(listener: &TcpListener, requested: SocketAddr) -> Result<SocketAddr, ServerError> {
    listener.local_addr().map_err(|source| ServerError::Bind {
        address: requested,
        source,
    })
}

impl ServerHandle {
    /// The bound HTTPS address (the real port when 0 was requested).
    pub fn webhook_address(&self) -> SocketAddr {
        self.webhook_address
    }

    /// The bound probe address.
    pub fn health_address(&self) -> SocketAddr {
        self.health_address
    }

    /// The serving certificate; [`TlsHandle::replace`] rotates it without a restart.
    pub fn tls(&self) -> &TlsHandle {
        &self.tls
    }

    /// Serves until `signal` completes, then shuts down gracefully. If a listener fails first,
    /// the other is stopped too and the failure returned.
    pub async fn run_until(mut self, signal: impl Future<Output = ()>) -> Result<(), ServerError> {
        tokio::select! {
            () = signal => self.shutdown().await,
            ended = &mut self.webhook_task => {
                let failure = unexpected_end("webhook", ended);
                self.readiness.set_not_ready(WEBHOOK_COMPONENT);
                self.stop_background();
                let _ = self.health_stop.send(());
                if let Err(err) = flatten("health", self.health_task.await) {
                    warn!(error = %err, "health listener failed while stopping");
                }
                Err(failure)
            }
            ended = &mut self.health_task => {
                let failure = unexpected_end("health", ended);
                self.readiness.set_not_ready(WEBHOOK_COMPONENT);
                self.stop_background();
                self.webhook_control.graceful_shutdown(Some(self.shutdown_grace));
                if let Err(err) = flatten("webhook", self.webhook_task.await) {
                    warn!(error = %err, "webhook listener failed while stopping");
                }
                Err(failure)
            }
        }
    }

    /// Graceful shutdown: reports not ready, stops accepting, lets in-flight requests finish
    /// within the grace period, then stops the probe listener.
    pub async fn shutdown(self) -> Result<(), ServerError> {
        self.readiness.set_not_ready(WEBHOOK_COMPONENT);
        self.stop_background();
        self.webhook_control
            .graceful_shutdown(Some(self.shutdown_grace));
        let webhook = flatten("webhook", self.webhook_task.await);
        let _ = self.health_stop.send(());
        let health = flatten("health", self.health_task.await);
        info!("webhook server stopped");
        webhook.and(health)
    }

    fn stop_background(&self) {
        if let Some(watcher) = &self.watcher_task {
            watcher.abort();
        }
    }
}

fn unexpected_end(
    listener: &'static str,
    ended: Result<std::io::Result<()>, tokio::task::JoinError>,
) -> ServerError {
    flatten(listener, ended)
        .err()
        .unwrap_or(ServerError::Serve {
            listener,
            source: std::io::Error::other("listener stopped unexpectedly"),
        })
}

fn flatten(
    listener: &'static str,
    ended: Result<std::io::Result<()>, tokio::task::JoinError>,
) -> Result<(), ServerError> {
    match ended {
        Ok(Ok(())) => Ok(()),
        Ok(Err(source)) => Err(ServerError::Serve { listener, source }),
        Err(source) => Err(ServerError::Task { listener, source }),
    }
}
