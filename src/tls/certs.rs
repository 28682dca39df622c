//! Certificates for the webhook: a self-signed CA, serving certificates it issues, inspection
//! of PEM certificates (validity, SANs) and the dev certificates written by `kuota certs`.
//!
//! Keys are ECDSA P-256 (rcgen's default): fast to generate, so a replica can mint a fresh pair
//! at start-up without delaying readiness.

use std::fs;
use std::io::Write;
use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use jiff::{SignedDuration, Timestamp};
use rcgen::{
    BasicConstraints, CertificateParams, DistinguishedName, DnType, ExtendedKeyUsagePurpose, IsCa,
    Issuer, KeyPair, KeyUsagePurpose, SanType,
};
use x509_parser::extensions::GeneralName;
use x509_parser::time::ASN1Time;

/// Common name of the CA, as Kueue's internal certificate management names it.
pub const CA_COMMON_NAME: &str = "kueue-ca";
/// Organization of the CA, as Kueue's internal certificate management names it.
pub const CA_ORGANIZATION: &str = "kueue";
/// File name of the CA certificate in a certificate directory.
pub const CA_CERT_FILE: &str = "ca.crt";
/// File name of the serving certificate in a certificate directory (Secret key `tls.crt`).
pub const TLS_CERT_FILE: &str = "tls.crt";
/// File name of the serving key in a certificate directory (Secret key `tls.key`).
pub const TLS_KEY_FILE: &str = "tls.key";

/// Validity of the CA written by [`write_dev_certs`].
pub const DEV_CA_VALIDITY: Duration = Duration::from_secs(10 * 365 * 24 * 3600);
/// Validity of the serving certificate written by [`write_dev_certs`].
pub const DEV_SERVING_VALIDITY: Duration = Duration::from_secs(365 * 24 * 3600);

/// How far into the past `notBefore` is set, so that replicas and the API server whose clocks
/// lag a little behind ours accept a certificate minted a moment ago.
const CLOCK_SKEW_ALLOWANCE: SignedDuration = SignedDuration::from_mins(5);

/// Errors from generating, loading, inspecting or writing certificates.
#[derive(Debug, thiserror::Error)]
pub enum CertError {
    /// rcgen could not build or sign a certificate or key.
    #[error("cannot generate certificate: {0}")]
    Generate(#[from] rcgen::Error),
    /// The PEM text holds no parsable X.509 certificate.
    #[error("cannot parse certificate: {0}")]
    Parse(String),
    /// A validity bound does not fit in an X.509 time.
    #[error("certificate validity out of range: {0}")]
    Validity(String),
    /// A name is neither an IP address nor a valid DNS name.
    #[error("invalid subject alternative name {name:?}: {source}")]
    InvalidName {
        /// The rejected name.
        name: String,
        /// Why rcgen rejected it.
        source: rcgen::Error,
    },
    /// Reading or writing a certificate file failed.
    #[error("{path}: {source}")]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// The underlying error.
        source: std::io::Error,
    },
}

/// A CA that issues serving certificates; its key stays in memory.
pub struct CertificateAuthority {
    cert_pem: String,
    key_pem: String,
    not_after: Timestamp,
    issuer: Issuer<'static, KeyPair>,
}

impl std::fmt::Debug for CertificateAuthority {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CertificateAuthority")
            .field("not_after", &self.not_after)
            .finish_non_exhaustive()
    }
}

/// A serving certificate with its key and the CA certificate that signed it, all PEM.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ServingCert {
    /// The leaf certificate (`tls.crt`).
    pub cert_pem: String,
    /// The leaf's PKCS#8 private key (`tls.key`).
    pub key_pem: String,
    /// The issuing CA certificate (`ca.crt`, the webhook configurations' `caBundle`).
    pub ca_pem: String,
    /// End of the leaf's validity.
    pub not_after: Timestamp,
}

/// What [`inspect_certificate`] reads from a certificate.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CertificateInfo {
    /// Start of validity.
    pub not_before: Timestamp,
    /// End of validity.
    pub not_after: Timestamp,
    /// DNS subject alternative names, in certificate order.
    pub dns_names: Vec<String>,
    /// IP subject alternative names, in certificate order.
    pub ip_addresses: Vec<IpAddr>,
    /// Whether the basic constraints mark it as a CA.
    pub is_ca: bool,
}

