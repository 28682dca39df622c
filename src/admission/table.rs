//! The webhook table — every admission path Kuota serves — and the Mutating/Validating
//! WebhookConfiguration objects built from it, so what the API server is told and what the
//! server answers cannot drift apart.
//!
//! Names, paths and rules are Kueue's (`config/components/webhook/manifests.yaml`): one
//! `m<kind>.kb.io` / `v<kind>.kb.io` entry per job kind (served for every kind, enabled or not:
//! a disabled kind is allowed unchanged) and Kueue's own ClusterQueue, Cohort, ResourceFlavor
//! and Workload webhooks. Every entry has `failurePolicy: Fail`, `sideEffects: None`,
//! `timeoutSeconds: 10` and `admissionReviewVersions: [v1]`; job entries skip `kube-system` and
//! the install namespace.

use k8s_openapi::api::admissionregistration::v1::{
    MutatingWebhook, MutatingWebhookConfiguration, RuleWithOperations, ValidatingWebhook,
    ValidatingWebhookConfiguration, WebhookClientConfig,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{
    LabelSelector, LabelSelectorRequirement, ObjectMeta,
};

use crate::api::constants::GROUP;
use crate::config::NAMESPACE_NAME_LABEL;
use crate::jobs::{FRAMEWORKS, JobFramework};
use crate::webhook::{AdmissionRoute, WebhookType};

/// The Kueue kinds with webhooks of their own.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KueueKind {
    /// `clusterqueues`.
    ClusterQueue,
    /// `cohorts`.
    Cohort,
    /// `resourceflavors`.
    ResourceFlavor,
    /// `workloads` (and `workloads/status` for validation).
    Workload,
}

impl KueueKind {
    fn kind(self) -> &'static str {
        match self {
            KueueKind::ClusterQueue => "ClusterQueue",
            KueueKind::Cohort => "Cohort",
            KueueKind::ResourceFlavor => "ResourceFlavor",
            KueueKind::Workload => "Workload",
        }
    }
}

/// What a webhook entry admits.
#[derive(Clone, Copy)]
pub enum Target {
    /// A job kind.
    Job(&'static dyn JobFramework),
    /// A Kueue kind.
    Kueue(KueueKind),
}

impl std::fmt::Debug for Target {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Target::Job(framework) => write!(f, "Job({})", framework.name()),
            Target::Kueue(kind) => write!(f, "Kueue({kind:?})"),
        }
    }
}

/// One webhook entry: its name, path, rule and what it admits.
#[derive(Clone, Debug)]
pub struct WebhookEntry {
    /// Webhook name, e.g. `mjob.kb.io`.
    pub name: String,
    /// Path, type and expected kind.
    pub route: AdmissionRoute,
    /// API version in the rule.
    pub version: String,
    /// Resources in the rule, e.g. `["workloads", "workloads/status"]`.
    pub resources: Vec<String>,
    /// Operations in the rule.
    pub operations: Vec<String>,
    /// What is admitted.
    pub target: Target,
}

impl WebhookEntry {
    fn is_job(&self) -> bool {
        matches!(self.target, Target::Job(_))
    }
}

const CREATE: &str = "CREATE";
const UPDATE: &str = "UPDATE";

