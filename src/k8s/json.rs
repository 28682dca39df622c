//! Readers and writers of raw object JSON (`serde_json::Value`), for code that must keep every
//! field of an object it does not model, and the JSON merge patch (RFC 7386) between two values.

use serde_json::{Map, Value};

/// The value at a JSON pointer (RFC 6901), as `Value::pointer` finds it. That one unescapes
/// every segment into two new `String`s; a webhook review reads dozens of pointers, so
/// segments without an escape (all of Kuota's) are looked up in place.
pub fn at<'a>(value: &'a Value, pointer: &str) -> Option<&'a Value> {
    if pointer.is_empty() || pointer.contains('~') {
        return value.pointer(pointer);
    }
    pointer
        .strip_prefix('/')?
        .split('/')
        .try_fold(value, |target, segment| match target {
            Value::Object(map) => map.get(segment),
            Value::Array(items) => array_index(segment).and_then(|index| items.get(index)),
            _ => None,
        })
}

/// An array index segment: digits without a sign or a leading zero.
fn array_index(segment: &str) -> Option<usize> {
    if segment.starts_with('+') || (segment.starts_with('0') && segment.len() > 1) {
        return None;
    }
    segment.parse().ok()
}

/// Boolean at a JSON pointer.
pub fn bool_at(value: &Value, pointer: &str) -> Option<bool> {
    at(value, pointer).and_then(Value::as_bool)
}

/// Integer at a JSON pointer, if it fits an `i32`.
pub fn i32_at(value: &Value, pointer: &str) -> Option<i32> {
    at(value, pointer)
        .and_then(Value::as_i64)
        .and_then(|n| i32::try_from(n).ok())
}

/// String at a JSON pointer.
pub fn str_at<'a>(value: &'a Value, pointer: &str) -> Option<&'a str> {
    at(value, pointer).and_then(Value::as_str)
}

/// Array at a JSON pointer, empty when absent.
pub fn array_at<'a>(value: &'a Value, pointer: &str) -> &'a [Value] {
    at(value, pointer)
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default()
}

/// Whether a JSON pointer names a present, non-null value.
pub fn present(value: &Value, pointer: &str) -> bool {
    at(value, pointer).is_some_and(|v| !v.is_null())
}

/// A label of the object (keys contain `/`, so they cannot be pointer segments).
pub fn label<'a>(object: &'a Value, key: &str) -> Option<&'a str> {
    at(object, "/metadata/labels")
        .and_then(|labels| labels.get(key))
        .and_then(Value::as_str)
}

/// An annotation of the object.
pub fn annotation<'a>(object: &'a Value, key: &str) -> Option<&'a str> {
    at(object, "/metadata/annotations")
        .and_then(|a| a.get(key))
        .and_then(Value::as_str)
}

/// The object's condition of this type when its status is `True`.
pub fn true_condition<'a>(object: &'a Value, condition_type: &str) -> Option<&'a Value> {
    array_at(object, "/status/conditions")
        .iter()
        .find(|condition| {
            condition.get("type").and_then(Value::as_str) == Some(condition_type)
                && condition.get("status").and_then(Value::as_str) == Some("True")
        })
}

/// The `message` of a condition, empty when absent.
pub fn condition_message(condition: &Value) -> String {
    condition
        .get("message")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string()
}

/// Sets a label of the object, creating `metadata` and `metadata.labels` when missing or not
/// objects; a non-object `object` is left as it is.
pub fn set_label(object: &mut Value, key: &str, value: &str) {
    let Some(object) = object.as_object_mut() else {
        return;
    };
    let metadata = object
        .entry("metadata")
        .or_insert_with(|| Value::Object(Map::new()));
    if !metadata.is_object() {
        *metadata = Value::Object(Map::new());
    }
    // Both levels are objects here, so indexing inserts rather than panics.
    let labels = &mut metadata["labels"];
    if !labels.is_object() {
        *labels = Value::Object(Map::new());
    }
    labels[key] = Value::from(value);
}

