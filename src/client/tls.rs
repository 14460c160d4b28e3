//! TLS towards one target: which roots are trusted, the client certificate, the name checked,
//! and certificate errors a reader can act on. Errors name files, never their contents.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use rustls::{CertificateError, DigitallySignedStruct, RootCertStore, SignatureScheme};

use super::setup_error::ClientError;

/// A target's TLS settings; paths are already resolved (relative ones against the plan's
/// directory by the runner).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TlsSettings {
    /// PEM file of CA certificates trusted besides the system and bundled roots.
    pub ca_cert: Option<PathBuf>,
    /// Accept any server certificate (still encrypted, no longer authenticated).
    pub insecure_skip_verify: bool,
    /// PEM client certificate (chain) for servers that require one.
    pub client_cert: Option<PathBuf>,
    /// PEM private key of `client_cert`.
    pub client_key: Option<PathBuf>,
    /// Name checked against the certificate (and sent as SNI) instead of the URL's host.
    pub server_name: Option<String>,
}

/// Where Linux distributions and macOS/BSD keep the system's CA bundle; the first one present
/// is read. `SSL_CERT_FILE` comes first, as OpenSSL does.
const SYSTEM_BUNDLES: &[&str] = &[
    "/etc/ssl/certs/ca-certificates.crt",
    "/etc/pki/tls/certs/ca-bundle.crt",
    "/etc/ssl/ca-bundle.pem",
    "/etc/pki/ca-trust/extracted/pem/tls-ca-bundle.pem",
    "/etc/ssl/cert.pem",
];

impl TlsSettings {
    /// The rustls configuration for these settings, offering `alpn` protocols.
    pub fn client_config(&self, alpn: &[&[u8]]) -> Result<rustls::ClientConfig, ClientError> {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let builder = rustls::ClientConfig::builder_with_provider(provider.clone())
            .with_safe_default_protocol_versions()
            .map_err(|e| ClientError(format!("cannot set up TLS: {e}")))?;
        let builder = if self.insecure_skip_verify {
            builder
                .dangerous()
                .with_custom_certificate_verifier(Arc::new(SkipVerify(provider)))
        } else {
            builder.with_root_certificates(self.roots()?)
        };
        let mut config = match (&self.client_cert, &self.client_key) {
            (Some(cert), Some(key)) => builder
                .with_client_auth_cert(read_certs(cert, "tls.client_cert")?, read_key(key)?)
                .map_err(|e| {
                    ClientError(format!(
                        "tls.client_key {} does not match tls.client_cert {}: {e}",
                        key.display(),
                        cert.display()
                    ))
                })?,
            (None, None) => builder.with_no_client_auth(),
            _ => {
                return Err(ClientError(
                    "tls.client_cert and tls.client_key go together; set both".into(),
                ));
            }
        };
        config.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
        Ok(config)
    }

    /// The name checked against the certificate: `server_name`, else the URL's host.
    pub fn server_name(&self, host: &str) -> Result<ServerName<'static>, ClientError> {
        let name = self.server_name.as_deref().unwrap_or(host);
        ServerName::try_from(name.to_string())
            .map_err(|e| ClientError(format!("{name:?} is not a TLS server name: {e}")))
    }

    /// The bundled web roots, the system's bundle and `ca_cert`.
    fn roots(&self) -> Result<RootCertStore, ClientError> {
        let mut roots = RootCertStore {
            roots: webpki_roots::TLS_SERVER_ROOTS.to_vec(),
        };
        if let Some(bundle) = system_bundle() {
            // A system bundle is best effort: a certificate rustls rejects is skipped.
            if let Ok(certs) = CertificateDer::pem_file_iter(&bundle) {
                roots.add_parsable_certificates(certs.flatten());
            }
        }
        if let Some(path) = &self.ca_cert {
            let certs = read_certs(path, "tls.ca_cert")?;
            let (added, _) = roots.add_parsable_certificates(certs);
            if added == 0 {
                return Err(ClientError(format!(
                    "tls.ca_cert {}: no usable CA certificate in it",
                    path.display()
                )));
            }
        }
        Ok(roots)
    }
}

fn system_bundle() -> Option<PathBuf> {
    let from_env = std::env::var_os("SSL_CERT_FILE").map(PathBuf::from);
    from_env
        .into_iter()
        .chain(SYSTEM_BUNDLES.iter().map(PathBuf::from))
        .find(|p| p.is_file())
}

fn read_certs(path: &Path, key: &str) -> Result<Vec<CertificateDer<'static>>, ClientError> {
    let certs = CertificateDer::pem_file_iter(path)
        .and_then(|iter| iter.collect::<Result<Vec<_>, _>>())
        .map_err(|e| ClientError(format!("{key} {}: {}", path.display(), pem_problem(&e))))?;
    if certs.is_empty() {
        return Err(ClientError(format!(
            "{key} {}: no PEM certificate in it",
            path.display()
        )));
    }
    Ok(certs)
}

