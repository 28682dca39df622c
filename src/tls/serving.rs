//! TLS for the webhook listener: rustls (ring, TLS 1.2 and 1.3 only) behind an
//! `axum_server::tls_rustls::RustlsConfig` whose server config is swapped in place.
//!
//! A swap affects only handshakes that start after it; connections already open keep their
//! session, so rotating the certificate neither restarts the listener nor drops a request.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use axum_server::tls_rustls::RustlsConfig;
use jiff::Timestamp;
use rustls::ServerConfig;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use tracing::{debug, info, warn};

use crate::metrics::WebhookMetrics;
use crate::tls::certs::{self, TLS_CERT_FILE, TLS_KEY_FILE};

/// Installs ring as the process-wide rustls crypto provider. Safe to call more than once; the
/// first provider installed stays.
pub fn install_crypto_provider() {
    // An error only says a provider is already installed, which is what we want.
    let _ = rustls::crypto::ring::default_provider().install_default();
}

/// Why a certificate and key cannot be served.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    /// The certificate PEM holds no certificate or is malformed.
    #[error("invalid certificate PEM: {0}")]
    Certificate(String),
    /// The key PEM holds no private key or is malformed.
    #[error("invalid private key PEM: {0}")]
    Key(String),
    /// rustls refused the pair, e.g. because the key does not belong to the certificate.
    #[error("certificate and key cannot be served: {0}")]
    Rejected(#[from] rustls::Error),
    /// The certificate has expired.
    #[error("certificate expired at {0}")]
    Expired(Timestamp),
    /// Reading a certificate file failed.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The underlying error.
        source: std::io::Error,
    },
}

/// Builds the rustls server config for one certificate chain and key: ring, TLS 1.3 and 1.2,
/// ALPN h2 and http/1.1. Fails when the key does not match the leaf certificate.
pub fn server_config(cert_pem: &str, key_pem: &str) -> Result<ServerConfig, TlsError> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = ServerConfig::builder_with_provider(provider)
        .with_protocol_versions(&[&rustls::version::TLS13, &rustls::version::TLS12])?
        .with_no_client_auth();
    with_cert(builder, cert_pem, key_pem)
}

