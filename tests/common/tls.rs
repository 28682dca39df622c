//! TLS helpers for tests that talk to a real webhook listener: a client config trusting a test
//! CA (ring, chosen protocol versions), a reqwest client built from it, and a raw TLS
//! connection for byte-level tests.

use std::net::SocketAddr;
use std::sync::{Arc, Once};

use kuota::tls::certs::CertificateAuthority;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName};
use rustls::{ClientConfig, RootCertStore, SupportedProtocolVersion};
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;
use tokio_rustls::client::TlsStream;

/// Name the test serving certificates are issued for.
pub const SERVER_NAME: &str = "localhost";

/// Installs the crypto provider and a test log writer, once per test binary.
pub fn setup() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        kuota::tls::install_crypto_provider();
        let _ = tracing_subscriber::fmt()
            .with_env_filter(
                tracing_subscriber::EnvFilter::try_from_default_env()
                    .unwrap_or_else(|_| "kuota=debug".into()),
            )
            .with_test_writer()
            .try_init();
    });
}

/// A rustls client config trusting `ca_pem`, offering only `versions`.
pub fn client_config(ca_pem: &str, versions: &[&'static SupportedProtocolVersion]) -> ClientConfig {
    let mut roots = RootCertStore::empty();
    for cert in CertificateDer::pem_slice_iter(ca_pem.as_bytes()) {
        roots.add(cert.unwrap()).unwrap();
    }
    ClientConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
        .with_protocol_versions(versions)
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth()
}

/// How a test client uses connections.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Connections {
    /// HTTP/1.1, connections reused across requests.
    Pooled,
    /// HTTP/1.1, a new connection (and handshake) for every request.
    PerRequest,
    /// HTTP/2 negotiated by ALPN, as the API server calls webhooks.
    Http2,
}

/// A reqwest client trusting `ca_pem` (TLS 1.2 and 1.3).
pub fn https_client(ca_pem: &str, connections: Connections) -> reqwest::Client {
    let mut config = client_config(ca_pem, rustls::ALL_VERSIONS);
    let mut builder = reqwest::Client::builder();
    match connections {
        Connections::Pooled => {}
        Connections::PerRequest => builder = builder.pool_max_idle_per_host(0),
        Connections::Http2 => config.alpn_protocols = vec![b"h2".to_vec()],
    }
    builder
        .use_preconfigured_tls(config)
        .resolve(SERVER_NAME, SocketAddr::from(([127, 0, 0, 1], 0)))
        .build()
        .unwrap()
}

/// Opens a TLS connection to `address`, verifying the server as `server_name`.
pub async fn connect(
    address: SocketAddr,
    config: ClientConfig,
    server_name: &str,
) -> std::io::Result<TlsStream<TcpStream>> {
    let tcp = TcpStream::connect(address).await?;
    let name = ServerName::try_from(server_name.to_owned()).unwrap();
    TlsConnector::from(Arc::new(config))
        .connect(name, tcp)
        .await
}

/// The DER of the certificate the server at `address` presents now.
pub async fn served_certificate(address: SocketAddr, ca_pem: &str) -> Vec<u8> {
    let stream = connect(
        address,
        client_config(ca_pem, rustls::ALL_VERSIONS),
        SERVER_NAME,
    )
    .await
    .unwrap();
    let (_, session) = stream.get_ref();
    session.peer_certificates().unwrap()[0].to_vec()
}

/// The DER of the first certificate in `pem`.
pub fn der_of(pem: &str) -> Vec<u8> {
    CertificateDer::from_pem_slice(pem.as_bytes())
        .unwrap()
        .to_vec()
}

/// A fresh CA for one test.
pub fn test_ca() -> CertificateAuthority {
    CertificateAuthority::generate("kueue-ca", "kueue", std::time::Duration::from_secs(3600))
        .unwrap()
}
