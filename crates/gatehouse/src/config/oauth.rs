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

/// The keys an `oauth` object may have; others are warned about.
const OAUTH_KEYS: &[&str] = &[
    "clientId",
    "clientSecret",
    "issuer",
    "clientMetadataUrl",
    "clientName",
    "scopes",
    "grant",
    "redirectPort",
    "resource",
    "allowPrivateAddresses",
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
}

/// How the host signs in to one HTTP server.
#[derive(Clone, PartialEq, Default)]
pub struct OAuthConfig {
    /// A client registered for the host at the authorization server (first choice).
    pub client_id: Option<String>,
    /// Its secret, from the environment (a confidential client); never shown.
    pub client_secret: Option<String>,
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
}

impl std::fmt::Debug for OAuthConfig {
    /// The client secret stays out of debug output.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OAuthConfig")
            .field("client_id", &self.client_id)
            .field("client_secret", &self.client_secret.as_ref().map(|_| "…"))
            .field("issuer", &self.issuer)
            .field("client_metadata_url", &self.client_metadata_url)
            .field("client_name", &self.client_name)
            .field("scopes", &self.scopes)
            .field("grant", &self.grant)
            .field("redirect_port", &self.redirect_port)
            .field("resource", &self.resource)
            .field("allow_private_addresses", &self.allow_private_addresses)
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
    let client_secret = match map.get("clientSecret") {
        None | Some(Value::Null) => None,
        Some(Value::String(raw)) => {
            // Never the value itself in a message: it may be the secret.
            if references(raw).map_or(true, |r| r.is_empty()) {
                return Err("\"oauth\".clientSecret must come from the environment: write it as \"${VARIABLE}\", not the secret itself".into());
            }
            text(map, "clientSecret", vars)?
        }
        Some(_) => return Err("\"oauth\".clientSecret must be a string (\"${VARIABLE}\")".into()),
    };
    let client_id = text(map, "clientId", vars)?;
    if client_secret.is_some() && client_id.is_none() {
        return Err("\"oauth\".clientSecret needs the \"clientId\" it belongs to".into());
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
    let grant = match map.get("grant").and_then(Value::as_str) {
        None if !map.contains_key("grant") => Grant::AuthorizationCode,
        Some("authorization_code") => Grant::AuthorizationCode,
        Some("client_credentials") => Grant::ClientCredentials,
        _ => {
            return Err(
                "\"oauth\".grant must be \"authorization_code\" or \"client_credentials\"".into(),
            );
        }
    };
    if grant == Grant::ClientCredentials && (client_id.is_none() || client_secret.is_none()) {
        return Err(
            "\"oauth\".grant \"client_credentials\" needs \"clientId\" and \"clientSecret\"".into(),
        );
    }
    let redirect_port = redirect_port(map)?;
    let allow_private_addresses = match map.get("allowPrivateAddresses") {
        None => false,
        Some(Value::Bool(b)) => *b,
        Some(_) => return Err("\"oauth\".allowPrivateAddresses must be true or false".into()),
    };
    Ok(Some(OAuthConfig {
        client_id,
        client_secret,
        issuer: url(map, "issuer", vars)?,
        client_metadata_url,
        client_name: text(map, "clientName", vars)?.unwrap_or_else(|| DEFAULT_CLIENT_NAME.into()),
        scopes,
        grant,
        redirect_port,
        resource: url(map, "resource", vars)?,
        allow_private_addresses,
    }))
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
