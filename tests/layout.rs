//! The import rules of ARCHITECTURE.md, checked on the sources: each room of `src/` refers only
//! to the rooms it may import (test code aside, which may use `testing`). The quota core needs no
//! such check: it is a crate of its own, so the compiler refuses any import from Kuota.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::Path;

use common::sources::rust_files;

mod common {
    pub mod sources;
}

/// The rooms each room may refer to as `crate::<room>`, besides itself.
fn allowed() -> BTreeMap<&'static str, &'static [&'static str]> {
    BTreeMap::from([
        ("k8s", &[][..]),
        ("api", &["k8s"][..]),
        ("jobs", &["api", "k8s"][..]),
        ("config", &["api", "jobs", "k8s"][..]),
        ("quota", &["api", "config", "jobs", "k8s"][..]),
        ("stores", &["api", "k8s", "quota"][..]),
        ("metrics", &["api", "k8s"][..]),
        ("tls", &["api", "k8s", "metrics"][..]),
        ("webhook", &["k8s", "metrics", "tls"][..]),
        (
            "admission",
            &["api", "config", "jobs", "k8s", "quota", "stores", "webhook"][..],
        ),
        (
            "admitter",
            &["api", "config", "jobs", "k8s", "metrics", "quota", "stores"][..],
        ),
        (
            "visibility",
            &[
                "admitter", "api", "config", "jobs", "k8s", "quota", "stores", "tls", "webhook",
            ][..],
        ),
    ])
}

/// The room a source file belongs to: its top-level module under `src/`.
fn room(relative: &Path) -> Option<String> {
    let first = relative.components().next()?.as_os_str().to_str()?;
    Some(first.trim_end_matches(".rs").to_owned())
}

/// Code of a file that ships: everything before its `#[cfg(test)]` module; nothing for test
/// files.
fn shipped_code(path: &Path, text: &str) -> String {
    let is_test_file = path.file_name().is_some_and(|name| name == "tests.rs")
        || path.components().any(|part| part.as_os_str() == "tests");
    if is_test_file {
        return String::new();
    }
    text.split("\n#[cfg(test)]")
        .next()
        .unwrap_or_default()
        .to_owned()
}

/// The top-level modules named right after a `crate::`: one, or each of a `{a::.., b::..}` group.
fn referenced_rooms(after: &str) -> Vec<String> {
    let identifier = |text: &str| -> String {
        text.trim_start()
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect()
    };
    let Some(group) = after.strip_prefix('{') else {
        return vec![identifier(after)];
    };
    let mut rooms = Vec::new();
    let mut depth = 0usize;
    let mut start = 0;
    for (index, c) in group.char_indices() {
        match c {
            '{' => depth += 1,
            '}' if depth == 0 => {
                rooms.push(identifier(&group[start..index]));
                break;
            }
            '}' => depth -= 1,
            ',' if depth == 0 => {
                rooms.push(identifier(&group[start..index]));
                start = index + 1;
            }
            _ => {}
        }
    }
    rooms.retain(|room| !room.is_empty());
    rooms
}

#[test]
fn rooms_import_only_what_architecture_md_allows() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let allowed = allowed();
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let mut violations = BTreeSet::new();
    for path in files {
        let relative = path.strip_prefix(&src).expect("under src");
        let Some(from) = room(relative) else { continue };
        let Some(may) = allowed.get(from.as_str()) else {
            continue;
        };
        let text = fs::read_to_string(&path).expect("readable source");
        let code = shipped_code(relative, &text);
        for (index, _) in code.match_indices("crate::") {
            for target in referenced_rooms(&code[index + "crate::".len()..]) {
                if target != from && !may.contains(&target.as_str()) {
                    violations.insert(format!("{} -> crate::{target}", relative.display()));
                }
            }
        }
    }
    assert_eq!(violations, BTreeSet::new());
}
