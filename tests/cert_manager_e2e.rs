//! Internal certificate management against a real API server: replicas starting together agree
//! on one Secret, the CA bundle reaches the webhook configurations and the CRD conversion
//! webhooks (and comes back when a configuration is re-created), and the serving certificate
//! rotates under load, on two replicas, without a single failed request.
//!
//! Tests that touch cluster-scoped objects (webhook configurations, CRDs) hold `CLUSTER_SCOPED`;
//! the others work in a namespace of their own.

mod common {
    pub mod review;
}

use std::collections::BTreeSet;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use futures::future::BoxFuture;
use k8s_openapi::ByteString;
use k8s_openapi::api::admissionregistration::v1::{
    MutatingWebhookConfiguration, ValidatingWebhookConfiguration,
};
use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1 as apiextensions;
use kube::api::{Api, DeleteParams, PostParams};
use kube::core::admission::{AdmissionRequest, AdmissionResponse};
use kuota::admission::table::{
    mutating_configuration, service_client_config, validating_configuration,
};
use kuota::metrics::MetricsRegistry;
use kuota::tls::certs::{CA_CERT_FILE, TLS_CERT_FILE, TLS_KEY_FILE, inspect_certificate};
use kuota::tls::manager::{CA_KEY_FILE, CertBundle, CertManager, CertManagerConfig};
use kuota::tls::{TlsHandle, install_crypto_provider};
use kuota::webhook::RawObject;
use kuota::webhook::{
    AdmissionHandler, AdmissionRoute, Readiness, ServerHandle, TlsSource, WebhookServerConfig,
    WebhookState, WebhookType, serve,
};
use kuota_cluster::{TestCluster, eventually};
use pretty_assertions::assert_eq;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::Mutex;

use common::review::review;

const SERVICE: &str = "kueue-webhook-service";
const SECRET: &str = "kueue-webhook-server-cert";
const MUTATING: &str = "kueue-mutating-webhook-configuration";
const VALIDATING: &str = "kueue-validating-webhook-configuration";
const VALIDATE_JOB: &str = "/validate-batch-v1-job";

static CLUSTER_SCOPED: Mutex<()> = Mutex::const_new(());

fn manager_config(namespace: &str) -> CertManagerConfig {
    CertManagerConfig::new(namespace, SERVICE, SECRET)
}

/// A replica's manager, with a client of its own.
async fn replica(cluster: &TestCluster, config: &CertManagerConfig) -> CertManager {
    CertManager::new(cluster.client().await, config.clone())
}

fn bundle_of(secret: &Secret) -> CertBundle {
    let data = secret.data.as_ref().expect("the Secret has data");
    let text = |key: &str| String::from_utf8(data[key].0.clone()).expect("PEM is UTF-8");
    CertBundle {
        ca_cert: text(CA_CERT_FILE),
        ca_key: text(CA_KEY_FILE),
        tls_cert: text(TLS_CERT_FILE),
        tls_key: text(TLS_KEY_FILE),
    }
}

// === a and a': replicas agree on one Secret ===

