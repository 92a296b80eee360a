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

use super::{MAX_STEP_UPS, ServerAuth, SignInError};

/// Most redirects one MCP request follows (same origin, 307 and 308 only).
const MAX_REDIRECTS: usize = 10;

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
        self.with_sign_in(|| {
            self.auth.client().post_message_with_response_limits(
                uri.clone(),
                message.clone(),
                session_id.clone(),
                auth_header.clone(),
                custom_headers.clone(),
                limits,
            )
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
        self.auth
            .client()
            .delete_session(uri, session_id, auth_header, custom_headers)
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
        self.with_sign_in(|| {
            self.auth.client().get_stream_with_max_sse_event_size(
                uri.clone(),
                session_id.clone(),
                last_event_id.clone(),
                auth_header.clone(),
                custom_headers.clone(),
                max_sse_event_size,
            )
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
