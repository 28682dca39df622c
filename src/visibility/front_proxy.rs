//! Who is asking. The API server's aggregator proxies visibility requests to us with its
//! front-proxy client certificate and names the user it authenticated in request headers;
//! the API server publishes how to trust that (the CA, the certificate names allowed, the
//! header names) in the ConfigMap `kube-system/extension-apiserver-authentication`, which
//! every aggregated API server reads, as Kueue's does through `k8s.io/apiserver`.
//!
//! A request is authenticated only when its connection presented a certificate that the
//! published CA signed, with an allowed common name (any, when the list is empty), and a user
//! name header; the TLS layer checks the signature ([`client_ca`]), [`RequestHeaderAuth::caller`]
//! the rest.

use std::collections::BTreeMap;

use axum::http::HeaderMap;
use percent_encoding::percent_decode_str;

use crate::webhook::metrics_auth::Caller;

/// Namespace of the ConfigMap the API server publishes its front-proxy settings in.
pub const AUTHENTICATION_CONFIG_MAP_NAMESPACE: &str = "kube-system";
/// Name of that ConfigMap.
pub const AUTHENTICATION_CONFIG_MAP: &str = "extension-apiserver-authentication";
/// The group every authenticated user is in.
const AUTHENTICATED_GROUP: &str = "system:authenticated";

/// The front-proxy settings of the API server.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RequestHeaderAuth {
    /// The CA that signs the front proxy's client certificate (`requestheader-client-ca-file`).
    pub client_ca_pem: Option<String>,
    /// Common names the front proxy's certificate may have; any when empty.
    pub allowed_names: Vec<String>,
    /// Headers naming the user, the first present wins.
    pub username_headers: Vec<String>,
    /// Headers naming the user's UID.
    pub uid_headers: Vec<String>,
    /// Headers naming the user's groups, all values of all of them.
    pub group_headers: Vec<String>,
    /// Prefixes of headers carrying the user's extra attributes.
    pub extra_header_prefixes: Vec<String>,
}

/// Why the ConfigMap cannot be read.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error(
    "{AUTHENTICATION_CONFIG_MAP_NAMESPACE}/{AUTHENTICATION_CONFIG_MAP}: {key} is not a JSON list of strings: {value}"
)]
pub struct BadConfigMap {
    /// The key.
    pub key: String,
    /// Its value.
    pub value: String,
}

/// Why a request is not authenticated: always answered 401.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unauthenticated {
    /// No client certificate signed by the front-proxy CA.
    NoProxyCertificate,
    /// The certificate's common name is not an allowed one.
    NameNotAllowed,
    /// No user name header.
    NoUser,
}

impl RequestHeaderAuth {
    /// Reads the ConfigMap's data.
    pub fn from_config_map(data: &BTreeMap<String, String>) -> Result<Self, BadConfigMap> {
        let list = |key: &str| -> Result<Vec<String>, BadConfigMap> {
            match data.get(key) {
                None => Ok(Vec::new()),
                Some(value) => serde_json::from_str(value).map_err(|_| BadConfigMap {
                    key: key.to_owned(),
                    value: value.clone(),
                }),
            }
        };
        Ok(Self {
            client_ca_pem: data
                .get("requestheader-client-ca-file")
                .filter(|pem| !pem.trim().is_empty())
                .cloned(),
            allowed_names: list("requestheader-allowed-names")?,
            username_headers: list("requestheader-username-headers")?,
            uid_headers: list("requestheader-uid-headers")?,
            group_headers: list("requestheader-group-headers")?,
            extra_header_prefixes: list("requestheader-extra-headers-prefix")?,
        })
    }

