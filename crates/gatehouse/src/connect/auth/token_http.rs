//! The HTTP client of a DPoP sign-in's requests to its authorization server (rmcp's
//! `OAuthHttpClient`): each token request (a form POST: the code's exchange, a refresh,
//! client credentials, a JWT-bearer grant) carries a fresh proof, and a `use_dpop_nonce`
//! refusal is answered once with the nonce it gave (RFC 9449 §8).
//!
//! rmcp keeps the address rule of its own client private (a name in discovered metadata
//! may not lead to a loopback, private or link-local address unless the server's own URL
//! is one), so this client applies the same rule through its resolver: a DPoP sign-in is
//! no easier to point at the host's network than any other.

use std::{
    net::{IpAddr, SocketAddr},
    sync::Arc,
    time::Duration,
};

use futures::StreamExt;
use oauth2::url::Host;
use reqwest::{
    Url,
    dns::{Addrs, Name, Resolve, Resolving},
};
use rmcp::transport::auth::{
    OAuthHttpClient, OAuthHttpClientError, OAuthHttpClientFuture, OAuthHttpRedirectPolicy,
    OAuthHttpRequest,
};

use super::dpop::{DpopKey, asks_for_nonce};

/// Largest answer read from an authorization server (rmcp's own bound).
const MAX_ANSWER_BYTES: usize = 1024 * 1024;
/// How long one request may take when rmcp names no limit (rmcp's own).
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);
/// Most redirects a discovery request follows (same origin only).
const MAX_REDIRECTS: usize = 10;

/// What kind of address an IP is, for the rule above.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Class {
    Public,
    Loopback,
    Private,
    Blocked,
}

fn class(ip: IpAddr) -> Class {
    let ip = match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(IpAddr::V6(v6), IpAddr::V4),
        v4 => v4,
    };
    match ip {
        IpAddr::V4(v4) => {
            let [a, b, ..] = v4.octets();
            if v4.is_loopback() {
                Class::Loopback
            } else if v4.is_private() || (a == 100 && (64..=127).contains(&b)) {
                Class::Private
            } else if v4.is_link_local()
                || v4.is_unspecified()
                || v4.is_broadcast()
                || v4.is_multicast()
                || v4.is_documentation()
                || a == 0
                || a >= 240
            {
                Class::Blocked
            } else {
                Class::Public
            }
        }
        IpAddr::V6(v6) => {
            let first = v6.segments()[0];
            if v6.is_loopback() {
                Class::Loopback
            } else if (first & 0xfe00) == 0xfc00 {
                Class::Private
            } else if v6.is_unspecified() || v6.is_multicast() || (first & 0xffc0) == 0xfe80 {
                Class::Blocked
            } else {
                Class::Public
            }
        }
    }
}

/// Which addresses the authorization server's names may lead to: public ones, and a
/// loopback or private one only when the server's own URL names one (or the entry allows
/// private addresses); never link-local or reserved ones.
#[derive(Debug, Clone, Copy)]
struct Rule {
    loopback: bool,
    private: bool,
}

impl Rule {
    fn for_server(url: &str, allow_private: bool) -> Rule {
        let host = Url::parse(url)
            .ok()
            .and_then(|u| u.host().map(|h| h.to_owned()));
        let base = match host {
            Some(Host::Ipv4(ip)) => class(IpAddr::V4(ip)),
            Some(Host::Ipv6(ip)) => class(IpAddr::V6(ip)),
            Some(Host::Domain(d)) if d.eq_ignore_ascii_case("localhost") => Class::Loopback,
            _ => Class::Public,
        };
        Rule {
            loopback: base == Class::Loopback,
            private: allow_private || matches!(base, Class::Loopback | Class::Private),
        }
    }

    fn allows(self, ip: IpAddr) -> bool {
        match class(ip) {
            Class::Public => true,
            Class::Loopback => self.loopback,
            Class::Private => self.private,
            Class::Blocked => false,
        }
    }

    /// Whether `url` may be asked: an IP literal by the rule (names go to the resolver).
    fn allows_url(self, url: &Url) -> bool {
        match url.host() {
            Some(Host::Ipv4(ip)) => self.allows(IpAddr::V4(ip)),
            Some(Host::Ipv6(ip)) => self.allows(IpAddr::V6(ip)),
            Some(Host::Domain(_)) => true,
            None => false,
        }
    }
}

impl Resolve for Rule {
    fn resolve(&self, name: Name) -> Resolving {
        let rule = *self;
        Box::pin(async move {
            let found = tokio::net::lookup_host((name.as_str(), 0)).await?;
            let kept: Vec<SocketAddr> = found.filter(|a| rule.allows(a.ip())).collect();
            if kept.is_empty() {
                let refused = format!(
                    "{} leads to no address the sign-in may use (loopback, private or link-local)",
                    name.as_str()
                );
                return Err(refused.into());
            }
            Ok(Box::new(kept.into_iter()) as Addrs)
        })
    }
}

/// A DPoP sign-in's client of its authorization server.
pub struct DpopOAuthHttp {
    key: Arc<DpopKey>,
    rule: Rule,
    follow: reqwest::Client,
    stop: reqwest::Client,
}

