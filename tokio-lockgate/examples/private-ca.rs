//! A `wss://` client that trusts a private certificate authority loaded
//! from a PEM file, and nothing else.
//!
//! ```text
//! cargo run -p tokio-lockgate --features rustls --example private-ca
//! cargo run -p tokio-lockgate --features rustls --example private-ca -- ca.pem wss://internal.example:8443/feed
//! ```
//!
//! Without arguments it makes everything it needs, so it runs by itself: a
//! CA (with rcgen), written as `ca.pem` to a directory of its own under the
//! system's temporary directory; a `wss://` echo server on a free port of
//! 127.0.0.1 whose certificate that CA signed; then the client, which reads
//! the CA back from the file and connects. With a PEM file and a URL it
//! connects there instead, trusting the certificates in the file.
//!
//! Why a private CA: services inside a company or a cluster often have
//! certificates from their own CA, which no public root store holds. The
//! roots go in a rustls `RootCertStore`, `lockgate::dial::client_config`
//! makes the client configuration (ALPN `http/1.1`, the crypto provider
//! chosen as lockgate does), and `Connector::Rustls` hands it to the dial.
//! To trust the public web PKI as well, add its roots to the same store
//! (the `rustls-tls-webpki-roots` feature's, say).

use std::error::Error;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use tokio::net::TcpListener;
use tokio_lockgate::lockgate::dial::client_config;
use tokio_lockgate::lockgate::dial::rustls::RootCertStore;
use tokio_lockgate::lockgate::dial::rustls::pki_types::CertificateDer;
use tokio_lockgate::lockgate::dial::rustls::pki_types::pem::PemObject;
use tokio_lockgate::{ClientOptions, Connector, Message, accept_async, connect_async_with};
use tokio_rustls::TlsAcceptor;
use tokio_rustls::rustls::ServerConfig;
use tokio_rustls::rustls::pki_types::{PrivateKeyDer, PrivatePkcs8KeyDer};

/// Every certificate of the PEM file at `path`, as trust anchors.
fn load_roots(path: &Path) -> Result<RootCertStore, Box<dyn Error>> {
    let mut roots = RootCertStore::empty();
    let certificates =
        CertificateDer::pem_file_iter(path).map_err(|e| format!("{}: {e}", path.display()))?;
    for certificate in certificates {
        let certificate = certificate.map_err(|e| format!("{}: {e}", path.display()))?;
        roots.add(certificate)?;
    }
    if roots.is_empty() {
        return Err(format!("{}: no certificate in it", path.display()).into());
    }
    Ok(roots)
}

/// Connects to `url` trusting only the CA certificates in `ca_pem`, sends
/// a message, prints the reply and closes.
async fn connect(ca_pem: &Path, url: &str) -> Result<(), Box<dyn Error>> {
    let roots = load_roots(ca_pem)?;
    println!(
        "trusting {} certificate(s) from {}",
        roots.len(),
        ca_pem.display()
    );
    let tls = Connector::Rustls(Arc::new(client_config(roots)?));
    let (mut ws, response) = connect_async_with(url, ClientOptions::new().tls(tls)).await?;
    println!("connected to {url}: {}", response.status());
    ws.send(Message::text("hello over a private CA")).await?;
    println!("reply: {}", ws.read().await?);
    ws.close(None).await?;
    while ws.read().await.is_ok() {}
    println!("closed cleanly");
    Ok(())
}

/// A CA made now, written to `dir/ca.pem`, and a TLS acceptor whose
/// certificate (for 127.0.0.1 and localhost) it signed.
fn make_ca(dir: &Path) -> Result<(PathBuf, TlsAcceptor), Box<dyn Error>> {
    let mut ca = rcgen::CertificateParams::new(Vec::<String>::new())?;
    ca.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    ca.distinguished_name
        .push(rcgen::DnType::CommonName, "lockgate example CA");
    ca.key_usages = vec![
        rcgen::KeyUsagePurpose::KeyCertSign,
        rcgen::KeyUsagePurpose::CrlSign,
    ];
    let ca_key = rcgen::KeyPair::generate()?;
    let ca_cert = ca.self_signed(&ca_key)?;
    let ca_pem = dir.join("ca.pem");
    std::fs::write(&ca_pem, ca_cert.pem())?;

    let mut server =
        rcgen::CertificateParams::new(vec!["127.0.0.1".to_owned(), "localhost".to_owned()])?;
    server.extended_key_usages = vec![rcgen::ExtendedKeyUsagePurpose::ServerAuth];
    let server_key = rcgen::KeyPair::generate()?;
    let server_cert = server.signed_by(&server_key, &ca_cert, &ca_key)?;
    let key = PrivateKeyDer::from(PrivatePkcs8KeyDer::from(server_key.serialize_der()));
    let provider = Arc::new(tokio_rustls::rustls::crypto::ring::default_provider());
    let config = ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()?
        .with_no_client_auth()
        .with_single_cert(vec![server_cert.der().clone()], key)?;
    Ok((ca_pem, TlsAcceptor::from(Arc::new(config))))
}

/// The CA, the server and the client, all here.
async fn self_contained() -> Result<(), Box<dyn Error>> {
    let dir = std::env::temp_dir().join(format!("lockgate-private-ca-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let (ca_pem, acceptor) = make_ca(&dir)?;
    println!("wrote the CA certificate to {}", ca_pem.display());

    let listener = TcpListener::bind("127.0.0.1:0").await?;
    let url = format!("wss://{}/", listener.local_addr()?);
    let server = tokio::spawn(async move {
        let (tcp, _) = listener.accept().await?;
        let tls = acceptor.accept(tcp).await?;
        let mut ws = accept_async(tls).await?;
        while let Ok(message) = ws.read().await {
            if message.is_data() {
                ws.send(message).await?;
            }
        }
        Ok::<_, Box<dyn Error + Send + Sync>>(())
    });

    let connected = connect(&ca_pem, &url).await;
    let _ = std::fs::remove_dir_all(&dir);
    connected?;
    server.await?.map_err(|e| e as Box<dyn Error>)?;
    Ok(())
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.as_slice() {
        [] => self_contained().await,
        [ca_pem, url] => connect(Path::new(ca_pem), url).await,
        _ => Err("usage: private-ca [CA.pem wss://HOST:PORT/PATH]".into()),
    }
}
