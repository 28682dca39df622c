//! The webhook server over real HTTPS on 127.0.0.1 (and its router without sockets): admission
//! and conversion round trips, malformed and hostile input, TLS versions, readiness, metrics,
//! certificate rotation under load and certificate-directory reloads.

mod common {
    pub mod client_hello;
    pub mod review;
    pub mod tls;
}

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use axum::body::Body;
use futures::future::BoxFuture;
use kube::core::admission::{AdmissionRequest, AdmissionResponse};
use kuota::metrics::MetricsRegistry;
use kuota::tls::TlsError;
use kuota::tls::certs::{self, CertificateAuthority, ServingCert};
use kuota::webhook::RawObject;
use kuota::webhook::{
    AdmissionHandler, AdmissionRoute, Converter, Readiness, RequestLimits, ServerError,
    ServerHandle, TlsSource, WebhookServerConfig, WebhookState, WebhookType, router, serve,
};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tower::ServiceExt;

use common::client_hello::client_hello;
use common::review::review;
use common::tls::{
    Connections, SERVER_NAME, client_config, connect, der_of, https_client, served_certificate,
    setup, test_ca,
};

const MUTATE_JOB: &str = "/mutate-batch-v1-job";
const VALIDATE_JOB: &str = "/validate-batch-v1-job";
const HOUR: Duration = Duration::from_secs(3600);

// === fake handler ===

#[derive(Default)]
struct FakeHandler {
    calls: AtomicUsize,
}

fn queue_label_patch() -> Value {
    json!([{"op": "add", "path": "/metadata/labels", "value": {"kueue.x-k8s.io/queue-name": "default"}}])
}

impl AdmissionHandler for FakeHandler {
    fn routes(&self) -> Vec<AdmissionRoute> {
        vec![
            AdmissionRoute::new(MUTATE_JOB, WebhookType::Mutating, "batch", "Job"),
            AdmissionRoute::new(VALIDATE_JOB, WebhookType::Validating, "batch", "Job"),
        ]
    }

    fn admit<'a>(
        &'a self,
        route: &'a AdmissionRoute,
        request: &'a AdmissionRequest<RawObject>,
    ) -> BoxFuture<'a, AdmissionResponse> {
        Box::pin(async move {
            self.calls.fetch_add(1, Ordering::SeqCst);
            match request.name.as_str() {
                "slow" => tokio::time::sleep(Duration::from_millis(400)).await,
                "panic" => panic!("handler bug"),
                _ => {}
            }
            let allowed = AdmissionResponse::from(request);
            match route.webhook_type {
                WebhookType::Mutating => allowed
                    .with_patch(serde_json::from_value(queue_label_patch()).unwrap())
                    .unwrap(),
                WebhookType::Validating if request.kind.kind != "Job" => {
                    allowed.deny("only Jobs are validated here")
                }
                WebhookType::Validating if request.name == "forbidden" => {
                    allowed.deny("the name forbidden is not allowed")
                }
                WebhookType::Validating => allowed,
            }
        })
    }
}

fn set_api_version(mut object: Value, desired: &str) -> Result<Value, String> {
    object["apiVersion"] = json!(desired);
    Ok(object)
}

// === server fixture ===

struct TestServer {
    handle: ServerHandle,
    ca: CertificateAuthority,
    handler: Arc<FakeHandler>,
    metrics: Arc<MetricsRegistry>,
    readiness: Readiness,
}

impl TestServer {
    fn url(&self, path: &str) -> String {
        format!(
            "https://{SERVER_NAME}:{}{path}",
            self.handle.webhook_address().port()
        )
    }

    fn health_url(&self, path: &str) -> String {
        format!("http://{}{path}", self.handle.health_address())
    }

    fn client(&self) -> reqwest::Client {
        https_client(self.ca.cert_pem(), Connections::Pooled)
    }
}

fn fast_limits() -> RequestLimits {
    RequestLimits {
        max_body_bytes: 1024 * 1024,
        request_timeout: Duration::from_millis(700),
        header_read_timeout: Duration::from_millis(700),
        tls_handshake_timeout: Duration::from_millis(700),
    }
}

fn localhost_cert(ca: &CertificateAuthority, validity: Duration) -> ServingCert {
    ca.issue_serving_cert(
        &[SERVER_NAME.to_owned()],
        &["127.0.0.1".parse().unwrap()],
        validity,
    )
    .unwrap()
}