/// Every webhook Kuota serves, sorted by name as Kueue's manifests are.
pub fn webhook_table() -> Vec<WebhookEntry> {
    let mut entries = Vec::new();
    for &framework in FRAMEWORKS {
        let kind = framework.kind();
        let lower = kind.kind.to_lowercase();
        for (webhook_type, prefix, path, operations) in [
            (WebhookType::Mutating, "m", kind.mutate_path(), vec![CREATE]),
            (
                WebhookType::Validating,
                "v",
                kind.validate_path(),
                vec![CREATE, UPDATE],
            ),
        ] {
            entries.push(WebhookEntry {
                name: format!("{prefix}{lower}.kb.io"),
                route: AdmissionRoute::new(path, webhook_type, kind.group, kind.kind),
                version: kind.version.to_owned(),
                resources: vec![kind.plural.to_owned()],
                operations: operations.into_iter().map(str::to_owned).collect(),
                target: Target::Job(framework),
            });
        }
    }
    let kueue = [
        (KueueKind::ClusterQueue, WebhookType::Mutating, vec![CREATE]),
        (
            KueueKind::ResourceFlavor,
            WebhookType::Mutating,
            vec![CREATE],
        ),
        (KueueKind::Workload, WebhookType::Mutating, vec![CREATE]),
        (
            KueueKind::ClusterQueue,
            WebhookType::Validating,
            vec![CREATE, UPDATE],
        ),
        (
            KueueKind::Cohort,
            WebhookType::Validating,
            vec![CREATE, UPDATE],
        ),
        (
            KueueKind::ResourceFlavor,
            WebhookType::Validating,
            vec![CREATE, UPDATE],
        ),
        (
            KueueKind::Workload,
            WebhookType::Validating,
            vec![CREATE, UPDATE],
        ),
    ];
    for (kind, webhook_type, operations) in kueue {
        let lower = kind.kind().to_lowercase();
        let (prefix, operation) = match webhook_type {
            WebhookType::Mutating => ("m", "mutate"),
            WebhookType::Validating => ("v", "validate"),
        };
        let plural = format!("{lower}s");
        let resources = if kind == KueueKind::Workload && webhook_type == WebhookType::Validating {
            vec![plural.clone(), format!("{plural}/status")]
        } else {
            vec![plural]
        };
        entries.push(WebhookEntry {
            name: format!("{prefix}{lower}.kb.io"),
            route: AdmissionRoute::new(
                format!("/{operation}-kueue-x-k8s-io-v1beta2-{lower}"),
                webhook_type,
                GROUP,
                kind.kind(),
            ),
            version: "v1beta2".to_owned(),
            resources,
            operations: operations.into_iter().map(str::to_owned).collect(),
            target: Target::Kueue(kind),
        });
    }
    entries.sort_by(|a, b| a.name.cmp(&b.name));
    entries
}

fn rule(entry: &WebhookEntry) -> RuleWithOperations {
    RuleWithOperations {
        api_groups: Some(vec![entry.route.group.clone()]),
        api_versions: Some(vec![entry.version.clone()]),
        operations: Some(entry.operations.clone()),
        resources: Some(entry.resources.clone()),
        scope: None,
    }
}

/// Job webhooks leave `kube-system` and the install namespace alone.
fn job_namespace_selector(namespace: &str) -> LabelSelector {
    LabelSelector {
        match_expressions: Some(vec![LabelSelectorRequirement {
            key: NAMESPACE_NAME_LABEL.to_owned(),
            operator: "NotIn".to_owned(),
            values: Some(vec!["kube-system".to_owned(), namespace.to_owned()]),
        }]),
        match_labels: None,
    }
}

/// `<name_prefix>mutating-webhook-configuration` with every mutating entry; `client_config`
/// gives the client config for a path (a Service reference or a URL), `namespace` is the
/// install namespace the job webhooks skip.
pub fn mutating_configuration(
    name_prefix: &str,
    client_config: impl Fn(&str) -> WebhookClientConfig,
    namespace: &str,
) -> MutatingWebhookConfiguration {
    let webhooks = webhook_table()
        .iter()
        .filter(|entry| entry.route.webhook_type == WebhookType::Mutating)
        .map(|entry| MutatingWebhook {
            name: entry.name.clone(),
            client_config: client_config(&entry.route.path),
            rules: Some(vec![rule(entry)]),
            failure_policy: Some("Fail".to_owned()),
            side_effects: "None".to_owned(),
            timeout_seconds: Some(10),
            admission_review_versions: vec!["v1".to_owned()],
            namespace_selector: entry.is_job().then(|| job_namespace_selector(namespace)),
            ..MutatingWebhook::default()
        })
        .collect();
    MutatingWebhookConfiguration {
        metadata: ObjectMeta {
            name: Some(format!("{name_prefix}mutating-webhook-configuration")),
            ..ObjectMeta::default()
        },
        webhooks: Some(webhooks),
    }
}

