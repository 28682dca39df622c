//! A corpus of malformed and hostile requests sent over real HTTPS to a real `kuota serve` on a
//! real control plane: every one is answered with a well-formed response (the status each
//! deserves, with a JSON body) or refused at the transport, the server answers a good request
//! after each, and its memory stays bounded however much of it arrives.

mod common {
    pub mod client_hello;
}

use std::path::Path;
use std::time::Duration;

use kuota_cluster::{KuotaProcess, TestCluster};
use pretty_assertions::assert_eq;
use reqwest::Method;
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use common::client_hello::client_hello;

const MUTATE_JOB: &str = "/mutate-batch-v1-job";
const VALIDATE_CLUSTER_QUEUE: &str = "/validate-kueue-x-k8s-io-v1beta2-clusterqueue";
const MUTATE_WORKLOAD: &str = "/mutate-kueue-x-k8s-io-v1beta2-workload";
const CONVERT: &str = "/convert";
/// `kuota serve`'s request body limit.
const BODY_LIMIT: usize = 8 * 1024 * 1024;

/// What a case sends.
enum Request {
    /// An HTTPS request.
    Https {
        method: reqwest::Method,
        path: String,
        content_type: &'static str,
        body: Vec<u8>,
    },
    /// Bytes written to the listener's TCP port as they are.
    Raw(Vec<u8>),
}

/// What a case must get back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Answer {
    /// This status with a Kubernetes Status body of the same code.
    Status(u16),
    /// 200 with an AdmissionReview (or ConversionReview) response for the request's uid.
    Review,
    /// The connection closed without an HTTP response.
    Refused,
    /// This status from the HTTP layer itself, before any handler (no body to speak of).
    Transport(u16),
}

struct Case {
    name: String,
    request: Request,
    answer: Answer,
}

fn https(path: &str, body: impl Into<Vec<u8>>, answer: Answer, name: &str) -> Case {
    Case {
        name: format!("{name} to {path}"),
        request: Request::Https {
            method: reqwest::Method::POST,
            path: path.to_owned(),
            content_type: "application/json",
            body: body.into(),
        },
        answer,
    }
}

fn admission_review(request: Value) -> Vec<u8> {
    json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": request})
        .to_string()
        .into_bytes()
}

/// A CREATE AdmissionRequest for `object` (of `kind` in `group`) with uid `hostile`.
fn create_of(group: &str, kind: &str, object: Value) -> Value {
    json!({
        "uid": "hostile",
        "kind": {"group": group, "version": "v1", "kind": kind},
        "resource": {"group": group, "version": "v1", "resource": format!("{}s", kind.to_lowercase())},
        "name": "x", "namespace": "team-a", "operation": "CREATE",
        "userInfo": {"username": "mallory"},
        "object": object,
    })
}

fn job(spec: Value) -> Value {
    json!({"apiVersion": "batch/v1", "kind": "Job",
           "metadata": {"name": "x", "namespace": "team-a", "labels": {"kueue.x-k8s.io/queue-name": "q"}},
           "spec": spec})
}

fn job_with_requests(requests: Value) -> Value {
    job(
        json!({"template": {"spec": {"restartPolicy": "Never", "containers": [
        {"name": "c", "image": "busybox", "resources": {"requests": requests}}]}}}),
    )
}

fn nested(depth: usize) -> String {
    format!("{}{}", "[".repeat(depth), "]".repeat(depth))
}

