//! TLS to the gateway's PostgreSQL, as libpq's `sslmode` and `sslrootcert` name it in
//! the `--state` URL: `disable`, `prefer` (the default, as libpq's: TLS when the server
//! offers it, unverified, else plain), `require` (TLS or no connection, the certificate
//! not verified: encrypted, but not protected from a man in the middle), `verify-ca`
//! (signed by the `sslrootcert` CA) and `verify-full` (that, and issued for the URL's
//! host name). As in libpq, `require` with an `sslrootcert` verifies as `verify-ca`.
//!
//! tokio-postgres knows neither the two verify modes nor `sslrootcert`, so both are taken
//! out of the URL here, and the TLS they ask for is a rustls configuration of our own
//! (`tokio-postgres-rustls` carries it, with SCRAM channel binding); tokio-postgres is
//! only told to want TLS (`require`) or not.

use std::{path::PathBuf, sync::Arc};

use rustls::{
    ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme,
    client::{
        WebPkiServerVerifier,
        danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier},
    },
    crypto::WebPkiSupportedAlgorithms,
    pki_types::{CertificateDer, ServerName, UnixTime, pem::PemObject},
};
use tokio_postgres::config::SslMode as WireMode;
use tokio_postgres_rustls::MakeRustlsConnect;

/// Most bytes of an `sslrootcert` file read: a bundle of CA certificates is far smaller.
const MAX_ROOT_CERT_BYTES: u64 = 4 * 1024 * 1024;

/// libpq's `sslmode`, as the URL gives it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SslMode {
    /// No TLS.
    Disable,
    /// TLS when the server offers it, its certificate not verified; plain otherwise.
    Prefer,
    /// TLS or no connection; the certificate not verified.
    Require,
    /// TLS, the certificate signed by the `sslrootcert` CA.
    VerifyCa,
    /// TLS, the certificate signed by the `sslrootcert` CA and issued for the host name.
    VerifyFull,
}

impl SslMode {
    fn parse(word: &str) -> Result<SslMode, String> {
        Ok(match word {
            "disable" => SslMode::Disable,
            "prefer" => SslMode::Prefer,
            "require" => SslMode::Require,
            "verify-ca" => SslMode::VerifyCa,
            "verify-full" => SslMode::VerifyFull,
            _ => {
                return Err(
                    "sslmode must be disable, prefer, require, verify-ca or verify-full".into(),
                );
            }
        })
    }

    /// Does this mode refuse a connection without TLS?
    pub fn requires_tls(self) -> bool {
        !matches!(self, SslMode::Disable | SslMode::Prefer)
    }
}

/// The TLS a `--state` URL asks for: its mode, and the connector that does it.
#[derive(Clone)]
pub struct Tls {
    /// The mode in force (`require` with an `sslrootcert` is `verify-ca`, as in libpq).
    pub mode: SslMode,
    /// The connector tokio-postgres is given.
    pub connector: MakeRustlsConnect,
}

impl Tls {
    /// What tokio-postgres is told: TLS wanted, tried, or not.
    pub fn wire_mode(&self) -> WireMode {
        match self.mode {
            SslMode::Disable => WireMode::Disable,
            SslMode::Prefer => WireMode::Prefer,
            _ => WireMode::Require,
        }
    }
}

/// Take `sslmode` and `sslrootcert` out of `url`'s query: the URL left for tokio-postgres,
/// and the TLS they ask for (the root certificates read now, so a missing or empty file is
/// an error when `--state` is read, not at the first call).
pub fn split(url: &str) -> Result<(String, Tls), String> {
    let (head, query) = url.split_once('?').unwrap_or((url, ""));
    let mut mode = None;
    let mut root = None;
    let mut kept = Vec::new();
    for raw in query.split('&').filter(|p| !p.is_empty()) {
        // Each pair decoded alone; the others are passed on as written.
        let (key, value) = form_urlencoded::parse(raw.as_bytes())
            .next()
            .unwrap_or_default();
        match &*key {
            "sslmode" => mode = Some(SslMode::parse(&value)?),
            "sslrootcert" => root = Some(value.into_owned()),
            "sslcert" | "sslkey" | "sslpassword" | "sslcrl" | "sslcrldir" => {
                return Err(format!(
                    "{key}: client certificates and revocation lists are not supported \
                     (sslmode and sslrootcert are)"
                ));
            }
            _ => kept.push(raw),
        }
    }
    let rest = if kept.is_empty() {
        head.to_owned()
    } else {
        format!("{head}?{}", kept.join("&"))
    };
    let mode = match (mode.unwrap_or(SslMode::Prefer), &root) {
        (SslMode::Require, Some(_)) => SslMode::VerifyCa,
        (mode, _) => mode,
    };
    let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    let verifier: Arc<dyn ServerCertVerifier> = match (mode, root) {
        (SslMode::VerifyCa | SslMode::VerifyFull, None) => {
            return Err(format!(
                "sslmode={}: name the CA's certificate with sslrootcert=PATH (a PEM file)",
                if mode == SslMode::VerifyCa {
                    "verify-ca"
                } else {
                    "verify-full"
                }
            ));
        }
        (SslMode::VerifyFull, Some(path)) => {
            let roots = Arc::new(roots(&path)?);
            WebPkiServerVerifier::builder_with_provider(roots, provider.clone())
                .build()
                .map_err(|e| format!("sslrootcert={path}: {e}"))?
        }
        (SslMode::VerifyCa, Some(path)) => Arc::new(Verifier {
            roots: Some(roots(&path)?),
            algorithms: provider.signature_verification_algorithms,
        }),
        _ => Arc::new(Verifier {
            roots: None,
            algorithms: provider.signature_verification_algorithms,
        }),
    };
    let config = ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("TLS: {e}"))?
        .dangerous()
        .with_custom_certificate_verifier(verifier)
        .with_no_client_auth();
    Ok((
        rest,
        Tls {
            mode,
            connector: MakeRustlsConnect::new(config),
        },
    ))
}

