//! Writes the seed corpus, `fuzz/corpus/<target>/<name>`, from lockgate's
//! own encoders and handshakes and the knob layouts of `lockgate_fuzz`.
//!
//! ```text
//! cd fuzz && cargo run --example gen_corpus            # (re)write the seeds
//! cd fuzz && cargo run --example gen_corpus -- --check # fail if they differ
//! ```
//!
//! Every seed is deterministic (fixed masks and keys), so the committed
//! corpus only changes when this file or lockgate's encoders do.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use lockgate::frame::{FrameHeader, OpCode};
use lockgate::handshake::{ClientUpgrade, NoCallback, ServerUpgrade};
use lockgate::{Buf, Config, Message, Role, WebSocketContext, http};
use lockgate_fuzz::{
    ContextKnobs, Shape, deflate_params, encode_frame, handshake_deflate, take_frames,
};

const MASK: [u8; 4] = [0x37, 0xfa, 0x21, 0x3d];
const KEY: &str = "dGhlIHNhbXBsZSBub25jZQ==";

/// Seeds by target, then by file name.
type Corpus = BTreeMap<&'static str, BTreeMap<String, Vec<u8>>>;

fn add(corpus: &mut Corpus, target: &'static str, name: impl Into<String>, bytes: Vec<u8>) {
    corpus.entry(target).or_default().insert(name.into(), bytes);
}

/// A frame as the receiving `role` expects it: masked when sent by a
/// client (received by a server).
fn frame(receiver: Role, opcode: OpCode, fin: bool, payload: &[u8]) -> Vec<u8> {
    let mask = (receiver == Role::Server).then_some(MASK);
    encode_frame(opcode, fin, false, mask, payload)
}

/// Frame streams every context should read without error.
fn plain_streams(receiver: Role) -> Vec<(&'static str, Vec<u8>)> {
    let f = |opcode, fin, payload: &[u8]| frame(receiver, opcode, fin, payload);
    let close = [&1000u16.to_be_bytes()[..], b"bye"].concat();
    vec![
        ("text", f(OpCode::Text, true, b"Hello")),
        ("binary_300", f(OpCode::Binary, true, &[0xab; 300])),
        (
            "ping_pong",
            [f(OpCode::Ping, true, b"p1"), f(OpCode::Pong, true, b"")].concat(),
        ),
        ("close", f(OpCode::Close, true, &close)),
        (
            "fragmented_text_with_ping",
            [
                f(OpCode::Text, false, "h\u{e9}l".as_bytes()),
                f(OpCode::Ping, true, b"mid"),
                f(OpCode::Continuation, false, b""),
                f(OpCode::Continuation, true, "lo \u{1f600}".as_bytes()),
            ]
            .concat(),
        ),
        (
            "messages_then_close",
            [
                f(OpCode::Binary, true, b""),
                f(OpCode::Text, true, &[b'a'; 130]),
                f(OpCode::Close, true, &[]),
                f(OpCode::Text, true, b"after close"),
            ]
            .concat(),
        ),
    ]
}

/// A fragmented message of many 300-byte frames: the body holds the first
/// frame, one continuation (repeated by the shape) and the last frame.
fn many_fragments(receiver: Role) -> (Shape, Vec<u8>) {
    let first = frame(receiver, OpCode::Binary, false, &[1; 300]);
    let middle = frame(receiver, OpCode::Continuation, false, &[2; 300]);
    let last = frame(receiver, OpCode::Continuation, true, &[3; 300]);
    let from = first.len() as u16;
    let shape = Shape {
        chunk_a: 0,
        chunk_b: 0,
        repeat: 199,
        from,
        to: from + middle.len() as u16,
    };
    (shape, [first, middle, last].concat())
}

fn context_seed(ck: ContextKnobs, shape: Shape, body: &[u8]) -> Vec<u8> {
    [&ck.encode()[..], &shape.encode(), body].concat()
}

