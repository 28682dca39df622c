//! Kuota: Kubernetes-native job queueing and quota admission, a drop-in for Kueue's API.
#![forbid(unsafe_code)]

pub mod admission;
pub mod admitter;
pub mod api;
pub mod cli;
pub mod config;
pub mod jobs;
pub mod k8s;
pub mod metrics;
pub mod quota;
pub mod run;
pub mod serve;
pub mod stores;
pub mod telemetry;
#[cfg(any(test, feature = "testing"))]
pub mod testing;
pub mod tls;
pub mod visibility;
pub mod webhook;

pub use run::run;
