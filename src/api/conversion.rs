//! Conversion of Kueue objects between `v1beta1` and `v1beta2`, as the CRD conversion webhook
//! needs it.
//!
//! ClusterQueue, LocalQueue, Workload, Cohort and MultiKueueCluster differ between the versions
//! and go through their typed `From` conversions (see [`super::v1beta1`]). The other Kueue kinds
//! are converted by the apiserver itself (strategy `None`); for them only `apiVersion` is
//! rewritten, as the apiserver does, which then prunes the few fields one version lacks
//! (AdmissionCheck's `retryDelayMinutes`, MultiKueueConfig's `quotaManagement`). The object's
//! `metadata` is returned exactly as it came in, since the apiserver rejects a conversion that
//! changes anything in it but labels and annotations.

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use super::constants::GROUP;
use super::{v1beta1, v1beta2};

/// Why an object could not be converted.
#[derive(Debug, thiserror::Error)]
pub enum ConversionError {
    /// The object has no string `apiVersion` or `kind`.
    #[error("object has no {0}")]
    MissingField(&'static str),

    /// The source or desired `apiVersion` is not a version Kuota serves for this kind.
    #[error(
        "cannot convert {kind} from {from} to {to}: Kuota serves {kind} as {GROUP}/v1beta1 and {GROUP}/v1beta2"
    )]
    UnsupportedVersion {
        /// Kind of the object.
        kind: String,
        /// `apiVersion` of the object.
        from: String,
        /// Requested `apiVersion`.
        to: String,
    },

    /// The object does not match the schema of its kind and version.
    #[error("invalid {kind} {api_version}: {source}")]
    Invalid {
        /// Kind of the object.
        kind: String,
        /// `apiVersion` of the object.
        api_version: String,
        /// What did not match.
        #[source]
        source: serde_json::Error,
    },

    /// The converted object could not be encoded.
    #[error("cannot encode converted {kind}: {source}")]
    Encode {
        /// Kind of the object.
        kind: String,
        /// Encoding error.
        #[source]
        source: serde_json::Error,
    },
}

/// A version of the `kueue.x-k8s.io` group.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Version {
    V1beta1,
    V1beta2,
}

impl Version {
    fn parse(api_version: &str) -> Option<Self> {
        match api_version {
            v1beta1::API_VERSION => Some(Self::V1beta1),
            v1beta2::API_VERSION => Some(Self::V1beta2),
            _ => None,
        }
    }
}

/// How a Kueue kind converts between the versions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum KindConversion {
    ClusterQueue,
    LocalQueue,
    Workload,
    Cohort,
    MultiKueueCluster,
    /// Converted by the apiserver (strategy `None`): only `apiVersion` changes.
    ApiVersionOnly,
}

impl KindConversion {
    fn of(kind: &str) -> Option<Self> {
        Some(match kind {
            "ClusterQueue" => Self::ClusterQueue,
            "LocalQueue" => Self::LocalQueue,
            "Workload" => Self::Workload,
            "Cohort" => Self::Cohort,
            "MultiKueueCluster" => Self::MultiKueueCluster,
            "AdmissionCheck"
            | "MultiKueueConfig"
            | "ProvisioningRequestConfig"
            | "ResourceFlavor"
            | "Topology"
            | "WorkloadPriorityClass" => Self::ApiVersionOnly,
            _ => return None,
        })
    }
}

