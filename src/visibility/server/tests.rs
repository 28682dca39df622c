use std::sync::Mutex;

use axum::body::Body;
use pretty_assertions::assert_eq;
use tower::ServiceExt;

use super::*;
use crate::testing::objects::{one_queue_cluster, rfc3339, workload};

const PROXY: &str = "front-proxy-client";

struct Fixed(ClusterState);

impl ClusterSource for Fixed {
    fn read(&self) -> BoxFuture<'_, Option<ClusterState>> {
        Box::pin(async move { Some(self.0.clone()) })
    }
}

/// Allows everyone but `mallory`, and keeps what it was asked.
#[derive(Default)]
struct AllButMallory(Mutex<Vec<SubjectAccessReview>>);

impl Authorizer for AllButMallory {
    fn allows(&self, review: SubjectAccessReview) -> BoxFuture<'_, Result<bool, String>> {
        let allowed = review.spec.user.as_deref() != Some("mallory");
        self.0.lock().unwrap().push(review);
        Box::pin(async move { Ok(allowed) })
    }
}

fn cluster() -> ClusterState {
    let pending = |name: &str, priority: i32, created: i64| {
        workload("ns", name)
            .queue("lq")
            .priority(priority)
            .created(created)
            .pod_set("main", 1, json!({"cpu": "1"}))
            .build()
    };
    one_queue_cluster("1", vec![pending("low", 0, 100), pending("high", 5, 200)])
}

fn app(authorizer: Arc<AllButMallory>) -> Router {
    let front_proxy = RequestHeaderAuth {
        allowed_names: vec![PROXY.to_owned()],
        username_headers: vec!["X-Remote-User".to_owned()],
        group_headers: vec!["X-Remote-Group".to_owned()],
        ..RequestHeaderAuth::default()
    };
    router(VisibilityState {
        cluster: Arc::new(Fixed(cluster())),
        options: ConversionOptions::default(),
        admission_fair_sharing: None,
        front_proxy: Arc::new(front_proxy),
        authorizer,
    })
}

/// GET `path` as `user` through the front proxy; no proxy certificate without a user.
async fn get(app: &Router, path: &str, user: Option<&str>) -> (StatusCode, Value) {
    let mut request = Request::builder().uri(path);
    if let Some(user) = user {
        request = request
            .header("X-Remote-User", user)
            .header("X-Remote-Group", "batch-users")
            .extension(ProxyName(Some(PROXY.to_owned())));
    }
    let response = app
        .clone()
        .oneshot(request.body(Body::empty()).unwrap())
        .await
        .unwrap();
    let status = response.status();
    let body = axum::body::to_bytes(response.into_body(), usize::MAX)
        .await
        .unwrap();
    (status, serde_json::from_slice(&body).unwrap())
}

const CQ_PATH: &str = "/apis/visibility.kueue.x-k8s.io/v1beta1/clusterqueues/cq/pendingworkloads";

fn item(name: &str, priority: i32, created: i64, position: i32) -> Value {
    json!({
        "metadata": {"name": name, "namespace": "ns", "creationTimestamp": rfc3339(created)},
        "priority": priority,
        "localQueueName": "lq",
        "positionInClusterQueue": position,
        "positionInLocalQueue": position,
    })
}

#[tokio::test]
async fn a_caller_the_front_proxy_names_reads_a_cluster_queue_in_queue_order() {
    let authorizer = Arc::new(AllButMallory::default());
    let app = app(authorizer.clone());
    let (status, body) = get(&app, CQ_PATH, Some("alice")).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(
        body,
        json!({
            "kind": "PendingWorkloadsSummary",
            "apiVersion": "visibility.kueue.x-k8s.io/v1beta1",
            "metadata": {"creationTimestamp": null},
            "items": [item("high", 5, 200, 0), item("low", 0, 100, 1)],
        })
    );
    let reviews = authorizer.0.lock().unwrap();
    let spec = &reviews[0].spec;
    assert_eq!(spec.user.as_deref(), Some("alice"));
    assert_eq!(
        spec.groups.as_deref(),
        Some(&["batch-users".to_owned(), "system:authenticated".to_owned()][..])
    );
    assert_eq!(
        spec.resource_attributes,
        Some(ResourceAttributes {
            group: Some(GROUP.to_owned()),
            version: Some("v1beta1".to_owned()),
            resource: Some("clusterqueues".to_owned()),
            subresource: Some("pendingworkloads".to_owned()),
            name: Some("cq".to_owned()),
            verb: Some("get".to_owned()),
            ..ResourceAttributes::default()
        })
    );
}

