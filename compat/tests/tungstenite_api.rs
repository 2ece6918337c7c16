//! tungstenite 0.30's and tokio-tungstenite 0.30's documented API, as a
//! program written against them uses it: imports by their paths, matches
//! on the error variants, handshakes over blocking and non-blocking
//! streams, the config, `SinkExt`/`StreamExt` with `SplitSink` /
//! `SplitStream` in types. Written for the upstream crates (it builds
//! against them with `#![deny(warnings)]`) and renamed as the examples
//! are; building it here, with the crate's warnings denied, is the check.
//! Only `misc` runs (the rest needs peers; the examples' tests have them).
#![deny(warnings)]
#![allow(dead_code, deprecated)]
#![deny(unsafe_code)]
// A user's program, in its author's style: clippy's opinions of it are not
// what is checked.
#![allow(clippy::all)]
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};

use futures_util::{
    SinkExt, StreamExt,
    stream::{SplitSink, SplitStream},
};
use lockgate::client::{IntoClientRequest, connect_with_config, uri_mode};
use lockgate::error::{CapacityError, ProtocolError, SubProtocolError, TlsError, UrlError};
use lockgate::handshake::client::{
    Request as ClientRequest, Response as ClientResponse, generate_key,
};
use lockgate::handshake::server::{
    Callback, ErrorResponse, NoCallback, Request, Response, create_response,
};
use lockgate::handshake::{HandshakeRole, MidHandshake, derive_accept_key};
use lockgate::protocol::frame::coding::{CloseCode, Control, Data, OpCode};
use lockgate::protocol::frame::{CloseFrame, Frame, FrameHeader};
use lockgate::protocol::{Role, WebSocketConfig, WebSocketContext};
use lockgate::stream::{MaybeTlsStream, Mode, NoDelay};
use lockgate::util::NonBlockingResult;
use lockgate::{
    Bytes, ClientHandshake, ClientRequestBuilder, Connector, Error, HandshakeError, Message,
    Result, ServerHandshake, Utf8Bytes, WebSocket, accept, accept_hdr, accept_hdr_with_config,
    accept_with_config, client, client_tls, client_tls_with_config, connect,
};
use tokio_lockgate::{
    WebSocketStream, accept_async, accept_async_with_config, accept_hdr_async,
    accept_hdr_async_with_config, client_async, client_async_with_config, connect_async,
    connect_async_with_config,
};

pub(crate) fn errors(e: Error) -> String {
    match e {
        Error::ConnectionClosed | Error::AlreadyClosed => "closed".into(),
        Error::Io(e) => e.to_string(),
        Error::Tls(t) => t.to_string(),
        Error::Capacity(CapacityError::MessageTooLong { size, max_size }) => {
            format!("{size}{max_size}")
        }
        Error::Capacity(CapacityError::TooManyHeaders) => "headers".into(),
        Error::Protocol(ProtocolError::ResetWithoutClosingHandshake) => "reset".into(),
        Error::Protocol(ProtocolError::SecWebSocketSubProtocolError(
            SubProtocolError::InvalidSubProtocol,
        )) => "sub".into(),
        Error::Protocol(p) => p.to_string(),
        Error::WriteBufferFull(m) => m.to_string(),
        Error::Utf8(s) => s,
        Error::AttackAttempt => "attack".into(),
        Error::Url(UrlError::TlsFeatureNotEnabled) => "tls".into(),
        Error::Url(u) => u.to_string(),
        Error::Http(r) => format!("{} {:?}", r.status(), r.body()),
        Error::HttpFormat(e) => e.to_string(),
        #[allow(unreachable_patterns)]
        _ => "other".into(),
    }
}

fn must_not_block<R: HandshakeRole>(e: HandshakeError<R>) -> Error {
    match e {
        HandshakeError::Interrupted(_) => panic!("blocked"),
        HandshakeError::Failure(f) => f,
    }
}

