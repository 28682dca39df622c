//! Any text as Kueue's Configuration file: loaded or refused with errors, never a panic.
#![no_main]

use kuota::config::{Configuration, LoadOptions};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let _ = Configuration::from_yaml(text, &LoadOptions::default());
});
