//! The settings of the grants that present an assertion instead of a person: a workload's
//! token that its platform mounts as a file (the JWT-bearer grant of RFC 7523, workload
//! identity federation), and the company identity provider of enterprise-managed
//! authorization (its ID token exchanged for an ID-JAG, then for the server's token).
//!
//! ```json
//! "builds": {"url": "https://mcp.example.com/mcp", "oauth": {"grant": "jwt_bearer",
//!     "clientId": "ci-runner", "tokenFile": "/var/run/secrets/tokens/mcp"}}
//! "wiki": {"url": "https://wiki.example.com/mcp", "oauth": {"grant": "enterprise_managed",
//!     "clientId": "gatehouse", "clientSecret": "${WIKI_CLIENT_SECRET}",
//!     "idp": {"issuer": "https://login.example.com", "tokenEndpoint": "https://login.example.com/token",
//!             "clientId": "gatehouse-idp", "idTokenFile": "~/.cache/sso/id_token"}}}
//! ```
//!
//! A token file is read each time a token is asked for, never kept: the platform replaces
//! it before it expires. An ID token written in the servers file itself is refused, as a
//! secret is.

use std::path::PathBuf;

use serde_json::{Map, Value};

use super::super::variables::{Variables, references};
use super::{Grant, text, url};

/// The keys an `idp` object may have.
const IDP_KEYS: &[&str] = &[
    "issuer",
    "tokenEndpoint",
    "clientId",
    "clientSecret",
    "idToken",
    "idTokenFile",
];

/// Where an assertion comes from: a file read each time, or the environment (read once,
/// with the servers file).
#[derive(Clone, PartialEq)]
pub enum AssertionSource {
    /// A file the platform (or a sign-in agent) keeps fresh.
    File(PathBuf),
    /// The value of a variable.
    Value(String),
}

impl std::fmt::Debug for AssertionSource {
    /// The value stays out of debug output; a file's path is no secret.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            AssertionSource::File(path) => f.debug_tuple("File").field(path).finish(),
            AssertionSource::Value(_) => f.write_str("Value(…)"),
        }
    }
}

/// The company identity provider of enterprise-managed authorization.
#[derive(Clone, PartialEq)]
pub struct IdentityProvider {
    /// Its issuer (the ID-JAG's `iss`).
    pub issuer: String,
    /// Its token endpoint, where the ID token is exchanged (RFC 8693).
    pub token_endpoint: String,
    /// The host's client there.
    pub client_id: String,
    /// That client's secret, from the environment; none for a public client.
    pub client_secret: Option<String>,
    /// The person's ID token from it.
    pub id_token: AssertionSource,
}

impl std::fmt::Debug for IdentityProvider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("IdentityProvider")
            .field("issuer", &self.issuer)
            .field("token_endpoint", &self.token_endpoint)
            .field("client_id", &self.client_id)
            .field("client_secret", &self.client_secret.as_ref().map(|_| "…"))
            .field("id_token", &self.id_token)
            .finish()
    }
}

/// A path field, with `~/` for the home folder and variables substituted.
fn path(map: &Map<String, Value>, key: &str, vars: &Variables) -> Result<Option<PathBuf>, String> {
    let Some(raw) = text(map, key, vars)? else {
        return Ok(None);
    };
    let path = match raw.strip_prefix("~/") {
        Some(rest) => std::env::var_os("HOME")
            .map(|home| PathBuf::from(home).join(rest))
            .ok_or_else(|| format!("\"oauth\".{key} starts with ~/ and $HOME is unset"))?,
        None => PathBuf::from(&raw),
    };
    if !path.is_absolute() {
        return Err(format!(
            "\"oauth\".{key} must be an absolute path (or start with ~/), not {raw:?}"
        ));
    }
    Ok(Some(path))
}

/// A secret field that must come from the environment (`${VAR}`), never written in the file.
pub(super) fn secret(
    map: &Map<String, Value>,
    key: &str,
    vars: &Variables,
) -> Result<Option<String>, String> {
    match map.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(raw)) => {
            // Never the value itself in a message: it may be the secret.
            if references(raw).map_or(true, |r| r.is_empty()) {
                return Err(format!(
                    "\"oauth\".{key} must come from the environment: write it as \"${{VARIABLE}}\", not the secret itself"
                ));
            }
            text(map, key, vars)
        }
        Some(_) => Err(format!(
            "\"oauth\".{key} must be a string (\"${{VARIABLE}}\")"
        )),
    }
}

