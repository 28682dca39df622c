//! Kueue's visibility API (`visibility.kueue.x-k8s.io`, gate `VisibilityOnDemand`): the
//! pending workloads of a ClusterQueue or LocalQueue with their positions, served by every
//! replica behind the API server's aggregation layer, so that `kubectl get --raw` and
//! `kubectl kueue list workload` read them as they read Kueue's.
//!
//! - [`pending`]: the lists, in the quota core's queue order (pure).
//! - [`front_proxy`]: who is asking, from the API server's front-proxy headers.
//! - [`server`]: the HTTPS routes, discovery, statuses and access reviews.
//! - [`explain`]: `kuota explain`, why one job waits, from the same lists and quota core.
//!
//! Every request reads the replica's watch caches afresh: a list costs one conversion of the
//! cluster's workloads, which is what a person running `kubectl` waits for, never the
//! admitter.

pub mod explain;
pub mod front_proxy;
pub mod pending;
pub mod server;

use std::path::Path;
use std::sync::Arc;

use k8s_openapi::api::core::v1::ConfigMap;
use kube::{Api, Client};

use crate::config::Configuration;
use crate::quota::from_api::ConversionOptions;
use crate::stores::Stores;
use crate::tls::certs::CertError;
use crate::tls::serving::{self as tls, TlsError};
use crate::webhook::metrics_server::self_signed_cert;
use front_proxy::{
    AUTHENTICATION_CONFIG_MAP, AUTHENTICATION_CONFIG_MAP_NAMESPACE, RequestHeaderAuth,
};
pub use server::{ApiServerAuthorizer, VisibilityServerError, VisibilityServerHandle};
use server::{VisibilityState, serve_visibility};

/// The API group.
pub const GROUP: &str = "visibility.kueue.x-k8s.io";
/// The served versions, preferred first.
pub const VERSIONS: [&str; 2] = ["v1beta2", "v1beta1"];
/// Where Kueue reads the visibility certificate when its internal certificate management is
/// off (cert-manager mounts it there).
pub const MOUNTED_CERT_DIR: &str = "/visibility";

/// Why the visibility server could not start.
#[derive(Debug, thiserror::Error)]
pub enum VisibilityStartError {
    /// The self-signed certificate could not be minted.
    #[error("visibility certificate: {0}")]
    Mint(#[from] CertError),
    /// The certificate cannot be served.
    #[error("visibility certificate: {0}")]
    Tls(#[from] TlsError),
    /// The listener could not start.
    #[error("{0}")]
    Server(#[from] VisibilityServerError),
}

/// Starts the visibility server where the configuration puts it; `None` when the
/// `VisibilityOnDemand` gate is off. The certificate is self-signed under internal certificate
/// management (the APIService skips verification, as Kueue's does), else `tls.crt` and
/// `tls.key` in [`MOUNTED_CERT_DIR`].
pub async fn start(
    client: &Client,
    config: &Configuration,
    stores: &Stores,
) -> Result<Option<VisibilityServerHandle>, VisibilityStartError> {
    let Some(address) = config.visibility_server else {
        return Ok(None);
    };
    let (cert_pem, key_pem) = if config.internal_cert_management.is_some() {
        self_signed_cert()?
    } else {
        tls::read_cert_dir(Path::new(MOUNTED_CERT_DIR))?
    };
    let front_proxy = read_front_proxy(client).await;
    let tls = match &front_proxy.client_ca_pem {
        Some(client_ca) => tls::server_config_verifying_clients(&cert_pem, &key_pem, client_ca)?,
        None => tls::server_config(&cert_pem, &key_pem)?,
    };
    let state = VisibilityState {
        cluster: Arc::new(stores.clone()),
        options: ConversionOptions::from_config(config),
        admission_fair_sharing: config
            .admission_fair_sharing
            .as_ref()
            .map(|fair_sharing| fair_sharing.resource_weights.clone()),
        front_proxy: Arc::new(front_proxy),
        authorizer: Arc::new(ApiServerAuthorizer(client.clone())),
    };
    Ok(Some(serve_visibility(address.socket_addr(), tls, state)?))
}

/// The front-proxy settings the API server publishes; without them no request can be
/// authenticated, which is logged once here and answered 401 on every request.
async fn read_front_proxy(client: &Client) -> RequestHeaderAuth {
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), AUTHENTICATION_CONFIG_MAP_NAMESPACE);
    let data = match api.get_opt(AUTHENTICATION_CONFIG_MAP).await {
        Ok(Some(map)) => map.data.unwrap_or_default(),
        Ok(None) => Default::default(),
        Err(err) => {
            tracing::warn!(%err, "cannot read {AUTHENTICATION_CONFIG_MAP_NAMESPACE}/{AUTHENTICATION_CONFIG_MAP}: the visibility API will refuse every request");
            return RequestHeaderAuth::default();
        }
    };
    let auth = RequestHeaderAuth::from_config_map(&data).unwrap_or_else(|err| {
        tracing::warn!(%err, "the visibility API will refuse every request");
        RequestHeaderAuth::default()
    });
    if auth.client_ca_pem.is_none() {
        tracing::warn!(
            "{AUTHENTICATION_CONFIG_MAP_NAMESPACE}/{AUTHENTICATION_CONFIG_MAP} has no requestheader-client-ca-file (kube-apiserver runs without --requestheader-client-ca-file): the visibility API will refuse every request"
        );
    }
    auth
}
