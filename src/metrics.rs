//! The process-wide Prometheus registry and the metrics registered in it.
//!
//! Kueue-compatible metrics keep Kueue's `kueue_*` names; metrics about Kuota's own machinery
//! (the webhook server) are named `kuota_*`.

use prometheus_client::encoding::{EncodeLabelSet, EncodeLabelValue, LabelValueEncoder};
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write;
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex, PoisonError};

/// Content type of [`MetricsRegistry::encode`]'s output (OpenMetrics text).
pub const OPENMETRICS_CONTENT_TYPE: &str =
    "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// The registry with every metric Kuota exports.
#[derive(Debug)]
pub struct MetricsRegistry {
    registry: Registry,
    /// Metrics of the webhook HTTPS server.
    pub webhook: WebhookMetrics,
    /// Kueue's scheduling metrics (`kueue_*`), written by the admitter.
    pub admitter: AdmitterMetrics,
    /// What happens to the Kubernetes Events Kuota records.
    pub events: EventMetrics,
}

impl Default for MetricsRegistry {
    fn default() -> Self {
        Self::new()
    }
}

impl MetricsRegistry {
    /// Creates the registry with every metric, the `kueue_local_queue_*` families included (as
    /// with Kueue's `LocalQueueMetrics` feature gate on, its default).
    pub fn new() -> Self {
        Self::with_local_queue_metrics(true)
    }

    /// Creates the registry; the `kueue_local_queue_*` families are registered only when
    /// `local_queue_families` is set, as Kueue registers them only under its
    /// `LocalQueueMetrics` feature gate.
    pub fn with_local_queue_metrics(local_queue_families: bool) -> Self {
        let mut registry = Registry::default();
        register_build_info(&mut registry);
        let webhook = WebhookMetrics::register(&mut registry);
        let admitter = AdmitterMetrics::register(&mut registry, local_queue_families);
        let events = EventMetrics::register(&mut registry);
        Self {
            registry,
            webhook,
            admitter,
            events,
        }
    }

    /// The registry, for callers that encode it themselves.
    pub fn registry(&self) -> &Registry {
        &self.registry
    }

    /// Renders all metrics in the OpenMetrics text format.
    pub fn encode(&self) -> Result<String, std::fmt::Error> {
        let mut out = String::new();
        prometheus_client::encoding::text::encode(&mut out, &self.registry)?;
        Ok(out)
    }
}

/// Labels of `kueue_build_info`, Kueue's set: Kuota fills what a Rust build knows and leaves the
/// Go- and git-specific ones empty.
#[derive(Clone, Debug, PartialEq, Eq, Hash, EncodeLabelSet)]
struct BuildInfoLabels {
    git_version: String,
    git_commit: String,
    build_date: String,
    go_version: String,
    compiler: String,
    platform: String,
}

/// `os/arch` with Go's architecture names, as Kubernetes components report their platform.
fn go_platform(os: &str, arch: &str) -> String {
    let arch = match arch {
        "x86_64" => "amd64",
        "aarch64" => "arm64",
        other => other,
    };
    format!("{os}/{arch}")
}

/// `kueue_build_info`: 1, labelled with this build's version and platform.
fn register_build_info(registry: &mut Registry) {
    let build_info = Family::<BuildInfoLabels, Gauge>::default();
    build_info
        .get_or_create(&BuildInfoLabels {
            git_version: concat!("v", env!("CARGO_PKG_VERSION")).to_owned(),
            git_commit: String::new(),
            build_date: String::new(),
            go_version: String::new(),
            compiler: "rustc".to_owned(),
            platform: go_platform(std::env::consts::OS, std::env::consts::ARCH),
        })
        .set(1);
    registry.register(
        "kueue_build_info",
        "Kuota build information. 1 labeled by version, compiler and platform",
        build_info,
    );
}

/// Outcome of one webhook request, the `result` label.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RequestResult {
    /// Admission allowed without changes.
    Allowed,
    /// Admission allowed with a JSON patch.
    Patched,
    /// Admission denied.
    Denied,
    /// CRD conversion succeeded.
    Converted,
    /// CRD conversion failed for at least one object.
    ConversionFailed,
    /// The body was not a well-formed review (HTTP 400).
    Malformed,
    /// The body exceeded the size limit (HTTP 413).
    TooLarge,
    /// The request was not complete within the request timeout (HTTP 408).
    Timeout,
    /// No webhook is served at the path (HTTP 404).
    NotFound,
    /// The handler failed (HTTP 500).
    InternalError,
}

impl RequestResult {
    /// The label value.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Allowed => "allowed",
            Self::Patched => "patched",
            Self::Denied => "denied",
            Self::Converted => "converted",
            Self::ConversionFailed => "conversion_failed",
            Self::Malformed => "malformed",
            Self::TooLarge => "too_large",
            Self::Timeout => "timeout",
            Self::NotFound => "not_found",
            Self::InternalError => "internal_error",
        }
    }
}

impl EncodeLabelValue for RequestResult {
    fn encode(&self, encoder: &mut LabelValueEncoder) -> Result<(), std::fmt::Error> {
        encoder.write_str(self.as_str())
    }
}

/// Labels of `kuota_webhook_requests_total`.
#[derive(Clone, Debug, PartialEq, Eq, Hash, EncodeLabelSet)]
pub struct RequestLabels {
    /// The served webhook path, or `unmatched` for paths nothing is served at (so that scanners
    /// cannot grow the label set without bound).
    pub path: String,
    /// The outcome.
    pub result: RequestResult,
}

/// Labels of `kuota_webhook_request_duration_seconds`.
#[derive(Clone, Debug, PartialEq, Eq, Hash, EncodeLabelSet)]
pub struct PathLabels {
    /// As in [`RequestLabels::path`].
    pub path: String,
}

/// Labels of `kuota_webhook_certificate_loads_total`.
#[derive(Clone, Debug, PartialEq, Eq, Hash, EncodeLabelSet)]
pub struct LoadLabels {
    /// `success` or `failure`.
    pub result: &'static str,
}

/// Labels of `kuota_events_dropped_total`.
#[derive(Clone, Debug, PartialEq, Eq, Hash, EncodeLabelSet)]
pub struct ReporterLabels {
    /// The controller the events are reported as (`kueue-admission`, `kueue-job-controller`).
    pub reporting_controller: String,
}

/// Metrics of the Kubernetes Events Kuota records; cheap to clone.
#[derive(Clone, Debug, Default)]
pub struct EventMetrics {
    dropped: Family<ReporterLabels, Counter>,
}

impl EventMetrics {
    fn register(registry: &mut Registry) -> Self {
        let metrics = Self::default();
        registry.register(
            "kuota_events_dropped",
            "Kubernetes Events not written because too many waited to be, per reporting controller",
            metrics.dropped.clone(),
        );
        metrics
    }