impl CertificateAuthority {
    /// Generates a self-signed CA with a fresh key, valid from now for `validity`.
    pub fn generate(
        common_name: &str,
        organization: &str,
        validity: Duration,
    ) -> Result<Self, CertError> {
        let now = Timestamp::now();
        let not_after = add_duration(now, validity)?;
        let mut params = CertificateParams::default();
        params.distinguished_name = distinguished_name(common_name, Some(organization));
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.key_usages = vec![
            KeyUsagePurpose::KeyCertSign,
            KeyUsagePurpose::CrlSign,
            KeyUsagePurpose::DigitalSignature,
        ];
        set_validity(&mut params, now, not_after)?;

        let key = KeyPair::generate()?;
        let cert = params.self_signed(&key)?;
        Ok(Self {
            cert_pem: cert.pem(),
            key_pem: key.serialize_pem(),
            not_after: inspect_certificate(&cert.pem())?.not_after,
            issuer: Issuer::new(params, key),
        })
    }

    /// Loads a CA from its certificate and key, e.g. read back from the webhook Secret.
    pub fn from_pem(cert_pem: &str, key_pem: &str) -> Result<Self, CertError> {
        let info = inspect_certificate(cert_pem)?;
        if !info.is_ca {
            return Err(CertError::Parse(
                "the certificate is not a CA (basicConstraints CA:FALSE or absent)".to_owned(),
            ));
        }
        let key = KeyPair::from_pem(key_pem)?;
        let issuer = Issuer::from_ca_cert_pem(cert_pem, key)?;
        Ok(Self {
            cert_pem: cert_pem.to_owned(),
            key_pem: key_pem.to_owned(),
            not_after: info.not_after,
            issuer,
        })
    }

    /// The CA certificate, PEM.
    pub fn cert_pem(&self) -> &str {
        &self.cert_pem
    }

    /// The CA private key, PEM (to persist the CA in a Secret).
    pub fn key_pem(&self) -> &str {
        &self.key_pem
    }

    /// End of the CA's validity.
    pub fn not_after(&self) -> Timestamp {
        self.not_after
    }

    /// Issues a serving certificate (server auth) for the given names with a fresh key.
    ///
    /// The leaf never outlives the CA: its `notAfter` is capped at the CA's.
    pub fn issue_serving_cert(
        &self,
        dns_names: &[String],
        ip_addresses: &[IpAddr],
        validity: Duration,
    ) -> Result<ServingCert, CertError> {
        let now = Timestamp::now();
        let not_after = add_duration(now, validity)?.min(self.not_after);

        let mut params = CertificateParams::default();
        let common_name = dns_names
            .first()
            .map(String::as_str)
            .unwrap_or("kuota-webhook");
        params.distinguished_name = distinguished_name(common_name, None);
        params.subject_alt_names = subject_alt_names(dns_names, ip_addresses)?;
        params.is_ca = IsCa::ExplicitNoCa;
        params.key_usages = vec![
            KeyUsagePurpose::DigitalSignature,
            KeyUsagePurpose::KeyEncipherment,
        ];
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
        params.use_authority_key_identifier_extension = true;
        set_validity(&mut params, now, not_after)?;

        let key = KeyPair::generate()?;
        let cert = params.signed_by(&key, &self.issuer)?;
        Ok(ServingCert {
            cert_pem: cert.pem(),
            key_pem: key.serialize_pem(),
            ca_pem: self.cert_pem.clone(),
            not_after: inspect_certificate(&cert.pem())?.not_after,
        })
    }
}

/// The DNS names a client may use for a Service: `svc`, `svc.ns`, `svc.ns.svc` and
/// `svc.ns.svc.cluster.local`. The API server calls webhooks at `svc.ns.svc`.
pub fn service_dns_names(service: &str, namespace: &str) -> Vec<String> {
    vec![
        service.to_owned(),
        format!("{service}.{namespace}"),
        format!("{service}.{namespace}.svc"),
        format!("{service}.{namespace}.svc.cluster.local"),
    ]
}

