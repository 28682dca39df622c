//! Kuota against Kueue's own files, read from the pinned Kueue release in the Go module cache
//! (`dev/kueue/module.sh`):
//! - every CRD: group, names, scope, versions (served, storage, deprecation), printer columns,
//!   status subresource, and every field of every version's schema: type, required, default,
//!   enum, format, bounds, pattern, nullability, CEL rules with their messages and the
//!   `x-kubernetes-*` markers;
//! - every webhook of Kueue's webhook manifests: path, rules, failure policy, side effects,
//!   admission review versions.
//!
//! Every difference must be fixed or listed, with its reason, in
//! `dev/kueue/deliberate-differences.tsv`; a listed difference that no longer exists fails too.
//! A row whose field path ends in `**` covers that field and everything under it.

mod common {
    pub mod deliberate;
    pub mod dev_tools;
}

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::api::admissionregistration::v1::WebhookClientConfig;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::{
    CustomResourceDefinition, CustomResourceDefinitionVersion,
};
use kuota::admission::table::{mutating_configuration, validating_configuration};
use kuota::k8s::yaml;
use pretty_assertions::assert_eq;
use serde_json::Value;

use common::deliberate::listed;
use common::dev_tools::dev_script;

fn kueue_crds() -> BTreeMap<String, CustomResourceDefinition> {
    let dir = dev_script("dev/kueue/module.sh", &[]).join("config/components/crd/bases");
    let mut crds = BTreeMap::new();
    for entry in std::fs::read_dir(&dir).expect("Kueue's CRD bases") {
        let path = entry.expect("dir entry").path();
        let text = std::fs::read_to_string(&path).expect("readable CRD");
        let crd: CustomResourceDefinition =
            yaml::from_str(&text).unwrap_or_else(|error| panic!("{path:?}: {error}"));
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
        if let Some(schema) = version
            .schema
            .as_ref()
            .and_then(|s| s.open_api_v3_schema.as_ref())
        {
            let schema = serde_json::to_value(schema).expect("a schema as JSON");
            let mut fields = BTreeMap::new();
            field_facts(&schema, "", &mut fields);
            for (aspect, value) in fields {
                facts.insert(key(&aspect), value);
            }
        }
    }
    facts
}

/// Schema keywords that decide what the API server accepts, stores or merges; descriptions and
/// the order of properties do not.
const FIELD_KEYWORDS: [&str; 24] = [
    "type",
    "default",
    "enum",
    "format",
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "minLength",
    "maxLength",
    "minItems",
    "maxItems",
    "minProperties",
    "maxProperties",
    "pattern",
    "nullable",
    "anyOf",
    "x-kubernetes-int-or-string",
    "x-kubernetes-preserve-unknown-fields",
    "x-kubernetes-embedded-resource",
    "x-kubernetes-list-type",
    "x-kubernetes-list-map-keys",
    "x-kubernetes-map-type",
    "x-kubernetes-validations",
];

/// CEL rules with the spaces outside string literals removed: they do not change what a rule
/// means, and Kueue's generated rules space operators unevenly.
fn without_cel_spacing(rules: &Value) -> Value {
    let mut rules = rules.clone();
    for rule in rules.as_array_mut().into_iter().flatten() {
        if let Some(text) = rule["rule"].as_str() {
            let mut quote = None;
            let compact: String = text
                .chars()
                .filter(|&c| {
                    match quote {
                        Some(q) if c == q => quote = None,
                        None if c == '\'' || c == '"' => quote = Some(c),
                        _ => {}
                    }
                    quote.is_some() || !c.is_whitespace()
                })
                .collect();
            rule["rule"] = compact.into();
        }
    }
    rules
}

