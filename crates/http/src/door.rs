//! The door of the MCP endpoint: who is calling (bearer token, OAuth access token, or the
//! default caller), whether the request may use the session it names, whether an
//! `initialize` may open one, and what an OAuth token's scopes allow.

use std::{sync::Arc, time::Duration};

use axum::{
    extract::{Request, State},
    http::{Method, StatusCode, header},
    middleware::Next,
    response::Response,
};
use serde_json::{Value, json};

use crate::{
    Auth, Caller, MAX_REQUEST_BODY_BYTES, SESSION_HEADER, SESSION_LIMIT_CODE, SessionAccess,
    answers,
    body::read_post,
    log,
    log::ThrottledLog,
    members,
    oauth::{self, Refusal as TokenRefusal, ResourceServer},
    refusal::Refusal,
    sessions::{self, BoundedSessions, Refused, Sessions},
    shared::{self, Shared},
    tokens::{self, Tokens},
};

/// The authentication layer's state: the tokens, how long a body may take, and the legacy
/// sessions with who may open one.
pub(crate) struct Doorway {
    pub(crate) auth: Auth,
    /// With `--oauth-issuer`: the checks of access tokens, once the issuer was read.
    pub(crate) oauth: Option<Arc<ResourceServer>>,
    /// Whether a tool is marked read-only (`None`: unknown), for the scopes it needs.
    pub(crate) read_only: ReadOnly,
    /// Who every request is without authentication (`--no-auth`).
    pub(crate) caller: Caller,
    pub(crate) access: SessionAccess,
    pub(crate) body_timeout: Duration,
    pub(crate) sessions: Arc<Sessions>,
    /// rmcp's session manager, to end a session here whose shared row is gone.
    pub(crate) manager: Arc<BoundedSessions>,
    /// The store legacy sessions are shared through, if any.
    pub(crate) shared: Option<Arc<Shared>>,
    pub(crate) log: ThrottledLog,
}

fn refused_log(reason: &str) {
    log::line(json!({
        "ts": log::timestamp(), "event": "http_unauthorized", "reason": reason,
    }));
}

impl Doorway {
    /// Admit an `initialize` from `caller`, or say why not: no membership where sessions
    /// need one, or a session bound reached.
    fn admit(&self, caller: &Caller) -> Result<sessions::Admission, NoSession> {
        if let SessionAccess::Members(members) = self.access
            && !members.is_member(caller)
        {
            return Err(NoSession::NotAMember);
        }
        self.sessions.reserve(caller).map_err(NoSession::Full)
    }

    /// The answer refusing an `initialize` (request `id`): 403 with -32003 for a caller
    /// with no membership, 429 at the caller's bound, 503 at the server's.
    fn refuse_session(&self, why: NoSession, id: &Value) -> Response {
        let (status, code, message, data, reason) = match why {
            NoSession::NotAMember => (
                StatusCode::FORBIDDEN,
                members::FORBIDDEN_CODE,
                members::FORBIDDEN_MESSAGE.to_owned(),
                None,
                "not_a_member",
            ),
            NoSession::Full(Refused::CallerFull(limit)) => (
                StatusCode::TOO_MANY_REQUESTS,
                SESSION_LIMIT_CODE,
                format!(
                    "too many sessions: you already hold {limit}, the most one caller may; \
                     end one (DELETE) or use a 2026-07-28 client, which needs none"
                ),
                Some(json!({"reason": "caller_session_limit", "limit": limit})),
                "caller_limit",
            ),
            NoSession::Full(Refused::ServerFull(limit)) => (
                StatusCode::SERVICE_UNAVAILABLE,
                SESSION_LIMIT_CODE,
                format!(
                    "the server holds its most sessions ({limit}); try again later, or use \
                     a 2026-07-28 client, which needs none"
                ),
                Some(json!({"reason": "server_session_limit", "limit": limit})),
                "server_limit",
            ),
        };
        self.log.note("http_session_refused", reason, json!({}));
        Refusal::JsonRpc {
            status,
            id: id.clone(),
            code,
            message,
            data,
        }
        .into()
    }
}

/// Whether a tool of the server is marked read-only.
pub(crate) type ReadOnly = Arc<dyn Fn(&str) -> Option<bool> + Send + Sync>;

/// Why an `initialize` opens no session.
enum NoSession {
    NotAMember,
    Full(Refused),
}

/// Who calls, by the request's token (and what an OAuth token grants), or the refusal.
async fn caller_and_grant(
    door: &Doorway,
    headers: &axum::http::HeaderMap,
    method: &Method,
) -> Result<(Caller, Option<oauth::Grant>), Response> {
    match &door.auth {
        Auth::Off => Ok((door.caller.clone(), None)),
        Auth::Tokens(tokens) => match caller_of(tokens, headers) {
            Ok(caller) => Ok((caller, None)),
            Err(refusal) => Err(refusal.response()),
        },
        Auth::OAuth { tokens, .. } => oauth_caller(door, tokens.as_deref(), headers, method).await,
    }
}

