//! The `oauth` object of an HTTP server's entry: how the host signs in to a server that
//! answers 401 (`connect::auth`). Every field is optional; without the object (and without
//! an `Authorization` header) the host signs in when the server asks, registering itself
//! with the authorization server if it must. `"oauth": false` turns sign-in off.
//!
//! ```json
//! "tickets": {"url": "https://mcp.example.com/mcp", "oauth": {
//!     "clientId": "gatehouse-cli", "clientSecret": "${TICKETS_CLIENT_SECRET}",
//!     "issuer": "https://login.example.com",
//!     "clientMetadataUrl": "https://gatehouse.example/oauth/client.json",
//!     "scopes": ["tickets:read"], "grant": "authorization_code", "redirectPort": 33418}}
//! ```
//!
//! A client secret is read from the environment only (`${VAR}`): a servers file is often
//! shared, and a secret written in it is refused.

use serde_json::{Map, Value};

use super::variables::{Variables, references};

mod assertion;
pub use assertion::{AssertionSource, IdentityProvider};

/// The keys an `oauth` object may have; others are warned about.
const OAUTH_KEYS: &[&str] = &[
    "clientId",
    "clientSecret",
    "privateKey",
    "signingAlgorithm",
    "issuer",
    "clientMetadataUrl",
    "clientName",
    "scopes",
    "grant",
    "redirectPort",
    "resource",
    "allowPrivateAddresses",
    "tokenFile",
    "idp",
    "dpop",
];

/// The name the host registers under when the entry gives none.
pub const DEFAULT_CLIENT_NAME: &str = "Gatehouse";
/// Most scopes an entry may list.
pub const MAX_CONFIGURED_SCOPES: usize = 50;

/// How the host obtains tokens for a server.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Grant {
    /// The person signs in, in a browser (authorization code with PKCE).
    #[default]
    AuthorizationCode,
    /// No person: the configured client's own credentials (machine to machine).
    ClientCredentials,
    /// No person: the workload's token from its platform, presented as an assertion
    /// (RFC 7523's JWT-bearer grant; workload identity federation).
    JwtBearer,
    /// The company's identity provider vouches for the person: their ID token exchanged
    /// there for an ID-JAG, presented to the server's authorization server (no consent
    /// screen per server).
    EnterpriseManaged,
}

impl Grant {
    /// The word the servers file and `gatehouse auth status` use.
    pub fn word(self) -> &'static str {
        match self {
            Grant::AuthorizationCode => "authorization_code",
            Grant::ClientCredentials => "client_credentials",
            Grant::JwtBearer => "jwt_bearer",
            Grant::EnterpriseManaged => "enterprise_managed",
        }
    }

    /// Whether a person takes part (a browser sign-in).
    pub fn needs_person(self) -> bool {
        self == Grant::AuthorizationCode
    }
}

/// Every grant, in the servers file's order.
const GRANTS: [Grant; 4] = [
    Grant::AuthorizationCode,
    Grant::ClientCredentials,
    Grant::JwtBearer,
    Grant::EnterpriseManaged,
];

/// How a client's assertion (a private-key JWT, RFC 7523) is signed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SigningAlgorithm {
    /// ECDSA on P-256 with SHA-256.
    Es256,
    /// ECDSA on P-384 with SHA-384.
    Es384,
    /// RSA PKCS#1 v1.5 with SHA-256.
    Rs256,
    /// RSA PKCS#1 v1.5 with SHA-384.
    Rs384,
    /// RSA PKCS#1 v1.5 with SHA-512.
    Rs512,
}

impl SigningAlgorithm {
    /// The algorithm a `signingAlgorithm` names (JOSE's spelling).
    pub fn parse(word: &str) -> Option<SigningAlgorithm> {
        Some(match word {
            "ES256" => SigningAlgorithm::Es256,
            "ES384" => SigningAlgorithm::Es384,
            "RS256" => SigningAlgorithm::Rs256,
            "RS384" => SigningAlgorithm::Rs384,
            "RS512" => SigningAlgorithm::Rs512,
            _ => return None,
        })
    }
}

