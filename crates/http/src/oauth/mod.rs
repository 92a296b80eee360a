//! A reference server as an OAuth protected resource (`gatehouse serve NAME --http ADDR
//! --oauth-issuer URL`): its protected-resource metadata (RFC 9728), the `WWW-Authenticate`
//! challenges of a 401 and a 403 (RFC 6750, the MCP authorization spec), and the check of
//! each access token: an RFC 9068 JWT signed with a key the issuer publishes, from that
//! issuer, for this resource (`aud`), unexpired, with the scopes the request needs.
//!
//! The token's subject is the caller's user; the organization comes from a claim (`org` by
//! default, `--oauth-org-claim`), else from the user's only membership
//! ([`crate::Members`], as the server keeps them); the server then checks the membership on every call as always.
//! Scopes are delegation, roles are permission: a token needs [`READ_SCOPE`] for anything,
//! and [`WRITE_SCOPE`] as well to call a tool that is not marked read-only (a gateway,
//! [`Writes::EveryCall`], for every call); the role the membership gives still decides
//! what the user may do at all.
//!
//! - [`dpop`]: tokens bound to a key (RFC 9449): a bound token only with a fresh proof of
//!   its key, never as a bearer token; with `--oauth-dpop required`, no bearer token at all.
//! - `id_token`: an OpenID Connect ID token checked by the same keys and rules, for a
//!   client of the issuer beside the resource (the gateway's approval page).
//! - [`keys`]: the issuer's metadata (RFC 8414 and OpenID discovery) and its key set,
//!   fetched at start and again, at most every [`KEYS_REFETCH_INTERVAL`], for a key it
//!   does not know (the issuer rotated its keys).

pub mod dpop;
mod id_token;
pub mod introspection;
mod refusal;
pub use dpop::{DpopPolicy, Presented, Scheme};
pub use refusal::Refusal;
pub mod keys;

#[cfg(test)]
mod tests;

use std::{net::SocketAddr, time::Duration};

use jsonwebtoken::{Algorithm, DecodingKey, Validation, errors::ErrorKind};
use serde_json::{Value, json};

use crate::{Caller, Members};

/// The scope every request needs: reading through the server's tools and resources.
pub const READ_SCOPE: &str = "mcp:read";
/// The scope a tool that is not marked read-only needs besides [`READ_SCOPE`].
pub const WRITE_SCOPE: &str = "mcp:write";
/// The claim that names the caller's organization, unless `--oauth-org-claim` says another.
pub const DEFAULT_ORG_CLAIM: &str = "org";
/// How far a token's `exp` and `nbf` may be off the server's clock.
pub const CLOCK_LEEWAY: Duration = Duration::from_secs(30);
/// The issuer's keys are fetched again for an unknown key id at most this often.
pub const KEYS_REFETCH_INTERVAL: Duration = Duration::from_secs(30);
/// How long one request to the issuer (metadata, keys) may take.
pub const FETCH_TIMEOUT: Duration = Duration::from_secs(10);
/// The largest metadata document or key set read from the issuer.
pub const MAX_DOCUMENT_BYTES: usize = 256 * 1024;
/// The longest access token looked at; a longer one is refused unread.
pub const MAX_TOKEN_BYTES: usize = 16 * 1024;
/// The longest subject or organization taken from a token.
pub const MAX_CLAIM_CHARS: usize = 256;
/// Where the metadata of a resource at path `/mcp` is served (RFC 9728 §3.1: the
/// well-known name inserted before the resource's path).
pub const METADATA_PREFIX: &str = "/.well-known/oauth-protected-resource";
/// The client name in the logs when a token names none.
pub const DEFAULT_OAUTH_CLIENT: &str = "oauth";

/// Signature algorithms accepted (asymmetric only: never `none`, never a shared secret).
pub(crate) const ALGORITHMS: &[Algorithm] = &[
    Algorithm::RS256,
    Algorithm::RS384,
    Algorithm::RS512,
    Algorithm::PS256,
    Algorithm::PS384,
    Algorithm::PS512,
    Algorithm::ES256,
    Algorithm::ES384,
    Algorithm::EdDSA,
];

/// Which tool calls need [`WRITE_SCOPE`] besides [`READ_SCOPE`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Writes {
    /// A call to a tool not marked read-only (an unknown tool counts as writing): a
    /// reference server, which vouches for its own tools' hints.
    #[default]
    UnlessReadOnly,
    /// Every call: a gateway, which vouches for no hint of the servers behind it
    /// (annotations never grant anything).
    EveryCall,
}

