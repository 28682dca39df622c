//! Each feature gate's [`Effect`] checked against the sources: a gate classified as read is
//! referred to (`Feature::<name>`) outside the gate table, and a gate classified as not read is
//! not, so that the start-up warnings about gates without effect cannot drift from the code.

use std::collections::BTreeSet;
use std::fs;
use std::path::Path;

use common::sources::rust_files;
use kuota::config::{Effect, Feature};

mod common {
    pub mod sources;
}

/// The gate table, whose own mentions of the gates do not count.
const TABLE: &str = "src/config/feature_gates.rs";

/// The gates named as `Feature::<name>` in the crate's sources, the table aside.
fn referenced(root: &Path) -> BTreeSet<String> {
    let mut files = Vec::new();
    rust_files(&root.join("src"), &mut files);
    let mut names = BTreeSet::new();
    for path in files {
        if path.strip_prefix(root).expect("under the root") == Path::new(TABLE) {
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
    names
}

#[test]
fn gates_classified_as_read_are_read_and_the_others_are_not() {
    let names = referenced(Path::new(env!("CARGO_MANIFEST_DIR")));
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
