//! `kuota-cluster up`: starts the local control plane, installs Kuota's CRDs, runs `kuota serve`
//! against it, applies `manifests/samples/` and shows workloads queue, admit and finish until
//! Ctrl-C. `kuota-cluster build` only builds (or finds cached) the control plane binaries.
#![forbid(unsafe_code)]

use std::{
    path::{Path, PathBuf},
    process::{Command, ExitCode},
    time::Duration,
};

use kuota_cluster::{ControlPlane, KuotaProcess};

const USAGE: &str = "usage: kuota-cluster up [--dir DIR] [--no-samples] | kuota-cluster build";

#[tokio::main]
async fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.first().map(String::as_str) {
        Some("build") => kuota_cluster::build().map(|dir| println!("{}", dir.display())),
        Some("up") => up(&args[1..]).await,
        _ => {
            eprintln!("{USAGE}");
            return ExitCode::from(2);
        }
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("error: {err}");
            ExitCode::FAILURE
        }
    }
}

async fn up(args: &[String]) -> Result<(), kuota_cluster::Error> {
    let repo = kuota_cluster::crate_dir().join("../..").canonicalize()?;
    let mut dir = repo.join(".kuota/cluster");
    let mut samples = true;
    let mut iter = args.iter();
    while let Some(arg) = iter.next() {
        match arg.as_str() {
            "--dir" => dir = iter.next().map(PathBuf::from).unwrap_or(dir),
            "--no-samples" => samples = false,
            other => {
                eprintln!("unknown argument {other:?}\n{USAGE}");
                std::process::exit(2);
            }
        }
    }
    let _ = std::fs::remove_dir_all(&dir);

    eprintln!("starting the control plane in {} ...", dir.display());
    let plane = ControlPlane::start(&dir).await?;
    eprintln!("control plane ready at {}", plane.server());

    let crd_dir = repo.join("manifests/crds");
    let mut crds = yaml_files(&crd_dir)?;
    crds.extend(yaml_files(&repo.join("dev/cluster/crds"))?);
    plane.install_crd_files(&crds).await?;
    eprintln!("installed {} CRDs", crds.len());

    let kuota = start_kuota(&repo, &plane).await?;

    if samples {
        let sample_dir = repo.join("manifests/samples");
        if sample_dir.is_dir() {
            let status = plane
                .kubectl()
                .args(["apply", "--server-side", "--recursive", "-f"])
                .arg(&sample_dir)
                .status()?;
            eprintln!("applied manifests/samples/ and its subdirectories ({status})");
        }
    }

    println!("\nexport KUBECONFIG={}\n", plane.kubeconfig().display());
    println!("Ctrl-C stops everything.\n");

    let watch = async {
        loop {
            let out = plane
                .kubectl()
                .args([
                    "get",
                    "clusterqueues,localqueues,workloads,jobs",
                    "--all-namespaces",
                    "--ignore-not-found",
                ])
                .output();
            if let Ok(out) = out {
                print!("\x1b[2J\x1b[H");
                println!(
                    "export KUBECONFIG={}    (Ctrl-C to stop)\n",
                    plane.kubeconfig().display()
                );
                println!("{}", String::from_utf8_lossy(&out.stdout));
            }
            tokio::time::sleep(Duration::from_secs(2)).await;
        }
    };
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = watch => {}
    }
    eprintln!("\nstopping ...");
    kuota.process.stop(Duration::from_secs(10));
    plane.stop();
    Ok(())
}

/// Builds `kuota` and starts `kuota serve` against the control plane, out of cluster.
async fn start_kuota(
    repo: &Path,
    plane: &ControlPlane,
) -> Result<KuotaProcess, kuota_cluster::Error> {
    let status = Command::new("cargo")
        .args(["build", "--quiet", "--bin", "kuota"])
        .current_dir(repo)
        .status()?;
    if !status.success() {
        return Err(kuota_cluster::Error::Build(
            "cargo build --bin kuota failed".into(),
        ));
    }
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| repo.join("target"));
    let config = repo.join("manifests/config/controller_manager_config.yaml");
    let config = config.display().to_string();
    let kuota = plane
        .start_kuota(&target.join("debug/kuota"), &["--config", &config])
        .await?;
    eprintln!("kuota serve is ready (log: {})", kuota.log().display());
    plane.register_visibility(kuota.visibility_port).await?;
    eprintln!("the visibility API is registered (kubectl kueue list workload shows positions)");
    Ok(kuota)
}

fn yaml_files(dir: &Path) -> Result<Vec<PathBuf>, kuota_cluster::Error> {
    if !dir.is_dir() {
        return Ok(Vec::new());
    }
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
        .collect();
    files.sort();
    Ok(files)
}
