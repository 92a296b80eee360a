//! The approval page's HTTP side, served beside the gateway's MCP endpoint
//! (`--approval-page URL`): the sign-in with a bearer token (POSTed, never in a URL) or,
//! under `--oauth-issuer`, through the authorization server (`page/oauth.rs`), a session
//! cookie (HttpOnly, SameSite=Strict, a random id kept server-side as its digest), the
//! call shown to the caller it is for, and Approve / Deny with the session's CSRF token.
//! Every string of the call is escaped, and the page runs no script at all (its
//! Content-Security-Policy allows none), so hostile text stays text. The state
//! (confirmations, decisions, sessions, sign-ins in flight) is the library's
//! [`crate::Page`], in the store the replicas share.

mod oauth;

pub use oauth::OAuthPages;

use std::{sync::Arc, time::Duration};

use crate::{
    Page,
    page::{self, APPROVE_PATH, Decided, Decision, Session, ShownCall},
    store::StoreError,
};
use axum::{
    Router,
    body::Bytes,
    extract::{DefaultBodyLimit, Path, Request, State},
    http::{HeaderMap, HeaderValue, Method, StatusCode, header},
    middleware::{self, Next},
    response::{IntoResponse, Response},
    routing::{get, post},
};
use gatehouse::text;
use gatehouse_http::{Caller, tokens::Tokens};

/// The page's document, after the prologue every page of the host's shares
/// ([`gatehouse_http::HTML_HEAD`]).
const PAGE_HTML: &str = include_str!("../../assets/page/page.html");
const SIGN_IN_HTML: &str = include_str!("../../assets/page/sign_in.html");
const SIGN_IN_TOKEN_HTML: &str = include_str!("../../assets/page/sign_in_token.html");
const SIGN_IN_OAUTH_HTML: &str = include_str!("../../assets/page/sign_in_oauth.html");
const CALL_HTML: &str = include_str!("../../assets/page/call.html");
const MESSAGE_HTML: &str = include_str!("../../assets/page/message.html");

/// The session cookie's name.
const COOKIE: &str = "gatehouse_approval";
/// The largest form body the page reads (a token, or a CSRF token and a decision).
pub const MAX_FORM_BYTES: usize = 8 * 1024;
/// Most characters of the arguments (and annotations) shown; the rest is cut, and said.
pub const MAX_SHOWN_CHARS: usize = 100_000;
/// The page's policy for the browser: no script, no frames, forms only to itself.
const CSP: &str = "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; \
                   frame-ancestors 'none'; base-uri 'none'";

/// What the routes share.
struct Pages {
    page: Page,
    /// The tokens file's tokens, a way in (`--tokens`).
    tokens: Option<Arc<Tokens>>,
    /// The authorization server, a way in (`--oauth-issuer`).
    oauth: Option<OAuthPages>,
    /// The cookie's `Path`: the base URL's path and [`APPROVE_PATH`].
    cookie_path: String,
    /// The base URL's origin: a POST that names another is refused.
    origin: String,
}

/// The page's routes, for the gateway's HTTP listener: signing in with `tokens`, through
/// `oauth`, or both.
pub fn routes(page: Page, tokens: Option<Arc<Tokens>>, oauth: Option<OAuthPages>) -> Router {
    let base = page.settings().base().to_owned();
    let base_path = base_path_of(&base);
    let (by_token, by_oauth) = (tokens.is_some(), oauth.is_some());
    let state = Arc::new(Pages {
        page,
        tokens,
        oauth,
        cookie_path: format!("{base_path}{APPROVE_PATH}"),
        origin: base[..base.len() - base_path.len()].to_owned(),
    });
    let mut router = Router::new().route(&format!("{APPROVE_PATH}/{{id}}"), get(show).post(decide));
    if by_token {
        router = router.route(&format!("{APPROVE_PATH}/{{id}}/sign-in"), post(sign_in));
    }
    if by_oauth {
        router = oauth::routes(router);
    }
    router
        .layer(DefaultBodyLimit::max(MAX_FORM_BYTES))
        .layer(middleware::from_fn_with_state(state.clone(), same_origin))
        .with_state(state)
}

