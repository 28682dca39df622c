//! Kuota: Kubernetes-native job queueing and quota admission, a drop-in for Kueue's API.
#![forbid(unsafe_code)]

pub mod admitter;
pub mod api;
pub mod cert_manager;
pub mod certs;
pub mod cli;
pub mod config;
pub mod jobs;
pub mod metrics;
pub mod run;
pub mod serve;
pub mod stores;
pub mod telemetry;
pub mod webhook;

pub use run::run;
