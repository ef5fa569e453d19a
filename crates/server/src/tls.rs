//! TLS on rustls: the client port (Cassandra's `client_encryption_options`) and the proxy's
//! upstream connections (`proxy.upstream_encryption_options`).
//!
//! Only PEM files, as Cassandra 5.0's `PEMBasedSslContextFactory` reads them: `keystore` is one
//! file with the certificate chain and its (unencrypted) private key, `truststore` a file of CA
//! certificates. It is **not** a JKS/PKCS#12 reader and does not decrypt encrypted private keys:
//! such configurations are refused at start-up with a sentence that says so.
//!
//! [`ServerTls`] holds the acceptor that new connections use; [`watch`] rebuilds it when the
//! files change (checked every `client_encryption_options_reload_interval`) or on SIGHUP.
//! Connections already open keep the certificate they were accepted with. A reload that fails
//! (a half-written file) keeps the previous acceptor and logs why.
//!
//! [`accept`] performs the server side of the handshake: in optional mode the first byte tells
//! a TLS record (a ClientHello starts with content type 22) from a CQL envelope (a version byte
//! of 3 to 5), so one port serves both.

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError, RwLock};
use std::time::{Duration, SystemTime};

use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::WebPkiClientVerifier;
use rustls::{RootCertStore, SupportedProtocolVersion};
use serde::{Deserialize, Serialize};
use tokio::net::TcpStream;
use tokio_util::sync::CancellationToken;

/// The first byte of a TLS handshake record (content type `handshake`).
const TLS_HANDSHAKE_RECORD: u8 = 0x16;

/// Cassandra 5.0's `EncryptionOptions` as its PEM-based SSL context factory takes them; the
/// same shape serves `proxy.upstream_encryption_options` (there `keystore` is the proxy's client
/// certificate and `truststore` the CA bundle the upstream's certificate is checked against).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct EncryptionOptions {
    /// TLS on this connection; on the client port, TLS only unless `optional`.
    pub enabled: bool,
    /// Client port: plain and TLS connections on the same port (a transition setting).
    pub optional: Option<bool>,
    /// PEM file with the certificate chain and its private key.
    pub keystore: Option<PathBuf>,
    /// Accepted only with an unencrypted key (see the module docs).
    pub keystore_password: Option<Secret>,
    /// Cassandra's key, not needed for PEM; accepted and ignored.
    pub keystore_password_file: Option<PathBuf>,
    /// PEM file of CA certificates the peer's certificate must chain to.
    pub truststore: Option<PathBuf>,
    /// Not needed for PEM truststores; accepted and ignored.
    pub truststore_password: Option<Secret>,
    /// Cassandra's key, not needed for PEM; accepted and ignored.
    pub truststore_password_file: Option<PathBuf>,
    /// Client port: `false`, `true` or (Peregrine only) `optional`: ask for a certificate, check
    /// it if sent.
    pub require_client_auth: ClientAuth,
    /// Upstream: check that the upstream's certificate names its IP address.
    pub require_endpoint_verification: bool,
    /// `TLS` (any version rustls speaks: 1.2 and 1.3) or one version (`TLSv1.2`, `TLSv1.3`).
    pub protocol: Option<String>,
    /// The versions allowed; wins over `protocol` when set.
    pub accepted_protocols: Vec<String>,
    /// IANA/JSSE cipher suite names; empty means rustls' defaults.
    pub cipher_suites: Vec<String>,
    /// `PEM` (or unset); the JKS / PKCS12 store types are refused.
    pub store_type: Option<String>,
    /// Java key manager algorithm; meaningless here, accepted and ignored.
    pub algorithm: Option<String>,
    /// Only Cassandra's `PEMBasedSslContextFactory` (with its file-based keys) is accepted.
    pub ssl_context_factory: Option<SslContextFactory>,
}

/// A password: never printed by `Debug`.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Secret(pub String);

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("<redacted>")
    }
}

