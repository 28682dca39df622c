//! Internal certificate management, as Kueue's `internalCertManagement`: a CA and a serving
//! certificate kept in one Secret that every replica reads, rotated well before expiry, with the
//! CA bundle injected into the webhook configurations and the CRD conversion webhooks.
//!
//! Replicas agree through the API server: the Secret is created with `create` (a 409 means
//! another replica won, so read theirs) and replaced with a resourceVersion precondition.

use std::{collections::BTreeMap, time::Duration};

use jiff::Timestamp;
use k8s_openapi::{
    ByteString,
    api::{
        admissionregistration::v1::{
            MutatingWebhookConfiguration, ValidatingWebhookConfiguration, WebhookClientConfig,
        },
        core::v1::Secret,
    },
    apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition,
};
use kube::{
    Api, Client,
    api::{ObjectMeta, Patch, PatchParams, PostParams},
};
use serde::{Serialize, de::DeserializeOwned};
use serde_json::json;

use crate::{
    api::{constants::GROUP, crds::CONVERTED_PLURALS},
    tls::certs::{
        CA_CERT_FILE, CA_COMMON_NAME, CA_ORGANIZATION, CertError, CertificateAuthority,
        TLS_CERT_FILE, TLS_KEY_FILE, inspect_certificate, needs_rotation, service_dns_names,
    },
    tls::serving::{TlsHandle, server_config},
};

/// Key of the CA's private key in the Secret (the other keys are `ca.crt`, `tls.crt`, `tls.key`).
pub const CA_KEY_FILE: &str = "ca.key";

/// What the manager manages and how long certificates live.
#[derive(Clone, Debug)]
pub struct CertManagerConfig {
    pub namespace: String,
    pub service_name: String,
    pub secret_name: String,
    pub ca_validity: Duration,
    pub cert_validity: Duration,
    /// Rotate when less than this is left of a certificate's life.
    pub rotation_margin: Duration,
    pub check_interval: Duration,
}

impl CertManagerConfig {
    /// Kueue's layout: a 10-year CA and 1-year serving certificates rotated 90 days early.
    pub fn new(namespace: &str, service_name: &str, secret_name: &str) -> Self {
        Self {
            namespace: namespace.to_string(),
            service_name: service_name.to_string(),
            secret_name: secret_name.to_string(),
            ca_validity: Duration::from_secs(10 * 365 * 24 * 3600),
            cert_validity: Duration::from_secs(365 * 24 * 3600),
            rotation_margin: Duration::from_secs(90 * 24 * 3600),
            check_interval: Duration::from_secs(60),
        }
    }

    /// The prefix of the webhook configuration names: `kueue-webhook-service` gives `kueue`.
    pub fn configuration_base(&self) -> &str {
        self.service_name
            .strip_suffix("-webhook-service")
            .unwrap_or(&self.service_name)
    }
}

/// The four PEM documents a replica needs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CertBundle {
    pub ca_cert: String,
    pub ca_key: String,
    pub tls_cert: String,
    pub tls_key: String,
}

impl CertBundle {
    fn from_secret(secret: &Secret) -> Option<Self> {
        let data = secret.data.as_ref()?;
        let text = |key: &str| {
            data.get(key)
                .and_then(|b| String::from_utf8(b.0.clone()).ok())
        };
        Some(Self {
            ca_cert: text(CA_CERT_FILE)?,
            ca_key: text(CA_KEY_FILE)?,
            tls_cert: text(TLS_CERT_FILE)?,
            tls_key: text(TLS_KEY_FILE)?,
        })
    }

    fn to_data(&self) -> BTreeMap<String, ByteString> {
        [
            (CA_CERT_FILE, &self.ca_cert),
            (CA_KEY_FILE, &self.ca_key),
            (TLS_CERT_FILE, &self.tls_cert),
            (TLS_KEY_FILE, &self.tls_key),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), ByteString(v.as_bytes().to_vec())))
        .collect()
    }
}

