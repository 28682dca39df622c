//! The cluster autoscaler's `autoscaling.x-k8s.io/v1` ProvisioningRequest, as far as the check
//! reads and writes it. The CRD is the autoscaler's: Kuota never installs it, only looks for it.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::CustomResource;
use serde::{Deserialize, Serialize};

/// A request for capacity for a set of pods.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[kube(
    group = "autoscaling.x-k8s.io",
    version = "v1",
    kind = "ProvisioningRequest",
    plural = "provisioningrequests",
    namespaced,
    status = "ProvisioningRequestStatus",
    schema = "disabled",
    derive = "PartialEq",
    derive = "Default"
)]
#[serde(rename_all = "camelCase")]
pub struct ProvisioningRequestSpec {
    /// How the autoscaler provisions the capacity.
    pub provisioning_class_name: String,
    /// Class-specific parameters.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub parameters: BTreeMap<String, String>,
    /// The pods to make room for, each set by a PodTemplate in the request's namespace.
    pub pod_sets: Vec<RequestPodSet>,
}

/// `count` pods of the PodTemplate named by `podTemplateRef`.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct RequestPodSet {
    /// The PodTemplate in the request's namespace.
    pub pod_template_ref: PodTemplateReference,
    /// Number of pods.
    pub count: i32,
}

/// Name of a PodTemplate.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
pub struct PodTemplateReference {
    /// PodTemplate name.
    pub name: String,
}

/// What the autoscaler reports.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ProvisioningRequestStatus {
    /// `Accepted`, `Provisioned`, `Failed`, `BookingExpired`, `CapacityRevoked`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
    /// Class-specific details, read by the check's node-selector updates.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub provisioning_class_details: BTreeMap<String, String>,
}

/// The autoscaler's condition types.
pub mod condition {
    /// The autoscaler took the request in.
    pub const ACCEPTED: &str = "Accepted";
    /// The capacity is there (or was; see the booking conditions).
    pub const PROVISIONED: &str = "Provisioned";
    /// The capacity could not be provisioned.
    pub const FAILED: &str = "Failed";
    /// The capacity was held for the pods too long and released.
    pub const BOOKING_EXPIRED: &str = "BookingExpired";
    /// The capacity was taken back.
    pub const CAPACITY_REVOKED: &str = "CapacityRevoked";
}

/// Pod annotation naming the request whose capacity the pod consumes.
pub const CONSUME_ANNOTATION: &str = "autoscaling.x-k8s.io/consume-provisioning-request";
/// Pod annotation naming the request's provisioning class.
pub const CLASS_ANNOTATION: &str = "autoscaling.x-k8s.io/provisioning-class-name";

impl ProvisioningRequest {
    /// The `True` condition of this type, if any.
    pub fn true_condition(&self, type_: &str) -> Option<&Condition> {
        crate::k8s::conditions::find_true(&self.status.as_ref()?.conditions, type_)
    }

    /// The condition of this type, whatever its status.
    pub fn condition(&self, type_: &str) -> Option<&Condition> {
        crate::k8s::conditions::find(&self.status.as_ref()?.conditions, type_)
    }
}
