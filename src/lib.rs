//! Kuota: Kubernetes-native job queueing and quota admission, a drop-in for Kueue's API.
#![forbid(unsafe_code)]

pub mod api;
pub mod cli;
pub mod config;
pub mod jobs;
pub mod telemetry;