    /// The counter of dropped events reported as `controller`, exported (at 0) from now on.
    pub fn dropped(&self, controller: &str) -> Counter {
        self.dropped
            .get_or_create(&ReporterLabels {
                reporting_controller: controller.to_owned(),
            })
            .clone()
    }
}

/// Path label value for requests to paths no webhook is served at.
pub const UNMATCHED_PATH: &str = "unmatched";

type HistogramFamily = Family<PathLabels, Histogram, fn() -> Histogram>;

/// Metrics of the webhook HTTPS server; cheap to clone (all handles share the registry's data).
#[derive(Clone, Debug)]
pub struct WebhookMetrics {
    requests: Family<RequestLabels, Counter>,
    duration: HistogramFamily,
    certificate_loads: Family<LoadLabels, Counter>,
    certificate_not_after: Gauge,
}

fn duration_histogram() -> Histogram {
    // 0.5 ms .. ~16 s: admission is usually sub-millisecond, and the API server gives up on a
    // webhook after at most 30 s.
    Histogram::new(prometheus_client::metrics::histogram::exponential_buckets(
        0.0005, 2.0, 16,
    ))
}

impl WebhookMetrics {
    fn register(registry: &mut Registry) -> Self {
        let metrics = Self {
            requests: Family::default(),
            duration: Family::new_with_constructor(duration_histogram),
            certificate_loads: Family::default(),
            certificate_not_after: Gauge::default(),
        };
        registry.register(
            "kuota_webhook_requests",
            "Webhook HTTP requests by path and result",
            metrics.requests.clone(),
        );
        registry.register(
            "kuota_webhook_request_duration_seconds",
            "Time from receiving a webhook request to answering it",
            metrics.duration.clone(),
        );
        registry.register(
            "kuota_webhook_certificate_loads",
            "Serving certificates loaded (success) or refused (failure)",
            metrics.certificate_loads.clone(),
        );
        registry.register(
            "kuota_webhook_certificate_not_after_seconds",
            "Unix time at which the serving certificate expires",
            metrics.certificate_not_after.clone(),
        );
        metrics
    }

    /// Records one answered request.
    pub fn observe_request(&self, path: &str, result: RequestResult, seconds: f64) {
        let path = path.to_owned();
        self.duration
            .get_or_create(&PathLabels { path: path.clone() })
            .observe(seconds);
        self.requests
            .get_or_create(&RequestLabels { path, result })
            .inc();
    }

    /// Records that a serving certificate expiring at `not_after` was loaded.
    pub fn certificate_loaded(&self, not_after: jiff::Timestamp) {
        self.certificate_not_after.set(not_after.as_second());
        self.certificate_loads
            .get_or_create(&LoadLabels { result: "success" })
            .inc();
    }

    /// Records that a replacement certificate was rejected and the old one kept.
    pub fn certificate_rejected(&self) {
        self.certificate_loads
            .get_or_create(&LoadLabels { result: "failure" })
            .inc();
    }
}

/// Kueue's `replica_role` label: which replica reported a metric.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ReplicaRole {
    /// The replica holding the leader-election Lease.
    Leader,
    /// A replica that is not the leader.
    Follower,
    /// Leader election is off.
    Standalone,
}

impl ReplicaRole {
    /// The label value.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Leader => "leader",
            Self::Follower => "follower",
            Self::Standalone => "standalone",
        }
    }
}

impl EncodeLabelValue for ReplicaRole {
    fn encode(&self, encoder: &mut LabelValueEncoder) -> Result<(), std::fmt::Error> {
        encoder.write_str(self.as_str())
    }
}

/// Labels `cluster_queue, replica_role`.
#[derive(Clone, Debug, PartialEq, Eq, Hash, EncodeLabelSet)]
pub struct ClusterQueueLabels {
    /// ClusterQueue name.
    pub cluster_queue: String,
    /// Reporting replica.
    pub replica_role: ReplicaRole,
}

/// Labels `cluster_queue, status, replica_role`.
#[derive(Clone, Debug, PartialEq, Eq, Hash, EncodeLabelSet)]
pub struct ClusterQueueStatusLabels {
    /// ClusterQueue name.
    pub cluster_queue: String,
    /// `active`/`inadmissible` (pending workloads) or `pending`/`active`/`terminated` (queue).
    pub status: &'static str,
    /// Reporting replica.
    pub replica_role: ReplicaRole,
}

/// Labels `cluster_queue, priority_class, replica_role`.
#[derive(Clone, Debug, PartialEq, Eq, Hash, EncodeLabelSet)]
pub struct PriorityLabels {
    /// ClusterQueue name.
    pub cluster_queue: String,
    /// Name in the workload's `priorityClassRef`, empty without one.
    pub priority_class: String,
    /// Reporting replica.
    pub replica_role: ReplicaRole,
}

/// Labels of `kueue_evicted_workloads_total`.
#[derive(Clone, Debug, PartialEq, Eq, Hash, EncodeLabelSet)]
pub struct EvictionLabels {
    /// ClusterQueue the workload was evicted from.
    pub cluster_queue: String,
    /// Eviction reason, e.g. `Preempted`.
    pub reason: String,
    /// Underlying cause, empty when there is none.
    pub underlying_cause: String,
    /// Name in the workload's `priorityClassRef`, empty without one.
    pub priority_class: String,
    /// Reporting replica.
    pub replica_role: ReplicaRole,
}

/// Labels of `kueue_preempted_workloads_total`.
#[derive(Clone, Debug, PartialEq, Eq, Hash, EncodeLabelSet)]
pub struct PreemptionLabels {
    /// ClusterQueue of the preemptor.
    pub preempting_cluster_queue: String,
    /// Preemption reason, e.g. `InClusterQueue`.
    pub reason: String,
    /// Reporting replica.
    pub replica_role: ReplicaRole,
}

/// Labels of `kueue_admission_attempts_total`.
#[derive(Clone, Debug, PartialEq, Eq, Hash, EncodeLabelSet)]
pub struct AttemptLabels {
    /// `success` or `inadmissible`.
    pub result: &'static str,
    /// Reporting replica.
    pub replica_role: ReplicaRole,
}

type WaitHistogramFamily = Family<PriorityLabels, Histogram, fn() -> Histogram>;

fn wait_histogram() -> Histogram {
    // 1 s .. ~2.3 h: waiting for quota takes from seconds to hours.
    Histogram::new(prometheus_client::metrics::histogram::exponential_buckets(
        1.0, 2.0, 14,
    ))
}

type AttemptHistogramFamily = Family<AttemptLabels, Histogram, fn() -> Histogram>;

