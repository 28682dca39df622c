#![forbid(unsafe_code)]

pub mod config;
