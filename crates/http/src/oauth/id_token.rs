//! An OpenID Connect ID token (OpenID Connect Core §3.1.3.7), for a client of the same
//! issuer that signs people in beside this resource (the gateway's approval page): the
//! same keys, algorithms, issuer and clock as an access token, the client as its
//! audience, and the sign-in's `nonce`.

use super::{Jwt, Refusal, ResourceServer};

impl ResourceServer {
    /// Check an ID token issued to `client_id` for the sign-in that sent `nonce`: signed
    /// with one of the issuer's keys, from the issuer, for that client, unexpired, with
    /// that nonce. Its subject, or why it is refused.
    pub async fn check_id_token(
        &self,
        token: &str,
        client_id: &str,
        nonce: &str,
    ) -> Result<String, Refusal> {
        let claims = self.verify(token, Jwt::IdToken, client_id).await?;
        if claims["nonce"].as_str() != Some(nonce) {
            return Err(Refusal::Nonce);
        }
        claims["sub"]
            .as_str()
            .map(str::to_owned)
            .ok_or(Refusal::Claims)
    }
}