/// The legacy session the request names, if any, kept to the caller that opened it (with
/// a shared store, its row vetted), or the 404 of an unknown session.
async fn session_of(
    door: &Doorway,
    headers: &axum::http::HeaderMap,
    caller: &Caller,
) -> Result<(Option<String>, Option<shared::Vetted>), Response> {
    let session = match headers.get(SESSION_HEADER).map(|v| v.to_str()) {
        None => None,
        Some(Ok(id)) => Some(id.to_owned()),
        Some(Err(_)) => return Err(Refusal::NoSuchSession.into()),
    };
    let vetted = match (&session, &door.shared) {
        (Some(id), Some(shared)) => match door.manager.vet(shared, id, caller).await {
            Ok(vetted) => Some(vetted),
            Err(refusal) => return Err(refusal),
        },
        (Some(id), None) if !door.sessions.may_use(id, caller) => {
            return Err(Refusal::NoSuchSession.into());
        }
        _ => None,
    };
    Ok((session, vetted))
}

/// A place among the sessions for a new session (`initialize`) or one this replica
/// restores from the shared store, each within the same bounds; none for the rest.
fn admission(
    door: &Doorway,
    caller: &Caller,
    initialize: bool,
    restoring: bool,
) -> Result<Option<sessions::Admission>, NoSession> {
    if initialize {
        door.admit(caller).map(Some)
    } else if restoring {
        door.sessions
            .reserve(caller)
            .map(Some)
            .map_err(NoSession::Full)
    } else {
        Ok(None)
    }
}

/// Check the bearer token, attach its caller to the request, keep legacy sessions to the
/// caller that opened them, read a POST's body within its bounds, and admit an
/// `initialize` (a new session) only within the session bounds. Bodies declared too large
/// are refused before reading, and nothing is read before the token is checked.
pub(crate) async fn authenticate(
    State(door): State<Arc<Doorway>>,
    request: Request,
    next: Next,
) -> Response {
    let started = tokio::time::Instant::now();
    let declared = request
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    let (caller, granted) = match caller_and_grant(&door, request.headers(), request.method()).await
    {
        Ok(found) => found,
        Err(refusal) => return refusal,
    };
    if declared.is_some_and(|n| n > MAX_REQUEST_BODY_BYTES as u64) {
        return Refusal::TooLarge.into();
    }
    let (session, vetted) = match session_of(&door, request.headers(), &caller).await {
        Ok(found) => found,
        Err(refusal) => return refusal,
    };
    let (mut request, message) = match read_post(request, started, door.body_timeout).await {
        Ok(read) => read,
        Err(refusal) => return refusal,
    };
    if let (Some(shared), Some(vetted), Some(answer)) = (&door.shared, &vetted, &message)
        && let Some(id) = answer.answers()
        && !shared.awaits(&vetted.row.id, &id)
    {
        let row = &vetted.row;
        return answers::relay(shared, &row.id, &row.owner, id, &answer.body).await;
    }
    if let (Some(rs), Some(grant)) = (&door.oauth, &granted) {
        let method = message.as_ref().and_then(|m| m.method.as_deref());
        let tool = message
            .as_ref()
            .and_then(|m| m.params.as_ref()?.get("name")?.as_str());
        let needed = rs.required_scopes(method, tool.and_then(|t| (door.read_only)(t)));
        if !grant.missing(needed).is_empty() {
            let used = presented(request.headers()).map(|(scheme, _)| scheme);
            return insufficient_scope(rs, grant, needed, tool, used);
        }
    }
    request.extensions_mut().insert(caller.clone());
    let id = message
        .as_ref()
        .and_then(|m| m.id.clone())
        .unwrap_or(Value::Null);
    let initialize = session.is_none()
        && message
            .as_ref()
            .is_some_and(|m| m.method.as_deref() == Some("initialize"));
    // A new session, or one of the shared store this replica will restore: each within
    // the same bounds. Ending a session restores nothing (rmcp ends the row alone).
    let ending = request.method() == Method::DELETE;
    let restore = vetted.filter(|v| !v.here && !ending).map(|v| v.row);
    let admission = match admission(&door, &caller, initialize, restore.is_some()) {
        Ok(admission) => admission,
        Err(why) => return door.refuse_session(why, &id),
    };
    if door.shared.is_none() {
        return sessions::with_admission(admission, next.run(request)).await;
    }
    let serving = sessions::with_admission(admission, next.run(request));
    let (response, served) = shared::with_request(caller, restore, serving).await;
    match served.opened {
        None | Some(Ok(true)) => response,
        // A session rmcp opened here but the store did not keep would be a session on
        // this replica alone: it is ended, and the initialize refused.
        Some(kept) => {
            if let Some(new) = response.headers().get(SESSION_HEADER)
                && let Ok(new) = new.to_str()
            {
                door.manager.end(new).await;
            }
            match kept {
                Ok(_) => door.refuse_session(
                    NoSession::Full(Refused::CallerFull(shared::MAX_SHARED_SESSIONS_PER_CALLER)),
                    &id,
                ),
                Err(e) => shared::unavailable(&e),
            }
        }
    }
}