    /// The user the front proxy names, given the common name of the client certificate the
    /// connection presented (already verified against [`Self::client_ca_pem`]).
    pub fn caller(
        &self,
        proxy_name: Option<&str>,
        headers: &HeaderMap,
    ) -> Result<Caller, Unauthenticated> {
        let proxy_name = proxy_name.ok_or(Unauthenticated::NoProxyCertificate)?;
        if !self.allowed_names.is_empty() && !self.allowed_names.iter().any(|n| n == proxy_name) {
            return Err(Unauthenticated::NameNotAllowed);
        }
        let first = |names: &[String]| {
            names
                .iter()
                .filter_map(|name| headers.get(name.as_str()))
                .filter_map(|value| value.to_str().ok())
                .find(|value| !value.is_empty())
                .map(str::to_owned)
        };
        let name = first(&self.username_headers).ok_or(Unauthenticated::NoUser)?;
        let mut groups: Vec<String> = self
            .group_headers
            .iter()
            .flat_map(|name| headers.get_all(name.as_str()))
            .filter_map(|value| value.to_str().ok())
            .map(str::to_owned)
            .collect();
        if !groups.iter().any(|group| group == AUTHENTICATED_GROUP) {
            groups.push(AUTHENTICATED_GROUP.to_owned());
        }
        let mut extra: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for (header, value) in headers {
            let header = header.as_str();
            let Some(key) = self.extra_header_prefixes.iter().find_map(|prefix| {
                header
                    .get(..prefix.len())
                    .filter(|start| start.eq_ignore_ascii_case(prefix))
                    .map(|_| &header[prefix.len()..])
            }) else {
                continue;
            };
            let (Ok(key), Ok(value)) = (percent_decode_str(key).decode_utf8(), value.to_str())
            else {
                continue;
            };
            extra
                .entry(key.to_lowercase())
                .or_default()
                .push(value.to_owned());
        }
        Ok(Caller {
            name,
            uid: first(&self.uid_headers).unwrap_or_default(),
            groups,
            extra,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    fn published() -> RequestHeaderAuth {
        let data: BTreeMap<String, String> = [
            (
                "requestheader-client-ca-file",
                "-----BEGIN CERTIFICATE-----",
            ),
            ("requestheader-allowed-names", r#"["front-proxy-client"]"#),
            ("requestheader-username-headers", r#"["X-Remote-User"]"#),
            ("requestheader-group-headers", r#"["X-Remote-Group"]"#),
            (
                "requestheader-extra-headers-prefix",
                r#"["X-Remote-Extra-"]"#,
            ),
            ("client-ca-file", "ignored"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect();
        RequestHeaderAuth::from_config_map(&data).unwrap()
    }

    fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.append(
                axum::http::HeaderName::from_bytes(name.as_bytes()).unwrap(),
                HeaderValue::from_str(value).unwrap(),
            );
        }
        map
    }

    #[test]
    fn the_published_settings_are_read() {
        let auth = published();
        assert_eq!(auth.allowed_names, ["front-proxy-client"]);
        assert_eq!(auth.username_headers, ["X-Remote-User"]);
        assert_eq!(auth.uid_headers, Vec::<String>::new());
        assert!(auth.client_ca_pem.is_some());
        let bad: BTreeMap<String, String> =
            [("requestheader-allowed-names".to_owned(), "front".to_owned())].into();
        assert_eq!(
            RequestHeaderAuth::from_config_map(&bad)
                .unwrap_err()
                .to_string(),
            "kube-system/extension-apiserver-authentication: requestheader-allowed-names is not a JSON list of strings: front"
        );
    }

    #[test]
    fn the_user_comes_from_the_headers_of_an_allowed_proxy() {
        let auth = published();
        let request = headers(&[
            ("X-Remote-User", "alice"),
            ("X-Remote-Group", "team-a"),
            ("X-Remote-Group", "system:authenticated"),
            ("X-Remote-Extra-Scopes", "one"),
            ("X-Remote-Extra-Acme.com%2Fproject", "p1"),
            ("Authorization", "Bearer not-read"),
        ]);
        let caller = auth.caller(Some("front-proxy-client"), &request).unwrap();
        assert_eq!(caller.name, "alice");
        assert_eq!(caller.groups, ["team-a", "system:authenticated"]);
        assert_eq!(
            caller.extra,
            BTreeMap::from([
                ("acme.com/project".to_owned(), vec!["p1".to_owned()]),
                ("scopes".to_owned(), vec!["one".to_owned()]),
            ])
        );

        let plain = auth
            .caller(
                Some("front-proxy-client"),
                &headers(&[("x-remote-user", "bob")]),
            )
            .unwrap();
        assert_eq!(plain.groups, ["system:authenticated"]);
    }

    #[test]
    fn anything_else_is_unauthenticated() {
        let auth = published();
        let user = headers(&[("X-Remote-User", "alice")]);
        assert_eq!(
            auth.caller(None, &user),
            Err(Unauthenticated::NoProxyCertificate)
        );
        assert_eq!(
            auth.caller(Some("someone-else"), &user),
            Err(Unauthenticated::NameNotAllowed)
        );
        assert_eq!(
            auth.caller(Some("front-proxy-client"), &HeaderMap::new()),
            Err(Unauthenticated::NoUser)
        );
        let any_name = RequestHeaderAuth {
            allowed_names: vec![],
            ..published()
        };
        assert_eq!(
            any_name.caller(Some("anyone"), &user).unwrap().name,
            "alice"
        );
    }
}