/// One fact per keyword of every field under `schema`, keyed `"<path> <keyword>"` (`.spec.x`,
/// `[]` for list items, `{}` for map values), plus `"<path> field"` for the field's existence
/// and `"<path> required"` for a required field. The root's `metadata`, which the API server
/// validates itself, is not compared below its own node.
fn field_facts(schema: &Value, path: &str, facts: &mut BTreeMap<String, String>) {
    facts.insert(format!("{path} field"), "present".to_owned());
    for keyword in FIELD_KEYWORDS {
        if let Some(value) = schema.get(keyword) {
            let value = if keyword == "x-kubernetes-validations" {
                without_cel_spacing(value)
            } else {
                value.clone()
            };
            facts.insert(format!("{path} {keyword}"), value.to_string());
        }
    }
    if path == ".metadata" {
        return;
    }
    let required: BTreeSet<&str> = schema["required"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    for (name, property) in schema["properties"].as_object().into_iter().flatten() {
        let child = format!("{path}.{name}");
        if required.contains(name.as_str()) {
            facts.insert(format!("{child} required"), "true".to_owned());
        }
        field_facts(property, &child, facts);
    }
    if let Some(items) = schema.get("items") {
        field_facts(items, &format!("{path}[]"), facts);
    }
    if let Some(values) = schema.get("additionalProperties").filter(|v| v.is_object()) {
        field_facts(values, &format!("{path}{{}}"), facts);
    }
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
    listed("dev/kueue/deliberate-differences.tsv", 3)
        .into_iter()
        .map(|row| (row[0].clone(), row[1].clone(), row[2].clone()))
        .collect()
}

/// Whether the listed row `(plural, version, aspect)` covers the found difference `key`: the
/// same, or a field row `"<path>** <keyword>"` (keyword `*` for any) covering `key`'s field.
fn covers(row: &(String, String, String), key: &(String, String, String)) -> bool {
    if row.0 != key.0 || row.1 != key.1 {
        return false;
    }
    if row.2 == key.2 {
        return true;
    }
    let (Some((row_path, row_keyword)), Some((path, keyword))) =
        (row.2.rsplit_once(' '), key.2.rsplit_once(' '))
    else {
        return false;
    };
    row_path
        .strip_suffix("**")
        .is_some_and(|prefix| path.starts_with(prefix))
        && (row_keyword == "*" || row_keyword == keyword)
}

/// Each listed difference that `found` does not have, and each found one that is not listed.
fn check_listed(found: &BTreeMap<(String, String, String), String>, section: &str) {
    let listed: BTreeSet<_> = deliberate_differences()
        .into_iter()
        .filter(|(_, _, aspect)| section_of(aspect) == section)
        .collect();
    let unlisted: BTreeMap<_, _> = found
        .iter()
        .filter(|(key, _)| !listed.iter().any(|row| covers(row, key)))
        .collect();
    assert_eq!(
        unlisted,
        BTreeMap::new(),
        "differences from Kueue not listed"
    );
    let stale: BTreeSet<_> = listed
        .iter()
        .filter(|row| !found.keys().any(|key| covers(row, key)))
        .collect();
    assert_eq!(stale, BTreeSet::new(), "listed differences that are gone");
}

/// Webhook aspects start with `webhook`; the rest are CRD aspects.
fn section_of(aspect: &str) -> &'static str {
    if aspect.starts_with("webhook") {
        "webhooks"
    } else {
        "crds"
    }
}

/// Each webhook of a Mutating- or ValidatingWebhookConfiguration (as JSON: both kinds name
/// these fields alike) by name, with its path, rules, failure policy, side effects and review
/// versions. The path is the Service path, or the path of a URL on `url_prefix`.
fn webhook_facts(configuration: &Value, url_prefix: &str) -> BTreeMap<String, String> {
    let mut facts = BTreeMap::new();
    for webhook in configuration["webhooks"].as_array().into_iter().flatten() {
        let client = &webhook["clientConfig"];
        let path = client["service"]["path"].as_str().or_else(|| {
            client["url"]
                .as_str()
                .and_then(|url| url.strip_prefix(url_prefix))
        });
        facts.insert(
            webhook["name"].as_str().unwrap_or_default().to_owned(),
            format!(
                "path={path:?} rules={} failurePolicy={} sideEffects={} reviewVersions={}",
                webhook["rules"],
                webhook["failurePolicy"],
                webhook["sideEffects"],
                webhook["admissionReviewVersions"]
            ),
        );
    }
    facts
}

fn kueue_webhooks() -> BTreeMap<String, String> {
    let path =
        dev_script("dev/kueue/module.sh", &[]).join("config/components/webhook/manifests.yaml");
    let text = std::fs::read_to_string(&path).expect("Kueue's webhook manifests");
    let mut webhooks = BTreeMap::new();
    for configuration in yaml::documents(&text).expect("YAML documents") {
        webhooks.extend(webhook_facts(&configuration, ""));
    }
    webhooks
}

fn our_webhooks() -> BTreeMap<String, String> {
    const PREFIX: &str = "https://kuota.test";
    let client = |path: &str| WebhookClientConfig {
        url: Some(format!("{PREFIX}{path}")),
        ..WebhookClientConfig::default()
    };
    let mutating = serde_json::to_value(mutating_configuration("", client, "kueue-system"))
        .expect("mutating configuration as JSON");
    let validating = serde_json::to_value(validating_configuration("", client, "kueue-system"))
        .expect("validating configuration as JSON");
    let mut webhooks = webhook_facts(&mutating, PREFIX);
    webhooks.extend(webhook_facts(&validating, PREFIX));
    webhooks
}

#[test]
fn webhooks_match_kueues_or_differ_only_as_listed() {
    let (theirs, ours) = (kueue_webhooks(), our_webhooks());
    let mut found = BTreeMap::new();
    for name in theirs.keys().chain(ours.keys()) {
        let (kueue, kuota) = (theirs.get(name), ours.get(name));
        if kueue != kuota {
            found.insert(
                (name.clone(), "*".to_owned(), "webhook".to_owned()),
                format!("Kueue: {kueue:?}; Kuota: {kuota:?}"),
            );
        }
    }
    check_listed(&found, "webhooks");
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
        for key in kueue_facts.keys().chain(our_facts.keys()) {
            let (kueue, kuota) = (kueue_facts.get(key), our_facts.get(key));
            if kueue != kuota {
                found.insert(
                    (plural.clone(), key.0.clone(), key.1.clone()),
                    format!("Kueue: {kueue:?}; Kuota: {kuota:?}"),
                );
            }
        }
    }
    check_listed(&found, "crds");
}