/// `messages` written by a server context with permessage-deflate, as
/// frames, the payloads still compressed.
fn compressed(params_knob: u8, messages: &[Message]) -> Vec<(FrameHeader, Vec<u8>)> {
    let config = Config::default();
    let mut writer =
        WebSocketContext::with_deflate(Role::Server, config, Some(deflate_params(params_knob)));
    for msg in messages {
        writer.write(msg.clone()).expect("write");
    }
    let mut output = writer.output();
    let mut wire = output.copy_to_bytes(output.remaining()).to_vec();
    take_frames(&mut wire)
}

/// `frames` re-encoded for `receiver`, each payload split into `pieces`
/// frames (RSV1 on the first only).
fn reframe(receiver: Role, frames: &[(FrameHeader, Vec<u8>)], pieces: usize) -> Vec<u8> {
    let mask = (receiver == Role::Server).then_some(MASK);
    let mut out = Vec::new();
    for (header, payload) in frames {
        let size = payload.len().div_ceil(pieces).max(1);
        let parts: Vec<&[u8]> = if payload.is_empty() {
            vec![&[][..]]
        } else {
            payload.chunks(size).collect()
        };
        for (i, part) in parts.iter().enumerate() {
            let opcode = if i == 0 {
                header.opcode
            } else {
                OpCode::Continuation
            };
            let fin = i + 1 == parts.len();
            out.extend(encode_frame(opcode, fin, header.rsv1 && i == 0, mask, part));
        }
    }
    out
}

fn json_like(n: usize) -> String {
    (0..n)
        .map(|i| format!("{{\"id\":{i},\"name\":\"item {i}\",\"ok\":true}}"))
        .collect::<Vec<_>>()
        .join(",")
}

fn contexts(corpus: &mut Corpus) {
    for (role, plain, deflate) in [
        (Role::Server, "context_server", "context_deflate_server"),
        (Role::Client, "context_client", "context_deflate_client"),
    ] {
        let ck = ContextKnobs::default();
        for (name, body) in plain_streams(role) {
            for target in [plain, deflate] {
                add(
                    corpus,
                    target,
                    name,
                    context_seed(ck, Shape::default(), &body),
                );
            }
        }
        let body: Vec<u8> = plain_streams(role)
            .into_iter()
            .flat_map(|(_, b)| b)
            .collect();
        let one_byte = Shape {
            chunk_a: 1,
            ..Shape::default()
        };
        let spare = ContextKnobs {
            config: 0x80,
            ..ContextKnobs::default()
        };
        add(
            corpus,
            plain,
            "all_one_byte_reads_spare",
            context_seed(spare, one_byte, &body),
        );
        let (shape, body) = many_fragments(role);
        let frame_reads = Shape {
            chunk_a: 0x7f + 1,
            chunk_b: 0,
            ..shape
        };
        add(
            corpus,
            plain,
            "many_fragments",
            context_seed(ck, shape, &body),
        );
        // Each read a little more than one frame, through input_spare with
        // a 64 KiB read buffer.
        let big_reads = ContextKnobs {
            config: 0xC0,
            ..ContextKnobs::default()
        };
        add(
            corpus,
            plain,
            "many_fragments_spare_64k",
            context_seed(big_reads, frame_reads, &body),
        );
        add(
            corpus,
            plain,
            "bad_utf8",
            context_seed(
                ck,
                Shape::default(),
                &frame(role, OpCode::Text, true, b"\xff\xfe"),
            ),
        );

        let json = json_like(200);
        for (knob, name) in [(0x77, "w15"), (0xFF, "w15_nct"), (0x11, "w9")] {
            let ck = ContextKnobs {
                deflate: knob,
                ..ContextKnobs::default()
            };
            let frames = compressed(
                knob,
                &[
                    Message::text(json.clone()),
                    Message::text(json.clone()),
                    Message::binary(vec![7; 5000]),
                    Message::Ping(b"x".to_vec().into()),
                ],
            );
            add(
                corpus,
                deflate,
                format!("compressed_{name}"),
                context_seed(ck, Shape::default(), &reframe(role, &frames, 1)),
            );
            add(
                corpus,
                deflate,
                format!("compressed_fragmented_{name}"),
                context_seed(
                    ck,
                    Shape {
                        chunk_a: 7,
                        chunk_b: 200,
                        ..Shape::default()
                    },
                    &reframe(role, &frames, 5),
                ),
            );
        }
    }
}

