//! Who may read the metrics: the checks of controller-runtime's
//! `filters.WithAuthenticationAndAuthorization`, which Kueue puts in front of `/metrics`. The
//! bearer token is authenticated with a TokenReview, then a SubjectAccessReview asks whether its
//! user may use the request's verb (the lower-cased method) on the non-resource URL (the path).
//! Answers are cached as that filter caches them, so that scrapes do not call the API server
//! each time.
//!
//! The refusals are the filter's: no bearer token is 401; a token the API server does not
//! accept is 500 "Authentication failed" (the filter treats the rejection as an error, as
//! Kueue 0.19 answers); a failed review is 500; a user without access is 403.

use std::collections::{BTreeMap, HashMap};
use std::hash::Hash;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use axum::http::StatusCode;
use futures::future::BoxFuture;
use k8s_openapi::api::authentication::v1::{TokenReview, TokenReviewSpec, TokenReviewStatus};
use k8s_openapi::api::authorization::v1::{
    NonResourceAttributes, SubjectAccessReview, SubjectAccessReviewSpec, SubjectAccessReviewStatus,
};
use kube::Client;
use kube::api::{Api, PostParams};

/// How long a token review's answer is reused, accepted or not (the filter's `CacheTTL`).
pub const TOKEN_CACHE_TTL: Duration = Duration::from_secs(60);
/// How long an allowing access review is reused (the filter's `AllowCacheTTL`).
pub const ALLOWED_CACHE_TTL: Duration = Duration::from_secs(5 * 60);
/// How long a denying access review is reused (the filter's `DenyCacheTTL`).
pub const DENIED_CACHE_TTL: Duration = Duration::from_secs(30);
/// Longest wait for one review (the filter's `TokenAccessReviewTimeout`).
pub const REVIEW_TIMEOUT: Duration = Duration::from_secs(10);
/// Entries per cache; a full cache drops its expired entries, then everything.
const CACHE_CAPACITY: usize = 4096;
/// The group every authenticated user is in.
const AUTHENTICATED_GROUP: &str = "system:authenticated";
/// The group of unauthenticated requests, which never gains the authenticated group.
const UNAUTHENTICATED_GROUP: &str = "system:unauthenticated";
/// The anonymous user, which never gains the authenticated group either.
const ANONYMOUS_USER: &str = "system:anonymous";

/// A user the API server authenticated, as its TokenReview names them.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct Caller {
    /// `username`.
    pub name: String,
    /// `uid`.
    pub uid: String,
    /// `groups`, with `system:authenticated` added as the API server's authenticators add it.
    pub groups: Vec<String>,
    /// `extra`.
    pub extra: BTreeMap<String, Vec<String>>,
}

/// What a SubjectAccessReview decided; "no opinion" denies, as in the filter.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Access {
    /// `status.allowed`.
    Allowed,
    /// `status.denied`, or neither allowed nor denied.
    Denied,
}

/// Why a review gave no answer.
#[derive(Debug, thiserror::Error)]
pub enum ReviewError {
    /// The API server refused or could not be reached.
    #[error("{0}")]
    Api(#[from] kube::Error),
    /// The API server did not answer within [`REVIEW_TIMEOUT`].
    #[error("no answer within {}s", REVIEW_TIMEOUT.as_secs())]
    Timeout,
    /// The answer has no status.
    #[error("the review came back without a status")]
    NoStatus,
    /// The answer both allows and denies.
    #[error("the subject access review returned both allow and deny")]
    Contradictory,
}

/// Why a request for the metrics is refused: the filter's status and body.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Refusal {
    /// No bearer token: 401.
    NoToken,
    /// The token was not accepted, or could not be reviewed: 500.
    AuthenticationFailed,
    /// The access review failed: 500.
    AuthorizationFailed {
        /// The caller's user name.
        user: String,
    },
    /// The caller may not: 403.
    Denied {
        /// The caller's user name.
        user: String,
    },
}

impl Refusal {
    /// The HTTP status.
    pub fn status(&self) -> StatusCode {
        match self {
            Self::NoToken => StatusCode::UNAUTHORIZED,
            Self::AuthenticationFailed | Self::AuthorizationFailed { .. } => {
                StatusCode::INTERNAL_SERVER_ERROR
            }
            Self::Denied { .. } => StatusCode::FORBIDDEN,
        }
    }

    /// The body, without Go's `http.Error` newline.
    pub fn message(&self) -> String {
        match self {
            Self::NoToken => "Unauthorized".to_owned(),
            Self::AuthenticationFailed => "Authentication failed".to_owned(),
            Self::AuthorizationFailed { user } => format!("Authorization for user {user} failed"),
            Self::Denied { user } => format!("Authorization denied for user {user}"),
        }
    }
}