/// Every POST (the sign-in, a decision) passes here first: one from a page of another
/// origin is refused before its handler runs.
async fn same_origin(State(pages): State<Arc<Pages>>, request: Request, next: Next) -> Response {
    if request.method() == Method::POST
        && let Some(refused) = pages.foreign(request.headers())
    {
        return refused;
    }
    next.run(request).await
}

/// The path part of the base URL (checked when read), without a trailing `/`.
fn base_path_of(base: &str) -> String {
    let after_scheme = base.split_once("://").map_or(base, |(_, rest)| rest);
    match after_scheme.find('/') {
        Some(i) => after_scheme[i..].trim_end_matches('/').to_owned(),
        None => String::new(),
    }
}

/// GET: the call, to the caller it is for; the sign-in form to anyone not signed in.
async fn show(
    State(pages): State<Arc<Pages>>,
    Path(id): Path<String>,
    headers: HeaderMap,
) -> Response {
    let session = match pages.session(&headers).await {
        Ok(Some(session)) => session,
        // Only the authorization server's way in: off there at once.
        Ok(None) if pages.tokens.is_none() => return oauth::begin(&pages, &id, &headers).await,
        Ok(None) => return pages.sign_in_page(StatusCode::OK, &id, ""),
        Err(e) => return unavailable(&e),
    };
    match pages.page.pending(&id, &session.caller).await {
        Ok(Some((call, Decision::Undecided))) => call_page(&id, &session, &call),
        Ok(Some((_, decided))) => already(decided),
        Ok(None) => not_found(),
        Err(e) => unavailable(&e),
    }
}

/// POST `…/sign-in`: a bearer token from the tokens file opens a session.
async fn sign_in(State(pages): State<Arc<Pages>>, Path(id): Path<String>, body: Bytes) -> Response {
    let token = field(&body, "token").unwrap_or_default();
    let Some(caller) = pages
        .tokens
        .as_ref()
        .and_then(|t| t.caller_for(token.trim()))
    else {
        return pages.sign_in_page(
            StatusCode::UNAUTHORIZED,
            &id,
            "That token is not one this gateway knows.",
        );
    };
    let cookie = match pages.open_session(&caller).await {
        Ok(cookie) => cookie,
        Err(instead) => return instead,
    };
    let mut response = (StatusCode::SEE_OTHER, "").into_response();
    let h = response.headers_mut();
    h.extend(cookie);
    // Relative, so a prefix the base URL has (behind a proxy) is kept.
    if let Ok(to) = HeaderValue::from_str(&format!("../{}", path_id(&id))) {
        h.insert(header::LOCATION, to);
    }
    secured(response)
}

/// POST: Approve or Deny, with the session's CSRF token, once.
async fn decide(
    State(pages): State<Arc<Pages>>,
    Path(id): Path<String>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let unsigned = (StatusCode::UNAUTHORIZED, "Sign in first.");
    let session = match pages.signed_in(&headers, &id, unsigned).await {
        Ok(session) => session,
        Err(instead) => return instead,
    };
    let sent = field(&body, "csrf").unwrap_or_default();
    if !page::csrf_matches(&session, &sent) {
        return message(
            StatusCode::FORBIDDEN,
            "Refused",
            "The form's CSRF token is missing or wrong: nothing was decided. Open the page again from your client.",
        );
    }
    let yes = match field(&body, "decision").as_deref() {
        Some("approve") => true,
        Some("deny") => false,
        _ => {
            return message(
                StatusCode::BAD_REQUEST,
                "Refused",
                "Choose Approve or Deny.",
            );
        }
    };
    match pages.page.decide(&id, &session.caller, yes).await {
        Ok(Decided::Now) if yes => message(
            StatusCode::OK,
            "Approved",
            "The call runs once. Go back to your MCP client.",
        ),
        Ok(Decided::Now) => message(
            StatusCode::OK,
            "Denied",
            "The call will not run. Go back to your MCP client.",
        ),
        Ok(Decided::Refused) => match pages.page.pending(&id, &session.caller).await {
            Ok(Some((_, decided))) => already(decided),
            Ok(None) => not_found(),
            Err(e) => unavailable(&e),
        },
        Err(e) => unavailable(&e),
    }
}