/// Rate limits (see `ContextKnobs` for the bits): a throttle on messages,
/// a byte debt repaid, both buckets, and a close by each bucket; with
/// permessage-deflate, a throttle and a close on inflated bytes. The
/// `rate_seeds_*` tests of `lockgate_fuzz` check what each one hits.
fn rate_limits(corpus: &mut Corpus) {
    for (role, plain, deflate) in [
        (Role::Server, "context_server", "context_deflate_server"),
        (Role::Client, "context_client", "context_deflate_client"),
    ] {
        let f = |opcode, payload: &[u8]| frame(role, opcode, true, payload);
        let close = f(OpCode::Close, &1000u16.to_be_bytes());
        let texts = |n: usize| -> Vec<u8> {
            (0..n)
                .flat_map(|i| f(OpCode::Text, format!("message {i}").as_bytes()))
                .collect()
        };
        let seeds: [(&str, ContextKnobs, Shape, Vec<u8>); 5] = [
            (
                // 2 messages/s, burst 1, no keepalive (deadlines exact), a
                // blocking driver, reads 100 ms then 1 ms apart: ten
                // messages in one read, a ping among them, then a close.
                "rate_throttle_messages",
                ContextKnobs {
                    rate: 0x01 | 1 << 4 | 0x80,
                    burst: 2,
                    timing: 1 << 3,
                    steps: 7 | 3 << 4,
                    ..ContextKnobs::default()
                },
                Shape::default(),
                [texts(5), f(OpCode::Ping, b"p"), texts(4), close.clone()].concat(),
            ),
            (
                // 100 bytes/s, burst 125, default keepalive, the driver
                // told of the start: 1,000 bytes at once leave 875 of
                // debt, which the messages in the next reads wait out.
                "rate_throttle_bytes_debt",
                ContextKnobs {
                    rate: 0x01 | 1 << 1,
                    burst: 3 << 4 | 0x08,
                    timing: 1,
                    steps: 12 | 11 << 4,
                    ..ContextKnobs::default()
                },
                Shape {
                    chunk_a: 40,
                    ..Shape::default()
                },
                [
                    f(OpCode::Binary, &[0x5a; 1000]),
                    texts(3),
                    f(OpCode::Binary, &[1; 200]),
                    close.clone(),
                ]
                .concat(),
            ),
            (
                // 5 messages/s, burst 2, and 1,000 bytes/s, burst 1,000;
                // keepalive every 10 s; all at once.
                "rate_throttle_both",
                ContextKnobs {
                    rate: 0x01 | 2 << 1 | 3 << 4,
                    burst: 3 | 4 << 4,
                    timing: 3 | 2 << 3,
                    steps: 9,
                    ..ContextKnobs::default()
                },
                Shape::default(),
                [
                    f(OpCode::Binary, &[7; 700]),
                    texts(2),
                    f(OpCode::Binary, &[8; 700]),
                    f(OpCode::Pong, b""),
                    texts(3),
                    close.clone(),
                ]
                .concat(),
            ),
            (
                // Close policy, 2 messages/s, burst 2: the third of five
                // messages at once closes with 1008.
                "rate_close_messages",
                ContextKnobs {
                    rate: 0x01 | 0x08 | 1 << 4,
                    burst: 3,
                    ..ContextKnobs::default()
                },
                Shape::default(),
                [texts(5), close.clone()].concat(),
            ),
            (
                // Close policy, 1,000 bytes/s, burst 1,000, reads 10 ms
                // apart: the second of three 600-byte messages closes
                // with 1008.
                "rate_close_bytes",
                ContextKnobs {
                    rate: 0x01 | 0x08 | 1 << 1,
                    burst: 4 << 4,
                    timing: 3,
                    steps: 5 | 5 << 4,
                    ..ContextKnobs::default()
                },
                Shape {
                    chunk_a: 100,
                    ..Shape::default()
                },
                [
                    f(OpCode::Binary, &[3; 600]),
                    f(OpCode::Binary, &[4; 600]),
                    f(OpCode::Binary, &[5; 600]),
                    close.clone(),
                ]
                .concat(),
            ),
        ];
        for (name, ck, shape, body) in seeds {
            add(corpus, plain, name, context_seed(ck, shape, &body));
        }

        // Inflated bytes count: 4,096 bytes/s, burst 16 KiB, throttled
        // (default keepalive) or closed.
        let json = json_like(200);
        let frames = compressed(
            0x77,
            &[
                Message::text(json.clone()),
                Message::binary(vec![7; 20_000]),
                Message::text(json),
                Message::Ping(b"x".to_vec().into()),
            ],
        );
        for (name, policy) in [("rate_throttle_inflated", 0), ("rate_close_inflated", 0x08)] {
            let ck = ContextKnobs {
                deflate: 0x77,
                rate: 0x01 | 1 << 1 | policy,
                burst: 5 << 4,
                timing: 4,
                steps: 8,
                ..ContextKnobs::default()
            };
            add(
                corpus,
                deflate,
                name,
                context_seed(
                    ck,
                    Shape::default(),
                    &[reframe(role, &frames, 3), close.clone()].concat(),
                ),
            );
        }
    }
}

