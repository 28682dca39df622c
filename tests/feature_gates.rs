//! Each feature gate's [`Effect`] checked against the sources: a gate classified as read is
//! referred to (`Feature::<name>`) outside the gate table, and a gate classified as not read is
//! not, so that the start-up warnings about gates without effect cannot drift from the code.

use std::collections::BTreeSet;
use std::fs;
use std::path::Path;

use kuota::config::{Effect, Feature};

const TABLE: &str = "src/config/feature_gates.rs";

/// The gates named as `Feature::<name>` in the Rust sources under `dir`, the table aside.
fn referenced(dir: &Path, root: &Path, names: &mut BTreeSet<String>) {
    for entry in fs::read_dir(dir).expect("source directory reads") {
        let path = entry.expect("directory entry").path();
        if path.is_dir() {
            referenced(&path, root, names);
            continue;
        }
        if path.extension().is_none_or(|extension| extension != "rs")
            || path.strip_prefix(root).expect("under the root") == Path::new(TABLE)
        {
            continue;
        }
        let text = fs::read_to_string(&path).expect("source reads");
        for (at, _) in text.match_indices("Feature::") {
            let name: String = text[at + "Feature::".len()..]
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric())
                .collect();
            names.insert(name);
        }
    }
}

#[test]
fn gates_classified_as_read_are_read_and_the_others_are_not() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut names = BTreeSet::new();
    referenced(&root.join("src"), root, &mut names);
    let unread: Vec<&str> = Feature::ALL
        .iter()
        .filter(|feature| feature.effect() == Effect::Read && !names.contains(feature.name()))
        .map(|feature| feature.name())
        .collect();
    assert_eq!(unread, Vec::<&str>::new(), "classified as read, never read");
    let read: Vec<&str> = Feature::ALL
        .iter()
        .filter(|feature| feature.effect() == Effect::NotRead && names.contains(feature.name()))
        .map(|feature| feature.name())
        .collect();
    assert_eq!(read, Vec::<&str>::new(), "classified as not read, but read");
}