fn local_config(tls: TlsSource) -> WebhookServerConfig {
    WebhookServerConfig {
        listen_address: SocketAddr::from(([127, 0, 0, 1], 0)),
        health_listen_address: SocketAddr::from(([127, 0, 0, 1], 0)),
        tls,
        shutdown_grace: Duration::from_secs(5),
    }
}

fn state(
    handler: Arc<FakeHandler>,
    metrics: Arc<MetricsRegistry>,
    limits: RequestLimits,
) -> WebhookState {
    WebhookState::new(handler, metrics)
        .with_converter(Converter::new(set_api_version))
        .with_limits(limits)
}

async fn start(limits: RequestLimits, readiness: Readiness) -> TestServer {
    setup();
    let ca = test_ca();
    let cert = localhost_cert(&ca, HOUR);
    let handler = Arc::new(FakeHandler::default());
    let metrics = Arc::new(MetricsRegistry::new());
    let tls = TlsSource::InMemory {
        cert_pem: cert.cert_pem,
        key_pem: cert.key_pem,
    };
    let handle = serve(
        local_config(tls),
        state(handler.clone(), metrics.clone(), limits),
        readiness.clone(),
    )
    .await
    .unwrap();
    TestServer {
        handle,
        ca,
        handler,
        metrics,
        readiness,
    }
}

async fn post_json(client: &reqwest::Client, url: &str, body: &Value) -> (u16, Value) {
    let response = client.post(url).json(body).send().await.unwrap();
    let status = response.status().as_u16();
    (status, response.json().await.unwrap())
}

async fn post_raw(client: &reqwest::Client, url: &str, body: Vec<u8>) -> (u16, Value) {
    let response = client
        .post(url)
        .header("content-type", "application/json")
        .body(body)
        .send()
        .await
        .unwrap();
    let status = response.status().as_u16();
    (status, response.json().await.unwrap())
}

fn status_body(code: u16, reason: &str, message: &str) -> Value {
    json!({
        "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": message, "reason": reason, "code": code
    })
}

// === admission and conversion ===

#[tokio::test]
async fn mutating_round_trip_returns_the_handlers_patch() {
    let server = start(fast_limits(), Readiness::default()).await;
    let (status, body) = post_json(
        &server.client(),
        &server.url(MUTATE_JOB),
        &review("uid-1", "batch", "Job", "pi"),
    )
    .await;

    assert_eq!(status, 200);
    // kube-core serializes the patch bytes as a JSON array of numbers, which the API server's
    // decoder accepts for a []byte field as well as base64.
    let patch: Vec<u8> = serde_json::from_value(body["response"]["patch"].clone()).unwrap();
    let patch: Value = serde_json::from_slice(&patch).unwrap();
    assert_eq!(patch, queue_label_patch());
    let mut body = body;
    body["response"].as_object_mut().unwrap().remove("patch");
    assert_eq!(
        body,
        json!({
            "apiVersion": "admission.k8s.io/v1",
            "kind": "AdmissionReview",
            "response": {"uid": "uid-1", "allowed": true, "status": {}, "patchType": "JSONPatch"}
        })
    );
    server.handle.shutdown().await.unwrap();
}

#[tokio::test]
async fn validating_denial_carries_the_message() {
    let server = start(fast_limits(), Readiness::default()).await;
    let (status, body) = post_json(
        &server.client(),
        &server.url(VALIDATE_JOB),
        &review("uid-2", "batch", "Job", "forbidden"),
    )
    .await;
    assert_eq!(status, 200);
    assert_eq!(
        body["response"],
        json!({"uid": "uid-2", "allowed": false, "status": {"message": "the name forbidden is not allowed"}})
    );
    server.handle.shutdown().await.unwrap();
}

#[tokio::test]
async fn unknown_kind_passes_a_mutating_path_unchanged_but_a_validating_path_decides() {
    let server = start(fast_limits(), Readiness::default()).await;
    let client = server.client();

    let (status, body) = post_json(
        &client,
        &server.url(MUTATE_JOB),
        &review("uid-3", "", "Pod", "p"),
    )
    .await;
    assert_eq!(status, 200);
    assert_eq!(
        body,
        json!({
            "apiVersion": "admission.k8s.io/v1",
            "kind": "AdmissionReview",
            "response": {"uid": "uid-3", "allowed": true, "status": {}}
        })
    );
    assert_eq!(server.handler.calls.load(Ordering::SeqCst), 0);

    let (status, body) = post_json(
        &client,
        &server.url(VALIDATE_JOB),
        &review("uid-4", "", "Pod", "p"),
    )
    .await;
    assert_eq!(status, 200);
    assert_eq!(
        body["response"],
        json!({"uid": "uid-4", "allowed": false, "status": {"message": "only Jobs are validated here"}})
    );
    assert_eq!(server.handler.calls.load(Ordering::SeqCst), 1);
    server.handle.shutdown().await.unwrap();
}

