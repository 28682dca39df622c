//! Every `KUOTA_*` environment variable parses like its flag.
//!
//! The environment is process-wide, so each case runs this test binary again as a child with the
//! variables set; the child prints what it parsed and the parent compares it with parsing the
//! equivalent flags.

use std::process::Command;

use clap::Parser;
use kuota::cli::Cli;

/// Set in the child: the arguments to parse, separated by spaces.
const CHILD_ARGS: &str = "KUOTA_TEST_CLI_CHILD_ARGS";
const TEST_NAME: &str = "environment_variables_parse_like_flags";
const PRINTED: &str = "parsed: ";

/// Every variable the cases set, cleared in the child unless a case sets it.
const VARIABLES: &[&str] = &[
    "KUOTA_KUBECONFIG",
    "KUOTA_CONFIG",
    "KUOTA_LOG_FORMAT",
    "KUOTA_LOG",
    "KUOTA_FEATURE_GATES",
    "KUOTA_WEBHOOK_URL",
    "KUOTA_WEBHOOK_PORT",
    "KUOTA_HEALTH_PROBE_ADDR",
    "KUOTA_METRICS_ADDR",
    "KUOTA_NAMESPACE",
    "KUOTA_NO_LEADER_ELECT",
    "KUOTA_CRDS_OUT",
    "KUOTA_CERTS_OUT",
    "KUOTA_CERTS_HOSTS",
];

/// Environment variables, and the flags that mean the same.
type Case<'a> = (&'a [(&'a str, &'a str)], &'a [&'a str]);

fn parsed(args: &[&str]) -> String {
    match Cli::try_parse_from(args) {
        Ok(cli) => format!("{cli:?}"),
        Err(error) => format!("error: {:?}", error.kind()),
    }
}

fn parsed_in_child(args: &[&str], variables: &[(&str, &str)]) -> String {
    let mut child = Command::new(std::env::current_exe().unwrap());
    child
        .args(["--exact", TEST_NAME, "--nocapture", "--test-threads=1"])
        .env(CHILD_ARGS, args.join(" "));
    for variable in VARIABLES {
        child.env_remove(variable);
    }
    child.envs(variables.iter().copied());
    let output = child.output().unwrap();
    assert!(output.status.success(), "child failed: {output:?}");
    let stdout = String::from_utf8(output.stdout).unwrap();
    stdout
        .lines()
        .find_map(|line| line.split_once(PRINTED).map(|(_, parsed)| parsed))
        .unwrap_or_else(|| panic!("child printed nothing parsed: {stdout}"))
        .to_owned()
}

#[test]
fn environment_variables_parse_like_flags() {
    if let Ok(args) = std::env::var(CHILD_ARGS) {
        let args: Vec<&str> = args.split(' ').collect();
        println!("{PRINTED}{}", parsed(&args));
        return;
    }
    let cases: &[Case] = &[
        (
            &[
                ("KUOTA_KUBECONFIG", "/root/.kube/config"),
                ("KUOTA_CONFIG", "/etc/kuota/config.yaml"),
                ("KUOTA_LOG_FORMAT", "json"),
                ("KUOTA_LOG", "warn,kuota=debug"),
                (
                    "KUOTA_FEATURE_GATES",
                    "TopologyAwareScheduling=true,LocalQueueMetrics=true",
                ),
            ],
            &[
                "kuota",
                "--kubeconfig",
                "/root/.kube/config",
                "--config",
                "/etc/kuota/config.yaml",
                "--log-format",
                "json",
                "--log-level",
                "warn,kuota=debug",
                "--feature-gates",
                "TopologyAwareScheduling=true,LocalQueueMetrics=true",
                "version",
            ],
        ),
        (
            &[
                ("KUOTA_WEBHOOK_URL", "https://10.0.0.5:9443"),
                ("KUOTA_WEBHOOK_PORT", "9443"),
                ("KUOTA_HEALTH_PROBE_ADDR", ":18081"),
                ("KUOTA_METRICS_ADDR", "0"),
                ("KUOTA_NAMESPACE", "kuota-system"),
                ("KUOTA_NO_LEADER_ELECT", "true"),
            ],
            &[
                "kuota",
                "serve",
                "--webhook-url",
                "https://10.0.0.5:9443",
                "--webhook-port",
                "9443",
                "--health-probe-addr",
                ":18081",
                "--metrics-addr",
                "0",
                "--namespace",
                "kuota-system",
                "--no-leader-elect",
            ],
        ),
        (&[("KUOTA_NO_LEADER_ELECT", "false")], &["kuota", "serve"]),
        (
            &[("KUOTA_CRDS_OUT", "manifests/crds")],
            &["kuota", "crds", "--out", "manifests/crds"],
        ),
        (
            &[
                ("KUOTA_CERTS_OUT", "certs"),
                ("KUOTA_CERTS_HOSTS", "kuota.local,10.0.0.5"),
            ],
            &[
                "kuota",
                "certs",
                "--out",
                "certs",
                "--host",
                "kuota.local",
                "--host",
                "10.0.0.5",
            ],
        ),
    ];
    for (variables, flags) in cases {
        let subcommand = flags
            .iter()
            .copied()
            .find(|arg| ["version", "serve", "crds", "certs"].contains(arg))
            .unwrap();
        let from_environment = parsed_in_child(&["kuota", subcommand], variables);
        assert_eq!(from_environment, parsed(flags), "{variables:?}");
        assert!(!from_environment.starts_with("error"), "{from_environment}");
    }
    // A flag wins over its variable.
    assert_eq!(
        parsed_in_child(
            &["kuota", "--log-level", "debug", "version"],
            &[("KUOTA_LOG", "error")]
        ),
        parsed(&["kuota", "--log-level", "debug", "version"])
    );
    // Bad values in variables are refused like bad flags.
    assert_eq!(
        parsed_in_child(
            &["kuota", "serve"],
            &[("KUOTA_WEBHOOK_URL", "http://insecure")]
        ),
        "error: ValueValidation"
    );
}
