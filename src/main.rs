#![forbid(unsafe_code)]

use std::process::ExitCode;

use clap::Parser;

/// jemalloc instead of the C library's allocator: a scheduling pass allocates and frees many
/// small objects, which glibc's malloc spent about half the pass's time on (and musl's, in the
/// static image, is slower still). Against mimalloc, which did as well on CPU, jemalloc peaks
/// about a sixth lower on Kueue's scheduler benchmark with one cohort, and alike on the full
/// baseline, whose peak is live data (BENCHMARKS.md).
#[cfg(target_os = "linux")]
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

fn main() -> ExitCode {
    // With transparent huge pages set to `always` (common on nodes), the kernel backs an
    // allocator's large aligned regions with 2 MiB pages that are mostly empty: about a third
    // of the admitter's RSS in the scheduler benchmark with mimalloc. Set before any thread starts; failing only
    // costs memory.
    #[cfg(target_os = "linux")]
    let _ = rustix::thread::disable_transparent_huge_pages(true);
    kuota::tls::install_crypto_provider();
    let cli = kuota::cli::Cli::parse();
    if let Err(err) = kuota::telemetry::init(cli.log_format, &cli.log_filter) {
        eprintln!("error: {err}");
        return ExitCode::FAILURE;
    }
    match kuota::run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("error: {err}");
            ExitCode::FAILURE
        }
    }
}