#[tokio::test]
async fn conversion_round_trip() {
    let server = start(fast_limits(), Readiness::default()).await;
    let request = json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "ConversionReview",
        "request": {
            "uid": "conv-1",
            "desiredAPIVersion": "kueue.x-k8s.io/v1beta1",
            "objects": [{"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue", "metadata": {"name": "cq"}}]
        }
    });
    let (status, body) = post_json(&server.client(), &server.url("/convert"), &request).await;
    assert_eq!(status, 200);
    assert_eq!(
        body,
        json!({
            "apiVersion": "apiextensions.k8s.io/v1",
            "kind": "ConversionReview",
            "response": {
                "uid": "conv-1",
                "result": {"status": "Success"},
                "convertedObjects": [{"apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "ClusterQueue", "metadata": {"name": "cq"}}]
            }
        })
    );
    server.handle.shutdown().await.unwrap();
}

// === malformed and hostile input ===

#[tokio::test]
async fn malformed_bodies_get_400_with_a_status_body() {
    let server = start(fast_limits(), Readiness::default()).await;
    let client = server.client();
    let full = serde_json::to_string(&review("uid-5", "batch", "Job", "pi")).unwrap();
    let cases: Vec<(&str, &str, Vec<u8>, &str)> = vec![
        ("empty", MUTATE_JOB, Vec::new(), "request body is empty"),
        (
            "not JSON",
            MUTATE_JOB,
            b"apiVersion: v1".to_vec(),
            "request body is not JSON: expected value at line 1 column 1",
        ),
        (
            "truncated",
            MUTATE_JOB,
            full.as_bytes()[..40].to_vec(),
            "request body is truncated JSON: EOF while parsing a string at line 1 column 40",
        ),
        (
            "missing request",
            MUTATE_JOB,
            br#"{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview"}"#.to_vec(),
            "AdmissionReview has no request",
        ),
        (
            "wrong shape",
            VALIDATE_JOB,
            br#"{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":7}}"#
                .to_vec(),
            "request body is not a valid AdmissionReview: invalid type: integer `7`, expected a string at line 1 column 79",
        ),
        (
            "conversion without request",
            "/convert",
            br#"{"apiVersion":"apiextensions.k8s.io/v1","kind":"ConversionReview"}"#.to_vec(),
            "ConversionReview has no request",
        ),
    ];
    for (name, path, body, message) in cases {
        let (status, answer) = post_raw(&client, &server.url(path), body).await;
        assert_eq!(
            (status, answer),
            (400, status_body(400, "BadRequest", message)),
            "{name}"
        );
    }
    assert_eq!(server.handler.calls.load(Ordering::SeqCst), 0);
    server.handle.shutdown().await.unwrap();
}

#[tokio::test]
async fn unknown_paths_and_methods_get_json_errors() {
    let server = start(fast_limits(), Readiness::default()).await;
    let client = server.client();
    let review = review("uid-6", "batch", "Job", "pi");
    for path in ["/mutate-apps-v1-deployment", "/a/b", "/"] {
        let (status, body) = post_json(&client, &server.url(path), &review).await;
        assert_eq!(
            (status, body),
            (
                404,
                status_body(404, "NotFound", &format!("no webhook is served at {path}"))
            ),
            "{path}"
        );
    }
    let response = client.get(server.url(MUTATE_JOB)).send().await.unwrap();
    assert_eq!(response.status().as_u16(), 405);
    assert_eq!(
        response.json::<Value>().await.unwrap(),
        status_body(
            405,
            "MethodNotAllowed",
            "GET is not allowed; webhooks take POST"
        )
    );
    server.handle.shutdown().await.unwrap();
}

#[tokio::test]
async fn oversize_body_gets_413() {
    let server = start(fast_limits(), Readiness::default()).await;
    let mut body =
        br#"{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","padding":""#.to_vec();
    body.extend(std::iter::repeat_n(b'x', 1024 * 1024 + 1));
    body.extend(br#""}"#);
    let (status, answer) = post_raw(&server.client(), &server.url(MUTATE_JOB), body).await;
    assert_eq!(
        (status, answer),
        (
            413,
            status_body(
                413,
                "RequestEntityTooLarge",
                "request body exceeds the limit of 1048576 bytes"
            )
        )
    );
    server.handle.shutdown().await.unwrap();
}

#[tokio::test]
async fn handler_panic_is_a_500_not_a_dropped_connection() {
    let server = start(fast_limits(), Readiness::default()).await;
    let (status, body) = post_json(
        &server.client(),
        &server.url(VALIDATE_JOB),
        &review("uid-7", "batch", "Job", "panic"),
    )
    .await;
    assert_eq!(
        (status, body),
        (
            500,
            status_body(500, "InternalError", "admission handler failed")
        )
    );
    server.handle.shutdown().await.unwrap();
}

/// Reads until the peer closes or errors, or `limit` passes; returns what was read.
async fn read_until_closed<S: tokio::io::AsyncRead + Unpin>(
    stream: &mut S,
    limit: Duration,
) -> (Vec<u8>, bool) {
    let mut received = Vec::new();
    let mut buffer = [0u8; 4096];
    let deadline = Instant::now() + limit;
    loop {
        let remaining = deadline.saturating_duration_since(Instant::now());
        match tokio::time::timeout(remaining, stream.read(&mut buffer)).await {
            Ok(Ok(0)) | Ok(Err(_)) => return (received, true),
            Ok(Ok(n)) => received.extend_from_slice(&buffer[..n]),
            Err(_) => return (received, false),
        }
    }
}

/// Sends `partial`, the start of an HTTP/1.1 request, on a new TLS connection and reads until
/// the server closes it (at most 5 s): what the server sent, whether it closed the connection,
/// and how long after the last byte sent.
async fn stall_after(server: &TestServer, partial: &str) -> (String, bool, Duration) {
    let config = client_config(server.ca.cert_pem(), rustls::ALL_VERSIONS);
    let mut stream = connect(server.handle.webhook_address(), config, SERVER_NAME)
        .await
        .unwrap();
    stream.write_all(partial.as_bytes()).await.unwrap();
    stream.flush().await.unwrap();
    let started = Instant::now();

    let (received, closed) = read_until_closed(&mut stream, Duration::from_secs(5)).await;
    let elapsed = started.elapsed();
    (
        String::from_utf8_lossy(&received).into_owned(),
        closed,
        elapsed,
    )
}

/// Reads until the server closes `stream` (at most 5 s) and asserts that it did, within 3 s of
/// `started`.
async fn assert_disconnected<S: tokio::io::AsyncRead + Unpin>(stream: &mut S, started: Instant) {
    let (_, closed) = read_until_closed(stream, Duration::from_secs(5)).await;
    assert!(closed, "connection still open");
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "{:?}",
        started.elapsed()
    );
}

#[tokio::test]
async fn client_stalling_in_the_body_gets_408_within_the_timeout() {
    let server = start(fast_limits(), Readiness::default()).await;
    let (text, closed, elapsed) = stall_after(
        &server,
        &format!(
            "POST {MUTATE_JOB} HTTP/1.1\r\nHost: {SERVER_NAME}\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{{\"apiVersi"
        ),
    )
    .await;
    assert!(
        text.starts_with("HTTP/1.1 408 Request Timeout\r\n"),
        "{text}"
    );
    assert!(text.contains("request not complete within 700ms"), "{text}");
    assert!(closed, "connection still open after the 408");
    assert!(
        elapsed >= Duration::from_millis(600) && elapsed < Duration::from_secs(3),
        "{elapsed:?}"
    );
    server.handle.shutdown().await.unwrap();
}

#[tokio::test]
async fn client_stalling_in_the_headers_is_disconnected() {
    let server = start(fast_limits(), Readiness::default()).await;
    let (text, closed, elapsed) = stall_after(
        &server,
        &format!("POST {MUTATE_JOB} HTTP/1.1\r\nHost: {SERVER_NAME}\r\n"),
    )
    .await;
    assert!(closed, "connection still open");
    assert!(!text.contains(" 200 "), "{text}");
    assert!(
        elapsed >= Duration::from_millis(600) && elapsed < Duration::from_secs(3),
        "{elapsed:?}"
    );
    server.handle.shutdown().await.unwrap();
}

#[tokio::test]
async fn client_silent_after_the_handshake_is_disconnected() {
    let server = start(fast_limits(), Readiness::default()).await;
    let mut config = client_config(server.ca.cert_pem(), rustls::ALL_VERSIONS);
    config.alpn_protocols = vec![b"h2".to_vec()];
    let mut stream = connect(server.handle.webhook_address(), config, SERVER_NAME)
        .await
        .unwrap();
    let started = Instant::now();
    assert_disconnected(&mut stream, started).await;
    server.handle.shutdown().await.unwrap();
}

#[tokio::test]
async fn client_that_never_starts_tls_is_disconnected() {
    let server = start(fast_limits(), Readiness::default()).await;
    let mut tcp = tokio::net::TcpStream::connect(server.handle.webhook_address())
        .await
        .unwrap();
    let started = Instant::now();
    assert_disconnected(&mut tcp, started).await;
    server.handle.shutdown().await.unwrap();
}

// === TLS ===

#[tokio::test]
async fn http2_is_negotiated_and_served() {
    let server = start(fast_limits(), Readiness::default()).await;
    let client = https_client(server.ca.cert_pem(), Connections::Http2);
    let response = client
        .post(server.url(MUTATE_JOB))
        .json(&review("h2-1", "batch", "Job", "pi"))
        .send()
        .await
        .unwrap();
    assert_eq!(response.version(), reqwest::Version::HTTP_2);
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["response"]["uid"], json!("h2-1"));
    server.handle.shutdown().await.unwrap();
}

