//! Enterprise-managed authorization: the person's ID token from the company's identity
//! provider exchanged there for an ID-JAG (RFC 8693), and the ID-JAG presented to the
//! server's authorization server as a JWT-bearer grant (rmcp's `enterprise` module does
//! both exchanges and checks the ID-JAG's issuer, audience, client, resource and scope).

use std::collections::HashSet;

use oauth2::{AccessToken, Scope, StandardTokenResponse, basic::BasicTokenType};
use rmcp::transport::auth::{
    AuthorizationManager, VendorExtraTokenFields, default_oauth_http_client,
    enterprise::{EmaAuthorizationServer, EmaClientAuthentication, EmaExchangeRequest},
};

use super::{
    SignInError, SignedIn, Start,
    assertion::{assertion, configure, keep, resource, takes_jwt_bearer, wanted_scopes},
    explain, failed, record,
};
use crate::connect::auth::store::ClientSource;

/// How the host's client authenticates at an authorization server: its secret, Basic
/// unless the server takes it only in the body; none for a public client.
fn client_authentication(
    secret: Option<&String>,
    methods: Option<&serde_json::Value>,
) -> EmaClientAuthentication {
    let Some(secret) = secret else {
        return EmaClientAuthentication::None;
    };
    let offered = |m: &str| {
        methods
            .and_then(|v| v.as_array())
            .is_some_and(|a| a.iter().any(|x| x == m))
    };
    let secret = oauth2::ClientSecret::new(secret.clone());
    if offered("client_secret_post") && !offered("client_secret_basic") {
        EmaClientAuthentication::ClientSecretPost(secret)
    } else {
        EmaClientAuthentication::ClientSecretBasic(secret)
    }
}

/// Enterprise-managed authorization: the person's ID token, exchanged at the company's
/// identity provider for an ID-JAG, exchanged at the server's authorization server for
/// its token.
pub(super) async fn enterprise_managed(
    mut m: AuthorizationManager,
    start: Start<'_>,
) -> Result<(AuthorizationManager, SignedIn), SignInError> {
    if start.dpop.is_some() {
        return Err(failed(
            "tokens bound to a key (DPoP) are wanted, but enterprise-managed authorization has no DPoP exchange yet (rmcp's sends no proofs): the server cannot be signed in to this way",
        ));
    }
    let (Some(idp), Some(client_id)) = (&start.auth.config.idp, &start.auth.config.client_id)
    else {
        return Err(failed(
            "the \"enterprise_managed\" grant needs the entry's \"idp\" and \"clientId\"",
        ));
    };
    takes_jwt_bearer(
        start.metadata,
        &start.issuer,
        "the identity provider's grant",
    )?;
    let id_token = assertion("ID token", &idp.id_token).await?;
    let initial = crate::connect::auth::scopes::without_person(&m).await;
    let asked = wanted_scopes(&start.auth.config, start.scopes.unwrap_or(initial));
    let at_idp = EmaAuthorizationServer::new(&idp.issuer, &idp.token_endpoint, &idp.client_id)
        .with_client_authentication(client_authentication(idp.client_secret.as_ref(), None));
    let at_server =
        EmaAuthorizationServer::new(&start.issuer, &start.metadata.token_endpoint, client_id)
            .with_client_authentication(client_authentication(
                start.auth.config.client_secret.as_ref(),
                start
                    .metadata
                    .additional_fields
                    .get("token_endpoint_auth_methods_supported"),
            ));
    let resource = resource(start.auth);
    let http = default_oauth_http_client().map_err(|e| failed(explain(&e)))?;
    let exchange = EmaExchangeRequest::new_with_id_token(at_idp, at_server, &resource, &id_token)
        .with_scopes(asked.iter().cloned())
        .exchange(&http, &http);
    let token = tokio::time::timeout(start.auth.limits.timeout, exchange)
        .await
        .map_err(|_| {
            failed(format!(
                "the identity provider and the authorization server did not finish within {}",
                crate::text::seconds(start.auth.limits.timeout)
            ))
        })?
        .map_err(|e| failed(format!("enterprise-managed authorization failed: {e}")))?;
    let scopes: Vec<String> = {
        let mut s: Vec<String> = token
            .scopes
            .iter()
            .cloned()
            .collect::<HashSet<_>>()
            .into_iter()
            .collect();
        s.sort();
        s
    };
    let mut tokens = StandardTokenResponse::new(
        AccessToken::new(token.access_token.secret().clone()),
        BasicTokenType::Bearer,
        VendorExtraTokenFields::default(),
    );
    tokens.set_expires_in(token.expires_in.as_ref());
    if !scopes.is_empty() {
        tokens.set_scopes(Some(scopes.iter().cloned().map(Scope::new).collect()));
    }
    configure(&mut m, client_id).map_err(failed)?;
    let kept = record(
        start.auth,
        start.metadata,
        &start.issuer,
        client_id,
        ClientSource::EnterpriseManaged,
        "",
    );
    keep(start.slot, kept, tokens, scopes.clone()).await?;
    let issuer = start.issuer;
    Ok((m, SignedIn { issuer, scopes }))
}
