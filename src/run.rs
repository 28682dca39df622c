//! Dispatch of the CLI's subcommands.

use std::io::Write;

use crate::{
    api::crds,
    cli::{Cli, Command},
    config::ConfigError,
};

/// Anything that ends a `kuota` command with an error.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error(transparent)]
    Config(#[from] ConfigError),
    #[error(transparent)]
    Crds(#[from] crds::CrdError),
    #[error(transparent)]
    Certs(#[from] crate::tls::certs::CertError),
    #[error(transparent)]
    Serve(#[from] crate::serve::ServeError),
    #[error(transparent)]
    Explain(#[from] crate::visibility::explain::ExplainError),
    #[error("writing output: {0}")]
    Io(#[from] std::io::Error),
}

/// Runs the command the CLI names.
pub fn run(cli: Cli) -> Result<(), Error> {
    match &cli.command {
        Command::Version => {
            println!("kuota {}", env!("CARGO_PKG_VERSION"));
            Ok(())
        }
        Command::Crds(args) => {
            match &args.out {
                Some(dir) => {
                    for path in crds::write_all(dir)? {
                        eprintln!("wrote {}", path.display());
                    }
                }
                None => {
                    let mut out = std::io::stdout().lock();
                    for crd in crds::all() {
                        write!(out, "---\n{}", crds::render_yaml(&crd)?)?;
                    }
                }
            }
            Ok(())
        }
        Command::Certs(args) => {
            crate::tls::certs::write_dev_certs(&args.out, &args.hosts)?;
            eprintln!(
                "wrote ca.crt, tls.crt and tls.key to {}",
                args.out.display()
            );
            Ok(())
        }
        Command::ReleaseFinalizers => {
            let runtime = tokio::runtime::Runtime::new()?;
            let released =
                runtime.block_on(crate::serve::release_finalizers(cli.kubeconfig.as_deref()))?;
            eprintln!("released the resource-in-use finalizer of {released} objects");
            Ok(())
        }
        Command::Explain(args) => {
            let config = cli.load_config()?;
            let runtime = tokio::runtime::Runtime::new()?;
            let line = runtime.block_on(crate::serve::explain(
                &config,
                cli.kubeconfig.as_deref(),
                &args.target,
                args.namespace.as_deref(),
            ))?;
            println!("{line}");
            Ok(())
        }
        Command::Serve(args) => {
            let config = cli.load_config()?;
            let runtime = tokio::runtime::Runtime::new()?;
            runtime.block_on(crate::serve::serve(
                config,
                cli.kubeconfig.clone(),
                args.webhook_url
                    .clone()
                    .map(|url| crate::serve::OutOfClusterArgs {
                        url,
                        register_webhooks: !args.admitter_only,
                    }),
            ))?;
            Ok(())
        }
    }
}
