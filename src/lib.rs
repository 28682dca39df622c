#![forbid(unsafe_code)]

pub mod cli;
pub mod config;
pub mod telemetry;