/// The bearer token of an `Authorization` header, read as the API server's bearer token
/// authenticator reads it: `Bearer <token>` (scheme in any case); no token otherwise.
pub fn bearer_token(authorization: Option<&str>) -> Option<&str> {
    let mut parts = authorization?.trim().splitn(3, ' ');
    let scheme = parts.next()?;
    let token = parts.next()?;
    (scheme.eq_ignore_ascii_case("bearer") && !token.is_empty()).then_some(token)
}

/// The TokenReview for `token`, with the API server's own audiences.
pub fn token_review(token: &str) -> TokenReview {
    TokenReview {
        spec: TokenReviewSpec {
            token: Some(token.to_owned()),
            audiences: None,
        },
        ..TokenReview::default()
    }
}

/// The caller a TokenReview's status authenticates; `None` when the token was not accepted.
pub fn caller_of(status: &TokenReviewStatus) -> Option<Caller> {
    if status.authenticated != Some(true) {
        return None;
    }
    let user = status.user.clone().unwrap_or_default();
    let name = user.username.unwrap_or_default();
    let mut groups = user.groups.unwrap_or_default();
    let has_group = groups
        .iter()
        .any(|group| group == AUTHENTICATED_GROUP || group == UNAUTHENTICATED_GROUP);
    if name != ANONYMOUS_USER && !has_group {
        groups.push(AUTHENTICATED_GROUP.to_owned());
    }
    Some(Caller {
        name,
        uid: user.uid.unwrap_or_default(),
        groups,
        extra: user.extra.unwrap_or_default(),
    })
}

/// A SubjectAccessReview about `caller`, asking nothing yet.
pub fn review_of(caller: &Caller) -> SubjectAccessReview {
    SubjectAccessReview {
        spec: SubjectAccessReviewSpec {
            user: Some(caller.name.clone()),
            uid: Some(caller.uid.clone()).filter(|uid| !uid.is_empty()),
            groups: Some(caller.groups.clone()),
            extra: Some(caller.extra.clone()).filter(|extra| !extra.is_empty()),
            non_resource_attributes: None,
            resource_attributes: None,
        },
        ..SubjectAccessReview::default()
    }
}

/// The SubjectAccessReview asking whether `caller` may `verb` the non-resource URL `path`.
pub fn access_review(caller: &Caller, verb: &str, path: &str) -> SubjectAccessReview {
    let mut review = review_of(caller);
    review.spec.non_resource_attributes = Some(NonResourceAttributes {
        path: Some(path.to_owned()),
        verb: Some(verb.to_owned()),
    });
    review
}

/// What a SubjectAccessReview's status decides.
pub fn access_of(status: &SubjectAccessReviewStatus) -> Result<Access, ReviewError> {
    match (status.allowed, status.denied == Some(true)) {
        (true, true) => Err(ReviewError::Contradictory),
        (true, false) => Ok(Access::Allowed),
        (false, _) => Ok(Access::Denied),
    }
}

/// How long an access answer is reused.
fn access_ttl(access: Access) -> Duration {
    match access {
        Access::Allowed => ALLOWED_CACHE_TTL,
        Access::Denied => DENIED_CACHE_TTL,
    }
}

/// Asks the API server; [`ApiServerReviewer`] in production, fakes in tests.
pub trait Reviewer: Send + Sync {
    /// Reviews a bearer token: the caller, or `None` when it is not accepted.
    fn review_token<'a>(
        &'a self,
        token: &'a str,
    ) -> BoxFuture<'a, Result<Option<Caller>, ReviewError>>;

    /// Reviews whether `caller` may `verb` the non-resource URL `path`.
    fn review_access<'a>(
        &'a self,
        caller: &'a Caller,
        verb: &'a str,
        path: &'a str,
    ) -> BoxFuture<'a, Result<Access, ReviewError>>;
}

/// Creates TokenReviews and SubjectAccessReviews through the API (so the process needs
/// `create` on both, as Kueue's `kueue-metrics-auth-role` grants).
#[derive(Clone)]
pub struct ApiServerReviewer {
    client: Client,
}

impl ApiServerReviewer {
    /// Reviews with `client`.
    pub fn new(client: Client) -> Self {
        Self { client }
    }
}

async fn within_timeout<T>(
    call: impl Future<Output = Result<T, kube::Error>>,
) -> Result<T, ReviewError> {
    match tokio::time::timeout(REVIEW_TIMEOUT, call).await {
        Ok(answer) => Ok(answer?),
        Err(_) => Err(ReviewError::Timeout),
    }
}