pub(crate) fn blocking_server(listener: TcpListener) -> Result<()> {
    for stream in listener.incoming() {
        let stream = stream?;
        stream.set_nodelay(true)?;
        let callback =
            |req: &Request, mut resp: Response| -> std::result::Result<Response, ErrorResponse> {
                if req.uri().path() == "/deny" {
                    let r: ErrorResponse = lockgate::http::Response::builder()
                        .status(403)
                        .body(Some("no".into()))
                        .unwrap();
                    return Err(r);
                }
                resp.headers_mut().append("x", "y".parse().unwrap());
                Ok(resp)
            };
        let config = WebSocketConfig::default()
            .max_message_size(Some(1 << 20))
            .accept_unmasked_frames(false);
        let mut ws: WebSocket<TcpStream> =
            accept_hdr_with_config(stream, callback, Some(config)).map_err(must_not_block)?;
        ws.set_config(|c| c.max_frame_size = Some(1 << 16));
        let _max = ws.get_config().max_message_size;
        while ws.can_read() {
            match ws.read()? {
                msg @ Message::Text(_) | msg @ Message::Binary(_) => {
                    if ws.can_write() {
                        ws.send(msg)?;
                    }
                }
                Message::Ping(p) => ws.write(Message::Pong(p))?,
                Message::Pong(_) | Message::Frame(_) => {}
                Message::Close(Some(CloseFrame { code, reason })) => {
                    let _c: u16 = code.into();
                    let _r: &str = &reason;
                }
                Message::Close(None) => {}
            }
            ws.flush()?;
        }
        ws.close(Some(CloseFrame {
            code: CloseCode::Normal,
            reason: "bye".into(),
        }))?;
        let _s: &TcpStream = ws.get_ref();
        let _m: &mut TcpStream = ws.get_mut();
    }
    Ok(())
}

pub(crate) fn simple_accepts(a: TcpStream, b: TcpStream, c: TcpStream) {
    let _ = accept(a).map(|mut ws| ws.send("hi".into()));
    let _ = accept_with_config(b, None);
    let _: std::result::Result<
        WebSocket<TcpStream>,
        HandshakeError<ServerHandshake<TcpStream, NoCallback>>,
    > = accept_hdr(c, NoCallback);
}

pub(crate) fn nonblocking(stream: TcpStream) -> Result<()> {
    stream.set_nonblocking(true)?;
    let mut hs = match accept(stream) {
        Ok(_) => return Ok(()),
        Err(HandshakeError::Interrupted(m)) => m,
        Err(HandshakeError::Failure(e)) => return Err(e),
    };
    let _s: &TcpStream = hs.get_ref().get_ref();
    loop {
        match hs.handshake() {
            Ok(mut ws) => {
                let _ = ws.read().no_block()?;
                return Ok(());
            }
            Err(HandshakeError::Interrupted(m)) => hs = m,
            Err(HandshakeError::Failure(e)) => return Err(e),
        }
    }
}

pub(crate) fn clients() -> Result<()> {
    let (mut ws, response): (WebSocket<MaybeTlsStream<TcpStream>>, ClientResponse) =
        connect("ws://localhost:1/x")?;
    let _status = response.status();
    for (name, value) in response.headers() {
        let _ = (name, value);
    }
    ws.send(Message::text("hello"))?;
    ws.send(Message::binary(vec![1u8, 2, 3]))?;
    ws.send(Message::Ping(Bytes::from_static(b"p")))?;
    match ws.get_mut() {
        MaybeTlsStream::Plain(s) => s.set_nodelay(true)?,
        _ => {}
    }
    NoDelay::set_nodelay(ws.get_mut(), true)?;
    let msg = ws.read()?;
    let _t: &str = msg.to_text()?;
    let _b: Bytes = msg.clone().into_data();
    let _u: Utf8Bytes = msg.clone().into_text()?;
    let _l = msg.len() + usize::from(msg.is_empty());
    let _ = (
        msg.is_text(),
        msg.is_binary(),
        msg.is_ping(),
        msg.is_pong(),
        msg.is_close(),
    );
    println!("{msg}");

    let req = ClientRequestBuilder::new("ws://localhost:1/".parse().unwrap())
        .with_header("Authorization", "Bearer x")
        .with_sub_protocol("chat");
    let _ = connect(req);
    let mut request: ClientRequest = "ws://localhost:1/".into_client_request()?;
    request
        .headers_mut()
        .insert("x-y", lockgate::http::HeaderValue::from_static("z"));
    let _ = connect_with_config(request, Some(WebSocketConfig::default()), 3);
    let _m: Mode = uri_mode(&"wss://x/".parse().unwrap())?;
    let tcp = TcpStream::connect("127.0.0.1:1")?;
    let r: std::result::Result<
        (WebSocket<TcpStream>, ClientResponse),
        HandshakeError<ClientHandshake<TcpStream>>,
    > = client("ws://localhost:1/", tcp);
    let _ = r;
    let tcp = TcpStream::connect("127.0.0.1:1")?;
    let _ = client_tls("ws://localhost:1/", tcp);
    let tcp = TcpStream::connect("127.0.0.1:1")?;
    let _ = client_tls_with_config("ws://localhost:1/", tcp, None, Some(Connector::Plain));
    Ok(())
}

