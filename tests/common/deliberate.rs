//! The committed tables of deliberate differences from Kueue (`dev/kueue/deliberate-*.tsv`):
//! tab-separated rows of key fields and a reason; `#` starts a comment line.

use std::path::Path;

/// The rows of `table` (a path from the repository root): the first `keys` fields of each row,
/// which must also give a non-empty reason after them.
pub fn listed(table: &str, keys: usize) -> Vec<Vec<String>> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(table);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|error| panic!("{table}: {error}"));
    text.lines()
        .filter(|line| !line.starts_with('#') && !line.trim().is_empty())
        .map(|line| {
            let fields: Vec<&str> = line.split('\t').collect();
            assert_eq!(fields.len(), keys + 1, "{table}: fields of {line:?}");
            assert!(
                !fields[keys].trim().is_empty(),
                "{table}: a reason: {line:?}"
            );
            fields[..keys]
                .iter()
                .map(|field| field.to_string())
                .collect()
        })
        .collect()
}