/// Which kind of JWT a check expects.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Jwt {
    /// An access token for this resource (RFC 9068: `typ` is `at+jwt`).
    AccessToken,
    /// An OpenID Connect ID token for a client of the issuer's.
    IdToken,
}

/// Reading only.
const READING: &[&str] = &[READ_SCOPE];
/// Reading and writing.
const WRITING: &[&str] = &[READ_SCOPE, WRITE_SCOPE];

impl Writes {
    /// The scopes a request needs: [`READ_SCOPE`] for everything, and [`WRITE_SCOPE`] too
    /// for the `tools/call`s this rule says write. Every scope is named in one challenge,
    /// so a client asks for them all at once.
    pub fn required(
        self,
        method: Option<&str>,
        read_only_tool: Option<bool>,
    ) -> &'static [&'static str] {
        match (method, self) {
            (Some("tools/call"), Writes::EveryCall) => WRITING,
            (Some("tools/call"), Writes::UnlessReadOnly) if read_only_tool != Some(true) => WRITING,
            _ => READING,
        }
    }

    /// The minimal set for basic use, which the metadata's `scopes_supported` and a 401's
    /// challenge name: reading, and writing too where every call writes, so that a client
    /// signs in for what its first call needs instead of stepping up on it (some clients
    /// register with their first scopes, and their authorization server then refuses a
    /// step-up beyond them).
    pub fn basic(self) -> &'static [&'static str] {
        match self {
            Writes::UnlessReadOnly => READING,
            Writes::EveryCall => WRITING,
        }
    }
}

/// What `--oauth-issuer`, `--oauth-resource` and `--oauth-org-claim` ask for.
#[derive(Debug, Clone)]
pub struct OAuthOptions {
    /// The authorization server's issuer identifier, exactly as its metadata gives it.
    pub issuer: String,
    /// The URL clients know this server by (its canonical URI, the tokens' audience);
    /// default `http://ADDR/mcp` of the address it listens on.
    pub resource: Option<String>,
    /// The claim naming the caller's organization.
    pub org_claim: String,
    /// Which calls need [`WRITE_SCOPE`].
    pub writes: Writes,
    /// Whether tokens must be bound to a key.
    pub dpop: DpopPolicy,
    /// Token introspection (revocation within a bound), if asked for.
    pub introspection: Option<introspection::IntrospectionOptions>,
}

/// The checks of one server: the issuer, its keys, and this resource's identity.
pub struct ResourceServer {
    issuer: String,
    resource: String,
    metadata_url: String,
    metadata_path: String,
    org_claim: String,
    writes: Writes,
    keys: keys::Keys,
    members: &'static dyn Members,
    dpop: DpopPolicy,
    /// The DPoP proofs seen in their window (replays are refused).
    proofs: dpop::Proofs,
    /// The issuer's introspection, when revocation is to be seen within a bound.
    introspection: Option<introspection::Introspection>,
}

/// What a valid token grants: who calls, and the scopes it carries.
#[derive(Debug, Clone, PartialEq)]
pub struct Grant {
    /// The caller the token stands for.
    pub caller: Caller,
    /// The token's scopes.
    pub scopes: Vec<String>,
}

impl Grant {
    /// The scopes of `needed` this grant lacks.
    pub fn missing<'a>(&self, needed: &[&'a str]) -> Vec<&'a str> {
        needed
            .iter()
            .copied()
            .filter(|s| !self.scopes.iter().any(|g| g == s))
            .collect()
    }
}

/// A quoted-string value of a challenge parameter: what is not printable ASCII, and the
/// quote and backslash, are left out (the values are ours, but stay valid whatever they are).
/// The URL a flag gives (`--oauth-issuer`, `--oauth-resource`): http(s), without a query or
/// a fragment, which neither an issuer nor a resource may carry.
fn http_url(flag: &str, value: &str) -> anyhow::Result<reqwest::Url> {
    let parsed = reqwest::Url::parse(value)
        .map_err(|e| anyhow::anyhow!("{flag} {value:?} is not a URL: {e}"))?;
    anyhow::ensure!(
        matches!(parsed.scheme(), "http" | "https")
            && parsed.query().is_none()
            && parsed.fragment().is_none(),
        "{flag} must be an http(s) URL without a query or fragment, not {value:?}"
    );
    Ok(parsed)
}