/// [`server_config`] that also asks clients for a certificate and accepts only those that
/// `client_ca_pem` signed; a client without a certificate still connects, and the server
/// decides what it may do.
pub fn server_config_verifying_clients(
    cert_pem: &str,
    key_pem: &str,
    client_ca_pem: &str,
) -> Result<ServerConfig, TlsError> {
    let mut roots = rustls::RootCertStore::empty();
    for cert in CertificateDer::pem_slice_iter(client_ca_pem.as_bytes()) {
        let cert = cert.map_err(|err| TlsError::Certificate(err.to_string()))?;
        roots.add(cert)?;
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let verifier = rustls::server::WebPkiClientVerifier::builder_with_provider(
        Arc::new(roots),
        provider.clone(),
    )
    .allow_unauthenticated()
    .build()
    .map_err(|err| TlsError::Certificate(format!("client CA: {err}")))?;
    let builder = ServerConfig::builder_with_provider(provider)
        .with_protocol_versions(&[&rustls::version::TLS13, &rustls::version::TLS12])?
        .with_client_cert_verifier(verifier);
    with_cert(builder, cert_pem, key_pem)
}

fn with_cert(
    builder: rustls::ConfigBuilder<ServerConfig, rustls::server::WantsServerCert>,
    cert_pem: &str,
    key_pem: &str,
) -> Result<ServerConfig, TlsError> {
    let chain = CertificateDer::pem_slice_iter(cert_pem.as_bytes())
        .collect::<Result<Vec<_>, _>>()
        .map_err(|err| TlsError::Certificate(err.to_string()))?;
    if chain.is_empty() {
        return Err(TlsError::Certificate("no CERTIFICATE block".to_owned()));
    }
    let key = PrivateKeyDer::from_pem_slice(key_pem.as_bytes())
        .map_err(|err| TlsError::Key(err.to_string()))?;
    let mut config = builder.with_single_cert(chain, key)?;
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok(config)
}

#[derive(Debug)]
struct LoadedPair {
    cert_pem: String,
    key_pem: String,
    not_after: Timestamp,
}

/// The serving certificate of a running listener; replacing it takes effect for the next
/// handshake. Cheap to clone.
#[derive(Clone, Debug)]
pub struct TlsHandle {
    config: RustlsConfig,
    loaded: Arc<Mutex<LoadedPair>>,
    metrics: Option<WebhookMetrics>,
}

impl TlsHandle {
    /// A handle serving `cert_pem` (leaf first, then any intermediates) with `key_pem`.
    pub fn new(cert_pem: &str, key_pem: &str) -> Result<Self, TlsError> {
        let (config, not_after) = checked_config(cert_pem, key_pem)?;
        Ok(Self {
            config: RustlsConfig::from_config(Arc::new(config)),
            loaded: Arc::new(Mutex::new(LoadedPair {
                cert_pem: cert_pem.to_owned(),
                key_pem: key_pem.to_owned(),
                not_after,
            })),
            metrics: None,
        })
    }

    /// Reports loads and rejections to the webhook metrics from now on.
    pub fn with_metrics(mut self, metrics: WebhookMetrics) -> Self {
        metrics.certificate_loaded(self.not_after());
        self.metrics = Some(metrics);
        self
    }

    /// Serves a new certificate and key from the next handshake on. An invalid, expired or
    /// mismatched pair is rejected and the current one kept; an identical pair is a no-op.
    pub fn replace(&self, cert_pem: &str, key_pem: &str) -> Result<(), TlsError> {
        let mut loaded = self.loaded.lock().unwrap_or_else(PoisonError::into_inner);
        if loaded.cert_pem == cert_pem && loaded.key_pem == key_pem {
            return Ok(());
        }
        let (config, not_after) = match checked_config(cert_pem, key_pem) {
            Ok(checked) => checked,
            Err(err) => {
                if let Some(metrics) = &self.metrics {
                    metrics.certificate_rejected();
                }
                return Err(err);
            }
        };
        self.config.reload_from_config(Arc::new(config));
        *loaded = LoadedPair {
            cert_pem: cert_pem.to_owned(),
            key_pem: key_pem.to_owned(),
            not_after,
        };
        if let Some(metrics) = &self.metrics {
            metrics.certificate_loaded(not_after);
        }
        info!(%not_after, "serving certificate replaced");
        Ok(())
    }

    /// Expiry of the certificate being served.
    pub fn not_after(&self) -> Timestamp {
        self.loaded
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .not_after
    }

    /// The certificate being served, PEM.
    pub fn cert_pem(&self) -> String {
        self.loaded
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .cert_pem
            .clone()
    }

    fn loaded_key_pem(&self) -> String {
        self.loaded
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .key_pem
            .clone()
    }

    /// The swappable config the listener reads at every handshake.
    pub(crate) fn rustls_config(&self) -> RustlsConfig {
        self.config.clone()
    }
}

fn checked_config(cert_pem: &str, key_pem: &str) -> Result<(ServerConfig, Timestamp), TlsError> {
    let info = certs::inspect_certificate(cert_pem)
        .map_err(|err| TlsError::Certificate(err.to_string()))?;
    if info.not_after <= Timestamp::now() {
        return Err(TlsError::Expired(info.not_after));
    }
    Ok((server_config(cert_pem, key_pem)?, info.not_after))
}

/// Reads `tls.crt` and `tls.key` from a certificate directory.
pub fn read_cert_dir(dir: &Path) -> Result<(String, String), TlsError> {
    let read = |name: &str| {
        let path = dir.join(name);
        std::fs::read_to_string(&path).map_err(|source| TlsError::Io { path, source })
    };
    Ok((read(TLS_CERT_FILE)?, read(TLS_KEY_FILE)?))
}

/// Polls `dir` every `interval` and serves its `tls.crt`/`tls.key` once they change into a
/// consistent pair. Runs until dropped.
///
/// A Secret update is not atomic from a reader's point of view: the two files can be seen
/// half-updated. The new pair is served only when the key belongs to the certificate, so a
/// renewal that keeps the key (only `tls.crt` changes) is picked up, and a half-written update
/// is retried at the next poll instead of breaking handshakes.
pub async fn watch_cert_dir(handle: TlsHandle, dir: PathBuf, interval: Duration) {
    let mut last_seen = Some((handle.cert_pem(), handle.loaded_key_pem()));
    let mut ticker = tokio::time::interval(interval);
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    ticker.tick().await;
    loop {
        ticker.tick().await;
        let on_disk = match read_cert_dir(&dir) {
            Ok(pair) => pair,
            Err(err) => {
                if last_seen.take().is_some() {
                    warn!(error = %err, "cannot read the certificate directory; keeping the served certificate");
                }
                continue;
            }
        };
        if last_seen.as_ref() == Some(&on_disk) {
            continue;
        }
        match handle.replace(&on_disk.0, &on_disk.1) {
            Ok(()) => debug!(dir = %dir.display(), "certificate directory checked"),
            Err(err) => {
                info!(error = %err, "certificate files changed but are not a servable pair yet; will retry")
            }
        }
        last_seen = Some(on_disk);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tls::certs::CertificateAuthority;

    const HOUR: Duration = Duration::from_secs(3600);

    fn ca() -> CertificateAuthority {
        CertificateAuthority::generate("kueue-ca", "kueue", 24 * HOUR).unwrap()
    }

    fn serving(ca: &CertificateAuthority) -> certs::ServingCert {
        ca.issue_serving_cert(&["localhost".to_owned()], &[], HOUR)
            .unwrap()
    }

    #[test]
    fn config_offers_only_tls12_and_tls13_with_alpn() {
        let cert = serving(&ca());
        let config = server_config(&cert.cert_pem, &cert.key_pem).unwrap();
        assert_eq!(
            config.alpn_protocols,
            vec![b"h2".to_vec(), b"http/1.1".to_vec()]
        );
        let versions: Vec<_> = config
            .crypto_provider()
            .cipher_suites
            .iter()
            .map(|suite| suite.version().version)
            .collect();
        assert!(versions.contains(&rustls::ProtocolVersion::TLSv1_2));
        assert!(versions.contains(&rustls::ProtocolVersion::TLSv1_3));
    }

    #[test]
    fn mismatched_key_is_rejected_and_old_pair_kept() {
        let ca = ca();
        let first = serving(&ca);
        let second = serving(&ca);
        let handle = TlsHandle::new(&first.cert_pem, &first.key_pem).unwrap();

        let err = handle
            .replace(&second.cert_pem, &first.key_pem)
            .unwrap_err();
        assert!(
            matches!(
                err,
                TlsError::Rejected(rustls::Error::InconsistentKeys(
                    rustls::InconsistentKeys::KeyMismatch
                ))
            ),
            "{err:?}"
        );
        assert_eq!(handle.cert_pem(), first.cert_pem);

        handle.replace(&second.cert_pem, &second.key_pem).unwrap();
        assert_eq!(handle.cert_pem(), second.cert_pem);
        assert_eq!(handle.not_after(), second.not_after);
    }

    #[test]
    fn expired_certificate_is_rejected() {
        let key = rcgen::KeyPair::generate().unwrap();
        let mut params = rcgen::CertificateParams::new(vec!["localhost".to_owned()]).unwrap();
        params.not_before = rcgen::date_time_ymd(2019, 1, 1);
        params.not_after = rcgen::date_time_ymd(2020, 1, 1);
        let cert = params.self_signed(&key).unwrap();
        let err = TlsHandle::new(&cert.pem(), &key.serialize_pem()).unwrap_err();
        assert_eq!(
            err.to_string(),
            "certificate expired at 2020-01-01T00:00:00Z"
        );
    }

    #[test]
    fn garbage_is_rejected() {
        let cert = serving(&ca());
        assert!(matches!(
            TlsHandle::new("nope", &cert.key_pem),
            Err(TlsError::Certificate(_))
        ));
        assert!(matches!(
            TlsHandle::new(&cert.cert_pem, "nope"),
            Err(TlsError::Key(_))
        ));
    }

    #[test]
    fn install_crypto_provider_twice_is_fine() {
        install_crypto_provider();
        install_crypto_provider();
        assert!(rustls::crypto::CryptoProvider::get_default().is_some());
    }
}