fn inflater(corpus: &mut Corpus) {
    let json = json_like(100);
    for (knob, name) in [(0x77, "w15"), (0xFF, "w15_nct"), (0x11, "w9")] {
        let frames = compressed(
            knob,
            &[Message::text(json.clone()), Message::text(json.clone())],
        );
        for (i, (_, payload)) in frames.iter().enumerate() {
            // params, local (level 1, role server), max 64 KiB, every frame final.
            let knobs = [knob, 0x01, 0, 0];
            add(
                corpus,
                "inflater",
                format!("{name}_message{i}"),
                [&knobs[..], &Shape::default().encode(), payload].concat(),
            );
            let split = Shape {
                chunk_a: 16,
                ..Shape::default()
            };
            let knobs = [knob, 0x01, 0, 0xFE];
            add(
                corpus,
                "inflater",
                format!("{name}_message{i}_in_frames"),
                [&knobs[..], &split.encode(), payload].concat(),
            );
        }
    }
    add(
        corpus,
        "inflater",
        "stored_block",
        [
            &[0x77, 0x80, 1, 0][..],
            &Shape::default().encode(),
            &[0x01, 0x03, 0x00, 0xfc, 0xff, b'a', b'b', b'c'],
        ]
        .concat(),
    );
}

fn request(deflate: u8, local: u8, extra: &[(&str, &str)]) -> Vec<u8> {
    let mut builder =
        http::Request::get("ws://example.com/chat?x=1").header("sec-websocket-key", KEY);
    for (name, value) in extra {
        builder = builder.header(*name, *value);
    }
    let request = builder.body(()).expect("request");
    ClientUpgrade::with_deflate(request, handshake_deflate(deflate, local))
        .expect("handshake")
        .request_bytes()
        .to_vec()
}