fn quoted(value: &str) -> String {
    value
        .chars()
        .filter(|c| (' '..='~').contains(c) && *c != '"' && *c != '\\')
        .collect()
}

impl ResourceServer {
    /// Read the issuer's metadata and keys, and fix this resource's identity: the
    /// configured resource URL, else `http://LOCAL/mcp`.
    pub async fn start(
        options: &OAuthOptions,
        local: SocketAddr,
        members: &'static dyn Members,
    ) -> anyhow::Result<Self> {
        let resource = match &options.resource {
            Some(r) => r.clone(),
            None => {
                anyhow::ensure!(
                    !local.ip().is_unspecified(),
                    "listening on {local}, the server cannot tell the URL clients know it by: \
                     give it with --oauth-resource (for example https://mcp.example.com/mcp)"
                );
                format!("http://{local}{}", crate::MCP_PATH)
            }
        };
        let parsed = http_url("--oauth-resource", &resource)?;
        // RFC 9728 §3.1: the well-known name goes between the origin and the path.
        let path = parsed.path().trim_end_matches('/');
        let metadata_path = format!("{METADATA_PREFIX}{path}");
        let metadata_url = format!("{}{metadata_path}", parsed.origin().ascii_serialization());
        let keys = keys::Keys::discover(&options.issuer).await?;
        let introspection = match &options.introspection {
            Some(asked) => Some(introspection::Introspection::new(keys.metadata(), asked)?),
            None => None,
        };
        Ok(ResourceServer {
            issuer: options.issuer.clone(),
            resource: resource.trim_end_matches('/').to_owned(),
            metadata_url,
            metadata_path,
            org_claim: options.org_claim.clone(),
            writes: options.writes,
            keys,
            members,
            dpop: options.dpop,
            proofs: dpop::Proofs::default(),
            introspection,
        })
    }

    /// A server with fixed keys, for tests.
    #[cfg(test)]
    pub(crate) fn for_tests(
        issuer: &str,
        resource: &str,
        keys: keys::Keys,
        members: &'static dyn Members,
    ) -> Self {
        ResourceServer {
            issuer: issuer.into(),
            resource: resource.into(),
            metadata_url: format!("http://127.0.0.1:1{METADATA_PREFIX}/mcp"),
            metadata_path: format!("{METADATA_PREFIX}/mcp"),
            org_claim: DEFAULT_ORG_CLAIM.into(),
            writes: Writes::default(),
            keys,
            members,
            dpop: DpopPolicy::default(),
            proofs: dpop::Proofs::default(),
            introspection: None,
        }
    }

    /// The same server, taking only DPoP-bound tokens, for tests.
    #[cfg(test)]
    pub(crate) fn requiring_dpop(mut self) -> Self {
        self.dpop = DpopPolicy::Required;
        self
    }

    /// Whether tokens are put to the issuer's introspection endpoint.
    pub fn introspects(&self) -> bool {
        self.introspection.is_some()
    }

    /// The resource's identifier: the tokens' audience.
    pub fn resource(&self) -> &str {
        &self.resource
    }

    /// The issuer whose tokens are accepted.
    pub fn issuer(&self) -> &str {
        &self.issuer
    }

    /// The issuer's metadata document, as read at start ([`keys::Keys::metadata`]).
    pub fn issuer_metadata(&self) -> &Value {
        self.keys.metadata()
    }

