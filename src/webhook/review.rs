//! Wire-level helpers: turning request bodies into review requests, shaping responses, and the
//! `metav1.Status` body of HTTP errors. Pure functions, no I/O.

use std::borrow::Cow;

use kube::core::admission::{AdmissionRequest, AdmissionResponse, AdmissionReview, Operation};
use kube::core::conversion::{ConversionRequest, ConversionResponse, ConversionReview};
use kube::core::{ApiResource, DynamicResourceScope, ObjectMeta, Resource, Status};
use serde::{Deserialize, Deserializer};
use serde_json::{Value, json};

use super::Converter;

/// Why a request body is not a usable review. The `Display` text is the message returned to
/// the caller in the HTTP 400 body.
#[derive(Debug, thiserror::Error)]
pub enum ReviewError {
    /// The body is empty.
    #[error("request body is empty")]
    Empty,
    /// The body is not JSON at all.
    #[error("request body is not JSON: {0}")]
    NotJson(serde_json::Error),
    /// The body ends in the middle of a JSON value.
    #[error("request body is truncated JSON: {0}")]
    Truncated(serde_json::Error),
    /// The body is JSON but not a review of the expected kind.
    #[error("request body is not a valid {kind}: {source}")]
    WrongShape {
        /// `AdmissionReview` or `ConversionReview`.
        kind: &'static str,
        /// What serde rejected.
        source: serde_json::Error,
    },
    /// The review has no `request`.
    #[error("{0} has no request")]
    MissingRequest(&'static str),
}

/// An `object` or `oldObject` of an AdmissionReview, kept as the JSON the API server sent, with
/// its metadata also decoded. Handlers read the JSON and build patches from copies of it; a
/// `DynamicObject` would buffer the object once more to decode it and need encoding back into
/// JSON for every check, which was a sixth of each review's CPU.
#[derive(Clone, Debug, PartialEq)]
pub struct RawObject {
    json: Value,
    metadata: ObjectMeta,
}

impl RawObject {
    /// The object as sent.
    pub fn json(&self) -> &Value {
        &self.json
    }
}

impl<'de> Deserialize<'de> for RawObject {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        use serde::de::Error;
        let json = Value::deserialize(deserializer)?;
        if !json.is_object() {
            return Err(D::Error::custom(format!(
                "an object must be a JSON object, not {}",
                json_type(&json)
            )));
        }
        let metadata = match json.get("metadata") {
            None | Some(Value::Null) => ObjectMeta::default(),
            Some(metadata) => match ObjectMeta::deserialize(metadata) {
                Ok(decoded) => decoded,
                Err(err) => return Err(D::Error::custom(metadata_error(metadata, err))),
            },
        };
        Ok(Self { json, metadata })
    }
}

/// Typed like a `DynamicObject`: the kind is known only at run time.
impl Resource for RawObject {
    type DynamicType = ApiResource;
    type Scope = DynamicResourceScope;

    fn kind(resource: &ApiResource) -> Cow<'_, str> {
        resource.kind.as_str().into()
    }

    fn group(resource: &ApiResource) -> Cow<'_, str> {
        resource.group.as_str().into()
    }

    fn version(resource: &ApiResource) -> Cow<'_, str> {
        resource.version.as_str().into()
    }

    fn api_version(resource: &ApiResource) -> Cow<'_, str> {
        resource.api_version.as_str().into()
    }

    fn plural(resource: &ApiResource) -> Cow<'_, str> {
        resource.plural.as_str().into()
    }

    fn meta(&self) -> &ObjectMeta {
        &self.metadata
    }

    /// Changes the decoded metadata only, never [`RawObject::json`]: a request's object is what
    /// the API server sent, and answers change it by patch.
    fn meta_mut(&mut self) -> &mut ObjectMeta {
        &mut self.metadata
    }
}

/// The metadata's decoding error with the field it is about. The path is traced only now, on a
/// second decode: tracing it on every review would cost each one.
fn metadata_error(metadata: &Value, err: serde_json::Error) -> String {
    match serde_path_to_error::deserialize::<_, ObjectMeta>(metadata) {
        Err(traced) => format!("metadata.{}: {}", traced.path(), traced.inner()),
        Ok(_) => format!("metadata: {err}"),
    }
}

