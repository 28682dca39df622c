#![forbid(unsafe_code)]

use std::process::ExitCode;

use clap::Parser;

/// mimalloc instead of the C library's allocator: a scheduling pass allocates and frees many
/// small objects, which glibc's malloc spent about half the pass's time on (and musl's, in the
/// static image, is slower still). Its v2 line rather than v3, the crate's default: v3 keeps
/// freed pages for 1 s before returning them where v2 keeps them 10 ms, and the admitter frees
/// in bursts (a pass's working copies, a list's decoded pages); on the scheduler benchmark's
/// baseline v2 peaked about 5 MiB lower for the same CPU.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    // With transparent huge pages set to `always` (common on nodes), the kernel backs mimalloc's
    // large aligned regions with 2 MiB pages that are mostly empty: about a third of the
    // admitter's RSS in the scheduler benchmark. Set before any thread starts; failing only
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
