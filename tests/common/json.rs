//! Typed objects from `json!` literals.

use serde_json::Value;

/// `value` as a `T`; a test's literal that does not fit `T` is a bug in the test.
pub fn from_json<T: serde::de::DeserializeOwned>(value: Value) -> T {
    serde_json::from_value(value).expect("valid object")
}
