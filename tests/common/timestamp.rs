//! Timestamps as the tests write them into conditions.

/// Now, to the second, in the RFC 3339 form Kubernetes writes (`2026-01-02T03:04:05Z`).
pub fn now() -> String {
    jiff::Timestamp::now()
        .strftime("%Y-%m-%dT%H:%M:%SZ")
        .to_string()
}