impl Reviewer for ApiServerReviewer {
    fn review_token<'a>(
        &'a self,
        token: &'a str,
    ) -> BoxFuture<'a, Result<Option<Caller>, ReviewError>> {
        Box::pin(async move {
            let api: Api<TokenReview> = Api::all(self.client.clone());
            let reviewed =
                within_timeout(api.create(&PostParams::default(), &token_review(token))).await?;
            let status = reviewed.status.ok_or(ReviewError::NoStatus)?;
            Ok(caller_of(&status))
        })
    }

    fn review_access<'a>(
        &'a self,
        caller: &'a Caller,
        verb: &'a str,
        path: &'a str,
    ) -> BoxFuture<'a, Result<Access, ReviewError>> {
        Box::pin(async move {
            let api: Api<SubjectAccessReview> = Api::all(self.client.clone());
            let review = access_review(caller, verb, path);
            let reviewed = within_timeout(api.create(&PostParams::default(), &review)).await?;
            access_of(&reviewed.status.ok_or(ReviewError::NoStatus)?)
        })
    }
}

/// Answers reused until they expire, bounded in size.
#[derive(Debug)]
struct TtlCache<K, V> {
    entries: HashMap<K, (V, Instant)>,
    capacity: usize,
}

impl<K: Eq + Hash, V: Clone> TtlCache<K, V> {
    fn new(capacity: usize) -> Self {
        Self {
            entries: HashMap::new(),
            capacity,
        }
    }

    fn get(&self, key: &K, now: Instant) -> Option<V> {
        self.entries
            .get(key)
            .filter(|(_, expires)| *expires > now)
            .map(|(value, _)| value.clone())
    }

    fn insert(&mut self, key: K, value: V, ttl: Duration, now: Instant) {
        if self.entries.len() >= self.capacity {
            self.entries.retain(|_, (_, expires)| *expires > now);
            if self.entries.len() >= self.capacity {
                self.entries.clear();
            }
        }
        self.entries.insert(key, (value, now + ttl));
    }
}

/// A token's cache key: its SHA-1, so that the cache holds no bearer tokens.
fn token_key(token: &str) -> [u8; 20] {
    sha1_smol::Sha1::from(token).digest().bytes()
}

type AccessKey = (Caller, String, String);

/// Decides requests for the metrics with a [`Reviewer`] and caches its answers.
pub struct MetricsAuthorizer {
    reviewer: Arc<dyn Reviewer>,
    tokens: Mutex<TtlCache<[u8; 20], Option<Caller>>>,
    access: Mutex<TtlCache<AccessKey, Access>>,
}

impl std::fmt::Debug for MetricsAuthorizer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MetricsAuthorizer").finish_non_exhaustive()
    }
}

impl MetricsAuthorizer {
    /// An authorizer asking `reviewer`, with empty caches.
    pub fn new(reviewer: Arc<dyn Reviewer>) -> Self {
        Self {
            reviewer,
            tokens: Mutex::new(TtlCache::new(CACHE_CAPACITY)),
            access: Mutex::new(TtlCache::new(CACHE_CAPACITY)),
        }
    }

    /// Whether a request with this `Authorization` header, `method` and `path` may be served.
    pub async fn authorize(
        &self,
        authorization: Option<&str>,
        method: &str,
        path: &str,
    ) -> Result<(), Refusal> {
        let token = bearer_token(authorization).ok_or(Refusal::NoToken)?;
        let caller = self.authenticate(token).await?;
        let verb = method.to_ascii_lowercase();
        match self.access(&caller, verb, path).await {
            Ok(Access::Allowed) => Ok(()),
            Ok(Access::Denied) => {
                tracing::debug!(user = caller.name, path, "metrics access denied");
                Err(Refusal::Denied { user: caller.name })
            }
            Err(error) => {
                tracing::error!(%error, user = caller.name, "metrics authorization failed");
                Err(Refusal::AuthorizationFailed { user: caller.name })
            }
        }
    }

    async fn authenticate(&self, token: &str) -> Result<Caller, Refusal> {
        let key = token_key(token);
        let cached = lock(&self.tokens).get(&key, Instant::now());
        let caller = match cached {
            Some(caller) => caller,
            None => match self.reviewer.review_token(token).await {
                Ok(caller) => {
                    lock(&self.tokens).insert(key, caller.clone(), TOKEN_CACHE_TTL, Instant::now());
                    caller
                }
                Err(error) => {
                    tracing::error!(%error, "metrics authentication failed");
                    return Err(Refusal::AuthenticationFailed);
                }
            },
        };
        caller.ok_or_else(|| {
            tracing::debug!("metrics bearer token not accepted");
            Refusal::AuthenticationFailed
        })
    }