    /// The scopes a request needs ([`Writes::required`]).
    pub fn required_scopes(
        &self,
        method: Option<&str>,
        read_only_tool: Option<bool>,
    ) -> &'static [&'static str] {
        self.writes.required(method, read_only_tool)
    }

    /// The scopes a 401 names ([`Writes::basic`]).
    pub fn basic_scopes(&self) -> &'static [&'static str] {
        self.writes.basic()
    }

    /// The path this server serves its metadata at.
    pub fn metadata_path(&self) -> &str {
        &self.metadata_path
    }

    /// The protected-resource metadata document (RFC 9728 §2). `scopes_supported` is the
    /// minimal set for basic use ([`Writes::basic`]); more is asked for when it is needed.
    /// No `offline_access` here: refresh tokens are the authorization server's business.
    pub fn metadata_document(&self) -> Value {
        json!({
            "resource": self.resource,
            "authorization_servers": [self.issuer],
            "scopes_supported": self.writes.basic(),
            "bearer_methods_supported": ["header"],
            "resource_name": "Gatehouse reference server",
            "dpop_signing_alg_values_supported": dpop::algorithm_names(),
            "dpop_bound_access_tokens_required": self.dpop == DpopPolicy::Required,
        })
    }

    /// The scheme a challenge to a request presented with `used` names: DPoP when the
    /// request used it or only DPoP is taken, else Bearer.
    pub fn answer_scheme(&self, used: Option<Scheme>) -> Scheme {
        if used == Some(Scheme::Dpop) || self.dpop == DpopPolicy::Required {
            Scheme::Dpop
        } else {
            Scheme::Bearer
        }
    }

    /// The `WWW-Authenticate` value of a 401 or 403: this server's metadata URL, every
    /// scope the request needs, and the error with its description when there is one (RFC
    /// 6750 §3: none when the request carried no token).
    pub fn challenge(&self, error: Option<(&str, &str)>, scopes: &[&str]) -> String {
        self.challenge_as(self.answer_scheme(None), error, scopes)
    }

    /// [`ResourceServer::challenge`] in the `scheme` given; a DPoP challenge names the
    /// algorithms a proof may be signed with (RFC 9449 §7.1).
    pub fn challenge_as(
        &self,
        scheme: Scheme,
        error: Option<(&str, &str)>,
        scopes: &[&str],
    ) -> String {
        let lead = match scheme {
            Scheme::Bearer => "Bearer ".to_owned(),
            Scheme::Dpop => format!("DPoP algs=\"{}\", ", dpop::algorithm_names().join(" ")),
        };
        let mut value = format!(
            "{lead}resource_metadata=\"{}\", scope=\"{}\"",
            quoted(&self.metadata_url),
            quoted(&scopes.join(" "))
        );
        if let Some((code, description)) = error {
            value.push_str(&format!(
                ", error=\"{}\", error_description=\"{}\"",
                quoted(code),
                quoted(description)
            ));
        }
        value
    }

    /// Check a bearer access token the server received itself (the gateway's approval
    /// page, from its own sign-in): what it grants, or why it is refused. A token bound to
    /// a key is refused (it comes with no proof); `--oauth-dpop required` is about the MCP
    /// requests' tokens, not these.
    pub async fn check(&self, token: &str) -> Result<Grant, Refusal> {
        let claims = self.verify(token, Jwt::AccessToken, &self.resource).await?;
        if claims["cnf"]["jkt"].is_string() {
            return Err(Refusal::Proof(dpop::ProofRefusal::Missing));
        }
        self.grant(&claims)
    }

    /// Check an access token as a request presents it: a token bound to a key (`cnf.jkt`)
    /// only with the DPoP scheme and a fresh proof of that key for this request, a token
    /// bound to none only as a bearer token (and not at all under `--oauth-dpop required`).
    pub async fn check_presented(&self, presented: Presented<'_>) -> Result<Grant, Refusal> {
        let claims = self.claims_of(presented.token).await?;
        let jkt = claims["cnf"]["jkt"].as_str();
        match (presented.scheme, jkt) {
            (Scheme::Bearer, Some(_)) => return Err(Refusal::Proof(dpop::ProofRefusal::Missing)),
            (Scheme::Bearer, None) if self.dpop == DpopPolicy::Required => {
                return Err(Refusal::BearerRefused);
            }
            (Scheme::Bearer, None) => {}
            (Scheme::Dpop, None) => return Err(Refusal::NotBound),
            (Scheme::Dpop, Some(jkt)) => {
                let proof = presented
                    .proof
                    .ok_or(Refusal::Proof(dpop::ProofRefusal::Missing))?;
                self.proofs
                    .check(
                        proof,
                        presented.method,
                        &self.resource,
                        presented.token,
                        jkt,
                        jsonwebtoken::get_current_timestamp(),
                    )
                    .map_err(Refusal::Proof)?;
            }
        }
        self.grant(&claims)
    }

    /// The claims of an access token: a JWT checked offline, and with introspection asked
    /// for, still active at the issuer; an opaque token only through introspection, its
    /// answer for this resource from this issuer and unexpired.
    async fn claims_of(&self, token: &str) -> Result<Value, Refusal> {
        let jwt = token.split('.').count() == 3;
        let Some(introspection) = &self.introspection else {
            return self.verify(token, Jwt::AccessToken, &self.resource).await;
        };
        if token.len() > MAX_TOKEN_BYTES {
            return Err(Refusal::Malformed);
        }
        let offline = match jwt {
            true => Some(self.verify(token, Jwt::AccessToken, &self.resource).await?),
            false => None,
        };
        let answer = introspection
            .claims(token)
            .await
            .map_err(|_| Refusal::Unanswered)?
            .ok_or(Refusal::Revoked)?;
        if let Some(claims) = offline {
            return Ok(claims);
        }
        let audience_ok = match &answer["aud"] {
            Value::String(a) => a.trim_end_matches('/') == self.resource,
            Value::Array(all) => all.iter().any(|a| {
                a.as_str()
                    .is_some_and(|a| a.trim_end_matches('/') == self.resource)
            }),
            _ => false,
        };
        if !audience_ok {
            return Err(Refusal::Audience);
        }
        if answer["iss"].as_str().is_some_and(|i| i != self.issuer) {
            return Err(Refusal::Issuer);
        }
        let now = jsonwebtoken::get_current_timestamp();
        if answer["exp"]
            .as_u64()
            .is_some_and(|exp| exp + CLOCK_LEEWAY.as_secs() < now)
        {
            return Err(Refusal::Expired);
        }
        Ok(answer)
    }

    /// The claims of a JWT of `kind` signed with one of the issuer's keys (an accepted
    /// algorithm), from the issuer, for `audience`, unexpired, with a subject.
    async fn verify(&self, token: &str, kind: Jwt, audience: &str) -> Result<Value, Refusal> {
        if token.len() > MAX_TOKEN_BYTES || token.split('.').count() != 3 {
            return Err(Refusal::Malformed);
        }
        let header = jsonwebtoken::decode_header(token).map_err(|_| Refusal::Malformed)?;
        // RFC 9068 §2.1: an access token says so, so an ID token cannot be used as one.
        let typ = header.typ.as_deref().unwrap_or("").to_ascii_lowercase();
        if kind == Jwt::AccessToken && typ != "at+jwt" && typ != "application/at+jwt" {
            return Err(Refusal::NotAnAccessToken);
        }
        if !ALGORITHMS.contains(&header.alg) {
            return Err(Refusal::Algorithm);
        }
        let jwk = self
            .keys
            .find(header.kid.as_deref())
            .await
            .ok_or(Refusal::UnknownKey)?;
        let key = DecodingKey::from_jwk(&jwk).map_err(|_| Refusal::UnknownKey)?;
        let mut validation = Validation::new(header.alg);
        validation.set_issuer(&[&self.issuer]);
        validation.set_audience(&[audience]);
        validation.set_required_spec_claims(&["exp", "iss", "aud", "sub"]);
        validation.leeway = CLOCK_LEEWAY.as_secs();
        validation.validate_nbf = true;
        let data = jsonwebtoken::decode::<Value>(token, &key, &validation).map_err(|e| match e
            .kind()
        {
            ErrorKind::ExpiredSignature => Refusal::Expired,
            ErrorKind::ImmatureSignature => Refusal::NotYetValid,
            ErrorKind::InvalidIssuer => Refusal::Issuer,
            ErrorKind::InvalidAudience => Refusal::Audience,
            ErrorKind::InvalidAlgorithm => Refusal::Algorithm,
            ErrorKind::MissingRequiredClaim(_) | ErrorKind::InvalidClaimFormat(_) => {
                Refusal::Claims
            }
            ErrorKind::InvalidSignature => Refusal::Signature,
            _ => Refusal::Malformed,
        })?;
        Ok(data.claims)
    }

    /// The caller and scopes of a verified token's claims.
    fn grant(&self, claims: &Value) -> Result<Grant, Refusal> {
        let text = |name: &str| {
            claims[name]
                .as_str()
                .map(str::trim)
                .filter(|v| !v.is_empty() && v.chars().count() <= MAX_CLAIM_CHARS)
                .filter(|v| !v.chars().any(char::is_control))
        };
        let user = text("sub").ok_or(Refusal::Claims)?.to_owned();
        let tenant = match text(&self.org_claim) {
            Some(org) => org.to_owned(),
            // No organization in the token: the user's only one, if there is exactly one.
            None => self
                .members
                .sole_organization(&user)
                .unwrap_or_default()
                .to_owned(),
        };
        let client = text("client_id").unwrap_or(DEFAULT_OAUTH_CLIENT).to_owned();
        let scopes = claims["scope"]
            .as_str()
            .unwrap_or("")
            .split_whitespace()
            .map(str::to_owned)
            .collect();
        Ok(Grant {
            caller: Caller {
                user,
                tenant,
                client,
            },
            scopes,
        })
    }
}