pub(crate) fn misc() {
    let _k = generate_key();
    let _a: String = derive_accept_key(b"dGhlIHNhbXBsZSBub25jZQ==");
    let _f = Frame::message(Bytes::from_static(b"x"), OpCode::Data(Data::Text), true);
    let _p = Frame::ping(Bytes::new());
    let _h = FrameHeader::default();
    let _c = OpCode::Control(Control::Ping);
    let code = CloseCode::from(1000u16);
    let _: u16 = u16::from(code);
    let _ok = code == CloseCode::Normal;
    let _u = Utf8Bytes::from_static("x");
    let _u2: Utf8Bytes = String::from("s").into();
    let _u3 = Utf8Bytes::try_from(Bytes::from_static(b"abc")).unwrap();
    let _s: &str = _u3.as_str();
    let _eq = _u3 == "abc";
    let _m = Message::Frame(Frame::pong(Bytes::new()));
    let _ctx = WebSocketContext::new(Role::Server, None);
    let _r = create_response(&lockgate::http::Request::builder().body(()).unwrap());
    let _ = TlsError::InvalidDnsName;
    // The variant chosen for a condition, and its text, are tungstenite's.
    let long = Error::Capacity(CapacityError::MessageTooLong {
        size: 1025,
        max_size: 1024,
    });
    assert_eq!(every_variant(&long), "MessageTooLong");
    assert_eq!(
        long.to_string(),
        "Space limit exceeded: Message too long: 1025 > 1024"
    );
    assert_eq!(
        Error::Protocol(ProtocolError::ResetWithoutClosingHandshake).to_string(),
        "WebSocket protocol error: Connection reset without closing handshake"
    );
    assert_eq!(
        Error::ConnectionClosed.to_string(),
        "Connection closed normally"
    );
    let raw = raw(std::io::Cursor::new(Vec::new()));
    assert_eq!(lent_config(&raw).max_message_size, Some(64 << 20));
}

/// Every variant, no wildcard: how tokio-tungstenite-wasm and other
/// libraries map tungstenite's errors onto their own. It compiles only if
/// the enums have exactly tungstenite's variants and are exhaustive.
pub(crate) fn every_variant(e: &Error) -> &'static str {
    match e {
        Error::ConnectionClosed => "ConnectionClosed",
        Error::AlreadyClosed => "AlreadyClosed",
        Error::Io(_) => "Io",
        Error::Tls(_) => "Tls",
        Error::Capacity(c) => match c {
            CapacityError::TooManyHeaders => "TooManyHeaders",
            CapacityError::MessageTooLong { .. } => "MessageTooLong",
        },
        Error::Protocol(p) => match p {
            ProtocolError::WrongHttpMethod => "WrongHttpMethod",
            ProtocolError::WrongHttpVersion => "WrongHttpVersion",
            ProtocolError::MissingConnectionUpgradeHeader => "MissingConnectionUpgradeHeader",
            ProtocolError::MissingUpgradeWebSocketHeader => "MissingUpgradeWebSocketHeader",
            ProtocolError::MissingSecWebSocketVersionHeader => "MissingSecWebSocketVersionHeader",
            ProtocolError::MissingSecWebSocketKey => "MissingSecWebSocketKey",
            ProtocolError::InvalidSecWebSocketKey => "InvalidSecWebSocketKey",
            ProtocolError::SecWebSocketAcceptKeyMismatch => "SecWebSocketAcceptKeyMismatch",
            ProtocolError::SecWebSocketSubProtocolError(s) => match s {
                SubProtocolError::ServerSentSubProtocolNoneRequested => "NoneRequested",
                SubProtocolError::InvalidSubProtocol => "InvalidSubProtocol",
                SubProtocolError::NoSubProtocol => "NoSubProtocol",
            },
            ProtocolError::JunkAfterRequest => "JunkAfterRequest",
            ProtocolError::CustomResponseSuccessful => "CustomResponseSuccessful",
            ProtocolError::InvalidHeader(_) => "InvalidHeader",
            ProtocolError::HandshakeIncomplete => "HandshakeIncomplete",
            ProtocolError::HttparseError(_) => "HttparseError",
            ProtocolError::SendAfterClosing => "SendAfterClosing",
            ProtocolError::ReceivedAfterClosing => "ReceivedAfterClosing",
            ProtocolError::NonZeroReservedBits => "NonZeroReservedBits",
            ProtocolError::UnmaskedFrameFromClient => "UnmaskedFrameFromClient",
            ProtocolError::MaskedFrameFromServer => "MaskedFrameFromServer",
            ProtocolError::FragmentedControlFrame => "FragmentedControlFrame",
            ProtocolError::ControlFrameTooBig => "ControlFrameTooBig",
            ProtocolError::UnknownControlFrameType(_) => "UnknownControlFrameType",
            ProtocolError::UnknownDataFrameType(_) => "UnknownDataFrameType",
            ProtocolError::UnexpectedContinueFrame => "UnexpectedContinueFrame",
            ProtocolError::ExpectedFragment(_) => "ExpectedFragment",
            ProtocolError::ResetWithoutClosingHandshake => "ResetWithoutClosingHandshake",
            ProtocolError::InvalidOpcode(_) => "InvalidOpcode",
            ProtocolError::InvalidCloseSequence => "InvalidCloseSequence",
        },
        Error::WriteBufferFull(_) => "WriteBufferFull",
        Error::Utf8(_) => "Utf8",
        Error::AttackAttempt => "AttackAttempt",
        Error::Url(u) => match u {
            UrlError::TlsFeatureNotEnabled => "TlsFeatureNotEnabled",
            UrlError::NoHostName => "NoHostName",
            UrlError::UnableToConnect(_) => "UnableToConnect",
            UrlError::UnsupportedUrlScheme => "UnsupportedUrlScheme",
            UrlError::EmptyHostName => "EmptyHostName",
            UrlError::NoPathOrQuery => "NoPathOrQuery",
        },
        Error::Http(_) => "Http",
        Error::HttpFormat(_) => "HttpFormat",
    }
}

