//! kubeflow.org/v2beta1 MPIJob (`pkg/controller/jobs/mpijob/`).

use super::{JobKind, KubeflowJob, KubeflowValidation};

/// The MPIJob integration (`kubeflow.org/mpijob`).
pub static MPI_JOB: KubeflowJob = KubeflowJob {
    name: "kubeflow.org/mpijob",
    kind: JobKind {
        group: "kubeflow.org",
        version: "v2beta1",
        kind: "MPIJob",
        plural: "mpijobs",
    },
    replica_specs_field: "mpiReplicaSpecs",
    replica_types: &["Launcher", "Worker"],
    operator_name: "mpi-operator",
    supports_prebuilt_workload: true,
    validation: KubeflowValidation::SortedByField,
};
