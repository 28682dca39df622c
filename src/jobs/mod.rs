//! Job framework integrations: what Kuota knows about each job kind it queues.
//!
//! Jobs are handled as raw JSON (`serde_json::Value` of the whole object) so unknown fields
//! are never lost; callers compute patches with `json_patch::diff(before, after)`. Pod
//! templates are deserialized to k8s-openapi types only to compute requests.
//!
//! Every kind is a value implementing [`JobFramework`], and [`FRAMEWORKS`] is the one table
//! of them. Adding a kind means one new file plus one line in that table.
//!
//! Kuota does not implement workload slicing, so everything here behaves like Kueue with the
//! `ElasticJobsViaWorkloadSlices` gate off. Topology requests are read and checked
//! ([`topology`]); placing pods by them is not implemented yet.

mod kubeflow;
mod workload_name;

pub mod job;
pub mod jobset;
pub mod podset;
pub mod ray;
pub mod raycluster;
pub mod rayjob;
pub mod requests;
pub mod topology;
pub mod validation;

mod jaxjob;
mod mpijob;
mod paddlejob;
mod pytorchjob;
mod tfjob;
mod xgboostjob;

use serde::de::DeserializeOwned;

use crate::api::constants::QUEUE_NAME_LABEL;
use crate::k8s::field::FieldError;
use crate::k8s::json;
use serde_json::Value;

pub use jaxjob::JAX_JOB;
pub use job::BatchJob;
pub use jobset::JobSet;
pub use kubeflow::{KubeflowJob, KubeflowValidation};
pub use mpijob::MPI_JOB;
pub use paddlejob::PADDLE_JOB;
pub use podset::{MAX_POD_SETS, PodSet, PodSetInfo, merge_into_pod_template, pod_sets_equivalent};
pub use pytorchjob::PYTORCH_JOB;
pub use raycluster::RayCluster;
pub use rayjob::RayJob;
pub use requests::{Requests, pod_requests, scale_requests, total_requests};
pub use tfjob::TF_JOB;
pub use topology::{PodIndexing, TopologyGates};
pub use validation::ValidationInput;
pub use workload_name::{workload_name, workload_name_for};
pub use xgboostjob::XGBOOST_JOB;

/// Every job kind Kuota integrates with.
pub static FRAMEWORKS: &[&dyn JobFramework] = &[
    &BatchJob,
    &JobSet,
    &RayJob,
    &RayCluster,
    &MPI_JOB,
    &PYTORCH_JOB,
    &TF_JOB,
    &XGBOOST_JOB,
    &PADDLE_JOB,
    &JAX_JOB,
];

/// Group, version, kind and plural of a job kind's API resource.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct JobKind {
    /// API group ("" for the core group).
    pub group: &'static str,
    /// API version.
    pub version: &'static str,
    /// Kind.
    pub kind: &'static str,
    /// Plural resource name.
    pub plural: &'static str,
}

impl JobKind {
    /// `group/version`, or just `version` for the core group.
    pub fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.to_string()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }

    /// The kube-rs resource description, for dynamic clients.
    pub fn api_resource(&self) -> kube::core::ApiResource {
        kube::core::ApiResource {
            group: self.group.to_string(),
            version: self.version.to_string(),
            api_version: self.api_version(),
            kind: self.kind.to_string(),
            plural: self.plural.to_string(),
        }
    }

    /// Go's `GroupVersionKind.String()`, e.g. `batch/v1, Kind=Job`, as used in Kueue messages.
    pub fn gvk_string(&self) -> String {
        format!("{}/{}, Kind={}", self.group, self.version, self.kind)
    }

    /// Path of the mutating webhook for this kind, e.g. `/mutate-batch-v1-job`.
    pub fn mutate_path(&self) -> String {
        self.webhook_path("mutate")
    }

    /// Path of the validating webhook for this kind, e.g. `/validate-batch-v1-job`.
    pub fn validate_path(&self) -> String {
        self.webhook_path("validate")
    }

    // controller-runtime's rule: /<op>-<group with dots as dashes>-<version>-<lowercase kind>.
    fn webhook_path(&self, operation: &str) -> String {
        format!(
            "/{operation}-{}-{}-{}",
            self.group.replace('.', "-"),
            self.version,
            self.kind.to_lowercase()
        )
    }
}

/// Which admission webhook a path belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WebhookKind {
    /// Defaulting (mutating) webhook.
    Mutate,
    /// Validating webhook.
    Validate,
}

/// How a finished job ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobFinished {
    /// Whether the job succeeded.
    pub success: bool,
    /// The job's own message about how it ended.
    pub message: String,
}

/// Pods of a PodSet that finished and no longer need quota (Kueue `ReclaimablePod`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReclaimablePod {
    /// PodSet name.
    pub name: String,
    /// Number of pods whose quota can be released.
    pub count: i32,
}