fn json_type(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// Parses an `AdmissionReview` body and returns its request.
pub fn parse_admission_review(body: &[u8]) -> Result<AdmissionRequest<RawObject>, ReviewError> {
    let review: AdmissionReview<RawObject> = parse_json(body, "AdmissionReview")?;
    review
        .try_into()
        .map_err(|_| ReviewError::MissingRequest("AdmissionReview"))
}

/// Parses a `ConversionReview` body and returns its request.
pub fn parse_conversion_review(body: &[u8]) -> Result<ConversionRequest, ReviewError> {
    let review: ConversionReview = parse_json(body, "ConversionReview")?;
    ConversionRequest::from_review(review)
        .map_err(|_| ReviewError::MissingRequest("ConversionReview"))
}

fn parse_json<T: serde::de::DeserializeOwned>(
    body: &[u8],
    kind: &'static str,
) -> Result<T, ReviewError> {
    if body.iter().all(u8::is_ascii_whitespace) {
        return Err(ReviewError::Empty);
    }
    serde_json::from_slice(body).map_err(|err| match err.classify() {
        serde_json::error::Category::Eof => ReviewError::Truncated(err),
        serde_json::error::Category::Syntax | serde_json::error::Category::Io => {
            ReviewError::NotJson(err)
        }
        serde_json::error::Category::Data => ReviewError::WrongShape { kind, source: err },
    })
}

/// The answer for a request the handler has no opinion on: allowed, unchanged.
pub fn allow_unchanged(request: &AdmissionRequest<RawObject>) -> AdmissionResponse {
    AdmissionResponse::from(request)
}

/// Ties a handler's response to its request: the uid and the review's apiVersion/kind must be
/// the request's, or the API server discards the answer.
pub fn bind_to_request(
    mut response: AdmissionResponse,
    request: &AdmissionRequest<RawObject>,
) -> AdmissionResponse {
    response.uid.clone_from(&request.uid);
    response.types.clone_from(&request.types);
    response
}

/// Converts every object of a conversion request, stopping at the first failure (the API
/// server needs all objects or none).
pub fn convert_objects(request: ConversionRequest, converter: &Converter) -> ConversionResponse {
    let desired = request.desired_api_version.clone();
    let objects = request.objects.clone();
    let response = ConversionResponse::for_request(request);
    let mut converted = Vec::with_capacity(objects.len());
    for (index, object) in objects.into_iter().enumerate() {
        let identity = object_identity(&object);
        match converter.convert(object, &desired) {
            Ok(object) => converted.push(object),
            Err(err) => {
                let message = format!("converting object {index} ({identity}) to {desired}: {err}");
                return response.failure(Status::failure(&message, "ConversionFailed"));
            }
        }
    }
    response.success(converted)
}

fn object_identity(object: &Value) -> String {
    let field = |pointer: &str| {
        object
            .pointer(pointer)
            .and_then(Value::as_str)
            .unwrap_or("")
    };
    let namespace = field("/metadata/namespace");
    let name = field("/metadata/name");
    let kind = field("/kind");
    let api_version = field("/apiVersion");
    if namespace.is_empty() {
        format!("{api_version} {kind} {name}")
    } else {
        format!("{api_version} {kind} {namespace}/{name}")
    }
}

/// The `metav1.Status` JSON body of an HTTP error, as the API server itself would send it.
pub fn error_status(code: u16, reason: &str, message: &str) -> Value {
    json!({
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": reason,
        "code": code,
    })
}

/// The operation as the API server names it (`CREATE`, `UPDATE`, `DELETE`, `CONNECT`).
pub fn operation_name(operation: &Operation) -> &'static str {
    match operation {
        Operation::Create => "CREATE",
        Operation::Update => "UPDATE",
        Operation::Delete => "DELETE",
        Operation::Connect => "CONNECT",
    }
}

