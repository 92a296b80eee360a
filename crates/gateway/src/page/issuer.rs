//! The approval page's client at the OAuth authorization server (`--approval-page` with
//! `--oauth-issuer`): the issuer's metadata checked as the host checks it (its `issuer`
//! exactly the configured one, PKCE with S256 offered, the endpoints http(s) URLs), the
//! authorization request (a code, PKCE S256, `state`, the gateway's own `resource`
//! (RFC 8707), and `openid` with a `nonce` where the issuer is an OpenID provider), the
//! answer read with the host's own reading of a redirect (`state`, `iss` per RFC 9207,
//! the error), and the code exchanged at the token endpoint as the page's registered
//! client: confidential (Basic, or in the body where that is all the issuer takes) or
//! public. The tokens are handed back once, never kept, shown or logged ([`Secret`]).
//!
//! A pre-registered client rather than a Client ID Metadata Document or a registration
//! per start: the page's redirect URI is fixed where the gateway is deployed, so an
//! administrator registers it once (and replicas share it), a confidential client's code
//! is worth nothing without its secret, and a metadata document would have to be served
//! over https where the issuer can fetch it, which few issuers support yet.

use std::time::Duration;

use base64::Engine;
use serde_json::Value;
use sha2::{Digest, Sha256};

use gatehouse::connect::auth::redirect::{self, Callback, CallbackError};
use gatehouse::text::{clip, visible_line};

/// How long the token endpoint has to answer the code's exchange.
pub const EXCHANGE_TIMEOUT: Duration = Duration::from_secs(10);
/// The largest token response read.
pub const MAX_TOKEN_ANSWER_BYTES: usize = 64 * 1024;
/// Most characters of an authorization server's error words kept.
const MAX_ERROR_CHARS: usize = 300;

/// A secret (a client secret, a token): its `Debug` shows nothing of it, and nothing
/// here prints it.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    /// Wrap a secret value.
    pub fn new(value: impl Into<String>) -> Secret {
        Secret(value.into())
    }

    /// The value, for the one place that sends or checks it.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Secret([hidden])")
    }
}

/// The page's client as registered at the issuer (`--approval-page-client-id`, and its
/// secret from the environment or a file, never the command line).
#[derive(Debug, Clone)]
pub struct PageClient {
    /// Its client id.
    pub id: String,
    /// Its secret: a confidential client; none, a public one (PKCE alone).
    pub secret: Option<Secret>,
}

/// What the code was exchanged for.
#[derive(Debug)]
pub struct Tokens {
    /// The access token, for the gateway's resource.
    pub access_token: Secret,
    /// The ID token, when `openid` was asked for.
    pub id_token: Option<Secret>,
}

/// The page's client at one issuer, its metadata checked.
#[derive(Debug)]
pub struct Issuer {
    issuer: String,
    authorization_endpoint: reqwest::Url,
    token_endpoint: reqwest::Url,
    /// The issuer says it sends `iss` with every answer (RFC 9207): one without is refused.
    iss_required: bool,
    /// An OpenID provider: `openid` and a `nonce` are asked for, and an ID token expected.
    openid: bool,
    /// The secret goes in the body (`client_secret_post`), not Basic.
    secret_in_body: bool,
    client: PageClient,
    redirect_uri: String,
    resource: String,
    scopes: Vec<String>,
    http: reqwest::Client,
}

/// Whether `metadata`'s list `key` names `value`.
fn lists(metadata: &Value, key: &str, value: &str) -> bool {
    metadata[key]
        .as_array()
        .is_some_and(|a| a.iter().any(|v| v.as_str() == Some(value)))
}