#[tokio::test]
async fn a_local_queue_page_keeps_its_positions() {
    let app = app(Arc::default());
    let path = "/apis/visibility.kueue.x-k8s.io/v1beta2/namespaces/ns/localqueues/lq/pendingworkloads?limit=1&offset=1";
    let (status, body) = get(&app, path, Some("alice")).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(body["apiVersion"], "visibility.kueue.x-k8s.io/v1beta2");
    assert_eq!(body["items"], json!([item("low", 0, 100, 1)]));
}

#[tokio::test]
async fn refusals_are_kubernetes_statuses() {
    let app = app(Arc::default());
    let failure = |code: u16, reason: &str, message: &str| {
        json!({
            "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": message, "reason": reason, "code": code,
        })
    };

    let (status, body) = get(&app, CQ_PATH, None).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    assert_eq!(body, failure(401, "Unauthorized", "Unauthorized"));

    let (status, body) = get(&app, CQ_PATH, Some("mallory")).await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    let mut expected = failure(
        403,
        "Forbidden",
        "clusterqueues.visibility.kueue.x-k8s.io \"cq\" is forbidden: User \"mallory\" cannot get resource \"clusterqueues/pendingworkloads\" in API group \"visibility.kueue.x-k8s.io\" at the cluster scope",
    );
    expected["details"] =
        json!({"name": "cq", "group": "visibility.kueue.x-k8s.io", "kind": "clusterqueues"});
    assert_eq!(body, expected);

    let lq =
        "/apis/visibility.kueue.x-k8s.io/v1beta2/namespaces/ns/localqueues/lq/pendingworkloads";
    let (_, body) = get(&app, lq, Some("mallory")).await;
    assert_eq!(
        body["message"],
        "localqueues.visibility.kueue.x-k8s.io \"lq\" is forbidden: User \"mallory\" cannot get resource \"localqueues/pendingworkloads\" in API group \"visibility.kueue.x-k8s.io\" in the namespace \"ns\""
    );

    let missing = "/apis/visibility.kueue.x-k8s.io/v1beta2/clusterqueues/nope/pendingworkloads";
    let (status, body) = get(&app, missing, Some("alice")).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let mut expected = failure(
        404,
        "NotFound",
        "clusterqueue.visibility.kueue.x-k8s.io \"nope\" not found",
    );
    expected["details"] =
        json!({"name": "nope", "group": "visibility.kueue.x-k8s.io", "kind": "clusterqueue"});
    assert_eq!(body, expected);

    let other_namespace =
        "/apis/visibility.kueue.x-k8s.io/v1beta2/namespaces/other/localqueues/lq/pendingworkloads";
    let (status, body) = get(&app, other_namespace, Some("alice")).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert_eq!(
        body["message"],
        "localqueue.visibility.kueue.x-k8s.io \"lq\" not found"
    );

    let (status, body) = get(&app, &format!("{CQ_PATH}?limit=many"), Some("alice")).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(
        body,
        failure(
            400,
            "BadRequest",
            "limit: invalid value \"many\": not an integer"
        )
    );

    let unknown_version = "/apis/visibility.kueue.x-k8s.io/v1/clusterqueues/cq/pendingworkloads";
    let (status, body) = get(&app, unknown_version, Some("alice")).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert_eq!(
        body["message"],
        "the server could not find the requested resource"
    );
}

#[tokio::test]
async fn discovery_names_both_versions_and_the_two_subresources() {
    let app = app(Arc::default());
    let (_, groups) = get(&app, "/apis", Some("alice")).await;
    assert_eq!(
        groups["groups"][0],
        json!({
            "name": GROUP,
            "versions": [
                {"groupVersion": "visibility.kueue.x-k8s.io/v1beta2", "version": "v1beta2"},
                {"groupVersion": "visibility.kueue.x-k8s.io/v1beta1", "version": "v1beta1"},
            ],
            "preferredVersion":
                {"groupVersion": "visibility.kueue.x-k8s.io/v1beta2", "version": "v1beta2"},
        })
    );
    let (status, resources) = get(
        &app,
        "/apis/visibility.kueue.x-k8s.io/v1beta2",
        Some("alice"),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    let names: Vec<(&str, bool, &Value)> = resources["resources"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["name"].as_str().unwrap(),
                r["namespaced"].as_bool().unwrap(),
                &r["verbs"],
            )
        })
        .collect();
    assert_eq!(
        names,
        [
            ("clusterqueues", false, &json!([])),
            ("clusterqueues/pendingworkloads", false, &json!(["get"])),
            ("localqueues", true, &json!([])),
            ("localqueues/pendingworkloads", true, &json!(["get"])),
        ]
    );
}