/// The CA certificates of the PEM file at `path`: at least one, or an error that says why.
fn roots(path: &str) -> Result<RootCertStore, String> {
    if path == "system" {
        return Err(
            "sslrootcert=system (the system's CAs) is not supported: name the CA's PEM file".into(),
        );
    }
    let file = PathBuf::from(path);
    let bad = |why: String| format!("sslrootcert={}: {why}", file.display());
    let size = std::fs::metadata(&file)
        .map_err(|e| bad(format!("cannot read it ({e})")))?
        .len();
    if size > MAX_ROOT_CERT_BYTES {
        return Err(bad(format!("it is over {MAX_ROOT_CERT_BYTES} bytes")));
    }
    let mut store = RootCertStore::empty();
    for cert in CertificateDer::pem_file_iter(&file).map_err(|e| bad(format!("{e}")))? {
        let cert = cert.map_err(|e| bad(format!("not a PEM file of certificates ({e})")))?;
        store
            .add(cert)
            .map_err(|e| bad(format!("a certificate in it is not usable ({e})")))?;
    }
    if store.is_empty() {
        return Err(bad("it holds no certificate".into()));
    }
    Ok(store)
}

/// The handshake's signature checks of a verifier, each by rustls's own function for it.
macro_rules! signature_checks {
    ($($method:ident => $check:path,)*) => {$(
        fn $method(
            &self,
            message: &[u8],
            cert: &CertificateDer<'_>,
            dss: &DigitallySignedStruct,
        ) -> Result<HandshakeSignatureValid, rustls::Error> {
            $check(message, cert, dss, &self.algorithms)
        }
    )*};
}

/// The check of the server's certificate: with `roots` (`verify-ca`), that it chains to
/// one of them, whatever name it was issued for; without (`prefer`, `require`), none. The
/// handshake's signature is checked against the certificate either way, so the session
/// is encrypted to whoever holds its key; without roots nothing says who that is: libpq's
/// meaning of those modes.
#[derive(Debug)]
struct Verifier {
    roots: Option<RootCertStore>,
    algorithms: WebPkiSupportedAlgorithms,
}

impl ServerCertVerifier for Verifier {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        if let Some(roots) = &self.roots {
            let cert = rustls::server::ParsedCertificate::try_from(end_entity)?;
            rustls::client::verify_server_cert_signed_by_trust_anchor(
                &cert,
                roots,
                intermediates,
                now,
                self.algorithms.all,
            )?;
        }
        Ok(ServerCertVerified::assertion())
    }

    signature_checks! {
        verify_tls12_signature => rustls::crypto::verify_tls12_signature,
        verify_tls13_signature => rustls::crypto::verify_tls13_signature,
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.algorithms.supported_schemes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sslmode_and_sslrootcert_are_taken_out_and_the_rest_kept() {
        let (rest, tls) = split("postgres://u@h/db").unwrap();
        assert_eq!(rest, "postgres://u@h/db");
        assert_eq!(tls.mode, SslMode::Prefer, "libpq's default");
        let (rest, tls) = split("postgres://u@h/db?sslmode=require&host=%2Frun&x=1").unwrap();
        assert_eq!(rest, "postgres://u@h/db?host=%2Frun&x=1");
        assert_eq!(tls.mode, SslMode::Require);
        assert_eq!(tls.wire_mode(), WireMode::Require);
        let (_, tls) = split("postgres://u@h/db?sslmode=disable").unwrap();
        assert_eq!(tls.wire_mode(), WireMode::Disable);
    }

    #[test]
    fn a_bad_mode_or_root_certificate_says_why() {
        let err = |url: &str| split(url).err().unwrap();
        assert!(err("postgres://u@h/db?sslmode=verify").contains("verify-full"));
        assert!(err("postgres://u@h/db?sslmode=verify-full").contains("sslrootcert=PATH"));
        assert!(err("postgres://u@h/db?sslmode=verify-ca").contains("sslrootcert=PATH"));
        assert!(
            err("postgres://u@h/db?sslmode=verify-full&sslrootcert=/no/such.pem")
                .contains("cannot read it")
        );
        assert!(err("postgres://u@h/db?sslrootcert=system&sslmode=verify-full").contains("system"));
        assert!(err("postgres://u@h/db?sslcert=/c.pem").contains("client certificates"));
        let dir = tempfile::tempdir().unwrap();
        let empty = dir.path().join("empty.pem");
        std::fs::write(&empty, "no certificate here\n").unwrap();
        let url = format!(
            "postgres://u@h/db?sslmode=verify-full&sslrootcert={}",
            empty.display()
        );
        assert!(err(&url).contains("holds no certificate"), "{}", err(&url));
        // `require` with a root certificate verifies as `verify-ca` (libpq's rule), so the
        // file is read, and must be good.
        let url = format!(
            "postgres://u@h/db?sslmode=require&sslrootcert={}",
            empty.display()
        );
        assert!(err(&url).contains("holds no certificate"));
    }
}
