//! `wss://` over loopback: a tokio-rustls server with a self-signed
//! certificate made here, `accept_async` on the TLS stream, and
//! `connect_async_with` with a `Connector::Rustls` that trusts
//! (or does not trust) that certificate. Every test is bounded in time.
#![cfg(feature = "rustls")]

use lockgate_kit as support;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use tokio::io::AsyncWriteExt;
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;
use tokio::time::timeout;
use tokio_lockgate::handshake::Proxy;
use tokio_lockgate::lockgate::error::{Detail, TlsError};
use tokio_lockgate::{
    Bytes, ClientOptions, CloseCode, CloseFrame, Config, Connector, Error, MaybeTlsStream, Message,
    WebSocketStream,
};
use tokio_rustls::TlsAcceptor;
use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use tokio_rustls::rustls::{self, ClientConfig, RootCertStore, ServerConfig};

/// The most any test may take, handshakes and all.
const LIMIT: Duration = Duration::from_secs(30);

/// The ring provider, passed explicitly: no process-level default needed.
fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// A self-signed certificate for `names` (DNS names or IP addresses) and
/// its private key.
fn self_signed(names: &[&str]) -> (CertificateDer<'static>, PrivateKeyDer<'static>) {
    let names = names
        .iter()
        .map(|name| (*name).to_owned())
        .collect::<Vec<_>>();
    let rcgen::CertifiedKey { cert, key_pair } = rcgen::generate_simple_self_signed(names).unwrap();
    let key = PrivatePkcs8KeyDer::from(key_pair.serialize_der());
    (cert.der().clone(), key.into())
}

/// A client configuration trusting only `trusted` (nothing when `None`).
fn client_config(trusted: Option<&CertificateDer<'static>>) -> Arc<ClientConfig> {
    let mut roots = RootCertStore::empty();
    if let Some(cert) = trusted {
        roots.add(cert.clone()).unwrap();
    }
    let config = ClientConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    Arc::new(config)
}

/// Serves one TLS connection on `listener`: TLS handshake, WebSocket
/// handshake, then echo until the closing handshake. Returns how many data
/// messages were echoed.
fn serve_one(
    listener: TcpListener,
    cert: CertificateDer<'static>,
    key: PrivateKeyDer<'static>,
) -> JoinHandle<tokio_lockgate::Result<u64>> {
    let mut config = ServerConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(vec![cert], key)
        .unwrap();
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    let acceptor = TlsAcceptor::from(Arc::new(config));
    tokio::spawn(async move {
        let (tcp, _) = listener.accept().await?;
        tcp.set_nodelay(true)?;
        let tls = acceptor.accept(tcp).await?;
        let mut ws = tokio_lockgate::accept_async(tls).await?;
        let mut echoed = 0;
        loop {
            match ws.read().await {
                Ok(message) if message.is_data() => {
                    ws.send(message).await?;
                    echoed += 1;
                }
                // Pongs and the close reply are sent by the library.
                Ok(_) => {}
                Err(Error::ConnectionClosed) => break,
                Err(e) => return Err(e),
            }
        }
        // Send TLS close_notify; the client may already be gone.
        let _ = ws.into_inner().shutdown().await;
        Ok(echoed)
    })
}

/// Binds a loopback listener, IPv4 or IPv6.
async fn listen(ip: &str) -> std::io::Result<(TcpListener, SocketAddr)> {
    let listener = TcpListener::bind((ip, 0)).await?;
    let addr = listener.local_addr()?;
    Ok((listener, addr))
}

async fn connect(
    url: &str,
    config: Arc<ClientConfig>,
) -> tokio_lockgate::Result<WebSocketStream<MaybeTlsStream<TcpStream>>> {
    let options = ClientOptions::new().tls(Connector::Rustls(config));
    let (ws, response) = tokio_lockgate::connect_async_with(url, options).await?;
    assert_eq!(response.status(), 101);
    Ok(ws)
}