/// Bodies that are not an AdmissionReview at all, for every admission path.
fn undecodable() -> Vec<(&'static str, Vec<u8>)> {
    let truncated = admission_review(create_of("batch", "Job", job(json!({}))));
    vec![
        ("an empty body", Vec::new()),
        ("null", b"null".to_vec()),
        ("an array", b"[]".to_vec()),
        ("a string", br#""AdmissionReview""#.to_vec()),
        ("a number", b"1e400".to_vec()),
        (
            "truncated JSON",
            truncated[..truncated.len() / 2].to_vec(),
        ),
        ("invalid UTF-8", vec![b'{', b'"', 0xff, 0xfe, b'"', b':', b'1', b'}']),
        ("a lone surrogate", br#"{"apiVersion": "\ud800"}"#.to_vec()),
        ("arrays nested 100,000 deep", nested(100_000).into_bytes()),
        (
            "an object nested 1,000 deep in the request",
            format!(
                r#"{{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{{"uid":"u","object":{}1{}}}}}"#,
                r#"{"a":"#.repeat(1000),
                "}".repeat(1000)
            )
            .into_bytes(),
        ),
        ("an empty object", b"{}".to_vec()),
        (
            "a review without its request",
            br#"{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview"}"#.to_vec(),
        ),
        (
            "a request without uid, kind or operation",
            admission_review(json!({"object": {}})),
        ),
        (
            "a request whose kind is a string",
            admission_review(json!({"uid": "u", "kind": "Job", "operation": "CREATE"})),
        ),
        (
            "a request with an unknown operation",
            admission_review(json!({"uid": "u", "kind": {"group": "", "version": "v1", "kind": "Pod"},
                "resource": {"group": "", "version": "v1", "resource": "pods"},
                "operation": "EXPLODE", "userInfo": {}})),
        ),
        ("YAML", b"apiVersion: admission.k8s.io/v1\nkind: AdmissionReview\n".to_vec()),
        ("a NUL byte", b"\0".to_vec()),
    ]
}

/// AdmissionRequests with hostile content, for the Job path: each is answered with a review
/// for its uid (allowed or denied, never a crash).
fn hostile_jobs() -> Vec<(&'static str, Value)> {
    let many_containers: Vec<Value> = (0..20_000)
        .map(|i| json!({"name": format!("c{i}"), "image": "busybox", "resources": {"requests": {"cpu": "1m"}}}))
        .collect();
    vec![
        (
            "a Job whose object is null",
            create_of("batch", "Job", Value::Null),
        ),
        (
            "a Job with no spec",
            create_of(
                "batch",
                "Job",
                json!({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "x"}}),
            ),
        ),
        (
            "a Job whose spec is a list",
            create_of("batch", "Job", job(json!([1, 2]))),
        ),
        (
            "a Pod sent to the Job path",
            create_of(
                "",
                "Pod",
                json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "x"}}),
            ),
        ),
        (
            "a Job with parallelism 1e30",
            create_of("batch", "Job", job(json!({"parallelism": 1e30}))),
        ),
        (
            "a Job with parallelism -5",
            create_of("batch", "Job", job(json!({"parallelism": -5}))),
        ),
        (
            "a Job with parallelism as a string",
            create_of("batch", "Job", job(json!({"parallelism": "many"}))),
        ),
        (
            "a Job requesting cpu abc",
            create_of("batch", "Job", job_with_requests(json!({"cpu": "abc"}))),
        ),
        (
            "a Job requesting cpu -1",
            create_of("batch", "Job", job_with_requests(json!({"cpu": "-1"}))),
        ),
        (
            "a Job requesting cpu 1e400",
            create_of("batch", "Job", job_with_requests(json!({"cpu": "1e400"}))),
        ),
        (
            "a Job requesting 99999999999999999999Ei of memory",
            create_of(
                "batch",
                "Job",
                job_with_requests(json!({"memory": "99999999999999999999Ei"})),
            ),
        ),
        (
            "a Job requesting a number, not a quantity string",
            create_of("batch", "Job", job_with_requests(json!({"cpu": 12}))),
        ),
        (
            "a Job whose queue label is 10,000 characters",
            create_of("batch", "Job", {
                let mut object = job(json!({}));
                object["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] =
                    json!("q".repeat(10_000));
                object
            }),
        ),
        (
            "a Job with 20,000 containers",
            create_of(
                "batch",
                "Job",
                job(json!({"template": {"spec": {"containers": many_containers}}})),
            ),
        ),
        ("a DELETE with no object", {
            let mut request = create_of("batch", "Job", Value::Null);
            request["operation"] = json!("DELETE");
            request
        }),
        ("an UPDATE with no oldObject", {
            let mut request = create_of("batch", "Job", job(json!({})));
            request["operation"] = json!("UPDATE");
            request
        }),
    ]
}