/// `ssl_context_factory: { class_name: ..., parameters: {...} }`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SslContextFactory {
    pub class_name: String,
    pub parameters: std::collections::BTreeMap<String, String>,
}

/// `require_client_auth`: a boolean as in Cassandra 5.0, or (Peregrine's extension; Cassandra
/// 5.0.9 refuses it) the string `optional`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "RawClientAuth", into = "RawClientAuth")]
pub enum ClientAuth {
    #[default]
    No,
    Required,
    Optional,
}

#[derive(Serialize, Deserialize)]
#[serde(untagged)]
enum RawClientAuth {
    Bool(bool),
    Text(String),
}

impl TryFrom<RawClientAuth> for ClientAuth {
    type Error = String;
    fn try_from(raw: RawClientAuth) -> Result<Self, String> {
        match raw {
            RawClientAuth::Bool(false) => Ok(ClientAuth::No),
            RawClientAuth::Bool(true) => Ok(ClientAuth::Required),
            RawClientAuth::Text(t) => match t.to_ascii_lowercase().as_str() {
                "false" => Ok(ClientAuth::No),
                "true" => Ok(ClientAuth::Required),
                "optional" => Ok(ClientAuth::Optional),
                _ => Err(format!(
                    "`{t}` is not a value of require_client_auth (true, false or optional)"
                )),
            },
        }
    }
}

impl From<ClientAuth> for RawClientAuth {
    fn from(a: ClientAuth) -> Self {
        match a {
            ClientAuth::No => RawClientAuth::Bool(false),
            ClientAuth::Required => RawClientAuth::Bool(true),
            ClientAuth::Optional => RawClientAuth::Text("optional".into()),
        }
    }
}

/// How the client port treats a new connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Policy {
    Plain,
    /// TLS only.
    Encrypted,
    /// Plain or TLS, told apart by the first byte.
    Optional,
}

impl EncryptionOptions {
    /// The client port's policy, as Cassandra 5.0 decides it: `optional: true` serves both
    /// (with or without `enabled`), `enabled` alone TLS only; `optional` left out defaults to
    /// true when `enabled` is false and the `keystore` file exists (Cassandra then listens
    /// "optionally encrypted").
    pub fn policy(&self) -> Policy {
        let optional = self
            .optional
            .unwrap_or_else(|| !self.enabled && self.keystore.as_deref().is_some_and(Path::exists));
        match (self.enabled, optional) {
            (_, true) => Policy::Optional,
            (true, false) => Policy::Encrypted,
            (false, false) => Policy::Plain,
        }
    }

    /// Checks that need no file: store type, context factory, protocol names. `section` names
    /// the config key in the messages.
    pub fn static_problems(&self, section: &str) -> Vec<String> {
        let mut problems = Vec::new();
        if let Some(t) = &self.store_type {
            if !t.eq_ignore_ascii_case("PEM") {
                problems.push(format!(
                    "`{section}.store_type` is `{t}`: only PEM files are supported (convert the keystore with `openssl pkcs12 -nodes`)"
                ));
            }
        }
        if let Some(f) = &self.ssl_context_factory {
            if !f.class_name.ends_with("PEMBasedSslContextFactory") {
                problems.push(format!(
                    "`{section}.ssl_context_factory` is `{}`: only org.apache.cassandra.security.PEMBasedSslContextFactory with `keystore`/`truststore` files is supported",
                    f.class_name
                ));
            } else if !f.parameters.is_empty() {
                problems.push(format!(
                    "`{section}.ssl_context_factory.parameters`: inline PEM material is not supported; give the files in `keystore` and `truststore`"
                ));
            }
        }
        if let Err(e) = self.versions() {
            problems.push(format!("`{section}`: {e}"));
        }
        problems
    }