/// How the host signs in to one HTTP server.
#[derive(Clone, PartialEq, Default)]
pub struct OAuthConfig {
    /// A client registered for the host at the authorization server (first choice).
    pub client_id: Option<String>,
    /// Its secret, from the environment (a confidential client); never shown.
    pub client_secret: Option<String>,
    /// Instead of a secret, its private key (PEM, from the environment) and the algorithm
    /// it signs its assertions with (`private_key_jwt`, RFC 7523); never shown.
    pub private_key: Option<(String, SigningAlgorithm)>,
    /// The authorization server `client_id` belongs to; a server that names another is
    /// refused rather than sent these credentials.
    pub issuer: Option<String>,
    /// A Client ID Metadata Document: an HTTPS URL used as the client id where the
    /// authorization server supports it (second choice, before registering).
    pub client_metadata_url: Option<String>,
    /// The name the host registers under (dynamic client registration).
    pub client_name: String,
    /// Scopes to ask for beyond the ones the server names.
    pub scopes: Vec<String>,
    /// How tokens are obtained.
    pub grant: Grant,
    /// A fixed port for the sign-in's redirect to 127.0.0.1 (for authorization servers
    /// that match redirect URIs exactly); default: the port used last time, else any.
    pub redirect_port: Option<u16>,
    /// The resource a client-credentials token is asked for (default: the server's URL).
    pub resource: Option<String>,
    /// Whether the authorization server may be at a private address (a company network)
    /// while the server is not; loopback and link-local stay refused.
    pub allow_private_addresses: bool,
    /// The workload's token file, for the JWT-bearer grant (read each time).
    pub token_file: Option<std::path::PathBuf>,
    /// The company identity provider, for enterprise-managed authorization.
    pub idp: Option<Box<IdentityProvider>>,
    /// Whether tokens are bound to a key of the host's (DPoP, RFC 9449): always, never,
    /// or (none) when the server's challenge asks for it.
    pub dpop: Option<bool>,
}

impl std::fmt::Debug for OAuthConfig {
    /// The client secret stays out of debug output.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OAuthConfig")
            .field("client_id", &self.client_id)
            .field("client_secret", &self.client_secret.as_ref().map(|_| "…"))
            .field(
                "private_key",
                &self.private_key.as_ref().map(|(_, alg)| alg),
            )
            .field("issuer", &self.issuer)
            .field("client_metadata_url", &self.client_metadata_url)
            .field("client_name", &self.client_name)
            .field("scopes", &self.scopes)
            .field("grant", &self.grant)
            .field("redirect_port", &self.redirect_port)
            .field("resource", &self.resource)
            .field("allow_private_addresses", &self.allow_private_addresses)
            .field("token_file", &self.token_file)
            .field("idp", &self.idp)
            .field("dpop", &self.dpop)
            .finish()
    }
}

impl OAuthConfig {
    /// The settings of an entry with no `oauth` object.
    pub fn new() -> Self {
        OAuthConfig {
            client_name: DEFAULT_CLIENT_NAME.into(),
            ..OAuthConfig::default()
        }
    }
}

/// A string field of the object, substituted.
fn text(map: &Map<String, Value>, key: &str, vars: &Variables) -> Result<Option<String>, String> {
    match map.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) if !s.trim().is_empty() => vars
            .expand(s)
            .map(|v| Some(v.trim().to_owned()))
            .map_err(|e| format!("\"oauth\".{key}: {e}")),
        Some(_) => Err(format!("\"oauth\".{key} must be a non-empty string")),
    }
}

/// An http(s) URL field.
fn url(map: &Map<String, Value>, key: &str, vars: &Variables) -> Result<Option<String>, String> {
    let value = text(map, key, vars)?;
    if let Some(v) = &value
        && !(v.starts_with("https://") || v.starts_with("http://"))
    {
        return Err(format!("\"oauth\".{key} must be an http(s) URL, not {v:?}"));
    }
    Ok(value)
}

