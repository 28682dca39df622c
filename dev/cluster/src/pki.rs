//! Certificates for a throwaway control plane: one CA that signs the apiserver's serving
//! certificate and the admin client certificate, the service-account signing key, and, as
//! kubeadm makes them, a separate front-proxy CA with the client certificate the aggregator
//! presents to aggregated API servers.

use std::path::{Path, PathBuf};

use rcgen::{
    BasicConstraints, Certificate, CertificateParams, DistinguishedName, DnType,
    ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair, KeyUsagePurpose, SanType,
};

use crate::Error;

/// The `kubernetes` Service's ClusterIP: the first address of the apiserver's service range.
const KUBERNETES_SERVICE_IP: [u8; 4] = [10, 96, 0, 1];

/// Paths of the files written by [`write`].
#[derive(Clone, Debug)]
pub struct Pki {
    pub ca_cert: PathBuf,
    pub serving_cert: PathBuf,
    pub serving_key: PathBuf,
    pub admin_cert: PathBuf,
    pub admin_key: PathBuf,
    pub sa_public_key: PathBuf,
    pub sa_private_key: PathBuf,
    pub front_proxy_ca_cert: PathBuf,
    pub front_proxy_client_cert: PathBuf,
    pub front_proxy_client_key: PathBuf,
}

/// Common name of the aggregator's client certificate (`--requestheader-allowed-names`).
pub const FRONT_PROXY_CLIENT: &str = "front-proxy-client";

/// Writes a fresh CA, serving and admin certificates and the service-account key into `dir`.
pub fn write(dir: &Path) -> Result<Pki, Error> {
    std::fs::create_dir_all(dir)?;
    let (ca_cert, issuer) = authority("kuota-test-ca")?;

    let serving_key = KeyPair::generate()?;
    // In-cluster clients dial the `kubernetes` Service: its ClusterIP and DNS names.
    let mut serving = CertificateParams::new(vec![
        "localhost".to_string(),
        "kubernetes".to_string(),
        "kubernetes.default".to_string(),
        "kubernetes.default.svc".to_string(),
        "kubernetes.default.svc.cluster.local".to_string(),
    ])?;
    for ip in [[127, 0, 0, 1], KUBERNETES_SERVICE_IP] {
        serving
            .subject_alt_names
            .push(SanType::IpAddress(ip.into()));
    }
    serving.distinguished_name = name("kube-apiserver", None);
    serving.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
    let serving_cert = serving.signed_by(&serving_key, &issuer)?;

    let admin_key = KeyPair::generate()?;
    let mut admin = CertificateParams::new(Vec::<String>::new())?;
    admin.distinguished_name = name("kuota-admin", Some("system:masters"));
    admin.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
    let admin_cert = admin.signed_by(&admin_key, &issuer)?;

    let sa_key = KeyPair::generate()?;

    let (front_proxy_ca_cert, front_proxy_issuer) = authority("kuota-test-front-proxy-ca")?;
    let front_proxy_client_key = KeyPair::generate()?;
    let mut front_proxy_client = CertificateParams::new(Vec::<String>::new())?;
    front_proxy_client.distinguished_name = name(FRONT_PROXY_CLIENT, None);
    front_proxy_client.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
    let front_proxy_client_cert =
        front_proxy_client.signed_by(&front_proxy_client_key, &front_proxy_issuer)?;

    let pki = Pki {
        ca_cert: dir.join("ca.crt"),
        serving_cert: dir.join("apiserver.crt"),
        serving_key: dir.join("apiserver.key"),
        admin_cert: dir.join("admin.crt"),
        admin_key: dir.join("admin.key"),
        sa_public_key: dir.join("sa.pub"),
        sa_private_key: dir.join("sa.key"),
        front_proxy_ca_cert: dir.join("front-proxy-ca.crt"),
        front_proxy_client_cert: dir.join("front-proxy-client.crt"),
        front_proxy_client_key: dir.join("front-proxy-client.key"),
    };
    std::fs::write(&pki.ca_cert, ca_cert.pem())?;
    std::fs::write(&pki.serving_cert, serving_cert.pem())?;
    std::fs::write(&pki.serving_key, serving_key.serialize_pem())?;
    std::fs::write(&pki.admin_cert, admin_cert.pem())?;
    std::fs::write(&pki.admin_key, admin_key.serialize_pem())?;
    std::fs::write(&pki.sa_public_key, sa_key.public_key_pem())?;
    std::fs::write(&pki.sa_private_key, sa_key.serialize_pem())?;
    std::fs::write(&pki.front_proxy_ca_cert, front_proxy_ca_cert.pem())?;
    std::fs::write(&pki.front_proxy_client_cert, front_proxy_client_cert.pem())?;
    std::fs::write(
        &pki.front_proxy_client_key,
        front_proxy_client_key.serialize_pem(),
    )?;
    Ok(pki)
}

/// A fresh self-signed CA and the issuer that signs with it.
fn authority(common_name: &str) -> Result<(Certificate, Issuer<'static, KeyPair>), Error> {
    let key = KeyPair::generate()?;
    let mut params = CertificateParams::new(Vec::<String>::new())?;
    params.distinguished_name = name(common_name, None);
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
    let cert = params.self_signed(&key)?;
    Ok((cert, Issuer::new(params, key)))
}

fn name(common_name: &str, organization: Option<&str>) -> DistinguishedName {
    let mut dn = DistinguishedName::new();
    dn.push(DnType::CommonName, common_name);
    if let Some(org) = organization {
        dn.push(DnType::OrganizationName, org);
    }
    dn
}

/// A kubeconfig for the admin user, with the certificates inlined so it can be copied anywhere.
pub fn kubeconfig(pki: &Pki, server: &str) -> Result<String, Error> {
    use std::io::Read;
    let b64 = |path: &Path| -> Result<String, Error> {
        let mut bytes = Vec::new();
        std::fs::File::open(path)?.read_to_end(&mut bytes)?;
        Ok(base64(&bytes))
    };
    Ok(format!(
        "apiVersion: v1
kind: Config
clusters:
- name: kuota-test
  cluster:
    server: {server}
    certificate-authority-data: {ca}
users:
- name: admin
  user:
    client-certificate-data: {cert}
    client-key-data: {key}
contexts:
- name: kuota-test
  context:
    cluster: kuota-test
    user: admin
current-context: kuota-test
",
        ca = b64(&pki.ca_cert)?,
        cert = b64(&pki.admin_cert)?,
        key = b64(&pki.admin_key)?,
    ))
}

fn base64(bytes: &[u8]) -> String {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.encode(bytes)
}
