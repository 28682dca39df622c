//! AdmissionCheck v1beta1: v1beta2's fields plus the deprecated `retryDelayMinutes`.

use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::api::v1beta2::{AdmissionCheckParametersReference, AdmissionCheckStatus};

/// Desired state of an AdmissionCheck (v1beta1).
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, Default, JsonSchema, PartialEq)]
#[kube(
    group = "kueue.x-k8s.io",
    version = "v1beta1",
    kind = "AdmissionCheck",
    plural = "admissionchecks",
    shortname = "ac",
    status = "AdmissionCheckStatus",
    derive = "PartialEq",
    derive = "Default",
    served = true,
    storage = false,
    deprecated = "This version is deprecated. Use v1beta2 instead.",
    doc = "A gate a workload must pass after its quota is reserved, run by a named controller."
)]
#[serde(rename_all = "camelCase")]
pub struct AdmissionCheckSpec {
    /// Controller that runs the check, such as `kueue.x-k8s.io/provisioning-request`.
    #[schemars(extend("x-kubernetes-validations" = [{"rule": "self == oldSelf", "message": "field is immutable"}]))]
    pub controller_name: String,

    /// Deprecated and ignored: minutes to wait before retrying a check in `Retry`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = 15))]
    pub retry_delay_minutes: Option<i64>,

    /// Object holding controller-specific parameters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parameters: Option<AdmissionCheckParametersReference>,
}