/// Why a job's PodSets could not be read or its admission could not be applied.
#[derive(Debug, thiserror::Error)]
pub enum JobError {
    /// A field the kind needs is absent.
    #[error("missing field {pointer}")]
    MissingField {
        /// JSON pointer of the absent field.
        pointer: String,
    },
    /// A pod template (or resource list) does not match the Kubernetes schema.
    #[error("invalid {pointer}: {source}")]
    InvalidField {
        /// JSON pointer of the invalid value.
        pointer: String,
        /// Why it does not deserialize.
        source: serde_json::Error,
    },
    /// A resource quantity that does not parse.
    #[error(transparent)]
    Quantity(#[from] crate::k8s::quantity::QuantityError),
    /// More PodSets than a Workload can hold.
    #[error("the job has {count} PodSets, at most {max} are allowed", max = MAX_POD_SETS)]
    TooManyPodSets {
        /// Number of PodSets the job has.
        count: usize,
    },
    /// A pod template's topology annotations cannot make a topology request (the webhook
    /// refuses such jobs; this is for jobs created while it was bypassed).
    #[error("invalid topology request: {0}")]
    InvalidTopologyRequest(String),
    /// Admission info does not fit the job's PodSets (Kueue `BadPodSetsInfoLenError`).
    #[error("invalid podset infos: expecting {expected} podset, got {got}")]
    PodSetCountMismatch {
        /// PodSets the job has.
        expected: usize,
        /// PodSet infos given.
        got: usize,
    },
    /// Admission would overwrite a template key with another value (Kueue `BadPodSetsUpdateError`).
    #[error(
        "invalid admission check PodSetUpdate: conflict for {field}: conflict for key={key}, value1={existing}, value2={requested}"
    )]
    Conflict {
        /// `annotations`, `labels` or `nodeSelector`.
        field: &'static str,
        /// The conflicting key.
        key: String,
        /// Value already present.
        existing: String,
        /// Value admission wanted to set.
        requested: String,
    },
}

impl JobError {
    /// True for errors that retrying cannot fix; Kueue then finishes the Workload with `FailedToStart`.
    pub fn is_permanent(&self) -> bool {
        matches!(
            self,
            JobError::PodSetCountMismatch { .. } | JobError::Conflict { .. }
        )
    }
}

/// One job kind Kuota integrates with (Kueue's `GenericJob` plus its webhook specifics).
///
/// All methods are pure functions of the job's JSON.
pub trait JobFramework: Send + Sync + 'static {
    /// Kueue framework name, as accepted in `integrations.frameworks` (e.g. `batch/job`).
    fn name(&self) -> &'static str;

    /// API group, version, kind and plural.
    fn kind(&self) -> JobKind;

    /// JSON pointer of the field that suspends the job, e.g. `/spec/suspend`.
    fn suspend_pointer(&self) -> &'static str;

    /// Whether the job is suspended.
    fn is_suspended(&self, job: &Value) -> bool {
        json::bool_at(job, self.suspend_pointer()).unwrap_or(false)
    }

    /// Sets the suspend field, creating parent objects if needed.
    fn set_suspended(&self, job: &mut Value, suspended: bool) {
        json::set(job, self.suspend_pointer(), Value::Bool(suspended));
    }

    /// Whether Kueue ignores this job entirely (a RayJob that uses an existing cluster).
    fn skip(&self, _job: &Value) -> bool {
        false
    }

    /// The kind's PodSets before sanitizing; use [`JobFramework::pod_sets`].
    fn build_pod_sets(&self, job: &Value) -> Result<Vec<PodSet>, JobError>;

    /// The job's PodSets as they go into a Workload: duplicate env vars collapsed (last wins),
    /// at most [`MAX_POD_SETS`].
    fn pod_sets(&self, job: &Value) -> Result<Vec<PodSet>, JobError> {
        let mut pod_sets = self.build_pod_sets(job)?;
        if pod_sets.len() > MAX_POD_SETS {
            return Err(JobError::TooManyPodSets {
                count: pod_sets.len(),
            });
        }
        pod_sets.iter_mut().for_each(PodSet::collapse_duplicate_env);
        Ok(pod_sets)
    }

    /// JSON pointers of the job's pod templates, in PodSet order.
    fn template_pointers(&self, job: &Value) -> Result<Vec<String>, JobError>;

    /// The pod index labels of the PodSet at `pod_set` (none by default), which go into its
    /// topology request.
    fn pod_indexing(&self, _job: &Value, _pod_set: usize) -> PodIndexing {
        PodIndexing::default()
    }

    /// Starts an admitted job: unsuspends it and merges one [`PodSetInfo`] per PodSet into the
    /// pod templates. On error the job is left unchanged.
    fn run(&self, job: &mut Value, infos: &[PodSetInfo]) -> Result<(), JobError> {
        let mut started = job.clone();
        let pointers = self.template_pointers(&started)?;
        podset::merge_into_templates(&mut started, &pointers, infos)?;
        self.set_suspended(&mut started, false);
        *job = started;
        Ok(())
    }

    /// Stops a job: suspends it and puts the original template labels, annotations,
    /// nodeSelector, tolerations and scheduling gates back from the Workload's PodSets.
    /// Returns false when the PodSets do not fit the job (then only the suspend is written).
    fn restore(&self, job: &mut Value, originals: &[PodSet]) -> bool {
        self.set_suspended(job, true);
        let Ok(pointers) = self.template_pointers(job) else {
            return false;
        };
        let infos: Vec<PodSetInfo> = originals.iter().map(PodSetInfo::from_pod_set).collect();
        podset::restore_templates(job, &pointers, &infos)
    }

    /// `Some` once the job has finished.
    fn finished(&self, job: &Value) -> Option<JobFinished>;

    /// Whether all pods are ready (or succeeded), for `waitForPodsReady`.
    fn pods_ready(&self, job: &Value) -> bool;

    /// Whether the job still has running pods, as far as its status tells.
    fn is_active(&self, job: &Value) -> bool;

    /// Whether the job asks to keep its quota released (a RayJob that failed validation).
    fn is_on_hold(&self, _job: &Value) -> bool {
        false
    }

    /// Priority class the job asks for; by default the first PodSet's `priorityClassName`.
    fn priority_class_name(&self, job: &Value) -> Option<String> {
        let pod_sets = self.build_pod_sets(job).ok()?;
        let spec = pod_sets.first()?.template.spec.as_ref()?;
        spec.priority_class_name
            .clone()
            .filter(|name| !name.is_empty())
    }

    /// Pods whose quota can be released before the job finishes.
    fn reclaimable_pods(&self, _job: &Value) -> Vec<ReclaimablePod> {
        Vec::new()
    }

    /// Label selector of the job's pods, when the kind has one.
    fn pod_label_selector(&self, job: &Value) -> Option<String>;

    /// Whether a job of this kind may use a prebuilt Workload.
    fn supports_prebuilt_workload(&self) -> bool {
        true
    }

    /// Final field errors of a validating admission, given the common jobframework errors.
    ///
    /// Kueue's kinds combine their own rules with the common ones in different orders (and
    /// some skip the common ones), so the common errors come in and the answer goes out.
    /// The default is Kueue's `BaseWebhook`: common create rules on CREATE, common update
    /// rules on UPDATE.
    fn validate(&self, input: ValidationInput<'_>) -> Vec<FieldError> {
        match input.old {
            None => input.common_on_create,
            Some(_) => input.common_on_update,
        }
    }
}

