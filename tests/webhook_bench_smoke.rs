//! The webhook bench keeps working: the harness of `cargo bench --bench webhook_latency` runs
//! end to end for a second per row, against `kuota serve` and Kueue's manager, and every review
//! is answered as expected. How fast is the bench's business, not this test's.

#[path = "../benches/webhook_latency/harness.rs"]
mod harness;

use std::path::Path;
use std::time::Duration;

use harness::{CONCURRENCY, Options, Server};

#[test]
fn the_webhook_bench_measures_kuota_and_kueue_at_every_concurrency() {
    kuota::tls::install_crypto_provider();
    let options = Options {
        row: Duration::from_secs(1),
        warm_up: Duration::from_millis(200),
        startup_runs: 1,
    };
    let report = tokio::runtime::Runtime::new()
        .unwrap()
        .block_on(harness::run(
            Path::new(env!("CARGO_BIN_EXE_kuota")),
            &options,
        ))
        .unwrap();
    println!("{}", report.markdown());
    assert_eq!(report.failures(), 0, "every review is answered as expected");
    for server in [Server::Kuota, Server::Kueue] {
        for clients in CONCURRENCY {
            let rows: Vec<_> = report
                .rows
                .iter()
                .filter(|row| row.server == server && row.clients == clients)
                .collect();
            assert_eq!(rows.len(), 2, "{server:?} at {clients}: a row per path");
            for row in rows {
                assert!(row.requests() > 0, "{server:?} {} at {clients}", row.path);
            }
        }
    }
}
