//! Any bytes as an AdmissionReview body: decoding refuses or yields a request, which every
//! webhook answers without panicking; a patch comes only with an allowed request and applies to
//! the object it was computed from.
#![no_main]

use std::sync::{Arc, LazyLock};

use kuota::admission::KuotaAdmission;
use kuota::config::{Configuration, LoadOptions};
use kuota::testing::lookup::InMemoryLookup;
use kuota::webhook::AdmissionHandler;
use kuota::webhook::review::parse_admission_review;
use libfuzzer_sys::fuzz_target;

static HANDLER: LazyLock<KuotaAdmission> = LazyLock::new(|| {
    let config = Configuration::from_defaults(&LoadOptions::default()).expect("defaults");
    let state = InMemoryLookup::new().with_namespace("team-a", &[]);
    KuotaAdmission::new(Arc::new(config), Arc::new(state))
});

fuzz_target!(|data: &[u8]| {
    let Ok(request) = parse_admission_review(data) else {
        return;
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("a runtime");
    for route in HANDLER.routes() {
        if route.webhook_type == kuota::webhook::WebhookType::Mutating && !route.matches(&request) {
            // The server answers these unchanged without asking the handler.
            continue;
        }
        let response = runtime.block_on(HANDLER.admit(&route, &request));
        let Some(patch) = response.patch else {
            continue;
        };
        assert!(response.allowed, "{}: a patch on a denial", route.path);
        let patch: json_patch::Patch = serde_json::from_slice(&patch).expect("a JSON patch");
        let mut object = serde_json::to_value(&request.object).expect("the object");
        json_patch::patch(&mut object, &patch).expect("the patch applies");
    }
});