/// Reads validity and subject alternative names from the first certificate in `cert_pem`.
pub fn inspect_certificate(cert_pem: &str) -> Result<CertificateInfo, CertError> {
    let (_, pem) = x509_parser::pem::parse_x509_pem(cert_pem.as_bytes())
        .map_err(|err| CertError::Parse(format!("no PEM certificate: {err}")))?;
    if pem.label != "CERTIFICATE" {
        return Err(CertError::Parse(format!(
            "expected a CERTIFICATE PEM block, found {:?}",
            pem.label
        )));
    }
    let cert = pem
        .parse_x509()
        .map_err(|err| CertError::Parse(err.to_string()))?;
    let validity = cert.validity();
    let mut dns_names = Vec::new();
    let mut ip_addresses = Vec::new();
    let san = cert
        .subject_alternative_name()
        .map_err(|err| CertError::Parse(err.to_string()))?;
    for name in san.iter().flat_map(|ext| &ext.value.general_names) {
        match name {
            GeneralName::DNSName(dns) => dns_names.push((*dns).to_owned()),
            GeneralName::IPAddress(octets) => {
                if let Some(ip) = ip_from_octets(octets) {
                    ip_addresses.push(ip);
                }
            }
            _ => {}
        }
    }
    Ok(CertificateInfo {
        not_before: timestamp_from_asn1(validity.not_before)?,
        not_after: timestamp_from_asn1(validity.not_after)?,
        dns_names,
        ip_addresses,
        is_ca: cert.is_ca(),
    })
}

/// Whether a certificate must be replaced at `now`: it is unparsable, not yet valid, or expires
/// within `margin`.
pub fn needs_rotation(cert_pem: &str, now: Timestamp, margin: Duration) -> bool {
    let Ok(info) = inspect_certificate(cert_pem) else {
        return true;
    };
    let Ok(margin) = SignedDuration::try_from(margin) else {
        return true;
    };
    match now.checked_add(margin) {
        Ok(deadline) => now < info.not_before || deadline >= info.not_after,
        Err(_) => true,
    }
}

/// Generates a CA and a serving certificate for `hosts` (DNS names or IP addresses) and writes
/// `ca.crt`, `tls.crt` and `tls.key` into `out_dir`, creating it. The CA key is not written:
/// dev certificates are re-created, never re-issued.
pub fn write_dev_certs(out_dir: &Path, hosts: &[String]) -> Result<ServingCert, CertError> {
    let mut dns_names = Vec::new();
    let mut ip_addresses = Vec::new();
    for host in hosts {
        match host.parse::<IpAddr>() {
            Ok(ip) => ip_addresses.push(ip),
            Err(_) => dns_names.push(host.clone()),
        }
    }
    let ca = CertificateAuthority::generate(CA_COMMON_NAME, CA_ORGANIZATION, DEV_CA_VALIDITY)?;
    let serving = ca.issue_serving_cert(&dns_names, &ip_addresses, DEV_SERVING_VALIDITY)?;

    fs::create_dir_all(out_dir).map_err(|source| CertError::Io {
        path: out_dir.to_owned(),
        source,
    })?;
    write_file(&out_dir.join(CA_CERT_FILE), &serving.ca_pem, false)?;
    write_file(&out_dir.join(TLS_CERT_FILE), &serving.cert_pem, false)?;
    write_file(&out_dir.join(TLS_KEY_FILE), &serving.key_pem, true)?;
    Ok(serving)
}