    /// The TLS versions allowed, from `accepted_protocols`, else `protocol`.
    fn versions(&self) -> Result<Vec<&'static SupportedProtocolVersion>, String> {
        let names: Vec<&str> = if self.accepted_protocols.is_empty() {
            self.protocol.iter().map(String::as_str).collect()
        } else {
            self.accepted_protocols.iter().map(String::as_str).collect()
        };
        let mut versions = Vec::new();
        let mut unsupported = Vec::new();
        for name in &names {
            match name.to_ascii_uppercase().as_str() {
                "TLS" => {
                    versions.push(&rustls::version::TLS13);
                    versions.push(&rustls::version::TLS12);
                }
                "TLSV1.3" => versions.push(&rustls::version::TLS13),
                "TLSV1.2" => versions.push(&rustls::version::TLS12),
                "TLSV1" | "TLSV1.1" | "SSLV3" | "SSLV2HELLO" | "SSL" => unsupported.push(*name),
                _ => {
                    return Err(format!(
                        "`{name}` is not a TLS protocol name (TLS, TLSv1.2, TLSv1.3)"
                    ))
                }
            }
        }
        if names.is_empty() {
            return Ok(vec![&rustls::version::TLS13, &rustls::version::TLS12]);
        }
        if versions.is_empty() {
            return Err(format!(
                "protocols {} are not supported: only TLSv1.2 and TLSv1.3 are",
                unsupported.join(", ")
            ));
        }
        if !unsupported.is_empty() {
            tracing::warn!(
                "TLS protocols {} are not supported and not offered (only TLSv1.2 and TLSv1.3 are)",
                unsupported.join(", ")
            );
        }
        versions.dedup_by_key(|v| v.version);
        Ok(versions)
    }

    /// aws-lc-rs with the cipher suites narrowed to `cipher_suites`.
    fn provider(&self) -> Result<Arc<CryptoProvider>, String> {
        let mut provider = rustls::crypto::aws_lc_rs::default_provider();
        if !self.cipher_suites.is_empty() {
            let wanted = |s: &rustls::SupportedCipherSuite| {
                let name = format!("{:?}", s.suite());
                // rustls writes TLS 1.3 suites `TLS13_...`; IANA and Java write `TLS_...`.
                let iana = name
                    .strip_prefix("TLS13_")
                    .map_or_else(|| name.clone(), |rest| format!("TLS_{rest}"));
                self.cipher_suites.iter().any(|c| *c == name || *c == iana)
            };
            provider.cipher_suites.retain(|s| wanted(s));
            if provider.cipher_suites.is_empty() {
                return Err(format!(
                    "none of the cipher_suites ({}) is supported; supported are the TLS 1.3 suites and the ECDHE AES-GCM / CHACHA20 suites of TLS 1.2",
                    self.cipher_suites.join(", ")
                ));
            }
        }
        Ok(Arc::new(provider))
    }

    /// The client port's rustls configuration, reading the files now.
    pub fn server_config(&self) -> Result<Arc<rustls::ServerConfig>, String> {
        let keystore = self.keystore.as_deref().ok_or(
            "`keystore` (a PEM file with the certificate chain and private key) is required for TLS",
        )?;
        let (certs, key) = read_keystore(keystore)?;
        let provider = self.provider()?;
        let builder = rustls::ServerConfig::builder_with_provider(provider.clone())
            .with_protocol_versions(&self.versions()?)
            .map_err(|e| format!("TLS settings: {e}"))?;
        let builder = match self.require_client_auth {
            ClientAuth::No => builder.with_no_client_auth(),
            auth => {
                let truststore = self.truststore.as_deref().ok_or(
                    "`truststore` (a PEM file of CA certificates) is required with require_client_auth",
                )?;
                let roots = read_truststore(truststore)?;
                let verifier =
                    WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider);
                let verifier = if auth == ClientAuth::Optional {
                    verifier.allow_unauthenticated()
                } else {
                    verifier
                };
                builder.with_client_cert_verifier(
                    verifier
                        .build()
                        .map_err(|e| format!("`truststore` {}: {e}", truststore.display()))?,
                )
            }
        };
        let config = builder
            .with_single_cert(certs, key)
            .map_err(|e| format!("`keystore` {}: {e}", keystore.display()))?;
        Ok(Arc::new(config))
    }

    /// The proxy's rustls client configuration for its upstream connections.
    pub fn client_config(&self) -> Result<Arc<rustls::ClientConfig>, String> {
        let truststore = self.truststore.as_deref().ok_or(
            "`truststore` (a PEM file of the CA certificates the upstream's certificate chains to) is required for TLS to the upstream",
        )?;
        let roots = Arc::new(read_truststore(truststore)?);
        let provider = self.provider()?;
        let builder = rustls::ClientConfig::builder_with_provider(provider.clone())
            .with_protocol_versions(&self.versions()?)
            .map_err(|e| format!("TLS settings: {e}"))?;
        let builder = if self.require_endpoint_verification {
            builder.with_root_certificates(roots)
        } else {
            let verifier =
                rustls::client::WebPkiServerVerifier::builder_with_provider(roots, provider)
                    .build()
                    .map_err(|e| format!("`truststore` {}: {e}", truststore.display()))?;
            builder
                .dangerous()
                .with_custom_certificate_verifier(Arc::new(ChainOnly(verifier)))
        };
        let config = match self.keystore.as_deref() {
            Some(keystore) => {
                let (certs, key) = read_keystore(keystore)?;
                builder
                    .with_client_auth_cert(certs, key)
                    .map_err(|e| format!("`keystore` {}: {e}", keystore.display()))?
            }
            None => builder.with_no_client_auth(),
        };
        Ok(Arc::new(config))
    }

    /// Modification stamps of the files, to notice a change.
    fn stamp(&self) -> Vec<Option<(SystemTime, u64)>> {
        [&self.keystore, &self.truststore]
            .into_iter()
            .map(|p| {
                let meta = std::fs::metadata(p.as_ref()?).ok()?;
                Some((meta.modified().ok()?, meta.len()))
            })
            .collect()
    }
}

