//! kubeflow.org/v1 XGBoostJob (`pkg/controller/jobs/kubeflow/jobs/xgboostjob/`).

use super::{JobKind, KubeflowJob, KubeflowValidation};

/// The XGBoostJob integration (`kubeflow.org/xgboostjob`).
pub static XGBOOST_JOB: KubeflowJob = KubeflowJob {
    name: "kubeflow.org/xgboostjob",
    kind: JobKind {
        group: "kubeflow.org",
        version: "v1",
        kind: "XGBoostJob",
        plural: "xgboostjobs",
    },
    replica_specs_field: "xgbReplicaSpecs",
    replica_types: &["Master", "Worker"],
    operator_name: "xgboostjob-controller",
    supports_prebuilt_workload: true,
    validation: KubeflowValidation::Base,
};