/// Converts a Kueue object to `desired_api_version`.
///
/// Objects already at the desired version, and objects of kinds outside Kueue's API, are
/// returned untouched. `metadata` is always preserved exactly.
pub fn convert(mut object: Value, desired_api_version: &str) -> Result<Value, ConversionError> {
    let api_version = string_field(&object, "apiVersion")?;
    if api_version == desired_api_version {
        return Ok(object);
    }
    let kind = string_field(&object, "kind")?;
    let Some(conversion) = KindConversion::of(kind) else {
        return Ok(object);
    };
    let (Some(from), Some(to)) = (
        Version::parse(api_version),
        Version::parse(desired_api_version),
    ) else {
        return Err(ConversionError::UnsupportedVersion {
            kind: kind.to_owned(),
            from: api_version.to_owned(),
            to: desired_api_version.to_owned(),
        });
    };
    let (kind, api_version) = (kind.to_owned(), api_version.to_owned());
    let upgrade = from == Version::V1beta1 && to == Version::V1beta2;
    let metadata = object.get("metadata").cloned();
    let converted = match conversion {
        KindConversion::ClusterQueue => {
            between::<v1beta1::ClusterQueue, v1beta2::ClusterQueue>(object, upgrade)
        }
        KindConversion::LocalQueue => {
            between::<v1beta1::LocalQueue, v1beta2::LocalQueue>(object, upgrade)
        }
        KindConversion::Workload => {
            between::<v1beta1::Workload, v1beta2::Workload>(object, upgrade)
        }
        KindConversion::Cohort => between::<v1beta1::Cohort, v1beta2::Cohort>(object, upgrade),
        KindConversion::MultiKueueCluster => {
            between::<v1beta1::MultiKueueCluster, v1beta2::MultiKueueCluster>(object, upgrade)
        }
        KindConversion::ApiVersionOnly => {
            if let Some(fields) = object.as_object_mut() {
                fields.insert(
                    "apiVersion".to_owned(),
                    Value::String(desired_api_version.to_owned()),
                );
            }
            return Ok(object);
        }
    };
    let mut converted = converted.map_err(|failure| match failure {
        Failure::Decode(source) => ConversionError::Invalid {
            kind,
            api_version,
            source,
        },
        Failure::Encode(source) => ConversionError::Encode { kind, source },
    })?;
    if let (Some(metadata), Some(fields)) = (metadata, converted.as_object_mut()) {
        fields.insert("metadata".to_owned(), metadata);
    }
    Ok(converted)
}

fn string_field<'a>(object: &'a Value, field: &'static str) -> Result<&'a str, ConversionError> {
    object
        .get(field)
        .and_then(Value::as_str)
        .ok_or(ConversionError::MissingField(field))
}

enum Failure {
    Decode(serde_json::Error),
    Encode(serde_json::Error),
}