#[tokio::test]
async fn tls12_and_tls13_are_accepted() {
    let server = start(fast_limits(), Readiness::default()).await;
    for (version, expected) in [
        (&rustls::version::TLS12, rustls::ProtocolVersion::TLSv1_2),
        (&rustls::version::TLS13, rustls::ProtocolVersion::TLSv1_3),
    ] {
        let config = client_config(server.ca.cert_pem(), &[version]);
        let stream = connect(server.handle.webhook_address(), config, SERVER_NAME)
            .await
            .unwrap();
        assert_eq!(stream.get_ref().1.protocol_version(), Some(expected));
    }
    server.handle.shutdown().await.unwrap();
}

#[tokio::test]
async fn tls11_is_refused_with_a_protocol_version_alert() {
    let server = start(fast_limits(), Readiness::default()).await;
    let mut tcp = tokio::net::TcpStream::connect(server.handle.webhook_address())
        .await
        .unwrap();
    tcp.write_all(&client_hello([0x03, 0x02])).await.unwrap();
    let (received, closed) = read_until_closed(&mut tcp, Duration::from_secs(3)).await;
    assert!(closed);
    // alert record: type 21, version, length 2, level fatal (2), protocol_version (70)
    assert_eq!(received.len(), 7, "{received:?}");
    assert_eq!((received[0], received[3], received[4]), (0x15, 0, 2));
    assert_eq!((received[5], received[6]), (2, 70));
    server.handle.shutdown().await.unwrap();
}