#[tokio::test]
async fn replicas_starting_together_agree_on_one_secret() {
    let cluster = TestCluster::shared().await;
    // A few rounds, each on an empty namespace, to give the race several chances.
    for _ in 0..3 {
        let ns = cluster.namespace().await;
        let config = manager_config(ns.name());
        let (first, second) = (
            replica(cluster, &config).await,
            replica(cluster, &config).await,
        );
        let (first, second) = tokio::join!(first.ensure(), second.ensure());
        let (first, second) = (
            first.expect("first replica"),
            second.expect("second replica"),
        );
        assert_eq!(first, second);

        let secrets: Api<Secret> = Api::namespaced(cluster.client().await, ns.name());
        let all = secrets.list(&Default::default()).await.expect("list");
        let names: Vec<_> = all
            .items
            .iter()
            .filter_map(|s| s.metadata.name.clone())
            .collect();
        assert_eq!(names, vec![SECRET.to_owned()]);
        let stored = &all.items[0];
        let keys: Vec<_> = stored
            .data
            .as_ref()
            .expect("data")
            .keys()
            .cloned()
            .collect();
        assert_eq!(keys, vec!["ca.crt", "ca.key", "tls.crt", "tls.key"]);
        assert_eq!(bundle_of(stored), first);

        let serving = inspect_certificate(&first.tls_cert).expect("serving certificate");
        assert_eq!(
            serving.dns_names,
            vec![
                SERVICE.to_owned(),
                format!("{SERVICE}.{}", ns.name()),
                format!("{SERVICE}.{}.svc", ns.name()),
                format!("{SERVICE}.{}.svc.cluster.local", ns.name()),
            ]
        );
        assert!(!serving.is_ca);
        assert!(inspect_certificate(&first.ca_cert).expect("CA").is_ca);

        // A third replica later finds valid certificates and writes nothing.
        let later = replica(cluster, &config)
            .await
            .ensure()
            .await
            .expect("later replica");
        assert_eq!(later, first);
        let reread = secrets.get(SECRET).await.expect("get");
        assert_eq!(
            reread.metadata.resource_version,
            stored.metadata.resource_version
        );
    }
}

#[tokio::test]
async fn an_empty_secret_from_the_install_is_filled_and_keeps_its_metadata() {
    let cluster = TestCluster::shared().await;
    let ns = cluster.namespace().await;
    let secrets: Api<Secret> = Api::namespaced(cluster.client().await, ns.name());
    let installed: Secret = serde_json::from_value(json!({
        "metadata": {
            "name": SECRET,
            "labels": {"app.kubernetes.io/managed-by": "Helm"},
            "annotations": {"meta.helm.sh/release-name": "kueue"}
        }
    }))
    .expect("a Secret");
    secrets
        .create(&PostParams::default(), &installed)
        .await
        .expect("the install's empty Secret");

    let config = manager_config(ns.name());
    let (first, second) = (
        replica(cluster, &config).await,
        replica(cluster, &config).await,
    );
    let (first, second) = tokio::join!(first.ensure(), second.ensure());
    let first = first.expect("first replica");
    assert_eq!(second.expect("second replica"), first);

    let stored = secrets.get(SECRET).await.expect("get");
    assert_eq!(bundle_of(&stored), first);
    assert_eq!(stored.type_.as_deref(), Some("Opaque"));
    assert_eq!(
        stored.metadata.labels, installed.metadata.labels,
        "labels kept"
    );
    assert_eq!(
        stored.metadata.annotations, installed.metadata.annotations,
        "annotations kept"
    );
}

// === b: CA bundle injection ===

/// Kueue's CRDs, the five converted ones with a conversion webhook that has no CA bundle yet.
async fn install_crds_with_conversion_webhooks(cluster: &TestCluster, namespace: &str) {
    let crds: Vec<_> = kuota::api::crds::all()
        .into_iter()
        .map(|crd| {
            if !kuota::api::crds::CONVERTED_PLURALS.contains(&crd.spec.names.plural.as_str()) {
                return crd;
            }
            let client = apiextensions::WebhookClientConfig {
                service: Some(apiextensions::ServiceReference {
                    name: SERVICE.to_owned(),
                    namespace: namespace.to_owned(),
                    path: Some("/convert".to_owned()),
                    port: Some(443),
                }),
                ca_bundle: None,
                url: None,
            };
            kuota::api::crds::with_conversion_webhook(crd, client)
        })
        .collect();
    cluster.plane().install_crds(&crds).await.expect("CRDs");
}

