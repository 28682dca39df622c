//! The admission handler alone, in one thread with no server around it: decoding a Job's
//! AdmissionReview, answering it on the mutating and the validating path, and encoding the
//! answer, with the queues the webhook bench creates held in memory. What the server adds
//! (HTTP/2, TLS, the runtime) is `webhook_latency`'s business; this one says what the handler
//! costs per review without the noise of a load generator sharing the cores.
//!
//! Run: `cargo bench --bench admission_handler`. Prints, per path, microseconds per review over
//! five runs of 100,000 reviews each (min / median / max).

use std::sync::Arc;
use std::time::Instant;

use kuota::admission::handler::KuotaAdmission;
use kuota::config::{Configuration, LoadOptions};
use kuota::testing::lookup::InMemoryLookup;
use kuota::webhook::review::{bind_to_request, parse_admission_review};
use kuota::webhook::{AdmissionHandler, AdmissionRoute, WebhookType};
use serde_json::Value;

#[path = "webhook_latency/objects.rs"]
mod objects;

/// As the server runs: see the allocator's comment in src/main.rs.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

const REVIEWS: u32 = 100_000;
const RUNS: usize = 5;

type BenchResult<T> = Result<T, Box<dyn std::error::Error>>;

/// The webhook bench's queues, each with a `resourceVersion` as the caches hold them.
fn cluster() -> BenchResult<InMemoryLookup> {
    let (mut flavor, mut cluster_queue, mut local_queue) = objects::queues()?;
    flavor.metadata.resource_version = Some("1".to_owned());
    cluster_queue.metadata.resource_version = Some("2".to_owned());
    local_queue.metadata.resource_version = Some("3".to_owned());
    Ok(InMemoryLookup::new()
        .with_namespace(objects::NAMESPACE, &[])
        .with_resource_flavor(flavor)
        .with_cluster_queue(cluster_queue)
        .with_local_queue(local_queue))
}

/// Decodes `body`, answers it on `route` and encodes the answer, as the router does.
async fn answer(handler: &KuotaAdmission, route: &AdmissionRoute, body: &str) -> Vec<u8> {
    let request = parse_admission_review(body.as_bytes()).expect("the bench's review decodes");
    let response = bind_to_request(handler.admit(route, &request).await, &request);
    serde_json::to_vec(&response.into_review()).expect("an answer encodes")
}

fn main() -> BenchResult<()> {
    let config = Configuration::from_defaults(&LoadOptions::default())?;
    let handler = KuotaAdmission::new(Arc::new(config), Arc::new(cluster()?));
    let body = objects::review_template().replace(objects::UID, "3f0e1b5c");
    let runtime = tokio::runtime::Builder::new_current_thread().build()?;
    for webhook_type in [WebhookType::Mutating, WebhookType::Validating] {
        let route = handler
            .routes()
            .into_iter()
            .find(|route| route.kind == "Job" && route.webhook_type == webhook_type)
            .ok_or("no Job route")?;
        // The answer measured is the one expected: allowed, and patched only when mutating.
        let answer_once: Value =
            serde_json::from_slice(&runtime.block_on(answer(&handler, &route, &body)))?;
        let response = &answer_once["response"];
        if response["allowed"] != true
            || response.get("patch").is_some() != (webhook_type == WebhookType::Mutating)
        {
            return Err(format!("unexpected answer on {}: {response}", route.path).into());
        }
        let mut per_review: Vec<f64> = (0..RUNS)
            .map(|_| {
                let start = Instant::now();
                runtime.block_on(async {
                    for _ in 0..REVIEWS {
                        std::hint::black_box(answer(&handler, &route, &body).await);
                    }
                });
                start.elapsed().as_secs_f64() * 1e6 / f64::from(REVIEWS)
            })
            .collect();
        per_review.sort_by(f64::total_cmp);
        println!(
            "{}: {:.2} / {:.2} / {:.2} µs per review (min / median / max of {RUNS} runs of {REVIEWS})",
            route.path,
            per_review[0],
            per_review[RUNS / 2],
            per_review[RUNS - 1],
        );
    }
    Ok(())
}
