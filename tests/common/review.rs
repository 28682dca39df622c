//! AdmissionReviews as the API server sends them to a webhook.

use serde_json::{Value, json};

/// A v1 AdmissionReview for the CREATE of `<kind> team-a/<name>` (API version `<group>/v1`, or
/// `v1` for the core group) by user `alice`.
pub fn review(uid: &str, group: &str, kind: &str, name: &str) -> Value {
    let api_version = if group.is_empty() {
        "v1".to_owned()
    } else {
        format!("{group}/v1")
    };
    json!({
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {
            "uid": uid,
            "kind": {"group": group, "version": "v1", "kind": kind},
            "resource": {"group": group, "version": "v1", "resource": format!("{}s", kind.to_lowercase())},
            "name": name,
            "namespace": "team-a",
            "operation": "CREATE",
            "userInfo": {"username": "alice"},
            "object": {
                "apiVersion": api_version,
                "kind": kind,
                "metadata": {"name": name, "namespace": "team-a"},
                "spec": {}
            },
            "dryRun": false
        }
    })
}