impl Pages {
    /// A POST from a page of another origin (a browser names it in `Origin`) is refused:
    /// no other site can sign a person in, or decide for them.
    fn foreign(&self, headers: &HeaderMap) -> Option<Response> {
        let origin = headers.get(header::ORIGIN)?;
        if origin
            .to_str()
            .is_ok_and(|o| o.eq_ignore_ascii_case(&self.origin))
        {
            return None;
        }
        Some(message(
            StatusCode::FORBIDDEN,
            "Refused",
            "This form was sent from another site: nothing was done.",
        ))
    }

    /// The live session of the request's cookie, or what to answer instead: the sign-in
    /// form for confirmation `id` (answered with that status and error) when there is none, or the
    /// store's unavailability.
    async fn signed_in(
        &self,
        headers: &HeaderMap,
        id: &str,
        (status, error): (StatusCode, &str),
    ) -> Result<Session, Response> {
        match self.session(headers).await {
            Ok(Some(session)) => Ok(session),
            Ok(None) => Err(self.sign_in_page(status, id, error)),
            Err(e) => Err(unavailable(&e)),
        }
    }

    /// The session of the request's cookie, if it has a live one.
    async fn session(&self, headers: &HeaderMap) -> Result<Option<Session>, StoreError> {
        match cookie(headers, COOKIE) {
            Some(cookie) => self.page.session(&cookie).await,
            None => Ok(None),
        }
    }

    /// A new session for `caller`: its cookie, or what to answer instead.
    async fn open_session(&self, caller: &Caller) -> Result<HeaderMap, Response> {
        let signed = self
            .page
            .sign_in(&crate::caller::name(caller))
            .await
            .map_err(|e| unavailable(&e))?;
        Ok(self.set_cookie(COOKIE, &signed.cookie, "Strict", page::SESSION_TTL))
    }

    /// The `Set-Cookie` of one of the page's cookies: HttpOnly, for the page's path,
    /// `Secure` on https.
    fn set_cookie(&self, name: &str, value: &str, same_site: &str, ttl: Duration) -> HeaderMap {
        let secure = if self.page.secure() { "; Secure" } else { "" };
        let cookie = format!(
            "{name}={value}; Path={}; HttpOnly; SameSite={same_site}; Max-Age={}{secure}",
            self.cookie_path,
            ttl.as_secs()
        );
        let mut headers = HeaderMap::new();
        if let Ok(cookie) = HeaderValue::from_str(&cookie) {
            headers.insert(header::SET_COOKIE, cookie);
        }
        headers
    }

    /// The sign-in page of confirmation `id`: the ways in this gateway offers, with
    /// `error` said first.
    fn sign_in_page(&self, status: StatusCode, id: &str, error: &str) -> Response {
        let action = escape(&path_id(id));
        let way = |offered: bool, template: &str| {
            let issuer = self.oauth.as_ref().map_or("", |o| o.issuer());
            let values = [("action", action.clone()), ("issuer", escape(issuer))];
            if offered {
                render(template, &values)
            } else {
                String::new()
            }
        };
        let body = render(
            SIGN_IN_HTML,
            &[
                ("error", escape(error)),
                ("oauth", way(self.oauth.is_some(), SIGN_IN_OAUTH_HTML)),
                ("token", way(self.tokens.is_some(), SIGN_IN_TOKEN_HTML)),
            ],
        );
        html(status, "Sign in", &body)
    }
}

/// The value of the request's cookie `name`, if it sent one.
fn cookie(headers: &HeaderMap, name: &str) -> Option<String> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|kv| kv.trim().split_once('='))
        .find(|(k, _)| *k == name)
        .map(|(_, v)| v.to_owned())
}

