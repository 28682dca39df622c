//! Kuota's CRDs against Kueue's own, read from the pinned Kueue release in the Go module cache
//! (`dev/kueue/module.sh`): for every CRD its group, names, scope, versions (served, storage,
//! deprecation), printer columns, status subresource and the fields required at the root.
//! Every difference must be fixed or listed, with its reason, in
//! `dev/kueue/deliberate-differences.tsv`; a listed difference that no longer exists fails too.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::{
    CustomResourceDefinition, CustomResourceDefinitionVersion,
};
use pretty_assertions::assert_eq;

/// The pinned Kueue release's directory, fetched through the Go module proxy when missing.
fn kueue_module() -> PathBuf {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("dev/kueue/module.sh");
    let output = Command::new("bash")
        .arg(&script)
        .output()
        .expect("run dev/kueue/module.sh");
    assert!(
        output.status.success(),
        "dev/kueue/module.sh failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    PathBuf::from(String::from_utf8_lossy(&output.stdout).trim())
}

fn kueue_crds() -> BTreeMap<String, CustomResourceDefinition> {
    let dir = kueue_module().join("config/components/crd/bases");
    let mut crds = BTreeMap::new();
    for entry in std::fs::read_dir(&dir).expect("Kueue's CRD bases") {
        let path = entry.expect("dir entry").path();
        let text = std::fs::read_to_string(&path).expect("readable CRD");
        let crd: CustomResourceDefinition =
            serde_yaml::from_str(&text).unwrap_or_else(|error| panic!("{path:?}: {error}"));
        crds.insert(crd.spec.names.plural.clone(), crd);
    }
    crds
}

/// One comparable fact about a CRD version (or the CRD itself, version `*`).
fn facts(crd: &CustomResourceDefinition) -> BTreeMap<(String, String), String> {
    let names = &crd.spec.names;
    let mut facts = BTreeMap::from([
        (("*".to_owned(), "group".to_owned()), crd.spec.group.clone()),
        (("*".to_owned(), "kind".to_owned()), names.kind.clone()),
        (
            ("*".to_owned(), "singular".to_owned()),
            format!("{:?}", names.singular),
        ),
        (
            ("*".to_owned(), "listKind".to_owned()),
            format!("{:?}", names.list_kind),
        ),
        (
            ("*".to_owned(), "shortNames".to_owned()),
            format!("{:?}", names.short_names),
        ),
        (
            ("*".to_owned(), "categories".to_owned()),
            format!("{:?}", names.categories),
        ),
        (("*".to_owned(), "scope".to_owned()), crd.spec.scope.clone()),
        (
            ("*".to_owned(), "versions".to_owned()),
            format!(
                "{:?}",
                crd.spec
                    .versions
                    .iter()
                    .map(|v| &v.name)
                    .collect::<BTreeSet<_>>()
            ),
        ),
    ]);
    for version in &crd.spec.versions {
        let key = |aspect: &str| (version.name.clone(), aspect.to_owned());
        facts.insert(
            key("served/storage"),
            format!("{}/{}", version.served, version.storage),
        );
        facts.insert(
            key("deprecation"),
            format!("{:?} {:?}", version.deprecated, version.deprecation_warning),
        );
        facts.insert(key("printerColumns"), columns(version));
        facts.insert(
            key("statusSubresource"),
            version
                .subresources
                .as_ref()
                .is_some_and(|s| s.status.is_some())
                .to_string(),
        );
        let required = version
            .schema
            .as_ref()
            .and_then(|s| s.open_api_v3_schema.as_ref())
            .and_then(|s| s.required.clone())
            .unwrap_or_default();
        facts.insert(key("rootRequired"), format!("{required:?}"));
    }
    facts
}

fn columns(version: &CustomResourceDefinitionVersion) -> String {
    let columns: Vec<String> = version
        .additional_printer_columns
        .iter()
        .flatten()
        .map(|c| {
            format!(
                "{} {} {} {}",
                c.name,
                c.type_,
                c.json_path,
                c.priority.unwrap_or(0)
            )
        })
        .collect();
    columns.join("; ")
}

/// `(plural, version, aspect)` of each listed difference.
fn deliberate_differences() -> BTreeSet<(String, String, String)> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("dev/kueue/deliberate-differences.tsv");
    let text = std::fs::read_to_string(&path).expect("the table of deliberate differences");
    text.lines()
        .filter(|line| !line.starts_with('#') && !line.trim().is_empty())
        .map(|line| {
            let fields: Vec<&str> = line.split('\t').collect();
            assert_eq!(fields.len(), 4, "four tab-separated fields: {line:?}");
            assert!(!fields[3].trim().is_empty(), "a reason: {line:?}");
            (
                fields[0].to_owned(),
                fields[1].to_owned(),
                fields[2].to_owned(),
            )
        })
        .collect()
}

#[test]
fn crds_match_kueues_or_differ_only_as_listed() {
    let theirs = kueue_crds();
    let ours: BTreeMap<String, CustomResourceDefinition> = kuota::api::crds::all()
        .into_iter()
        .map(|crd| (crd.spec.names.plural.clone(), crd))
        .collect();
    assert_eq!(
        ours.keys().collect::<Vec<_>>(),
        theirs.keys().collect::<Vec<_>>(),
        "the same CRDs"
    );
    let mut found = BTreeMap::new();
    for (plural, kueue) in &theirs {
        let (kueue_facts, our_facts) = (facts(kueue), facts(&ours[plural]));
        for (key, value) in &kueue_facts {
            let ours = our_facts.get(key).cloned().unwrap_or_default();
            if &ours != value {
                found.insert(
                    (plural.clone(), key.0.clone(), key.1.clone()),
                    format!("Kueue: {value}; Kuota: {ours}"),
                );
            }
        }
    }
    let listed = deliberate_differences();
    let unlisted: BTreeMap<_, _> = found
        .iter()
        .filter(|(key, _)| !listed.contains(*key))
        .collect();
    assert_eq!(
        unlisted,
        BTreeMap::new(),
        "differences from Kueue not listed"
    );
    let stale: BTreeSet<_> = listed
        .iter()
        .filter(|key| !found.contains_key(*key))
        .collect();
    assert_eq!(stale, BTreeSet::new(), "listed differences that are gone");
}
