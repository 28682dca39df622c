//! Command line: global flags and the `serve`, `explain`, `crds`, `certs` and `version` subcommands. Every
//! flag can also come from a `KUOTA_*` environment variable (the flag wins).

use std::path::PathBuf;

use axum::http::Uri;
use clap::{Args, Parser, Subcommand};

use crate::{
    config::{ConfigError, Configuration, LoadOptions, Overrides},
    telemetry::LogFormat,
};

/// Kubernetes-native job queueing and quota admission, a drop-in for Kueue's API.
#[derive(Clone, Debug, Parser)]
#[command(name = "kuota", version, about)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,

    /// Kubeconfig file; default: in-cluster service account, then `KUBECONFIG`, then
    /// `~/.kube/config`.
    #[arg(long, env = "KUOTA_KUBECONFIG", global = true, value_name = "FILE")]
    pub kubeconfig: Option<PathBuf>,

    /// Configuration file (`config.kueue.x-k8s.io` v1beta1 or v1beta2 `Configuration`);
    /// default: Kueue's defaults.
    #[arg(long, env = "KUOTA_CONFIG", global = true, value_name = "FILE")]
    pub config: Option<PathBuf>,

    /// Log line format.
    #[arg(long, env = "KUOTA_LOG_FORMAT", global = true, value_enum, default_value_t = LogFormat::Text)]
    pub log_format: LogFormat,

    /// Log filter in `tracing` `EnvFilter` syntax, e.g. `info` or `warn,kuota=debug`.
    #[arg(
        long = "log-level",
        visible_alias = "log-filter",
        env = "KUOTA_LOG",
        global = true,
        default_value = "info",
        value_name = "FILTER"
    )]
    pub log_filter: String,

    /// Feature gates as `Name=true,Other=false`; an error if the configuration file also has
    /// `featureGates`.
    #[arg(long, env = "KUOTA_FEATURE_GATES", global = true, value_name = "GATES")]
    pub feature_gates: Option<String>,
}

/// Subcommands.
#[derive(Clone, Debug, Subcommand)]
pub enum Command {
    /// Run the webhook server and the admitter.
    Serve(ServeArgs),
    /// Print (or write) the CustomResourceDefinitions.
    Crds(CrdsArgs),
    /// Write a CA and a webhook serving certificate for development.
    Certs(CertsArgs),
    /// Remove Kuota's `kueue.x-k8s.io/resource-in-use` finalizer from every ClusterQueue,
    /// ResourceFlavor and Workload, so that uninstalling can delete their CRDs once the
    /// controller, which would remove it, is gone (the chart's pre-delete hook runs it).
    ReleaseFinalizers,
    /// Say in one line why a job is not running and what it waits for, e.g.
    /// `kuota explain job/train -n team-a` (also `kubectl kuota explain ...` with the binary
    /// installed as `kubectl-kuota`).
    Explain(ExplainArgs),
    /// Print the version.
    Version,
}

/// Arguments of `kuota explain`.
#[derive(Clone, Debug, Args)]
pub struct ExplainArgs {
    /// `KIND/NAME`: a job of any framework Kuota integrates (`job/train`, `rayjob/r`,
    /// `jobs.batch/train`) or a Workload (`workload/NAME`).
    #[arg(value_name = "KIND/NAME")]
    pub target: String,

    /// The namespace; the kubeconfig context's by default.
    #[arg(short = 'n', long, value_name = "NAMESPACE")]
    pub namespace: Option<String>,
}

/// Flags of `kuota serve`; each overrides the configuration file.
#[derive(Clone, Debug, Default, PartialEq, Eq, Args)]
pub struct ServeArgs {
    /// Out-of-cluster mode: the HTTPS base URL at which the API server reaches this process's
    /// webhook server (webhook configurations then use `url` instead of the Service).
    #[arg(long, env = "KUOTA_WEBHOOK_URL", value_name = "URL", value_parser = parse_webhook_url)]
    pub webhook_url: Option<Uri>,

    /// With `--webhook-url`: register nothing with the API server, neither the admission
    /// webhooks nor the CRD conversion, so that no webhook of ours is in its path. The admitter
    /// then runs alone, as Kueue's minimalkueue does (served versions other than the stored
    /// v1beta2 are then relabelled, not converted); the scheduler benchmark compares the two
    /// this way.
    #[arg(long, env = "KUOTA_ADMITTER_ONLY", requires = "webhook_url")]
    pub admitter_only: bool,

    /// Webhook server port (`webhook.port`).
    #[arg(long, env = "KUOTA_WEBHOOK_PORT", value_name = "PORT")]
    pub webhook_port: Option<u16>,

    /// Health probe listen address, `[host]:port` or `0` to disable
    /// (`health.healthProbeBindAddress`).
    #[arg(long, env = "KUOTA_HEALTH_PROBE_ADDR", value_name = "ADDR")]
    pub health_probe_addr: Option<String>,

    /// Metrics listen address, `[host]:port` or `0` to disable (`metrics.bindAddress`).
    #[arg(long, env = "KUOTA_METRICS_ADDR", value_name = "ADDR")]
    pub metrics_addr: Option<String>,

