#![forbid(unsafe_code)]
pub mod certs;
pub mod metrics;
pub mod webhook;
