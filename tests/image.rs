//! The container image, checked without a container engine:
//! - the `Dockerfile` builds: every COPY source exists, and the context its build stage copies
//!   loads as the workspace with `--locked`, has the same targets for what the build compiles, and
//!   holds every file those sources include at compile time;
//! - its build stage runs the cargo command of `dev/image/build.sh`, and its final stage is that
//!   static binary alone;
//! - the image `dev/image/build.sh` writes has the Dockerfile's user, entrypoint, command, ports
//!   and labels, and its one layer is that binary, which runs.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

use pretty_assertions::assert_eq;
use serde_json::Value;

/// The one command that builds the binary, in the Dockerfile and in `dev/image/build.sh`.
const CARGO_BUILD: &str =
    "cargo build --release --locked --bin kuota --target x86_64-unknown-linux-musl";

/// The name `dev/image/build.sh` gives the image in containerd.
const IMAGE_NAME: &str = "docker.io/library/kuota:dev";

/// The `--target` of [`CARGO_BUILD`].
fn cargo_target() -> &'static str {
    CARGO_BUILD
        .split_once("--target ")
        .and_then(|(_, rest)| rest.split_whitespace().next())
        .expect("CARGO_BUILD names a --target")
}

fn repo(relative: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(relative)
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|error| panic!("{}: {error}", path.display()))
}

/// Runs `command`, failing with its stderr unless it succeeds; returns its stdout.
fn run(command: &mut Command) -> String {
    let output = command
        .output()
        .unwrap_or_else(|error| panic!("{command:?}: {error}"));
    assert!(
        output.status.success(),
        "{command:?} failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).expect("UTF-8 output")
}

/// One instruction of the Dockerfile, continuation lines joined.
struct Instruction {
    keyword: String,
    arguments: String,
}

struct Stage {
    base: String,
    name: Option<String>,
    instructions: Vec<Instruction>,
}

/// A COPY instruction: `--from` and the sources and destination as Docker reads them.
struct Copy {
    from: Option<String>,
    sources: Vec<String>,
    destination: String,
}

impl Stage {
    fn arguments<'a>(&'a self, keyword: &str) -> impl Iterator<Item = &'a str> + use<'a> {
        let keyword = keyword.to_owned();
        self.instructions
            .iter()
            .filter(move |instruction| instruction.keyword == keyword)
            .map(|instruction| instruction.arguments.as_str())
    }

    fn only(&self, keyword: &str) -> &str {
        let all: Vec<&str> = self.arguments(keyword).collect();
        assert_eq!(
            all.len(),
            1,
            "{keyword} instructions of stage {:?}",
            self.name
        );
        all[0]
    }

    fn copies(&self) -> Vec<Copy> {
        self.arguments("COPY").map(parse_copy).collect()
    }

    /// An exec-form (JSON) ENTRYPOINT or CMD: the shell form would need a shell in the image.
    fn exec_form(&self, keyword: &str) -> Vec<String> {
        let arguments = self.only(keyword);
        serde_json::from_str(arguments)
            .unwrap_or_else(|error| panic!("{keyword} {arguments} is not in exec form: {error}"))
    }
}

fn dockerfile() -> Vec<Stage> {
    let text = read(&repo("Dockerfile"));
    let mut lines = Vec::new();
    let mut continued = String::new();
    for line in text.lines().map(str::trim) {
        // Docker drops comment lines, also between the lines of a continued instruction.
        if line.starts_with('#') || (continued.is_empty() && line.is_empty()) {
            continue;
        }
        match line.strip_suffix('\\') {
            Some(part) => {
                continued.push_str(part.trim());
                continued.push(' ');
            }
            None => {
                continued.push_str(line);
                lines.push(std::mem::take(&mut continued));
            }
        }
    }
    assert!(
        continued.is_empty(),
        "the Dockerfile ends in a continued line"
    );

    let mut stages: Vec<Stage> = Vec::new();
    for line in lines {
        let (keyword, arguments) = line
            .split_once(char::is_whitespace)
            .unwrap_or_else(|| panic!("{line}: an instruction without arguments"));
        let (keyword, arguments) = (keyword.to_ascii_uppercase(), arguments.trim().to_owned());
        if keyword == "FROM" {
            let (base, name) = match arguments.split_whitespace().collect::<Vec<_>>()[..] {
                [base] => (base, None),
                [base, as_, name] if as_.eq_ignore_ascii_case("as") => (base, Some(name)),
                _ => panic!("FROM {arguments}: expected IMAGE [AS NAME]"),
            };
            stages.push(Stage {
                base: base.to_owned(),
                name: name.map(str::to_owned),
                instructions: Vec::new(),
            });
        } else {
            stages
                .last_mut()
                .unwrap_or_else(|| panic!("{keyword} before the first FROM"))
                .instructions
                .push(Instruction { keyword, arguments });
        }
    }
    stages
}

