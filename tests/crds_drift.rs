//! The committed CRD manifests must be exactly what the Rust types generate.
//!
//! Regenerate them with `cargo run -- crds --out manifests/crds`, or with
//! `KUOTA_UPDATE_CRDS=1 cargo test --test crds_drift`.

use std::path::Path;

use kuota::api::crds;

#[test]
fn committed_crds_match_the_types() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("manifests/crds");
    if std::env::var_os("KUOTA_UPDATE_CRDS").is_some_and(|v| v == "1") {
        crds::write_all(&dir).expect("write manifests/crds");
    }
    let all = crds::all();
    let generated: Vec<String> = all
        .iter()
        .map(|crd| crds::file_name(&crd.spec.names.plural))
        .collect();
    let mut drifted = Vec::new();
    for (crd, name) in all.iter().zip(&generated) {
        let expected = crds::render_yaml(crd).expect("render CRD");
        match std::fs::read_to_string(dir.join(name)) {
            Ok(committed) if committed == expected => {}
            Ok(_) => drifted.push(format!("{name} differs")),
            Err(error) => drifted.push(format!("{name}: {error}")),
        }
    }
    let mut extra: Vec<_> = std::fs::read_dir(&dir)
        .map(|entries| {
            entries
                .filter_map(|e| e.ok()?.file_name().into_string().ok())
                .filter(|name| name.ends_with(".yaml") && !generated.contains(name))
                .collect()
        })
        .unwrap_or_default();
    extra.sort();
    drifted.extend(
        extra
            .into_iter()
            .map(|name| format!("{name} is not generated from any type")),
    );
    assert!(
        drifted.is_empty(),
        "manifests/crds is out of date with src/api ({}); run `cargo run -- crds --out manifests/crds` \
         (or `KUOTA_UPDATE_CRDS=1 cargo test --test crds_drift`) and commit the result",
        drifted.join(", ")
    );
}
