//! Certificates for the webhook: minting with rcgen ([`certs`]), Kueue's internal certificate
//! management in a Secret with CA injection ([`manager`]), and the rustls server configuration
//! that the HTTPS server reloads in place ([`serving`]).

pub mod certs;
pub mod manager;
pub mod serving;

pub use serving::{TlsError, TlsHandle, install_crypto_provider};