/// The CA bundles of every webhook in both configurations (None for a missing configuration).
async fn configuration_bundles(cluster: &TestCluster) -> Vec<Option<ByteString>> {
    let client = cluster.client().await;
    let mutating: Api<MutatingWebhookConfiguration> = Api::all(client.clone());
    let validating: Api<ValidatingWebhookConfiguration> = Api::all(client);
    let mut bundles = Vec::new();
    let config = mutating
        .get(MUTATING)
        .await
        .expect("mutating configuration");
    bundles.extend(
        config
            .webhooks
            .into_iter()
            .flatten()
            .map(|w| w.client_config.ca_bundle),
    );
    let config = validating
        .get(VALIDATING)
        .await
        .expect("validating configuration");
    bundles.extend(
        config
            .webhooks
            .into_iter()
            .flatten()
            .map(|w| w.client_config.ca_bundle),
    );
    bundles
}

#[tokio::test]
async fn the_ca_bundle_reaches_the_webhook_configurations_and_conversion_webhooks() {
    let _cluster_scoped = CLUSTER_SCOPED.lock().await;
    let cluster = TestCluster::shared().await;
    let ns = cluster.namespace().await;
    let ns = ns.name();
    install_crds_with_conversion_webhooks(cluster, ns).await;
    let service = |path: &str| service_client_config(SERVICE, ns, path, None);
    let mutating = mutating_configuration("kueue-", service, ns);
    let validating = validating_configuration("kueue-", service, ns);
    cluster
        .plane()
        .register_webhooks(Some(&mutating), Some(&validating))
        .await
        .expect("webhook configurations");
    let webhook_count =
        mutating.webhooks.iter().flatten().count() + validating.webhooks.iter().flatten().count();
    assert_eq!(
        configuration_bundles(cluster).await,
        vec![None; webhook_count]
    );

    let config = manager_config(ns);
    let (first, second) = (
        replica(cluster, &config).await,
        replica(cluster, &config).await,
    );
    let bundle = first.ensure().await.expect("certificates");
    // Two replicas inject at once: both succeed.
    let (one, other) = tokio::join!(
        first.inject_ca_bundle(&bundle.ca_cert),
        second.inject_ca_bundle(&bundle.ca_cert)
    );
    one.expect("first replica injects");
    other.expect("second replica injects");

    let ca = ByteString(bundle.ca_cert.as_bytes().to_vec());
    assert_eq!(
        configuration_bundles(cluster).await,
        vec![Some(ca.clone()); webhook_count]
    );
    let crds: Api<apiextensions::CustomResourceDefinition> = Api::all(cluster.client().await);
    for crd in crds.list(&Default::default()).await.expect("CRDs").items {
        let name = crd.metadata.name.clone().unwrap_or_default();
        if !name.ends_with(".kueue.x-k8s.io") {
            continue;
        }
        let conversion = crd.spec.conversion.expect("conversion");
        let injected = conversion
            .webhook
            .and_then(|webhook| webhook.client_config)
            .and_then(|client| client.ca_bundle);
        if kuota::api::crds::CONVERTED_PLURALS.contains(&crd.spec.names.plural.as_str()) {
            assert_eq!(conversion.strategy, "Webhook", "{name}");
            assert_eq!(injected, Some(ca.clone()), "{name}");
        } else {
            assert_eq!(conversion.strategy, "None", "{name}");
            assert_eq!(injected, None, "{name}");
        }
    }

    // A configuration re-created without a bundle (a re-install) gets it back from the
    // running manager, though the certificates did not change.
    let api: Api<ValidatingWebhookConfiguration> = Api::all(cluster.client().await);
    api.delete(VALIDATING, &DeleteParams::default())
        .await
        .expect("delete");
    cluster
        .plane()
        .register_webhooks(None, Some(&validating))
        .await
        .expect("re-created");
    let mut fast = config.clone();
    fast.check_interval = Duration::from_millis(200);
    let tls = TlsHandle::new(&bundle.tls_cert, &bundle.tls_key).expect("servable");
    let running = tokio::spawn(replica(cluster, &fast).await.run(tls, bundle.clone()));
    eventually(
        Duration::from_secs(10),
        "the bundle is injected again",
        || async { configuration_bundles(cluster).await == vec![Some(ca.clone()); webhook_count] },
    )
    .await
    .expect("re-injected");
    running.abort();

    let mutating_api: Api<MutatingWebhookConfiguration> = Api::all(cluster.client().await);
    mutating_api
        .delete(MUTATING, &DeleteParams::default())
        .await
        .expect("cleanup");
    api.delete(VALIDATING, &DeleteParams::default())
        .await
        .expect("cleanup");
}