/// One field of a form body (`application/x-www-form-urlencoded`).
fn field(body: &[u8], name: &str) -> Option<String> {
    form_urlencoded::parse(body)
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.into_owned())
}

/// The id as it may stand in a path: a confirmation's id is hex; anything else is
/// reduced to its hex digits (it names no confirmation either way).
fn path_id(id: &str) -> String {
    id.chars()
        .filter(char::is_ascii_hexdigit)
        .take(64)
        .collect()
}

fn call_page(id: &str, session: &Session, call: &ShownCall) -> Response {
    let shown = |v: &serde_json::Value| {
        let pretty = serde_json::to_string_pretty(v).unwrap_or_default();
        escape(&text::clip(&text::visible(&pretty), MAX_SHOWN_CHARS))
    };
    let proposed = match &call.proposed {
        Some(p) => format!(
            "<h2>Proposed before the beforeCall hook rewrote it</h2>\n<pre id=\"proposed\">{}</pre>",
            shown(p)
        ),
        None => String::new(),
    };
    let body = render(
        CALL_HTML,
        &[
            (
                "caller",
                escape(&text::visible_line(session.caller.as_str())),
            ),
            ("server", escape(&text::visible_line(&call.server))),
            ("tool", escape(&text::visible_line(&call.tool))),
            ("why", escape(&text::visible(&call.why))),
            ("arguments", shown(&call.arguments)),
            ("proposed", proposed),
            ("annotations", shown(&call.annotations)),
            ("action", path_id(id)),
            ("csrf", escape(&session.csrf)),
        ],
    );
    html(StatusCode::OK, "Approve a call", &body)
}

fn already(decided: Decision) -> Response {
    let word = if decided == Decision::Approved {
        "approved"
    } else {
        "denied"
    };
    message(
        StatusCode::CONFLICT,
        "Decided already",
        &format!("This call was {word} already; a decision is made once."),
    )
}

fn not_found() -> Response {
    message(
        StatusCode::NOT_FOUND,
        "No such call",
        "There is no call waiting for you here (it was never asked, it expired, or it is not yours).",
    )
}

fn unavailable(e: &StoreError) -> Response {
    eprintln!(
        "gatehouse: the approval page: {}",
        text::visible_line(&e.to_string())
    );
    message(
        StatusCode::SERVICE_UNAVAILABLE,
        "Try again",
        "The gateway's state store did not answer; nothing was decided.",
    )
}

fn message(status: StatusCode, heading: &str, detail: &str) -> Response {
    let body = render(
        MESSAGE_HTML,
        &[("heading", escape(heading)), ("detail", escape(detail))],
    );
    html(status, heading, &body)
}

fn html(status: StatusCode, title: &str, body: &str) -> Response {
    let page = format!(
        "{}{}",
        gatehouse_http::HTML_HEAD,
        render(
            PAGE_HTML,
            &[("title", escape(title)), ("body", body.to_owned())],
        )
    );
    let response = (
        status,
        [(header::CONTENT_TYPE, "text/html; charset=utf-8")],
        page,
    )
        .into_response();
    secured(response)
}

/// The headers every page answer carries: no script, no framing (an Approve button
/// cannot be clicked through another site), no caching, no referrer to other sites.
fn secured(mut response: Response) -> Response {
    let h = response.headers_mut();
    for (name, value) in [
        (header::CONTENT_SECURITY_POLICY, CSP),
        (header::X_FRAME_OPTIONS, "DENY"),
        (header::CACHE_CONTROL, "no-store"),
        // Not `no-referrer`: with it a browser sends `Origin: null` on the page's own forms.
        (header::REFERRER_POLICY, "same-origin"),
        (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
    ] {
        h.insert(name, HeaderValue::from_static(value));
    }
    response
}

/// Fill a template's `{{name}}` places in one pass, so a value that holds `{{…}}` is
/// never filled in again. Values are HTML already (escaped by the caller).
fn render(template: &str, values: &[(&str, String)]) -> String {
    let mut out = String::with_capacity(template.len());
    let mut rest = template;
    while let Some(start) = rest.find("{{") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let Some(end) = after.find("}}") else {
            out.push_str(&rest[start..]);
            return out;
        };
        let name = &after[..end];
        match values.iter().find(|(k, _)| *k == name) {
            Some((_, v)) => out.push_str(v),
            None => out.push_str(&rest[start..start + 2 + end + 2]),
        }
        rest = &after[end + 2..];
    }
    out.push_str(rest);
    out
}