/// AdmissionRequests whose object is not an object (the API server never sends one): 400,
/// saying which field.
fn not_objects() -> Vec<(&'static str, Value)> {
    vec![
        (
            "a Job whose object is a string",
            create_of("batch", "Job", json!("job")),
        ),
        (
            "a Job whose labels are a list",
            create_of(
                "batch",
                "Job",
                json!({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "x", "labels": ["a"]}, "spec": {}}),
            ),
        ),
        ("an UPDATE whose oldObject is a number", {
            let mut request = create_of("batch", "Job", job(json!({})));
            request["operation"] = json!("UPDATE");
            request["oldObject"] = json!(7);
            request
        }),
    ]
}

/// ConversionReviews that decode but ask for nonsense.
fn hostile_conversions() -> Vec<(&'static str, Vec<u8>)> {
    let review = |request: Value| {
        json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview", "request": request})
            .to_string()
            .into_bytes()
    };
    vec![
        (
            "a conversion to an unknown version",
            review(
                json!({"uid": "hostile", "desiredAPIVersion": "kueue.x-k8s.io/v9", "objects": [
            {"apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "LocalQueue", "metadata": {"name": "q"}, "spec": {}}]}),
            ),
        ),
        (
            "a conversion of an unknown kind",
            review(
                json!({"uid": "hostile", "desiredAPIVersion": "kueue.x-k8s.io/v1beta2", "objects": [
            {"apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "Spaceship", "metadata": {"name": "q"}}]}),
            ),
        ),
        (
            "a conversion of a Workload whose spec is a string",
            review(
                json!({"uid": "hostile", "desiredAPIVersion": "kueue.x-k8s.io/v1beta2", "objects": [
            {"apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "Workload", "metadata": {"name": "w"}, "spec": "all of it"}]}),
            ),
        ),
        (
            "a conversion of an object that is a number",
            review(
                json!({"uid": "hostile", "desiredAPIVersion": "kueue.x-k8s.io/v1beta2", "objects": [42]}),
            ),
        ),
        (
            "a conversion of no objects",
            review(
                json!({"uid": "hostile", "desiredAPIVersion": "kueue.x-k8s.io/v1beta2", "objects": []}),
            ),
        ),
    ]
}

/// The whole corpus, with the answer each case must get.
fn corpus() -> Vec<Case> {
    let mut cases = Vec::new();
    for path in [MUTATE_JOB, VALIDATE_CLUSTER_QUEUE, MUTATE_WORKLOAD, CONVERT] {
        for (name, body) in undecodable() {
            cases.push(https(path, body, Answer::Status(400), name));
        }
        cases.push(https(
            path,
            vec![b' '; BODY_LIMIT + 1],
            Answer::Status(413),
            "a body over the limit",
        ));
    }
    for (name, request) in hostile_jobs() {
        cases.push(https(
            MUTATE_JOB,
            admission_review(request),
            Answer::Review,
            name,
        ));
    }
    for (name, request) in not_objects() {
        cases.push(https(
            MUTATE_JOB,
            admission_review(request),
            Answer::Status(400),
            name,
        ));
    }
    for (name, body) in hostile_conversions() {
        cases.push(https(CONVERT, body, Answer::Review, name));
    }
    cases.push(https(
        MUTATE_JOB,
        hostile_conversions().remove(0).1,
        Answer::Status(400),
        "a ConversionReview",
    ));
    let http = |method: Method, path: &str, answer: Answer, name: &str| Case {
        name: name.to_owned(),
        request: Request::Https {
            method,
            path: path.to_owned(),
            content_type: "application/json",
            body: Vec::new(),
        },
        answer,
    };
    let long_path = format!("/{}", "a".repeat(20_000));
    let garbage_query = "/mutate-batch-v1-job?timeout=%ff%fe&x=\u{0}";
    for (method, path, answer, name) in [
        (
            Method::GET,
            MUTATE_JOB,
            Answer::Status(405),
            "GET of a webhook path",
        ),
        (Method::PUT, CONVERT, Answer::Status(405), "PUT of /convert"),
        (
            Method::DELETE,
            MUTATE_JOB,
            Answer::Status(405),
            "DELETE of a webhook path",
        ),
        (
            Method::POST,
            "/nowhere",
            Answer::Status(404),
            "an unknown path",
        ),
        (
            Method::POST,
            "/mutate-batch-v1-job/../../etc/passwd",
            Answer::Status(404),
            "a path climbing out",
        ),
        (
            Method::POST,
            &long_path,
            Answer::Transport(431),
            "a 20,000-character path",
        ),
        (
            Method::POST,
            garbage_query,
            Answer::Status(400),
            "a query of garbage",
        ),
    ] {
        cases.push(http(method, path, answer, name));
    }
    cases.push(Case {
        name: "JSON declared as text/plain".to_owned(),
        request: Request::Https {
            method: reqwest::Method::POST,
            path: MUTATE_JOB.to_owned(),
            content_type: "text/plain",
            body: admission_review(create_of("batch", "Job", job(json!({})))),
        },
        answer: Answer::Review,
    });
    let plaintext =
        format!("POST {MUTATE_JOB} HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{{}}");
    cases.extend([
        Case {
            name: "plaintext HTTP to the TLS port".to_owned(),
            request: Request::Raw(plaintext.into_bytes()),
            answer: Answer::Refused,
        },
        Case {
            name: "random bytes".to_owned(),
            request: Request::Raw((0..4096).map(|i| (i * 7919 % 251) as u8).collect()),
            answer: Answer::Refused,
        },
        Case {
            name: "a TLS 1.0 ClientHello".to_owned(),
            request: Request::Raw(client_hello([3, 1])),
            answer: Answer::Refused,
        },
        Case {
            name: "a TLS 1.1 ClientHello".to_owned(),
            request: Request::Raw(client_hello([3, 2])),
            answer: Answer::Refused,
        },
        Case {
            name: "an SSL 3.0 ClientHello".to_owned(),
            request: Request::Raw(client_hello([3, 0])),
            answer: Answer::Refused,
        },
        Case {
            name: "a connection closed at once".to_owned(),
            request: Request::Raw(Vec::new()),
            answer: Answer::Refused,
        },
    ]);
    cases
}

/// Sends `case` and returns what came back, as an [`Answer`] and a description.
async fn send(https: &reqwest::Client, port: u16, case: &Case) -> (Answer, String) {
    match &case.request {
        Request::Https {
            method,
            path,
            content_type,
            body,
        } => {
            let response = https
                .request(method.clone(), format!("https://127.0.0.1:{port}{path}"))
                .header("content-type", *content_type)
                .body(body.clone())
                .send()
                .await;
            let response = match response {
                Ok(response) => response,
                Err(error) => return (Answer::Refused, format!("{error:?}")),
            };
            let status = response.status().as_u16();
            let text = response.text().await.unwrap_or_default();
            let Ok(body) = serde_json::from_str::<Value>(&text) else {
                return (Answer::Transport(status), text.chars().take(300).collect());
            };
            let answer = if status == 200
                && body["response"]["uid"] == json!("hostile")
                && (body["response"]["allowed"].is_boolean()
                    || body["response"]["result"].is_object())
            {
                Answer::Review
            } else if body["kind"] == "Status" && body["code"] == json!(status) {
                Answer::Status(status)
            } else {
                Answer::Transport(status)
            };
            (answer, text.chars().take(300).collect())
        }
        Request::Raw(bytes) => {
            let mut tcp = TcpStream::connect(("127.0.0.1", port))
                .await
                .expect("connect");
            let _ = tcp.write_all(bytes).await;
            let _ = tcp.shutdown().await;
            let mut received = Vec::new();
            let read =
                tokio::time::timeout(Duration::from_secs(20), tcp.read_to_end(&mut received)).await;
            let text = String::from_utf8_lossy(&received).into_owned();
            if read.is_err() {
                return (Answer::Transport(0), "no close within 20 s".to_owned());
            }
            if text.starts_with("HTTP/") {
                (Answer::Transport(0), text)
            } else {
                (
                    Answer::Refused,
                    format!("{} bytes, then closed", received.len()),
                )
            }
        }
    }
}

/// The kuota process's resident set size and its peak, in KiB.
fn memory_kib(kuota: &KuotaProcess) -> (u64, u64) {
    let pid = std::fs::read_to_string(format!("{}.pid", kuota.log().display()))
        .expect("the kuota pid file");
    let status = std::fs::read_to_string(format!("/proc/{}/status", pid.trim())).expect("status");
    let field = |name: &str| {
        status
            .lines()
            .find_map(|line| line.strip_prefix(name))
            .and_then(|rest| rest.split_whitespace().next())
            .and_then(|kib| kib.parse().ok())
            .unwrap_or_else(|| panic!("no {name} in the status"))
    };
    (field("VmRSS:"), field("VmHWM:"))
}

/// A good Job review: the server still works.
async fn still_serves(https: &reqwest::Client, port: u16) -> bool {
    let good = Case {
        name: String::new(),
        request: Request::Https {
            method: reqwest::Method::POST,
            path: MUTATE_JOB.to_owned(),
            content_type: "application/json",
            body: admission_review(create_of("batch", "Job", job(json!({})))),
        },
        answer: Answer::Review,
    };
    send(https, port, &good).await.0 == Answer::Review
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn every_hostile_request_is_answered_well_formed_or_refused_and_the_server_stays_up() {
    kuota::tls::install_crypto_provider();
    let cluster = TestCluster::shared().await;
    cluster
        .plane()
        .install_crds(&kuota::api::crds::all())
        .await
        .expect("install Kueue's CRDs");
    let kuota = cluster
        .plane()
        .start_kuota(Path::new(env!("CARGO_BIN_EXE_kuota")), &[])
        .await
        .expect("kuota serve starts");
    let port = kuota.webhook_port;
    let https = reqwest::Client::builder()
        .danger_accept_invalid_certs(true)
        .timeout(Duration::from_secs(30))
        .build()
        .expect("an HTTPS client");
    assert!(
        still_serves(&https, port).await,
        "a good request is answered"
    );
    let (rss_before, _) = memory_kib(&kuota);

    let cases = corpus();
    assert!(cases.len() >= 50, "{} cases", cases.len());
    let mut wrong = Vec::new();
    for case in &cases {
        let (answer, detail) = send(&https, port, case).await;
        if answer != case.answer {
            wrong.push(format!(
                "{}: wanted {:?}, got {answer:?}: {detail}",
                case.name, case.answer
            ));
        }
        assert!(
            still_serves(&https, port).await,
            "the server stopped answering after {}",
            case.name
        );
    }
    assert_eq!(wrong, Vec::<String>::new());

    // The largest bodies, 16 at a time, 10 times over: memory is bounded by what is in flight.
    let largest: Vec<Vec<u8>> = vec![vec![b' '; BODY_LIMIT + 1], {
        let (_, request) = hostile_jobs()
            .into_iter()
            .find(|(name, _)| name.contains("20,000 containers"))
            .expect("the largest Job");
        admission_review(request)
    }];
    for _ in 0..10 {
        let requests = (0..16).map(|i| {
            https
                .post(format!("https://127.0.0.1:{port}{MUTATE_JOB}"))
                .header("content-type", "application/json")
                .body(largest[i % 2].clone())
                .send()
        });
        for response in futures::future::join_all(requests).await {
            let status = response.expect("an answer").status().as_u16();
            assert!(status == 200 || status == 413, "status {status}");
        }
    }
    assert!(
        still_serves(&https, port).await,
        "the server answers after the flood"
    );
    let (rss_after, peak) = memory_kib(&kuota);
    eprintln!(
        "{} cases; kuota RSS {rss_before} KiB before, {rss_after} KiB after, peak {peak} KiB",
        cases.len()
    );
    assert!(peak < 512 * 1024, "peak RSS {peak} KiB");
}