// === c: rotation under load ===

struct AllowAll;

impl AdmissionHandler for AllowAll {
    fn routes(&self) -> Vec<AdmissionRoute> {
        vec![AdmissionRoute::new(
            VALIDATE_JOB,
            WebhookType::Validating,
            "batch",
            "Job",
        )]
    }

    fn admit<'a>(
        &'a self,
        _route: &'a AdmissionRoute,
        request: &'a AdmissionRequest<RawObject>,
    ) -> BoxFuture<'a, AdmissionResponse> {
        Box::pin(async move { AdmissionResponse::from(request) })
    }
}

async fn start_server(bundle: &CertBundle) -> ServerHandle {
    let state = WebhookState::new(Arc::new(AllowAll), Arc::new(MetricsRegistry::new()));
    serve(
        WebhookServerConfig {
            listen_address: SocketAddr::from(([127, 0, 0, 1], 0)),
            health_listen_address: SocketAddr::from(([127, 0, 0, 1], 0)),
            tls: TlsSource::InMemory {
                cert_pem: bundle.tls_cert.clone(),
                key_pem: bundle.tls_key.clone(),
            },
            shutdown_grace: Duration::from_secs(1),
        },
        state,
        Readiness::default(),
    )
    .await
    .expect("webhook server")
}

/// Whether an AdmissionReview response body allows the request `uid`.
fn allowed(body: &[u8], uid: &str) -> bool {
    serde_json::from_slice::<Value>(body).is_ok_and(|review| {
        review["response"]["uid"] == json!(uid) && review["response"]["allowed"] == json!(true)
    })
}

fn client_tls(ca_pem: &str, alpn: &[&[u8]]) -> rustls::ClientConfig {
    let mut roots = rustls::RootCertStore::empty();
    for cert in CertificateDer::pem_slice_iter(ca_pem.as_bytes()) {
        roots.add(cert.expect("CA PEM")).expect("CA certificate");
    }
    let mut config = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .expect("protocol versions")
    .with_root_certificates(roots)
    .with_no_client_auth();
    config.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
    config
}

/// What the load saw.
#[derive(Default)]
struct Tally {
    requests: usize,
    failures: Vec<String>,
}

impl Tally {
    fn record(&mut self, outcome: Result<(), String>) {
        self.requests += 1;
        if let Err(err) = outcome
            && self.failures.len() < 1000
        {
            self.failures.push(err);
        }
    }
}

/// A certificate as the client saw it in a handshake.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Served {
    not_after: i64,
    serial: String,
}

fn served(der: &[u8]) -> Served {
    let (_, cert) = x509_parser::parse_x509_certificate(der).expect("served certificate");
    Served {
        not_after: cert.validity().not_after.timestamp(),
        serial: cert.raw_serial_as_string(),
    }
}

fn served_pem(pem: &str) -> Served {
    served(&CertificateDer::from_pem_slice(pem.as_bytes()).expect("PEM"))
}