/// Text, a batch flushed once (with a 1 MiB binary), a ping and a clean
/// close over `ws`.
async fn exchange(ws: &mut WebSocketStream<MaybeTlsStream<TcpStream>>) -> u64 {
    assert!(ws.get_ref().is_tls());

    ws.send(Message::text("hello over TLS")).await.unwrap();
    assert_eq!(ws.read().await.unwrap(), Message::text("hello over TLS"));

    let big: Vec<u8> = (0..1 << 20).map(|i: u32| (i % 251) as u8).collect();
    for i in 0..10 {
        ws.write(Message::text(format!("batch {i}"))).await.unwrap();
    }
    ws.write(Message::binary(big.clone())).await.unwrap();
    ws.write(Message::binary(Bytes::new())).await.unwrap();
    ws.flush().await.unwrap();
    for i in 0..10 {
        assert_eq!(
            ws.read().await.unwrap(),
            Message::text(format!("batch {i}"))
        );
    }
    assert_eq!(ws.read().await.unwrap(), Message::binary(big));
    assert_eq!(ws.read().await.unwrap(), Message::binary(Bytes::new()));

    ws.send(Message::Ping(Bytes::from_static(b"probe")))
        .await
        .unwrap();
    assert_eq!(
        ws.read().await.unwrap(),
        Message::Pong(Bytes::from_static(b"probe"))
    );

    ws.close(Some(CloseFrame::new(CloseCode::Normal, "done")))
        .await
        .unwrap();
    match ws.read().await.unwrap() {
        Message::Close(Some(frame)) => assert_eq!(frame.code, CloseCode::Normal),
        other => panic!("expected the close reply, got {other:?}"),
    }
    assert!(matches!(ws.read().await, Err(Error::ConnectionClosed)));
    13
}

#[tokio::test]
async fn wss_echo_with_a_trusted_self_signed_certificate() {
    timeout(LIMIT, async {
        let (cert, key) = self_signed(&["localhost"]);
        let (listener, addr) = listen("127.0.0.1").await.unwrap();
        let server = serve_one(listener, cert.clone(), key);

        let url = format!("wss://localhost:{}/", addr.port());
        let mut ws = connect(&url, client_config(Some(&cert))).await.unwrap();
        let session = ws.get_ref().tls_connection().expect("a TLS stream");
        assert!(session.protocol_version().is_some());
        assert_eq!(
            ws.get_ref().get_ref().peer_addr().unwrap().port(),
            addr.port()
        );
        let sent = exchange(&mut ws).await;
        assert_eq!(server.await.unwrap().unwrap(), sent);
    })
    .await
    .expect("test timed out");
}

#[tokio::test]
async fn wss_to_ip_addresses_checks_the_ip_in_the_certificate() {
    timeout(LIMIT, async {
        let (cert, key) = self_signed(&["localhost", "127.0.0.1", "::1"]);
        let (listener, addr) = listen("127.0.0.1").await.unwrap();
        let server = serve_one(listener, cert.clone(), key.clone_key());
        let mut ws = connect(&format!("wss://{addr}/"), client_config(Some(&cert)))
            .await
            .unwrap();
        let sent = exchange(&mut ws).await;
        assert_eq!(server.await.unwrap().unwrap(), sent);

        // IPv6 (`wss://[::1]:port/`), where the machine has it.
        let Ok((listener, addr)) = listen("::1").await else {
            eprintln!("no IPv6 loopback here; skipping the [::1] part");
            return;
        };
        let server = serve_one(listener, cert.clone(), key);
        let mut ws = connect(&format!("wss://{addr}/"), client_config(Some(&cert)))
            .await
            .unwrap();
        let sent = exchange(&mut ws).await;
        assert_eq!(server.await.unwrap().unwrap(), sent);
    })
    .await
    .expect("test timed out");
}

/// The `rustls::Error` of a TLS failure.
fn rustls_error(error: &Error) -> &rustls::Error {
    match error {
        Error::Tls(TlsError::Rustls(tls)) => tls,
        other => panic!("expected Error::Tls, got {other:?}"),
    }
}

#[tokio::test]
async fn an_untrusted_certificate_fails_the_connection() {
    timeout(LIMIT, async {
        let (cert, key) = self_signed(&["localhost"]);
        let (listener, addr) = listen("127.0.0.1").await.unwrap();
        let server = serve_one(listener, cert, key);

        let url = format!("wss://localhost:{}/", addr.port());
        let error = connect(&url, client_config(None)).await.unwrap_err();
        assert!(
            matches!(
                rustls_error(&error),
                rustls::Error::InvalidCertificate(rustls::CertificateError::UnknownIssuer)
            ),
            "{error:?}"
        );
        // The server saw the client's alert instead of a handshake.
        assert!(server.await.unwrap().is_err());
    })
    .await
    .expect("test timed out");
}

