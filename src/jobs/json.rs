//! Small readers and writers for raw job JSON.

use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use super::JobError;

/// Boolean at a JSON pointer.
pub(crate) fn bool_at(value: &Value, pointer: &str) -> Option<bool> {
    value.pointer(pointer).and_then(Value::as_bool)
}

/// Integer at a JSON pointer, if it fits an `i32`.
pub(crate) fn i32_at(value: &Value, pointer: &str) -> Option<i32> {
    value
        .pointer(pointer)
        .and_then(Value::as_i64)
        .and_then(|n| i32::try_from(n).ok())
}

/// String at a JSON pointer.
pub(crate) fn str_at<'a>(value: &'a Value, pointer: &str) -> Option<&'a str> {
    value.pointer(pointer).and_then(Value::as_str)
}

/// Array at a JSON pointer, empty when absent.
pub(crate) fn array_at<'a>(value: &'a Value, pointer: &str) -> &'a [Value] {
    value
        .pointer(pointer)
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default()
}

/// Whether a JSON pointer names a present, non-null value.
pub(crate) fn present(value: &Value, pointer: &str) -> bool {
    value.pointer(pointer).is_some_and(|v| !v.is_null())
}

/// A label of the object (keys contain `/`, so they cannot be pointer segments).
pub(crate) fn label<'a>(object: &'a Value, key: &str) -> Option<&'a str> {
    object
        .pointer("/metadata/labels")
        .and_then(|labels| labels.get(key))
        .and_then(Value::as_str)
}

/// An annotation of the object.
pub(crate) fn annotation<'a>(object: &'a Value, key: &str) -> Option<&'a str> {
    object
        .pointer("/metadata/annotations")
        .and_then(|a| a.get(key))
        .and_then(Value::as_str)
}

/// Deserializes the value at a pointer into a Kubernetes type; `Ok(None)` when absent or null.
pub(crate) fn typed_at<T: DeserializeOwned>(
    value: &Value,
    pointer: &str,
) -> Result<Option<T>, JobError> {
    match value.pointer(pointer) {
        None | Some(Value::Null) => Ok(None),
        Some(found) => T::deserialize(found)
            .map(Some)
            .map_err(|source| JobError::InvalidField {
                pointer: pointer.to_string(),
                source,
            }),
    }
}

/// Like [`typed_at`] but the value must be present.
pub(crate) fn required_at<T: DeserializeOwned>(
    value: &Value,
    pointer: &str,
) -> Result<T, JobError> {
    typed_at(value, pointer)?.ok_or_else(|| JobError::MissingField {
        pointer: pointer.to_string(),
    })
}

/// The object's condition of this type when its status is `True`.
pub(crate) fn true_condition<'a>(object: &'a Value, condition_type: &str) -> Option<&'a Value> {
    array_at(object, "/status/conditions")
        .iter()
        .find(|condition| {
            condition.get("type").and_then(Value::as_str) == Some(condition_type)
                && condition.get("status").and_then(Value::as_str) == Some("True")
        })
}

/// The `message` of a condition, empty when absent.
pub(crate) fn condition_message(condition: &Value) -> String {
    condition
        .get("message")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string()
}

/// Sets the value at a JSON pointer, turning missing or non-object parents into objects.
pub(crate) fn set(target: &mut Value, pointer: &str, new: Value) {
    let tokens: Vec<String> = pointer.split('/').skip(1).map(unescape).collect();
    set_tokens(target, &tokens, new);
}

fn set_tokens(current: &mut Value, tokens: &[String], new: Value) {
    let Some((first, rest)) = tokens.split_first() else {
        *current = new;
        return;
    };
    let index = match current {
        Value::Array(items) => first
            .parse::<usize>()
            .ok()
            .filter(|index| *index < items.len()),
        _ => None,
    };
    if let Some(index) = index {
        return set_tokens(&mut current[index], rest, new);
    }
    if !current.is_object() {
        *current = Value::Object(Map::new());
    }
    if let Value::Object(map) = current {
        set_tokens(map.entry(first.clone()).or_insert(Value::Null), rest, new);
    }
}

/// Removes the value at a JSON pointer, if present.
pub(crate) fn remove(target: &mut Value, pointer: &str) {
    let Some((parent, last)) = pointer.rsplit_once('/') else {
        return;
    };
    if let Some(Value::Object(map)) = target.pointer_mut(parent) {
        map.remove(&unescape(last));
    }
}

fn unescape(token: &str) -> String {
    token.replace("~1", "/").replace("~0", "~")
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn set_creates_missing_parents_and_indexes_arrays() {
        let mut value = json!({"spec": {"items": [{"a": 1}]}});
        set(&mut value, "/spec/runPolicy/suspend", json!(true));
        set(&mut value, "/spec/items/0/b", json!(2));
        set(&mut value, "/metadata/labels/a~1b", json!("c"));
        assert_eq!(
            value,
            json!({
                "metadata": {"labels": {"a/b": "c"}},
                "spec": {"items": [{"a": 1, "b": 2}], "runPolicy": {"suspend": true}},
            })
        );
        remove(&mut value, "/spec/runPolicy/suspend");
        assert_eq!(value["spec"]["runPolicy"], json!({}));
    }

    #[test]
    fn true_condition_needs_status_true() {
        let job = json!({"status": {"conditions": [
            {"type": "Failed", "status": "False"},
            {"type": "Complete", "status": "True", "message": "done"},
        ]}});
        assert!(true_condition(&job, "Failed").is_none());
        assert_eq!(
            true_condition(&job, "Complete").map(condition_message),
            Some("done".to_string())
        );
    }
}
