#![forbid(unsafe_code)]

pub mod api;
