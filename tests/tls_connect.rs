//! `wss://` through the blocking driver: `connect` and `client_tls` against
//! a rustls server on loopback with a certificate made here, trusted
//! through a `Connector` (rustls, and native-tls with that feature), a
//! certificate that is not trusted, and a server that never answers the
//! ClientHello, which the handshake deadline must cut short.

use std::net::{TcpListener, TcpStream};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use lockgate::dial::rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use lockgate::dial::rustls::{self, RootCertStore, ServerConfig, ServerConnection, StreamOwned};
use lockgate::error::TlsError;
use lockgate::stream::MaybeTlsStream;
use lockgate::{ClientOptions, Config, Connector, Error, Message, TimeoutKind};

/// A self-signed certificate for `localhost` and 127.0.0.1, and its key.
fn certificate() -> (CertificateDer<'static>, PrivateKeyDer<'static>) {
    let names = vec!["localhost".to_owned(), "127.0.0.1".to_owned()];
    let rcgen::CertifiedKey { cert, key_pair } = rcgen::generate_simple_self_signed(names).unwrap();
    let key = PrivatePkcs8KeyDer::from(key_pair.serialize_der());
    (cert.der().clone(), key.into())
}

/// A rustls connector trusting only `cert`.
fn trusting(cert: &CertificateDer<'static>) -> Connector {
    let mut roots = RootCertStore::empty();
    roots.add(cert.clone()).unwrap();
    Connector::Rustls(Arc::new(lockgate::dial::client_config(roots).unwrap()))
}

/// Serves one TLS connection: TLS, the WebSocket handshake, then echo until
/// the closing handshake. Gives back how many messages were echoed, or the
/// error that ended it.
fn serve_one(
    listener: TcpListener,
    cert: CertificateDer<'static>,
    key: PrivateKeyDer<'static>,
) -> thread::JoinHandle<Result<u64, String>> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(vec![cert], key)
        .unwrap();
    let config = Arc::new(config);
    thread::spawn(move || {
        let (tcp, _) = listener.accept().map_err(|e| e.to_string())?;
        tcp.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        let tls = StreamOwned::new(ServerConnection::new(config).unwrap(), tcp);
        let mut ws = lockgate::accept(tls).map_err(|e| Error::from(e).to_string())?;
        let mut echoed = 0;
        loop {
            match ws.read() {
                Ok(msg) if msg.is_text() || msg.is_binary() => {
                    ws.send(msg).map_err(|e| e.to_string())?;
                    echoed += 1;
                }
                Ok(_) => {}
                Err(Error::ConnectionClosed) => return Ok(echoed),
                Err(e) => return Err(e.to_string()),
            }
        }
    })
}

fn echo_through(ws: &mut lockgate::WebSocket<MaybeTlsStream<TcpStream>>) {
    for i in 0..3 {
        ws.send(Message::text(format!("over TLS {i}"))).unwrap();
        assert_eq!(ws.read().unwrap(), Message::text(format!("over TLS {i}")));
    }
    ws.close(None).unwrap();
    while ws.read().is_ok() {}
}

#[test]
fn connect_dials_wss_through_a_rustls_connector() {
    let (cert, key) = certificate();
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("wss://localhost:{}/", listener.local_addr().unwrap().port());
    let server = serve_one(listener, cert.clone(), key);
    let (mut ws, response) = ClientOptions::new()
        .tls(trusting(&cert))
        .connect(url.as_str())
        .unwrap();
    assert_eq!(response.status(), 101);
    assert!(matches!(ws.get_ref(), MaybeTlsStream::Rustls(_)));
    echo_through(&mut ws);
    assert_eq!(server.join().unwrap(), Ok(3));
}

#[test]
fn client_tls_secures_a_stream_connected_by_hand() {
    let (cert, key) = certificate();
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let server = serve_one(listener, cert.clone(), key);
    let tcp = TcpStream::connect(addr).unwrap();
    let url = format!("wss://127.0.0.1:{}/", addr.port());
    let (mut ws, _) =
        lockgate::client_tls_with_config(url.as_str(), tcp, None, Some(trusting(&cert))).unwrap();
    echo_through(&mut ws);
    assert_eq!(server.join().unwrap(), Ok(3));
}

