//! `kuota serve`: the webhook on every replica, the admitter on the Lease holder.

use std::{net::SocketAddr, path::PathBuf, sync::Arc, time::Duration};

use axum::http::Uri;
use k8s_openapi::{
    api::admissionregistration::v1::{
        MutatingWebhookConfiguration, ValidatingWebhookConfiguration, WebhookClientConfig,
    },
    apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition,
};
use kube::{
    Api, Client, ResourceExt,
    api::{DeleteParams, Patch, PatchParams},
    config::{KubeConfigOptions, Kubeconfig},
};
use serde_json::json;

use crate::{
    admission::{KuotaAdmission, converter, lookup::StoreLookup, table},
    admitter,
    api::{constants::GROUP, crds},
    config::{Configuration, Feature},
    metrics::MetricsRegistry,
    stores::Stores,
    tls::{
        certs::{CA_COMMON_NAME, CA_ORGANIZATION, CertificateAuthority},
        manager::{CertManager, CertManagerConfig},
    },
    visibility::{self, VisibilityServerHandle},
    webhook::{
        self, ApiServerReviewer, MetricsAuthorizer, MetricsServerHandle, Readiness, TlsSource,
        WebhookServerConfig, WebhookState, metrics_server::default_cert_dir,
    },
};

/// The readiness component set once the reflector stores have synced.
pub const STORES_COMPONENT: &str = "stores";
/// Field manager of everything `kuota serve` applies.
pub const FIELD_MANAGER: &str = "kuota";

