//! Writes a Workload's status the way Kueue does: a server-side apply of the `status`
//! subresource under Kueue's field manager `kueue-admission`, forced, guarded by the object's
//! `resourceVersion`.
//!
//! Kueue-compatible tools that play a job's part for standalone Workloads (Kueue's performance
//! runner, for one) finish an eviction by applying the status without `admission` under that
//! same manager. Server-side apply removes a field only when the applier owned it, so unless
//! Kuota owns `admission` under `kueue-admission`, their apply would leave it behind.

use kube::api::{Patch, PatchParams};
use kube::{Api, Resource, ResourceExt};
use serde_json::{Value, json};

use crate::api::constants::condition;
use crate::api::v1beta2 as api;

/// Kueue's field manager for the admission part of a Workload's status.
pub const ADMISSION_FIELD_MANAGER: &str = "kueue-admission";

/// The condition types Kueue writes under [`ADMISSION_FIELD_MANAGER`]; conditions of other
/// types belong to whoever wrote them and are left out of the apply.
const ADMISSION_CONDITIONS: [&str; 9] = [
    condition::QUOTA_RESERVED,
    condition::BLOCKED_ON_PREEMPTION_GATES,
    condition::EVICTED,
    condition::ADMITTED,
    condition::PREEMPTED,
    condition::REQUEUED,
    condition::DEACTIVATION_TARGET,
    condition::FINISHED,
    condition::PODS_READY,
];

/// The apply body that makes `status` the workload's status: every field Kuota writes, with
/// the conditions of [`ADMISSION_CONDITIONS`] only. Fields left out that an earlier apply set
/// are removed by the API server.
pub fn status_apply(workload: &api::Workload, status: &api::WorkloadStatus) -> Value {
    let mut owned = status.clone();
    owned
        .conditions
        .retain(|c| ADMISSION_CONDITIONS.contains(&c.type_.as_str()));
    json!({
        "apiVersion": api::Workload::api_version(&()),
        "kind": api::Workload::kind(&()),
        "metadata": {
            "name": workload.name_any(),
            "namespace": workload.namespace(),
            "uid": workload.uid(),
            "resourceVersion": workload.resource_version(),
        },
        "status": owned,
    })
}

/// Applies `status` to the workload; a newer `resourceVersion` on the server is a 409 conflict.
///
/// An apply removes only what its manager owned, so a field another writer set (a user, a
/// tool, an older Kuota) and `status` leaves out survives it; those are then removed with a
/// merge patch, guarded by the version the apply returned.
pub async fn apply_status(
    api: &Api<api::Workload>,
    workload: &api::Workload,
    status: &api::WorkloadStatus,
) -> Result<api::Workload, kube::Error> {
    let params = PatchParams::apply(ADMISSION_FIELD_MANAGER).force();
    let name = workload.name_any();
    let written = api
        .patch_status(
            &name,
            &params,
            &Patch::Apply(status_apply(workload, status)),
        )
        .await?;
    let Some(removal) = leftover_removal(&written, status) else {
        return Ok(written);
    };
    api.patch_status(&name, &PatchParams::default(), &Patch::Merge(&removal))
        .await
}

/// The merge patch removing the status fields `written` still has that `status` left out,
/// if any.
fn leftover_removal(written: &api::Workload, status: &api::WorkloadStatus) -> Option<Value> {
    let wanted = serde_json::to_value(status).ok()?;
    let have = serde_json::to_value(written.status.as_ref()?).ok()?;
    let leftovers: serde_json::Map<String, Value> = have
        .as_object()?
        .keys()
        .filter(|field| wanted.get(field.as_str()).is_none())
        .map(|field| (field.clone(), Value::Null))
        .collect();
    (!leftovers.is_empty()).then(|| {
        json!({
            "metadata": {"resourceVersion": written.resource_version()},
            "status": leftovers,
        })
    })
}

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;
    use serde_json::json;

    use super::*;
    use crate::testing::objects::{condition as api_condition, workload};

    #[test]
    fn the_apply_names_the_object_and_keeps_only_admission_conditions() {
        let object = workload("ns", "wl")
            .queue("lq")
            .condition("QuotaReserved", "False", "Pending", "waiting", 100)
            .condition("Ready", "True", "ByUser", "someone else's", 100)
            .build();
        let status = object.status.clone().expect("has a status");
        assert_eq!(
            status_apply(&object, &status),
            json!({
                "apiVersion": "kueue.x-k8s.io/v1beta2",
                "kind": "Workload",
                "metadata": {"name": "wl", "namespace": "ns", "uid": object.uid(), "resourceVersion": "10"},
                "status": {
                    "conditions": [api_condition("QuotaReserved", "False", "Pending", "waiting", 100)],
                },
            })
        );
    }

    #[test]
    fn fields_someone_else_set_are_removed_by_a_merge_patch() {
        let written = workload("ns", "wl")
            .admission(
                "cq",
                json!([{"name": "main", "resourceUsage": {"cpu": "1"}}]),
            )
            .condition("QuotaReserved", "False", "Pending", "evicted", 100)
            .build();
        let mut status = written.status.clone().expect("has a status");
        assert_eq!(leftover_removal(&written, &status), None);
        status.admission = None;
        assert_eq!(
            leftover_removal(&written, &status),
            Some(json!({
                "metadata": {"resourceVersion": "10"},
                "status": {"admission": null},
            }))
        );
    }
}
