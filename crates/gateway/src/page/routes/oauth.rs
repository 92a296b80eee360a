//! The approval page's sign-in through the OAuth authorization server (`--approval-page`
//! with `--oauth-issuer`): `GET …/approve/ID` without a session (or `…/ID/oauth`, where
//! the tokens file's tokens are a way in too) begins an authorization-code sign-in as the
//! page's client (`--approval-page-client-id`) and sends the browser to the issuer, bound
//! to it by a short-lived cookie (SameSite=Lax: it must come back with the issuer's
//! redirect); `GET …/approve/callback` finishes it. The access token it brings is checked
//! by the very checks an MCP request's token meets (`ResourceServer::check`: issuer,
//! audience = the gateway's resource, expiry, signature; and the scopes a call needs),
//! its ID token's nonce and subject too, and its subject and organization become the
//! session's caller. The tokens are dropped there: never kept, shown or logged.
//!
//! The session cookie is SameSite=Strict, so a browser that came from the issuer would
//! not send it on a redirect: the callback answers a page of ours that moves on to the
//! call (a `<meta>` refresh, and a link), a navigation that starts on this site.

use std::sync::Arc;

use crate::page::{
    APPROVE_PATH,
    sign_in::{CALLBACK, Issuer, PageClient, Returned, SIGN_IN_TTL, SignInFailure},
};
use axum::{
    Router,
    extract::{Path, RawQuery, State},
    http::{HeaderMap, StatusCode, header},
    response::{IntoResponse, Response},
    routing::get,
};
use gatehouse::text;
use gatehouse_http::{
    Caller,
    oauth::{Refusal, ResourceServer},
};

use super::{Pages, cookie, escape, html, message, not_found, path_id, render, unavailable};
/// The cookie that binds a sign-in in flight to the browser that began it.
const SIGN_IN_COOKIE: &str = "gatehouse_sign_in";
const SIGNED_IN_HTML: &str = include_str!("../../../assets/page/signed_in.html");

/// The page's way in through the authorization server: its client there, and the checks
/// the gateway's MCP endpoint makes of an access token.
pub struct OAuthPages {
    issuer: Issuer,
    checks: Arc<ResourceServer>,
}

impl OAuthPages {
    /// The page's `client` at the issuer `checks` trusts (its metadata as read at
    /// start), coming back to `callback`: checked now, so a gateway that could not sign
    /// anyone in does not start.
    pub fn new(
        client: PageClient,
        checks: Arc<ResourceServer>,
        callback: &str,
    ) -> anyhow::Result<OAuthPages> {
        let scopes = checks.required_scopes(Some("tools/call"), None);
        let target = (checks.resource(), scopes);
        let issuer = Issuer::new(
            client,
            checks.issuer(),
            checks.issuer_metadata(),
            callback,
            target,
        )
        .map_err(anyhow::Error::msg)?;
        Ok(OAuthPages { issuer, checks })
    }

    /// The issuer people sign in at.
    pub fn issuer(&self) -> &str {
        self.issuer.issuer()
    }

    /// The caller the tokens of a finished sign-in stand for: the access token checked as
    /// an MCP request's, with the scopes deciding on a call needs, and the ID token (when
    /// one was asked for) of the same person, for this sign-in.
    async fn caller_of(&self, returned: &Returned) -> Result<Caller, String> {
        let refused =
            |what: &str, r: Refusal| format!("its {what} was refused: {}", r.description());
        let rs = &self.checks;
        let grant = rs
            .check(returned.tokens.access_token.expose())
            .await
            .map_err(|r| refused("access token", r))?;
        let missing = grant.missing(rs.required_scopes(Some("tools/call"), None));
        if !missing.is_empty() {
            return Err(format!(
                "it did not grant {}, which deciding on a call needs",
                missing.join(" ")
            ));
        }
        if let (Some(id_token), Some(nonce)) = (&returned.tokens.id_token, &returned.nonce) {
            let subject = rs
                .check_id_token(id_token.expose(), self.issuer.client_id(), nonce)
                .await
                .map_err(|r| refused("ID token", r))?;
            if subject != grant.caller.user {
                return Err("its ID token names another person than its access token".into());
            }
        }
        Ok(grant.caller)
    }
}