#[test]
fn an_untrusted_certificate_is_a_tls_error() {
    let (cert, key) = certificate();
    let (other, _) = certificate();
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("wss://localhost:{}/", listener.local_addr().unwrap().port());
    let server = serve_one(listener, cert, key);
    let error = ClientOptions::new()
        .tls(trusting(&other))
        .connect(url.as_str())
        .unwrap_err();
    assert!(
        matches!(
            &error,
            Error::Tls(TlsError::Rustls(tls)) if matches!(**tls, rustls::Error::InvalidCertificate(_))
        ),
        "{error:?}"
    );
    assert!(server.join().unwrap().is_err());
}

#[test]
fn the_handshake_deadline_covers_a_server_that_never_answers_tls() {
    let (cert, _) = certificate();
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("wss://localhost:{}/", listener.local_addr().unwrap().port());
    // Accepts the TCP connection and reads the ClientHello, then says
    // nothing until the client gives up (or its own hang guard, after
    // which the client would see the end of the stream, not a timeout).
    // Returns what it read: the ClientHello, so the deadline ran out
    // during TLS.
    let silent = thread::spawn(move || {
        let (mut tcp, _) = listener.accept().unwrap();
        tcp.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
        let mut sink = Vec::new();
        let _ = std::io::Read::read_to_end(&mut tcp, &mut sink);
        sink
    });
    let timeout = Duration::from_millis(500);
    let started = Instant::now();
    let error = ClientOptions::new()
        .config(Config::default().handshake_timeout(Some(timeout)))
        .tls(trusting(&cert))
        .connect(url.as_str())
        .unwrap_err();
    println!("{error:?} after {:?}", started.elapsed());
    assert!(error.timeout() == Some(TimeoutKind::Handshake), "{error:?}");
    let hello = silent.join().unwrap();
    assert_eq!(hello.first(), Some(&0x16), "a TLS handshake record");
}

#[cfg(feature = "native-tls")]
#[test]
fn connect_dials_wss_through_native_tls() {
    let (cert, key) = certificate();
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("wss://localhost:{}/", listener.local_addr().unwrap().port());
    let server = serve_one(listener, cert.clone(), key);
    let root = lockgate::dial::native_tls::Certificate::from_der(&cert).unwrap();
    let connector = lockgate::dial::native_tls::TlsConnector::builder()
        .add_root_certificate(root)
        .build()
        .unwrap();
    let (mut ws, _) = ClientOptions::new()
        .tls(Connector::NativeTls(connector))
        .connect(url.as_str())
        .unwrap();
    assert!(matches!(ws.get_ref(), MaybeTlsStream::NativeTls(_)));
    echo_through(&mut ws);
    assert_eq!(server.join().unwrap(), Ok(3));
}

/// A process that installed its own default crypto provider (as an
/// application using rustls elsewhere does): lockgate's default
/// configuration takes it, and wss:// works; no panic either way.
#[test]
fn a_process_wide_crypto_provider_is_used_when_installed() {
    let provider = rustls::crypto::ring::default_provider();
    // Another test of this binary may have installed one first: either
    // way one is installed now.
    let _ = provider.install_default();
    let installed = rustls::crypto::CryptoProvider::get_default().expect("installed");
    let (cert, key) = certificate();
    let mut roots = RootCertStore::empty();
    roots.add(cert.clone()).unwrap();
    let config = lockgate::dial::client_config(roots).unwrap();
    assert!(std::sync::Arc::ptr_eq(config.crypto_provider(), installed));
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("wss://localhost:{}/", listener.local_addr().unwrap().port());
    let server = serve_one(listener, cert, key);
    let (mut ws, _) = ClientOptions::new()
        .tls(Connector::Rustls(Arc::new(config)))
        .connect(url.as_str())
        .unwrap();
    echo_through(&mut ws);
    assert_eq!(server.join().unwrap(), Ok(3));
}
