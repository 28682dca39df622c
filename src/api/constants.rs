//! Well-known keys and values of Kueue's API: labels, annotations, finalizers, scheduling
//! gates, condition types and reasons. Tools written for Kueue read these, so they must match
//! Kueue exactly.

/// API group of every Kueue kind.
pub const GROUP: &str = "kueue.x-k8s.io";

// === Labels and annotations on jobs ===

/// Label on a job naming the LocalQueue it is submitted to.
pub const QUEUE_NAME_LABEL: &str = "kueue.x-k8s.io/queue-name";
/// Name of the LocalQueue that jobs without a queue-name label go to, when it exists.
pub const DEFAULT_LOCAL_QUEUE_NAME: &str = "default";
/// Label on a job naming its WorkloadPriorityClass.
pub const PRIORITY_CLASS_LABEL: &str = "kueue.x-k8s.io/priority-class";
/// Name of the WorkloadPriorityClass given to jobs without a priority-class label, when it exists.
pub const DEFAULT_WORKLOAD_PRIORITY_CLASS_NAME: &str = "default";
/// Label (or annotation) on a job naming an existing Workload to use instead of creating one.
pub const PREBUILT_WORKLOAD_LABEL: &str = "kueue.x-k8s.io/prebuilt-workload-name";
/// Label on a job copied to `workload.spec.maximumExecutionTimeSeconds`.
pub const MAX_EXEC_TIME_SECONDS_LABEL: &str = "kueue.x-k8s.io/max-exec-time-seconds";
/// Prefix of job annotations copied to the Workload as ProvisioningRequest parameters.
pub const PROVISIONING_REQUEST_ANNOTATION_PREFIX: &str = "provreq.kueue.x-k8s.io/";
/// Annotation on a job (value `true`) making it an elastic job handled by workload slices.
pub const ELASTIC_JOB_ANNOTATION: &str = "kueue.x-k8s.io/elastic-job";
/// Annotation on a job naming what gates its admission.
pub const ADMISSION_GATED_BY_ANNOTATION: &str = "kueue.x-k8s.io/admission-gated-by";
/// Annotation on a batch Job: the smallest parallelism it can run with (partial admission).
pub const JOB_MIN_PARALLELISM_ANNOTATION: &str = "kueue.x-k8s.io/job-min-parallelism";
/// Annotation on a batch Job: keep completions equal to parallelism under partial admission.
pub const JOB_COMPLETIONS_EQUAL_PARALLELISM_ANNOTATION: &str =
    "kueue.x-k8s.io/job-completions-equal-parallelism";
/// Annotation on a batch Job (value `true`) while Kueue is suspending it.
pub const STOPPING_ANNOTATION: &str = "kueue.x-k8s.io/stopping";
/// Annotation on a Workload: a signed integer added to its priority.
pub const PRIORITY_BOOST_ANNOTATION: &str = "kueue.x-k8s.io/priority-boost";

// === Labels and annotations on Workloads and pods ===

/// Label on a Workload holding the UID of the job that owns it.
pub const JOB_UID_LABEL: &str = "kueue.x-k8s.io/job-uid";
/// Label on admitted pod templates naming their PodSet.
pub const PODSET_LABEL: &str = "kueue.x-k8s.io/podset";
/// Label on admitted pod templates naming the ClusterQueue that admitted them.
pub const CLUSTER_QUEUE_NAME_LABEL: &str = "kueue.x-k8s.io/cluster-queue-name";
/// Label on admitted pod templates naming the LocalQueue they were submitted to.
pub const LOCAL_QUEUE_NAME_LABEL: &str = "kueue.x-k8s.io/local-queue-name";
/// Label (value `true`) on pods managed by the pod integration.
pub const MANAGED_LABEL: &str = "kueue.x-k8s.io/managed";
/// Annotation on pod templates naming the Workload (topology-aware scheduling).
pub const WORKLOAD_ANNOTATION: &str = "kueue.x-k8s.io/workload";
/// Label (value `true`) on the pod templates, and so the pods, of a PodSet admitted with a
/// topology assignment.
pub const TAS_LABEL: &str = "kueue.x-k8s.io/tas";

// === Finalizers and scheduling gates ===