/// Sets the value at a JSON pointer, turning missing or non-object parents into objects.
pub fn set(target: &mut Value, pointer: &str, new: Value) {
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
pub fn remove(target: &mut Value, pointer: &str) {
    let Some((parent, last)) = pointer.rsplit_once('/') else {
        return;
    };
    if let Some(Value::Object(map)) = target.pointer_mut(parent) {
        map.remove(&unescape(last));
    }
}

/// The JSON merge patch (RFC 7386) turning `old` into `new`: changed members are replaced
/// (arrays whole), removed members are set to `null`, equal members are left out. json-patch
/// only applies merge patches; this is the one diff that writes them.
pub fn merge_patch(old: &Value, new: &Value) -> Value {
    match (old, new) {
        (Value::Object(old), Value::Object(new)) => {
            let mut patch = Map::new();
            for (key, new_value) in new {
                match old.get(key) {
                    Some(old_value) if old_value == new_value => {}
                    Some(old_value @ Value::Object(_)) if new_value.is_object() => {
                        patch.insert(key.clone(), merge_patch(old_value, new_value));
                    }
                    _ => {
                        patch.insert(key.clone(), new_value.clone());
                    }
                }
            }
            for key in old.keys().filter(|key| !new.contains_key(*key)) {
                patch.insert(key.clone(), Value::Null);
            }
            Value::Object(patch)
        }
        _ => new.clone(),
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
    fn at_finds_what_value_pointer_finds() {
        let value = json!({
            "metadata": {"labels": {"a/b": "slash", "a~b": "tilde"}},
            "spec": {"items": [{"name": "first"}, {"name": "second"}], "": {"empty": true}},
            "status": null
        });
        let pointers = [
            ("", Some(&value)),
            ("/spec/items/1/name", Some(&json!("second"))),
            ("/spec/items/01/name", None),
            ("/spec/items/+1/name", None),
            ("/spec/items/2", None),
            ("/spec//empty", Some(&json!(true))),
            ("/metadata/labels/a~1b", Some(&json!("slash"))),
            ("/metadata/labels/a~0b", Some(&json!("tilde"))),
            ("/status", Some(&Value::Null)),
            ("/status/phase", None),
            ("spec", None),
        ];
        for (pointer, expected) in pointers {
            assert_eq!(at(&value, pointer), expected, "{pointer:?}");
            assert_eq!(value.pointer(pointer), expected, "{pointer:?} (serde_json)");
        }
    }

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

    #[test]
    fn merge_patches_carry_only_differences() {
        let cases = [
            (
                json!({"a": 1, "b": 2}),
                json!({"a": 1, "b": 3}),
                json!({"b": 3}),
            ),
            (json!({"a": 1, "b": 2}), json!({"a": 1}), json!({"b": null})),
            (
                json!({"a": {"x": 1, "y": 2}}),
                json!({"a": {"x": 1, "y": 3, "z": 4}}),
                json!({"a": {"y": 3, "z": 4}}),
            ),
            (
                json!({"a": [1, 2]}),
                json!({"a": [1, 3]}),
                json!({"a": [1, 3]}),
            ),
            (
                json!({"a": 1}),
                json!({"a": {"x": 1}}),
                json!({"a": {"x": 1}}),
            ),
            (json!({"a": 1}), json!({"a": 1}), json!({})),
        ];
        for (old, new, want) in cases {
            let patch = merge_patch(&old, &new);
            assert_eq!(patch, want, "{old} -> {new}");
            let mut patched = old.clone();
            json_patch::merge(&mut patched, &patch);
            assert_eq!(patched, new, "applying the patch to {old}");
        }
    }

    #[test]
    fn merge_patch_nulls_what_was_removed() {
        let old =
            json!({"admission": {"clusterQueue": "cq"}, "conditions": [1, 2], "same": {"a": 1}});
        let new = json!({"conditions": [1], "same": {"a": 1}, "requeueState": {"count": 1}});
        assert_eq!(
            merge_patch(&old, &new),
            json!({"admission": null, "conditions": [1], "requeueState": {"count": 1}})
        );
    }
}