fn attempt_histogram() -> Histogram {
    // Prometheus' default buckets, as Kueue's histogram has (5 ms .. 10 s).
    Histogram::new([
        0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
    ])
}

/// Kueue's scheduling metrics; cheap to clone (all handles share the registry's data).
#[derive(Clone, Debug)]
pub struct AdmitterMetrics {
    /// `kueue_pending_workloads{cluster_queue, status}`: workloads waiting, `active` or `inadmissible`.
    pub pending_workloads: Family<ClusterQueueStatusLabels, Gauge>,
    /// `kueue_quota_reserved_workloads_total{cluster_queue, priority_class}`.
    pub quota_reserved_workloads: Family<PriorityLabels, Counter>,
    /// `kueue_quota_reserved_wait_time_seconds{cluster_queue, priority_class}`.
    pub quota_reserved_wait_time: WaitHistogramFamily,
    /// `kueue_admitted_workloads_total{cluster_queue, priority_class}`.
    pub admitted_workloads: Family<PriorityLabels, Counter>,
    /// `kueue_admission_wait_time_seconds{cluster_queue, priority_class}`.
    pub admission_wait_time: WaitHistogramFamily,
    /// `kueue_admission_checks_wait_time_seconds{cluster_queue, priority_class}`: from the
    /// quota reservation to the admission of a workload with AdmissionChecks.
    pub admission_checks_wait_time: WaitHistogramFamily,
    /// `kueue_cluster_queue_status{cluster_queue, status}`: 1 on the queue's status.
    pub cluster_queue_status: Family<ClusterQueueStatusLabels, Gauge>,
    /// `kueue_evicted_workloads_total{cluster_queue, reason, underlying_cause, priority_class}`.
    pub evicted_workloads: Family<EvictionLabels, Counter>,
    /// `kueue_preempted_workloads_total{preempting_cluster_queue, reason}`.
    pub preempted_workloads: Family<PreemptionLabels, Counter>,
    /// `kueue_admission_attempts_total{result}`.
    pub admission_attempts: Family<AttemptLabels, Counter>,
    /// `kueue_admission_attempt_duration_seconds{result}`: how long a scheduling pass took,
    /// `success` when it admitted at least one workload.
    pub admission_attempt_duration: AttemptHistogramFamily,
    /// `kueue_reserving_active_workloads{cluster_queue}`.
    pub reserving_active_workloads: Family<ClusterQueueLabels, Gauge>,
    /// `kueue_admitted_active_workloads{cluster_queue}`.
    pub admitted_active_workloads: Family<ClusterQueueLabels, Gauge>,
    /// The `kueue_local_queue_*` metrics.
    pub local_queues: LocalQueueMetrics,
}

impl AdmitterMetrics {
    fn register(registry: &mut Registry, local_queue_families: bool) -> Self {
        let metrics = Self {
            pending_workloads: Family::default(),
            quota_reserved_workloads: Family::default(),
            quota_reserved_wait_time: Family::new_with_constructor(wait_histogram),
            admitted_workloads: Family::default(),
            admission_wait_time: Family::new_with_constructor(wait_histogram),
            admission_checks_wait_time: Family::new_with_constructor(wait_histogram),
            cluster_queue_status: Family::default(),
            evicted_workloads: Family::default(),
            preempted_workloads: Family::default(),
            admission_attempts: Family::default(),
            admission_attempt_duration: Family::new_with_constructor(attempt_histogram),
            reserving_active_workloads: Family::default(),
            admitted_active_workloads: Family::default(),
            local_queues: LocalQueueMetrics::default(),
        };
        if local_queue_families {
            metrics.local_queues.register(registry);
        }
        registry.register(
            "kueue_pending_workloads",
            "The number of pending workloads, per cluster_queue and status",
            metrics.pending_workloads.clone(),
        );
        registry.register(
            "kueue_quota_reserved_workloads",
            "The total number of quota reserved workloads per cluster_queue",
            metrics.quota_reserved_workloads.clone(),
        );
        registry.register(
            "kueue_quota_reserved_wait_time_seconds",
            "The time between a workload was created or requeued until it got quota reservation, per cluster_queue",
            metrics.quota_reserved_wait_time.clone(),
        );
        registry.register(
            "kueue_admitted_workloads",
            "The total number of admitted workloads per cluster_queue",
            metrics.admitted_workloads.clone(),
        );
        registry.register(
            "kueue_admission_wait_time_seconds",
            "The time between a workload was created or requeued until admission, per cluster_queue",
            metrics.admission_wait_time.clone(),
        );
        registry.register(
            "kueue_admission_checks_wait_time_seconds",
            "The time from when a workload got the quota reservation until admission, per cluster_queue",
            metrics.admission_checks_wait_time.clone(),
        );
        registry.register(
            "kueue_cluster_queue_status",
            "Reports the cluster_queue's status: pending, active or terminated",
            metrics.cluster_queue_status.clone(),
        );
        registry.register(
            "kueue_evicted_workloads",
            "The number of evicted workloads per cluster_queue and reason",
            metrics.evicted_workloads.clone(),
        );
        registry.register(
            "kueue_preempted_workloads",
            "The number of preempted workloads per preempting_cluster_queue and reason",
            metrics.preempted_workloads.clone(),
        );
        registry.register(
            "kueue_admission_attempts",
            "The total number of attempts to admit workloads, per result",
            metrics.admission_attempts.clone(),
        );
        registry.register(
            "kueue_admission_attempt_duration_seconds",
            "The latency of an admission attempt (a scheduling pass); result success means that at least one workload was admitted",
            metrics.admission_attempt_duration.clone(),
        );
        registry.register(
            "kueue_reserving_active_workloads",
            "The number of workloads holding quota, per cluster_queue",
            metrics.reserving_active_workloads.clone(),
        );
        registry.register(
            "kueue_admitted_active_workloads",
            "The number of admitted workloads that are active (unsuspended and not finished), per cluster_queue",
            metrics.admitted_active_workloads.clone(),
        );
        metrics
    }

    /// Records a quota reservation, after `wait_seconds` in the queue.
    pub fn reserved_quota(&self, labels: &PriorityLabels, wait_seconds: f64) {
        self.quota_reserved_workloads.get_or_create(labels).inc();
        self.quota_reserved_wait_time
            .get_or_create(labels)
            .observe(wait_seconds);
    }

    /// Records how long an admitted workload waited for its AdmissionChecks after its quota
    /// reservation.
    pub fn waited_for_checks(&self, labels: &PriorityLabels, seconds: f64) {
        self.admission_checks_wait_time
            .get_or_create(labels)
            .observe(seconds);
    }