/// Why `kuota serve` stopped with an error.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    #[error("kubeconfig: {0}")]
    Kubeconfig(#[from] kube::config::KubeconfigError),
    #[error("kubernetes client: {0}")]
    Kube(#[from] kube::Error),
    #[error("kubernetes client configuration: {0}")]
    InferConfig(#[from] kube::config::InferConfigError),
    #[error("webhook certificates: {0}")]
    Certs(#[from] crate::tls::certs::CertError),
    #[error("webhook certificates: {0}")]
    CertManager(#[from] crate::tls::manager::CertManagerError),
    #[error("webhook server: {0}")]
    Server(#[from] webhook::ServerError),
    #[error("{0}")]
    Metrics(#[from] webhook::MetricsServerError),
    #[error("{0}")]
    VisibilityStart(#[from] visibility::VisibilityStartError),
    #[error("{0}")]
    Visibility(#[from] visibility::VisibilityServerError),
    #[error("--webhook-url {0}: {1}")]
    WebhookUrl(Uri, &'static str),
}

/// Runs until SIGTERM or Ctrl-C.
pub async fn serve(
    config: Configuration,
    kubeconfig: Option<PathBuf>,
    out_of_cluster: Option<OutOfClusterArgs>,
) -> Result<(), ServeError> {
    let config = Arc::new(config);
    let client = client(kubeconfig.as_deref()).await?;
    let metrics = Arc::new(MetricsRegistry::with_local_queue_metrics(
        config.feature_gates.enabled(Feature::LocalQueueMetrics),
    ));
    let (stores, drivers) = Stores::new(&client, config.topology_gates().enabled);
    tokio::spawn(drivers.run());
    let readiness = Readiness::new([STORES_COMPONENT]);

    let out_of_cluster = match &out_of_cluster {
        Some(args) => Some(OutOfCluster::new(args)?),
        None => None,
    };
    let (tls, listen, rotation) = match &out_of_cluster {
        Some(ooc) => (
            TlsSource::InMemory {
                cert_pem: ooc.cert_pem.clone(),
                key_pem: ooc.key_pem.clone(),
            },
            ooc.listen,
            None,
        ),
        None => match &config.internal_cert_management {
            Some(icm) => {
                let manager = CertManager::new(
                    client.clone(),
                    CertManagerConfig::new(
                        &config.namespace,
                        &icm.webhook_service_name,
                        &icm.webhook_secret_name,
                    ),
                );
                let bundle = manager.ensure().await?;
                manager.inject_ca_bundle(&bundle.ca_cert).await?;
                (
                    TlsSource::InMemory {
                        cert_pem: bundle.tls_cert.clone(),
                        key_pem: bundle.tls_key.clone(),
                    },
                    config.webhook.address.socket_addr(),
                    Some((manager, bundle)),
                )
            }
            None => (
                TlsSource::CertDir {
                    dir: config.webhook.cert_dir.clone(),
                    poll_interval: Duration::from_secs(10),
                },
                config.webhook.address.socket_addr(),
                None,
            ),
        },
    };

    let lookup = Arc::new(StoreLookup::new(stores.clone(), client.clone()));
    let handler = Arc::new(KuotaAdmission::new(config.clone(), lookup));
    let state = WebhookState::new(handler, metrics.clone()).with_converter(converter());
    let mut server_config = WebhookServerConfig::new(tls);
    server_config.listen_address = listen;
    if let Some(health) = &config.health.probe_bind_address {
        server_config.health_listen_address = health.socket_addr();
    }
    let server = webhook::serve(server_config, state, readiness.clone()).await?;
    tracing::info!(address = %server.webhook_address(), health = %server.health_address(), "webhook serving");
    let metrics_server = serve_metrics(&config, &client, &metrics).await?;
    let visibility_server = visibility::start(&client, &config, &stores).await?;

    if let Some((manager, bundle)) = rotation {
        tokio::spawn(manager.run(server.tls().clone(), bundle));
    }
    if let Some(ooc) = &out_of_cluster {
        ooc.register(&client, &config).await?;
    }

    {
        let stores = stores.clone();
        let readiness = readiness.clone();
        tokio::spawn(async move {
            match stores.wait_until_ready(Duration::from_secs(120)).await {
                Ok(()) => readiness.set_ready(STORES_COMPONENT),
                Err(err) => tracing::error!(%err, "not ready"),
            }
        });
    }

    let (stop_admitter, admitter_stopped) = tokio::sync::oneshot::channel::<()>();
    let admitter = tokio::spawn(admitter::run(
        client.clone(),
        config.clone(),
        stores.clone(),
        metrics.clone(),
        async move {
            let _ = admitter_stopped.await;
        },
    ));

    let result = run_servers(server, metrics_server, visibility_server).await;
    let _ = stop_admitter.send(());
    if tokio::time::timeout(Duration::from_secs(5), admitter)
        .await
        .is_err()
    {
        tracing::warn!("the admitter did not stop within 5s");
    }
    if let Some(ooc) = &out_of_cluster {
        ooc.unregister(&client, &config).await;
    }
    result
}

/// The metrics server on `metrics.bindAddress` (none for `"0"`), its callers reviewed by the
/// API server.
async fn serve_metrics(
    config: &Configuration,
    client: &Client,
    metrics: &Arc<MetricsRegistry>,
) -> Result<Option<MetricsServerHandle>, ServeError> {
    let Some(address) = config.metrics.bind_address else {
        return Ok(None);
    };
    let source = webhook::metrics_cert_source(
        config.internal_cert_management.is_some(),
        &default_cert_dir(),
    );
    let authorizer = MetricsAuthorizer::new(Arc::new(ApiServerReviewer::new(client.clone())));
    let server = webhook::serve_metrics(
        address.socket_addr(),
        &source,
        metrics.clone(),
        Arc::new(authorizer),
    )
    .await?;
    tracing::info!(address = %server.address(), "metrics serving");
    Ok(Some(server))
}

/// Serves until SIGTERM or Ctrl-C; a listener that fails stops the others too, as a failed
/// runnable stops Kueue's manager.
async fn run_servers(
    webhook: webhook::ServerHandle,
    metrics: Option<MetricsServerHandle>,
    visibility: Option<VisibilityServerHandle>,
) -> Result<(), ServeError> {
    let (stopping, _) = tokio::sync::watch::channel(false);
    let stop_requested = || {
        let mut stop = stopping.subscribe();
        async move {
            let _ = stop.wait_for(|stop| *stop).await;
        }
    };
    let signal = async {
        tokio::select! {
            () = shutdown_signal() => {}
            () = stop_requested() => {}
        }
        stopping.send_replace(true);
    };
    let webhook = async {
        let result = webhook.run_until(stop_requested()).await;
        stopping.send_replace(true);
        result.map_err(ServeError::from)
    };
    let metrics = async {
        let Some(metrics) = metrics else {
            return Ok(());
        };
        let result = metrics.run_until(stop_requested()).await;
        stopping.send_replace(true);
        result.map_err(ServeError::from)
    };
    let visibility = async {
        let Some(visibility) = visibility else {
            return Ok(());
        };
        let result = visibility.run_until(stop_requested()).await;
        stopping.send_replace(true);
        result.map_err(ServeError::from)
    };
    let ((), webhook, metrics, visibility) = tokio::join!(signal, webhook, metrics, visibility);
    webhook.and(metrics).and(visibility)
}

/// Removes Kuota's resource-in-use finalizer from every ClusterQueue, ResourceFlavor and
/// Workload; returns how many objects it changed.
pub async fn release_finalizers(kubeconfig: Option<&std::path::Path>) -> Result<usize, ServeError> {
    use crate::api::{constants::RESOURCE_IN_USE_FINALIZER, v1beta2};
    use crate::k8s::finalizers::release;
    let client = client(kubeconfig).await?;
    let workloads = release(
        &Api::<v1beta2::Workload>::all(client.clone()),
        |workload| Api::namespaced(client.clone(), &workload.namespace().unwrap_or_default()),
        RESOURCE_IN_USE_FINALIZER,
    )
    .await?;
    let cluster_queues = Api::<v1beta2::ClusterQueue>::all(client.clone());
    let cluster_queues = release(
        &cluster_queues,
        |_| cluster_queues.clone(),
        RESOURCE_IN_USE_FINALIZER,
    )
    .await?;
    let flavors = Api::<v1beta2::ResourceFlavor>::all(client.clone());
    let flavors = release(&flavors, |_| flavors.clone(), RESOURCE_IN_USE_FINALIZER).await?;
    Ok(workloads + cluster_queues + flavors)
}

/// `kuota explain`: the line for `target` (`KIND/NAME`) in `namespace` (the kubeconfig
/// context's by default).
pub async fn explain(
    config: &Configuration,
    kubeconfig: Option<&std::path::Path>,
    target: &str,
    namespace: Option<&str>,
) -> Result<String, visibility::explain::ExplainError> {
    use crate::quota::from_api::{ConversionOptions, scheduler_config};
    use visibility::explain;
    let (kind, name) = explain::parse_target(target)?;
    let client = client(kubeconfig)
        .await
        .map_err(|error| explain::ExplainError::Client(error.to_string()))?;
    let namespace = namespace.unwrap_or(client.default_namespace()).to_owned();
    let (subject, state) = explain::read(&client, &namespace, kind, &name).await?;
    Ok(explain::explain(
        &subject,
        &state,
        &ConversionOptions::from_config(config),
        scheduler_config(config),
        jiff::Timestamp::now(),
    ))
}

async fn client(kubeconfig: Option<&std::path::Path>) -> Result<Client, ServeError> {
    let config = match kubeconfig {
        Some(path) => {
            kube::Config::from_custom_kubeconfig(
                Kubeconfig::read_from(path)?,
                &KubeConfigOptions::default(),
            )
            .await?
        }
        None => kube::Config::infer().await?,
    };
    Ok(Client::try_from(config)?)
}

async fn shutdown_signal() {
    let ctrl_c = tokio::signal::ctrl_c();
    #[cfg(unix)]
    {
        let mut term =
            match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
                Ok(term) => term,
                Err(_) => {
                    let _ = ctrl_c.await;
                    return;
                }
            };
        tokio::select! {
            _ = ctrl_c => {}
            _ = term.recv() => {}
        }
    }
    #[cfg(not(unix))]
    let _ = ctrl_c.await;
}

/// How `kuota serve` runs out of cluster (`--webhook-url`, `--admitter-only`).
#[derive(Clone, Debug)]
pub struct OutOfClusterArgs {
    /// The HTTPS base URL at which the API server reaches this process.
    pub url: Uri,
    /// Whether anything is registered with the API server: the admission webhook configurations
    /// and the CRD conversion (not in admitter-only mode).
    pub register_webhooks: bool,
}

/// Development mode: the webhook runs outside the cluster at a URL the API server can reach;
/// unless admitter-only, our webhook configurations and CRD conversion are registered with that
/// URL and removed again on a clean shutdown.
struct OutOfCluster {
    url: String,
    register_webhooks: bool,
    listen: SocketAddr,
    ca_pem: String,
    cert_pem: String,
    key_pem: String,
}

impl OutOfCluster {
    fn new(args: &OutOfClusterArgs) -> Result<Self, ServeError> {
        let url = &args.url;
        let host = url
            .host()
            .ok_or_else(|| ServeError::WebhookUrl(url.clone(), "must name a host"))?;
        let port = url.port_u16().unwrap_or(443);
        let ip: Option<std::net::IpAddr> = host.trim_matches(['[', ']']).parse().ok();
        let listen = SocketAddr::new(ip.unwrap_or(std::net::IpAddr::from([0, 0, 0, 0])), port);
        let ca = CertificateAuthority::generate(
            CA_COMMON_NAME,
            CA_ORGANIZATION,
            Duration::from_secs(365 * 24 * 3600),
        )?;
        let (dns, ips) = match ip {
            Some(ip) => (vec![], vec![ip]),
            None => (vec![host.to_string()], vec![]),
        };
        let serving = ca.issue_serving_cert(&dns, &ips, Duration::from_secs(365 * 24 * 3600))?;
        let base = url.to_string();
        Ok(Self {
            url: base.trim_end_matches('/').to_string(),
            register_webhooks: args.register_webhooks,
            listen,
            ca_pem: ca.cert_pem().to_string(),
            cert_pem: serving.cert_pem,
            key_pem: serving.key_pem,
        })
    }

    fn client_config(&self, path: &str) -> WebhookClientConfig {
        WebhookClientConfig {
            url: Some(format!("{}{path}", self.url)),
            ca_bundle: Some(k8s_openapi::ByteString(self.ca_pem.as_bytes().to_vec())),
            service: None,
        }
    }

    /// Our webhook configurations, pointing at this URL.
    fn configurations(
        &self,
        config: &Configuration,
    ) -> (MutatingWebhookConfiguration, ValidatingWebhookConfiguration) {
        let client_config = |path: &str| self.client_config(path);
        (
            table::mutating_configuration("kueue-", client_config, &config.namespace),
            table::validating_configuration("kueue-", client_config, &config.namespace),
        )
    }

    async fn register(&self, client: &Client, config: &Configuration) -> Result<(), ServeError> {
        if !self.register_webhooks {
            tracing::info!(
                url = %self.url,
                "admitter-only: no admission webhook configuration or CRD conversion registered"
            );
            return Ok(());
        }
        let params = PatchParams::apply(FIELD_MANAGER).force();
        let (mutating, validating) = self.configurations(config);
        let api: Api<MutatingWebhookConfiguration> = Api::all(client.clone());
        api.patch(&mutating.name_any(), &params, &Patch::Apply(&mutating))
            .await?;
        let api: Api<ValidatingWebhookConfiguration> = Api::all(client.clone());
        api.patch(&validating.name_any(), &params, &Patch::Apply(&validating))
            .await?;
        let crd_api: Api<CustomResourceDefinition> = Api::all(client.clone());
        for plural in crds::CONVERTED_PLURALS {
            let name = format!("{plural}.{GROUP}");
            if crd_api.get_opt(&name).await?.is_none() {
                continue;
            }
            let conversion = json!({"spec": {"conversion": {
                "strategy": "Webhook",
                "webhook": {
                    "clientConfig": self.client_config(webhook::CONVERT_PATH),
                    "conversionReviewVersions": ["v1"],
                }
            }}});
            crd_api
                .patch(&name, &PatchParams::default(), &Patch::Merge(conversion))
                .await?;
        }
        tracing::info!(url = %self.url, "registered the webhook configurations and CRD conversion");
        Ok(())
    }

    async fn unregister(&self, client: &Client, config: &Configuration) {
        if !self.register_webhooks {
            return;
        }
        let (mutating, validating) = self.configurations(config);
        let dp = DeleteParams::default();
        let api: Api<MutatingWebhookConfiguration> = Api::all(client.clone());
        let _ = api.delete(&mutating.name_any(), &dp).await;
        let api: Api<ValidatingWebhookConfiguration> = Api::all(client.clone());
        let _ = api.delete(&validating.name_any(), &dp).await;
        let crd_api: Api<CustomResourceDefinition> = Api::all(client.clone());
        for plural in crds::CONVERTED_PLURALS {
            let name = format!("{plural}.{GROUP}");
            let none = json!({"spec": {"conversion": {"strategy": "None", "webhook": null}}});
            let _ = crd_api
                .patch(&name, &PatchParams::default(), &Patch::Merge(none))
                .await;
        }
        tracing::info!("removed webhook configurations and CRD conversion");
    }
}