    /// Visibility API listen address, `[host]:port` (`visibilityServer.bindAddress` and
    /// `bindPort`).
    #[arg(long, env = "KUOTA_VISIBILITY_ADDR", value_name = "ADDR")]
    pub visibility_addr: Option<String>,

    /// Namespace Kuota runs in (`namespace`).
    #[arg(long, env = "KUOTA_NAMESPACE", value_name = "NAMESPACE")]
    pub namespace: Option<String>,

    /// Admit without leader election (`leaderElection.leaderElect: false`); only for a single
    /// replica.
    #[arg(long, env = "KUOTA_NO_LEADER_ELECT")]
    pub no_leader_elect: bool,
}

/// Flags of `kuota crds`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Args)]
pub struct CrdsArgs {
    /// Directory to write one file per CRD into; default: print all to stdout.
    #[arg(long, env = "KUOTA_CRDS_OUT", value_name = "DIR")]
    pub out: Option<PathBuf>,
}

/// Flags of `kuota certs`.
#[derive(Clone, Debug, PartialEq, Eq, Args)]
pub struct CertsArgs {
    /// Directory to write the CA and serving certificate into.
    #[arg(long, env = "KUOTA_CERTS_OUT", value_name = "DIR")]
    pub out: PathBuf,

    /// DNS name or IP address the serving certificate is valid for (repeatable).
    #[arg(
        long = "host",
        env = "KUOTA_CERTS_HOSTS",
        value_name = "HOST",
        value_delimiter = ',',
        default_values_t = [String::from("localhost"), String::from("127.0.0.1")]
    )]
    pub hosts: Vec<String>,
}

/// The API server calls webhooks over HTTPS only, so anything else is refused here.
fn parse_webhook_url(text: &str) -> Result<Uri, String> {
    let uri: Uri = text
        .parse()
        .map_err(|error| format!("not a URL: {error}"))?;
    if uri.scheme_str() != Some("https") {
        return Err("must be an https:// URL".to_owned());
    }
    if uri.host().is_none_or(str::is_empty) {
        return Err("must name a host".to_owned());
    }
    if uri.query().is_some() {
        return Err("must not have a query".to_owned());
    }
    Ok(uri)
}

impl ServeArgs {
    /// The flags that override configuration file values.
    pub fn overrides(&self) -> Overrides {
        Overrides {
            namespace: self.namespace.clone(),
            webhook_port: self.webhook_port,
            health_probe_bind_address: self.health_probe_addr.clone(),
            metrics_bind_address: self.metrics_addr.clone(),
            visibility_bind_address: self.visibility_addr.clone(),
            leader_elect: self.no_leader_elect.then_some(false),
        }
    }
}

impl Cli {
    /// Options for loading the configuration: environment fallbacks, `--feature-gates`, and the
    /// `serve` flags as overrides.
    pub fn load_options(&self) -> LoadOptions {
        LoadOptions {
            feature_gates_flag: self.feature_gates.clone(),
            overrides: match &self.command {
                Command::Serve(serve) => serve.overrides(),
                Command::Crds(_)
                | Command::Certs(_)
                | Command::Explain(_)
                | Command::ReleaseFinalizers
                | Command::Version => Overrides::default(),
            },
            ..LoadOptions::from_environment()
        }
    }

