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
        admissionregistration::v1::{MutatingWebhookConfiguration, ValidatingWebhookConfiguration},
        core::v1::Secret,
    },
    apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition,
};
use kube::{
    Api, Client,
    api::{ObjectMeta, Patch, PatchParams, PostParams},
};
use serde_json::json;

use crate::{
    api::{constants::GROUP, crds::CONVERTED_PLURALS},
    certs::{
        CA_CERT_FILE, CA_COMMON_NAME, CA_ORGANIZATION, CertError, CertificateAuthority,
        TLS_CERT_FILE, TLS_KEY_FILE, needs_rotation, service_dns_names,
    },
    webhook::TlsHandle,
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
    if needs_rotation(&bundle.tls_cert, now, config.rotation_margin) {
        return Plan::RenewServing;
    }
    Plan::Keep
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
            let next = match plan(bundle.as_ref(), Timestamp::now(), &self.config) {
                Plan::Keep => return Ok(bundle.expect("Keep implies a bundle")),
                Plan::RenewServing => {
                    let existing = bundle.expect("RenewServing implies a bundle");
                    let ca = CertificateAuthority::from_pem(&existing.ca_cert, &existing.ca_key)?;
                    self.issue(Some(ca))?
                }
                Plan::NewAuthority => self.issue(None)?,
            };
            let mut secret = Secret {
                metadata: ObjectMeta {
                    name: Some(self.config.secret_name.clone()),
                    namespace: Some(self.config.namespace.clone()),
                    ..Default::default()
                },
                data: Some(next.to_data()),
                ..Default::default()
            };
            let result = match current {
                None => secrets.create(&PostParams::default(), &secret).await,
                Some(existing) => {
                    secret.metadata.resource_version = existing.metadata.resource_version;
                    secret.metadata.labels = existing.metadata.labels;
                    secrets
                        .replace(&self.config.secret_name, &PostParams::default(), &secret)
                        .await
                }
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
        Err(CertManagerError::Kube(kube::Error::Api(
            kube::core::Status::failure(
                "the certificate Secret kept changing under us",
                "Conflict",
            )
            .with_code(409)
            .boxed(),
        )))
    }

    /// Writes the CA bundle into our webhook configurations and the CRD conversion webhooks
    /// (only those that exist and use a webhook; nothing is created here).
    pub async fn inject_ca_bundle(&self, ca_pem: &str) -> Result<(), CertManagerError> {
        let bundle = ByteString(ca_pem.as_bytes().to_vec());
        let base = self.config.configuration_base();
        let mutating: Api<MutatingWebhookConfiguration> = Api::all(self.client.clone());
        if let Some(mut config) = mutating
            .get_opt(&format!("{base}-mutating-webhook-configuration"))
            .await?
        {
            let mut changed = false;
            for webhook in config.webhooks.iter_mut().flatten() {
                if webhook.client_config.ca_bundle.as_ref() != Some(&bundle) {
                    webhook.client_config.ca_bundle = Some(bundle.clone());
                    changed = true;
                }
            }
            if changed {
                let name = config.metadata.name.clone().unwrap_or_default();
                mutating
                    .replace(&name, &PostParams::default(), &config)
                    .await?;
            }
        }
        let validating: Api<ValidatingWebhookConfiguration> = Api::all(self.client.clone());
        if let Some(mut config) = validating
            .get_opt(&format!("{base}-validating-webhook-configuration"))
            .await?
        {
            let mut changed = false;
            for webhook in config.webhooks.iter_mut().flatten() {
                if webhook.client_config.ca_bundle.as_ref() != Some(&bundle) {
                    webhook.client_config.ca_bundle = Some(bundle.clone());
                    changed = true;
                }
            }
            if changed {
                let name = config.metadata.name.clone().unwrap_or_default();
                validating
                    .replace(&name, &PostParams::default(), &config)
                    .await?;
            }
        }
        let crds: Api<CustomResourceDefinition> = Api::all(self.client.clone());
        for plural in CONVERTED_PLURALS {
            let name = format!("{plural}.{GROUP}");
            let Some(crd) = crds.get_opt(&name).await? else {
                continue;
            };
            let uses_webhook = crd
                .spec
                .conversion
                .as_ref()
                .is_some_and(|c| c.strategy == "Webhook");
            if uses_webhook {
                let patch = json!({"spec": {"conversion": {"webhook": {"clientConfig": {
                    "caBundle": ByteString(ca_pem.as_bytes().to_vec())
                }}}}});
                crds.patch(&name, &PatchParams::default(), &Patch::Merge(patch))
                    .await?;
            }
        }
        Ok(())
    }

    /// Re-checks the Secret every `check_interval`: rotates when due, swaps the served
    /// certificate in place when the Secret changed (also when another replica rotated it),
    /// and re-injects the CA bundle.
    pub async fn run(self, tls: TlsHandle, mut served: CertBundle) {
        loop {
            tokio::time::sleep(self.config.check_interval).await;
            match self.ensure().await {
                Ok(bundle) if bundle != served => {
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
                Ok(_) => {}
                Err(err) => {
                    tracing::warn!(%err, "checking webhook certificates failed; will retry")
                }
            }
        }
    }
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
        let ca = CertificateAuthority::generate("kueue-ca", "kueue", ca_validity).unwrap();
        let cert = ca
            .issue_serving_cert(&["svc".to_string()], &[], cert_validity)
            .unwrap();
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
    fn configuration_base_drops_the_service_suffix() {
        assert_eq!(config().configuration_base(), "kueue");
        let mut other = config();
        other.service_name = "custom".into();
        assert_eq!(other.configuration_base(), "custom");
    }
}
