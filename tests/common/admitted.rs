//! Whether a Workload is admitted.

use kuota::api::v1beta2::Workload;

use super::workload::condition;

/// Admitted: the Workload has an admission and its `Admitted` condition is True.
pub fn is_admitted(workload: &Workload) -> bool {
    workload
        .status
        .as_ref()
        .is_some_and(|status| status.admission.is_some())
        && condition(workload, "Admitted").is_some_and(|c| c.status == "True")
}
