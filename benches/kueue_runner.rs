//! Kueue's own scheduler performance runner, unchanged, against Kuota and then against Kueue
//! (its minimalkueue) in one invocation, each on a fresh control plane of the same binaries,
//! and Kueue's checker on both with the scenario's rangespec.
//!
//! Run: `cargo bench --bench kueue_runner` (Kueue's baseline scenario, once each). Flags after
//! `--`: `--scenario NAME` (a directory of Kueue's `configs/`, e.g. `large-scale`),
//! `--generator FILE --rangespec FILE` (a scenario of your own), `--repeats N`,
//! `--cohorts N` (the scenario's generator with N cohorts of each class instead of its own
//! count: `--cohorts 1` is the baseline at a fifth of its size, which the API server of a
//! 2-core machine keeps up with), `--only kuota|kueue`, `--timeout SECONDS` (the runner's,
//! default 900), `--out FILE` (the Markdown file whose section for the scenario is replaced,
//! default `BENCHMARKS.md`; `--out -` prints only), `--kuota-webhooks` (Kuota with its
//! admission webhooks registered; by default it runs admitter-only, as minimalkueue runs
//! without Kueue's webhooks), `--keep DIR` (each run's directory, with the runner's
//! `summary.yaml`, its log and the admitter's, is kept under DIR instead of a temporary
//! directory removed at the end).

use std::{
    collections::BTreeMap,
    error::Error,
    path::{Path, PathBuf},
    time::Duration,
};

use kuota_cluster::kueue_runner::{
    self, Admitter, Outcome, RequestKind, Scenario, Tools, WorkloadClassSummary,
};

type BenchResult<T> = Result<T, Box<dyn Error>>;

struct Options {
    scenario: Option<String>,
    generator: Option<PathBuf>,
    rangespec: Option<PathBuf>,
    cohorts: Option<u32>,
    repeats: usize,
    only: Option<String>,
    timeout: Duration,
    out: String,
    kuota_webhooks: bool,
    keep: Option<PathBuf>,
}

fn options() -> BenchResult<Options> {
    let mut options = Options {
        scenario: None,
        generator: None,
        rangespec: None,
        cohorts: None,
        repeats: 1,
        only: None,
        timeout: Duration::from_secs(900),
        out: "BENCHMARKS.md".to_owned(),
        kuota_webhooks: false,
        keep: None,
    };
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let mut value = || args.next().ok_or_else(|| format!("{arg} needs a value"));
        match arg.as_str() {
            // cargo bench passes this to every bench binary.
            "--bench" => {}
            "--scenario" => options.scenario = Some(value()?),
            "--generator" => options.generator = Some(value()?.into()),
            "--rangespec" => options.rangespec = Some(value()?.into()),
            "--cohorts" => options.cohorts = Some(value()?.parse()?),
            "--repeats" => options.repeats = value()?.parse()?,
            "--only" => options.only = Some(value()?),
            "--timeout" => options.timeout = Duration::from_secs(value()?.parse()?),
            "--out" => options.out = value()?,
            "--kuota-webhooks" => options.kuota_webhooks = true,
            "--keep" => options.keep = Some(value()?.into()),
            other => return Err(format!("unknown flag {other}").into()),
        }
    }
    Ok(options)
}

/// The scenario the options name; with `--cohorts`, its generator rewritten into `dir`.
fn scenario(tools: &Tools, options: &Options, dir: &Path) -> BenchResult<Scenario> {
    let scenario = named_scenario(tools, options)?;
    let Some(cohorts) = options.cohorts else {
        return Ok(scenario);
    };
    let name = format!(
        "{}-{cohorts}-cohort{}",
        scenario.name,
        if cohorts == 1 { "" } else { "s" }
    );
    let generator = dir.join(format!("{name}.yaml"));
    let text = std::fs::read_to_string(&scenario.generator)?;
    std::fs::write(&generator, with_cohorts(&text, cohorts)?)?;
    Ok(Scenario {
        name,
        generator,
        ..scenario
    })
}