/// What to do with the certificates found in the Secret.
#[derive(Debug, PartialEq, Eq)]
pub enum Plan {
    /// Still valid for longer than the margin.
    Keep,
    /// Issue a new serving certificate from the existing CA.
    RenewServing,
    /// Start over with a new CA (none, unreadable, or the CA itself is expiring).
    NewAuthority,
}

/// Decides from the Secret's content alone; pure so the rules are testable.
pub fn plan(bundle: Option<&CertBundle>, now: Timestamp, config: &CertManagerConfig) -> Plan {
    let Some(bundle) = bundle else {
        return Plan::NewAuthority;
    };
    if CertificateAuthority::from_pem(&bundle.ca_cert, &bundle.ca_key).is_err()
        || needs_rotation(&bundle.ca_cert, now, config.rotation_margin)
    {
        return Plan::NewAuthority;
    }
    if needs_rotation(&bundle.tls_cert, now, config.rotation_margin)
        || !serves_the_service(bundle, config)
    {
        return Plan::RenewServing;
    }
    Plan::Keep
}

/// Whether the serving certificate names the host the API server calls (`svc.ns.svc`) and
/// belongs to the key next to it. A Secret written for another Service name, or half-edited by
/// hand, is renewed instead of being served: the API server would refuse the first, the
/// listener the second.
fn serves_the_service(bundle: &CertBundle, config: &CertManagerConfig) -> bool {
    let host = format!("{}.{}.svc", config.service_name, config.namespace);
    inspect_certificate(&bundle.tls_cert).is_ok_and(|info| info.dns_names.contains(&host))
        && server_config(&bundle.tls_cert, &bundle.tls_key).is_ok()
}

/// The Secret to write: `current` with only its data replaced, so the type, labels,
/// annotations and owners others put on it survive (e.g. the empty Secret an install creates
/// for a Helm release); a new Secret when there is none.
fn secret_with(current: Option<Secret>, bundle: &CertBundle, config: &CertManagerConfig) -> Secret {
    let mut secret = current.unwrap_or_else(|| Secret {
        metadata: ObjectMeta {
            name: Some(config.secret_name.clone()),
            namespace: Some(config.namespace.clone()),
            ..Default::default()
        },
        ..Default::default()
    });
    secret.data = Some(bundle.to_data());
    secret.string_data = None;
    // Left out, the API server keeps tracking field ownership as usual.
    secret.metadata.managed_fields = None;
    secret
}

/// Sets `bundle` on every client config; true when one changed.
fn set_ca_bundle<'a>(
    client_configs: impl IntoIterator<Item = &'a mut WebhookClientConfig>,
    bundle: &ByteString,
) -> bool {
    let mut changed = false;
    for client_config in client_configs {
        if client_config.ca_bundle.as_ref() != Some(bundle) {
            client_config.ca_bundle = Some(bundle.clone());
            changed = true;
        }
    }
    changed
}

