//! The HTTP client of a server the host may sign in to: rmcp's `AuthClient` (the bearer
//! token on every request, refreshed ahead of expiry and once after a 401), and around
//! it what rmcp leaves to the host: a 401 that a refresh did not cure signs in and sends
//! the request again, once; a 403 `insufficient_scope` signs in for more scope and sends
//! it again, at most [`MAX_STEP_UPS`] times, then says why it stopped. The request a 401
//! or a 403 refused was not processed, so sending it again is safe.

use std::{collections::HashMap, sync::Arc};

use futures::stream::BoxStream;
use reqwest::header::{HeaderName, HeaderValue};
use rmcp::{
    model::ClientJsonRpcMessage,
    transport::{
        auth::AuthError,
        streamable_http_client::{
            StreamableHttpClient, StreamableHttpError, StreamableHttpPostResponse,
            StreamableHttpResponseLimits,
        },
    },
};
use sse_stream::{Error as SseError, Sse};

use super::{
    MAX_STEP_UPS, ServerAuth, SignInError,
    dpop::{DpopKey, asks_for_nonce},
};

/// Most redirects one MCP request follows (same origin, 307 and 308 only).
const MAX_REDIRECTS: usize = 10;
/// Most times one request is sent again with a new nonce its server asked for (RFC 9449
/// §9): a server that asks once more after that is not asked again.
pub const MAX_NONCE_ROUNDS: usize = 2;
/// How long the request that learns a server's nonce may take.
const NONCE_PROBE_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(30);

/// The reqwest client for a server's MCP requests: as rmcp's own (no idle pooling), and
/// following only same-origin 307 and 308 redirects, which keep the method, the body and
/// the bearer token on the origin it was issued for.
pub(super) fn mcp_http_client() -> reqwest::Client {
    let policy = reqwest::redirect::Policy::custom(|attempt| {
        let first = attempt.previous().first().cloned();
        let same_origin = first.is_some_and(|f| f.origin() == attempt.url().origin());
        let keeps_method = matches!(attempt.status().as_u16(), 307 | 308);
        if attempt.previous().len() > MAX_REDIRECTS || !same_origin || !keeps_method {
            attempt.stop()
        } else {
            attempt.follow()
        }
    });
    reqwest::Client::builder()
        .pool_max_idle_per_host(0)
        .redirect(policy)
        .build()
        .unwrap_or_default()
}

/// A JSON-RPC `ping` the host sends itself to the MCP endpoint `url` (request id `id`),
/// with no token, to read the server's answer to it: its challenge, or its nonce.
pub(super) fn ping(url: &str, id: &str, timeout: std::time::Duration) -> reqwest::RequestBuilder {
    mcp_http_client()
        .post(url)
        .timeout(timeout)
        .header(
            reqwest::header::ACCEPT,
            "application/json, text/event-stream",
        )
        .header(reqwest::header::CONTENT_TYPE, "application/json")
        .body(serde_json::json!({"jsonrpc": "2.0", "id": id, "method": "ping"}).to_string())
}

/// A server's HTTP client with sign-in.
#[derive(Clone)]
pub struct HostHttp {
    auth: Arc<ServerAuth>,
}

type HttpError = StreamableHttpError<reqwest::Error>;

/// A sign-in failure as the transport reports it: rmcp's "authorization failed", carrying
/// the host's words (`connect::http` reads them back out).
fn sign_in_failed(e: SignInError) -> HttpError {
    HttpError::Auth(AuthError::AuthorizationFailed(e.to_string()))
}

impl HostHttp {
    /// The client of the server `auth` signs in to.
    pub fn new(auth: Arc<ServerAuth>) -> Self {
        HostHttp { auth }
    }

    /// Send with `send`, and after a 401 or a 403 `insufficient_scope` sign in and send again,
    /// within the bounds.
    async fn with_sign_in<T, F, Fut>(&self, send: F) -> Result<T, HttpError>
    where
        F: Fn() -> Fut,
        Fut: Future<Output = Result<T, HttpError>>,
    {
        let auth = &self.auth;
        let mut retries = Retries::default();
        loop {
            let seen = auth.generation();
            match send().await {
                Err(StreamableHttpError::AuthRequired(challenge)) => {
                    retries.after_unauthorized().map_err(sign_in_failed)?;
                    auth.unauthorized(seen, &challenge.www_authenticate_header)
                        .await
                        .map_err(sign_in_failed)?;
                }
                Err(StreamableHttpError::InsufficientScope(challenge)) => {
                    retries
                        .after_insufficient_scope(challenge.required_scope.as_deref())
                        .map_err(sign_in_failed)?;
                    auth.insufficient_scope(seen, &challenge.www_authenticate_header)
                        .await
                        .map_err(sign_in_failed)?;
                }
                Err(StreamableHttpError::Auth(e)) => return Err(refresh_failed(e)),
                other => return other,
            }
        }
    }
}