/// Decodes `object` as `Old` (when `upgrade`) or `New`, converts it and encodes the result.
fn between<Old, New>(object: Value, upgrade: bool) -> Result<Value, Failure>
where
    Old: DeserializeOwned + Serialize + From<New>,
    New: DeserializeOwned + Serialize + From<Old>,
{
    if upgrade {
        let old: Old = serde_json::from_value(object).map_err(Failure::Decode)?;
        serde_json::to_value(New::from(old)).map_err(Failure::Encode)
    } else {
        let new: New = serde_json::from_value(object).map_err(Failure::Decode)?;
        serde_json::to_value(Old::from(new)).map_err(Failure::Encode)
    }
}

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;
    use serde_json::json;

    use super::*;
    use crate::testing::api_versions as fixtures;

    /// Metadata as the apiserver sends it, with fields the typed ObjectMeta would rewrite.
    fn apiserver_metadata() -> Value {
        json!({
            "name": "team-a",
            "uid": "0b0c5a52-2f4e-4d1c-9d1e-6f0f0c7d9a11",
            "resourceVersion": "4711",
            "generation": 2,
            "creationTimestamp": "2025-03-01T10:00:00Z",
            "labels": {"team": "research"},
            "managedFields": [{
                "manager": "kubectl",
                "operation": "Apply",
                "apiVersion": "kueue.x-k8s.io/v1beta1",
                "time": "2025-03-01T10:00:00Z",
                "fieldsType": "FieldsV1",
                "fieldsV1": {"f:spec": {"f:cohort": {}}},
            }],
        })
    }

    fn with_metadata(object: impl Serialize, metadata: &Value) -> Value {
        let mut value = serde_json::to_value(object).expect("fixture serializes");
        value["metadata"] = metadata.clone();
        value
    }

    #[test]
    fn converts_every_differing_kind_both_ways() {
        let metadata = apiserver_metadata();
        let pairs = [
            (
                with_metadata(fixtures::v1beta1_cluster_queue(), &metadata),
                with_metadata(fixtures::v1beta2_cluster_queue(), &metadata),
            ),
            (
                with_metadata(fixtures::v1beta1_local_queue(), &metadata),
                with_metadata(fixtures::v1beta2_local_queue(), &metadata),
            ),
            (
                with_metadata(fixtures::v1beta1_workload(), &metadata),
                with_metadata(fixtures::v1beta2_workload(), &metadata),
            ),
            (
                with_metadata(fixtures::v1beta1_cohort(), &metadata),
                with_metadata(fixtures::v1beta2_cohort(), &metadata),
            ),
            (
                with_metadata(fixtures::v1beta1_multikueue_cluster(), &metadata),
                with_metadata(fixtures::v1beta2_multikueue_cluster(), &metadata),
            ),
        ];
        for (old, new) in pairs {
            assert_eq!(
                convert(old.clone(), v1beta2::API_VERSION).expect("upgrade"),
                new
            );
            assert_eq!(
                convert(new.clone(), v1beta1::API_VERSION).expect("downgrade"),
                old
            );
        }
    }

    #[test]
    fn renames_cluster_queue_fields_on_the_wire() {
        let old = json!({
            "apiVersion": "kueue.x-k8s.io/v1beta1",
            "kind": "ClusterQueue",
            "metadata": {"name": "cq"},
            "spec": {"cohort": "research", "admissionChecks": ["prov"]},
        });
        let new = convert(old, v1beta2::API_VERSION).expect("upgrade");
        assert_eq!(
            new,
            json!({
                "apiVersion": "kueue.x-k8s.io/v1beta2",
                "kind": "ClusterQueue",
                "metadata": {"name": "cq"},
                "spec": {
                    "cohortName": "research",
                    "queueingStrategy": "BestEffortFIFO",
                    "admissionChecksStrategy": {"admissionChecks": [{"name": "prov"}]},
                },
            })
        );
    }

    #[test]
    fn preserves_metadata_exactly() {
        let metadata = json!({"name": "q", "namespace": "ns", "unknownField": {"kept": true}});
        let old = json!({
            "apiVersion": "kueue.x-k8s.io/v1beta1",
            "kind": "LocalQueue",
            "metadata": metadata,
            "spec": {"clusterQueue": "cq"},
        });
        assert_eq!(
            convert(old, v1beta2::API_VERSION).expect("upgrade")["metadata"],
            metadata
        );
    }

    #[test]
    fn same_version_and_foreign_kinds_pass_through_untouched() {
        let same = json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue", "spec": {"bogus": 1}});
        assert_eq!(
            convert(same.clone(), v1beta2::API_VERSION).expect("no-op"),
            same
        );
        let foreign = json!({"apiVersion": "batch/v1", "kind": "Job", "spec": {"suspend": true}});
        assert_eq!(
            convert(foreign.clone(), v1beta2::API_VERSION).expect("no-op"),
            foreign
        );
    }

    #[test]
    fn kinds_without_webhook_only_change_api_version() {
        let flavor = json!({
            "apiVersion": "kueue.x-k8s.io/v1beta1",
            "kind": "ResourceFlavor",
            "metadata": {"name": "spot"},
            "spec": {"nodeLabels": {"pool": "spot"}},
        });
        let mut expected = flavor.clone();
        expected["apiVersion"] = json!("kueue.x-k8s.io/v1beta2");
        assert_eq!(
            convert(flavor, v1beta2::API_VERSION).expect("upgrade"),
            expected
        );
    }

    #[test]
    fn rejects_what_it_cannot_convert() {
        let cases = [
            (
                json!({"kind": "Workload"}),
                v1beta2::API_VERSION,
                "object has no apiVersion",
            ),
            (
                json!({"apiVersion": "kueue.x-k8s.io/v1beta1"}),
                v1beta2::API_VERSION,
                "object has no kind",
            ),
            (
                json!({"apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "Workload", "spec": {}}),
                "kueue.x-k8s.io/v1alpha1",
                "cannot convert Workload from kueue.x-k8s.io/v1beta1 to kueue.x-k8s.io/v1alpha1: Kuota serves Workload as kueue.x-k8s.io/v1beta1 and kueue.x-k8s.io/v1beta2",
            ),
            (
                json!({"apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "LocalQueue", "spec": {"clusterQueue": 7}}),
                v1beta2::API_VERSION,
                "invalid LocalQueue kueue.x-k8s.io/v1beta1: invalid type: integer `7`, expected a string",
            ),
        ];
        for (object, desired, message) in cases {
            let error = convert(object, desired).expect_err("conversion must fail");
            assert_eq!(error.to_string(), message);
        }
    }
}