#[tokio::test]
async fn serving_certificate_has_the_service_names() {
    setup();
    let ca = test_ca();
    let names = certs::service_dns_names("kueue-webhook-service", "kueue-system");
    let ips: Vec<IpAddr> = vec!["127.0.0.1".parse().unwrap()];
    let cert = ca.issue_serving_cert(&names, &ips, HOUR).unwrap();
    let tls = TlsSource::InMemory {
        cert_pem: cert.cert_pem.clone(),
        key_pem: cert.key_pem.clone(),
    };
    let handler = Arc::new(FakeHandler::default());
    let metrics = Arc::new(MetricsRegistry::new());
    let handle = serve(
        local_config(tls),
        state(handler, metrics, fast_limits()),
        Readiness::default(),
    )
    .await
    .unwrap();

    let config = client_config(ca.cert_pem(), rustls::ALL_VERSIONS);
    let stream = connect(
        handle.webhook_address(),
        config.clone(),
        "kueue-webhook-service.kueue-system.svc",
    )
    .await
    .unwrap();
    let served = stream.get_ref().1.peer_certificates().unwrap()[0].to_vec();
    let (_, parsed) = x509_parser::parse_x509_certificate(&served).unwrap();
    let san = parsed.subject_alternative_name().unwrap().unwrap();
    let listed: Vec<String> = san
        .value
        .general_names
        .iter()
        .map(|name| match name {
            x509_parser::extensions::GeneralName::DNSName(dns) => format!("DNS:{dns}"),
            x509_parser::extensions::GeneralName::IPAddress(ip) => format!("IP:{ip:?}"),
            other => format!("other:{other:?}"),
        })
        .collect();
    assert_eq!(
        listed,
        vec![
            "DNS:kueue-webhook-service",
            "DNS:kueue-webhook-service.kueue-system",
            "DNS:kueue-webhook-service.kueue-system.svc",
            "DNS:kueue-webhook-service.kueue-system.svc.cluster.local",
            "IP:[127, 0, 0, 1]",
        ]
    );
    let err = connect(handle.webhook_address(), config, "other.example")
        .await
        .unwrap_err();
    assert!(
        err.to_string()
            .contains("certificate not valid for name \"other.example\""),
        "{err}"
    );
    handle.shutdown().await.unwrap();
}