/// Splits on whitespace outside double quotes and drops the quotes, as Docker reads COPY and
/// LABEL arguments.
fn words(arguments: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut word = String::new();
    let (mut quoted, mut in_word) = (false, false);
    let mut characters = arguments.chars();
    while let Some(character) = characters.next() {
        match character {
            '"' => {
                quoted = !quoted;
                in_word = true;
            }
            '\\' if quoted => word.extend(characters.next()),
            character if character.is_whitespace() && !quoted => {
                if in_word {
                    words.push(std::mem::take(&mut word));
                    in_word = false;
                }
            }
            character => {
                word.push(character);
                in_word = true;
            }
        }
    }
    assert!(!quoted, "unclosed quote in {arguments}");
    if in_word {
        words.push(word);
    }
    words
}

fn parse_copy(arguments: &str) -> Copy {
    assert!(
        !arguments.starts_with('['),
        "COPY {arguments}: only the plain form is read here"
    );
    let mut from = None;
    let mut paths = Vec::new();
    for word in words(arguments) {
        match word.strip_prefix("--") {
            Some(flag) => match flag.strip_prefix("from=") {
                Some(stage) => from = Some(stage.to_owned()),
                None => panic!("COPY {arguments}: --{flag} is not read here"),
            },
            None => paths.push(word),
        }
    }
    let destination = paths
        .pop()
        .unwrap_or_else(|| panic!("COPY {arguments}: no destination"));
    assert!(!paths.is_empty(), "COPY {arguments}: no source");
    Copy {
        from,
        sources: paths,
        destination,
    }
}

/// The final stage and the stage it copies the binary from.
fn stages() -> (Stage, Stage) {
    let mut stages = dockerfile();
    let last = stages.pop().expect("a stage");
    let copies = last.copies();
    let from = copies
        .iter()
        .find_map(|copy| copy.from.clone())
        .expect("the final stage copies from a build stage");
    let build = stages
        .into_iter()
        .find(|stage| stage.name.as_deref() == Some(from.as_str()))
        .unwrap_or_else(|| panic!("no stage named {from}"));
    (build, last)
}

/// What the image runs with, as the Dockerfile's final stage or the image's config says it.
#[derive(Debug, PartialEq, Eq)]
struct RuntimeConfig {
    user: String,
    entrypoint: Vec<String>,
    cmd: Vec<String>,
    ports: BTreeSet<String>,
    labels: BTreeMap<String, String>,
}

fn dockerfile_runtime_config(last: &Stage) -> RuntimeConfig {
    let mut labels = BTreeMap::new();
    for arguments in last.arguments("LABEL") {
        for word in words(arguments) {
            let (key, value) = word
                .split_once('=')
                .unwrap_or_else(|| panic!("LABEL {arguments}: {word} is not KEY=VALUE"));
            labels.insert(key.to_owned(), value.to_owned());
        }
    }
    let ports = last
        .arguments("EXPOSE")
        .flat_map(str::split_whitespace)
        .map(|port| {
            if port.contains('/') {
                port.to_owned()
            } else {
                format!("{port}/tcp")
            }
        })
        .collect();
    RuntimeConfig {
        user: last.only("USER").to_owned(),
        entrypoint: last.exec_form("ENTRYPOINT"),
        cmd: last.exec_form("CMD"),
        ports,
        labels,
    }
}

fn image_runtime_config(config: &Value) -> RuntimeConfig {
    let strings = |key: &str| -> Vec<String> {
        config[key]
            .as_array()
            .map(|values| {
                values
                    .iter()
                    .map(|value| value.as_str().expect("a string").to_owned())
                    .collect()
            })
            .unwrap_or_default()
    };
    let keys = |key: &str| -> Vec<(String, String)> {
        config[key]
            .as_object()
            .map(|object| {
                object
                    .iter()
                    .map(|(key, value)| (key.clone(), value.as_str().unwrap_or("").to_owned()))
                    .collect()
            })
            .unwrap_or_default()
    };
    RuntimeConfig {
        user: config["User"].as_str().unwrap_or("").to_owned(),
        entrypoint: strings("Entrypoint"),
        cmd: strings("Cmd"),
        ports: keys("ExposedPorts")
            .into_iter()
            .map(|(port, _)| port)
            .collect(),
        labels: keys("Labels").into_iter().collect(),
    }
}