/// Finalizer on Workloads, ClusterQueues and ResourceFlavors that are in use.
pub const RESOURCE_IN_USE_FINALIZER: &str = "kueue.x-k8s.io/resource-in-use";
/// Scheduling gate holding the pods of an elastic job until it is admitted.
pub const ELASTIC_JOB_SCHEDULING_GATE: &str = "kueue.x-k8s.io/elastic-job";
/// Pod template annotation: every pod of the PodSet on one domain of this topology level.
pub const PODSET_REQUIRED_TOPOLOGY_ANNOTATION: &str = "kueue.x-k8s.io/podset-required-topology";
/// Pod template annotation: the pods on as few domains of this level as possible.
pub const PODSET_PREFERRED_TOPOLOGY_ANNOTATION: &str = "kueue.x-k8s.io/podset-preferred-topology";
/// Pod template annotation (`"true"`): topology-aware placement without a level constraint.
pub const PODSET_UNCONSTRAINED_TOPOLOGY_ANNOTATION: &str =
    "kueue.x-k8s.io/podset-unconstrained-topology";
/// Pod template annotation: each slice of the PodSet on one domain of this level.
pub const PODSET_SLICE_REQUIRED_TOPOLOGY_ANNOTATION: &str =
    "kueue.x-k8s.io/podset-slice-required-topology";
/// Pod template annotation: pods per slice.
pub const PODSET_SLICE_SIZE_ANNOTATION: &str = "kueue.x-k8s.io/podset-slice-size";
/// Pod template annotation: up to three slice levels with their sizes, as a JSON array.
pub const PODSET_SLICE_REQUIRED_TOPOLOGY_CONSTRAINTS_ANNOTATION: &str =
    "kueue.x-k8s.io/podset-slice-required-topology-constraints";
/// Pod template annotation: PodSets with the same group name are placed together.
pub const PODSET_GROUP_NAME_ANNOTATION: &str = "kueue.x-k8s.io/podset-group-name";

/// Scheduling gate holding pods until their topology assignment is applied.
pub const TOPOLOGY_SCHEDULING_GATE: &str = "kueue.x-k8s.io/topology";
/// Scheduling gate holding pods of the pod integration until admission.
pub const ADMISSION_SCHEDULING_GATE: &str = "kueue.x-k8s.io/admission";

// === Names and limits ===

/// Name of the only PodSet of single-template jobs.
pub const DEFAULT_POD_SET_NAME: &str = "main";
/// Most PodSets a Workload can have.
pub const MAX_POD_SETS: usize = 18;
/// Controller name of MultiKueue admission checks, also used as `spec.managedBy`.
pub const MULTIKUEUE_CONTROLLER_NAME: &str = "kueue.x-k8s.io/multikueue";
/// Controller name of ProvisioningRequest admission checks.
pub const PROVISIONING_REQUEST_CONTROLLER_NAME: &str = "kueue.x-k8s.io/provisioning-request";

/// Condition types of Kueue objects.
pub mod condition {
    /// Workload: quota is reserved in a ClusterQueue.
    pub const QUOTA_RESERVED: &str = "QuotaReserved";
    /// Workload: quota is reserved and every admission check passed; the job may run.
    pub const ADMITTED: &str = "Admitted";
    /// Workload: the job finished (successfully or not).
    pub const FINISHED: &str = "Finished";
    /// Workload: all pods are ready (waitForPodsReady).
    pub const PODS_READY: &str = "PodsReady";
    /// Workload: it was evicted and releases its quota.
    pub const EVICTED: &str = "Evicted";
    /// Workload: it was preempted by another workload.
    pub const PREEMPTED: &str = "Preempted";
    /// Workload: it was put back in its queue after an eviction.
    pub const REQUEUED: &str = "Requeued";
    /// Workload: it is about to be deactivated.
    pub const DEACTIVATION_TARGET: &str = "DeactivationTarget";
    /// Workload: a closed preemption gate keeps it from preempting.
    pub const BLOCKED_ON_PREEMPTION_GATES: &str = "BlockedOnPreemptionGates";
    /// Workload: it waits for replacement pods after node failures.
    pub const WAITING_FOR_REPLACEMENT_PODS: &str = "WaitingForReplacementPods";
    /// ClusterQueue, LocalQueue, AdmissionCheck, MultiKueueCluster: the object is usable.
    pub const ACTIVE: &str = "Active";
}