/// Errors of the certificate manager.
#[derive(Debug, thiserror::Error)]
pub enum CertManagerError {
    #[error("certificate: {0}")]
    Cert(#[from] CertError),
    #[error("kubernetes: {0}")]
    Kube(#[from] kube::Error),
}

/// Keeps the Secret, the served certificate and the injected CA bundles in step.
#[derive(Clone)]
pub struct CertManager {
    client: Client,
    config: CertManagerConfig,
}

impl CertManager {
    pub fn new(client: Client, config: CertManagerConfig) -> Self {
        Self { client, config }
    }

    fn issue(&self, ca: Option<CertificateAuthority>) -> Result<CertBundle, CertError> {
        let ca = match ca {
            Some(ca) => ca,
            None => CertificateAuthority::generate(
                CA_COMMON_NAME,
                CA_ORGANIZATION,
                self.config.ca_validity,
            )?,
        };
        let names = service_dns_names(&self.config.service_name, &self.config.namespace);
        let serving = ca.issue_serving_cert(&names, &[], self.config.cert_validity)?;
        Ok(CertBundle {
            ca_cert: ca.cert_pem().to_string(),
            ca_key: ca.key_pem().to_string(),
            tls_cert: serving.cert_pem,
            tls_key: serving.key_pem,
        })
    }

    /// Returns valid certificates from the Secret, creating or rotating them as needed.
    pub async fn ensure(&self) -> Result<CertBundle, CertManagerError> {
        let secrets: Api<Secret> = Api::namespaced(self.client.clone(), &self.config.namespace);
        // Bounded: each retry means another replica changed the Secret in between.
        for _ in 0..5 {
            let current = secrets.get_opt(&self.config.secret_name).await?;
            let bundle = current.as_ref().and_then(CertBundle::from_secret);
            let next = match (
                plan(bundle.as_ref(), Timestamp::now(), &self.config),
                bundle,
            ) {
                (Plan::Keep, Some(bundle)) => return Ok(bundle),
                (Plan::RenewServing, Some(existing)) => {
                    let ca = CertificateAuthority::from_pem(&existing.ca_cert, &existing.ca_key)?;
                    self.issue(Some(ca))?
                }
                _ => self.issue(None)?,
            };
            let result = if current.is_none() {
                let secret = secret_with(None, &next, &self.config);
                secrets.create(&PostParams::default(), &secret).await
            } else {
                // Carries the resourceVersion read above: 409 when another replica wrote since.
                let secret = secret_with(current, &next, &self.config);
                secrets
                    .replace(&self.config.secret_name, &PostParams::default(), &secret)
                    .await
            };
            match result {
                Ok(_) => {
                    tracing::info!(secret = %self.config.secret_name, "wrote webhook certificates");
                    return Ok(next);
                }
                Err(kube::Error::Api(status)) if status.code == 409 => continue,
                Err(err) => return Err(err.into()),
            }
        }
        Err(kept_changing("the certificate Secret"))
    }

    /// Writes the CA bundle into our webhook configurations and the CRD conversion webhooks
    /// (only those that exist and use a webhook; nothing is created here).
    pub async fn inject_ca_bundle(&self, ca_pem: &str) -> Result<(), CertManagerError> {
        self.inject_into_webhook_configurations(ca_pem).await?;
        let bundle = ByteString(ca_pem.as_bytes().to_vec());
        let crds: Api<CustomResourceDefinition> = Api::all(self.client.clone());
        for plural in CONVERTED_PLURALS {
            let name = format!("{plural}.{GROUP}");
            let Some(crd) = crds.get_opt(&name).await? else {
                continue;
            };
            let Some(conversion) = crd.spec.conversion.filter(|c| c.strategy == "Webhook") else {
                continue;
            };
            let injected = conversion
                .webhook
                .and_then(|webhook| webhook.client_config)
                .and_then(|client_config| client_config.ca_bundle);
            if injected.as_ref() != Some(&bundle) {
                let patch = json!({"spec": {"conversion": {"webhook": {"clientConfig": {
                    "caBundle": bundle
                }}}}});
                crds.patch(&name, &PatchParams::default(), &Patch::Merge(patch))
                    .await?;
            }
        }
        Ok(())
    }

    /// The webhook configurations' part of [`Self::inject_ca_bundle`]. Replicas injecting at the
    /// same time conflict on the resourceVersion; the loser re-reads and finds nothing to do.
    async fn inject_into_webhook_configurations(
        &self,
        ca_pem: &str,
    ) -> Result<(), CertManagerError> {
        let bundle = ByteString(ca_pem.as_bytes().to_vec());
        let base = self.config.configuration_base();
        replace_on_change(
            &Api::<MutatingWebhookConfiguration>::all(self.client.clone()),
            &format!("{base}-mutating-webhook-configuration"),
            |config| {
                let webhooks = config.webhooks.iter_mut().flatten();
                set_ca_bundle(webhooks.map(|w| &mut w.client_config), &bundle)
            },
        )
        .await?;
        replace_on_change(
            &Api::<ValidatingWebhookConfiguration>::all(self.client.clone()),
            &format!("{base}-validating-webhook-configuration"),
            |config| {
                let webhooks = config.webhooks.iter_mut().flatten();
                set_ca_bundle(webhooks.map(|w| &mut w.client_config), &bundle)
            },
        )
        .await
    }

    /// Re-checks the Secret every `check_interval`: rotates when due, swaps the served
    /// certificate in place when the Secret changed (also when another replica rotated it),
    /// and re-injects the CA bundle: into the webhook configurations every round, into the CRD
    /// conversion webhooks when the CA changed (the CRDs are large to read).
    pub async fn run(self, tls: TlsHandle, mut served: CertBundle) {
        loop {
            tokio::time::sleep(self.config.check_interval).await;
            let bundle = match self.ensure().await {
                Ok(bundle) => bundle,
                Err(err) => {
                    tracing::warn!(%err, "checking webhook certificates failed; will retry");
                    continue;
                }
            };
            if bundle != served {
                if let Err(err) = tls.replace(&bundle.tls_cert, &bundle.tls_key) {
                    tracing::error!(%err, "rotated certificate rejected; keeping the old one");
                    continue;
                }
                if bundle.ca_cert != served.ca_cert
                    && let Err(err) = self.inject_ca_bundle(&bundle.ca_cert).await
                {
                    tracing::warn!(%err, "injecting the new CA bundle failed; will retry");
                    continue;
                }
                tracing::info!("serving the rotated webhook certificate");
                served = bundle;
            }
            // Every round, not only when the CA changes: webhook configurations applied after
            // start-up (install order) or re-created since have no bundle, and the API server
            // would refuse every call to the webhook until the next CA rotation.
            if let Err(err) = self
                .inject_into_webhook_configurations(&served.ca_cert)
                .await
            {
                tracing::warn!(%err, "injecting the CA bundle failed; will retry");
            }
        }
    }
}

/// Reads `name`, lets `change` edit it and replaces it when `change` says it changed; retries
/// on a conflicting write. A missing object is left alone.
async fn replace_on_change<K>(
    api: &Api<K>,
    name: &str,
    mut change: impl FnMut(&mut K) -> bool,
) -> Result<(), CertManagerError>
where
    K: kube::Resource + Clone + DeserializeOwned + Serialize + std::fmt::Debug,
{
    for _ in 0..5 {
        let Some(mut object) = api.get_opt(name).await? else {
            return Ok(());
        };
        if !change(&mut object) {
            return Ok(());
        }
        match api.replace(name, &PostParams::default(), &object).await {
            Ok(_) => return Ok(()),
            Err(kube::Error::Api(status)) if status.code == 409 => continue,
            Err(err) => return Err(err.into()),
        }
    }
    Err(kept_changing(name))
}

/// The error after too many conflicting writes in a row.
fn kept_changing(what: &str) -> CertManagerError {
    CertManagerError::Kube(kube::Error::Api(
        kube::core::Status::failure(&format!("{what} kept changing under us"), "Conflict")
            .with_code(409)
            .boxed(),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config() -> CertManagerConfig {
        CertManagerConfig::new(
            "kueue-system",
            "kueue-webhook-service",
            "kueue-webhook-server-cert",
        )
    }

    fn bundle(ca_validity: Duration, cert_validity: Duration) -> CertBundle {
        bundle_for(&config(), ca_validity, cert_validity)
    }

    fn bundle_for(
        config: &CertManagerConfig,
        ca_validity: Duration,
        cert_validity: Duration,
    ) -> CertBundle {
        let ca = CertificateAuthority::generate("kueue-ca", "kueue", ca_validity).unwrap();
        let names = service_dns_names(&config.service_name, &config.namespace);
        let cert = ca.issue_serving_cert(&names, &[], cert_validity).unwrap();
        CertBundle {
            ca_cert: ca.cert_pem().to_string(),
            ca_key: ca.key_pem().to_string(),
            tls_cert: cert.cert_pem,
            tls_key: cert.key_pem,
        }
    }

    const DAY: Duration = Duration::from_secs(24 * 3600);

    #[test]
    fn plan_follows_the_remaining_lifetimes() {
        let now = Timestamp::now();
        let cfg = config();
        assert_eq!(plan(None, now, &cfg), Plan::NewAuthority);
        assert_eq!(
            plan(Some(&bundle(3650 * DAY, 365 * DAY)), now, &cfg),
            Plan::Keep
        );
        assert_eq!(
            plan(Some(&bundle(3650 * DAY, 30 * DAY)), now, &cfg),
            Plan::RenewServing
        );
        assert_eq!(
            plan(Some(&bundle(30 * DAY, 30 * DAY)), now, &cfg),
            Plan::NewAuthority
        );
        let mut broken = bundle(3650 * DAY, 365 * DAY);
        broken.ca_key = "not a key".into();
        assert_eq!(plan(Some(&broken), now, &cfg), Plan::NewAuthority);
    }

    #[test]
    fn a_serving_certificate_for_another_service_or_key_is_renewed() {
        let now = Timestamp::now();
        let cfg = config();
        let mut renamed = cfg.clone();
        renamed.service_name = "other-webhook-service".into();
        assert_eq!(
            plan(
                Some(&bundle_for(&renamed, 3650 * DAY, 365 * DAY)),
                now,
                &cfg
            ),
            Plan::RenewServing
        );
        let mut elsewhere = cfg.clone();
        elsewhere.namespace = "elsewhere".into();
        assert_eq!(
            plan(
                Some(&bundle_for(&elsewhere, 3650 * DAY, 365 * DAY)),
                now,
                &cfg
            ),
            Plan::RenewServing
        );
        let mut mismatched = bundle(3650 * DAY, 365 * DAY);
        mismatched.tls_key = bundle(3650 * DAY, 365 * DAY).tls_key;
        assert_eq!(plan(Some(&mismatched), now, &cfg), Plan::RenewServing);
        let mut unreadable_key = bundle(3650 * DAY, 365 * DAY);
        unreadable_key.tls_key = "not a key".into();
        assert_eq!(plan(Some(&unreadable_key), now, &cfg), Plan::RenewServing);
    }

    #[test]
    fn writing_certificates_replaces_only_the_data_of_an_existing_secret() {
        let cfg = config();
        let certs = bundle(3650 * DAY, 365 * DAY);
        let existing: Secret = serde_json::from_value(json!({
            "metadata": {
                "name": "kueue-webhook-server-cert", "namespace": "kueue-system",
                "resourceVersion": "42",
                "labels": {"app.kubernetes.io/managed-by": "Helm"},
                "annotations": {"meta.helm.sh/release-name": "kueue"},
                "managedFields": [{"manager": "helm", "operation": "Update"}]
            },
            "type": "Opaque",
            "data": {"stale": "eA=="}
        }))
        .unwrap();
        let mut expected = existing.clone();
        expected.data = Some(certs.to_data());
        expected.metadata.managed_fields = None;
        assert_eq!(secret_with(Some(existing), &certs, &cfg), expected);

        let created = secret_with(None, &certs, &cfg);
        assert_eq!(
            created.metadata.name.as_deref(),
            Some("kueue-webhook-server-cert")
        );
        assert_eq!(created.metadata.namespace.as_deref(), Some("kueue-system"));
        assert_eq!(created.metadata.resource_version, None);
        assert_eq!(CertBundle::from_secret(&created), Some(certs));
    }

    #[test]
    fn set_ca_bundle_reports_whether_anything_changed() {
        let bundle = ByteString(b"new".to_vec());
        let with = |ca: Option<&[u8]>| WebhookClientConfig {
            ca_bundle: ca.map(|ca| ByteString(ca.to_vec())),
            ..Default::default()
        };
        let mut configs = vec![with(Some(b"new")), with(None), with(Some(b"old"))];
        assert!(set_ca_bundle(&mut configs, &bundle));
        assert_eq!(configs, vec![with(Some(b"new")); 3]);
        assert!(!set_ca_bundle(&mut configs, &bundle));
        assert!(!set_ca_bundle(&mut Vec::new(), &bundle));
    }

    #[test]
    fn configuration_base_drops_the_service_suffix() {
        assert_eq!(config().configuration_base(), "kueue");
        let mut other = config();
        other.service_name = "custom".into();
        assert_eq!(other.configuration_base(), "custom");
    }
}