    /// Loads `--config` (or Kueue's defaults) with the command line's overrides applied.
    pub fn load_config(&self) -> Result<Configuration, ConfigError> {
        Configuration::load_with(self.config.as_deref(), &self.load_options())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Cli {
        Cli::try_parse_from(args).unwrap()
    }

    fn parse_error(args: &[&str]) -> String {
        Cli::try_parse_from(args).unwrap_err().to_string()
    }

    #[test]
    fn cli_definition_is_consistent() {
        use clap::CommandFactory;
        Cli::command().debug_assert();
    }

    #[test]
    fn global_flags_have_defaults() {
        let cli = parse(&["kuota", "version"]);
        assert!(matches!(cli.command, Command::Version));
        assert_eq!(cli.log_format, LogFormat::Text);
        assert_eq!(cli.log_filter, "info");
        assert_eq!(cli.config, None);
        assert_eq!(cli.kubeconfig, None);
        assert_eq!(cli.feature_gates, None);
    }

    #[test]
    fn global_flags_go_before_or_after_the_subcommand() {
        let cli = parse(&[
            "kuota",
            "--config",
            "/etc/kuota/config.yaml",
            "serve",
            "--log-format",
            "json",
            "--log-filter",
            "debug",
            "--feature-gates",
            "TopologyAwareScheduling=true",
            "--kubeconfig",
            "/root/.kube/config",
        ]);
        assert_eq!(cli.config, Some(PathBuf::from("/etc/kuota/config.yaml")));
        assert_eq!(cli.log_format, LogFormat::Json);
        assert_eq!(cli.log_filter, "debug");
        assert_eq!(
            cli.feature_gates.as_deref(),
            Some("TopologyAwareScheduling=true")
        );
        assert_eq!(cli.kubeconfig, Some(PathBuf::from("/root/.kube/config")));
    }

    #[test]
    fn serve_flags_become_overrides() {
        let cli = parse(&[
            "kuota",
            "serve",
            "--webhook-url",
            "https://192.168.1.10:9443",
            "--webhook-port",
            "10443",
            "--health-probe-addr",
            "127.0.0.1:18081",
            "--metrics-addr",
            "0",
            "--visibility-addr",
            "0.0.0.0:18082",
            "--namespace",
            "kuota-dev",
            "--no-leader-elect",
        ]);
        let Command::Serve(serve) = &cli.command else {
            panic!("expected serve, got {:?}", cli.command);
        };
        assert_eq!(
            serve.webhook_url,
            Some(Uri::from_static("https://192.168.1.10:9443"))
        );
        assert_eq!(
            serve.overrides(),
            Overrides {
                namespace: Some("kuota-dev".into()),
                webhook_port: Some(10443),
                health_probe_bind_address: Some("127.0.0.1:18081".into()),
                metrics_bind_address: Some("0".into()),
                visibility_bind_address: Some("0.0.0.0:18082".into()),
                leader_elect: Some(false),
            }
        );
        assert_eq!(cli.load_options().overrides, serve.overrides());
        assert_eq!(ServeArgs::default().overrides(), Overrides::default());
    }

    #[test]
    fn webhook_url_must_be_https_with_a_host() {
        for (url, message) in [
            ("http://localhost:9443", "must be an https:// URL"),
            ("localhost:9443", "must be an https:// URL"),
            ("https://example.com/?a=b", "must not have a query"),
        ] {
            let error = parse_error(&["kuota", "serve", "--webhook-url", url]);
            assert!(error.contains(message), "{url}: {error}");
        }
    }

    #[test]
    fn admitter_only_needs_a_webhook_url() {
        let error = parse_error(&["kuota", "serve", "--admitter-only"]);
        assert!(error.contains("--webhook-url <URL>"), "{error}");
        let Command::Serve(serve) = parse(&[
            "kuota",
            "serve",
            "--webhook-url",
            "https://127.0.0.1:9443",
            "--admitter-only",
        ])
        .command
        else {
            panic!("expected serve");
        };
        assert!(serve.admitter_only);
    }

    #[test]
    fn bad_values_are_refused() {
        let error = parse_error(&["kuota", "serve", "--webhook-port", "70000"]);
        assert!(error.contains("70000"), "{error}");
        let error = parse_error(&["kuota", "--log-format", "xml", "version"]);
        assert!(error.contains("possible values: text, json"), "{error}");
        let error = parse_error(&["kuota"]);
        assert!(error.contains("Usage"), "{error}");
    }

    #[test]
    fn crds_prints_to_stdout_unless_out_is_given() {
        let Command::Crds(crds) = parse(&["kuota", "crds"]).command else {
            panic!("expected crds");
        };
        assert_eq!(crds.out, None);
        let Command::Crds(crds) = parse(&["kuota", "crds", "--out", "manifests/crds"]).command
        else {
            panic!("expected crds");
        };
        assert_eq!(crds.out, Some(PathBuf::from("manifests/crds")));
    }

    #[test]
    fn certs_needs_out_and_defaults_hosts() {
        let error = parse_error(&["kuota", "certs"]);
        assert!(error.contains("--out <DIR>"), "{error}");
        let Command::Certs(certs) = parse(&["kuota", "certs", "--out", "certs"]).command else {
            panic!("expected certs");
        };
        assert_eq!(certs.out, PathBuf::from("certs"));
        assert_eq!(certs.hosts, ["localhost", "127.0.0.1"]);
        let Command::Certs(certs) = parse(&[
            "kuota",
            "certs",
            "--out",
            "certs",
            "--host",
            "kuota.example.com",
            "--host",
            "10.0.0.7",
        ])
        .command
        else {
            panic!("expected certs");
        };
        assert_eq!(certs.hosts, ["kuota.example.com", "10.0.0.7"]);
    }

    #[test]
    fn load_config_applies_feature_gates_and_overrides() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("config.yaml");
        std::fs::write(
            &path,
            "apiVersion: config.kueue.x-k8s.io/v1beta2\nkind: Configuration\nwebhook:\n  port: 9000\n",
        )
        .unwrap();
        let cli = parse(&[
            "kuota",
            "--config",
            path.to_str().unwrap(),
            "--feature-gates",
            "PartialAdmission=false",
            "serve",
            "--webhook-port",
            "9555",
            "--namespace",
            "kuota-system",
        ]);
        let configuration = cli.load_config().unwrap();
        assert_eq!(configuration.webhook.address.port, 9555);
        assert_eq!(configuration.namespace, "kuota-system");
        assert!(
            configuration
                .managed_jobs_namespace_selector
                .matches_name("default")
        );
        assert!(
            !configuration
                .managed_jobs_namespace_selector
                .matches_name("kuota-system")
        );
        assert!(
            !configuration
                .feature_gates
                .enabled(crate::config::Feature::PartialAdmission)
        );
    }
}