    async fn access(
        &self,
        caller: &Caller,
        verb: String,
        path: &str,
    ) -> Result<Access, ReviewError> {
        let key = (caller.clone(), verb, path.to_owned());
        if let Some(access) = lock(&self.access).get(&key, Instant::now()) {
            return Ok(access);
        }
        let access = self.reviewer.review_access(caller, &key.1, path).await?;
        lock(&self.access).insert(key, access, access_ttl(access), Instant::now());
        Ok(access)
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::authentication::v1::UserInfo;
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[test]
    fn bearer_tokens_are_read_as_the_api_server_reads_them() {
        assert_eq!(bearer_token(Some("Bearer abc")), Some("abc"));
        assert_eq!(bearer_token(Some("  bearer abc  ")), Some("abc"));
        assert_eq!(bearer_token(Some("BEARER abc extra")), Some("abc"));
        assert_eq!(bearer_token(Some("Bearer  abc")), None, "empty token");
        assert_eq!(bearer_token(Some("Bearer")), None);
        assert_eq!(bearer_token(Some("Basic abc")), None);
        assert_eq!(bearer_token(Some("")), None);
        assert_eq!(bearer_token(None), None);
    }

    fn reviewed(authenticated: bool, name: &str, groups: &[&str]) -> TokenReviewStatus {
        TokenReviewStatus {
            authenticated: Some(authenticated),
            user: Some(UserInfo {
                username: Some(name.to_owned()),
                uid: Some("u-1".to_owned()),
                groups: Some(groups.iter().map(|g| (*g).to_owned()).collect()),
                extra: None,
            }),
            ..TokenReviewStatus::default()
        }
    }

    #[test]
    fn an_authenticated_review_names_the_caller_in_the_authenticated_group() {
        let caller = caller_of(&reviewed(true, "system:serviceaccount:ns:sa", &["a"])).unwrap();
        assert_eq!(
            caller,
            Caller {
                name: "system:serviceaccount:ns:sa".to_owned(),
                uid: "u-1".to_owned(),
                groups: vec!["a".to_owned(), AUTHENTICATED_GROUP.to_owned()],
                extra: BTreeMap::new(),
            }
        );
        let already = caller_of(&reviewed(true, "u", &[AUTHENTICATED_GROUP])).unwrap();
        assert_eq!(already.groups, [AUTHENTICATED_GROUP]);
        let anonymous = caller_of(&reviewed(true, ANONYMOUS_USER, &[])).unwrap();
        assert!(anonymous.groups.is_empty());
        assert_eq!(caller_of(&reviewed(false, "u", &[])), None);
        assert_eq!(caller_of(&TokenReviewStatus::default()), None);
    }

    #[test]
    fn the_access_review_asks_for_the_non_resource_url() {
        let caller = Caller {
            name: "alice".to_owned(),
            groups: vec![AUTHENTICATED_GROUP.to_owned()],
            ..Caller::default()
        };
        let review = access_review(&caller, "get", "/metrics");
        assert_eq!(
            serde_json::to_value(&review.spec).unwrap(),
            serde_json::json!({
                "user": "alice",
                "groups": [AUTHENTICATED_GROUP],
                "nonResourceAttributes": {"path": "/metrics", "verb": "get"},
            })
        );
        assert_eq!(
            serde_json::to_value(token_review("t")).unwrap()["spec"],
            serde_json::json!({"token": "t"})
        );
    }

    #[test]
    fn the_access_decision_denies_without_an_opinion_and_fails_on_both() {
        let status = |allowed, denied| SubjectAccessReviewStatus {
            allowed,
            denied,
            ..SubjectAccessReviewStatus::default()
        };
        assert_eq!(access_of(&status(true, None)).unwrap(), Access::Allowed);
        assert_eq!(
            access_of(&status(true, Some(false))).unwrap(),
            Access::Allowed
        );
        assert_eq!(
            access_of(&status(false, Some(true))).unwrap(),
            Access::Denied
        );
        assert_eq!(access_of(&status(false, None)).unwrap(), Access::Denied);
        assert!(matches!(
            access_of(&status(true, Some(true))),
            Err(ReviewError::Contradictory)
        ));
    }

    #[test]
    fn refusals_answer_as_controller_runtimes_filter() {
        let cases = [
            (Refusal::NoToken, 401, "Unauthorized"),
            (Refusal::AuthenticationFailed, 500, "Authentication failed"),
            (
                Refusal::AuthorizationFailed {
                    user: "u".to_owned(),
                },
                500,
                "Authorization for user u failed",
            ),
            (
                Refusal::Denied {
                    user: "u".to_owned(),
                },
                403,
                "Authorization denied for user u",
            ),
        ];
        for (refusal, status, message) in cases {
            assert_eq!(
                (refusal.status().as_u16(), refusal.message()),
                (status, message.to_owned())
            );
        }
    }

    #[test]
    fn cached_answers_expire_and_a_full_cache_makes_room() {
        let now = Instant::now();
        let mut cache = TtlCache::new(2);
        cache.insert("a", 1, Duration::from_secs(10), now);
        assert_eq!(cache.get(&"a", now + Duration::from_secs(9)), Some(1));
        assert_eq!(cache.get(&"a", now + Duration::from_secs(10)), None);
        cache.insert("b", 2, Duration::from_secs(1), now);
        // Full: "b" has expired and goes; "a" stays.
        cache.insert(
            "c",
            3,
            Duration::from_secs(10),
            now + Duration::from_secs(2),
        );
        assert_eq!(cache.entries.len(), 2);
        assert_eq!(cache.get(&"a", now + Duration::from_secs(2)), Some(1));
        // Full with nothing expired: everything goes.
        cache.insert(
            "d",
            4,
            Duration::from_secs(10),
            now + Duration::from_secs(3),
        );
        assert_eq!(cache.entries.len(), 1);
    }

    /// Accepts token `good` (user `reader`, who may `get`) and `other` (user `other`, who may
    /// not); `broken` fails to review. Counts its calls.
    #[derive(Default)]
    struct FakeReviewer {
        token_reviews: AtomicUsize,
        access_reviews: AtomicUsize,
    }

    impl Reviewer for FakeReviewer {
        fn review_token<'a>(
            &'a self,
            token: &'a str,
        ) -> BoxFuture<'a, Result<Option<Caller>, ReviewError>> {
            self.token_reviews.fetch_add(1, Ordering::SeqCst);
            let caller = |name: &str| Caller {
                name: name.to_owned(),
                ..Caller::default()
            };
            let answer = match token {
                "good" => Ok(Some(caller("reader"))),
                "other" => Ok(Some(caller("other"))),
                "broken" => Err(ReviewError::Timeout),
                _ => Ok(None),
            };
            Box::pin(async move { answer })
        }