fn handshakes(corpus: &mut Corpus) {
    let first_frame = frame(Role::Server, OpCode::Text, true, b"early");
    for (deflate, name) in [
        (0u8, "plain"),
        (0xFF, "deflate"),
        (0x0B, "deflate_small_windows"),
    ] {
        let req = request(
            deflate,
            0,
            &[
                ("sec-websocket-protocol", "chat, superchat"),
                ("origin", "http://example.com"),
            ],
        );
        for (shape, suffix) in [
            (Shape::default(), ""),
            (
                Shape {
                    chunk_a: 1,
                    ..Shape::default()
                },
                "_byte_reads",
            ),
        ] {
            let body = [&req[..], &first_frame].concat();
            add(
                corpus,
                "handshake_server",
                format!("{name}{suffix}"),
                [&[deflate, 0][..], &shape.encode(), &body].concat(),
            );
        }

        let mut server = ServerUpgrade::with_deflate(NoCallback, handshake_deflate(deflate, 0));
        let done = server
            .receive(&req)
            .expect("valid request")
            .expect("complete");
        let reply = [
            &done.response_bytes[..],
            &frame(Role::Client, OpCode::Text, true, b"hi"),
        ]
        .concat();
        add(
            corpus,
            "handshake_client",
            name,
            [&[deflate, 0][..], &Shape::default().encode(), &reply].concat(),
        );
        let split = Shape {
            chunk_a: 5,
            chunk_b: 64,
            ..Shape::default()
        };
        add(
            corpus,
            "handshake_client",
            format!("{name}_split"),
            [&[deflate, 0][..], &split.encode(), &reply].concat(),
        );
    }
    let refusal = b"HTTP/1.1 403 Forbidden\r\ncontent-length: 4\r\n\r\nnope";
    add(
        corpus,
        "handshake_client",
        "refused",
        [&[0, 0][..], &Shape::default().encode(), refusal].concat(),
    );
    // A long header line repeated towards the head limit.
    let req = request(0, 0, &[]);
    let line = b"x-filler: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\r\n";
    let from = (req.len() - 2) as u16;
    let body = [&req[..req.len() - 2], &line[..], b"\r\n"].concat();
    let shape = Shape {
        chunk_a: 0x80 + 8,
        chunk_b: 0,
        repeat: 98,
        from,
        to: from + line.len() as u16,
    };
    add(
        corpus,
        "handshake_server",
        "many_headers",
        [&[0, 0][..], &shape.encode(), &body].concat(),
    );
}

fn extension_params(corpus: &mut Corpus) {
    let seeds: [(&str, u8, u8, &str); 6] = [
        ("bare", 0x77, 0x77, "permessage-deflate"),
        (
            "client_max_window_bits",
            0x77,
            0x77,
            "permessage-deflate; client_max_window_bits",
        ),
        (
            "all_params",
            0x77,
            0xFF,
            "permessage-deflate; server_no_context_takeover; client_no_context_takeover; server_max_window_bits=10; client_max_window_bits=\"12\"",
        ),
        (
            "several_offers",
            0x33,
            0x77,
            "x-webkit-deflate-frame, permessage-deflate; server_max_window_bits=8,\npermessage-deflate; client_max_window_bits=9",
        ),
        (
            "answer_windows",
            0x77,
            0x55,
            "permessage-deflate; server_max_window_bits=13; client_max_window_bits=13",
        ),
        (
            "quoted_and_spaces",
            0x77,
            0x77,
            "  permessage-deflate ;server_max_window_bits = \"15\" , foo; bar=\"a,b\"",
        ),
    ];
    for (name, server, client, value) in seeds {
        add(
            corpus,
            "extension_params",
            name,
            [&[server, client][..], value.as_bytes()].concat(),
        );
    }
}

fn resume_wire(corpus: &mut Corpus) {
    let frame = |position: u64, kind: u8, payload: &[u8]| {
        [&position.to_be_bytes()[..], &[kind], payload].concat()
    };
    for (name, bytes) in [
        ("text_frame", frame(42, 1, b"hello")),
        ("binary_frame", frame(u64::MAX, 2, &[0, 1, 2])),
        ("unknown_kind", frame(1, 3, b"x")),
        ("short", vec![0, 0, 0]),
        ("since", b"since=j1b2c3:17".to_vec()),
        ("since_among_params", b"token=a&since=e:0&x".to_vec()),
        ("two_since", b"since=e:1&since=e:2".to_vec()),
        ("since_overflow", b"since=e:18446744073709551616".to_vec()),
    ] {
        add(corpus, "resume_wire", name, bytes);
    }
}

