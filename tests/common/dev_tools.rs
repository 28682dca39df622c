//! The repository's dev scripts that build or fetch pinned tools (`dev/*/build.sh`,
//! `dev/kueue/module.sh` for the pinned Kueue release), run from tests: each prints one path.

use std::path::{Path, PathBuf};
use std::process::Command;

/// Runs `bash <script> <args>` from the repository root and returns the path it prints,
/// failing the test with the script's error output when it fails.
pub fn dev_script(script: &str, args: &[&str]) -> PathBuf {
    let output = Command::new("bash")
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join(script))
        .args(args)
        .output()
        .unwrap_or_else(|error| panic!("run {script}: {error}"));
    assert!(
        output.status.success(),
        "{script} failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    PathBuf::from(String::from_utf8_lossy(&output.stdout).trim())
}