/// Certificate chain and private key from one PEM file.
fn read_keystore(
    path: &Path,
) -> Result<(Vec<CertificateDer<'static>>, PrivateKeyDer<'static>), String> {
    let bytes = std::fs::read(path)
        .map_err(|e| format!("cannot read `keystore` {}: {e}", path.display()))?;
    let text = String::from_utf8_lossy(&bytes);
    if text.contains("ENCRYPTED PRIVATE KEY") || text.contains("Proc-Type: 4,ENCRYPTED") {
        return Err(format!(
            "`keystore` {} holds an encrypted private key, which is not supported: store the key unencrypted (e.g. `openssl pkey -in key.pem -out plain.pem`) in a file only the server can read",
            path.display()
        ));
    }
    let certs = CertificateDer::pem_slice_iter(&bytes)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| format!("`keystore` {} is not valid PEM: {e}", path.display()))?;
    if certs.is_empty() {
        return Err(format!(
            "`keystore` {} holds no CERTIFICATE block",
            path.display()
        ));
    }
    let key = PrivateKeyDer::from_pem_slice(&bytes).map_err(|e| {
        format!(
            "`keystore` {} holds no usable private key: {e}",
            path.display()
        )
    })?;
    Ok((certs, key))
}

/// CA certificates from one PEM file.
fn read_truststore(path: &Path) -> Result<RootCertStore, String> {
    let bytes = std::fs::read(path)
        .map_err(|e| format!("cannot read `truststore` {}: {e}", path.display()))?;
    let mut roots = RootCertStore::empty();
    for cert in CertificateDer::pem_slice_iter(&bytes) {
        let cert =
            cert.map_err(|e| format!("`truststore` {} is not valid PEM: {e}", path.display()))?;
        roots
            .add(cert)
            .map_err(|e| format!("`truststore` {}: {e}", path.display()))?;
    }
    if roots.is_empty() {
        return Err(format!(
            "`truststore` {} holds no CERTIFICATE block",
            path.display()
        ));
    }
    Ok(roots)
}

/// Checks the upstream's chain against the truststore but not the name in it
/// (`require_endpoint_verification: false`, Cassandra's default).
#[derive(Debug)]
struct ChainOnly(Arc<rustls::client::WebPkiServerVerifier>);