    /// Records an admission (with the reservation, or once its AdmissionChecks are ready),
    /// `wait_seconds` after the workload was queued.
    pub fn admitted(&self, labels: &PriorityLabels, wait_seconds: f64) {
        self.admitted_workloads.get_or_create(labels).inc();
        self.admission_wait_time
            .get_or_create(labels)
            .observe(wait_seconds);
    }

    /// Forgets the per-queue gauges of a ClusterQueue that no longer exists.
    pub fn forget_cluster_queue(&self, cluster_queue: &str, replica_role: ReplicaRole) {
        for status in PENDING_STATUSES {
            self.pending_workloads.remove(&ClusterQueueStatusLabels {
                cluster_queue: cluster_queue.to_owned(),
                status,
                replica_role,
            });
        }
        for status in CLUSTER_QUEUE_STATUSES {
            self.cluster_queue_status.remove(&ClusterQueueStatusLabels {
                cluster_queue: cluster_queue.to_owned(),
                status,
                replica_role,
            });
        }
        let labels = ClusterQueueLabels {
            cluster_queue: cluster_queue.to_owned(),
            replica_role,
        };
        self.reserving_active_workloads.remove(&labels);
        self.admitted_active_workloads.remove(&labels);
    }

    /// Sets `kueue_cluster_queue_status` to 1 on `status` and 0 on the others.
    pub fn set_cluster_queue_status(
        &self,
        cluster_queue: &str,
        status: &'static str,
        replica_role: ReplicaRole,
    ) {
        for candidate in CLUSTER_QUEUE_STATUSES {
            self.cluster_queue_status
                .get_or_create(&ClusterQueueStatusLabels {
                    cluster_queue: cluster_queue.to_owned(),
                    status: candidate,
                    replica_role,
                })
                .set(i64::from(candidate == status));
        }
    }
}

/// Values of the `status` label of `kueue_cluster_queue_status`.
pub const CLUSTER_QUEUE_STATUSES: [&str; 3] = ["pending", "active", "terminated"];

/// Values of the `active` label of `kueue_local_queue_status`: the `Active` condition's status.
pub const LOCAL_QUEUE_ACTIVE_STATUSES: [&str; 3] = ["True", "False", "Unknown"];

/// Labels `name, namespace, replica_role`: one LocalQueue.
#[derive(Clone, Debug, PartialEq, Eq, Hash, EncodeLabelSet)]
struct LocalQueueLabels {
    name: String,
    namespace: String,
    replica_role: ReplicaRole,
}

/// Labels `name, namespace, status, replica_role` of `kueue_local_queue_pending_workloads`.
#[derive(Clone, Debug, PartialEq, Eq, Hash, EncodeLabelSet)]
struct LocalQueuePendingLabels {
    name: String,
    namespace: String,
    /// `active` or `inadmissible`.
    status: &'static str,
    replica_role: ReplicaRole,
}

/// Labels `name, namespace, active, replica_role` of `kueue_local_queue_status`.
#[derive(Clone, Debug, PartialEq, Eq, Hash, EncodeLabelSet)]
struct LocalQueueActiveLabels {
    name: String,
    namespace: String,
    /// One of [`LOCAL_QUEUE_ACTIVE_STATUSES`].
    active: &'static str,
    replica_role: ReplicaRole,
}

/// Labels `name, namespace, priority_class, replica_role`.
#[derive(Clone, Debug, PartialEq, Eq, Hash, EncodeLabelSet)]
struct LocalQueuePriorityLabels {
    name: String,
    namespace: String,
    priority_class: String,
    replica_role: ReplicaRole,
}

/// Labels of `kueue_local_queue_evicted_workloads_total`.
#[derive(Clone, Debug, PartialEq, Eq, Hash, EncodeLabelSet)]
struct LocalQueueEvictionLabels {
    name: String,
    namespace: String,
    reason: String,
    underlying_cause: String,
    priority_class: String,
    replica_role: ReplicaRole,
}

/// Labels `name, namespace, cluster_queue, replica_role` of
/// `kueue_local_queue_admission_fair_sharing_usage`.
#[derive(Clone, Debug, PartialEq, Eq, Hash, EncodeLabelSet)]
struct LocalQueueFairSharingLabels {
    name: String,
    namespace: String,
    cluster_queue: String,
    replica_role: ReplicaRole,
}

/// Labels `name, namespace, flavor, resource, replica_role`.
#[derive(Clone, Debug, PartialEq, Eq, Hash, EncodeLabelSet)]
struct LocalQueueResourceLabels {
    name: String,
    namespace: String,
    flavor: String,
    resource: String,
    replica_role: ReplicaRole,
}

type LocalQueueWaitHistogramFamily = Family<LocalQueuePriorityLabels, Histogram, fn() -> Histogram>;
type AmountGauge = Gauge<f64, AtomicU64>;

/// A LocalQueue's gauges after a scheduling cycle.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct LocalQueueGauges {
    /// Pending workloads waiting to be scheduled (`status="active"`).
    pub pending_active: i64,
    /// Pending workloads that cannot be admitted until something changes
    /// (`status="inadmissible"`).
    pub pending_inadmissible: i64,
    /// Workloads holding quota.
    pub reserving: i64,
    /// Of those, the admitted ones.
    pub admitted: i64,
    /// Whether its `Active` condition is True.
    pub active: bool,
    /// Per flavor and resource its ClusterQueue declares: the quota its workloads hold.
    pub resources: Vec<LocalQueueResource>,
    /// Under admission fair sharing: its ClusterQueue and its usage (weighted consumption
    /// divided by its weight).
    pub admission_fair_sharing: Option<(String, f64)>,
}

/// Quota one LocalQueue's workloads hold of one flavor and resource, in the resource's unit
/// (cpu in cores, memory in bytes), as Kueue reports it.
#[derive(Clone, Debug, PartialEq)]
pub struct LocalQueueResource {
    /// ResourceFlavor name.
    pub flavor: String,
    /// Resource name.
    pub resource: String,
    /// Reserved by all its quota holders (`kueue_local_queue_resource_reservation`).
    pub reserved: f64,
    /// Reserved by its admitted workloads (`kueue_local_queue_resource_usage`).
    pub in_use: f64,
}

/// A LocalQueue as the exposure set keys it: (namespace, name).
type LocalQueueKey = (String, String);
/// The label values an exposed LocalQueue's gauges were last set for, to remove them later.
#[derive(Clone, Debug, Default)]
struct ReportedLabels {
    /// (flavor, resource) pairs of its resource gauges.
    resources: BTreeSet<(String, String)>,
    /// The ClusterQueue of its admission fair sharing usage.
    fair_sharing_queue: Option<String>,
}
/// Exposed LocalQueues, each with the labels its gauges were last set for.
type ExposedLocalQueues = BTreeMap<LocalQueueKey, ReportedLabels>;