/// Copies `source` as Docker's COPY does: a directory's contents into `destination`, a file to
/// `destination` or, when that names a directory, into it.
fn copy_into(source: &Path, destination: &Path, into_directory: bool) {
    if source.is_dir() {
        std::fs::create_dir_all(destination).unwrap();
        for entry in std::fs::read_dir(source).unwrap() {
            let entry = entry.unwrap();
            copy_into(&entry.path(), &destination.join(entry.file_name()), false);
        }
    } else {
        let target = if into_directory {
            destination.join(source.file_name().unwrap())
        } else {
            destination.to_path_buf()
        };
        std::fs::create_dir_all(target.parent().unwrap()).unwrap();
        std::fs::copy(source, &target)
            .unwrap_or_else(|error| panic!("copy {}: {error}", source.display()));
    }
}

fn cargo(workspace: &Path, arguments: &[&str]) -> String {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    run(Command::new(cargo)
        .args(arguments)
        .arg("--manifest-path")
        .arg(workspace.join("Cargo.toml")))
}

fn cargo_metadata(workspace: &Path) -> Value {
    let output = cargo(
        workspace,
        &["metadata", "--format-version", "1", "--locked"],
    );
    serde_json::from_str(&output).expect("cargo metadata prints JSON")
}

/// A target as (kinds, name, source path relative to its package, whether that source exists).
type Target = (String, String, PathBuf, bool);

/// The targets other than tests, benches and examples of kuota and of the path packages it
/// builds with (normal and build dependencies), by package name.
fn compiled_targets(metadata: &Value) -> BTreeMap<String, BTreeSet<Target>> {
    let packages = metadata["packages"].as_array().expect("packages");
    let directory = |package: &Value| {
        Path::new(package["manifest_path"].as_str().unwrap())
            .parent()
            .unwrap()
            .to_path_buf()
    };
    let mut compiled = BTreeMap::new();
    let mut pending = vec![
        packages
            .iter()
            .find(|package| package["name"] == "kuota")
            .expect("the kuota package"),
    ];
    while let Some(package) = pending.pop() {
        let name = package["name"].as_str().unwrap().to_owned();
        if compiled.contains_key(&name) {
            continue;
        }
        let root = directory(package);
        let targets = package["targets"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|target| {
                let kinds: Vec<&str> = target["kind"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|kind| kind.as_str().unwrap())
                    .collect();
                if kinds
                    .iter()
                    .any(|kind| ["test", "bench", "example"].contains(kind))
                {
                    return None;
                }
                let source = Path::new(target["src_path"].as_str().unwrap());
                Some((
                    kinds.join(","),
                    target["name"].as_str().unwrap().to_owned(),
                    source.strip_prefix(&root).unwrap_or(source).to_path_buf(),
                    source.exists(),
                ))
            })
            .collect();
        compiled.insert(name, targets);
        for dependency in package["dependencies"].as_array().unwrap() {
            let (Some(path), false) = (dependency["path"].as_str(), dependency["kind"] == "dev")
            else {
                continue;
            };
            pending.push(
                packages
                    .iter()
                    .find(|package| directory(package) == Path::new(path))
                    .unwrap_or_else(|| panic!("no package at {path}")),
            );
        }
    }
    compiled
}

/// Files named by `include_str!` or `include_bytes!` in the Rust sources under `directory` that
/// do not exist.
fn missing_includes(directory: &Path) -> Vec<PathBuf> {
    let mut missing = Vec::new();
    for entry in std::fs::read_dir(directory).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            missing.extend(missing_includes(&path));
        } else if path.extension().is_some_and(|extension| extension == "rs") {
            let source = read(&path);
            for marker in ["include_str!(\"", "include_bytes!(\""] {
                for (start, _) in source.match_indices(marker) {
                    let rest = &source[start + marker.len()..];
                    let included = path
                        .parent()
                        .unwrap()
                        .join(&rest[..rest.find('"').unwrap()]);
                    if !included.exists() {
                        missing.push(included);
                    }
                }
            }
        }
    }
    missing
}

