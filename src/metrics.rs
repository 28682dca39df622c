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
use std::fmt::Write;

/// Content type of [`Metrics::encode`]'s output (OpenMetrics text).
pub const OPENMETRICS_CONTENT_TYPE: &str =
    "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// The registry with every metric Kuota exports.
#[derive(Debug)]
pub struct Metrics {
    registry: Registry,
    /// Metrics of the webhook HTTPS server.
    pub webhook: WebhookMetrics,
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}

impl Metrics {
    /// Creates the registry and registers all metrics.
    pub fn new() -> Self {
        let mut registry = Registry::default();
        let webhook = WebhookMetrics::register(&mut registry);
        Self { registry, webhook }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn webhook_metrics_are_encoded_with_labels() {
        let metrics = Metrics::new();
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
}
