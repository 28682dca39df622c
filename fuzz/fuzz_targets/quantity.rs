//! Any text as a Kubernetes quantity: read or refused, and a value read back as written.
#![no_main]

use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use kuota::k8s::quantity::{format_quantity, resource_value};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    for resource in ["cpu", "memory", "nvidia.com/gpu"] {
        if let Ok(value) = resource_value(resource, &Quantity(text.to_owned())) {
            let written = format_quantity(resource, value);
            assert_eq!(
                resource_value(resource, &written),
                Ok(value),
                "{text:?} as {written:?}"
            );
        }
    }
});