#[test]
fn every_copy_source_exists() {
    let mut missing = Vec::new();
    for stage in dockerfile() {
        for copy in stage
            .copies()
            .into_iter()
            .filter(|copy| copy.from.is_none())
        {
            for source in copy.sources {
                assert!(
                    !source.contains(['*', '?', '[']),
                    "COPY {source}: name files exactly"
                );
                if !repo(&source).exists() {
                    missing.push(source);
                }
            }
        }
    }
    assert_eq!(missing, Vec::<String>::new());
}

#[test]
fn the_build_stage_copies_what_the_build_needs() {
    let (build, _) = stages();
    let workdir = Path::new(build.only("WORKDIR"));
    assert!(workdir.is_absolute(), "WORKDIR {}", workdir.display());
    let workdir_at = build
        .instructions
        .iter()
        .position(|instruction| instruction.keyword == "WORKDIR")
        .unwrap();
    let first_copy_at = build
        .instructions
        .iter()
        .position(|instruction| instruction.keyword == "COPY")
        .expect("the build stage copies the sources");
    assert!(workdir_at < first_copy_at, "WORKDIR comes before the COPYs");

    let context = tempfile::tempdir().unwrap();
    for copy in build.copies() {
        assert_eq!(
            copy.from, None,
            "the build stage copies from the repository only"
        );
        let relative = Path::new(&copy.destination);
        let relative = relative.strip_prefix(workdir).unwrap_or(relative);
        assert!(
            relative.is_relative() && !relative.starts_with(".."),
            "COPY into {} lands outside WORKDIR",
            copy.destination
        );
        let destination = context.path().join(relative);
        let into_directory = copy.destination.ends_with('/') || copy.sources.len() > 1;
        for source in &copy.sources {
            copy_into(&repo(source), &destination, into_directory);
        }
    }

    // Before it builds, cargo reads every member and declared target, and checks the lock file;
    // `cargo metadata` alone passes over a missing [[bench]] file.
    let target = cargo_target();
    cargo(context.path(), &["fetch", "--locked", "--target", target]);
    let in_context = compiled_targets(&cargo_metadata(context.path()));
    let in_repository = compiled_targets(&cargo_metadata(&repo("")));
    let binary = ("bin".into(), "kuota".into(), "src/main.rs".into(), true);
    assert!(
        in_repository["kuota"].contains(&binary),
        "{in_repository:?}"
    );
    assert_eq!(in_context, in_repository);
    assert_eq!(missing_includes(context.path()), Vec::<PathBuf>::new());
}

#[test]
fn the_dockerfile_and_build_sh_run_one_cargo_command() {
    let (build, _) = stages();
    let in_dockerfile: Vec<&str> = build
        .arguments("RUN")
        .flat_map(|command| command.split("&&"))
        .map(str::trim)
        .filter(|command| command.starts_with("cargo "))
        .collect();
    assert_eq!(in_dockerfile, [CARGO_BUILD]);

    let script = read(&repo("dev/image/build.sh"));
    let in_script: Vec<&str> = script
        .lines()
        .map(str::trim)
        .filter(|line| line.starts_with("cargo build"))
        .collect();
    assert_eq!(in_script, [CARGO_BUILD]);
}

#[test]
fn the_final_stage_is_the_static_binary_alone() {
    let (build, last) = stages();
    assert_eq!(last.base, "scratch");
    let keywords: BTreeSet<&str> = last
        .instructions
        .iter()
        .map(|instruction| instruction.keyword.as_str())
        .collect();
    assert_eq!(
        keywords,
        BTreeSet::from(["CMD", "COPY", "ENTRYPOINT", "EXPOSE", "LABEL", "USER"])
    );
    let target = cargo_target();
    let copies = last.copies();
    assert_eq!(copies.len(), 1, "the final stage copies the binary only");
    assert_eq!(copies[0].from.as_deref(), build.name.as_deref());
    assert_eq!(
        copies[0].sources,
        [format!(
            "{}/target/{target}/release/kuota",
            build.only("WORKDIR")
        )]
    );
    assert_eq!(copies[0].destination, "/kuota");
}

/// The blob `digest` of the OCI layout in `layout`.
fn blob(layout: &Path, digest: &Value) -> PathBuf {
    let digest = digest.as_str().expect("a digest");
    let (algorithm, hex) = digest.split_once(':').expect("ALGORITHM:HEX");
    layout.join("blobs").join(algorithm).join(hex)
}

