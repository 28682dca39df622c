//! Kuota's webhook against Kueue's: the same Job AdmissionReviews to `/mutate-batch-v1-job` and
//! `/validate-batch-v1-job` of the real `kuota serve` and of Kueue's real manager, at 1, 16 and
//! 64 clients for a fixed time each, with each server's CPU and peak RSS; and `kuota serve`'s
//! start-up time. The harness is `webhook_latency/harness.rs`.
//!
//! Run: `cargo bench --bench webhook_latency`. Flags after `--`: `--seconds N` (measured time
//! per row, default 10), `--rounds N` (each row measured N times, Kuota's rows and then Kueue's
//! in each round, default 3), `--out FILE` (the Markdown file whose webhook section is replaced,
//! default `BENCHMARKS.md`; `--out -` prints only), `--only kuota` or `--only kueue` (one server's
//! rows, printed only: with `--out -`), `--startup-runs N` (spawns of `kuota serve` per start-up
//! mode, default 5; 0 skips them). Kueue's side needs root: its manager reads
//! its metrics certificate from /etc, which it is given in a mount namespace of its own.

#[path = "webhook_latency/harness.rs"]
mod harness;

use std::path::Path;
use std::time::Duration;

use harness::{BenchResult, Options, Server};

const BEGIN: &str = "<!-- webhook-latency -->";
const END: &str = "<!-- /webhook-latency -->";

fn main() -> BenchResult<()> {
    kuota::tls::install_crypto_provider();
    let mut seconds = 10;
    let mut rounds = 3;
    let mut out = "BENCHMARKS.md".to_owned();
    let mut servers = vec![Server::Kuota, Server::Kueue];
    let mut startup_runs = 5;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let mut value = || args.next().ok_or_else(|| format!("{arg} needs a value"));
        match arg.as_str() {
            // cargo bench passes this to every bench binary.
            "--bench" => {}
            "--seconds" => seconds = value()?.parse()?,
            "--rounds" => rounds = value()?.parse()?,
            "--out" => out = value()?,
            "--startup-runs" => startup_runs = value()?.parse()?,
            "--only" => {
                servers = match value()?.as_str() {
                    "kuota" => vec![Server::Kuota],
                    "kueue" => vec![Server::Kueue],
                    other => return Err(format!("--only takes kuota or kueue, not {other}").into()),
                }
            }
            other => return Err(format!("unknown flag {other}").into()),
        }
    }
    if rounds == 0 {
        return Err("--rounds must be at least 1".into());
    }
    if servers.len() < 2 && out != "-" {
        return Err(
            "--only measures one side, which BENCHMARKS.md does not take: add --out -".into(),
        );
    }
    let options = Options {
        row: Duration::from_secs(seconds),
        warm_up: Duration::from_secs(1),
        startup_runs,
        rounds,
        servers,
    };
    let report = tokio::runtime::Runtime::new()?.block_on(harness::run(
        Path::new(env!("CARGO_BIN_EXE_kuota")),
        &options,
    ))?;
    let section = format!(
        "{BEGIN}\n`cargo bench --bench webhook_latency`: {}{END}\n",
        report.markdown()
    );
    println!("{section}");
    if out != "-" {
        let text = std::fs::read_to_string(&out)?;
        let (Some(start), Some(stop)) = (text.find(BEGIN), text.find(END)) else {
            return Err(format!("{out} has no {BEGIN} … {END} section").into());
        };
        let rest = text[stop + END.len()..].trim_start_matches('\n');
        std::fs::write(&out, format!("{}{section}{rest}", &text[..start]))?;
        eprintln!("wrote the webhook section of {out}");
    }
    match report.failures() {
        0 => Ok(()),
        failed => Err(format!("{failed} requests failed").into()),
    }
}