#[tokio::test]
async fn a_certificate_for_another_name_fails_the_connection() {
    timeout(LIMIT, async {
        let (cert, key) = self_signed(&["localhost"]);
        let (listener, addr) = listen("127.0.0.1").await.unwrap();
        let server = serve_one(listener, cert.clone(), key);

        // Trusted, but issued for "localhost", not 127.0.0.1.
        let url = format!("wss://{addr}/");
        let error = connect(&url, client_config(Some(&cert))).await.unwrap_err();
        assert!(
            matches!(rustls_error(&error), rustls::Error::InvalidCertificate(_)),
            "{error:?}"
        );
        assert!(server.await.unwrap().is_err());
    })
    .await
    .expect("test timed out");
}

#[tokio::test]
async fn a_silent_server_is_bounded_by_the_handshake_timeout() {
    timeout(LIMIT, async {
        // Accepts TCP, never answers the ClientHello, and holds the
        // connection until aborted: only the handshake deadline can end
        // the dial with a timeout (the outer `timeout` is the hang guard).
        let (listener, addr) = listen("127.0.0.1").await.unwrap();
        let server = tokio::spawn(async move {
            let (tcp, _) = listener.accept().await.unwrap();
            std::future::pending::<()>().await;
            drop(tcp);
        });
        let config = Config::default().handshake_timeout(Some(Duration::from_millis(300)));
        let options = ClientOptions::new()
            .config(config)
            .tls(Connector::Rustls(client_config(None)));
        let url = format!("wss://localhost:{}/", addr.port());
        let result = tokio_lockgate::connect_async_with(url, options).await;
        assert!(
            result.as_ref().err().and_then(|e| e.timeout())
                == Some(tokio_lockgate::TimeoutKind::Handshake),
            "the handshake timeout should cover TLS: {:?}",
            result.map(drop)
        );
        server.abort();
    })
    .await
    .expect("test timed out");
}

#[tokio::test]
async fn wss_without_a_connector_uses_the_default_roots_or_says_what_is_missing() {
    timeout(LIMIT, async {
        let (cert, key) = self_signed(&["localhost"]);
        let (listener, addr) = listen("127.0.0.1").await.unwrap();
        let server = serve_one(listener, cert, key);
        let url = format!("wss://localhost:{}/", addr.port());
        let error = tokio_lockgate::connect_async(url).await.unwrap_err();
        let no_native_roots = cfg!(not(feature = "webpki-roots"))
            && matches!(&error, Error::Io(io) if io.kind() == std::io::ErrorKind::NotFound);
        if no_native_roots {
            // `native-certs` alone, on a machine whose store is empty.
            server.abort();
        } else if cfg!(any(feature = "webpki-roots", feature = "native-certs")) {
            // Public roots do not vouch for a certificate made a moment ago.
            assert!(
                matches!(rustls_error(&error), rustls::Error::InvalidCertificate(_)),
                "{error:?}"
            );
            assert!(server.await.unwrap().is_err());
        } else {
            match error.detail() {
                Some(Detail::InvalidUrl(message)) => {
                    assert!(message.contains("Connector::Rustls"), "{message}");
                }
                _ => panic!("expected Detail::InvalidUrl, got {error:?}"),
            }
            server.abort();
        }
    })
    .await
    .expect("test timed out");
}

#[tokio::test]
async fn wss_through_an_http_proxy() {
    let Some(proxy) = support::tinyproxy::TinyProxy::start(Default::default()) else {
        return;
    };
    timeout(LIMIT, async {
        let (cert, key) = self_signed(&["127.0.0.1"]);
        let (listener, addr) = listen("127.0.0.1").await.unwrap();
        let server = serve_one(listener, cert.clone(), key);
        let options = ClientOptions::new()
            .proxy(Proxy::http(&proxy.url(None)).unwrap())
            .tls(Connector::Rustls(client_config(Some(&cert))));
        let url = format!("wss://{addr}/");
        let (mut ws, _) = tokio_lockgate::connect_async_with(url.as_str(), options)
            .await
            .unwrap();
        // The TCP connection is the proxy's; TLS runs inside the tunnel.
        assert_eq!(
            ws.get_ref().get_ref().peer_addr().unwrap().port(),
            proxy.port()
        );
        let sent = exchange(&mut ws).await;
        assert_eq!(server.await.unwrap().unwrap(), sent);
    })
    .await
    .expect("test timed out");
}
