//! The opening handshake, sans-IO, both roles: building a client request,
//! parsing and accepting a typical browser request (~500 B, with Origin,
//! User-Agent, Accept-Encoding, Sec-WebSocket-Extensions...) on the server,
//! and validating the server's 101 response on the client.
//!
//! The handshake runs once per connection, so what matters is that it is
//! cheap next to connection setup and that a request trickling in byte by
//! byte costs linear, not quadratic, time. The last group feeds requests of
//! ~0.5 KiB and ~4 KiB one byte per `receive` call: equal throughput at both
//! sizes means the cost per byte does not grow with what is buffered.

#![allow(missing_docs)] // criterion_group! generates undocumented items

use std::hint::black_box;
use std::time::Duration;

use criterion::{BatchSize, BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use lockgate::handshake::{ClientUpgrade, NoCallback, ServerUpgrade, derive_accept_key};

const URL: &str = "ws://example.com/chat";

/// What a current desktop Chrome sends, give or take the cookie.
fn browser_request(extra_headers: &str) -> Vec<u8> {
    format!(
        "GET /chat HTTP/1.1\r\n\
         Host: example.com\r\n\
         Connection: Upgrade\r\n\
         Pragma: no-cache\r\n\
         Cache-Control: no-cache\r\n\
         User-Agent: Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 \
         (KHTML, like Gecko) Chrome/124.0.0.0 Safari/537.36\r\n\
         Upgrade: websocket\r\n\
         Origin: https://example.com\r\n\
         Sec-WebSocket-Version: 13\r\n\
         Accept-Encoding: gzip, deflate, br, zstd\r\n\
         Accept-Language: en-US,en;q=0.9\r\n\
         {extra_headers}\
         Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\
         Sec-WebSocket-Extensions: permessage-deflate; client_max_window_bits\r\n\
         \r\n"
    )
    .into_bytes()
}

/// The same request grown to about 4 KiB by session cookies.
fn browser_request_with_cookies() -> Vec<u8> {
    let cookies: String = (0..60)
        .map(|i| format!("Cookie: session_{i:02}=0123456789abcdef0123456789abcdef0123\r\n"))
        .collect();
    browser_request(&cookies)
}

/// A client handshake in progress and the server's valid answer to it.
fn client_and_response() -> (ClientUpgrade, Vec<u8>) {
    let client = ClientUpgrade::new(URL).expect("a valid URL");
    let key = client
        .request()
        .headers()
        .get("sec-websocket-key")
        .expect("a key")
        .as_bytes();
    let response = format!(
        "HTTP/1.1 101 Switching Protocols\r\n\
         Server: nginx/1.25.4\r\n\
         Date: Mon, 01 Jan 2024 00:00:00 GMT\r\n\
         Upgrade: websocket\r\n\
         Connection: Upgrade\r\n\
         Sec-WebSocket-Accept: {}\r\n\
         \r\n",
        derive_accept_key(key)
    );
    (client, response.into_bytes())
}

fn handshake(c: &mut Criterion) {
    let request = browser_request("");
    assert!(
        (450..=600).contains(&request.len()),
        "request is {} B",
        request.len()
    );
    let big_request = browser_request_with_cookies();
    assert!((3500..=4500).contains(&big_request.len()));

    let mut group = c.benchmark_group("handshake");
    group.bench_function("client request build", |b| {
        b.iter(|| {
            let client = ClientUpgrade::new(black_box(URL)).expect("a valid URL");
            assert!(!black_box(&client).request_bytes().is_empty());
            client
        });
    });
    group.bench_function("server parse+accept browser request", |b| {
        b.iter(|| {
            let done = ServerUpgrade::new(NoCallback)
                .receive(black_box(&request))
                .expect("a valid request")
                .expect("a complete request");
            assert!(done.leftover.is_empty());
            done
        });
    });
    group.bench_function("client response validation", |b| {
        b.iter_batched(
            client_and_response,
            |(mut client, response)| {
                let done = client
                    .receive(black_box(&response))
                    .expect("a valid response")
                    .expect("a complete response");
                assert_eq!(done.response.status(), 101);
                done
            },
            BatchSize::SmallInput,
        );
    });
    group.finish();

    let mut group = c.benchmark_group("server request 1 byte per receive");
    for (label, input) in [("0.5 KiB", &request), ("4 KiB", &big_request)] {
        group.throughput(Throughput::Bytes(input.len() as u64));
        group.bench_function(BenchmarkId::from_parameter(label), |b| {
            b.iter(|| {
                let mut server = ServerUpgrade::new(NoCallback);
                let (last, head) = input.split_last().expect("not empty");
                for byte in head {
                    let pending = server.receive(std::slice::from_ref(black_box(byte)));
                    assert!(matches!(pending, Ok(None)));
                }
                server
                    .receive(std::slice::from_ref(last))
                    .expect("a valid request")
                    .expect("a complete request")
            });
        });
    }
    group.finish();
}

criterion_group! {
    name = benches;
    // Command-line options (--measurement-time etc.) override these.
    config = Criterion::default()
        .sample_size(50)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(2));
    targets = handshake
}
criterion_main!(benches);
