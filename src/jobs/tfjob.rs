//! kubeflow.org/v1 TFJob (`pkg/controller/jobs/kubeflow/jobs/tfjob/`).

use super::{JobKind, KubeflowJob, KubeflowValidation};

/// The TFJob integration (`kubeflow.org/tfjob`).
pub static TF_JOB: KubeflowJob = KubeflowJob {
    name: "kubeflow.org/tfjob",
    kind: JobKind {
        group: "kubeflow.org",
        version: "v1",
        kind: "TFJob",
        plural: "tfjobs",
    },
    replica_specs_field: "tfReplicaSpecs",
    replica_types: &["Chief", "Master", "PS", "Worker", "Evaluator"],
    operator_name: "tfjob-controller",
    supports_prebuilt_workload: true,
    validation: KubeflowValidation::Base,
};
