//! The benchmark harness keeps working: Kueue's own performance runner (built from the pinned
//! release) drives a tiny scenario against `kuota serve` (with its webhooks, and admitter-only)
//! and against Kueue's minimalkueue, and each finishes every Workload within Kueue's checker's
//! thresholds. `cargo bench --bench kueue_runner` runs the real scenarios.

use std::path::{Path, PathBuf};
use std::time::Duration;

use kuota_cluster::kueue_runner::{self, Admitter, RequestKind, Scenario};
use serde_json::json;

/// One cohort of two ClusterQueues sharing 40 CPUs; 20 one-CPU and 4 whole-queue Workloads
/// per ClusterQueue, the large ones preempting the small ones by priority.
fn tiny_scenario(dir: &Path) -> Scenario {
    let generator = json!({
        "cohorts": [{
            "className": "cohort",
            "count": 1,
            "queuesSets": [{
                "className": "cq",
                "count": 2,
                "nominalQuota": 20,
                "borrowingLimit": 100,
                "reclaimWithinCohort": "Any",
                "withinClusterQueue": "LowerPriority",
                "workloadsSets": [
                    {"count": 20, "creationIntervalMs": 100, "workloads": [
                        {"className": "small", "runtimeMs": 200, "priority": 50, "request": 1},
                    ]},
                    {"count": 4, "creationIntervalMs": 1200, "workloads": [
                        {"className": "large", "runtimeMs": 1000, "priority": 200, "request": 20},
                    ]},
                ],
            }],
        }],
    });
    // Loose bounds: this checks that the harness works, not how fast (that is the bench).
    let rangespec = json!({
        "cmd": {"maxWallMs": 120_000},
        "clusterQueueClassesMinUsage": {"cq": 1},
        "wlClassesMaxAvgTimeToAdmissionMs": {"small": 60_000, "large": 60_000},
    });
    let write = |name: &str, value: &serde_json::Value| -> PathBuf {
        let path = dir.join(name);
        std::fs::write(&path, kuota::k8s::yaml::to_string(value).unwrap()).unwrap();
        path
    };
    Scenario {
        name: "tiny".to_owned(),
        generator: write("generator.yaml", &generator),
        rangespec: write("rangespec.yaml", &rangespec),
        timeout: Duration::from_secs(120),
    }
}

#[test]
fn kueues_runner_drives_kuota_and_kueue_through_a_tiny_scenario() {
    let tools = kueue_runner::tools().expect("Kueue's performance tools build");
    let work = tempfile::tempdir().unwrap();
    let scenario = tiny_scenario(work.path());
    // Kuota both ways: with its webhooks in the API server's path, and admitter-only (what the
    // bench compares with minimalkueue by default).
    let kuota = |admission_webhooks| Admitter::Kuota {
        binary: PathBuf::from(env!("CARGO_BIN_EXE_kuota")),
        crds: Path::new(env!("CARGO_MANIFEST_DIR")).join("manifests/crds"),
        admission_webhooks,
    };
    for (run, admitter) in [kuota(true), kuota(false), Admitter::Kueue]
        .into_iter()
        .enumerate()
    {
        let dir = work.path().join(format!("{}-{run}", admitter.name()));
        let outcome = kueue_runner::run(&tools, &admitter, &scenario, &dir)
            .unwrap_or_else(|error| panic!("{} (run {run}): {error}", admitter.name()));
        let counts: Vec<(&str, i64)> = outcome
            .summary
            .workload_classes
            .iter()
            .map(|(class, summary)| (class.as_str(), summary.count))
            .collect();
        assert_eq!(counts, [("large", 8), ("small", 40)], "{}", admitter.name());
        assert_eq!(outcome.summary.dropped_workload_events, 0);
        assert!(
            outcome.verdict.passed,
            "{}: {:?}",
            admitter.name(),
            outcome.verdict.failures
        );
        assert!(outcome.admitter.maxrss > 0 && outcome.admitter.wall_ms > 0);
        assert!(outcome.apiserver.cpu_seconds > 0.0 && outcome.etcd.cpu_seconds > 0.0);
        // The API server's request counts were read during the run (not its watches: the API
        // server counts a watch when it ends), the queues the runner made among them.
        let queue_creates = RequestKind {
            resource: "clusterqueues.kueue.x-k8s.io".to_owned(),
            verb: "POST".to_owned(),
        };
        assert!(
            outcome.requests.get(&queue_creates) > Some(&0),
            "{}: {:?}",
            admitter.name(),
            outcome.requests
        );
    }
}