/// A DPoP sign-in's requests: the token as `Authorization: DPoP`, a fresh proof on each,
/// and a nonce the server asks for learnt and sent (RFC 9449 §7, §9). rmcp's HTTP client
/// reports a 401's challenge but not its `DPoP-Nonce` header, so the nonce is learnt by a
/// `ping` of the host's own, refused for the same want, whose answer carries it.
impl HostHttp {
    /// `custom` with the token and a fresh proof naming `method`, `uri` and the token;
    /// without a token (before a sign-in) only the proof, and the server's 401 follows.
    async fn with_proof(
        &self,
        key: &DpopKey,
        method: &str,
        uri: &str,
        custom: &HashMap<HeaderName, HeaderValue>,
    ) -> Result<HashMap<HeaderName, HeaderValue>, HttpError> {
        let token = match self.auth.client().get_access_token().await {
            Ok(token) => Some(token),
            Err(AuthError::AuthorizationRequired) => None,
            Err(e) => return Err(refresh_failed(e)),
        };
        let proof = key
            .proof(method, uri, token.as_deref())
            .map_err(|e| sign_in_failed(SignInError::Failed(e)))?;
        let value = |text: &str| {
            HeaderValue::from_str(text).map_err(|_| {
                sign_in_failed(SignInError::Failed("a token that cannot be sent".into()))
            })
        };
        let mut headers = custom.clone();
        headers.insert(HeaderName::from_static("dpop"), value(&proof)?);
        if let Some(token) = token {
            let mut authorization = value(&format!("DPoP {token}"))?;
            authorization.set_sensitive(true);
            headers.insert(reqwest::header::AUTHORIZATION, authorization);
        }
        Ok(headers)
    }

    /// Send with `send` and the headers of a DPoP request; when the server asks for a
    /// nonce, learn it and send again, at most [`MAX_NONCE_ROUNDS`] times.
    async fn with_dpop<T, F, Fut>(
        &self,
        key: &DpopKey,
        method: &str,
        uri: &str,
        session_id: Option<&str>,
        custom: &HashMap<HeaderName, HeaderValue>,
        send: F,
    ) -> Result<T, HttpError>
    where
        F: Fn(HashMap<HeaderName, HeaderValue>) -> Fut,
        Fut: Future<Output = Result<T, HttpError>>,
    {
        let mut rounds = 0;
        loop {
            let headers = self.with_proof(key, method, uri, custom).await?;
            match send(headers).await {
                Err(StreamableHttpError::AuthRequired(c))
                    if asks_for_nonce(&c.www_authenticate_header) && rounds < MAX_NONCE_ROUNDS =>
                {
                    rounds += 1;
                    self.learn_nonce(key, uri, session_id, custom).await?;
                }
                other => return other,
            }
        }
    }

    /// Learn the nonce the server at `uri` wants, from its answer to a `ping` with a
    /// fresh proof.
    async fn learn_nonce(
        &self,
        key: &DpopKey,
        uri: &str,
        session_id: Option<&str>,
        custom: &HashMap<HeaderName, HeaderValue>,
    ) -> Result<(), HttpError> {
        let headers = self.with_proof(key, "POST", uri, custom).await?;
        let mut probe = ping(uri, "gatehouse-dpop-nonce", NONCE_PROBE_TIMEOUT);
        for (name, value) in headers {
            probe = probe.header(name, value);
        }
        if let Some(id) = session_id {
            probe = probe.header("Mcp-Session-Id", id);
        }
        let answer = probe.send().await?;
        let nonce = answer
            .headers()
            .get("DPoP-Nonce")
            .and_then(|v| v.to_str().ok());
        match nonce {
            Some(nonce) if key.set_nonce(uri, nonce) => Ok(()),
            _ => Err(sign_in_failed(SignInError::Failed(
                "it asks for a DPoP nonce but gives none that can be used".into(),
            ))),
        }
    }
}

/// What one request has done about refusals so far: one sign-in after a 401, at most
/// [`MAX_STEP_UPS`] after a 403 `insufficient_scope`.
#[derive(Debug, Default)]
struct Retries {
    signed_in: bool,
    stepped_up: usize,
}

impl Retries {
    /// A 401: sign in, unless this request did so already.
    fn after_unauthorized(&mut self) -> Result<(), SignInError> {
        if self.signed_in {
            return Err(SignInError::Failed(
                "it refused the new sign-in too (401): check that the account may use this server"
                    .into(),
            ));
        }
        self.signed_in = true;
        Ok(())
    }

    /// A 403 asking for `required`: step up, unless this request has done so
    /// [`MAX_STEP_UPS`] times.
    fn after_insufficient_scope(&mut self, required: Option<&str>) -> Result<(), SignInError> {
        if self.stepped_up == MAX_STEP_UPS {
            return Err(SignInError::Failed(format!(
                "it still wants more scope ({}) after {MAX_STEP_UPS} sign-ins for more: stopped asking",
                required.unwrap_or("none named")
            )));
        }
        self.stepped_up += 1;
        Ok(())
    }
}