/// Condition reasons of Kueue objects.
pub mod reason {
    /// QuotaReserved=True.
    pub const QUOTA_RESERVED: &str = "QuotaReserved";
    /// QuotaReserved=False: no flavor matches the workload's node affinity or tolerations.
    pub const NO_MATCHING_FLAVOR: &str = "NoMatchingFlavor";
    /// QuotaReserved=False: not enough unused quota right now.
    pub const WAITING_FOR_QUOTA: &str = "WaitingForQuota";
    /// QuotaReserved=False: the request exceeds what the queue could ever provide.
    pub const EXCEEDS_MAX_QUOTA: &str = "ExceedsMaxQuota";
    /// QuotaReserved=False: no topology placement was found.
    pub const TOPOLOGY_PLACEMENT_FAILED: &str = "TopologyPlacementFailed";
    /// QuotaReserved=False: workloads are being preempted to make room.
    pub const WAITING_FOR_PREEMPTED_WORKLOADS: &str = "WaitingForPreemptedWorkloads";
    /// QuotaReserved=False: the queue configuration prevents admission.
    pub const MISCONFIGURED: &str = "Misconfigured";
    /// QuotaReserved=False: the queue is stopped or inactive.
    pub const SUSPENDED: &str = "Suspended";
    /// QuotaReserved=False: the workload has not been evaluated yet.
    pub const PENDING_EVALUATION: &str = "PendingEvaluation";
    /// QuotaReserved=False: admission waits for earlier workloads to become ready.
    pub const WAITING_FOR_PODS_READY: &str = "WaitingForPodsReady";
    /// QuotaReserved=False: admission is gated by an annotation.
    pub const ADMISSION_GATED: &str = "AdmissionGated";
    /// QuotaReserved=False: the job is on hold.
    pub const ON_HOLD: &str = "OnHold";
    /// QuotaReserved=False, legacy reason: waiting for quota.
    pub const PENDING: &str = "Pending";
    /// QuotaReserved=False, legacy reason: the queue is missing or stopped.
    pub const INADMISSIBLE: &str = "Inadmissible";
    /// QuotaReserved=False, legacy reason: waiting for pods of other workloads to be ready.
    pub const WAITING: &str = "Waiting";

    /// Admitted=True.
    pub const ADMITTED: &str = "Admitted";
    /// Admitted=False: no quota is reserved.
    pub const NO_RESERVATION: &str = "NoReservation";
    /// Admitted=False: some admission check is not Ready.
    pub const UNSATISFIED_ADMISSION_CHECKS: &str = "UnsatisfiedAdmissionChecks";
    /// Admitted=False: a delayed topology request is pending.
    pub const PENDING_DELAYED_TOPOLOGY_REQUESTS: &str = "PendingDelayedTopologyRequests";

    /// Evicted: preempted by another workload.
    pub const PREEMPTED: &str = "Preempted";
    /// Evicted: pods were not ready in time.
    pub const PODS_READY_TIMEOUT: &str = "PodsReadyTimeout";
    /// Evicted: an admission check asked to retry.
    pub const ADMISSION_CHECK: &str = "AdmissionCheck";
    /// Evicted: the ClusterQueue is stopped with HoldAndDrain.
    pub const CLUSTER_QUEUE_STOPPED: &str = "ClusterQueueStopped";
    /// Evicted: the LocalQueue is stopped with HoldAndDrain.
    pub const LOCAL_QUEUE_STOPPED: &str = "LocalQueueStopped";
    /// Evicted: nodes of the topology assignment failed.
    pub const NODE_FAILURES: &str = "NodeFailures";
    /// Evicted: the workload was deactivated.
    pub const DEACTIVATED: &str = "Deactivated";
    /// Evicted: the workload was evicted on the MultiKueue manager cluster.
    pub const EVICTED_ON_MANAGER_CLUSTER: &str = "EvictedOnManagerCluster";
    /// Evicted: the workload moves to a preferred flavor.
    pub const FLAVOR_MIGRATION: &str = "FlavorMigration";
    /// Deactivation cause: the maximum execution time was exceeded.
    pub const MAXIMUM_EXECUTION_TIME_EXCEEDED: &str = "MaximumExecutionTimeExceeded";
    /// Deactivation cause: the requeuing limit was reached.
    pub const REQUEUING_LIMIT_EXCEEDED: &str = "RequeuingLimitExceeded";