impl Issuer {
    /// The page's client at `issuer`, whose metadata (found and its `issuer` checked by
    /// the resource server's discovery) is `metadata`; the browser comes back to
    /// `redirect_uri`, and the tokens are asked for `resource` with `scopes`.
    pub fn new(
        client: PageClient,
        issuer: &str,
        metadata: &Value,
        redirect_uri: &str,
        (resource, scopes): (&str, &[&str]),
    ) -> Result<Issuer, String> {
        let shown = visible_line(issuer).into_owned();
        let bad = |why: String| format!("the approval page cannot sign in at {shown}: {why}");
        if metadata["issuer"].as_str() != Some(issuer) {
            return Err(bad("its metadata names another issuer".into()));
        }
        let endpoint = |key: &str| {
            let text = metadata[key]
                .as_str()
                .ok_or_else(|| bad(format!("its metadata has no {key}")))?;
            reqwest::Url::parse(text)
                .ok()
                .filter(|u| matches!(u.scheme(), "http" | "https"))
                .ok_or_else(|| bad(format!("its {key} is not an http(s) URL")))
        };
        let authorization_endpoint = endpoint("authorization_endpoint")?;
        let token_endpoint = endpoint("token_endpoint")?;
        if !lists(metadata, "code_challenge_methods_supported", "S256") {
            return Err(bad(
                "it does not advertise PKCE with S256 (code_challenge_methods_supported)".into(),
            ));
        }
        if metadata["response_types_supported"].is_array()
            && !lists(metadata, "response_types_supported", "code")
        {
            return Err(bad(
                "it offers no authorization code (response_types_supported)".into(),
            ));
        }
        let methods = "token_endpoint_auth_methods_supported";
        let listed = |m| !metadata[methods].is_array() || lists(metadata, methods, m);
        let secret_in_body = lists(metadata, methods, "client_secret_post")
            && !lists(metadata, methods, "client_secret_basic");
        match &client.secret {
            Some(_) if !listed("client_secret_basic") && !secret_in_body => {
                return Err(bad(format!(
                    "it takes a client secret neither with Basic nor in the body ({methods})"
                )));
            }
            None if !listed("none") => {
                return Err(bad(format!(
                    "it takes no public clients ({methods}): give the page's client secret"
                )));
            }
            _ => {}
        }
        let http = reqwest::Client::builder()
            .timeout(EXCHANGE_TIMEOUT)
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|e| bad(format!("cannot build an HTTP client: {e}")))?;
        Ok(Issuer {
            issuer: issuer.to_owned(),
            authorization_endpoint,
            token_endpoint,
            iss_required: metadata["authorization_response_iss_parameter_supported"] == true,
            openid: lists(metadata, "scopes_supported", "openid"),
            secret_in_body,
            client,
            redirect_uri: redirect_uri.to_owned(),
            resource: resource.to_owned(),
            scopes: scopes.iter().map(|s| (*s).to_owned()).collect(),
            http,
        })
    }

    /// The issuer.
    pub fn issuer(&self) -> &str {
        &self.issuer
    }

    /// The page's client id (an ID token's audience).
    pub fn client_id(&self) -> &str {
        &self.client.id
    }

    /// Where the browser comes back to.
    pub fn redirect_uri(&self) -> &str {
        &self.redirect_uri
    }

    /// Whether an ID token is asked for (the issuer is an OpenID provider).
    pub fn openid(&self) -> bool {
        self.openid
    }

    /// The address that begins a sign-in with `state`, the PKCE `verifier`'s challenge,
    /// and (with `openid`) `nonce`.
    pub(super) fn authorization_url(&self, state: &str, verifier: &str, nonce: &str) -> String {
        let challenge = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .encode(Sha256::digest(verifier.as_bytes()));
        let mut scopes = self.scopes.clone();
        if self.openid {
            scopes.insert(0, "openid".into());
        }
        let mut url = self.authorization_endpoint.clone();
        {
            let mut q = url.query_pairs_mut();
            q.append_pair("response_type", "code")
                .append_pair("client_id", &self.client.id)
                .append_pair("redirect_uri", &self.redirect_uri)
                .append_pair("scope", &scopes.join(" "))
                .append_pair("state", state)
                .append_pair("code_challenge", &challenge)
                .append_pair("code_challenge_method", "S256")
                .append_pair("resource", &self.resource);
            if self.openid {
                q.append_pair("nonce", nonce);
            }
        }
        url.into()
    }

    /// The answer the browser brought back (`query`, the callback's), read for the
    /// sign-in with `state`: its `state` and `iss` checked before its error is read.
    pub(super) fn read(&self, query: &str, state: &str) -> Result<Callback, CallbackError> {
        let came_back = format!("{}?{query}", self.redirect_uri);
        redirect::read(&came_back, state, &self.issuer, self.iss_required)
    }

    /// Exchange `code` (with its PKCE `verifier`) for tokens.
    pub(super) async fn exchange(&self, code: &str, verifier: &str) -> Result<Tokens, String> {
        let (body, basic) = self.exchange_form(code, verifier);
        let mut request = self
            .http
            .post(self.token_endpoint.clone())
            .header("content-type", "application/x-www-form-urlencoded")
            .header("accept", "application/json")
            .body(body);
        if let Some(secret) = basic {
            // RFC 6749 §2.3.1: the id and the secret form-encoded, then Basic.
            let enc = |s: &str| form_urlencoded::byte_serialize(s.as_bytes()).collect::<String>();
            request = request.basic_auth(enc(&self.client.id), Some(enc(secret.expose())));
        }
        let mut answer = request.send().await.map_err(|e| {
            format!(
                "the token endpoint did not answer: {}",
                words(&e.to_string())
            )
        })?;
        let status = answer.status();
        let mut body = Vec::new();
        while let Some(chunk) = answer.chunk().await.map_err(|e| {
            format!(
                "reading the token endpoint's answer: {}",
                words(&e.to_string())
            )
        })? {
            if body.len() + chunk.len() > MAX_TOKEN_ANSWER_BYTES {
                return Err(format!(
                    "the token endpoint's answer is larger than {MAX_TOKEN_ANSWER_BYTES} bytes"
                ));
            }
            body.extend_from_slice(&chunk);
        }
        let json: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
        if !status.is_success() {
            let error = json["error"].as_str().unwrap_or("no error code");
            let detail = json["error_description"].as_str().unwrap_or("");
            return Err(format!(
                "the token endpoint answered {}: {}",
                status.as_u16(),
                words(&format!("{error} {detail}"))
            ));
        }
        self.tokens_of(&json)
    }

    /// The exchange's form body, and the secret when it goes in Basic. (The serializer is
    /// not `Send`: it is done with before anything is awaited.)
    fn exchange_form(&self, code: &str, verifier: &str) -> (String, Option<&Secret>) {
        let mut form = form_urlencoded::Serializer::new(String::new());
        form.append_pair("grant_type", "authorization_code")
            .append_pair("code", code)
            .append_pair("redirect_uri", &self.redirect_uri)
            .append_pair("code_verifier", verifier)
            .append_pair("resource", &self.resource);
        let basic = match &self.client.secret {
            Some(secret) if !self.secret_in_body => Some(secret),
            secret => {
                form.append_pair("client_id", &self.client.id);
                if let Some(secret) = secret {
                    form.append_pair("client_secret", secret.expose());
                }
                None
            }
        };
        (form.finish(), basic)
    }

    /// The tokens of a successful token response: a bearer access token, and the ID
    /// token when `openid` was asked for.
    fn tokens_of(&self, json: &Value) -> Result<Tokens, String> {
        let token_type = json["token_type"].as_str().unwrap_or("");
        if !token_type.eq_ignore_ascii_case("bearer") {
            return Err(format!(
                "the token endpoint gave a {:?} token, not a bearer token",
                words(token_type)
            ));
        }
        let text = |key: &str| json[key].as_str().filter(|t| !t.is_empty());
        let access_token =
            text("access_token").ok_or("the token endpoint's answer has no access_token")?;
        let id_token = match (self.openid, text("id_token")) {
            (true, None) => return Err("the token endpoint's answer has no id_token".into()),
            (true, Some(id)) => Some(Secret::new(id)),
            (false, _) => None,
        };
        Ok(Tokens {
            access_token: Secret::new(access_token),
            id_token,
        })
    }
}