/// tungstenite lends its configuration; frameworks hand the reference on.
pub(crate) fn lent_config<S>(ws: &WebSocket<S>) -> &WebSocketConfig {
    ws.get_config()
}

/// The same from tokio-tungstenite's stream.
pub(crate) fn lent_async_config<S>(ws: &WebSocketStream<S>) -> &WebSocketConfig {
    ws.get_config()
}

pub(crate) fn raw<S: Read + Write + 'static>(s: S) -> WebSocket<S> {
    WebSocket::from_raw_socket(s, Role::Client, None)
}

pub(crate) struct Chat {
    pub(crate) sink: SplitSink<WebSocketStream<tokio::net::TcpStream>, Message>,
    pub(crate) stream: SplitStream<WebSocketStream<tokio::net::TcpStream>>,
}

pub async fn tokio_side(tcp: tokio::net::TcpStream, tcp2: tokio::net::TcpStream) -> Result<()> {
    let ws = accept_async(tcp).await?;
    let (sink, stream) = ws.split();
    let mut chat = Chat { sink, stream };
    chat.sink.send(Message::text("x")).await?;
    chat.sink.feed(Message::text("y")).await?;
    chat.sink.flush().await?;
    while let Some(msg) = chat.stream.next().await {
        let _ = msg?;
    }
    let mut ws = accept_hdr_async(tcp2, |_: &Request, r: Response| Ok(r)).await?;
    ws.send(Message::text("a")).await?;
    ws.close(None).await?;
    let _c = ws.get_config().max_message_size;
    let (mut ws, _resp) = connect_async("ws://localhost:1").await?;
    ws.send(Message::binary(Bytes::from_static(b"b"))).await?;
    let _ = ws.next().await;
    let _ = connect_async_with_config("ws://localhost:1", None, true).await?;
    let (a, _b) = tokio::io::duplex(64);
    let mut ws = WebSocketStream::from_raw_socket(a, Role::Server, None).await;
    let _ = ws.send(Message::text("z")).await;
    let _: &tokio::io::DuplexStream = ws.get_ref();
    let (a, _b) = tokio::io::duplex(64);
    let _ = WebSocketStream::from_partially_read(
        a,
        vec![],
        Role::Server,
        Some(WebSocketConfig::default()),
    )
    .await;
    let (a, _b) = tokio::io::duplex(64);
    let _ = accept_async_with_config(a, None).await;
    let (a, _b) = tokio::io::duplex(64);
    let _ = accept_hdr_async_with_config(a, NoCallback, None).await;
    let (a, _b) = tokio::io::duplex(64);
    let _ = client_async("ws://x/", a).await;
    let (a, _b) = tokio::io::duplex(64);
    let _ = client_async_with_config("ws://x/", a, None).await;
    Ok(())
}

pub(crate) fn callback_type<C: Callback>(c: C) -> C {
    c
}
pub(crate) fn mid<R: HandshakeRole>(m: MidHandshake<R>) -> MidHandshake<R> {
    m
}

#[test]
fn the_plain_parts_work_as_in_tungstenite() {
    misc();
    let code = CloseCode::from(1000u16);
    assert_eq!(u16::from(code), 1000);
    assert_eq!(Message::text("a").to_text().unwrap(), "a");
}