    /// Preempted: by a higher-priority workload of the same ClusterQueue.
    pub const IN_CLUSTER_QUEUE: &str = "InClusterQueue";
    /// Preempted: quota reclaimed by another queue of the cohort.
    pub const IN_COHORT_RECLAMATION: &str = "InCohortReclamation";
    /// Preempted: by fair sharing in the cohort.
    pub const IN_COHORT_FAIR_SHARING: &str = "InCohortFairSharing";
    /// Preempted: quota reclaimed by a borrowing workload of the cohort.
    pub const IN_COHORT_RECLAIM_WHILE_BORROWING: &str = "InCohortReclaimWhileBorrowing";

    /// Requeued: the workload was reactivated.
    pub const REACTIVATED: &str = "Reactivated";
    /// Requeued: the requeue backoff elapsed.
    pub const BACKOFF_FINISHED: &str = "BackoffFinished";
    /// Requeued: the ClusterQueue was restarted.
    pub const CLUSTER_QUEUE_RESTARTED: &str = "ClusterQueueRestarted";
    /// Requeued: the LocalQueue was restarted.
    pub const LOCAL_QUEUE_RESTARTED: &str = "LocalQueueRestarted";

    /// Finished: the job succeeded.
    pub const SUCCEEDED: &str = "Succeeded";
    /// Finished: the job failed.
    pub const FAILED: &str = "Failed";
    /// Finished: the prebuilt workload does not match the job.
    pub const OUT_OF_SYNC: &str = "OutOfSync";
    /// Finished: the owning job is gone.
    pub const OWNER_NOT_FOUND: &str = "OwnerNotFound";
    /// Finished: the job could not be started with its admission.
    pub const FAILED_TO_START: &str = "FailedToStart";
    /// Finished: the workload slice was replaced by a newer one.
    pub const WORKLOAD_SLICE_REPLACED: &str = "WorkloadSliceReplaced";

    /// PodsReady=False: not all pods are ready yet.
    pub const WAIT_FOR_START: &str = "WaitForStart";
    /// PodsReady=False: a pod failed and the job waits for it to recover.
    pub const WAIT_FOR_RECOVERY: &str = "WaitForRecovery";
    /// PodsReady=True: all pods became ready.
    pub const STARTED: &str = "Started";
    /// PodsReady=True: all pods are ready again after a failure.
    pub const RECOVERED: &str = "Recovered";

    /// Active=True on ClusterQueues and LocalQueues.
    pub const READY: &str = "Ready";
    /// Active=False: the object is being deleted.
    pub const TERMINATING: &str = "Terminating";
    /// Active=False: the queue is stopped by its stopPolicy.
    pub const STOPPED: &str = "Stopped";
    /// Active=False on a ClusterQueue: a flavor it references does not exist.
    pub const FLAVOR_NOT_FOUND: &str = "FlavorNotFound";
    /// Active=False on a ClusterQueue: an admission check it references does not exist.
    pub const ADMISSION_CHECK_NOT_FOUND: &str = "AdmissionCheckNotFound";
    /// Active=False on a ClusterQueue: an admission check it references is inactive.
    pub const ADMISSION_CHECK_INACTIVE: &str = "AdmissionCheckInactive";
    /// Active=False on a ClusterQueue: a topology of its flavors does not exist.
    pub const TOPOLOGY_NOT_FOUND: &str = "TopologyNotFound";
    /// Active=Unknown.
    pub const UNKNOWN: &str = "Unknown";
    /// Active=False on a LocalQueue: its ClusterQueue does not exist.
    pub const CLUSTER_QUEUE_DOES_NOT_EXIST: &str = "ClusterQueueDoesNotExist";
    /// Active=False on a LocalQueue: its ClusterQueue is inactive.
    pub const CLUSTER_QUEUE_IS_INACTIVE: &str = "ClusterQueueIsInactive";
}