/// A keep-alive HTTP/2 client (as the API server calls webhooks) posting reviews until `stop`.
async fn keep_alive_load(
    host: String,
    address: SocketAddr,
    ca_pem: String,
    stop: Arc<AtomicBool>,
) -> Tally {
    let client = reqwest::Client::builder()
        .use_preconfigured_tls(client_tls(&ca_pem, &[b"h2"]))
        .resolve(&host, address)
        .timeout(Duration::from_secs(5))
        .build()
        .expect("client");
    let url = format!("https://{host}:{}{VALIDATE_JOB}", address.port());
    let mut tally = Tally::default();
    let mut seq = 0;
    while !stop.load(Ordering::Relaxed) {
        seq += 1;
        let uid = format!("keep-alive-{seq}");
        let outcome = async {
            let response = client
                .post(&url)
                .json(&review(&uid, "batch", "Job", "load"))
                .send()
                .await
                .map_err(|err| format!("{uid}: {err:?}"))?;
            let status = response.status();
            let body = response
                .bytes()
                .await
                .map_err(|err| format!("{uid}: {err}"))?;
            if status == 200 && allowed(&body, &uid) {
                Ok(())
            } else {
                Err(format!(
                    "{uid}: {status} {}",
                    String::from_utf8_lossy(&body)
                ))
            }
        }
        .await;
        tally.record(outcome);
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    tally
}

/// One HTTP/1.1 request on a new connection: the certificate the handshake presented.
async fn fresh_connection_request(
    host: &str,
    address: SocketAddr,
    tls: Arc<rustls::ClientConfig>,
    uid: &str,
) -> Result<Served, String> {
    let tcp = tokio::net::TcpStream::connect(address)
        .await
        .map_err(|err| format!("{uid}: connect: {err}"))?;
    let name = ServerName::try_from(host.to_owned()).map_err(|err| err.to_string())?;
    let mut stream = tokio_rustls::TlsConnector::from(tls)
        .connect(name, tcp)
        .await
        .map_err(|err| format!("{uid}: handshake: {err}"))?;
    let certificate = {
        let (_, session) = stream.get_ref();
        let chain = session.peer_certificates().ok_or("no peer certificate")?;
        served(&chain[0])
    };
    let body = review(uid, "batch", "Job", "load").to_string();
    let request = format!(
        "POST {VALIDATE_JOB} HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    stream
        .write_all(request.as_bytes())
        .await
        .map_err(|err| format!("{uid}: write: {err}"))?;
    let mut response = Vec::new();
    stream
        .read_to_end(&mut response)
        .await
        .map_err(|err| format!("{uid}: read: {err}"))?;
    let text = String::from_utf8_lossy(&response);
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    if head.starts_with("HTTP/1.1 200") && allowed(body.as_bytes(), uid) {
        Ok(certificate)
    } else {
        Err(format!("{uid}: {text}"))
    }
}

/// New connections (and handshakes) in a loop until `stop`: every certificate served, in the
/// order seen.
async fn fresh_connection_load(
    host: String,
    address: SocketAddr,
    ca_pem: String,
    stop: Arc<AtomicBool>,
    replica: usize,
) -> (Tally, Vec<Served>) {
    let tls = Arc::new(client_tls(&ca_pem, &[b"http/1.1"]));
    let mut tally = Tally::default();
    let mut seen: Vec<Served> = Vec::new();
    let mut seq = 0;
    while !stop.load(Ordering::Relaxed) {
        seq += 1;
        let uid = format!("fresh-{replica}-{seq}");
        let outcome = fresh_connection_request(&host, address, tls.clone(), &uid).await;
        if let Ok(certificate) = &outcome
            && seen.last() != Some(certificate)
        {
            seen.push(certificate.clone());
        }
        tally.record(outcome.map(|_| ()));
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    (tally, seen)
}

#[tokio::test]
async fn the_serving_certificate_rotates_under_load_without_a_failed_request() {
    let _cluster_scoped = CLUSTER_SCOPED.lock().await;
    install_crypto_provider();
    let cluster = TestCluster::shared().await;
    let ns = cluster.namespace().await;
    let mut config = manager_config(ns.name());
    config.cert_validity = Duration::from_secs(20);
    config.rotation_margin = Duration::from_secs(10);
    config.check_interval = Duration::from_secs(1);
    let host = format!("{SERVICE}.{}.svc", ns.name());

    // Two replicas, each serving what its own manager read and keeping it fresh.
    let managers = [
        replica(cluster, &config).await,
        replica(cluster, &config).await,
    ];
    let (first, second) = tokio::join!(managers[0].ensure(), managers[1].ensure());
    let initial = first.expect("first replica");
    assert_eq!(second.expect("second replica"), initial);
    let mut servers = Vec::new();
    let mut rotations = Vec::new();
    for manager in managers {
        let server = start_server(&initial).await;
        rotations.push(tokio::spawn(
            manager.run(server.tls().clone(), initial.clone()),
        ));
        servers.push(server);
    }

    let stop = Arc::new(AtomicBool::new(false));
    let mut keep_alive = Vec::new();
    let mut fresh = Vec::new();
    for (replica, server) in servers.iter().enumerate() {
        let address = server.webhook_address();
        keep_alive.push(tokio::spawn(keep_alive_load(
            host.clone(),
            address,
            initial.ca_cert.clone(),
            stop.clone(),
        )));
        fresh.push(tokio::spawn(fresh_connection_load(
            host.clone(),
            address,
            initial.ca_cert.clone(),
            stop.clone(),
            replica,
        )));
    }

    // Two rotations take about 2 × (validity − margin) = 20 s; stop once both replicas have
    // served a third certificate, or at the deadline.
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut served_by = vec![BTreeSet::from([served_pem(&initial.tls_cert)]); 2];
    while Instant::now() < deadline && served_by.iter().any(|set| set.len() < 3) {
        tokio::time::sleep(Duration::from_millis(200)).await;
        for (server, set) in servers.iter().zip(&mut served_by) {
            set.insert(served_pem(&server.tls().cert_pem()));
        }
    }
    // Keep the load on for another round of checks after the last swap.
    tokio::time::sleep(config.check_interval * 2).await;
    stop.store(true, Ordering::Relaxed);

    let mut requests = 0;
    let mut failures = Vec::new();
    for task in keep_alive {
        let tally = task.await.expect("keep-alive load");
        assert!(
            tally.requests > 100,
            "keep-alive requests: {}",
            tally.requests
        );
        requests += tally.requests;
        failures.extend(tally.failures);
    }
    for (replica, task) in fresh.into_iter().enumerate() {
        let (tally, seen) = task.await.expect("fresh-connection load");
        assert!(
            tally.requests > 100,
            "fresh-connection requests: {}",
            tally.requests
        );
        requests += tally.requests;
        failures.extend(tally.failures);
        // Handshakes saw at least three certificates, each later than the one before.
        assert!(seen.len() >= 3, "replica {replica} presented {seen:?}");
        assert!(
            seen.windows(2)
                .all(|pair| pair[0].not_after < pair[1].not_after),
            "replica {replica} went back to an older certificate: {seen:?}"
        );
    }
    assert_eq!(failures, Vec::<String>::new(), "{requests} requests");
    eprintln!(
        "{requests} requests, none failed; certificates served per replica: {:?}",
        served_by.iter().map(BTreeSet::len).collect::<Vec<_>>()
    );
    for (replica, set) in served_by.iter().enumerate() {
        assert!(set.len() >= 3, "replica {replica} served {set:?}");
    }

    // The CA never changed, and both replicas serve what the Secret holds (read together, as
    // the Secret keeps rotating).
    let secrets: Api<Secret> = Api::namespaced(cluster.client().await, ns.name());
    let stored = bundle_of(&secrets.get(SECRET).await.expect("Secret"));
    assert_eq!(stored.ca_cert, initial.ca_cert);
    assert_eq!(stored.ca_key, initial.ca_key);
    let handles: Vec<TlsHandle> = servers.iter().map(|s| s.tls().clone()).collect();
    eventually(
        Duration::from_secs(5),
        "both replicas serve the Secret's certificate",
        || {
            let (secrets, handles) = (secrets.clone(), handles.clone());
            async move {
                let stored = bundle_of(&secrets.get(SECRET).await.expect("Secret"));
                handles.iter().all(|tls| tls.cert_pem() == stored.tls_cert)
            }
        },
    )
    .await
    .expect("replicas converge");
    for rotation in rotations {
        rotation.abort();
    }
}