#[tokio::test]
async fn serve_refuses_an_expired_or_mismatched_certificate() {
    setup();
    let ca = test_ca();
    let first = localhost_cert(&ca, HOUR);
    let second = localhost_cert(&ca, HOUR);
    let readiness = Readiness::default();
    let mismatched = TlsSource::InMemory {
        cert_pem: first.cert_pem.clone(),
        key_pem: second.key_pem.clone(),
    };
    let err = serve(
        local_config(mismatched),
        state(
            Arc::default(),
            Arc::new(MetricsRegistry::new()),
            fast_limits(),
        ),
        readiness.clone(),
    )
    .await
    .unwrap_err();
    assert!(
        matches!(err, ServerError::Tls(TlsError::Rejected(_))),
        "{err:?}"
    );
    assert_eq!(readiness.components(), vec![("webhook".to_owned(), false)]);

    let dir = tempfile::tempdir().unwrap();
    let err = serve(
        local_config(TlsSource::CertDir {
            dir: dir.path().to_owned(),
            poll_interval: Duration::from_millis(100),
        }),
        state(
            Arc::default(),
            Arc::new(MetricsRegistry::new()),
            fast_limits(),
        ),
        readiness,
    )
    .await
    .unwrap_err();
    assert!(
        matches!(err, ServerError::Tls(TlsError::Io { .. })),
        "{err:?}"
    );
}

// === readiness, metrics, shutdown ===

#[tokio::test]
async fn readyz_turns_true_once_listening_and_stores_synced() {
    let readiness = Readiness::new(["stores"]);
    assert!(!readiness.is_ready());
    let server = start(fast_limits(), readiness).await;
    let client = reqwest::Client::new();

    let response = client
        .get(server.health_url("/readyz"))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 503);
    assert_eq!(
        response.text().await.unwrap(),
        "[-]stores not ready\n[+]webhook ok\nreadyz check failed\n"
    );

    server.readiness.set_ready("stores");
    let response = client
        .get(server.health_url("/readyz"))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 200);
    assert_eq!(
        response.text().await.unwrap(),
        "[+]stores ok\n[+]webhook ok\nreadyz check passed\n"
    );
    let response = client
        .get(server.health_url("/healthz"))
        .send()
        .await
        .unwrap();
    assert_eq!(
        (response.status().as_u16(), response.text().await.unwrap()),
        (200, "ok".to_owned())
    );

    let readiness = server.readiness.clone();
    server.handle.shutdown().await.unwrap();
    assert!(!readiness.is_ready());
}

