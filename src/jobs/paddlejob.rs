//! kubeflow.org/v1 PaddleJob (`pkg/controller/jobs/kubeflow/jobs/paddlejob/`).

use super::{JobKind, KubeflowJob, KubeflowValidation};

/// The PaddleJob integration (`kubeflow.org/paddlejob`).
pub static PADDLE_JOB: KubeflowJob = KubeflowJob {
    name: "kubeflow.org/paddlejob",
    kind: JobKind {
        group: "kubeflow.org",
        version: "v1",
        kind: "PaddleJob",
        plural: "paddlejobs",
    },
    replica_specs_field: "paddleReplicaSpecs",
    replica_types: &["Master", "Worker"],
    operator_name: "paddlejob-controller",
    supports_prebuilt_workload: true,
    validation: KubeflowValidation::Base,
};
