#![forbid(unsafe_code)]

pub mod admitter;