/// A generator config with every cohort class counted `cohorts` times.
fn with_cohorts(generator: &str, cohorts: u32) -> BenchResult<String> {
    let mut config: serde_json::Value = serde_saphyr::from_str(generator)?;
    let classes = config
        .get_mut("cohorts")
        .and_then(serde_json::Value::as_array_mut)
        .ok_or("the generator config has no cohorts list")?;
    for class in classes {
        class["count"] = cohorts.into();
    }
    Ok(serde_saphyr::to_string(&config)?)
}

fn named_scenario(tools: &Tools, options: &Options) -> BenchResult<Scenario> {
    match (&options.generator, &options.rangespec) {
        (Some(generator), Some(rangespec)) => Ok(Scenario {
            name: generator
                .file_stem()
                .and_then(|stem| stem.to_str())
                .unwrap_or("custom")
                .to_owned(),
            generator: generator.clone(),
            rangespec: rangespec.clone(),
            timeout: options.timeout,
        }),
        (None, None) => Ok(Scenario::kueue(
            tools,
            options.scenario.as_deref().unwrap_or("baseline"),
            options.timeout,
        )),
        _ => Err("--generator and --rangespec go together".into()),
    }
}

fn main() -> BenchResult<()> {
    let options = options()?;
    let tools = kueue_runner::tools()?;
    let temporary = tempfile::tempdir()?;
    let scenario = scenario(&tools, &options, temporary.path())?;
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    let admitters: Vec<Admitter> = [
        Admitter::Kuota {
            binary: PathBuf::from(env!("CARGO_BIN_EXE_kuota")),
            crds: repo.join("manifests/crds"),
            admission_webhooks: options.kuota_webhooks,
        },
        Admitter::Kueue,
    ]
    .into_iter()
    .filter(|admitter| {
        options
            .only
            .as_deref()
            .is_none_or(|only| admitter.name().eq_ignore_ascii_case(only))
    })
    .collect();
    let work = options.keep.as_deref().unwrap_or(temporary.path());
    // A summary left by an earlier run would pass for this run's.
    if let Some(keep) = &options.keep
        && keep
            .read_dir()
            .is_ok_and(|mut entries| entries.next().is_some())
    {
        return Err(format!("--keep {}: the directory is not empty", keep.display()).into());
    }
    let mut results: Vec<(&'static str, Vec<Outcome>)> = Vec::new();
    let mut incomplete: Vec<String> = Vec::new();
    for admitter in &admitters {
        let mut outcomes = Vec::new();
        for repeat in 0..options.repeats {
            let dir = work.join(format!("{}-{repeat}", admitter.name()));
            eprintln!(
                "kueue_runner: {} on {} (run {} of {})",
                admitter.name(),
                scenario.name,
                repeat + 1,
                options.repeats
            );
            // A run that does not complete is reported, and the other admitter still runs.
            match kueue_runner::run(&tools, admitter, &scenario, &dir) {
                Ok(outcome) => {
                    eprintln!("kueue_runner: {:?}", outcome.admitter);
                    outcomes.push(outcome);
                }
                Err(error) => {
                    eprintln!("kueue_runner: {error}");
                    incomplete.push(format!(
                        "{}, run {}: the runner ended without a summary{}",
                        admitter.name(),
                        repeat + 1,
                        stats_note(&dir)
                    ));
                }
            }
        }
        results.push((admitter.name(), outcomes));
    }
    let section = render(&tools, &scenario, &options, &results, &incomplete);
    println!("{section}");
    if options.out != "-" {
        let path = repo.join(&options.out);
        let text = std::fs::read_to_string(&path).unwrap_or_default();
        std::fs::write(&path, replace_section(&text, &scenario.name, &section))?;
        eprintln!(
            "kueue_runner: wrote the {} table to {}",
            scenario.name,
            path.display()
        );
    }
    Ok(())
}

/// One figure of a run.
type Figure = fn(&Outcome) -> f64;
/// A table row: its label and how to read its figure from a run.
type Row = (String, Box<dyn Fn(&Outcome) -> f64>);

/// One row per Workload class, labelled `what` with `{class}` replaced by the class's name,
/// read by `figure` from the class's summary.
fn class_rows(
    rows: &mut Vec<Row>,
    classes: &[String],
    what: &str,
    figure: fn(&WorkloadClassSummary) -> f64,
) {
    for class in classes {
        let class = class.clone();
        rows.push((
            what.replace("{class}", &class),
            Box::new(move |o: &Outcome| {
                o.summary
                    .workload_classes
                    .get(&class)
                    .map_or(f64::NAN, figure)
            }),
        ));
    }
}

/// The flags after `cargo bench --bench kueue_runner` that rerun this table.
fn bench_flags(options: &Options) -> String {
    let mut flags = Vec::new();
    if let Some(scenario) = options
        .scenario
        .as_deref()
        .filter(|name| *name != "baseline")
    {
        flags.push(format!("--scenario {scenario}"));
    }
    if let (Some(generator), Some(rangespec)) = (&options.generator, &options.rangespec) {
        flags.push(format!(
            "--generator {} --rangespec {}",
            generator.display(),
            rangespec.display()
        ));
    }
    if let Some(cohorts) = options.cohorts {
        flags.push(format!("--cohorts {cohorts}"));
    }
    if options.kuota_webhooks {
        flags.push("--kuota-webhooks".to_owned());
    }
    if flags.is_empty() {
        String::new()
    } else {
        format!(" -- {}", flags.join(" "))
    }
}

fn render(
    tools: &Tools,
    scenario: &Scenario,
    options: &Options,
    results: &[(&'static str, Vec<Outcome>)],
    incomplete: &[String],
) -> String {
    let mut rows: Vec<Row> = vec![(
        "wall time, admitter start to stop (s)".to_owned(),
        Box::new((|o| lossless(o.admitter.wall_ms) / 1000.0) as Figure),
    )];
    // The classes come from the scenario, so any completed run names them all.
    let sample = results.iter().find_map(|(_, outcomes)| outcomes.first());
    let queue_classes: Vec<String> = sample
        .map(|o| o.summary.cluster_queue_classes.keys().cloned().collect())
        .unwrap_or_default();
    for class in queue_classes {
        let label = format!("ClusterQueue usage, class {class} (% of nominal)");
        rows.push((
            label,
            Box::new(move |o: &Outcome| {
                o.summary
                    .cluster_queue_classes
                    .get(&class)
                    .map_or(f64::NAN, |c| c.usage_percent())
            }),
        ));
    }
    let workload_classes: Vec<String> = sample
        .map(|o| o.summary.workload_classes.keys().cloned().collect())
        .unwrap_or_default();
    class_rows(
        &mut rows,
        &workload_classes,
        "average time to admission, {class} (s)",
        |c| lossless(c.average_time_to_admission_ms) / 1000.0,
    );
    // The runner keeps a Workload's latest admission: beyond the class's run time this is how
    // late the runner's own `Finished` write came.
    class_rows(
        &mut rows,
        &workload_classes,
        "average admission to finish, {class} (s)",
        |c| lossless(c.average_time_to_finish_ms - c.average_time_to_admission_ms) / 1000.0,
    );
    rows.push((
        "admitter CPU, user + system (s)".to_owned(),
        Box::new(|o| lossless(o.admitter.user_ms + o.admitter.sys_ms) / 1000.0),
    ));
    rows.push((
        "admitter peak RSS (MiB)".to_owned(),
        Box::new(|o| lossless(o.admitter.maxrss) / 1024.0),
    ));
    rows.push((
        "kube-apiserver CPU (s)".to_owned(),
        Box::new(|o| o.apiserver.cpu_seconds),
    ));
    rows.push((
        "kube-apiserver peak RSS (MiB)".to_owned(),
        Box::new(|o| o.apiserver.peak_rss_mib),
    ));
    rows.push(("etcd CPU (s)".to_owned(), Box::new(|o| o.etcd.cpu_seconds)));
    rows.push((
        "evictions (all classes)".to_owned(),
        Box::new(|o| {
            lossless(
                o.summary
                    .workload_classes
                    .values()
                    .map(|c| c.total_evictions)
                    .sum(),
            )
        }),
    ));
    class_rows(&mut rows, &workload_classes, "evictions, {class}", |c| {
        lossless(c.total_evictions)
    });

    let names: Vec<&str> = results.iter().map(|(name, _)| *name).collect();
    let mut out = String::new();
    out.push_str(&format!("<!-- {} -->\n", marker(&scenario.name)));
    out.push_str(&format!(
        "### Kueue's scheduler runner, scenario `{}`\n\n",
        scenario.name
    ));
    out.push_str(&format!(
        "`cargo bench --bench kueue_runner{}`: Kueue {}'s runner, unchanged, against each admitter on a fresh envtest control plane (etcd and kube-apiserver built by `dev/cluster/build.sh`); Kueue's side is its minimalkueue (no webhooks{}), Kuota's is `kuota serve` {}. {} run{} each, {}; measured {} on {} cores, {} GiB. With several runs a cell reads min / median / max.\n\n",
        bench_flags(options),
        tools.kueue_version,
        if scenario.uses_topology() {
            "; `--enableTAS`, as Kueue's own TAS target runs it"
        } else {
            ""
        },
        if options.kuota_webhooks {
            "with its admission webhooks registered: every Workload create and status write also passes through them"
        } else {
            "`--admitter-only` (no admission webhook in the API server's path, like for like)"
        },
        options.repeats,
        if options.repeats == 1 { "" } else { "s" },
        names.join(" then "),
        today(),
        cores(),
        memory_gib(),
    ));
    out.push_str("| figure |");
    for name in &names {
        out.push_str(&format!(" {name} |"));
    }
    if names.len() == 2 {
        out.push_str(&format!(" {} / {} (medians) |", names[0], names[1]));
    }
    out.push('\n');
    out.push_str(&"|---".repeat(names.len() + 1 + usize::from(names.len() == 2)));
    out.push_str("|\n");
    for (label, figure) in &rows {
        out.push_str(&format!("| {label} |"));
        let mut medians = Vec::new();
        for (_, outcomes) in results {
            let mut values: Vec<f64> = outcomes.iter().map(figure).collect();
            values.sort_by(f64::total_cmp);
            medians.push(values.get(values.len() / 2).copied().unwrap_or(f64::NAN));
            out.push_str(&format!(" {} |", cell(&values)));
        }
        if let [kuota, kueue] = medians.as_slice() {
            let ratio = kuota / kueue;
            if ratio.is_finite() {
                out.push_str(&format!(" {ratio:.2} |"));
            } else {
                out.push_str(" - |");
            }
        }
        out.push('\n');
    }
    out.push_str("| Kueue's checker on the scenario's rangespec |");
    for (_, outcomes) in results {
        let passed = outcomes.iter().filter(|o| o.verdict.passed).count();
        out.push_str(&format!(
            " {passed} of {} completed runs passed |",
            outcomes.len()
        ));
    }
    if names.len() == 2 {
        out.push_str(" |");
    }
    out.push('\n');
    for (name, outcomes) in results {
        for (run, outcome) in outcomes.iter().enumerate() {
            for failure in &outcome.verdict.failures {
                out.push_str(&format!("\n- {name}, run {}: `{failure}`", run + 1));
            }
        }
    }
    for run in incomplete {
        out.push_str(&format!("\n- did not complete: {run}"));
    }
    out.push_str(&requests_table(&names, results));
    out.push_str(&format!("\n<!-- /{} -->\n", marker(&scenario.name)));
    out
}

/// Rows of the request table: the kinds with the most requests, then the rest summed.
const REQUEST_ROWS: usize = 12;

/// kube-apiserver's requests by kind for each admitter (medians over its runs), the kinds with
/// the most requests first: what each admitter's run cost the API server.
fn requests_table(names: &[&str], results: &[(&'static str, Vec<Outcome>)]) -> String {
    let median_of = |outcomes: &[Outcome], kind: Option<&RequestKind>| {
        let mut values: Vec<u64> = outcomes
            .iter()
            .map(|outcome| match kind {
                Some(kind) => outcome.requests.get(kind).copied().unwrap_or(0),
                None => outcome.requests.values().sum(),
            })
            .collect();
        values.sort_unstable();
        values.get(values.len() / 2).copied().unwrap_or(0)
    };
    let mut totals: BTreeMap<&RequestKind, u64> = BTreeMap::new();
    for (_, outcomes) in results {
        for outcome in outcomes {
            for (kind, count) in &outcome.requests {
                *totals.entry(kind).or_default() += count;
            }
        }
    }
    if totals.is_empty() {
        return String::new();
    }
    let mut kinds: Vec<(&RequestKind, u64)> = totals.into_iter().collect();
    kinds.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(b.0)));
    let mut out = String::from(
        "\n\nkube-apiserver's requests during the run (`apiserver_request_total`, read every 10 s; the runner's own requests are in both columns):\n\n| resource | verb |",
    );
    for name in names {
        out.push_str(&format!(" {name} |"));
    }
    out.push('\n');
    out.push_str(&"|---".repeat(names.len() + 2));
    out.push_str("|\n");
    for (kind, _) in kinds.iter().take(REQUEST_ROWS) {
        out.push_str(&format!("| `{}` | {} |", kind.resource, kind.verb));
        for (_, outcomes) in results {
            out.push_str(&format!(" {} |", median_of(outcomes, Some(kind))));
        }
        out.push('\n');
    }
    out.push_str("| all | |");
    for (_, outcomes) in results {
        out.push_str(&format!(" {} |", median_of(outcomes, None)));
    }
    out.push('\n');
    out
}

/// What the runner measured of an admitter whose run did not complete, if it wrote it.
fn stats_note(dir: &Path) -> String {
    let stats = ["kuota-serve", "minimalkueue"].iter().find_map(|name| {
        let text = std::fs::read_to_string(dir.join(format!("{name}.stats.yaml"))).ok()?;
        serde_saphyr::from_str::<kueue_runner::CmdStats>(&text).ok()
    });
    match stats {
        Some(stats) => format!(
            " (admitter stopped after {:.0} s, CPU {:.1} s, peak RSS {:.0} MiB)",
            lossless(stats.wall_ms) / 1000.0,
            lossless(stats.user_ms + stats.sys_ms) / 1000.0,
            lossless(stats.maxrss) / 1024.0
        ),
        None => String::new(),
    }
}

fn cell(sorted: &[f64]) -> String {
    match sorted {
        [] => "-".to_owned(),
        [one] => format!("{one:.1}"),
        values => format!(
            "{:.1} / {:.1} / {:.1}",
            values[0],
            values[values.len() / 2],
            values[values.len() - 1]
        ),
    }
}

fn marker(scenario: &str) -> String {
    format!("kueue-runner:{scenario}")
}

/// `text` with the scenario's section replaced by `section`, or with `section` appended.
fn replace_section(text: &str, scenario: &str, section: &str) -> String {
    let begin = format!("<!-- {} -->", marker(scenario));
    let end = format!("<!-- /{} -->", marker(scenario));
    if let (Some(start), Some(stop)) = (text.find(&begin), text.find(&end))
        && start < stop
    {
        let stop = stop + end.len();
        let rest = text[stop..].strip_prefix('\n').unwrap_or(&text[stop..]);
        return format!("{}{section}{rest}", &text[..start]);
    }
    format!(
        "{}\n{section}",
        text.trim_end_matches('\n').to_owned() + "\n"
    )
}

fn today() -> String {
    jiff::Zoned::now().strftime("%Y-%m-%d").to_string()
}

fn cores() -> usize {
    std::thread::available_parallelism().map_or(0, |n| n.get())
}

fn memory_gib() -> String {
    let kib: f64 = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|text| {
            text.lines()
                .find_map(|line| line.strip_prefix("MemTotal:"))
                .and_then(|value| value.split_whitespace().next()?.parse().ok())
        })
        .unwrap_or(0.0);
    format!("{:.0}", kib / 1024.0 / 1024.0)
}

/// Figures here are far below 2^52, where `f64` is exact.
#[allow(clippy::cast_precision_loss)]
fn lossless(value: i64) -> f64 {
    value as f64
}