/// Read an entry's `oauth` value: `None` when sign-in is off (`false`).
pub(super) fn parse(
    name: &str,
    value: Option<&Value>,
    vars: &Variables,
    warnings: &mut Vec<String>,
) -> Result<Option<OAuthConfig>, String> {
    let map = match value {
        None => return Ok(Some(OAuthConfig::new())),
        Some(Value::Bool(false)) => return Ok(None),
        Some(Value::Bool(true)) => return Ok(Some(OAuthConfig::new())),
        Some(Value::Object(map)) => map,
        Some(_) => return Err("\"oauth\" must be an object, or false to turn sign-in off".into()),
    };
    for key in map.keys().filter(|k| !OAUTH_KEYS.contains(&k.as_str())) {
        warnings.push(format!(
            "server {name}: unknown key \"oauth\".{key} is ignored"
        ));
    }
    let client_secret = assertion::secret(map, "clientSecret", vars)?;
    let client_id = text(map, "clientId", vars)?;
    if client_secret.is_some() && client_id.is_none() {
        return Err("\"oauth\".clientSecret needs the \"clientId\" it belongs to".into());
    }
    let private_key = private_key(map, vars)?;
    if private_key.is_some() && (client_id.is_none() || client_secret.is_some()) {
        return Err("\"oauth\".privateKey needs the \"clientId\" it belongs to, and no \"clientSecret\": a client proves itself one way".into());
    }
    let client_metadata_url = url(map, "clientMetadataUrl", vars)?;
    if let Some(u) = &client_metadata_url
        && !u.starts_with("https://")
    {
        return Err(format!(
            "\"oauth\".clientMetadataUrl must be an https URL (it is the client's id), not {u:?}"
        ));
    }
    let scopes = scopes(map)?;
    let grant = grant(map)?;
    if grant == Grant::ClientCredentials
        && (client_id.is_none() || (client_secret.is_none() && private_key.is_none()))
    {
        return Err(
            "\"oauth\".grant \"client_credentials\" needs \"clientId\" and \"clientSecret\" or \"privateKey\"".into(),
        );
    }
    let (token_file, idp) = assertion::grant_settings(
        name,
        map,
        vars,
        warnings,
        grant,
        client_id.is_some() && private_key.is_none(),
    )?;
    let redirect_port = redirect_port(map)?;
    let dpop = match map.get("dpop") {
        None | Some(Value::Null) => None,
        Some(Value::Bool(b)) => Some(*b),
        Some(_) => return Err("\"oauth\".dpop must be true (bind every token to a key of the host's) or false (never); without it, tokens are bound when the server asks".into()),
    };
    let allow_private_addresses = match map.get("allowPrivateAddresses") {
        None => false,
        Some(Value::Bool(b)) => *b,
        Some(_) => return Err("\"oauth\".allowPrivateAddresses must be true or false".into()),
    };
    Ok(Some(OAuthConfig {
        client_id,
        client_secret,
        private_key,
        issuer: url(map, "issuer", vars)?,
        client_metadata_url,
        client_name: text(map, "clientName", vars)?.unwrap_or_else(|| DEFAULT_CLIENT_NAME.into()),
        scopes,
        grant,
        redirect_port,
        resource: url(map, "resource", vars)?,
        allow_private_addresses,
        token_file,
        idp,
        dpop,
    }))
}

/// `grant`: one of [`GRANTS`] by its word; the authorization code when absent.
fn grant(map: &Map<String, Value>) -> Result<Grant, String> {
    let Some(word) = map.get("grant") else {
        return Ok(Grant::AuthorizationCode);
    };
    GRANTS
        .into_iter()
        .find(|g| word.as_str() == Some(g.word()))
        .ok_or_else(|| {
            let words: Vec<String> = GRANTS.iter().map(|g| format!("\"{}\"", g.word())).collect();
            format!("\"oauth\".grant must be one of {}", words.join(", "))
        })
}

/// `privateKey` (a PEM from the environment, as a secret is) and its `signingAlgorithm`.
fn private_key(
    map: &Map<String, Value>,
    vars: &Variables,
) -> Result<Option<(String, SigningAlgorithm)>, String> {
    let algorithm = match map.get("signingAlgorithm") {
        None => None,
        Some(Value::String(word)) => Some(SigningAlgorithm::parse(word).ok_or_else(|| {
            "\"oauth\".signingAlgorithm must be ES256, ES384, RS256, RS384 or RS512".to_owned()
        })?),
        Some(_) => return Err("\"oauth\".signingAlgorithm must be a string".into()),
    };
    let raw = match map.get("privateKey") {
        None | Some(Value::Null) if algorithm.is_some() => {
            return Err("\"oauth\".signingAlgorithm needs the \"privateKey\" it signs with".into());
        }
        None | Some(Value::Null) => return Ok(None),
        Some(Value::String(raw)) => raw,
        Some(_) => return Err("\"oauth\".privateKey must be a string (\"${VARIABLE}\")".into()),
    };
    // Never the value itself in a message: it may be the key.
    if references(raw).map_or(true, |r| r.is_empty()) {
        return Err("\"oauth\".privateKey must come from the environment: write it as \"${VARIABLE}\" (the PEM), not the key itself".into());
    }
    let pem = vars
        .expand(raw)
        .map_err(|e| format!("\"oauth\".privateKey: {e}"))?;
    if !pem.contains("-----BEGIN") || !pem.contains("PRIVATE KEY-----") {
        return Err("\"oauth\".privateKey's variable must hold a PEM private key (-----BEGIN … PRIVATE KEY-----)".into());
    }
    let algorithm = algorithm.ok_or_else(|| {
        "\"oauth\".privateKey needs its \"signingAlgorithm\" (ES256, ES384, RS256, RS384 or RS512)".to_owned()
    })?;
    Ok(Some((pem, algorithm)))
}

