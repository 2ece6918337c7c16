//! A peer that stops reading: what `write` does with the default settings
//! (waits, holding about one `write_buffer_size` of output), and with the
//! settings that turn the wait into `Error::WriteBufferFull` (the README's
//! backpressure section documents both).

use std::time::Duration;

use futures_util::FutureExt;
use tokio::net::{TcpListener, TcpStream};
use tokio::time::timeout;
use tokio_lockgate::{
    Config, Error, MaybeTlsStream, Message, ServerOptions, WebSocketStream, accept_async_with,
};

const KIB: usize = 1024;
/// Far more than any loopback socket buffers hold: the loops below end on
/// a full socket long before.
const MAX_MESSAGES: usize = 1_000_000;

/// A server connection whose client connected and never reads, and the
/// client's socket (kept open, never read).
async fn stalled_pair(
    config: Config,
) -> (
    WebSocketStream<TcpStream>,
    WebSocketStream<MaybeTlsStream<TcpStream>>,
) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("ws://{}/", listener.local_addr().unwrap());
    let (server, client) = tokio::join!(
        async {
            let (tcp, _) = listener.accept().await.unwrap();
            accept_async_with(tcp, ServerOptions::new().config(config))
                .await
                .unwrap()
        },
        async { tokio_lockgate::connect_async(url).await.unwrap().0 }
    );
    (server, client)
}

#[tokio::test]
async fn by_default_write_waits_for_a_stalled_reader_with_bounded_output() {
    timeout(Duration::from_secs(30), async {
        let config = Config::default();
        let (mut server, _client) = stalled_pair(config).await;
        let msg = Message::binary(vec![7u8; KIB]);
        let mut written = 0;
        // Write until a write cannot complete: the socket is full.
        while server.write(msg.clone()).now_or_never().is_some() {
            written += 1;
            assert!(written < MAX_MESSAGES, "the socket never filled");
        }
        let held = server.buffered_output();
        println!(
            "default: write waits after {written} KiB; {held} B in the out buffer \
             (write_buffer_size {} B)",
            config.get_write_buffer_size()
        );
        // The wait started once the out buffer reached write_buffer_size
        // and the socket (whose kernel buffers hold the rest) took only
        // part of it.
        assert!(held > 0, "a write waits only with output left to write");
        assert!(
            held <= config.get_write_buffer_size() + 2 * KIB,
            "{held} B held"
        );
    })
    .await
    .expect("bounded");
}

#[tokio::test]
async fn write_buffer_full_instead_of_waiting_when_writes_never_write_out() {
    timeout(Duration::from_secs(30), async {
        let max = 256 * KIB;
        // `write` never writes to the socket (only `flush` does), so a full
        // out buffer is reported instead of waited on.
        let config = Config::default()
            .write_buffer_size(usize::MAX)
            .max_write_buffer_size(max);
        let (mut server, _client) = stalled_pair(config).await;
        let msg = Message::binary(vec![7u8; KIB]);
        let mut written = 0;
        // Fill the out buffer, flush it into the socket, until the socket
        // is full too: `write` itself never waits.
        loop {
            let refused = loop {
                match server.write(msg.clone()).now_or_never() {
                    Some(Ok(())) => written += 1,
                    Some(Err(Error::WriteBufferFull(back))) => break back,
                    Some(Err(e)) => panic!("{e}"),
                    None => panic!("write waited"),
                }
                assert!(written < MAX_MESSAGES, "the socket never filled");
            };
            assert_eq!(*refused, msg, "refused, and handed back as given");
            let held = server.buffered_output();
            assert!(held <= max && held > max - 2 * KIB, "{held}");
            // Flushing to a reader that never reads waits once the socket
            // is full: bound it with a timeout and drop the connection.
            if server.flush().now_or_never().is_none() {
                break;
            }
        }
        println!(
            "write_buffer_size MAX, max {max} B: WriteBufferFull at {} B held, \
             flush waits after {written} KiB",
            server.buffered_output()
        );
    })
    .await
    .expect("bounded");
}
