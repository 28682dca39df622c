//! AdmissionCheck: an extra gate, run by some controller, that a workload must pass.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::api::schema;

/// Desired state of an AdmissionCheck.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, Default, JsonSchema, PartialEq)]
#[kube(
    group = "kueue.x-k8s.io",
    version = "v1beta2",
    kind = "AdmissionCheck",
    plural = "admissionchecks",
    shortname = "ac",
    status = "AdmissionCheckStatus",
    derive = "PartialEq",
    derive = "Default",
    doc = "A gate a workload must pass after its quota is reserved, run by a named controller."
)]
#[serde(rename_all = "camelCase")]
pub struct AdmissionCheckSpec {
    /// Controller that runs the check, such as `kueue.x-k8s.io/provisioning-request`.
    #[schemars(
        length(min = 1, max = 253),
        extend("x-kubernetes-validations" = [{"rule": "self == oldSelf", "message": "field is immutable"}])
    )]
    pub controller_name: String,

    /// Object holding controller-specific parameters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parameters: Option<AdmissionCheckParametersReference>,
}

/// Reference to the parameters object of an AdmissionCheck.
#[derive(Serialize, Deserialize, Clone, Debug, Default, JsonSchema, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct AdmissionCheckParametersReference {
    /// API group of the parameters object.
    #[schemars(length(min = 1, max = 253), pattern(schema::DNS1123_SUBDOMAIN))]
    pub api_group: String,

    /// Kind of the parameters object.
    #[schemars(
        length(min = 1, max = 63),
        pattern(r"^(?i)[a-z]([-a-z0-9]*[a-z0-9])?$")
    )]
    pub kind: String,

    /// Name of the parameters object.
    #[schemars(length(min = 1, max = 63), pattern(schema::DNS1123_LABEL))]
    pub name: String,
}

/// Observed state of an AdmissionCheck.
#[derive(Serialize, Deserialize, Clone, Debug, Default, JsonSchema, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct AdmissionCheckStatus {
    /// Latest observations; the `Active` condition tells whether the controller serves the check.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(
        transform = schema::condition_validations,
        length(max = 16),
        extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["type"])
    )]
    pub conditions: Vec<Condition>,
}