fn write_file(path: &Path, contents: &str, private: bool) -> Result<(), CertError> {
    let io_error = |source| CertError::Io {
        path: path.to_owned(),
        source,
    };
    let mut options = fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    if private {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    #[cfg(not(unix))]
    let _ = private;
    let mut file = options.open(path).map_err(io_error)?;
    file.write_all(contents.as_bytes()).map_err(io_error)
}

fn distinguished_name(common_name: &str, organization: Option<&str>) -> DistinguishedName {
    let mut name = DistinguishedName::new();
    name.push(DnType::CommonName, common_name);
    if let Some(organization) = organization {
        name.push(DnType::OrganizationName, organization);
    }
    name
}

fn subject_alt_names(
    dns_names: &[String],
    ip_addresses: &[IpAddr],
) -> Result<Vec<SanType>, CertError> {
    let dns = dns_names.iter().map(|name| {
        name.as_str()
            .try_into()
            .map(SanType::DnsName)
            .map_err(|source| CertError::InvalidName {
                name: name.clone(),
                source,
            })
    });
    let ips = ip_addresses.iter().map(|ip| Ok(SanType::IpAddress(*ip)));
    dns.chain(ips).collect()
}

fn set_validity(
    params: &mut CertificateParams,
    now: Timestamp,
    not_after: Timestamp,
) -> Result<(), CertError> {
    let not_before = now
        .checked_sub(CLOCK_SKEW_ALLOWANCE)
        .map_err(|err| CertError::Validity(err.to_string()))?;
    params.not_before = asn1_from_timestamp(not_before)?.to_datetime();
    params.not_after = asn1_from_timestamp(not_after)?.to_datetime();
    Ok(())
}

fn add_duration(now: Timestamp, validity: Duration) -> Result<Timestamp, CertError> {
    SignedDuration::try_from(validity)
        .ok()
        .and_then(|validity| now.checked_add(validity).ok())
        .ok_or_else(|| CertError::Validity(format!("{validity:?} from {now}")))
}

// rcgen takes `time::OffsetDateTime`; x509-parser's ASN1Time converts to it from Unix seconds,
// which saves a direct dependency on `time` for two conversions.
fn asn1_from_timestamp(timestamp: Timestamp) -> Result<ASN1Time, CertError> {
    ASN1Time::from_timestamp(timestamp.as_second())
        .map_err(|err| CertError::Validity(format!("{timestamp}: {err}")))
}

fn timestamp_from_asn1(time: ASN1Time) -> Result<Timestamp, CertError> {
    Timestamp::from_second(time.timestamp())
        .map_err(|err| CertError::Parse(format!("certificate time out of range: {err}")))
}

fn ip_from_octets(octets: &[u8]) -> Option<IpAddr> {
    match octets.len() {
        4 => <[u8; 4]>::try_from(octets).ok().map(IpAddr::from),
        16 => <[u8; 16]>::try_from(octets).ok().map(IpAddr::from),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    const DAY: Duration = Duration::from_secs(24 * 3600);

    fn ca() -> CertificateAuthority {
        CertificateAuthority::generate(CA_COMMON_NAME, CA_ORGANIZATION, 30 * DAY).unwrap()
    }

    #[test]
    fn service_dns_names_cover_all_forms() {
        assert_eq!(
            service_dns_names("kueue-webhook-service", "kueue-system"),
            vec![
                "kueue-webhook-service",
                "kueue-webhook-service.kueue-system",
                "kueue-webhook-service.kueue-system.svc",
                "kueue-webhook-service.kueue-system.svc.cluster.local",
            ]
        );
    }

    #[test]
    fn ca_is_a_ca_with_kueue_subject() {
        let ca = ca();
        let info = inspect_certificate(ca.cert_pem()).unwrap();
        assert!(info.is_ca);
        assert_eq!(info.not_after, ca.not_after());
        let (_, pem) = x509_parser::pem::parse_x509_pem(ca.cert_pem().as_bytes()).unwrap();
        let cert = pem.parse_x509().unwrap();
        assert_eq!(cert.subject().to_string(), "CN=kueue-ca, O=kueue");
        assert_eq!(cert.subject(), cert.issuer());
    }

    #[test]
    fn serving_cert_has_sans_validity_and_issuer() {
        let ca = ca();
        let names = service_dns_names("kueue-webhook-service", "kueue-system");
        let ips: Vec<IpAddr> = vec!["127.0.0.1".parse().unwrap(), "::1".parse().unwrap()];
        let before = Timestamp::now();
        let serving = ca.issue_serving_cert(&names, &ips, 7 * DAY).unwrap();

        let info = inspect_certificate(&serving.cert_pem).unwrap();
        assert_eq!(info.dns_names, names);
        assert_eq!(info.ip_addresses, ips);
        assert!(!info.is_ca);
        assert_eq!(info.not_after, serving.not_after);
        let expected_end = before.as_second() + 7 * 24 * 3600;
        assert!((info.not_after.as_second() - expected_end).abs() <= 2);
        let expected_start = before.as_second() - 300;
        assert!((info.not_before.as_second() - expected_start).abs() <= 2);
        assert_eq!(serving.ca_pem, ca.cert_pem());

        let (_, pem) = x509_parser::pem::parse_x509_pem(serving.cert_pem.as_bytes()).unwrap();
        let leaf = pem.parse_x509().unwrap();
        assert_eq!(leaf.issuer().to_string(), "CN=kueue-ca, O=kueue");
        assert_eq!(leaf.subject().to_string(), "CN=kueue-webhook-service");
        let (_, ca_pem) = x509_parser::pem::parse_x509_pem(ca.cert_pem().as_bytes()).unwrap();
        let ca_cert = ca_pem.parse_x509().unwrap();
        leaf.verify_signature(Some(ca_cert.public_key())).unwrap();
    }

    #[test]
    fn serving_cert_never_outlives_its_ca() {
        let ca = CertificateAuthority::generate("short", "kueue", DAY).unwrap();
        let serving = ca
            .issue_serving_cert(&["a.example".to_owned()], &[], 365 * DAY)
            .unwrap();
        assert_eq!(serving.not_after, ca.not_after());
    }

    #[test]
    fn ca_loaded_from_pem_issues_certs_that_verify_against_it() {
        let original = ca();
        let loaded =
            CertificateAuthority::from_pem(original.cert_pem(), original.key_pem()).unwrap();
        assert_eq!(loaded.not_after(), original.not_after());
        let serving = loaded
            .issue_serving_cert(&["svc.ns.svc".to_owned()], &[], DAY)
            .unwrap();
        assert_eq!(serving.ca_pem, original.cert_pem());

        let (_, leaf_pem) = x509_parser::pem::parse_x509_pem(serving.cert_pem.as_bytes()).unwrap();
        let leaf = leaf_pem.parse_x509().unwrap();
        let (_, ca_pem) = x509_parser::pem::parse_x509_pem(original.cert_pem().as_bytes()).unwrap();
        let ca_cert = ca_pem.parse_x509().unwrap();
        leaf.verify_signature(Some(ca_cert.public_key())).unwrap();
        assert_eq!(leaf.issuer(), ca_cert.subject());
    }

    #[test]
    fn loading_a_leaf_as_ca_is_rejected() {
        let ca = ca();
        let serving = ca
            .issue_serving_cert(&["x.example".to_owned()], &[], DAY)
            .unwrap();
        let err = CertificateAuthority::from_pem(&serving.cert_pem, &serving.key_pem).unwrap_err();
        assert_eq!(
            err.to_string(),
            "cannot parse certificate: the certificate is not a CA (basicConstraints CA:FALSE or absent)"
        );
    }

    #[test]
    fn invalid_dns_name_is_reported() {
        let err = ca()
            .issue_serving_cert(&["bad\u{e9}name".to_owned()], &[], DAY)
            .unwrap_err();
        assert!(matches!(err, CertError::InvalidName { ref name, .. } if name == "bad\u{e9}name"));
    }

    #[test]
    fn needs_rotation_table() {
        let serving = ca()
            .issue_serving_cert(&["a.example".to_owned()], &[], 10 * DAY)
            .unwrap();
        let info = inspect_certificate(&serving.cert_pem).unwrap();
        let at = |offset: SignedDuration| info.not_after.checked_sub(offset).unwrap();
        let cases = [
            (
                "well inside validity",
                at(SignedDuration::from_hours(5 * 24)),
                DAY,
                false,
            ),
            (
                "just outside the margin",
                at(SignedDuration::from_hours(24) + SignedDuration::from_secs(1)),
                DAY,
                false,
            ),
            (
                "exactly at the margin",
                at(SignedDuration::from_hours(24)),
                DAY,
                true,
            ),
            (
                "inside the margin",
                at(SignedDuration::from_hours(1)),
                DAY,
                true,
            ),
            (
                "expired",
                info.not_after
                    .checked_add(SignedDuration::from_secs(1))
                    .unwrap(),
                Duration::ZERO,
                true,
            ),
            (
                "not yet valid",
                info.not_before
                    .checked_sub(SignedDuration::from_secs(1))
                    .unwrap(),
                Duration::ZERO,
                true,
            ),
        ];
        for (name, now, margin, expected) in cases {
            assert_eq!(
                needs_rotation(&serving.cert_pem, now, margin),
                expected,
                "{name}"
            );
        }
        assert!(needs_rotation(
            "not a certificate",
            Timestamp::now(),
            Duration::ZERO
        ));
        assert!(needs_rotation(
            &serving.key_pem,
            Timestamp::now(),
            Duration::ZERO
        ));
    }

    #[test]
    fn write_dev_certs_writes_three_files() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("certs");
        let hosts = vec!["localhost".to_owned(), "127.0.0.1".to_owned()];
        let serving = write_dev_certs(&out, &hosts).unwrap();

        assert_eq!(
            fs::read_to_string(out.join("ca.crt")).unwrap(),
            serving.ca_pem
        );
        assert_eq!(
            fs::read_to_string(out.join("tls.crt")).unwrap(),
            serving.cert_pem
        );
        assert_eq!(
            fs::read_to_string(out.join("tls.key")).unwrap(),
            serving.key_pem
        );
        let info = inspect_certificate(&serving.cert_pem).unwrap();
        assert_eq!(info.dns_names, vec!["localhost"]);
        assert_eq!(
            info.ip_addresses,
            vec!["127.0.0.1".parse::<IpAddr>().unwrap()]
        );
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = fs::metadata(out.join("tls.key"))
                .unwrap()
                .permissions()
                .mode();
            assert_eq!(mode & 0o777, 0o600);
        }
    }
}
