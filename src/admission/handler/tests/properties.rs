//! Properties of the handler over the samples' objects with random values put at random
//! places: every webhook of the object's kind answers (never panics) for its uid, a patch comes
//! only with an allowed request and applies to the object it was computed from, a mutated
//! object needs no second mutation, and conversion between the served versions never panics.

use std::sync::Arc;

use proptest::prelude::*;
use serde_json::{Value, json};

use super::super::*;
use crate::config::LoadOptions;
use crate::testing::lookup::InMemoryLookup;
use crate::webhook::review::parse_admission_review;

/// The objects of `manifests/samples/` and its subdirectories, each with its API version split
/// into group and version.
fn samples() -> Vec<Value> {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("manifests/samples");
    let mut dirs = vec![root];
    let mut paths = Vec::new();
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(dir).expect("manifests/samples") {
            let path = entry.expect("an entry").path();
            if path.is_dir() {
                dirs.push(path);
            } else {
                paths.push(path);
            }
        }
    }
    paths.sort();
    let mut objects = Vec::new();
    for path in paths {
        let text = std::fs::read_to_string(&path).expect("a sample");
        objects.extend(
            crate::k8s::yaml::documents(&text)
                .expect("YAML")
                .into_iter()
                .filter(Value::is_object),
        );
    }
    objects
}

/// Every JSON pointer into `value`, the root included.
fn pointers(value: &Value, at: String, into: &mut Vec<String>) {
    match value {
        Value::Object(map) => {
            for (key, child) in map {
                let escaped = key.replace('~', "~0").replace('/', "~1");
                pointers(child, format!("{at}/{escaped}"), into);
            }
        }
        Value::Array(items) => {
            for (index, child) in items.iter().enumerate() {
                pointers(child, format!("{at}/{index}"), into);
            }
        }
        _ => {}
    }
    into.push(at);
}

fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| json!(n)),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(|f| json!(f)),
        "[a-zA-Z0-9./:=-]{0,12}".prop_map(Value::String),
        prop_oneof![
            Just("-1"),
            Just("1e400"),
            Just("0.5m"),
            Just("99999999999999999999Ei"),
            Just("Never"),
            Just("kueue.x-k8s.io/queue-name"),
        ]
        .prop_map(|s| Value::String(s.to_owned())),
    ];
    leaf.prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::btree_map("[a-z]{1,8}", inner, 0..4)
                .prop_map(|map| Value::Object(map.into_iter().collect())),
        ]
    })
}

/// `object` with each `(place, value)` written at the pointer `place` picks (modulo how many
/// there are), leaving apiVersion and kind as they are, so the request reaches its webhook.
fn mutated(object: &Value, changes: &[(usize, Value)]) -> Value {
    let mut object = object.clone();
    for (place, value) in changes {
        let mut places = Vec::new();
        pointers(&object, String::new(), &mut places);
        places.retain(|p| !p.is_empty() && p != "/apiVersion" && p != "/kind");
        if places.is_empty() {
            continue;
        }
        let pointer = &places[place % places.len()];
        if let Some(slot) = object.pointer_mut(pointer) {
            *slot = value.clone();
        }
    }
    object
}

fn review_of(
    route: &AdmissionRoute,
    operation: &str,
    object: &Value,
    old: Option<&Value>,
) -> Option<AdmissionRequest<RawObject>> {
    let version = object["apiVersion"]
        .as_str()
        .and_then(|v| v.rsplit('/').next())
        .unwrap_or("v1");
    let body = json!({
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {
            "uid": "property",
            "kind": {"group": route.group, "version": version, "kind": route.kind},
            "resource": {"group": route.group, "version": version, "resource": format!("{}s", route.kind.to_lowercase())},
            "name": "sample", "namespace": "team-a", "operation": operation,
            "userInfo": {"username": "alice"},
            "object": object, "oldObject": old,
        }
    });
    // An object that is not an object is refused before any handler (tests/hostile_input_e2e.rs).
    parse_admission_review(&serde_json::to_vec(&body).ok()?).ok()
}

fn handler() -> KuotaAdmission {
    let config = Configuration::from_defaults(&LoadOptions::default()).expect("defaults");
    let state = InMemoryLookup::new()
        .with_namespace("team-a", &[])
        .with_namespace("team-b", &[]);
    KuotaAdmission::new(Arc::new(config), Arc::new(state))
}

fn answer(
    runtime: &tokio::runtime::Runtime,
    handler: &KuotaAdmission,
    route: &AdmissionRoute,
    request: &AdmissionRequest<RawObject>,
) -> AdmissionResponse {
    runtime.block_on(handler.admit(route, request))
}

fn patch_of(response: &AdmissionResponse) -> Option<json_patch::Patch> {
    let bytes = response.patch.as_ref()?;
    Some(serde_json::from_slice(bytes).expect("a JSON patch"))
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 192, ..ProptestConfig::default() })]

    #[test]
    fn every_webhook_answers_and_its_patch_applies(
        sample in any::<prop::sample::Index>(),
        changes in prop::collection::vec((any::<usize>(), json_value()), 0..4),
        update in any::<bool>(),
    ) {
        let samples = samples();
        let original = sample.get(&samples);
        let object = mutated(original, &changes);
        let runtime = tokio::runtime::Builder::new_current_thread().build().expect("a runtime");
        let handler = handler();
        let kind = original["kind"].as_str().unwrap_or_default();
        let group = original["apiVersion"].as_str().and_then(|v| v.rsplit_once('/')).map_or("", |(g, _)| g);
        for route in handler.routes().iter().filter(|r| r.kind == kind && r.group == group) {
            let operation = if update { "UPDATE" } else { "CREATE" };
            let old = update.then_some(original);
            let Some(request) = review_of(route, operation, &object, old) else { continue };
            let response = answer(&runtime, &handler, route, &request);
            prop_assert!(response.patch.is_none() || response.allowed, "{}: a patch on a denial", route.path);
            if let Some(patch) = patch_of(&response) {
                let mut patched = object.clone();
                let applied = json_patch::patch(&mut patched, &patch);
                prop_assert!(applied.is_ok(), "{}: {applied:?} for {patch:?}", route.path);
                let again = review_of(route, operation, &patched, old).expect("the patched object");
                let second = answer(&runtime, &handler, route, &again);
                prop_assert_eq!(patch_of(&second).map(|p| p.0), None, "{}: mutating twice", route.path);
            }
        }
    }

    #[test]
    fn conversion_never_panics(
        sample in any::<prop::sample::Index>(),
        changes in prop::collection::vec((any::<usize>(), json_value()), 0..4),
        to_v1beta1 in any::<bool>(),
    ) {
        let samples = samples();
        let original = sample.get(&samples);
        prop_assume!(original["apiVersion"].as_str().is_some_and(|v| v.starts_with("kueue.x-k8s.io/")));
        let object = mutated(original, &changes);
        let desired = if to_v1beta1 { "kueue.x-k8s.io/v1beta1" } else { "kueue.x-k8s.io/v1beta2" };
        let _ = crate::api::conversion::convert(object, desired);
    }
}