/// `tokenFile` and `idp`, each present exactly when `grant` is the one that uses it; the
/// `enterprise_managed` grant also needs a client that proves itself with a secret or
/// nothing (`client_fits`).
pub(super) fn grant_settings(
    name: &str,
    map: &Map<String, Value>,
    vars: &Variables,
    warnings: &mut Vec<String>,
    grant: Grant,
    client_fits: bool,
) -> Result<(Option<PathBuf>, Option<Box<IdentityProvider>>), String> {
    let token_file = path(map, "tokenFile", vars)?;
    if (grant == Grant::JwtBearer) != token_file.is_some() {
        return Err(if token_file.is_some() {
            "\"oauth\".tokenFile is the workload's token of the \"jwt_bearer\" grant: say \"grant\": \"jwt_bearer\"".into()
        } else {
            "\"oauth\".grant \"jwt_bearer\" needs the \"tokenFile\" its platform mounts (the workload's token)".into()
        });
    }
    let idp = identity_provider(name, map, vars, warnings)?;
    if (grant == Grant::EnterpriseManaged) != idp.is_some() {
        return Err(if idp.is_some() {
            "\"oauth\".idp is the identity provider of the \"enterprise_managed\" grant: say \"grant\": \"enterprise_managed\"".into()
        } else {
            "\"oauth\".grant \"enterprise_managed\" needs the company's identity provider, \"idp\""
                .into()
        });
    }
    if grant == Grant::EnterpriseManaged && !client_fits {
        return Err("\"oauth\".grant \"enterprise_managed\" needs the \"clientId\" registered at the server's authorization server (with its \"clientSecret\" if it has one; a private key is not supported there)".into());
    }
    Ok((token_file, idp.map(Box::new)))
}