#[tokio::test]
async fn metrics_count_requests_by_path_and_result() {
    let server = start(fast_limits(), Readiness::default()).await;
    let client = server.client();
    post_json(
        &client,
        &server.url(MUTATE_JOB),
        &review("m-1", "batch", "Job", "a"),
    )
    .await;
    post_json(
        &client,
        &server.url(VALIDATE_JOB),
        &review("m-2", "batch", "Job", "forbidden"),
    )
    .await;
    post_json(
        &client,
        &server.url(VALIDATE_JOB),
        &review("m-3", "batch", "Job", "b"),
    )
    .await;
    post_json(&client, &server.url("/nope"), &json!({})).await;
    post_raw(&client, &server.url(MUTATE_JOB), b"{".to_vec()).await;

    // The metrics are served on their own HTTPS listener (tests/metrics_e2e.rs), not beside
    // the probes.
    let probe_port = reqwest::Client::new()
        .get(server.health_url("/metrics"))
        .send()
        .await
        .unwrap();
    assert_eq!(probe_port.status(), 404);
    let text = server.metrics.encode().unwrap();
    for line in [
        r#"kuota_webhook_requests_total{path="/mutate-batch-v1-job",result="patched"} 1"#,
        r#"kuota_webhook_requests_total{path="/mutate-batch-v1-job",result="malformed"} 1"#,
        r#"kuota_webhook_requests_total{path="/validate-batch-v1-job",result="denied"} 1"#,
        r#"kuota_webhook_requests_total{path="/validate-batch-v1-job",result="allowed"} 1"#,
        r#"kuota_webhook_requests_total{path="unmatched",result="not_found"} 1"#,
        r#"kuota_webhook_request_duration_seconds_count{path="/mutate-batch-v1-job"} 2"#,
        r#"kuota_webhook_certificate_loads_total{result="success"} 1"#,
    ] {
        assert!(
            text.contains(&format!("{line}\n")),
            "missing {line} in\n{text}"
        );
    }
    server.handle.shutdown().await.unwrap();
}