        fn review_access<'a>(
            &'a self,
            caller: &'a Caller,
            verb: &'a str,
            _path: &'a str,
        ) -> BoxFuture<'a, Result<Access, ReviewError>> {
            self.access_reviews.fetch_add(1, Ordering::SeqCst);
            let access = if caller.name == "reader" && verb == "get" {
                Access::Allowed
            } else {
                Access::Denied
            };
            Box::pin(async move { Ok(access) })
        }
    }

    #[tokio::test]
    async fn requests_are_decided_from_the_reviews_and_the_answers_reused() {
        let reviewer = Arc::new(FakeReviewer::default());
        let authorizer = MetricsAuthorizer::new(reviewer.clone());
        let decide = |header: Option<&'static str>, method: &'static str| {
            let authorizer = &authorizer;
            async move { authorizer.authorize(header, method, "/metrics").await }
        };
        assert_eq!(decide(None, "GET").await, Err(Refusal::NoToken));
        assert_eq!(decide(Some("Bearer good"), "GET").await, Ok(()));
        assert_eq!(decide(Some("Bearer good"), "GET").await, Ok(()));
        assert_eq!(
            decide(Some("Bearer good"), "POST").await,
            Err(Refusal::Denied {
                user: "reader".to_owned()
            })
        );
        assert_eq!(
            decide(Some("Bearer other"), "GET").await,
            Err(Refusal::Denied {
                user: "other".to_owned()
            })
        );
        assert_eq!(
            decide(Some("Bearer stolen"), "GET").await,
            Err(Refusal::AuthenticationFailed)
        );
        assert_eq!(
            decide(Some("Bearer stolen"), "GET").await,
            Err(Refusal::AuthenticationFailed)
        );
        assert_eq!(
            decide(Some("Bearer broken"), "GET").await,
            Err(Refusal::AuthenticationFailed)
        );
        assert_eq!(
            decide(Some("Bearer broken"), "GET").await,
            Err(Refusal::AuthenticationFailed)
        );
        // good, other, stolen once each (cached, accepted or not); broken twice (errors are
        // not cached). Access: (reader, get), (reader, post), (other, get).
        assert_eq!(reviewer.token_reviews.load(Ordering::SeqCst), 5);
        assert_eq!(reviewer.access_reviews.load(Ordering::SeqCst), 3);
    }
}