/// Kueue's `kueue_local_queue_*` metrics that Kuota has data for, exported only for the
/// LocalQueues [`LocalQueueMetrics::expose_only`] names (Kueue's `metrics.localQueueMetrics`
/// and its selector). Cheap to clone: clones share the series and the exposure set.
#[derive(Clone, Debug)]
pub struct LocalQueueMetrics {
    pending_workloads: Family<LocalQueuePendingLabels, Gauge>,
    quota_reserved_workloads: Family<LocalQueuePriorityLabels, Counter>,
    quota_reserved_wait_time: LocalQueueWaitHistogramFamily,
    admitted_workloads: Family<LocalQueuePriorityLabels, Counter>,
    admission_wait_time: LocalQueueWaitHistogramFamily,
    admission_checks_wait_time: LocalQueueWaitHistogramFamily,
    evicted_workloads: Family<LocalQueueEvictionLabels, Counter>,
    reserving_active_workloads: Family<LocalQueueLabels, Gauge>,
    admitted_active_workloads: Family<LocalQueueLabels, Gauge>,
    status: Family<LocalQueueActiveLabels, Gauge>,
    resource_reservation: Family<LocalQueueResourceLabels, AmountGauge>,
    resource_usage: Family<LocalQueueResourceLabels, AmountGauge>,
    admission_fair_sharing_usage: Family<LocalQueueFairSharingLabels, AmountGauge>,
    /// Kept so that the series of pairs and queues that go away can be removed.
    exposed: Arc<Mutex<ExposedLocalQueues>>,
}

impl Default for LocalQueueMetrics {
    fn default() -> Self {
        Self {
            pending_workloads: Family::default(),
            quota_reserved_workloads: Family::default(),
            quota_reserved_wait_time: Family::new_with_constructor(wait_histogram),
            admitted_workloads: Family::default(),
            admission_wait_time: Family::new_with_constructor(wait_histogram),
            admission_checks_wait_time: Family::new_with_constructor(wait_histogram),
            evicted_workloads: Family::default(),
            reserving_active_workloads: Family::default(),
            admitted_active_workloads: Family::default(),
            status: Family::default(),
            resource_reservation: Family::default(),
            resource_usage: Family::default(),
            admission_fair_sharing_usage: Family::default(),
            exposed: Arc::default(),
        }
    }
}

impl LocalQueueMetrics {
    fn register(&self, registry: &mut Registry) {
        registry.register(
            "kueue_local_queue_pending_workloads",
            "The number of pending workloads, per local_queue and status",
            self.pending_workloads.clone(),
        );
        registry.register(
            "kueue_local_queue_quota_reserved_workloads",
            "The total number of quota reserved workloads per local_queue",
            self.quota_reserved_workloads.clone(),
        );
        registry.register(
            "kueue_local_queue_quota_reserved_wait_time_seconds",
            "The time between a workload was created or requeued until it got quota reservation, per local_queue",
            self.quota_reserved_wait_time.clone(),
        );
        registry.register(
            "kueue_local_queue_admitted_workloads",
            "The total number of admitted workloads per local_queue",
            self.admitted_workloads.clone(),
        );
        registry.register(
            "kueue_local_queue_admission_wait_time_seconds",
            "The time between a workload was created or requeued until admission, per local_queue",
            self.admission_wait_time.clone(),
        );
        registry.register(
            "kueue_local_queue_admission_checks_wait_time_seconds",
            "The time from when a workload got the quota reservation until admission, per local_queue",
            self.admission_checks_wait_time.clone(),
        );
        registry.register(
            "kueue_local_queue_evicted_workloads",
            "The number of evicted workloads per local_queue and reason",
            self.evicted_workloads.clone(),
        );
        registry.register(
            "kueue_local_queue_reserving_active_workloads",
            "The number of workloads holding quota, per local_queue",
            self.reserving_active_workloads.clone(),
        );
        registry.register(
            "kueue_local_queue_admitted_active_workloads",
            "The number of admitted workloads that are active (unsuspended and not finished), per local_queue",
            self.admitted_active_workloads.clone(),
        );
        registry.register(
            "kueue_local_queue_status",
            "Reports the local_queue's Active condition status: True, False or Unknown",
            self.status.clone(),
        );
        registry.register(
            "kueue_local_queue_resource_reservation",
            "The quota reserved by the local_queue's workloads, per flavor and resource",
            self.resource_reservation.clone(),
        );
        registry.register(
            "kueue_local_queue_resource_usage",
            "The quota used by the local_queue's admitted workloads, per flavor and resource",
            self.resource_usage.clone(),
        );
        registry.register(
            "kueue_local_queue_admission_fair_sharing_usage",
            "The local_queue's admission fair sharing usage: its consumed resources weighted per resource, divided by its fair sharing weight",
            self.admission_fair_sharing_usage.clone(),
        );
    }

    fn lock_exposed(&self) -> std::sync::MutexGuard<'_, ExposedLocalQueues> {
        self.exposed.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn is_exposed(&self, namespace: &str, name: &str) -> bool {
        self.lock_exposed()
            .contains_key(&(namespace.to_owned(), name.to_owned()))
    }

    /// Makes `queues` ((namespace, name) pairs) the LocalQueues that export metrics, and
    /// removes the gauges of those that no longer do (deleted, or no longer selected). Their
    /// counters stay, as the ClusterQueue counters of a deleted ClusterQueue do.
    pub fn expose_only(&self, queues: BTreeSet<LocalQueueKey>, replica_role: ReplicaRole) {
        let mut exposed = self.lock_exposed();
        let gone: Vec<_> = exposed
            .keys()
            .filter(|queue| !queues.contains(*queue))
            .cloned()
            .collect();
        for queue in gone {
            let reported = exposed.remove(&queue).unwrap_or_default();
            self.remove_gauges(&queue, &reported, replica_role);
        }
        for queue in queues {
            exposed.entry(queue).or_default();
        }
    }

    fn remove_gauges(
        &self,
        (namespace, name): &LocalQueueKey,
        reported: &ReportedLabels,
        replica_role: ReplicaRole,
    ) {
        for status in PENDING_STATUSES {
            self.pending_workloads.remove(&LocalQueuePendingLabels {
                name: name.clone(),
                namespace: namespace.clone(),
                status,
                replica_role,
            });
        }
        for active in LOCAL_QUEUE_ACTIVE_STATUSES {
            self.status.remove(&LocalQueueActiveLabels {
                name: name.clone(),
                namespace: namespace.clone(),
                active,
                replica_role,
            });
        }
        let labels = LocalQueueLabels {
            name: name.clone(),
            namespace: namespace.clone(),
            replica_role,
        };
        self.reserving_active_workloads.remove(&labels);
        self.admitted_active_workloads.remove(&labels);
        for (flavor, resource) in &reported.resources {
            let labels = resource_labels(namespace, name, flavor, resource, replica_role);
            self.resource_reservation.remove(&labels);
            self.resource_usage.remove(&labels);
        }
        if let Some(cluster_queue) = &reported.fair_sharing_queue {
            self.admission_fair_sharing_usage
                .remove(&LocalQueueFairSharingLabels {
                    name: name.clone(),
                    namespace: namespace.clone(),
                    cluster_queue: cluster_queue.clone(),
                    replica_role,
                });
        }
    }