/// The framework with this Kueue framework name (e.g. `kubeflow.org/pytorchjob`).
pub fn by_name(name: &str) -> Option<&'static dyn JobFramework> {
    FRAMEWORKS
        .iter()
        .copied()
        .find(|framework| framework.name() == name)
}

/// The framework for this group, version and kind.
pub fn by_gvk(group: &str, version: &str, kind: &str) -> Option<&'static dyn JobFramework> {
    FRAMEWORKS.iter().copied().find(|framework| {
        let k = framework.kind();
        k.group == group && k.version == version && k.kind == kind
    })
}

/// The framework and kind of webhook served at this path (e.g. `/validate-ray-io-v1-rayjob`).
pub fn by_webhook_path(path: &str) -> Option<(WebhookKind, &'static dyn JobFramework)> {
    FRAMEWORKS.iter().copied().find_map(|framework| {
        if framework.kind().mutate_path() == path {
            Some((WebhookKind::Mutate, framework))
        } else if framework.kind().validate_path() == path {
            Some((WebhookKind::Validate, framework))
        } else {
            None
        }
    })
}

/// The job's LocalQueue name from its `kueue.x-k8s.io/queue-name` label, if non-empty.
pub fn queue_name(job: &Value) -> Option<&str> {
    json::label(job, QUEUE_NAME_LABEL).filter(|name| !name.is_empty())
}

/// Deserializes the value at a pointer into a Kubernetes type; `Ok(None)` when absent or null.
pub(crate) fn typed_at<T: DeserializeOwned>(
    value: &Value,
    pointer: &str,
) -> Result<Option<T>, JobError> {
    match json::at(value, pointer) {
        None | Some(Value::Null) => Ok(None),
        Some(found) => T::deserialize(found)
            .map(Some)
            .map_err(|source| JobError::InvalidField {
                pointer: pointer.to_string(),
                source,
            }),
    }
}

/// Like [`typed_at`] but the value must be present.
pub(crate) fn required_at<T: DeserializeOwned>(
    value: &Value,
    pointer: &str,
) -> Result<T, JobError> {
    typed_at(value, pointer)?.ok_or_else(|| JobError::MissingField {
        pointer: pointer.to_string(),
    })
}

#[cfg(test)]
mod tests;
