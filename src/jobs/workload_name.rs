//! Name of the Workload Kueue creates for a job (`jobframework/workload_names.go`).

use serde_json::Value;

use super::JobFramework;
use crate::k8s::json;

/// Longest Workload name (a DNS subdomain).
const MAX_NAME_LENGTH: usize = 253;
/// Hex characters of the hash suffix.
const HASH_LENGTH: usize = 5;

/// `<lowercase kind>-<job name>` cut to 247 bytes, then `-` and the first 5 hex digits of
/// SHA-1 over `kind \n group \n job name \n job uid`.
pub fn workload_name(kind: &str, group: &str, job_name: &str, job_uid: &str) -> String {
    let prefix = format!("{}-{job_name}", kind.to_lowercase());
    let digest = sha1_smol::Sha1::from(format!("{kind}\n{group}\n{job_name}\n{job_uid}"))
        .digest()
        .to_string();
    format!(
        "{}-{}",
        shorten(&prefix, MAX_NAME_LENGTH - 1 - HASH_LENGTH),
        &digest[..HASH_LENGTH]
    )
}

/// The Workload name for a job object of this framework (from `metadata.name` and `.uid`).
pub fn workload_name_for(framework: &dyn JobFramework, job: &Value) -> String {
    let field = |pointer| {
        json::at(job, pointer)
            .and_then(Value::as_str)
            .unwrap_or_default()
    };
    let kind = framework.kind();
    workload_name(
        kind.kind,
        kind.group,
        field("/metadata/name"),
        field("/metadata/uid"),
    )
}

/// First `max` bytes of `text`, backing off to a character boundary.
fn shorten(text: &str, max: usize) -> &str {
    if text.len() <= max {
        return text;
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_kueue_names() {
        // Expected hashes from coreutils: printf 'Job\nbatch\nsample-job\n<uid>' | sha1sum
        let cases = [
            (
                (
                    "Job",
                    "batch",
                    "sample-job",
                    "8a7e3c3e-1234-4c7f-9a51-0e0f3f4d2b6a",
                ),
                "job-sample-job-51d38".to_string(),
            ),
            (
                (
                    "PyTorchJob",
                    "kubeflow.org",
                    "pytorch-simple",
                    "0b5c7e1e-2f0e-4e8b-9d1a-6c3f5e7a9b11",
                ),
                "pytorchjob-pytorch-simple-e5e78".to_string(),
            ),
            (
                ("JobSet", "jobset.x-k8s.io", &"a".repeat(300), "uid-1"),
                format!("jobset-{}-29c11", "a".repeat(240)),
            ),
        ];
        for ((kind, group, name, uid), expected) in cases {
            let actual = workload_name(kind, group, name, uid);
            assert_eq!(actual, expected);
            assert!(actual.len() <= MAX_NAME_LENGTH);
        }
    }
}