/// `scopes`: at most [`MAX_CONFIGURED_SCOPES`] scope names, each visible ASCII without
/// quotes or backslashes (they go into headers and URLs).
fn scopes(map: &Map<String, Value>) -> Result<Vec<String>, String> {
    match map.get("scopes") {
        None => Ok(Vec::new()),
        Some(Value::Array(items)) if items.len() <= MAX_CONFIGURED_SCOPES => items
            .iter()
            .map(|s| match s.as_str() {
                Some(s)
                    if !s.is_empty()
                        && s.bytes()
                            .all(|b| b.is_ascii_graphic() && b != b'"' && b != b'\\') =>
                {
                    Ok(s.to_owned())
                }
                _ => Err(format!(
                    "\"oauth\".scopes holds scope names (visible ASCII, no quotes), not {s}"
                )),
            })
            .collect(),
        Some(_) => Err(format!(
            "\"oauth\".scopes must be an array of at most {MAX_CONFIGURED_SCOPES} scope names"
        )),
    }
}

/// `redirectPort`: a fixed port for the sign-in's listener, 1024 to 65535.
fn redirect_port(map: &Map<String, Value>) -> Result<Option<u16>, String> {
    match map.get("redirectPort") {
        None => Ok(None),
        Some(v) => match v.as_u64().filter(|p| (1024..=65535).contains(p)) {
            Some(p) => Ok(Some(p as u16)),
            None => Err(format!(
                "\"oauth\".redirectPort must be a port from 1024 to 65535, not {v}"
            )),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Identity;

    /// An entry's `oauth` object as the file would give it.
    fn read(oauth: Value) -> Result<Option<OAuthConfig>, String> {
        let vars = Variables::new(&Identity::default());
        parse("desk", Some(&oauth), &vars, &mut Vec::new())
    }

    // A PEM through a variable's default: the test changes no environment.
    const KEY: &str =
        "${GATEHOUSE_TEST_UNSET_KEY:------BEGIN PRIVATE KEY-----\nMIGH\n-----END PRIVATE KEY-----}";

    #[test]
    fn a_private_key_comes_from_the_environment_with_its_algorithm_and_is_never_shown() {
        let config = read(
            serde_json::json!({"clientId": "ci-bot", "grant": "client_credentials",
            "privateKey": KEY, "signingAlgorithm": "ES256"}),
        )
        .unwrap()
        .unwrap();
        let (pem, algorithm) = config.private_key.clone().unwrap();
        assert!(pem.starts_with("-----BEGIN PRIVATE KEY-----"), "{pem}");
        assert_eq!(algorithm, SigningAlgorithm::Es256);
        assert!(!format!("{config:?}").contains("MIGH"), "{config:?}");
        let refused = [
            (
                serde_json::json!({"clientId": "c", "privateKey": "-----BEGIN PRIVATE KEY-----MIGH",
                "signingAlgorithm": "ES256"}),
                "from the environment",
            ),
            (
                serde_json::json!({"clientId": "c", "privateKey": KEY}),
                "signingAlgorithm",
            ),
            (
                serde_json::json!({"clientId": "c", "privateKey": KEY, "signingAlgorithm": "HS256"}),
                "ES256, ES384",
            ),
            (
                serde_json::json!({"clientId": "c", "signingAlgorithm": "ES256"}),
                "needs the \"privateKey\"",
            ),
            (
                serde_json::json!({"privateKey": KEY, "signingAlgorithm": "ES256"}),
                "clientId",
            ),
            (
                serde_json::json!({"clientId": "c", "privateKey": "${GATEHOUSE_TEST_UNSET_KEY:-not a key}",
                "signingAlgorithm": "ES256"}),
                "PEM private key",
            ),
            (
                serde_json::json!({"clientId": "c", "grant": "client_credentials"}),
                "\"privateKey\"",
            ),
            (
                serde_json::json!({"clientId": "c", "clientSecret": "${GATEHOUSE_TEST_UNSET_SECRET:-s}",
                    "privateKey": KEY, "signingAlgorithm": "ES256"}),
                "one way",
            ),
        ];
        for (oauth, why) in refused {
            let err = read(oauth.clone()).unwrap_err();
            assert!(err.contains(why), "{oauth}: {err}");
            assert!(
                !err.contains("MIGH"),
                "the key is never in a message: {err}"
            );
        }
    }
}