/// Why a request gets 401: the reason logged, and the `error` its challenge names.
struct Unauthorized {
    reason: &'static str,
    error: Option<&'static str>,
}

impl Unauthorized {
    fn response(self) -> Response {
        refused_log(self.reason);
        Refusal::Unauthorized { error: self.error }.into()
    }
}

/// The caller a request's bearer token stands for, or why it has none.
fn caller_of(tokens: &Tokens, headers: &axum::http::HeaderMap) -> Result<Caller, Unauthorized> {
    let refused = |reason, error| Unauthorized { reason, error };
    let Some(value) = headers.get(header::AUTHORIZATION) else {
        return Err(refused("missing", None));
    };
    let Some(token) = value.to_str().ok().and_then(tokens::bearer_token) else {
        return Err(refused("malformed", Some("invalid_token")));
    };
    tokens
        .caller_for(token)
        .ok_or_else(|| refused("unknown", Some("invalid_token")))
}

/// The caller and scopes of a request under `--oauth-issuer`: its access token checked, or
/// (a token that is no JWT, with a tokens file) the tokens file's caller, with every scope.
/// A refusal is a 401 whose challenge names this server's metadata and the scope to ask for.
async fn oauth_caller(
    door: &Doorway,
    tokens: Option<&Tokens>,
    headers: &axum::http::HeaderMap,
    method: &Method,
) -> Result<(Caller, Option<oauth::Grant>), Response> {
    let Some(rs) = &door.oauth else {
        return Err(Refusal::Unauthorized {
            error: Some("invalid_token"),
        }
        .into());
    };
    let value = headers.get(header::AUTHORIZATION);
    let read = presented(headers);
    // A challenge answers in the scheme the request used (DPoP, when it did).
    let scheme = rs.answer_scheme(read.map(|(scheme, _)| scheme));
    let challenge = |refusal: Option<TokenRefusal>, reason: &str| {
        refused_log(reason);
        let error = refusal.map(|r| (r.error_code(), r.description()));
        Response::from(Refusal::OAuthUnauthorized {
            challenge: rs.challenge_as(scheme, error, rs.basic_scopes()),
        })
    };
    if value.is_none() {
        return Err(challenge(None, "missing"));
    }
    let Some((used, token)) = read else {
        return Err(challenge(Some(TokenRefusal::Malformed), "malformed"));
    };
    // A token that is no JWT: the tokens file's, else (with introspection) the issuer's.
    if used == oauth::Scheme::Bearer && token.split('.').count() != 3 {
        if let Some(caller) = tokens.and_then(|t| t.caller_for(token)) {
            return Ok((caller, None));
        }
        if tokens.is_some() && !rs.introspects() {
            return Err(challenge(Some(TokenRefusal::Malformed), "unknown"));
        }
    }
    let proof = headers.get("dpop").and_then(|v| v.to_str().ok());
    let presented = oauth::Presented {
        scheme: used,
        token,
        proof,
        method: method.as_str(),
    };
    match rs.check_presented(presented).await {
        Ok(grant) => Ok((grant.caller.clone(), Some(grant))),
        Err(refusal) => Err(challenge(Some(refusal), refusal.word())),
    }
}

/// The scheme and token of the request's `Authorization`, if it is `Bearer` or `DPoP`.
fn presented(headers: &axum::http::HeaderMap) -> Option<(oauth::Scheme, &str)> {
    headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(oauth::Presented::read)
}

/// 403 `insufficient_scope`, naming every scope the request needs in one challenge.
fn insufficient_scope(
    rs: &ResourceServer,
    grant: &oauth::Grant,
    needed: &[&str],
    tool: Option<&str>,
    used: Option<oauth::Scheme>,
) -> Response {
    let missing = grant.missing(needed).join(" ");
    let description = match tool {
        Some(_) => format!("this tool needs {missing}"),
        None => format!("this request needs {missing}"),
    };
    log::line(json!({
        "ts": log::timestamp(), "event": "http_insufficient_scope",
        "user": grant.caller.user, "client": grant.caller.client, "missing": missing,
    }));
    let scheme = rs.answer_scheme(used);
    let challenge = rs.challenge_as(scheme, Some(("insufficient_scope", &description)), needed);
    Refusal::InsufficientScope {
        description,
        challenge,
    }
    .into()
}