fn roundtrip(corpus: &mut Corpus) {
    let records = |items: &[(u8, &[u8])]| -> Vec<u8> {
        items
            .iter()
            .flat_map(|(kind, data)| [&[*kind, data.len() as u8][..], data].concat())
            .collect()
    };
    let small = records(&[
        (0, b"hello"),
        (1, &[0, 1, 2, 255]),
        (2, b"ping"),
        (3, b"pong"),
        (0, b""),
    ]);
    let large = records(&[
        (0x0C, b"{\"k\":\"v\"},"),
        (0x0D, &[9; 40]),
        (0x1C, b"uncompressed text "),
        (0x08, "\u{e9}t\u{e9}".as_bytes()),
    ]);
    for (flags, name) in [
        (0u8, "server"),
        (1, "client"),
        (2, "server_deflate"),
        (3, "client_deflate"),
        (0x0F, "client_deflate_batched"),
    ] {
        for (body, size) in [(&small, "small"), (&large, "large")] {
            // flags, params 15/15, level 1 min 0, reads of 100 bytes, close 1000.
            let knobs = [flags, 0x77, 0x01, 100, 0x01];
            add(
                corpus,
                "roundtrip",
                format!("{name}_{size}"),
                [&knobs[..], body].concat(),
            );
        }
    }
}

fn write_faults(corpus: &mut Corpus) {
    // ops: write, send, read, flush (op & 3 = 0, 3, 2, 1; size in the top
    // six bits); script: complete, partial, would block, interrupted.
    let ops = [
        0x04 << 2,
        (0x10 << 2) | 3,
        2,
        1,
        (0x3F << 2),
        2,
        (0x08 << 2) | 3,
        1,
    ];
    let script = [0x00, 0x11 << 2 | 1, 2, 3, 0x05 << 2 | 1, 2, 0, 3, 1, 2, 0];
    for (flags, sizes, name) in [
        (0u8, 0x15, "server"),
        (1, 0x15, "client"),
        (3, 0x1A, "client_deflate_small_buffers"),
        (2, 0x2B, "server_deflate_tiny_buffer"),
    ] {
        let knobs = [flags, 0x77, 0x01, sizes, 3];
        let split = (ops.len() as u16).to_le_bytes();
        add(
            corpus,
            "write_faults",
            name,
            [&knobs[..], &split, &ops, &script].concat(),
        );
    }
}

fn frame_header(corpus: &mut Corpus) {
    let mut n = 0;
    for opcode in [
        OpCode::Text,
        OpCode::Binary,
        OpCode::Continuation,
        OpCode::Close,
        OpCode::Ping,
        OpCode::Pong,
    ] {
        for len in [0u64, 125, 126, 65535, 65536, 1 << 40] {
            for mask in [None, Some(MASK)] {
                let mut header = FrameHeader::new(opcode, len);
                header.mask = mask;
                header.is_final = len.is_multiple_of(2);
                header.rsv1 = opcode == OpCode::Text;
                let mut out = [0; 14];
                let used = header.encode(&mut out);
                add(
                    corpus,
                    "frame_header",
                    format!("header{n:02}"),
                    out[..used].to_vec(),
                );
                n += 1;
            }
        }
    }
    // Non-shortest lengths, a reserved opcode, a 64-bit length with the top bit set.
    add(
        corpus,
        "frame_header",
        "long_form_short_len",
        vec![0x82, 0x7E, 0x00, 0x05],
    );
    add(corpus, "frame_header", "reserved_opcode", vec![0x83, 0x00]);
    add(
        corpus,
        "frame_header",
        "top_bit_length",
        vec![0x82, 0x7F, 0x80, 0, 0, 0, 0, 0, 0, 1],
    );
}

