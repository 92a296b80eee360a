//! Which scopes a sign-in asks for. At first: the challenge's `scope`, else the protected
//! resource's `scopes_supported`, else none (rmcp's choice; never the authorization
//! server's own list), with `offline_access` when the authorization server advertises it,
//! then the servers file's `scopes`. On a step-up (403 `insufficient_scope`): the union of
//! what was granted, what the 403 asks for and the servers file's, or a stop when the
//! sign-in has the asked-for scopes already. How many step-ups one request may make is
//! the HTTP client's bound ([`super::MAX_STEP_UPS`]).

use rmcp::transport::auth::AuthorizationManager;

use super::{SignInError, scope_words};

/// `extra` added to `scopes`, each once, in order.
fn with(mut scopes: Vec<String>, extra: &[String]) -> Vec<String> {
    for s in extra {
        if !scopes.contains(s) {
            scopes.push(s.clone());
        }
    }
    scopes
}

/// The scopes of a first sign-in, from what discovery found in `m` and the servers
/// file's `configured`.
pub(super) async fn initial(m: &AuthorizationManager, configured: &[String]) -> Vec<String> {
    with(m.select_initial_scopes(&[]).await, configured)
}

/// The scope that asks for a refresh token (OpenID Connect Core §11).
const OFFLINE_ACCESS: &str = "offline_access";

/// The scopes a first sign-in with no person asks for: as [`initial`], less
/// `offline_access`. Such a grant is its own renewal and gets no refresh token, and an
/// authorization server that holds a client to its registered scopes refuses the request
/// for that one scope.
pub(super) async fn without_person(m: &AuthorizationManager) -> Vec<String> {
    let mut scopes = m.select_initial_scopes(&[]).await;
    scopes.retain(|s| s != OFFLINE_ACCESS);
    scopes
}

/// The scopes a step-up asks for, or why another sign-in cannot help.
pub(super) fn step_up(
    asked: &[String],
    granted: Vec<String>,
    configured: &[String],
) -> Result<Vec<String>, SignInError> {
    if asked.iter().all(|s| granted.contains(s)) {
        return Err(SignInError::Failed(format!(
            "it refuses the request for want of scope ({}), which the sign-in has already: more sign-ins cannot help",
            scope_words(asked)
        )));
    }
    Ok(with(with(granted, asked), configured))
}

#[cfg(test)]
mod tests {
    use axum::{Json, Router, routing::get};
    use serde_json::{Value, json};

    use super::*;

    fn strings(words: &[&str]) -> Vec<String> {
        words.iter().map(|s| (*s).to_owned()).collect()
    }

    /// A protected resource and its authorization server on 127.0.0.1: the resource's
    /// metadata lists `resource_scopes` (if any), the server's `server_scopes`. Its URL.
    async fn metadata_server(resource_scopes: Option<&[&str]>, server_scopes: &[&str]) -> String {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        let mut prm = json!({"resource": format!("{base}/mcp"), "authorization_servers": [base]});
        if let Some(s) = resource_scopes {
            prm["scopes_supported"] = json!(s);
        }
        let asm = json!({
            "issuer": base,
            "authorization_endpoint": format!("{base}/authorize"),
            "token_endpoint": format!("{base}/token"),
            "code_challenge_methods_supported": ["S256"],
            "scopes_supported": server_scopes,
        });
        let serve = |v: Value| move || async move { Json(v) };
        let app = Router::new()
            .route("/.well-known/oauth-protected-resource/mcp", get(serve(prm)))
            .route("/.well-known/oauth-authorization-server", get(serve(asm)));
        tokio::spawn(async move { axum::serve(listener, app).await });
        base
    }

    /// A manager after discovery from a 401 with `challenge_scope`.
    async fn discovered(
        resource: Option<&[&str]>,
        server: &[&str],
        challenge_scope: Option<&str>,
    ) -> AuthorizationManager {
        let base = metadata_server(resource, server).await;
        let mut m = AuthorizationManager::new_allowing_private_addresses(format!("{base}/mcp"))
            .await
            .unwrap();
        let mut challenge =
            format!("Bearer resource_metadata=\"{base}/.well-known/oauth-protected-resource/mcp\"");
        if let Some(s) = challenge_scope {
            challenge.push_str(&format!(", scope=\"{s}\""));
        }
        let found = m
            .resolve_metadata_from_challenge(Some(&challenge))
            .await
            .expect("discovered");
        m.set_metadata(found.metadata);
        m
    }

    /// The first sign-in's scopes after discovery from a 401 with `challenge_scope`.
    async fn first_scopes(
        resource: Option<&[&str]>,
        server: &[&str],
        challenge_scope: Option<&str>,
        configured: &[&str],
    ) -> Vec<String> {
        let m = discovered(resource, server, challenge_scope).await;
        initial(&m, &strings(configured)).await
    }

    #[tokio::test]
    async fn a_grant_with_no_person_never_asks_for_offline_access() {
        let advertised = &["mcp:read", "offline_access"];
        let m = discovered(Some(&["mcp:read"]), advertised, None).await;
        assert_eq!(initial(&m, &[]).await, ["mcp:read", "offline_access"]);
        assert_eq!(without_person(&m).await, ["mcp:read"]);
    }

    #[tokio::test]
    async fn a_first_sign_in_asks_for_the_challenges_scopes_else_the_resources_else_none() {
        let resource: &[&str] = &["mcp:read", "mcp:write"];
        let challenged = first_scopes(Some(resource), &["x"], Some("mcp:basic"), &[]).await;
        assert_eq!(challenged, ["mcp:basic"]);
        let listed = first_scopes(Some(resource), &["x"], None, &[]).await;
        assert_eq!(listed, ["mcp:read", "mcp:write"]);
        let none = first_scopes(None, &["x", "y", "offline_access"], None, &[]).await;
        assert!(
            none.is_empty(),
            "never the authorization server's list: {none:?}"
        );
    }

    #[tokio::test]
    async fn offline_access_is_added_when_advertised_and_the_servers_file_adds_its_own() {
        let resource: &[&str] = &["mcp:read"];
        let advertised = first_scopes(Some(resource), &["mcp:read", "offline_access"], None, &[]);
        assert_eq!(advertised.await, ["mcp:read", "offline_access"]);
        let not = first_scopes(
            Some(resource),
            &["mcp:read"],
            None,
            &["mcp:admin", "mcp:read"],
        );
        assert_eq!(not.await, ["mcp:read", "mcp:admin"]);
    }

    #[test]
    fn a_step_up_asks_for_the_union_or_stops_when_it_cannot_help() {
        let granted = strings(&["mcp:basic", "offline_access"]);
        let union = step_up(
            &strings(&["mcp:write"]),
            granted.clone(),
            &strings(&["mcp:x"]),
        );
        assert_eq!(
            union.unwrap(),
            ["mcp:basic", "offline_access", "mcp:write", "mcp:x"]
        );
        let e = step_up(&strings(&["mcp:basic"]), granted, &[]).unwrap_err();
        assert!(e.to_string().contains("more sign-ins cannot help"), "{e}");
        assert!(e.to_string().contains("scopes mcp:basic"), "{e}");
        // A 403 that names no scope cannot be answered by signing in again.
        assert!(step_up(&[], strings(&["a"]), &[]).is_err());
    }
}
