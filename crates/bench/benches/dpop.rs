//! Criterion benchmarks of tokens bound to a key (DPoP, issue 35), side by side with what
//! every request with an access token pays already, in one run:
//!
//!     cargo bench -p gatehouse-bench --bench dpop
//!
//! - `dpop/verify an ES256 access token`: the reference, the signature check of the token
//!   itself (what a resource server does for any JWT access token).
//! - `dpop/make a proof`: the host's cost per request (a fresh ES256 JWT with the key in
//!   its header and the token's hash).
//! - `dpop/check a proof`: the resource server's cost per request on top of the token's
//!   (the proof's signature with the key in its header, its claims, the key's thumbprint,
//!   the replay memory).

use std::hint::black_box;

use criterion::{BatchSize, Criterion, criterion_group, criterion_main};
use gatehouse::connect::auth::dpop::DpopKey;
use gatehouse_http::oauth::dpop::Proofs;
use jsonwebtoken::{Algorithm, DecodingKey, EncodingKey, Header, Validation, jwk::Jwk};
use serde_json::json;

const URL: &str = "https://mcp.example.com/mcp";

fn benches(c: &mut Criterion) {
    // The issuer's key and a token of it, bound to the host's key.
    let issuer = DpopKey::generate().unwrap();
    let host = DpopKey::generate().unwrap();
    let issuer_der = base64_der(&issuer);
    let encoding = EncodingKey::from_ec_der(&issuer_der);
    let jwk = Jwk::from_encoding_key(&encoding, Algorithm::ES256).unwrap();
    let now = jsonwebtoken::get_current_timestamp();
    let claims = json!({"iss": "https://as.example.com", "aud": URL, "sub": "usr-sam",
        "exp": now + 3600, "iat": now, "scope": "mcp:read", "cnf": {"jkt": host.thumbprint()}});
    let mut header = Header::new(Algorithm::ES256);
    header.typ = Some("at+jwt".into());
    let token = jsonwebtoken::encode(&header, &claims, &encoding).unwrap();
    let decoding = DecodingKey::from_jwk(&jwk).unwrap();
    let mut validation = Validation::new(Algorithm::ES256);
    validation.set_audience(&[URL]);

    let mut group = c.benchmark_group("dpop");
    group.bench_function("verify an ES256 access token", |b| {
        b.iter(|| {
            jsonwebtoken::decode::<serde_json::Value>(black_box(&token), &decoding, &validation)
                .unwrap()
        })
    });
    group.bench_function("make a proof", |b| {
        b.iter(|| host.proof("POST", black_box(URL), Some(&token)).unwrap())
    });
    group.bench_function("check a proof", |b| {
        b.iter_batched(
            || {
                (
                    Proofs::default(),
                    host.proof("POST", URL, Some(&token)).unwrap(),
                )
            },
            |(proofs, proof)| {
                proofs
                    .check(&proof, "POST", URL, &token, host.thumbprint(), now)
                    .unwrap()
            },
            BatchSize::SmallInput,
        )
    });
    group.finish();
}

/// The PKCS#8 DER of a key, from its kept form.
fn base64_der(key: &DpopKey) -> Vec<u8> {
    use base64::Engine;
    base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(key.to_kept())
        .unwrap()
}

criterion_group!(dpop, benches);
criterion_main!(dpop);