    /// Sets the gauges of an exposed LocalQueue; a LocalQueue that is not exposed is ignored.
    pub fn report(
        &self,
        namespace: &str,
        name: &str,
        replica_role: ReplicaRole,
        gauges: &LocalQueueGauges,
    ) {
        let mut exposed = self.lock_exposed();
        let Some(reported) = exposed.get_mut(&(namespace.to_owned(), name.to_owned())) else {
            return;
        };
        for (status, count) in [
            ("active", gauges.pending_active),
            ("inadmissible", gauges.pending_inadmissible),
        ] {
            self.pending_workloads
                .get_or_create(&LocalQueuePendingLabels {
                    name: name.to_owned(),
                    namespace: namespace.to_owned(),
                    status,
                    replica_role,
                })
                .set(count);
        }
        let labels = LocalQueueLabels {
            name: name.to_owned(),
            namespace: namespace.to_owned(),
            replica_role,
        };
        self.reserving_active_workloads
            .get_or_create(&labels)
            .set(gauges.reserving);
        self.admitted_active_workloads
            .get_or_create(&labels)
            .set(gauges.admitted);
        let current = if gauges.active { "True" } else { "False" };
        for active in LOCAL_QUEUE_ACTIVE_STATUSES {
            self.status
                .get_or_create(&LocalQueueActiveLabels {
                    name: name.to_owned(),
                    namespace: namespace.to_owned(),
                    active,
                    replica_role,
                })
                .set(i64::from(active == current));
        }
        let now: BTreeSet<(String, String)> = gauges
            .resources
            .iter()
            .map(|amount| (amount.flavor.clone(), amount.resource.clone()))
            .collect();
        for (flavor, resource) in reported.resources.difference(&now) {
            let labels = resource_labels(namespace, name, flavor, resource, replica_role);
            self.resource_reservation.remove(&labels);
            self.resource_usage.remove(&labels);
        }
        for amount in &gauges.resources {
            let labels = resource_labels(
                namespace,
                name,
                &amount.flavor,
                &amount.resource,
                replica_role,
            );
            self.resource_reservation
                .get_or_create(&labels)
                .set(amount.reserved);
            self.resource_usage
                .get_or_create(&labels)
                .set(amount.in_use);
        }
        reported.resources = now;
        let fair_sharing_labels = |cluster_queue: &str| LocalQueueFairSharingLabels {
            name: name.to_owned(),
            namespace: namespace.to_owned(),
            cluster_queue: cluster_queue.to_owned(),
            replica_role,
        };
        let fair_sharing_queue = gauges
            .admission_fair_sharing
            .as_ref()
            .map(|(cluster_queue, _)| cluster_queue);
        if let Some(previous) = &reported.fair_sharing_queue
            && Some(previous) != fair_sharing_queue
        {
            self.admission_fair_sharing_usage
                .remove(&fair_sharing_labels(previous));
        }
        if let Some((cluster_queue, usage)) = &gauges.admission_fair_sharing {
            self.admission_fair_sharing_usage
                .get_or_create(&fair_sharing_labels(cluster_queue))
                .set(*usage);
        }
        reported.fair_sharing_queue = fair_sharing_queue.cloned();
    }

    /// The labels of an exposed LocalQueue's counters, `None` for one not exposed.
    fn exposed_labels(
        &self,
        namespace: &str,
        name: &str,
        priority_class: &str,
        replica_role: ReplicaRole,
    ) -> Option<LocalQueuePriorityLabels> {
        self.is_exposed(namespace, name)
            .then(|| LocalQueuePriorityLabels {
                name: name.to_owned(),
                namespace: namespace.to_owned(),
                priority_class: priority_class.to_owned(),
                replica_role,
            })
    }

    /// Records a quota reservation, after `wait_seconds` in the queue, for an exposed
    /// LocalQueue.
    pub fn reserved_quota(
        &self,
        namespace: &str,
        name: &str,
        priority_class: &str,
        replica_role: ReplicaRole,
        wait_seconds: f64,
    ) {
        let Some(labels) = self.exposed_labels(namespace, name, priority_class, replica_role)
        else {
            return;
        };
        self.quota_reserved_workloads.get_or_create(&labels).inc();
        self.quota_reserved_wait_time
            .get_or_create(&labels)
            .observe(wait_seconds);
    }

    /// Records how long an admitted workload of an exposed LocalQueue waited for its
    /// AdmissionChecks after its quota reservation.
    pub fn waited_for_checks(
        &self,
        namespace: &str,
        name: &str,
        priority_class: &str,
        replica_role: ReplicaRole,
        seconds: f64,
    ) {
        let Some(labels) = self.exposed_labels(namespace, name, priority_class, replica_role)
        else {
            return;
        };
        self.admission_checks_wait_time
            .get_or_create(&labels)
            .observe(seconds);
    }

    /// Records an admission, `wait_seconds` after the workload was queued, for an exposed
    /// LocalQueue.
    pub fn admitted(
        &self,
        namespace: &str,
        name: &str,
        priority_class: &str,
        replica_role: ReplicaRole,
        wait_seconds: f64,
    ) {
        let Some(labels) = self.exposed_labels(namespace, name, priority_class, replica_role)
        else {
            return;
        };
        self.admitted_workloads.get_or_create(&labels).inc();
        self.admission_wait_time
            .get_or_create(&labels)
            .observe(wait_seconds);
    }

    /// Records an eviction for `reason` (underlying cause empty) from an exposed LocalQueue.
    pub fn evicted(
        &self,
        namespace: &str,
        name: &str,
        (reason, underlying_cause): (&str, &str),
        priority_class: &str,
        replica_role: ReplicaRole,
    ) {
        if !self.is_exposed(namespace, name) {
            return;
        }
        self.evicted_workloads
            .get_or_create(&LocalQueueEvictionLabels {
                name: name.to_owned(),
                namespace: namespace.to_owned(),
                reason: reason.to_owned(),
                underlying_cause: underlying_cause.to_owned(),
                priority_class: priority_class.to_owned(),
                replica_role,
            })
            .inc();
    }
}