#[tokio::test]
async fn shutdown_finishes_in_flight_requests_then_refuses_connections() {
    let server = start(RequestLimits::default(), Readiness::default()).await;
    let client = server.client();
    let url = server.url(VALIDATE_JOB);
    let in_flight = tokio::spawn(async move {
        post_json(&client, &url, &review("s-1", "batch", "Job", "slow")).await
    });
    while server.handler.calls.load(Ordering::SeqCst) == 0 {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let address = server.handle.webhook_address();
    server.handle.shutdown().await.unwrap();

    let (status, body) = in_flight.await.unwrap();
    assert_eq!(
        (status, body["response"]["allowed"].clone()),
        (200, json!(true))
    );
    assert!(tokio::net::TcpStream::connect(address).await.is_err());
}

// === certificate rotation ===

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rotation_under_load_fails_no_request() {
    let server = start(RequestLimits::default(), Readiness::default()).await;
    const WORKERS: usize = 8;
    const REQUESTS_PER_WORKER: usize = 40;
    let completed = Arc::new(AtomicUsize::new(0));
    let failures = Arc::new(AtomicUsize::new(0));

    let mut workers = Vec::new();
    for worker in 0..WORKERS {
        // Some reuse HTTP/1.1 or HTTP/2 connections across rotations, some handshake for
        // every request.
        let connections = [
            Connections::Pooled,
            Connections::PerRequest,
            Connections::Http2,
        ][worker % 3];
        let client = https_client(server.ca.cert_pem(), connections);
        let url = server.url(MUTATE_JOB);
        let completed = completed.clone();
        let failures = failures.clone();
        workers.push(tokio::spawn(async move {
            for n in 0..REQUESTS_PER_WORKER {
                let uid = format!("w{worker}-{n}");
                let answer = client
                    .post(&url)
                    .json(&review(&uid, "batch", "Job", "pi"))
                    .send()
                    .await;
                let ok = match answer {
                    Ok(response) if response.status().is_success() => response
                        .json::<Value>()
                        .await
                        .is_ok_and(|body| body["response"]["uid"] == json!(uid)),
                    _ => false,
                };
                if !ok {
                    failures.fetch_add(1, Ordering::SeqCst);
                }
                completed.fetch_add(1, Ordering::SeqCst);
            }
        }));
    }

    let total = WORKERS * REQUESTS_PER_WORKER;
    let mut rotations_under_load = 0;
    let mut last = None;
    for rotation in 1..=5 {
        // Spread the rotations over the run: the n-th waits for n/7 of the requests.
        while completed.load(Ordering::SeqCst) < total * rotation / 7 {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        // Short-lived certificates, as an aggressive rotation policy would issue.
        let next = localhost_cert(&server.ca, Duration::from_secs(120));
        server
            .handle
            .tls()
            .replace(&next.cert_pem, &next.key_pem)
            .unwrap();
        if completed.load(Ordering::SeqCst) < total {
            rotations_under_load += 1;
        }
        last = Some(next);
    }
    for worker in workers {
        worker.await.unwrap();
    }

    assert_eq!(completed.load(Ordering::SeqCst), total);
    assert_eq!(failures.load(Ordering::SeqCst), 0);
    assert!(
        rotations_under_load >= 3,
        "only {rotations_under_load} rotations happened under load"
    );
    let last = last.unwrap();
    assert_eq!(
        served_certificate(server.handle.webhook_address(), server.ca.cert_pem()).await,
        der_of(&last.cert_pem)
    );
    assert_eq!(server.handle.tls().not_after(), last.not_after);
    server.handle.shutdown().await.unwrap();
}

async fn wait_for_served(address: SocketAddr, ca_pem: &str, expected: &[u8]) -> bool {
    let deadline = Instant::now() + Duration::from_secs(5);
    while Instant::now() < deadline {
        if served_certificate(address, ca_pem).await == expected {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    false
}

#[tokio::test]
async fn cert_dir_reloads_only_a_consistent_pair() {
    setup();
    let ca = test_ca();
    let dir = tempfile::tempdir().unwrap();
    let write =
        |name: &str, contents: &str| std::fs::write(dir.path().join(name), contents).unwrap();
    let first = localhost_cert(&ca, HOUR);
    write("tls.crt", &first.cert_pem);
    write("tls.key", &first.key_pem);

    let metrics = Arc::new(MetricsRegistry::new());
    let handle = serve(
        local_config(TlsSource::CertDir {
            dir: dir.path().to_owned(),
            poll_interval: Duration::from_millis(100),
        }),
        state(Arc::default(), metrics.clone(), fast_limits()),
        Readiness::default(),
    )
    .await
    .unwrap();
    let address = handle.webhook_address();
    assert_eq!(
        served_certificate(address, ca.cert_pem()).await,
        der_of(&first.cert_pem)
    );

    // Only the certificate changed, to one for another key: not servable, keep the old pair.
    let second = localhost_cert(&ca, HOUR);
    write("tls.crt", &second.cert_pem);
    tokio::time::sleep(Duration::from_millis(600)).await;
    assert_eq!(
        served_certificate(address, ca.cert_pem()).await,
        der_of(&first.cert_pem)
    );
    assert!(
        metrics
            .encode()
            .unwrap()
            .contains("kuota_webhook_certificate_loads_total{result=\"failure\"} 1\n")
    );

    // The key follows: the pair is consistent and gets served.
    write("tls.key", &second.key_pem);
    assert!(wait_for_served(address, ca.cert_pem(), &der_of(&second.cert_pem)).await);

    // A renewal that keeps the key changes only tls.crt, and is served as well.
    let issuer = rcgen::Issuer::from_ca_cert_pem(
        ca.cert_pem(),
        rcgen::KeyPair::from_pem(ca.key_pem()).unwrap(),
    )
    .unwrap();
    let kept_key = rcgen::KeyPair::from_pem(&second.key_pem).unwrap();
    let renewed = rcgen::CertificateParams::new(vec![SERVER_NAME.to_owned()])
        .unwrap()
        .signed_by(&kept_key, &issuer)
        .unwrap()
        .pem();
    write("tls.crt", &renewed);
    assert!(wait_for_served(address, ca.cert_pem(), &der_of(&renewed)).await);
    handle.shutdown().await.unwrap();
}

// === router without sockets ===

#[tokio::test]
async fn router_answers_through_oneshot() {
    setup();
    let app = router(state(
        Arc::new(FakeHandler::default()),
        Arc::new(MetricsRegistry::new()),
        fast_limits(),
    ));
    let body = serde_json::to_vec(&review("o-1", "batch", "Job", "ok")).unwrap();
    let response = app
        .clone()
        .oneshot(
            axum::http::Request::post(VALIDATE_JOB)
                .header("content-type", "application/json")
                .body(Body::from(body))
                .unwrap(),
        )
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let bytes = axum::body::to_bytes(response.into_body(), usize::MAX)
        .await
        .unwrap();
    assert_eq!(
        serde_json::from_slice::<Value>(&bytes).unwrap(),
        json!({
            "apiVersion": "admission.k8s.io/v1",
            "kind": "AdmissionReview",
            "response": {"uid": "o-1", "allowed": true, "status": {}}
        })
    );

    let response = app
        .oneshot(
            axum::http::Request::post("/validate-batch-v1-job")
                .body(Body::from(vec![b' '; 2 * 1024 * 1024]))
                .unwrap(),
        )
        .await
        .unwrap();
    assert_eq!(response.status(), 413);
}
