#![forbid(unsafe_code)]

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
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