/// Proxy answers to CONNECT: accepted in HTTP/1.0 and 1.1, refused (with
/// a large invalid body too), split across reads, and followed by stray
/// bytes.
fn proxy_tunnel(corpus: &mut Corpus) {
    let answers: [(&str, &[u8]); 5] = [
        ("ok_11", b"HTTP/1.1 200 Connection established\r\n\r\n"),
        (
            "ok_10",
            b"HTTP/1.0 200 Connection established\r\nProxy-agent: x\r\n\r\n",
        ),
        (
            "auth",
            b"HTTP/1.1 407 Proxy Authentication Required\r\nProxy-Authenticate: Basic\r\n\r\n",
        ),
        (
            "forbidden_body",
            b"HTTP/1.0 403 Forbidden\r\nContent-Length: 9\r\n\r\n<b>no</b>",
        ),
        ("stray_bytes", b"HTTP/1.1 200 OK\r\n\r\n\x16\x03\x01"),
    ];
    for (name, answer) in answers {
        add(
            corpus,
            "proxy_tunnel",
            name,
            [&[0, 0][..], &Shape::default().encode(), answer].concat(),
        );
    }
    let split = Shape {
        chunk_a: 3,
        chunk_b: 7,
        ..Shape::default()
    };
    add(
        corpus,
        "proxy_tunnel",
        "ok_split",
        [&[0, 0][..], &split.encode(), answers[0].1].concat(),
    );
    // A refusal with 256 KiB of invalid UTF-8 after its head, in one read:
    // describing the body must not cost more than the body.
    let head = b"HTTP/1.1 403 Forbidden\r\n\r\n";
    let body = [0xff; 1024];
    let repeated = Shape {
        repeat: 255,
        from: head.len() as u16,
        to: (head.len() + body.len()) as u16,
        ..Shape::default()
    };
    add(
        corpus,
        "proxy_tunnel",
        "forbidden_invalid_body",
        [&[0, 0][..], &repeated.encode(), head, &body].concat(),
    );
}

