//! kubeflow.org/v1 PyTorchJob (`pkg/controller/jobs/kubeflow/jobs/pytorchjob/`).

use super::{JobKind, KubeflowJob, KubeflowValidation};

/// The PyTorchJob integration (`kubeflow.org/pytorchjob`).
pub static PYTORCH_JOB: KubeflowJob = KubeflowJob {
    name: "kubeflow.org/pytorchjob",
    kind: JobKind {
        group: "kubeflow.org",
        version: "v1",
        kind: "PyTorchJob",
        plural: "pytorchjobs",
    },
    replica_specs_field: "pytorchReplicaSpecs",
    replica_types: &["Master", "Worker"],
    operator_name: "pytorchjob-controller",
    supports_prebuilt_workload: true,
    validation: KubeflowValidation::Base,
};
