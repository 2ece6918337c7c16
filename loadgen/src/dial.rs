//! Connecting to a server: `ws://`, or `wss://` trusting the web PKI
//! (Mozilla's roots, compiled in) and, with `--ca-file`, a private CA.

use std::path::Path;
use std::sync::Arc;

use lockgate_fanout::seq::{EPOCH_HEADER, SUBPROTOCOL};
use rustls::pki_types::CertificateDer;
use rustls::pki_types::pem::PemObject;
use tokio_lockgate::http::Uri;
use tokio_lockgate::lockgate::client::ClientRequestBuilder;
use tokio_lockgate::lockgate::error::TlsError;
use tokio_lockgate::lockgate::handshake::IntoClientRequest;
use tokio_lockgate::lockgate::handshake::client::Response;
use tokio_lockgate::{ClientOptions, Connector, MaybeTlsStream, WebSocketStream};

/// A client connection, plain or TLS.
pub(crate) type Ws = WebSocketStream<MaybeTlsStream<tokio::net::TcpStream>>;

/// How every connection of the run is made.
#[derive(Debug, Clone, Default)]
pub(crate) struct Dialer {
    /// `None`: tokio-lockgate's default, the web PKI roots.
    tls: Option<Connector>,
    /// Whether `--ca-file` was given, for the hint on a refused certificate.
    ca_file: bool,
}

impl Dialer {
    /// Trusts the CA certificates in the PEM file `ca_file` (if any) in
    /// addition to the web PKI roots.
    ///
    /// # Errors
    ///
    /// The file cannot be read, holds no certificate, or one that is not
    /// a usable trust anchor; the message names the file.
    pub(crate) fn new(ca_file: Option<&Path>) -> Result<Self, String> {
        let Some(path) = ca_file else {
            return Ok(Self::default());
        };
        let bad = |what: String| format!("--ca-file {}: {what}", path.display());
        let mut roots = rustls::RootCertStore::empty();
        roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
        let web_pki = roots.len();
        let certs = CertificateDer::pem_file_iter(path).map_err(|e| bad(pem_error(e)))?;
        for (i, cert) in certs.enumerate() {
            let cert = cert.map_err(|e| bad(pem_error(e)))?;
            roots
                .add(cert)
                .map_err(|e| bad(format!("certificate {}: {e}", i + 1)))?;
        }
        if roots.len() == web_pki {
            return Err(bad(
                "no certificate in it (expected PEM: -----BEGIN CERTIFICATE-----)".into(),
            ));
        }
        // The library's defaults (ALPN http/1.1, the crypto provider).
        let config = tokio_lockgate::lockgate::dial::client_config(roots)
            .map_err(|e| format!("TLS: {e}"))?;
        Ok(Self {
            tls: Some(Connector::Rustls(Arc::new(config))),
            ca_file: true,
        })
    }

    /// Connects to `url` and opens the WebSocket.
    ///
    /// # Errors
    ///
    /// The library's error, as displayed, with a hint when the server's
    /// certificate was refused.
    pub(crate) async fn connect(&self, url: &str) -> Result<Ws, String> {
        self.dial(url)
            .await
            .map(|(ws, _)| ws)
            .map_err(|err| self.describe(&err))
    }

    /// Connects to `url` offering the `lockgate.seq.v1` subprotocol;
    /// returns the connection and the epoch of the node's history (`None`
    /// when the 101 carries no `Lockgate-Epoch`).
    ///
    /// # Errors
    ///
    /// The library's error, for the caller to tell a node that is gone
    /// from one that refuses (see [`Self::describe`]).
    pub(crate) async fn connect_seq(
        &self,
        url: &str,
    ) -> Result<(Ws, Option<String>), tokio_lockgate::Error> {
        let uri: Uri = url
            .parse()
            .map_err(|e: tokio_lockgate::http::uri::InvalidUri| {
                tokio_lockgate::Error::HttpFormat(e.into())
            })?;
        let request = ClientRequestBuilder::new(uri).with_sub_protocol(SUBPROTOCOL);
        let (ws, response) = self.dial(request).await?;
        let epoch = response
            .headers()
            .get(EPOCH_HEADER)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        Ok((ws, epoch))
    }

    async fn dial(
        &self,
        request: impl IntoClientRequest + Unpin,
    ) -> tokio_lockgate::Result<(Ws, Response)> {
        match &self.tls {
            Some(connector) => {
                let options = ClientOptions::new().tls(connector.clone());
                tokio_lockgate::connect_async_with(request, options).await
            }
            None => tokio_lockgate::connect_async(request).await,
        }
    }

    /// `err` as displayed, with a hint when the server's certificate was
    /// refused.
    pub(crate) fn describe(&self, err: &tokio_lockgate::Error) -> String {
        let mut message = err.to_string();
        if certificate_refused(err) {
            message += if self.ca_file {
                " (the server's certificate is not signed by a CA of --ca-file or of the web PKI)"
            } else {
                " (for a server whose certificate comes from a private CA, pass that CA's \
                 certificate with --ca-file PATH)"
            };
        }
        message
    }
}

fn pem_error(error: rustls::pki_types::pem::Error) -> String {
    match error {
        rustls::pki_types::pem::Error::Io(e) => e.to_string(),
        other => format!("not a PEM file: {other}"),
    }
}

/// Whether `err` is rustls refusing the server's certificate.
fn certificate_refused(err: &tokio_lockgate::Error) -> bool {
    matches!(
        err,
        tokio_lockgate::Error::Tls(TlsError::Rustls(tls))
            if matches!(**tls, rustls::Error::InvalidCertificate(_))
    )
}
