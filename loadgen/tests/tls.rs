//! `wss://` as a user runs it: an echo server on 127.0.0.1 whose
//! certificate comes from a private CA (made here with rcgen), served with
//! tokio-rustls and `accept_async`. With the CA in `--ca-file` every
//! message comes back; without it the certificate is refused, and the
//! error says so.

mod support;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, KeyPair, KeyUsagePurpose};
use serde_json::Value;
use tokio::net::TcpListener;
use tokio_rustls::TlsAcceptor;
use tokio_rustls::rustls::pki_types::{CertificateDer, PrivatePkcs8KeyDer};
use tokio_rustls::rustls::{self, ServerConfig};

use support::loadgen;

/// A private CA's certificate (PEM) and a server certificate it signed for
/// 127.0.0.1, with the server's key.
fn private_ca() -> (String, CertificateDer<'static>, PrivatePkcs8KeyDer<'static>) {
    let ca_key = KeyPair::generate().unwrap();
    let mut ca = CertificateParams::new(Vec::new()).unwrap();
    ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca.distinguished_name
        .push(DnType::CommonName, "loadgen test CA");
    ca.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
    let ca = ca.self_signed(&ca_key).unwrap();

    let server_key = KeyPair::generate().unwrap();
    let server = CertificateParams::new(vec!["127.0.0.1".to_owned()])
        .unwrap()
        .signed_by(&server_key, &ca, &ca_key)
        .unwrap();
    let key = PrivatePkcs8KeyDer::from(server_key.serialize_der());
    (ca.pem(), server.der().clone(), key)
}

/// Starts a TLS echo server on `runtime`: every connection gets the TLS
/// handshake, the WebSocket handshake, then each data message back until
/// the closing handshake.
fn tls_echo_server(
    runtime: &tokio::runtime::Runtime,
    cert: CertificateDer<'static>,
    key: PrivatePkcs8KeyDer<'static>,
) -> SocketAddr {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(vec![cert], key.into())
        .unwrap();
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    let acceptor = TlsAcceptor::from(Arc::new(config));
    let listener = runtime.block_on(TcpListener::bind("127.0.0.1:0")).unwrap();
    let addr = listener.local_addr().unwrap();
    runtime.spawn(async move {
        while let Ok((tcp, _)) = listener.accept().await {
            let acceptor = acceptor.clone();
            tokio::spawn(async move {
                // A client that refuses the certificate ends here.
                let Ok(tls) = acceptor.accept(tcp).await else {
                    return;
                };
                let Ok(mut ws) = tokio_lockgate::accept_async(tls).await else {
                    return;
                };
                loop {
                    match ws.read().await {
                        Ok(msg) if msg.is_data() => {
                            if ws.send(msg).await.is_err() {
                                return;
                            }
                        }
                        // Pongs and the close reply are the library's.
                        Ok(_) => {}
                        // Closed (normally or not): the client checks.
                        Err(_) => return,
                    }
                }
            });
        }
    });
    addr
}

/// Writes `pem` to a file of its own in the target directory.
fn write_ca(pem: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"));
    let path = dir.join(format!("loadgen-test-ca-{}.pem", std::process::id()));
    std::fs::write(&path, pem).unwrap();
    path
}

#[test]
fn wss_with_a_private_ca_works_with_ca_file_and_is_refused_without() {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let (ca_pem, cert, key) = private_ca();
    let addr = tls_echo_server(&runtime, cert, key);
    let url = format!("wss://{addr}/");
    let ca_file = write_ca(&ca_pem);
    let ca_file = ca_file.to_str().unwrap();

    let out = loadgen(&[
        "--url",
        &url,
        "--ca-file",
        ca_file,
        "--messages",
        "1000",
        "--json",
    ]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}\nstdout: {stdout}\nstderr: {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    let json: Value = serde_json::from_str(stdout.trim()).unwrap();
    assert_eq!(json["result"], "ok", "{json}");
    assert_eq!(json["report"]["messages"], 1000, "{json}");
    assert_eq!(json["report"]["latency"]["samples"], 1000, "{json}");

    // The web PKI alone does not know the private CA.
    let out = loadgen(&["--url", &url, "--messages", "1000"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("certificate"), "{stderr}");
    assert!(stderr.contains("--ca-file"), "a hint: {stderr}");
    let _ = std::fs::remove_file(ca_file);
}