impl DpopOAuthHttp {
    /// The client for the server at `server_url`, proving `key`.
    pub fn new(
        key: Arc<DpopKey>,
        server_url: &str,
        allow_private: bool,
    ) -> Result<DpopOAuthHttp, String> {
        let rule = Rule::for_server(server_url, allow_private);
        let follow_rule = reqwest::redirect::Policy::custom(move |attempt| {
            let same_origin = attempt
                .previous()
                .first()
                .is_some_and(|f| f.origin() == attempt.url().origin());
            if !same_origin || attempt.previous().len() > MAX_REDIRECTS {
                attempt.stop()
            } else if !rule.allows_url(attempt.url()) {
                attempt.error("a redirect to an address the sign-in may not use")
            } else {
                attempt.follow()
            }
        });
        let build = |redirect| {
            reqwest::Client::builder()
                .redirect(redirect)
                .dns_resolver(Arc::new(rule))
                .build()
                .map_err(|e| e.to_string())
        };
        Ok(DpopOAuthHttp {
            key,
            rule,
            follow: build(follow_rule)?,
            stop: build(reqwest::redirect::Policy::none())?,
        })
    }

    /// One round: the request, with a fresh proof when it is a token request.
    async fn send(
        &self,
        parts: &oauth2::http::request::Parts,
        body: &[u8],
        policy: OAuthHttpRedirectPolicy,
        timeout: Duration,
        token_request: bool,
    ) -> Result<oauth2::http::Response<Vec<u8>>, OAuthHttpClientError> {
        let url = Url::parse(&parts.uri.to_string())?;
        if !self.rule.allows_url(&url) {
            return Err(format!("{url} is an address the sign-in may not use").into());
        }
        let client = match policy {
            OAuthHttpRedirectPolicy::Stop => &self.stop,
            _ => &self.follow,
        };
        let mut request = client
            .request(parts.method.clone(), url.clone())
            .headers(parts.headers.clone())
            .timeout(timeout)
            .body(body.to_vec());
        if token_request {
            request = request.header("DPoP", self.key.proof("POST", url.as_str(), None)?);
        }
        let response = request.send().await?;
        if let Some(nonce) = response
            .headers()
            .get("DPoP-Nonce")
            .and_then(|v| v.to_str().ok())
        {
            self.key.set_nonce(url.as_str(), nonce);
        }
        let mut answer = oauth2::http::Response::builder()
            .status(response.status())
            .version(response.version());
        for (name, value) in response.headers() {
            answer = answer.header(name, value);
        }
        let mut bytes = Vec::new();
        let mut stream = response.bytes_stream();
        while let Some(chunk) = stream.next().await {
            let chunk = chunk?;
            if bytes.len() + chunk.len() > MAX_ANSWER_BYTES {
                return Err(format!("the answer is over {MAX_ANSWER_BYTES} bytes").into());
            }
            bytes.extend_from_slice(&chunk);
        }
        Ok(answer.body(bytes)?)
    }
}

impl OAuthHttpClient for DpopOAuthHttp {
    fn execute(&self, request: OAuthHttpRequest) -> OAuthHttpClientFuture<'_> {
        Box::pin(async move {
            let OAuthHttpRequest {
                request,
                redirect_policy,
                timeout,
                ..
            } = request;
            let (parts, body) = request.into_parts();
            let token_request = parts.method == oauth2::http::Method::POST
                && parts
                    .headers
                    .get(oauth2::http::header::CONTENT_TYPE)
                    .and_then(|v| v.to_str().ok())
                    .is_some_and(|t| t.starts_with("application/x-www-form-urlencoded"));
            let timeout = timeout.unwrap_or(DEFAULT_TIMEOUT);
            let first = self
                .send(&parts, &body, redirect_policy, timeout, token_request)
                .await?;
            // RFC 9449 §8: a token request refused for want of a nonce is sent once more,
            // with the nonce the refusal carried (kept by `send`).
            let wants_nonce = token_request
                && first.status() == oauth2::http::StatusCode::BAD_REQUEST
                && first.headers().contains_key("DPoP-Nonce")
                && asks_for_nonce(&String::from_utf8_lossy(first.body()));
            if !wants_nonce {
                return Ok(first);
            }
            self.send(&parts, &body, redirect_policy, timeout, token_request)
                .await
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_authorization_server_may_lead_only_where_the_server_itself_is() {
        let ip = |s: &str| s.parse::<IpAddr>().unwrap();
        let public = Rule::for_server("https://mcp.example.com/mcp", false);
        assert!(public.allows(ip("93.184.216.34")));
        for refused in [
            "127.0.0.1",
            "10.0.0.5",
            "169.254.169.254",
            "::1",
            "fe80::1",
            "0.0.0.0",
            "::ffff:127.0.0.1",
        ] {
            assert!(!public.allows(ip(refused)), "{refused}");
        }
        let company = Rule::for_server("https://mcp.example.com/mcp", true);
        assert!(company.allows(ip("10.0.0.5")) && !company.allows(ip("127.0.0.1")));
        assert!(!company.allows(ip("169.254.169.254")));
        let local = Rule::for_server("http://localhost:3000/mcp", false);
        assert!(local.allows(ip("127.0.0.1")) && local.allows(ip("192.168.1.2")));
        assert!(!local.allows(ip("169.254.169.254")));
        assert!(!public.allows_url(&Url::parse("http://127.0.0.1:9/token").unwrap()));
        assert!(public.allows_url(&Url::parse("https://as.example.com/token").unwrap()));
    }
}
