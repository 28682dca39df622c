//! Probes on a plain-HTTP port: `/healthz` (alive) and `/readyz` (every declared component
//! ready). The metrics are served elsewhere, over HTTPS behind authorization
//! ([`super::metrics_server`]), as Kueue serves them.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, PoisonError};

use axum::Router;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::get;

/// Readiness component owned by the webhook server: set once the TLS listener is bound with a
/// valid certificate, cleared when it shuts down.
pub const WEBHOOK_COMPONENT: &str = "webhook";

/// Which parts of the process are ready; `/readyz` succeeds when all declared parts are.
/// Cheap to clone; clones share state.
#[derive(Clone, Debug, Default)]
pub struct Readiness {
    components: Arc<Mutex<BTreeMap<String, bool>>>,
}

impl Readiness {
    /// Readiness that waits for each of `components` to be set ready.
    pub fn new<I, S>(components: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        let readiness = Self::default();
        for component in components {
            readiness.require(component);
        }
        readiness
    }

    /// Declares a component that must become ready; no effect if already declared.
    pub fn require(&self, component: impl Into<String>) {
        self.lock().entry(component.into()).or_insert(false);
    }

    /// Marks a component ready (declaring it if needed).
    pub fn set_ready(&self, component: impl Into<String>) {
        self.lock().insert(component.into(), true);
    }

    /// Marks a component not ready (declaring it if needed).
    pub fn set_not_ready(&self, component: impl Into<String>) {
        self.lock().insert(component.into(), false);
    }

    /// Whether at least one component is declared and all are ready.
    pub fn is_ready(&self) -> bool {
        let components = self.lock();
        !components.is_empty() && components.values().all(|ready| *ready)
    }

    /// Every declared component with its state, sorted by name.
    pub fn components(&self) -> Vec<(String, bool)> {
        self.lock()
            .iter()
            .map(|(name, ready)| (name.clone(), *ready))
            .collect()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<String, bool>> {
        self.components
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }
}

/// The probe router.
pub fn health_router(readiness: Readiness) -> Router {
    Router::new()
        .route("/healthz", get(healthz))
        .route("/readyz", get(readyz))
        .with_state(readiness)
}

async fn healthz() -> &'static str {
    "ok"
}

/// Lists components like the API server's verbose `/readyz`: `[+]name ok` / `[-]name not ready`.
async fn readyz(State(readiness): State<Readiness>) -> Response {
    let components = readiness.components();
    let mut body = String::new();
    for (name, ready) in &components {
        if *ready {
            body.push_str(&format!("[+]{name} ok\n"));
        } else {
            body.push_str(&format!("[-]{name} not ready\n"));
        }
    }
    if readiness.is_ready() {
        body.push_str("readyz check passed\n");
        (StatusCode::OK, body).into_response()
    } else {
        body.push_str("readyz check failed\n");
        (StatusCode::SERVICE_UNAVAILABLE, body).into_response()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::body::Body;
    use axum::http::Request;
    use tower::ServiceExt;

    async fn get_text(router: &Router, path: &str) -> (StatusCode, String) {
        let response = router
            .clone()
            .oneshot(Request::get(path).body(Body::empty()).unwrap())
            .await
            .unwrap();
        let status = response.status();
        let body = axum::body::to_bytes(response.into_body(), usize::MAX)
            .await
            .unwrap();
        (status, String::from_utf8(body.to_vec()).unwrap())
    }

    #[tokio::test]
    async fn readyz_waits_for_every_component() {
        let readiness = Readiness::new(["stores"]);
        let router = health_router(readiness.clone());
        readiness.require(WEBHOOK_COMPONENT);

        assert_eq!(
            get_text(&router, "/readyz").await,
            (
                StatusCode::SERVICE_UNAVAILABLE,
                "[-]stores not ready\n[-]webhook not ready\nreadyz check failed\n".to_owned()
            )
        );
        readiness.set_ready(WEBHOOK_COMPONENT);
        assert_eq!(
            get_text(&router, "/readyz").await.0,
            StatusCode::SERVICE_UNAVAILABLE
        );
        readiness.set_ready("stores");
        assert_eq!(
            get_text(&router, "/readyz").await,
            (
                StatusCode::OK,
                "[+]stores ok\n[+]webhook ok\nreadyz check passed\n".to_owned()
            )
        );
        readiness.set_not_ready("stores");
        assert_eq!(
            get_text(&router, "/readyz").await.0,
            StatusCode::SERVICE_UNAVAILABLE
        );
    }

    #[test]
    fn nothing_declared_is_not_ready() {
        assert!(!Readiness::default().is_ready());
    }

    #[tokio::test]
    async fn healthz_is_served_and_metrics_are_not() {
        let router = health_router(Readiness::default());
        assert_eq!(
            get_text(&router, "/healthz").await,
            (StatusCode::OK, "ok".to_owned())
        );
        assert_eq!(get_text(&router, "/metrics").await.0, StatusCode::NOT_FOUND);
    }
}