/// A failure of rmcp's token handling in words: a refresh that failed for a reason other
/// than the refresh token's refusal keeps what is stored, and says so.
fn refresh_failed(e: AuthError) -> HttpError {
    let words = match &e {
        AuthError::TokenRefreshFailed(why) => format!(
            "the sign-in could not be refreshed ({}); it is kept, try again later",
            crate::text::clip(&crate::text::visible_line(why), 300)
        ),
        other => super::flow::explain(other),
    };
    HttpError::Auth(AuthError::AuthorizationFailed(words))
}

impl StreamableHttpClient for HostHttp {
    type Error = reqwest::Error;

    // rmcp's transport sends through the widest forms only (response limits, SSE event
    // size); the narrow ones it requires send as those with rmcp's default limits, and the
    // defaults of the others lead here, so a request is signed in for in one place.
    async fn post_message(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<StreamableHttpPostResponse, HttpError> {
        let limits = StreamableHttpResponseLimits::default();
        self.post_message_with_response_limits(
            uri,
            message,
            session_id,
            auth_header,
            custom_headers,
            limits,
        )
        .await
    }

    async fn post_message_with_response_limits(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        limits: StreamableHttpResponseLimits,
    ) -> Result<StreamableHttpPostResponse, HttpError> {
        self.with_sign_in(|| async {
            let Some(key) = self.auth.dpop() else {
                return self
                    .auth
                    .client()
                    .post_message_with_response_limits(
                        uri.clone(),
                        message.clone(),
                        session_id.clone(),
                        auth_header.clone(),
                        custom_headers.clone(),
                        limits,
                    )
                    .await;
            };
            let session = session_id.as_deref();
            self.with_dpop(&key, "POST", &uri, session, &custom_headers, |headers| {
                self.auth
                    .client()
                    .http_client
                    .post_message_with_response_limits(
                        uri.clone(),
                        message.clone(),
                        session_id.clone(),
                        None,
                        headers,
                        limits,
                    )
            })
            .await
        })
        .await
    }

    async fn delete_session(
        &self,
        uri: Arc<str>,
        session_id: Arc<str>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<(), HttpError> {
        // Ending a session never starts a sign-in: a refusal just ends it.
        let Some(key) = self.auth.dpop() else {
            return self
                .auth
                .client()
                .delete_session(uri, session_id, auth_header, custom_headers)
                .await;
        };
        let headers = self
            .with_proof(&key, "DELETE", &uri, &custom_headers)
            .await?;
        self.auth
            .client()
            .http_client
            .delete_session(uri, session_id, None, headers)
            .await
    }

    async fn get_stream(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<BoxStream<'static, Result<Sse, SseError>>, HttpError> {
        let max_sse_event_size = StreamableHttpResponseLimits::default().max_sse_event_size;
        self.get_stream_with_max_sse_event_size(
            uri,
            session_id,
            last_event_id,
            auth_header,
            custom_headers,
            max_sse_event_size,
        )
        .await
    }

    async fn get_stream_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> Result<BoxStream<'static, Result<Sse, SseError>>, HttpError> {
        self.with_sign_in(|| async {
            let Some(key) = self.auth.dpop() else {
                return self
                    .auth
                    .client()
                    .get_stream_with_max_sse_event_size(
                        uri.clone(),
                        session_id.clone(),
                        last_event_id.clone(),
                        auth_header.clone(),
                        custom_headers.clone(),
                        max_sse_event_size,
                    )
                    .await;
            };
            let session = session_id.as_deref();
            self.with_dpop(&key, "GET", &uri, session, &custom_headers, |headers| {
                self.auth
                    .client()
                    .http_client
                    .get_stream_with_max_sse_event_size(
                        uri.clone(),
                        session_id.clone(),
                        last_event_id.clone(),
                        None,
                        headers,
                        max_sse_event_size,
                    )
            })
            .await
        })
        .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_request_signs_in_once_and_steps_up_at_most_max_step_ups_times() {
        let mut r = Retries::default();
        r.after_unauthorized().unwrap();
        let again = r.after_unauthorized().unwrap_err().to_string();
        assert!(again.contains("refused the new sign-in too"), "{again}");
        for _ in 0..MAX_STEP_UPS {
            r.after_insufficient_scope(Some("mcp:write")).unwrap();
        }
        let stop = r.after_insufficient_scope(Some("mcp:admin")).unwrap_err();
        assert_eq!(
            stop.to_string(),
            format!(
                "it still wants more scope (mcp:admin) after {MAX_STEP_UPS} sign-ins for more: stopped asking"
            )
        );
        assert!(Retries::default().after_insufficient_scope(None).is_ok());
    }
}