/// `idp`: the identity provider, for the `enterprise_managed` grant.
fn identity_provider(
    name: &str,
    map: &Map<String, Value>,
    vars: &Variables,
    warnings: &mut Vec<String>,
) -> Result<Option<IdentityProvider>, String> {
    let idp = match map.get("idp") {
        None | Some(Value::Null) => return Ok(None),
        Some(Value::Object(idp)) => idp,
        Some(_) => return Err("\"oauth\".idp must be an object".into()),
    };
    for key in idp.keys().filter(|k| !IDP_KEYS.contains(&k.as_str())) {
        warnings.push(format!(
            "server {name}: unknown key \"oauth\".idp.{key} is ignored"
        ));
    }
    let need = |key: &str, value: Option<String>| {
        value.ok_or_else(|| format!("\"oauth\".idp needs its \"{key}\""))
    };
    // The field readers name `"oauth".key`; these keys are the idp's.
    let inside = |e: String| e.replacen("\"oauth\".", "\"oauth\".idp.", 1);
    let id_token = match (
        secret(idp, "idToken", vars).map_err(inside)?,
        path(idp, "idTokenFile", vars).map_err(inside)?,
    ) {
        (Some(_), Some(_)) => {
            return Err("\"oauth\".idp takes \"idToken\" or \"idTokenFile\", not both".into());
        }
        (Some(value), None) => AssertionSource::Value(value),
        (None, Some(file)) => AssertionSource::File(file),
        (None, None) => {
            return Err("\"oauth\".idp needs the person's ID token: \"idTokenFile\" (a file a sign-in agent keeps fresh) or \"idToken\": \"${VARIABLE}\"".into());
        }
    };
    Ok(Some(IdentityProvider {
        issuer: need("issuer", url(idp, "issuer", vars).map_err(inside)?)?,
        token_endpoint: need(
            "tokenEndpoint",
            url(idp, "tokenEndpoint", vars).map_err(inside)?,
        )?,
        client_id: need("clientId", text(idp, "clientId", vars).map_err(inside)?)?,
        client_secret: secret(idp, "clientSecret", vars).map_err(inside)?,
        id_token,
    }))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::super::{Grant, OAuthConfig, parse};
    use super::*;
    use crate::config::Identity;

    /// An entry's `oauth` object as the file would give it.
    fn read(oauth: Value) -> Result<OAuthConfig, String> {
        let vars = Variables::new(&Identity::default());
        parse("desk", Some(&oauth), &vars, &mut Vec::new()).map(Option::unwrap)
    }

    // An ID token through a variable's default: the test changes no environment.
    const ID_TOKEN: &str = "${GATEHOUSE_TEST_UNSET_ID_TOKEN:-eyJh.eyJz.c2ln}";

    #[test]
    fn a_workload_names_its_token_file_and_the_grant_that_reads_it() {
        let config = read(json!({"grant": "jwt_bearer", "clientId": "ci-runner",
            "tokenFile": "/var/run/secrets/tokens/mcp"}))
        .unwrap();
        assert_eq!(config.grant, Grant::JwtBearer);
        assert_eq!(
            config.token_file.as_deref(),
            Some(std::path::Path::new("/var/run/secrets/tokens/mcp"))
        );
        for (oauth, why) in [
            (
                json!({"grant": "jwt_bearer", "clientId": "c"}),
                "needs the \"tokenFile\"",
            ),
            (
                json!({"clientId": "c", "tokenFile": "/t"}),
                "say \"grant\": \"jwt_bearer\"",
            ),
            (
                json!({"grant": "jwt_bearer", "tokenFile": "token"}),
                "absolute path",
            ),
            (
                json!({"grant": "password"}),
                "one of \"authorization_code\", \"client_credentials\", \"jwt_bearer\", \"enterprise_managed\"",
            ),
            (json!({"grant": 7}), "one of"),
        ] {
            let err = read(oauth.clone()).unwrap_err();
            assert!(err.contains(why), "{oauth}: {err}");
        }
    }

    #[test]
    fn an_identity_provider_needs_its_endpoints_and_an_id_token_from_outside_the_file() {
        let config = read(json!({"grant": "enterprise_managed", "clientId": "gatehouse",
            "idp": {"issuer": "https://login.example.com", "tokenEndpoint": "https://login.example.com/token",
                    "clientId": "gatehouse-idp", "idToken": ID_TOKEN}}))
        .unwrap();
        let idp = config.idp.clone().unwrap();
        assert_eq!(
            idp.id_token,
            AssertionSource::Value("eyJh.eyJz.c2ln".into())
        );
        assert!(!format!("{config:?}").contains("eyJh"), "{config:?}");
        let idp = |extra: Value| {
            let mut base = json!({"issuer": "https://login.example.com",
                "tokenEndpoint": "https://login.example.com/token", "clientId": "g"});
            base.as_object_mut()
                .unwrap()
                .extend(extra.as_object().unwrap().clone());
            base
        };
        for (oauth, why) in [
            (
                json!({"grant": "enterprise_managed", "clientId": "c", "idp": idp(json!({"idToken": "eyJh.eyJz.c2ln"}))}),
                "\"oauth\".idp.idToken must come from the environment",
            ),
            (
                json!({"grant": "enterprise_managed", "clientId": "c", "idp": idp(json!({}))}),
                "needs the person's ID token",
            ),
            (
                json!({"grant": "enterprise_managed", "clientId": "c", "idp": idp(json!({"idToken": ID_TOKEN, "idTokenFile": "/t"}))}),
                "not both",
            ),
            (
                json!({"grant": "enterprise_managed", "clientId": "c", "idp": {"idTokenFile": "/t"}}),
                "needs its \"issuer\"",
            ),
            (
                json!({"grant": "enterprise_managed", "clientId": "c", "idp": idp(json!({"tokenEndpoint": "ftp://x", "idTokenFile": "/t"}))}),
                "\"oauth\".idp.tokenEndpoint must be an http(s) URL",
            ),
            (
                json!({"grant": "enterprise_managed", "idp": idp(json!({"idTokenFile": "/t"}))}),
                "needs the \"clientId\"",
            ),
            (
                json!({"grant": "enterprise_managed", "clientId": "c"}),
                "needs the company's identity provider",
            ),
            (
                json!({"clientId": "c", "idp": idp(json!({"idTokenFile": "/t"}))}),
                "say \"grant\": \"enterprise_managed\"",
            ),
        ] {
            let err = read(oauth.clone()).unwrap_err();
            assert!(err.contains(why), "{oauth}: {err}");
            assert!(
                !err.contains("eyJh"),
                "an ID token is never in a message: {err}"
            );
        }
    }
}