/// SOCKS5 answers: tunnels opened with and without authentication to
/// each kind of target (one with the longest reply, a 255-byte name), in
/// one read and split; each refusal; answers that are not SOCKS5; a reply
/// followed by stray bytes, or by 256 KiB in the same read; an answer cut
/// short.
fn socks5_tunnel(corpus: &mut Corpus) {
    // Knob byte: bits 0-1 credentials (none, user:pass, 255-byte user and
    // password, empty password), bits 2-3 target (domain, IPv4, IPv6,
    // 255-byte domain).
    const NONE: u8 = 0;
    const AUTH: u8 = 1;
    const LONG_AUTH: u8 = 2;
    const EMPTY_PASSWORD: u8 = 3;
    const V4: u8 = 1 << 2;
    const V6: u8 = 2 << 2;
    const LONG_NAME: u8 = 3 << 2;
    let reply_v4: &[u8] = &[5, 0, 0, 1, 10, 0, 0, 1, 0x1f, 0x90];
    let reply_v6 = [&[5, 0, 0, 4][..], &[0xfe; 16], &[0, 80]].concat();
    let reply_name = [&[5, 0, 0, 3, 13][..], b"proxy.example", &[1, 187]].concat();
    let reply_long_name = [&[5, 0, 0, 3, 255][..], &[b'n'; 255], &[1, 187]].concat();
    let chosen = |knob: u8| -> &'static [u8] {
        if knob & 3 == NONE {
            &[5, 0]
        } else {
            &[5, 2, 1, 0]
        }
    };
    let seeds: Vec<(&str, u8, Vec<u8>)> = vec![
        ("open_v4", V4, [chosen(V4), reply_v4].concat()),
        ("open_auth_name", AUTH, [chosen(AUTH), &reply_name].concat()),
        (
            "open_auth_v6",
            AUTH | V6,
            [chosen(AUTH), &reply_v6].concat(),
        ),
        (
            "open_long_everything",
            LONG_AUTH | LONG_NAME,
            [chosen(LONG_AUTH), &reply_long_name].concat(),
        ),
        (
            "open_empty_password",
            EMPTY_PASSWORD | V4,
            [chosen(EMPTY_PASSWORD), reply_v4].concat(),
        ),
        ("no_acceptable_method", NONE, vec![5, 0xff]),
        ("auth_failed", AUTH, vec![5, 2, 1, 1]),
        (
            "connection_refused",
            NONE,
            [&[5, 0, 5, 5][..], &reply_v4[2..]].concat(),
        ),
        ("method_not_offered", AUTH, vec![5, 0]),
        ("auth_version_5", AUTH, vec![5, 2, 5, 0]),
        (
            "unknown_address_type",
            NONE,
            vec![5, 0, 5, 0, 0, 2, 0, 0, 0, 0, 0, 0],
        ),
        ("http_answer", NONE, b"HTTP/1.1 200 OK\r\n\r\n".to_vec()),
        (
            "bytes_after_reply",
            NONE,
            [chosen(NONE), reply_v4, &[0x16, 3, 1]].concat(),
        ),
        (
            "cut_short",
            AUTH | LONG_NAME,
            [chosen(AUTH), &reply_long_name[..100]].concat(),
        ),
    ];
    for (name, knob, answer) in &seeds {
        add(
            corpus,
            "socks5_tunnel",
            *name,
            [&[*knob][..], &Shape::default().encode(), answer].concat(),
        );
    }
    // Byte by byte, and in reads of 3 and 7.
    for (name, chunk_a, chunk_b) in [("byte_by_byte", 1, 0), ("split", 3, 7)] {
        let shape = Shape {
            chunk_a,
            chunk_b,
            ..Shape::default()
        };
        add(
            corpus,
            "socks5_tunnel",
            format!("open_auth_v6_{name}"),
            [&[AUTH | V6][..], &shape.encode(), chosen(AUTH), &reply_v6].concat(),
        );
    }
    // 256 KiB after the reply in one read: taken no further than the
    // reply's end, whatever the read holds.
    let answer = [chosen(NONE), reply_v4].concat();
    let flood = Shape {
        repeat: 255,
        from: answer.len() as u16,
        to: (answer.len() + 1024) as u16,
        ..Shape::default()
    };
    add(
        corpus,
        "socks5_tunnel",
        "flood_after_reply",
        [&[V4][..], &flood.encode(), &answer, &[0; 1024]].concat(),
    );
}

fn main() {
    let check = std::env::args().any(|a| a == "--check");
    let mut corpus = Corpus::new();
    frame_header(&mut corpus);
    contexts(&mut corpus);
    rate_limits(&mut corpus);
    inflater(&mut corpus);
    handshakes(&mut corpus);
    extension_params(&mut corpus);
    resume_wire(&mut corpus);
    roundtrip(&mut corpus);
    write_faults(&mut corpus);
    proxy_tunnel(&mut corpus);
    socks5_tunnel(&mut corpus);

    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("corpus");
    let mut stale = Vec::<PathBuf>::new();
    for (target, seeds) in &corpus {
        let dir = root.join(target);
        std::fs::create_dir_all(&dir).expect("create corpus dir");
        for (name, bytes) in seeds {
            let path = dir.join(name);
            if std::fs::read(&path).ok().as_deref() == Some(&bytes[..]) {
                continue;
            }
            if check {
                stale.push(path);
            } else {
                std::fs::write(&path, bytes).expect("write seed");
            }
        }
    }
    if !stale.is_empty() {
        eprintln!("seeds differ from gen_corpus (run `cargo run --example gen_corpus`):");
        for path in stale {
            eprintln!("  {}", path.display());
        }
        std::process::exit(1);
    }
    let total: usize = corpus.values().map(BTreeMap::len).sum();
    println!(
        "{total} seeds for {} targets in {}",
        corpus.len(),
        root.display()
    );
}
