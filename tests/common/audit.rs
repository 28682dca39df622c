//! What one ServiceAccount asked the API server, read from its audit log, held against the RBAC
//! rules bound to that account: every call allowed by one of the rules, every rule used by a call.

use std::collections::BTreeSet;
use std::fmt;

use k8s_openapi::api::rbac::v1::PolicyRule;
use serde_json::Value;

/// One verb on one resource (`plural` or `plural/subresource`) of an API group, in one
/// namespace (`None`: cluster-wide) for one object (`None`: any name): what a rule grants, or
/// what a request asks for.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Access {
    pub namespace: Option<String>,
    pub group: String,
    pub resource: String,
    pub verb: String,
    pub name: Option<String>,
}

/// What the authorizer was asked for one request, or for a check an admission plugin made on
/// the request's behalf.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Call {
    pub access: Access,
    /// The API server refused it (RBAC's decision, or a 403 from admission).
    pub forbidden: bool,
}

impl fmt::Display for Access {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let group = if self.group.is_empty() {
            "core"
        } else {
            &self.group
        };
        write!(f, "{} {group}/{}", self.verb, self.resource)?;
        if let Some(name) = &self.name {
            write!(f, " {name}")?;
        }
        if let Some(namespace) = &self.namespace {
            write!(f, " in {namespace}")?;
        }
        Ok(())
    }
}

/// The permissions `rules` grant, granted in `namespace` (a Role's) or cluster-wide.
///
/// Panics on a wildcard or a non-resource URL: neither belongs in a controller's rules.
pub fn permissions(rules: &[PolicyRule], namespace: Option<&str>) -> BTreeSet<Access> {
    let mut granted = BTreeSet::new();
    for rule in rules {
        assert!(
            rule.non_resource_urls
                .as_deref()
                .unwrap_or_default()
                .is_empty(),
            "a controller rule names non-resource URLs: {rule:?}"
        );
        let names: Vec<Option<String>> = match rule.resource_names.as_deref() {
            None | Some([]) => vec![None],
            Some(names) => names.iter().cloned().map(Some).collect(),
        };
        for group in rule.api_groups.as_deref().unwrap_or_default() {
            for resource in rule.resources.as_deref().unwrap_or_default() {
                for verb in &rule.verbs {
                    assert!(
                        ![group, resource, verb].contains(&&"*".to_owned()),
                        "a wildcard in {rule:?}"
                    );
                    for name in &names {
                        granted.insert(Access {
                            namespace: namespace.map(str::to_owned),
                            group: group.clone(),
                            resource: resource.clone(),
                            verb: verb.clone(),
                            name: name.clone(),
                        });
                    }
                }
            }
        }
    }
    granted
}

fn text(value: &Value, pointer: &str) -> Option<String> {
    value
        .pointer(pointer)
        .and_then(Value::as_str)
        .map(str::to_owned)
}

/// The user an audit event's request was made as.
pub fn username(event: &Value) -> Option<String> {
    text(event, "/user/username")
}

/// The pod whose bound ServiceAccount token made an audit event's request.
pub fn pod_name(event: &Value) -> Option<String> {
    text(
        event,
        "/user/extra/authentication.kubernetes.io~1pod-name/0",
    )
}

/// The calls of the events `made_by` selects, from an audit log of one JSON event per line. A
/// create whose request body sets owner references with `blockOwnerDeletion` also asks for
/// `update` on each owner's `finalizers` (what the OwnerReferencesPermissionEnforcement plugin
/// checks); `plural_of(group, kind)` names the owner's resource.
pub fn calls(
    audit_log: &str,
    made_by: impl Fn(&Value) -> bool,
    plural_of: impl Fn(&str, &str) -> Option<String>,
) -> BTreeSet<Call> {
    let mut made = BTreeSet::new();
    for line in audit_log.lines().filter(|line| !line.trim().is_empty()) {
        let event: Value = serde_json::from_str(line).expect("an audit event per line");
        if !made_by(&event) {
            continue;
        }
        // Discovery and other non-resource requests have no object reference.
        let Some(object) = event.get("objectRef") else {
            continue;
        };
        let forbidden = text(&event, "/annotations/authorization.k8s.io~1decision").as_deref()
            == Some("forbid")
            || event
                .pointer("/responseStatus/code")
                .and_then(Value::as_u64)
                == Some(403);
        let resource = match text(object, "/subresource") {
            Some(sub) => format!("{}/{sub}", text(object, "/resource").unwrap_or_default()),
            None => text(object, "/resource").unwrap_or_default(),
        };
        let verb = text(&event, "/verb").unwrap_or_default();
        let namespace = text(object, "/namespace");
        if verb == "create" {
            let owners = event
                .pointer("/requestObject/metadata/ownerReferences")
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default();
            for owner in owners
                .iter()
                .filter(|owner| owner["blockOwnerDeletion"] == Value::Bool(true))
            {
                let api_version = text(owner, "/apiVersion").unwrap_or_default();
                let group = api_version
                    .rsplit_once('/')
                    .map_or("", |(group, _)| group)
                    .to_owned();
                let kind = text(owner, "/kind").unwrap_or_default();
                let plural = plural_of(&group, &kind)
                    .unwrap_or_else(|| panic!("no resource known for owner {api_version} {kind}"));
                made.insert(Call {
                    access: Access {
                        namespace: namespace.clone(),
                        group,
                        resource: format!("{plural}/finalizers"),
                        verb: "update".to_owned(),
                        name: text(owner, "/name"),
                    },
                    forbidden,
                });
            }
        }
        made.insert(Call {
            access: Access {
                namespace,
                group: text(object, "/apiGroup").unwrap_or_default(),
                resource,
                verb,
                name: text(object, "/name"),
            },
            forbidden,
        });
    }
    made
}

/// Whether `granted` allows `call`.
pub fn allows(granted: &Access, call: &Call) -> bool {
    let asked = &call.access;
    granted.group == asked.group
        && granted.resource == asked.resource
        && granted.verb == asked.verb
        && (granted.namespace.is_none() || granted.namespace == asked.namespace)
        && (granted.name.is_none() || granted.name == asked.name)
}

/// What is wrong between the rules and the calls: calls refused or allowed by none of the
/// rules, and rules no call used. All empty when the rules are exactly what the code needs.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Mismatch {
    pub refused: Vec<String>,
    pub unlisted: Vec<String>,
    pub unused: Vec<String>,
}

pub fn mismatch(granted: &BTreeSet<Access>, made: &BTreeSet<Call>) -> Mismatch {
    Mismatch {
        refused: made
            .iter()
            .filter(|call| call.forbidden)
            .map(|call| call.access.to_string())
            .collect(),
        unlisted: made
            .iter()
            .filter(|call| !call.forbidden && !granted.iter().any(|p| allows(p, call)))
            .map(|call| call.access.to_string())
            .collect(),
        unused: granted
            .iter()
            .filter(|access| !made.iter().any(|call| allows(access, call)))
            .map(ToString::to_string)
            .collect(),
    }
}
