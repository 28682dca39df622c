//! What the webhook answers: defaulting and validation of every job kind and Kueue kind, the
//! "can this ever fit" capacity check, and the lookups they read. The HTTP/TLS transport that
//! carries these answers is [`crate::webhook`]; nothing here knows about sockets.
//!
//! [`table`] lists every webhook path with what it does (and builds the webhook
//! configurations from it); [`handler::KuotaAdmission`] dispatches a request to [`jobs`] or to
//! the Kueue kind's module under [`kueue`].

pub mod capacity;
pub mod handler;
pub mod jobs;
pub mod kueue;
pub mod lookup;
pub mod table;

pub use handler::{KuotaAdmission, converter};