/// The routes of this way in, added to the page's.
pub(super) fn routes(router: Router<Arc<Pages>>) -> Router<Arc<Pages>> {
    router
        .route(&format!("{APPROVE_PATH}/{CALLBACK}"), get(callback))
        .route(&format!("{APPROVE_PATH}/{{id}}/oauth"), get(start))
}

/// GET `…/ID/oauth`: begin a sign-in at the authorization server.
async fn start(
    State(pages): State<Arc<Pages>>,
    Path(id): Path<String>,
    headers: HeaderMap,
) -> Response {
    begin(&pages, &id, &headers).await
}

/// Send the browser to the authorization server, for confirmation `id`'s page.
pub(super) async fn begin(pages: &Pages, id: &str, headers: &HeaderMap) -> Response {
    let Some(oauth) = &pages.oauth else {
        return not_found();
    };
    let browser = cookie(headers, SIGN_IN_COOKIE);
    match pages
        .page
        .begin_sign_in(&oauth.issuer, id, browser.as_deref())
        .await
    {
        Ok(begun) => {
            let mut response = (StatusCode::SEE_OTHER, "").into_response();
            let h = response.headers_mut();
            h.extend(pages.set_cookie(SIGN_IN_COOKIE, &begun.browser, "Lax", SIGN_IN_TTL));
            if let Ok(to) = header::HeaderValue::from_str(&begun.location) {
                h.insert(header::LOCATION, to);
            }
            super::secured(response)
        }
        // An id no confirmation could have: there is nothing to sign in for.
        Err(SignInFailure::UnknownState) => not_found(),
        Err(failure) => failed(&failure),
    }
}

/// GET `…/approve/callback`: the authorization server sent the browser back.
async fn callback(
    State(pages): State<Arc<Pages>>,
    headers: HeaderMap,
    RawQuery(query): RawQuery,
) -> Response {
    let Some(oauth) = &pages.oauth else {
        return not_found();
    };
    let browser = cookie(&headers, SIGN_IN_COOKIE);
    let query = query.unwrap_or_default();
    let returned = match pages
        .page
        .finish_sign_in(&oauth.issuer, browser.as_deref(), &query)
        .await
    {
        Ok(returned) => returned,
        Err(failure) => return failed(&failure),
    };
    let caller = match oauth.caller_of(&returned).await {
        Ok(caller) => caller,
        Err(why) => {
            return not_signed_in(
                StatusCode::FORBIDDEN,
                &format!("The sign-in was not used: {why}."),
            );
        }
    };
    drop(returned.tokens);
    let cookie = match pages.open_session(&caller).await {
        Ok(cookie) => cookie,
        Err(instead) => return instead,
    };
    // Relative to `…/approve/callback`: the confirmation's page beside it.
    let next = escape(&path_id(&returned.confirmation));
    let shown = escape(&text::visible_line(crate::caller::name(&caller).as_str()));
    let body = render(SIGNED_IN_HTML, &[("next", next), ("caller", shown)]);
    let mut response = html(StatusCode::OK, "Signed in", &body);
    response.headers_mut().extend(cookie);
    response
}

/// The page of a sign-in that signed nobody in.
fn failed(failure: &SignInFailure) -> Response {
    let status = match failure {
        SignInFailure::Store(e) => return unavailable(e),
        SignInFailure::Refused(_) => StatusCode::FORBIDDEN,
        SignInFailure::Exchange(_) => StatusCode::BAD_GATEWAY,
        SignInFailure::Busy => StatusCode::SERVICE_UNAVAILABLE,
        SignInFailure::NoBrowser | SignInFailure::UnknownState | SignInFailure::Answer(_) => {
            StatusCode::BAD_REQUEST
        }
    };
    not_signed_in(status, &failure.words())
}

fn not_signed_in(status: StatusCode, why: &str) -> Response {
    message(
        status,
        "Not signed in",
        &format!(
            "{why} Nobody was signed in and nothing was decided. Open the page again from \
             your MCP client to sign in anew."
        ),
    )
}
