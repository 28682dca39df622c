//! Logging: a `tracing` subscriber writing text or JSON lines to stderr (stdout carries command
//! output such as `kuota crds`).

use std::io::IsTerminal;

use tracing_subscriber::{EnvFilter, fmt};

/// Log line format.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum LogFormat {
    /// Human-readable lines.
    #[default]
    Text,
    /// One JSON object per line, for log collectors.
    Json,
}

/// Why logging could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum TelemetryError {
    /// The filter is not `tracing_subscriber` `EnvFilter` syntax (e.g. `info,kuota=debug`).
    #[error("invalid log filter {filter:?}: {source}")]
    InvalidFilter {
        /// The filter as given.
        filter: String,
        /// The parse error.
        source: tracing_subscriber::filter::ParseError,
    },
    /// Another global subscriber was installed by someone else first.
    #[error("cannot install the log subscriber: {0}")]
    Install(String),
}

/// Installs the global subscriber with `filter` (`EnvFilter` syntax, e.g. `info` or
/// `warn,kuota=debug`). Calling it again once a subscriber is installed only checks the filter
/// and keeps the first subscriber, so tests may call it freely.
pub fn init(format: LogFormat, filter: &str) -> Result<(), TelemetryError> {
    let env_filter =
        EnvFilter::try_new(filter).map_err(|source| TelemetryError::InvalidFilter {
            filter: filter.to_owned(),
            source,
        })?;
    if tracing::dispatcher::has_been_set() {
        return Ok(());
    }
    // Colour codes only for a person at a terminal, never in a log file or a collector's pipe.
    let builder = fmt()
        .with_env_filter(env_filter)
        .with_ansi(std::io::stderr().is_terminal())
        .with_writer(std::io::stderr);
    let installed = match format {
        LogFormat::Text => builder.try_init(),
        LogFormat::Json => builder.json().flatten_event(true).try_init(),
    };
    match installed {
        Ok(()) => Ok(()),
        // Lost a race with a concurrent first call: a subscriber is in place, which is the goal.
        Err(_) if tracing::dispatcher::has_been_set() => Ok(()),
        Err(error) => Err(TelemetryError::Install(error.to_string())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn init_is_repeatable_and_checks_the_filter() {
        init(LogFormat::Text, "info").unwrap();
        init(LogFormat::Json, "warn,kuota=debug").unwrap();
        let error = init(LogFormat::Text, "info,kuota=loud").unwrap_err();
        assert!(
            error
                .to_string()
                .starts_with("invalid log filter \"info,kuota=loud\": "),
            "{error}"
        );
    }
}
