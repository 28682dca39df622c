#![forbid(unsafe_code)]
pub mod jobs;
