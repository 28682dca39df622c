#![forbid(unsafe_code)]
pub mod certs;
