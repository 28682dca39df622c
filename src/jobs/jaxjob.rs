//! kubeflow.org/v1 JAXJob (no prebuilt Workloads, as in Kueue).

use super::{JobKind, KubeflowJob, KubeflowValidation};

/// The JAXJob integration (`kubeflow.org/jaxjob`).
pub static JAX_JOB: KubeflowJob = KubeflowJob {
    name: "kubeflow.org/jaxjob",
    kind: JobKind {
        group: "kubeflow.org",
        version: "v1",
        kind: "JAXJob",
        plural: "jaxjobs",
    },
    replica_specs_field: "jaxReplicaSpecs",
    replica_types: &["Worker"],
    operator_name: "jaxjob-controller",
    supports_prebuilt_workload: false,
    validation: KubeflowValidation::Base,
};