/// Text as HTML text or an attribute's value.
fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_value_is_escaped_and_filled_in_once() {
        let evil = escape("<script>alert(1)</script>{{csrf}}\"'&");
        let out = render(
            "<p>{{a}}</p><i>{{csrf}}</i>{{unknown}}",
            &[("a", evil), ("csrf", "TOKEN".into())],
        );
        assert_eq!(
            out,
            "<p>&lt;script&gt;alert(1)&lt;/script&gt;{{csrf}}&quot;&#39;&amp;</p><i>TOKEN</i>{{unknown}}"
        );
    }

    /// The page served on a port of its own over a fresh SQLite store, with one token
    /// (`sam-token`) in its tokens file: the base URL, and the store's folder to keep.
    async fn served() -> (String, tempfile::TempDir) {
        let dir = tempfile::tempdir().unwrap();
        let location = crate::store::Location::File(dir.path().join("state.db"));
        let store = crate::Store::open(&location, None).await.unwrap();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        let settings = page::PageSettings::parse(&format!("{base}/"), None).unwrap();
        let sam = gatehouse_http::tokens::hash_token("sam-token");
        let tokens = Tokens::from_json(&format!(
            r#"[{{"user": "sam", "tenant": "larkfield", "sha256": "{sam}"}}]"#
        ))
        .unwrap();
        let app = routes(Page::new(settings, store), Some(Arc::new(tokens)), None);
        tokio::spawn(async move { axum::serve(listener, app).await });
        (base, dir)
    }

    #[tokio::test]
    async fn a_post_from_another_origin_is_refused_before_its_handler_and_a_get_is_not() {
        let (base, _dir) = served().await;
        let http = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .unwrap();
        let sign_in = format!("{base}{APPROVE_PATH}/abc/sign-in");
        let post = |origin: Option<&str>| {
            let mut request = http.post(&sign_in).body("token=sam-token");
            if let Some(origin) = origin {
                request = request.header(header::ORIGIN, origin);
            }
            request.send()
        };
        let foreign = post(Some("https://evil.example")).await.unwrap();
        assert_eq!(foreign.status(), StatusCode::FORBIDDEN);
        let text = foreign.text().await.unwrap();
        assert!(text.contains("another site"), "{text}");
        let decision = http
            .post(format!("{base}{APPROVE_PATH}/abc"))
            .header(header::ORIGIN, "https://evil.example")
            .body("csrf=x&decision=approve")
            .send()
            .await
            .unwrap();
        assert_eq!(decision.status(), StatusCode::FORBIDDEN);
        for origin in [Some(base.as_str()), None] {
            let signed = post(origin).await.unwrap();
            assert_eq!(signed.status(), StatusCode::SEE_OTHER, "{origin:?}");
            assert!(signed.headers().contains_key(header::SET_COOKIE));
        }
        let shown = http
            .get(format!("{base}{APPROVE_PATH}/abc"))
            .header(header::ORIGIN, "https://evil.example")
            .send()
            .await
            .unwrap();
        assert_eq!(shown.status(), StatusCode::OK);
        // The document is the shared prologue, then the page's own head and body.
        let document = shown.text().await.unwrap();
        assert!(document.starts_with("<!doctype html>\n<html lang=\"en\">\n<head>\n"));
        assert!(
            document.contains("<title>Sign in · Gatehouse</title>"),
            "{document}"
        );
    }

    #[test]
    fn the_cookie_path_follows_the_base_urls() {
        assert_eq!(base_path_of("https://gw.example"), "");
        assert_eq!(base_path_of("https://gw.example/team/gw"), "/team/gw");
        assert_eq!(path_id("ab12/../x\"<"), "ab12");
    }
}