impl rustls::client::danger::ServerCertVerifier for ChainOnly {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &rustls::pki_types::ServerName<'_>,
        ocsp: &[u8],
        now: rustls::pki_types::UnixTime,
    ) -> Result<rustls::client::danger::ServerCertVerified, rustls::Error> {
        match self
            .0
            .verify_server_cert(end_entity, intermediates, server_name, ocsp, now)
        {
            Err(rustls::Error::InvalidCertificate(
                rustls::CertificateError::NotValidForName
                | rustls::CertificateError::NotValidForNameContext { .. },
            )) => Ok(rustls::client::danger::ServerCertVerified::assertion()),
            other => other,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.0.supported_verify_schemes()
    }
}

/// The client port's TLS state: the acceptor for new connections, swapped on reload.
pub struct ServerTls {
    options: EncryptionOptions,
    policy: Policy,
    current: RwLock<tokio_rustls::TlsAcceptor>,
    stamp: Mutex<Vec<Option<(SystemTime, u64)>>>,
}

impl ServerTls {
    /// `None` when the client port is plain.
    pub fn load(options: &EncryptionOptions) -> Result<Option<Arc<ServerTls>>, String> {
        let policy = options.policy();
        if policy == Policy::Plain {
            return Ok(None);
        }
        let stamp = options.stamp();
        let config = options.server_config()?;
        Ok(Some(Arc::new(ServerTls {
            options: options.clone(),
            policy,
            current: RwLock::new(config.into()),
            stamp: Mutex::new(stamp),
        })))
    }