fn resource_labels(
    namespace: &str,
    name: &str,
    flavor: &str,
    resource: &str,
    replica_role: ReplicaRole,
) -> LocalQueueResourceLabels {
    LocalQueueResourceLabels {
        name: name.to_owned(),
        namespace: namespace.to_owned(),
        flavor: flavor.to_owned(),
        resource: resource.to_owned(),
        replica_role,
    }
}

/// Values of the `status` label of the pending-workload gauges.
const PENDING_STATUSES: [&str; 2] = ["active", "inadmissible"];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn webhook_metrics_are_encoded_with_labels() {
        let metrics = MetricsRegistry::new();
        metrics
            .webhook
            .observe_request("/mutate-batch-v1-job", RequestResult::Patched, 0.002);
        metrics
            .webhook
            .certificate_loaded(jiff::Timestamp::from_second(1_900_000_000).unwrap());
        let text = metrics.encode().unwrap();
        assert!(
            text.contains(
                "kuota_webhook_requests_total{path=\"/mutate-batch-v1-job\",result=\"patched\"} 1\n"
            ),
            "{text}"
        );
        assert!(
            text.contains(
                "kuota_webhook_request_duration_seconds_bucket{le=\"0.002\",path=\"/mutate-batch-v1-job\"} 1\n"
            ),
            "{text}"
        );
        assert!(
            text.contains(
                "kuota_webhook_request_duration_seconds_bucket{le=\"0.001\",path=\"/mutate-batch-v1-job\"} 0\n"
            ),
            "{text}"
        );
        assert!(
            text.contains("kuota_webhook_certificate_loads_total{result=\"success\"} 1\n"),
            "{text}"
        );
        assert!(
            text.contains("kuota_webhook_certificate_not_after_seconds 1900000000\n"),
            "{text}"
        );
        assert!(text.ends_with("# EOF\n"));
    }

    #[test]
    fn build_info_carries_the_version_and_platform() {
        let text = MetricsRegistry::new().encode().unwrap();
        let line = format!(
            "kueue_build_info{{git_version=\"v{}\",git_commit=\"\",build_date=\"\",go_version=\"\",compiler=\"rustc\",platform=\"{}\"}} 1\n",
            env!("CARGO_PKG_VERSION"),
            go_platform(std::env::consts::OS, std::env::consts::ARCH)
        );
        assert!(text.contains(&line), "missing {line} in\n{text}");
        assert_eq!(go_platform("linux", "x86_64"), "linux/amd64");
        assert_eq!(go_platform("linux", "aarch64"), "linux/arm64");
        assert_eq!(go_platform("linux", "riscv64"), "linux/riscv64");
    }

    #[test]
    fn admitter_metrics_use_kueue_names_and_labels() {
        let metrics = MetricsRegistry::new();
        let admitter = &metrics.admitter;
        let labels = PriorityLabels {
            cluster_queue: "cq".to_owned(),
            priority_class: "high".to_owned(),
            replica_role: ReplicaRole::Leader,
        };
        admitter.reserved_quota(&labels, 3.0);
        admitter.admitted(&labels, 3.0);
        admitter.waited_for_checks(&labels, 40.0);
        admitter.set_cluster_queue_status("cq", "active", ReplicaRole::Leader);
        admitter
            .pending_workloads
            .get_or_create(&ClusterQueueStatusLabels {
                cluster_queue: "cq".to_owned(),
                status: "inadmissible",
                replica_role: ReplicaRole::Leader,
            })
            .set(2);
        admitter
            .evicted_workloads
            .get_or_create(&EvictionLabels {
                cluster_queue: "cq".to_owned(),
                reason: "Preempted".to_owned(),
                underlying_cause: String::new(),
                priority_class: String::new(),
                replica_role: ReplicaRole::Leader,
            })
            .inc();
        admitter
            .preempted_workloads
            .get_or_create(&PreemptionLabels {
                preempting_cluster_queue: "cq".to_owned(),
                reason: "InClusterQueue".to_owned(),
                replica_role: ReplicaRole::Leader,
            })
            .inc();
        let text = metrics.encode().unwrap();
        for line in [
            "kueue_admitted_workloads_total{cluster_queue=\"cq\",priority_class=\"high\",replica_role=\"leader\"} 1\n",
            "kueue_quota_reserved_workloads_total{cluster_queue=\"cq\",priority_class=\"high\",replica_role=\"leader\"} 1\n",
            "kueue_admission_wait_time_seconds_bucket{le=\"4.0\",cluster_queue=\"cq\",priority_class=\"high\",replica_role=\"leader\"} 1\n",
            "kueue_admission_wait_time_seconds_bucket{le=\"2.0\",cluster_queue=\"cq\",priority_class=\"high\",replica_role=\"leader\"} 0\n",
            "kueue_admission_checks_wait_time_seconds_bucket{le=\"32.0\",cluster_queue=\"cq\",priority_class=\"high\",replica_role=\"leader\"} 0\n",
            "kueue_admission_checks_wait_time_seconds_bucket{le=\"64.0\",cluster_queue=\"cq\",priority_class=\"high\",replica_role=\"leader\"} 1\n",
            "kueue_cluster_queue_status{cluster_queue=\"cq\",status=\"active\",replica_role=\"leader\"} 1\n",
            "kueue_cluster_queue_status{cluster_queue=\"cq\",status=\"pending\",replica_role=\"leader\"} 0\n",
            "kueue_pending_workloads{cluster_queue=\"cq\",status=\"inadmissible\",replica_role=\"leader\"} 2\n",
            "kueue_evicted_workloads_total{cluster_queue=\"cq\",reason=\"Preempted\",underlying_cause=\"\",priority_class=\"\",replica_role=\"leader\"} 1\n",
            "kueue_preempted_workloads_total{preempting_cluster_queue=\"cq\",reason=\"InClusterQueue\",replica_role=\"leader\"} 1\n",
        ] {
            assert!(text.contains(line), "missing {line} in\n{text}");
        }
        admitter.forget_cluster_queue("cq", ReplicaRole::Leader);
        let text = metrics.encode().unwrap();
        assert!(!text.contains("kueue_cluster_queue_status{"), "{text}");
        assert!(!text.contains("kueue_pending_workloads{"), "{text}");
    }

    fn lq_gauges() -> LocalQueueGauges {
        LocalQueueGauges {
            pending_active: 1,
            pending_inadmissible: 2,
            reserving: 3,
            admitted: 2,
            active: true,
            resources: vec![LocalQueueResource {
                flavor: "default".to_owned(),
                resource: "cpu".to_owned(),
                reserved: 1.5,
                in_use: 0.5,
            }],
            admission_fair_sharing: Some(("cq".to_owned(), 0.25)),
        }
    }

    #[test]
    fn local_queue_metrics_use_kueue_names_and_labels_for_exposed_queues_only() {
        let metrics = MetricsRegistry::new();
        let local_queues = &metrics.admitter.local_queues;
        let role = ReplicaRole::Leader;
        local_queues.expose_only(BTreeSet::from([("ns".to_owned(), "lq".to_owned())]), role);
        local_queues.report("ns", "lq", role, &lq_gauges());
        local_queues.report("ns", "hidden", role, &lq_gauges());
        for queue in ["lq", "hidden"] {
            local_queues.reserved_quota("ns", queue, "high", role, 3.0);
            local_queues.admitted("ns", queue, "high", role, 3.0);
        }
        local_queues.evicted("ns", "lq", ("Preempted", ""), "high", role);
        let text = metrics.encode().unwrap();
        for line in [
            "kueue_local_queue_pending_workloads{name=\"lq\",namespace=\"ns\",status=\"active\",replica_role=\"leader\"} 1\n",
            "kueue_local_queue_pending_workloads{name=\"lq\",namespace=\"ns\",status=\"inadmissible\",replica_role=\"leader\"} 2\n",
            "kueue_local_queue_reserving_active_workloads{name=\"lq\",namespace=\"ns\",replica_role=\"leader\"} 3\n",
            "kueue_local_queue_admitted_active_workloads{name=\"lq\",namespace=\"ns\",replica_role=\"leader\"} 2\n",
            "kueue_local_queue_status{name=\"lq\",namespace=\"ns\",active=\"True\",replica_role=\"leader\"} 1\n",
            "kueue_local_queue_status{name=\"lq\",namespace=\"ns\",active=\"False\",replica_role=\"leader\"} 0\n",
            "kueue_local_queue_status{name=\"lq\",namespace=\"ns\",active=\"Unknown\",replica_role=\"leader\"} 0\n",
            "kueue_local_queue_resource_reservation{name=\"lq\",namespace=\"ns\",flavor=\"default\",resource=\"cpu\",replica_role=\"leader\"} 1.5\n",
            "kueue_local_queue_resource_usage{name=\"lq\",namespace=\"ns\",flavor=\"default\",resource=\"cpu\",replica_role=\"leader\"} 0.5\n",
            "kueue_local_queue_admission_fair_sharing_usage{name=\"lq\",namespace=\"ns\",cluster_queue=\"cq\",replica_role=\"leader\"} 0.25\n",
            "kueue_local_queue_quota_reserved_workloads_total{name=\"lq\",namespace=\"ns\",priority_class=\"high\",replica_role=\"leader\"} 1\n",
            "kueue_local_queue_admitted_workloads_total{name=\"lq\",namespace=\"ns\",priority_class=\"high\",replica_role=\"leader\"} 1\n",
            "kueue_local_queue_admission_wait_time_seconds_bucket{le=\"4.0\",name=\"lq\",namespace=\"ns\",priority_class=\"high\",replica_role=\"leader\"} 1\n",
            "kueue_local_queue_quota_reserved_wait_time_seconds_count{name=\"lq\",namespace=\"ns\",priority_class=\"high\",replica_role=\"leader\"} 1\n",
            "kueue_local_queue_evicted_workloads_total{name=\"lq\",namespace=\"ns\",reason=\"Preempted\",underlying_cause=\"\",priority_class=\"high\",replica_role=\"leader\"} 1\n",
        ] {
            assert!(text.contains(line), "missing {line} in\n{text}");
        }
        assert!(!text.contains("name=\"hidden\""), "{text}");

        // A flavor the ClusterQueue no longer declares loses its series; a LocalQueue moved to
        // another ClusterQueue reports its usage under that one only.
        let mut fewer = lq_gauges();
        fewer.resources.clear();
        fewer.admission_fair_sharing = Some(("other".to_owned(), 0.5));
        local_queues.report("ns", "lq", role, &fewer);
        let text = metrics.encode().unwrap();
        assert!(
            !text.contains("kueue_local_queue_resource_usage{"),
            "{text}"
        );
        assert!(
            !text.contains("cluster_queue=\"cq\"")
                && text.contains("kueue_local_queue_admission_fair_sharing_usage{name=\"lq\",namespace=\"ns\",cluster_queue=\"other\",replica_role=\"leader\"} 0.5\n"),
            "{text}"
        );

        // A queue no longer exposed loses its gauges; its counters stay.
        local_queues.expose_only(BTreeSet::new(), role);
        local_queues.reserved_quota("ns", "lq", "high", role, 3.0);
        local_queues.admitted("ns", "lq", "high", role, 3.0);
        let text = metrics.encode().unwrap();
        for family in [
            "kueue_local_queue_pending_workloads{",
            "kueue_local_queue_status{",
            "kueue_local_queue_reserving_active_workloads{",
            "kueue_local_queue_admitted_active_workloads{",
            "kueue_local_queue_admission_fair_sharing_usage{",
        ] {
            assert!(!text.contains(family), "{family} in\n{text}");
        }
        assert!(
            text.contains("kueue_local_queue_admitted_workloads_total{name=\"lq\",namespace=\"ns\",priority_class=\"high\",replica_role=\"leader\"} 1\n"),
            "{text}"
        );
    }

    #[test]
    fn local_queue_families_follow_the_feature_gate() {
        let reported = |registered| {
            let metrics = MetricsRegistry::with_local_queue_metrics(registered);
            let local_queues = &metrics.admitter.local_queues;
            let queue = ("ns".to_owned(), "lq".to_owned());
            local_queues.expose_only(BTreeSet::from([queue]), ReplicaRole::Leader);
            local_queues.report("ns", "lq", ReplicaRole::Leader, &lq_gauges());
            metrics.encode().unwrap()
        };
        let without = reported(false);
        assert!(!without.contains("kueue_local_queue_"), "{without}");
        let with = reported(true);
        assert!(
            with.contains("# TYPE kueue_local_queue_status gauge\n"),
            "{with}"
        );
    }

    #[test]
    fn dropped_events_are_exported_per_reporting_controller_from_zero() {
        let metrics = MetricsRegistry::new();
        let admission = metrics.events.dropped("kueue-admission");
        metrics.events.dropped("kueue-job-controller");
        admission.inc();
        admission.inc();
        let text = metrics.encode().unwrap();
        for line in [
            "# TYPE kuota_events_dropped counter\n",
            "kuota_events_dropped_total{reporting_controller=\"kueue-admission\"} 2\n",
            "kuota_events_dropped_total{reporting_controller=\"kueue-job-controller\"} 0\n",
        ] {
            assert!(text.contains(line), "{line} in\n{text}");
        }
    }
}