/// `<name_prefix>validating-webhook-configuration` with every validating entry (see
/// [`mutating_configuration`]).
pub fn validating_configuration(
    name_prefix: &str,
    client_config: impl Fn(&str) -> WebhookClientConfig,
    namespace: &str,
) -> ValidatingWebhookConfiguration {
    let webhooks = webhook_table()
        .iter()
        .filter(|entry| entry.route.webhook_type == WebhookType::Validating)
        .map(|entry| ValidatingWebhook {
            name: entry.name.clone(),
            client_config: client_config(&entry.route.path),
            rules: Some(vec![rule(entry)]),
            failure_policy: Some("Fail".to_owned()),
            side_effects: "None".to_owned(),
            timeout_seconds: Some(10),
            admission_review_versions: vec!["v1".to_owned()],
            namespace_selector: entry.is_job().then(|| job_namespace_selector(namespace)),
            ..ValidatingWebhook::default()
        })
        .collect();
    ValidatingWebhookConfiguration {
        metadata: ObjectMeta {
            name: Some(format!("{name_prefix}validating-webhook-configuration")),
            ..ObjectMeta::default()
        },
        webhooks: Some(webhooks),
    }
}

/// A client config reaching the in-cluster Service `name` in `namespace` on port 443 at `path`.
pub fn service_client_config(
    name: &str,
    namespace: &str,
    path: &str,
    ca_bundle: Option<&[u8]>,
) -> WebhookClientConfig {
    WebhookClientConfig {
        service: Some(
            k8s_openapi::api::admissionregistration::v1::ServiceReference {
                name: name.to_owned(),
                namespace: namespace.to_owned(),
                path: Some(path.to_owned()),
                port: Some(443),
            },
        ),
        ca_bundle: ca_bundle.map(|ca| k8s_openapi::ByteString(ca.to_vec())),
        url: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;
    use serde_json::json;

    fn service(path: &str) -> WebhookClientConfig {
        service_client_config("kueue-webhook-service", "kueue-system", path, None)
    }

    #[test]
    fn names_and_paths_are_kueues() {
        let table: Vec<(String, String, WebhookType)> = webhook_table()
            .into_iter()
            .map(|e| (e.name, e.route.path, e.route.webhook_type))
            .collect();
        let expected = [
            (
                "mclusterqueue.kb.io",
                "/mutate-kueue-x-k8s-io-v1beta2-clusterqueue",
            ),
            ("mjaxjob.kb.io", "/mutate-kubeflow-org-v1-jaxjob"),
            ("mjob.kb.io", "/mutate-batch-v1-job"),
            ("mjobset.kb.io", "/mutate-jobset-x-k8s-io-v1alpha2-jobset"),
            ("mmpijob.kb.io", "/mutate-kubeflow-org-v2beta1-mpijob"),
            ("mpaddlejob.kb.io", "/mutate-kubeflow-org-v1-paddlejob"),
            ("mpytorchjob.kb.io", "/mutate-kubeflow-org-v1-pytorchjob"),
            ("mraycluster.kb.io", "/mutate-ray-io-v1-raycluster"),
            ("mrayjob.kb.io", "/mutate-ray-io-v1-rayjob"),
            (
                "mresourceflavor.kb.io",
                "/mutate-kueue-x-k8s-io-v1beta2-resourceflavor",
            ),
            ("mtfjob.kb.io", "/mutate-kubeflow-org-v1-tfjob"),
            ("mworkload.kb.io", "/mutate-kueue-x-k8s-io-v1beta2-workload"),
            ("mxgboostjob.kb.io", "/mutate-kubeflow-org-v1-xgboostjob"),
            (
                "vclusterqueue.kb.io",
                "/validate-kueue-x-k8s-io-v1beta2-clusterqueue",
            ),
            ("vcohort.kb.io", "/validate-kueue-x-k8s-io-v1beta2-cohort"),
            ("vjaxjob.kb.io", "/validate-kubeflow-org-v1-jaxjob"),
            ("vjob.kb.io", "/validate-batch-v1-job"),
            ("vjobset.kb.io", "/validate-jobset-x-k8s-io-v1alpha2-jobset"),
            ("vmpijob.kb.io", "/validate-kubeflow-org-v2beta1-mpijob"),
            ("vpaddlejob.kb.io", "/validate-kubeflow-org-v1-paddlejob"),
            ("vpytorchjob.kb.io", "/validate-kubeflow-org-v1-pytorchjob"),
            ("vraycluster.kb.io", "/validate-ray-io-v1-raycluster"),
            ("vrayjob.kb.io", "/validate-ray-io-v1-rayjob"),
            (
                "vresourceflavor.kb.io",
                "/validate-kueue-x-k8s-io-v1beta2-resourceflavor",
            ),
            ("vtfjob.kb.io", "/validate-kubeflow-org-v1-tfjob"),
            (
                "vworkload.kb.io",
                "/validate-kueue-x-k8s-io-v1beta2-workload",
            ),
            ("vxgboostjob.kb.io", "/validate-kubeflow-org-v1-xgboostjob"),
        ];
        let expected: Vec<(String, String, WebhookType)> = expected
            .iter()
            .map(|(name, path)| {
                let webhook_type = if name.starts_with('m') {
                    WebhookType::Mutating
                } else {
                    WebhookType::Validating
                };
                ((*name).to_owned(), (*path).to_owned(), webhook_type)
            })
            .collect();
        assert_eq!(table, expected);
    }

    #[test]
    fn mutating_configuration_renders_kueues_manifest_shape() {
        let config = mutating_configuration("kueue-", service, "kueue-system");
        let value = serde_json::to_value(&config).unwrap();
        assert_eq!(
            value["metadata"]["name"],
            json!("kueue-mutating-webhook-configuration")
        );
        let webhooks = value["webhooks"].as_array().unwrap();
        assert_eq!(webhooks.len(), 13);
        let job = webhooks
            .iter()
            .find(|w| w["name"] == json!("mjob.kb.io"))
            .unwrap();
        assert_eq!(
            job,
            &json!({
                "name": "mjob.kb.io",
                "admissionReviewVersions": ["v1"],
                "clientConfig": {"service": {
                    "name": "kueue-webhook-service", "namespace": "kueue-system",
                    "path": "/mutate-batch-v1-job", "port": 443
                }},
                "failurePolicy": "Fail",
                "namespaceSelector": {"matchExpressions": [{
                    "key": "kubernetes.io/metadata.name", "operator": "NotIn",
                    "values": ["kube-system", "kueue-system"]
                }]},
                "rules": [{"apiGroups": ["batch"], "apiVersions": ["v1"], "operations": ["CREATE"], "resources": ["jobs"]}],
                "sideEffects": "None",
                "timeoutSeconds": 10
            })
        );
        let cq = webhooks
            .iter()
            .find(|w| w["name"] == json!("mclusterqueue.kb.io"))
            .unwrap();
        assert_eq!(cq.get("namespaceSelector"), None);
        assert_eq!(
            cq["rules"],
            json!([{"apiGroups": ["kueue.x-k8s.io"], "apiVersions": ["v1beta2"], "operations": ["CREATE"], "resources": ["clusterqueues"]}])
        );
    }

    #[test]
    fn validating_configuration_covers_workload_status() {
        let config = validating_configuration("kueue-", service, "kueue-system");
        assert_eq!(
            config.metadata.name.as_deref(),
            Some("kueue-validating-webhook-configuration")
        );
        let webhooks = config.webhooks.unwrap();
        assert_eq!(webhooks.len(), 14);
        let workload = webhooks
            .iter()
            .find(|w| w.name == "vworkload.kb.io")
            .unwrap();
        let rule = &workload.rules.as_ref().unwrap()[0];
        assert_eq!(
            rule.resources,
            Some(vec!["workloads".to_owned(), "workloads/status".to_owned()])
        );
        assert_eq!(
            rule.operations,
            Some(vec!["CREATE".to_owned(), "UPDATE".to_owned()])
        );
        assert!(workload.namespace_selector.is_none());
        let job = webhooks.iter().find(|w| w.name == "vjob.kb.io").unwrap();
        assert!(job.namespace_selector.is_some());
    }
}