fn json_blob(layout: &Path, digest: &Value) -> Value {
    serde_json::from_str(&read(&blob(layout, digest))).expect("a JSON blob")
}

/// Whether the ELF executable at `path` names a program interpreter (a dynamic loader).
fn needs_a_loader(path: &Path) -> bool {
    let elf = std::fs::read(path).unwrap();
    assert_eq!(&elf[..5], b"\x7fELF\x02", "a 64-bit ELF file");
    assert_eq!(elf[5], 1, "little-endian");
    let u16_at = |at: usize| usize::from(u16::from_le_bytes([elf[at], elf[at + 1]]));
    let header_offset = usize::try_from(u64::from_le_bytes(elf[0x20..0x28].try_into().unwrap()))
        .expect("an offset in the file");
    let (header_size, headers) = (u16_at(0x36), u16_at(0x38));
    const PT_INTERP: u32 = 3;
    (0..headers).any(|index| {
        let at = header_offset + index * header_size;
        u32::from_le_bytes(elf[at..at + 4].try_into().unwrap()) == PT_INTERP
    })
}

#[test]
fn build_sh_writes_the_dockerfiles_image() {
    let (_, last) = stages();
    let expected = dockerfile_runtime_config(&last);
    assert_eq!(expected.user, "65532:65532");
    assert_eq!(expected.entrypoint, ["/kuota"]);
    assert_eq!(expected.cmd, ["serve"]);
    assert_eq!(
        expected.ports,
        BTreeSet::from(["8081/tcp", "8082/tcp", "8443/tcp", "9443/tcp"].map(String::from))
    );

    let tarball = run(Command::new("bash").arg(repo("dev/image/build.sh")));
    let layout = tempfile::tempdir().unwrap();
    run(Command::new("tar")
        .arg("--extract")
        .arg("--file")
        .arg(tarball.trim())
        .arg("--directory")
        .arg(layout.path()));
    let index: Value = serde_json::from_str(&read(&layout.path().join("index.json"))).unwrap();
    let manifests = index["manifests"].as_array().expect("manifests");
    assert_eq!(manifests.len(), 1, "{index}");
    let entry = &manifests[0];
    assert_eq!(entry["annotations"]["io.containerd.image.name"], IMAGE_NAME);
    assert_eq!(
        entry["annotations"]["org.opencontainers.image.ref.name"],
        "dev"
    );
    assert_eq!(entry["platform"]["os"], "linux");
    assert_eq!(entry["platform"]["architecture"], "amd64");

    let manifest = json_blob(layout.path(), &entry["digest"]);
    assert_eq!(
        manifest["mediaType"],
        "application/vnd.oci.image.manifest.v1+json"
    );
    let config = json_blob(layout.path(), &manifest["config"]["digest"]);
    assert_eq!(config["os"], "linux");
    assert_eq!(config["architecture"], "amd64");
    assert_eq!(image_runtime_config(&config["config"]), expected);

    let layers = manifest["layers"].as_array().expect("layers");
    assert_eq!(layers.len(), 1, "{manifest}");
    let layer = blob(layout.path(), &layers[0]["digest"]);
    let listing = run(Command::new("tar")
        .arg("--list")
        .arg("--verbose")
        .arg("--gzip")
        .arg("--file")
        .arg(&layer));
    let entries: Vec<Vec<&str>> = listing
        .lines()
        .map(|line| line.split_whitespace().collect())
        .collect();
    assert_eq!(entries.len(), 1, "{listing}");
    assert_eq!(
        (entries[0][0], entries[0][1], entries[0].last().copied()),
        ("-rwxr-xr-x", "0/0", Some("kuota")),
        "the layer is the binary alone, owned by root and not writable by the user: {listing}"
    );

    let rootfs = tempfile::tempdir().unwrap();
    run(Command::new("tar")
        .arg("--extract")
        .arg("--gzip")
        .arg("--file")
        .arg(&layer)
        .arg("--directory")
        .arg(rootfs.path()));
    let binary = rootfs.path().join("kuota");
    assert!(
        !needs_a_loader(&binary),
        "the image has no loader: the binary must be static"
    );
    assert_eq!(
        run(Command::new(&binary).arg("version")),
        format!("kuota {}\n", env!("CARGO_PKG_VERSION"))
    );
}