    fn acceptor(&self) -> tokio_rustls::TlsAcceptor {
        self.current
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Re-reads the files; on failure keeps the current certificate. True if it changed.
    pub fn reload(&self, why: &str) -> bool {
        let stamp = self.options.stamp();
        match self.options.server_config() {
            Ok(config) => {
                *self.current.write().unwrap_or_else(PoisonError::into_inner) = config.into();
                *self.stamp.lock().unwrap_or_else(PoisonError::into_inner) = stamp;
                tracing::info!("client_encryption_options: certificates reloaded ({why})");
                true
            }
            Err(e) => {
                tracing::error!(
                    "client_encryption_options: reload ({why}) failed, keeping the previous certificates: {e}"
                );
                false
            }
        }
    }

    /// Reloads when a file's modification time or size changed since the last load.
    fn reload_if_changed(&self) {
        let now = self.options.stamp();
        let changed = *self.stamp.lock().unwrap_or_else(PoisonError::into_inner) != now;
        if changed && !self.reload("the files changed") {
            // Do not retry a broken file every tick; wait for the next change.
            *self.stamp.lock().unwrap_or_else(PoisonError::into_inner) = now;
        }
    }
}

/// Reloads `tls` when its files change (checked every `interval`; zero turns the check off)
/// and on SIGHUP, until `shutdown`.
pub(crate) async fn watch(tls: Arc<ServerTls>, interval: Duration, shutdown: CancellationToken) {
    let mut hangup = hangup_signal();
    let mut tick = (!interval.is_zero()).then(|| {
        let mut t = tokio::time::interval(interval);
        t.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        t
    });
    loop {
        tokio::select! {
            _ = shutdown.cancelled() => return,
            _ = async { match tick.as_mut() { Some(t) => { t.tick().await; } None => std::future::pending().await } } => {
                tls.reload_if_changed();
            }
            got = async { match hangup.as_mut() { Some(h) => h.recv().await, None => std::future::pending().await } } => {
                if got.is_none() {
                    hangup = None;
                } else {
                    tls.reload("SIGHUP");
                }
            }
        }
    }
}

fn hangup_signal() -> Option<tokio::signal::unix::Signal> {
    use tokio::signal::unix::{signal, SignalKind};
    match signal(SignalKind::hangup()) {
        Ok(s) => Some(s),
        Err(e) => {
            tracing::warn!(
                "cannot listen for SIGHUP ({e}): certificates reload only when their files change"
            );
            None
        }
    }
}

/// An accepted connection after the TLS decision.
pub(crate) enum Transport {
    Plain(TcpStream),
    Tls(Box<tokio_rustls::server::TlsStream<TcpStream>>),
}

/// Why a connection ended before its first CQL byte.
#[derive(Debug, thiserror::Error)]
pub(crate) enum AcceptError {
    #[error("closed before sending anything")]
    Closed,
    #[error("TLS handshake failed: {0}")]
    Handshake(String),
}

/// The server side of the handshake under `tls`'s policy (plain when `tls` is `None`).
/// The caller bounds it with `handshake_timeout`.
pub(crate) async fn accept(
    socket: TcpStream,
    tls: Option<&ServerTls>,
) -> Result<Transport, AcceptError> {
    let Some(tls) = tls else {
        return Ok(Transport::Plain(socket));
    };
    if tls.policy == Policy::Optional {
        let mut first = [0u8; 1];
        match socket.peek(&mut first).await {
            Ok(0) | Err(_) => return Err(AcceptError::Closed),
            Ok(_) if first[0] != TLS_HANDSHAKE_RECORD => return Ok(Transport::Plain(socket)),
            Ok(_) => {}
        }
    }
    match tls.acceptor().accept(socket).await {
        Ok(stream) => Ok(Transport::Tls(Box::new(stream))),
        Err(e) => Err(AcceptError::Handshake(describe(&e))),
    }
}

/// A handshake failure as a sentence an operator can act on.
fn describe(e: &std::io::Error) -> String {
    let Some(inner) = e.get_ref().and_then(|i| i.downcast_ref::<rustls::Error>()) else {
        return e.to_string();
    };
    match inner {
        rustls::Error::InvalidMessage(_) => format!(
            "the client did not speak TLS ({inner}); is it a plain CQL client on a TLS port?"
        ),
        rustls::Error::NoCertificatesPresented => {
            "the client sent no certificate and require_client_auth is true".into()
        }
        rustls::Error::InvalidCertificate(c) => {
            format!("the client's certificate was refused: {c:?}")
        }
        other => other.to_string(),
    }
}

/// A TLS version as Java names it (`TLSv1.3`), for `system_views.clients.ssl_protocol`.
pub fn protocol_name(v: rustls::ProtocolVersion) -> String {
    match v {
        rustls::ProtocolVersion::TLSv1_2 => "TLSv1.2".into(),
        rustls::ProtocolVersion::TLSv1_3 => "TLSv1.3".into(),
        other => format!("{other:?}"),
    }
}

/// A cipher suite by its IANA name as Java reports it (`TLS_AES_256_GCM_SHA384`).
pub fn cipher_suite_name(c: rustls::SupportedCipherSuite) -> String {
    let name = c
        .suite()
        .as_str()
        .map(str::to_string)
        .unwrap_or_else(|| format!("{:?}", c.suite()));
    // rustls marks TLS 1.3 suites `TLS13_`; their IANA (and Java) names start `TLS_`.
    match name.strip_prefix("TLS13_") {
        Some(rest) => format!("TLS_{rest}"),
        None => name,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn require_client_auth_takes_booleans_and_optional() {
        let parse =
            |y: &str| serde_yaml::from_str::<EncryptionOptions>(y).map(|o| o.require_client_auth);
        assert_eq!(
            parse("require_client_auth: true").unwrap(),
            ClientAuth::Required
        );
        assert_eq!(
            parse("require_client_auth: 'false'").unwrap(),
            ClientAuth::No
        );
        assert_eq!(
            parse("require_client_auth: optional").unwrap(),
            ClientAuth::Optional
        );
        assert!(parse("require_client_auth: maybe").is_err());
    }

    #[test]
    fn policy_follows_enabled_and_optional() {
        let o = |enabled, optional| EncryptionOptions {
            enabled,
            optional,
            ..EncryptionOptions::default()
        };
        assert_eq!(o(false, None).policy(), Policy::Plain);
        assert_eq!(o(true, None).policy(), Policy::Encrypted);
        assert_eq!(o(true, Some(false)).policy(), Policy::Encrypted);
        assert_eq!(o(true, Some(true)).policy(), Policy::Optional);
        assert_eq!(o(false, Some(true)).policy(), Policy::Optional);
        // A keystore that exists makes a disabled port optional unless `optional` says no.
        let with_keystore = |optional, path: &str| EncryptionOptions {
            keystore: Some(PathBuf::from(path)),
            ..o(false, optional)
        };
        let here = std::env::current_exe().unwrap();
        let here = here.to_str().unwrap();
        assert_eq!(with_keystore(None, here).policy(), Policy::Optional);
        assert_eq!(with_keystore(Some(false), here).policy(), Policy::Plain);
        assert_eq!(
            with_keystore(None, "/nonexistent/k.pem").policy(),
            Policy::Plain
        );
    }

    #[test]
    fn protocols_and_store_types_outside_rustls_are_refused() {
        let o = |y: &str| serde_yaml::from_str::<EncryptionOptions>(y).unwrap();
        assert!(o("protocol: TLS").static_problems("x").is_empty());
        assert!(o("accepted_protocols: [TLSv1.2, TLSv1.3]")
            .static_problems("x")
            .is_empty());
        assert_eq!(
            o("accepted_protocols: [TLSv1.1, TLSv1.3]")
                .versions()
                .unwrap()
                .len(),
            1
        );
        let p = o("protocol: TLSv1.1").static_problems("client_encryption_options");
        assert!(p[0].contains("only TLSv1.2 and TLSv1.3"), "{p:?}");
        let p = o("protocol: QUIC").static_problems("x");
        assert!(p[0].contains("not a TLS protocol name"), "{p:?}");
        let p = o("store_type: JKS").static_problems("x");
        assert!(p[0].contains("only PEM"), "{p:?}");
        let p = o("ssl_context_factory: {class_name: org.apache.cassandra.security.DefaultSslContextFactory}")
            .static_problems("x");
        assert!(p[0].contains("PEMBasedSslContextFactory"), "{p:?}");
    }

    #[test]
    fn cipher_suites_take_iana_names_and_refuse_when_none_is_known() {
        let o = |y: &str| serde_yaml::from_str::<EncryptionOptions>(y).unwrap();
        let p = o("cipher_suites: [TLS_AES_128_GCM_SHA256, TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384]")
            .provider()
            .unwrap();
        assert_eq!(p.cipher_suites.len(), 2);
        let e = o("cipher_suites: [TLS_RSA_WITH_AES_128_CBC_SHA]")
            .provider()
            .unwrap_err();
        assert!(e.contains("none of the cipher_suites"), "{e}");
    }

    #[test]
    fn passwords_never_show_in_debug() {
        let o: EncryptionOptions = serde_yaml::from_str("keystore_password: hunter2").unwrap();
        assert!(!format!("{o:?}").contains("hunter2"));
    }

    #[test]
    fn encrypted_and_missing_keys_are_refused_with_a_sentence() {
        let dir = std::env::temp_dir().join(format!("peregrine-tls-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let enc = dir.join("enc.pem");
        std::fs::write(
            &enc,
            "-----BEGIN ENCRYPTED PRIVATE KEY-----\nAAAA\n-----END ENCRYPTED PRIVATE KEY-----\n",
        )
        .unwrap();
        let e = read_keystore(&enc).unwrap_err();
        assert!(e.contains("encrypted private key"), "{e}");
        let e = read_keystore(&dir.join("missing.pem")).unwrap_err();
        assert!(e.contains("cannot read `keystore`"), "{e}");
        let empty = dir.join("empty.pem");
        std::fs::write(&empty, "nothing here\n").unwrap();
        let e = read_truststore(&empty).unwrap_err();
        assert!(e.contains("no CERTIFICATE"), "{e}");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