/// A short description of the request for logs: `group/version/Kind` (core: `version/Kind`).
pub fn kind_label(request: &AdmissionRequest<RawObject>) -> String {
    let kind = &request.kind;
    if kind.group.is_empty() {
        format!("{}/{}", kind.version, kind.kind)
    } else {
        format!("{}/{}/{}", kind.group, kind.version, kind.kind)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn job_review() -> Value {
        json!({
            "apiVersion": "admission.k8s.io/v1",
            "kind": "AdmissionReview",
            "request": {
                "uid": "705ab4f5-6393-11e8-b7cc-42010a800002",
                "kind": {"group": "batch", "version": "v1", "kind": "Job"},
                "resource": {"group": "batch", "version": "v1", "resource": "jobs"},
                "name": "pi",
                "namespace": "team-a",
                "operation": "CREATE",
                "userInfo": {"username": "alice"},
                "object": {
                    "apiVersion": "batch/v1",
                    "kind": "Job",
                    "metadata": {"name": "pi", "namespace": "team-a"},
                    "spec": {}
                },
                "dryRun": false
            }
        })
    }

    #[test]
    fn parses_an_admission_review() {
        let body = serde_json::to_vec(&job_review()).unwrap();
        let request = parse_admission_review(&body).unwrap();
        assert_eq!(request.uid, "705ab4f5-6393-11e8-b7cc-42010a800002");
        assert_eq!(request.types.api_version, "admission.k8s.io/v1");
        assert_eq!(kind_label(&request), "batch/v1/Job");
        assert_eq!(request.namespace.as_deref(), Some("team-a"));
    }

    #[test]
    fn the_object_is_kept_as_sent_with_its_metadata_decoded() {
        let review = job_review();
        let request = parse_admission_review(&serde_json::to_vec(&review).unwrap()).unwrap();
        let object = request.object.as_ref().unwrap();
        assert_eq!(object.json(), &review["request"]["object"]);
        assert_eq!(object.meta().name.as_deref(), Some("pi"));
        assert_eq!(object.meta().namespace.as_deref(), Some("team-a"));
        assert_eq!(request.old_object, None);
    }

    #[test]
    fn an_object_that_is_not_an_object_or_has_bad_metadata_is_refused() {
        let with_object = |object: Value| {
            let mut review = job_review();
            review["request"]["object"] = object;
            parse_admission_review(&serde_json::to_vec(&review).unwrap())
                .unwrap_err()
                .to_string()
        };
        assert_eq!(
            with_object(json!("job")),
            "request body is not a valid AdmissionReview: an object must be a JSON object, not a string at line 1 column 187"
        );
        assert_eq!(
            with_object(json!({"metadata": {"labels": ["a"]}})),
            "request body is not a valid AdmissionReview: metadata.labels: invalid type: sequence, expected a map at line 1 column 211"
        );
    }

    #[test]
    fn bad_bodies_are_classified() {
        let truncated = serde_json::to_string(&job_review()).unwrap();
        let truncated = &truncated[..truncated.len() / 2];
        let cases: [(&str, &[u8], &str); 7] = [
            ("empty", b"", "request body is empty"),
            ("blank", b" \n", "request body is empty"),
            (
                "not json",
                b"hello",
                "request body is not JSON: expected value at line 1 column 1",
            ),
            (
                "truncated",
                truncated.as_bytes(),
                "request body is truncated JSON: EOF while parsing",
            ),
            (
                "array",
                b"[1,2]",
                "request body is not a valid AdmissionReview: invalid type: sequence, expected struct AdmissionReview at line 1 column 0",
            ),
            (
                "no request",
                br#"{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview"}"#,
                "AdmissionReview has no request",
            ),
            (
                "request of the wrong type",
                br#"{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":42}"#,
                "request body is not a valid AdmissionReview: invalid type: integer `42`",
            ),
        ];
        for (name, body, expected_prefix) in cases {
            let message = parse_admission_review(body).unwrap_err().to_string();
            assert!(message.starts_with(expected_prefix), "{name}: {message}");
        }
    }

    #[test]
    fn operations_are_named_as_the_api_server_sends_them() {
        for name in ["CREATE", "UPDATE", "DELETE", "CONNECT"] {
            let operation: Operation = serde_json::from_value(json!(name)).unwrap();
            assert_eq!(operation_name(&operation), name);
        }
    }

    #[test]
    fn bind_to_request_copies_uid_and_types() {
        let body = serde_json::to_vec(&job_review()).unwrap();
        let request = parse_admission_review(&body).unwrap();
        let response = bind_to_request(AdmissionResponse::invalid("nope"), &request);
        assert_eq!(response.uid, request.uid);
        assert_eq!(response.types, request.types);
        assert!(!response.allowed);
        assert_eq!(response.result.message, "nope");
    }

    fn conversion_request(objects: Vec<Value>) -> ConversionRequest {
        let body = json!({
            "apiVersion": "apiextensions.k8s.io/v1",
            "kind": "ConversionReview",
            "request": {"uid": "c-1", "desiredAPIVersion": "kueue.x-k8s.io/v1beta1", "objects": objects}
        });
        parse_conversion_review(&serde_json::to_vec(&body).unwrap()).unwrap()
    }

    fn set_version(object: Value, desired: &str) -> Result<Value, String> {
        if object.pointer("/spec/broken").is_some() {
            return Err("spec.broken cannot be represented".to_owned());
        }
        let mut object = object;
        object["apiVersion"] = json!(desired);
        Ok(object)
    }

    #[test]
    fn converts_all_objects_in_order() {
        let request = conversion_request(vec![
            json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue", "metadata": {"name": "a"}}),
            json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue", "metadata": {"name": "b"}}),
        ]);
        let response = convert_objects(request, &Converter::new(set_version));
        assert_eq!(response.uid, "c-1");
        assert!(response.result.is_success());
        assert_eq!(
            response.converted_objects,
            vec![
                json!({"apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "ClusterQueue", "metadata": {"name": "a"}}),
                json!({"apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "ClusterQueue", "metadata": {"name": "b"}}),
            ]
        );
    }

    #[test]
    fn conversion_failure_names_the_object() {
        let request = conversion_request(vec![
            json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue", "metadata": {"name": "a", "namespace": "ns"}}),
            json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue", "metadata": {"name": "b", "namespace": "ns"}, "spec": {"broken": true}}),
        ]);
        let response = convert_objects(request, &Converter::new(set_version));
        assert!(response.result.is_failure());
        assert_eq!(
            response.result.message,
            "converting object 1 (kueue.x-k8s.io/v1beta2 LocalQueue ns/b) to kueue.x-k8s.io/v1beta1: spec.broken cannot be represented"
        );
        assert!(response.converted_objects.is_empty());
    }

    #[test]
    fn conversion_review_without_request_is_rejected() {
        let err = parse_conversion_review(
            br#"{"apiVersion":"apiextensions.k8s.io/v1","kind":"ConversionReview"}"#,
        )
        .unwrap_err();
        assert_eq!(err.to_string(), "ConversionReview has no request");
    }

    #[test]
    fn error_status_has_the_status_shape() {
        assert_eq!(
            error_status(413, "RequestEntityTooLarge", "too big"),
            json!({
                "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                "message": "too big", "reason": "RequestEntityTooLarge", "code": 413
            })
        );
    }
}
