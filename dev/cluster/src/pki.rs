//! Certificates for a throwaway control plane: one CA that signs the apiserver's serving
//! certificate and the admin client certificate, plus the service-account signing key.

use std::path::{Path, PathBuf};

use rcgen::{
    BasicConstraints, CertificateParams, DistinguishedName, DnType, ExtendedKeyUsagePurpose, IsCa,
    Issuer, KeyPair, KeyUsagePurpose, SanType,
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
}

/// Writes a fresh CA, serving and admin certificates and the service-account key into `dir`.
pub fn write(dir: &Path) -> Result<Pki, Error> {
    std::fs::create_dir_all(dir)?;
    let ca_key = KeyPair::generate()?;
    let mut ca_params = CertificateParams::new(Vec::<String>::new())?;
    ca_params.distinguished_name = name("kuota-test-ca", None);
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca_params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
    let ca_cert = ca_params.self_signed(&ca_key)?;
    let issuer = Issuer::new(ca_params, ca_key);

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

    let pki = Pki {
        ca_cert: dir.join("ca.crt"),
        serving_cert: dir.join("apiserver.crt"),
        serving_key: dir.join("apiserver.key"),
        admin_cert: dir.join("admin.crt"),
        admin_key: dir.join("admin.key"),
        sa_public_key: dir.join("sa.pub"),
        sa_private_key: dir.join("sa.key"),
    };
    std::fs::write(&pki.ca_cert, ca_cert.pem())?;
    std::fs::write(&pki.serving_cert, serving_cert.pem())?;
    std::fs::write(&pki.serving_key, serving_key.serialize_pem())?;
    std::fs::write(&pki.admin_cert, admin_cert.pem())?;
    std::fs::write(&pki.admin_key, admin_key.serialize_pem())?;
    std::fs::write(&pki.sa_public_key, sa_key.public_key_pem())?;
    std::fs::write(&pki.sa_private_key, sa_key.serialize_pem())?;
    Ok(pki)
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