/// The key is read here and only here; its problems are described without quoting it.
fn read_key(path: &Path) -> Result<PrivateKeyDer<'static>, ClientError> {
    PrivateKeyDer::from_pem_file(path).map_err(|e| {
        ClientError(format!(
            "tls.client_key {}: {}",
            path.display(),
            pem_problem(&e)
        ))
    })
}

/// A PEM error in words that never include the file's bytes.
fn pem_problem(e: &rustls::pki_types::pem::Error) -> String {
    use rustls::pki_types::pem::Error;
    match e {
        Error::Io(io) => io.to_string(),
        Error::NoItemsFound => "no PEM item of the expected kind in it".into(),
        _ => "not a valid PEM file".into(),
    }
}

/// A handshake failure as a sentence with the fix, for the connect error.
pub(crate) fn describe_handshake_error(err: &std::io::Error, host: &str) -> String {
    let Some(tls) = err
        .get_ref()
        .and_then(|inner| inner.downcast_ref::<rustls::Error>())
    else {
        return format!("TLS handshake with {host}: {err}");
    };
    match tls {
        rustls::Error::InvalidCertificate(cert) => {
            let why = match cert {
                CertificateError::UnknownIssuer => "unknown issuer",
                CertificateError::Expired | CertificateError::ExpiredContext { .. } => "expired",
                CertificateError::NotValidYet | CertificateError::NotValidYetContext { .. } => {
                    "not valid yet"
                }
                CertificateError::NotValidForName
                | CertificateError::NotValidForNameContext { .. } => {
                    return format!(
                        "certificate for {host} not valid for that name; set tls.server_name to \
                         a name the certificate holds"
                    );
                }
                CertificateError::BadSignature => "bad signature",
                _ => "rejected",
            };
            format!(
                "certificate for {host} not trusted: {why}; set tls.ca_cert to the CA that \
                 signed it (or tls.insecure_skip_verify: true to skip the check)"
            )
        }
        rustls::Error::AlertReceived(rustls::AlertDescription::NoApplicationProtocol) => format!(
            "TLS handshake with {host}: the server speaks none of the offered protocols (ALPN); \
             if `http: \"2\"` is set, it may not speak HTTP/2: set `http: \"1.1\"`"
        ),
        rustls::Error::AlertReceived(alert) => format!(
            "TLS handshake with {host}: the server refused it ({alert:?}); if it requires a \
             client certificate, set tls.client_cert and tls.client_key"
        ),
        other => format!("TLS handshake with {host}: {other}"),
    }
}

/// After a TLS 1.3 handshake a server that wants a client certificate can only say so in
/// HTTP (nginx: `400 No required SSL certificate was sent`); the fix, when that is the case.
pub(crate) fn client_certificate_hint(status: u16, body: &str) -> &'static str {
    let lower = body.to_ascii_lowercase();
    let asks = matches!(status, 400 | 403 | 495 | 496)
        && (lower.contains("ssl certificate") || lower.contains("client certificate"));
    if asks {
        "; the server requires a client certificate: set tls.client_cert and tls.client_key"
    } else {
        ""
    }
}

/// `insecure_skip_verify`: any certificate is accepted; signatures are still checked so the
/// handshake itself is sound.
#[derive(Debug)]
struct SkipVerify(Arc<CryptoProvider>);

impl ServerCertVerifier for SkipVerify {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn missing_and_unpaired_files_are_clear_errors() {
        let settings = TlsSettings {
            ca_cert: Some("/nonexistent/ca.pem".into()),
            ..Default::default()
        };
        let err = settings.client_config(&[]).expect_err("missing file");
        assert!(err.0.contains("tls.ca_cert /nonexistent/ca.pem"), "{err}");
        let settings = TlsSettings {
            client_cert: Some("/nonexistent/c.pem".into()),
            ..Default::default()
        };
        let err = settings.client_config(&[]).expect_err("cert without key");
        assert!(err.0.contains("set both"), "{err}");
    }

    #[test]
    fn a_key_file_that_is_not_pem_is_described_not_quoted() {
        let dir = std::env::temp_dir().join(format!("servebench-tls-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("temp dir");
        let key = dir.join("key.pem");
        std::fs::write(&key, "TOP-SECRET-KEY-MATERIAL").expect("write");
        let err = read_key(&key).expect_err("not PEM");
        assert!(!err.0.contains("TOP-SECRET"), "{err}");
        assert!(err.0.contains("tls.client_key"), "{err}");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_missing_client_certificate_gets_a_hint_only_when_asked_for() {
        let body = "<html><head><title>400 No required SSL certificate was sent</title>";
        assert!(client_certificate_hint(400, body).contains("tls.client_cert"));
        assert_eq!(client_certificate_hint(400, "bad request"), "");
        assert_eq!(client_certificate_hint(500, body), "");
    }

    #[test]
    fn unknown_issuer_names_the_fix() {
        let err = std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            rustls::Error::InvalidCertificate(CertificateError::UnknownIssuer),
        );
        let text = describe_handshake_error(&err, "127.0.0.1");
        assert!(
            text.starts_with(
                "certificate for 127.0.0.1 not trusted: unknown issuer; set tls.ca_cert"
            ),
            "{text}"
        );
    }
}