/// A peer's words, visible and short.
fn words(text: &str) -> String {
    clip(&visible_line(text.trim()), MAX_ERROR_CHARS).into_owned()
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use serde_json::json;

    const ISS: &str = "https://as.example";

    fn metadata() -> Value {
        metadata_of(ISS)
    }

    /// The metadata of an OpenID provider at `iss` that takes confidential and public
    /// clients and sends `iss` with its answers.
    pub(in crate::page) fn metadata_of(iss: &str) -> Value {
        json!({
            "issuer": iss,
            "authorization_endpoint": format!("{iss}/auth?tenant=t1"),
            "token_endpoint": format!("{iss}/token"),
            "code_challenge_methods_supported": ["S256"],
            "response_types_supported": ["code"],
            "token_endpoint_auth_methods_supported": ["client_secret_basic", "none"],
            "authorization_response_iss_parameter_supported": true,
            "scopes_supported": ["openid", "mcp:read", "mcp:write"],
        })
    }

    fn client(secret: Option<&str>) -> PageClient {
        PageClient {
            id: "gw-page".into(),
            secret: secret.map(Secret::new),
        }
    }

    fn issuer(secret: Option<&str>, metadata: &Value) -> Result<Issuer, String> {
        let target = ("https://gw.example/mcp", &["mcp:read", "mcp:write"][..]);
        Issuer::new(
            client(secret),
            ISS,
            metadata,
            "https://gw.example/approve/callback",
            target,
        )
    }

    #[test]
    fn the_metadata_is_checked_as_the_host_checks_it() {
        assert!(issuer(Some("s"), &metadata()).is_ok());
        let without = |key: &str| {
            let mut m = metadata();
            m.as_object_mut().unwrap().remove(key);
            m
        };
        let said = |m: Value| issuer(Some("s"), &m).unwrap_err();
        assert!(said(without("code_challenge_methods_supported")).contains("S256"));
        assert!(said(without("token_endpoint")).contains("no token_endpoint"));
        let mut other = metadata();
        other["issuer"] = json!("https://as.example/");
        assert!(said(other).contains("another issuer"));
        let mut plain = metadata();
        plain["code_challenge_methods_supported"] = json!(["plain"]);
        assert!(said(plain).contains("S256"));
        let mut ftp = metadata();
        ftp["authorization_endpoint"] = json!("ftp://as.example/auth");
        assert!(said(ftp).contains("not an http(s) URL"));
        // A public client needs an issuer that takes them; a confidential one, a way to
        // send its secret.
        let mut confidential_only = metadata();
        confidential_only["token_endpoint_auth_methods_supported"] = json!(["client_secret_basic"]);
        let err = issuer(None, &confidential_only).unwrap_err();
        assert!(err.contains("no public clients"), "{err}");
        let mut jwt_only = metadata();
        jwt_only["token_endpoint_auth_methods_supported"] = json!(["private_key_jwt"]);
        assert!(said(jwt_only).contains("neither with Basic nor in the body"));
    }

    #[test]
    fn the_authorization_url_asks_for_a_code_with_s256_state_resource_and_nonce() {
        let i = issuer(Some("s"), &metadata()).unwrap();
        let url = reqwest::Url::parse(&i.authorization_url("st", "ver", "no")).unwrap();
        let q: std::collections::HashMap<_, _> = url.query_pairs().into_owned().collect();
        assert_eq!(q["tenant"], "t1", "the endpoint's own query is kept");
        assert_eq!(q["response_type"], "code");
        assert_eq!(q["client_id"], "gw-page");
        assert_eq!(q["redirect_uri"], "https://gw.example/approve/callback");
        assert_eq!(q["scope"], "openid mcp:read mcp:write");
        assert_eq!(q["state"], "st");
        assert_eq!(q["nonce"], "no");
        assert_eq!(q["resource"], "https://gw.example/mcp");
        assert_eq!(q["code_challenge_method"], "S256");
        // RFC 7636 Appendix B's example verifier and its challenge.
        let rfc = i.authorization_url("s", "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk", "n");
        assert!(rfc.contains("code_challenge=E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"));
        // Not an OpenID provider: no openid, no nonce.
        let mut oauth_only = metadata();
        oauth_only["scopes_supported"] = json!(["mcp:read", "mcp:write"]);
        let plain = issuer(Some("s"), &oauth_only).unwrap();
        let url = plain.authorization_url("st", "ver", "no");
        assert!(!url.contains("nonce") && !url.contains("openid"), "{url}");
    }

    #[test]
    fn the_answer_is_read_for_this_state_and_issuer() {
        let i = issuer(Some("s"), &metadata()).unwrap();
        let iss = "iss=https%3A%2F%2Fas.example";
        assert!(matches!(
            i.read(&format!("code=c&state=st&{iss}"), "st"),
            Ok(Callback::Code { .. })
        ));
        assert_eq!(
            i.read("code=c&state=st", "st"),
            Err(CallbackError::MissingIssuer(ISS.into())),
            "the issuer says it always sends iss"
        );
        assert_eq!(
            i.read("code=c&state=st&iss=https%3A%2F%2Fevil.example", "st"),
            Err(CallbackError::WrongIssuer(ISS.into()))
        );
        assert!(matches!(
            i.read(&format!("error=access_denied&state=st&{iss}"), "st"),
            Ok(Callback::Refused(w)) if w == "access_denied"
        ));
    }

    #[test]
    fn the_secret_goes_in_basic_or_the_body_and_a_public_client_sends_its_id() {
        let i = issuer(Some("p&ss"), &metadata()).unwrap();
        let (body, basic) = i.exchange_form("c", "v");
        assert_eq!(basic.map(Secret::expose), Some("p&ss"));
        assert!(
            !body.contains("client_secret") && !body.contains("client_id"),
            "{body}"
        );
        assert!(body.contains("code_verifier=v") && body.contains("grant_type=authorization_code"));
        assert!(
            body.contains("resource=https%3A%2F%2Fgw.example%2Fmcp"),
            "{body}"
        );
        let mut post_only = metadata();
        post_only["token_endpoint_auth_methods_supported"] = json!(["client_secret_post"]);
        let posting = issuer(Some("p&ss"), &post_only).unwrap();
        let (body, basic) = posting.exchange_form("c", "v");
        assert!(basic.is_none());
        assert!(
            body.contains("client_id=gw-page&client_secret=p%26ss"),
            "{body}"
        );
        let public = issuer(None, &metadata()).unwrap();
        let (body, basic) = public.exchange_form("c", "v");
        assert!(
            basic.is_none() && body.contains("client_id=gw-page"),
            "{body}"
        );
        assert!(!body.contains("client_secret"), "{body}");
        assert_eq!(format!("{:?}", Secret::new("tok")), "Secret([hidden])");
    }

    #[test]
    fn a_token_response_gives_a_bearer_token_and_the_id_token_asked_for() {
        let i = issuer(Some("s"), &metadata()).unwrap();
        let answer =
            json!({"access_token": "at-value", "token_type": "Bearer", "id_token": "it-value"});
        let tokens = i.tokens_of(&answer).unwrap();
        assert_eq!(tokens.access_token.expose(), "at-value");
        assert_eq!(
            tokens.id_token.as_ref().map(Secret::expose),
            Some("it-value")
        );
        let shown = format!("{tokens:?}");
        assert!(
            !shown.contains("at-value") && !shown.contains("it-value"),
            "{shown}"
        );
        for (answer, says) in [
            (
                json!({"access_token": "a", "token_type": "mac", "id_token": "i"}),
                "not a bearer",
            ),
            (
                json!({"token_type": "bearer", "id_token": "i"}),
                "no access_token",
            ),
            (
                json!({"access_token": "a", "token_type": "bearer"}),
                "no id_token",
            ),
        ] {
            let err = i.tokens_of(&answer).unwrap_err();
            assert!(err.contains(says), "{err}");
        }
    }
}
