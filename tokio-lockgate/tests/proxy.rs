//! `connect_async_with` through every kind of proxy: the conformance kit's
//! dial cases (kit/src/conformance/dial.rs), the same every driver runs.
//! Every dial is bounded in time.
//!
//! The `wss://` and `https://` cases need `--features rustls`.

use std::sync::LazyLock;
use std::time::Duration;

use lockgate_kit::conformance::dial::{Dialed, Dialer, echo_messages};
use tokio::runtime::Runtime;
use tokio::time::timeout;
use tokio_lockgate::{ClientOptions, Result, connect_async_with};

/// The most any one dial, or its exchange, may take.
const LIMIT: Duration = Duration::from_secs(20);

/// The runtime every case's dials run on (two workers, as a server's).
static RUNTIME: LazyLock<Runtime> = LazyLock::new(|| {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
});

/// `connect_async_with` with [`ClientOptions`].
struct Tokio;

impl Dialer for Tokio {
    lockgate_kit::rustls_dialer_items!();

    fn dial_and_echo(url: &str, options: ClientOptions, what: &str) -> Result<Dialed> {
        RUNTIME.block_on(async {
            let (mut ws, response) = timeout(LIMIT, connect_async_with(url, options))
                .await
                .unwrap_or_else(|_| panic!("{what}: no outcome within {LIMIT:?}"))?;
            assert_eq!(response.status(), 101, "{what}");
            let peer_port = ws.get_ref().get_ref().peer_addr().unwrap().port();
            let tls = ws.get_ref().is_tls();
            // Written and flushed once, read back, then the closing
            // handshake.
            let exchange = async {
                let messages = echo_messages(what);
                for message in &messages {
                    ws.write(message.clone()).await.unwrap();
                }
                ws.flush().await.unwrap();
                for message in messages {
                    assert_eq!(ws.read().await.unwrap(), message, "{what}");
                }
                ws.close(None).await.unwrap();
                while ws.read().await.is_ok() {}
            };
            timeout(LIMIT, exchange)
                .await
                .unwrap_or_else(|_| panic!("{what}: the exchange took over {LIMIT:?}"));
            Ok(Dialed {
                peer_port,
                tls,
                connection: Box::new(ws),
            })
        })
    }
}

lockgate_kit::dial_suite!(Tokio);
