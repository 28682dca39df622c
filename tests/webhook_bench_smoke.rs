//! The webhook bench keeps working: the harness of `cargo bench --bench webhook_latency` runs
//! end to end for a second per row, in two rounds of `kuota serve` and Kueue's manager, and every
//! review is answered as expected. How fast is the bench's business, not this test's.

#[path = "../benches/webhook_latency/harness.rs"]
mod harness;

use std::path::Path;
use std::time::Duration;

use harness::{CONCURRENCY, Options, PATHS, Server};

#[test]
fn the_webhook_bench_measures_kuota_and_kueue_at_every_concurrency_in_every_round() {
    kuota::tls::install_crypto_provider();
    let options = Options {
        row: Duration::from_secs(1),
        warm_up: Duration::from_millis(200),
        startup_runs: 1,
        rounds: 2,
        servers: vec![Server::Kuota, Server::Kueue],
    };
    let report = tokio::runtime::Runtime::new()
        .unwrap()
        .block_on(harness::run(
            Path::new(env!("CARGO_BIN_EXE_kuota")),
            &options,
        ))
        .unwrap();
    let markdown = report.markdown();
    println!("{markdown}");
    assert_eq!(report.failures(), 0, "every review is answered as expected");
    for server in [Server::Kuota, Server::Kueue] {
        for path in PATHS {
            for clients in CONCURRENCY {
                let runs = report.runs(server, path, clients);
                assert_eq!(
                    runs.len(),
                    2,
                    "{server:?} {path} at {clients}: a run per round"
                );
                for run in runs {
                    assert!(run.requests() > 0, "{server:?} {path} at {clients}");
                }
            }
        }
    }
    assert!(
        markdown.contains("Round by round: "),
        "the verdict lists each round:\n{markdown}"
    );
}
