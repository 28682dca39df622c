//! Reading a Workload's status.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kuota::api::v1beta2::Workload;

/// The Workload's condition of type `type_`, if it has one.
pub fn condition<'a>(workload: &'a Workload, type_: &str) -> Option<&'a Condition> {
    workload
        .status
        .as_ref()?
        .conditions
        .iter()
        .find(|c| c.type_ == type_)
}
