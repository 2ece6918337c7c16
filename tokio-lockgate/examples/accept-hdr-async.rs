//! [`accept_hdr_async`]: a server that looks at the upgrade request
//! before answering it: it reads the path and a header, refuses a request
//! without the header (401), and adds a header to the 101 response.
//!
//! ```text
//! cargo run -p tokio-lockgate --example accept-hdr-async
//! ```
//!
//! Why a callback: the upgrade request is the only HTTP request of a
//! WebSocket, so it is where a server authenticates (a token header or
//! cookie), routes by path, and tells the client something back (a
//! session id, a server version) before any message. A refusal is sent
//! as the HTTP response it returns, and the connection never opens.

use tokio::net::{TcpListener, TcpStream};
use tokio_lockgate::handshake::IntoClientRequest;
use tokio_lockgate::handshake::server::{ErrorResponse, Request, Response};
use tokio_lockgate::http::{HeaderValue, StatusCode};
use tokio_lockgate::{Error, Message, accept_hdr_async, client_async};

/// What a client must send to be let in (a real server checks a token).
const TOKEN_HEADER: &str = "x-room-token";

/// Called with the request and the 101 prepared for it: returns the
/// response to send, or the refusal to send instead.
#[allow(
    clippy::result_large_err,
    reason = "the handshake callback's signature is tungstenite's"
)]
fn check(request: &Request, mut response: Response) -> Result<Response, ErrorResponse> {
    let room = request.uri().path().trim_start_matches('/').to_owned();
    let Some(token) = request.headers().get(TOKEN_HEADER) else {
        let mut refusal = ErrorResponse::new(Some(format!("{TOKEN_HEADER} is required\n")));
        *refusal.status_mut() = StatusCode::UNAUTHORIZED;
        return Err(refusal);
    };
    println!("server: upgrade to room {room:?} with token {token:?}");
    let greeting = HeaderValue::from_str(&format!("welcome to {room}")).expect("a valid value");
    response.headers_mut().insert("x-room-greeting", greeting);
    Ok(response)
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let listener = TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    tokio::spawn(async move {
        while let Ok((tcp, _)) = listener.accept().await {
            tokio::spawn(async move {
                // A refused request ends here, after its 401 was sent.
                let Ok(mut ws) = accept_hdr_async(tcp, check).await else {
                    return;
                };
                while let Ok(message) = ws.read().await {
                    if message.is_data() && ws.send(message).await.is_err() {
                        break;
                    }
                }
            });
        }
    });
    let url = format!("ws://{addr}/lobby");

    // Without the header: refused, and the client gets the response.
    let tcp = TcpStream::connect(addr).await?;
    match client_async(url.as_str(), tcp).await {
        Err(Error::Http(response)) => println!("without {TOKEN_HEADER}: {}", response.status()),
        other => return Err(format!("expected a refusal, got {:?}", other.map(|_| ())).into()),
    }

    // With it: let in, with the server's header in the 101.
    let mut request = url.as_str().into_client_request()?;
    request
        .headers_mut()
        .insert(TOKEN_HEADER, HeaderValue::from_static("let-me-in"));
    let tcp = TcpStream::connect(addr).await?;
    let (mut ws, response) = client_async(request, tcp).await?;
    println!(
        "with {TOKEN_HEADER}: {}, x-room-greeting: {:?}",
        response.status(),
        response.headers().get("x-room-greeting")
    );
    ws.send(Message::text("hello, lobby")).await?;
    println!("echo: {}", ws.read().await?);
    ws.close(None).await?;
    while ws.read().await.is_ok() {}
    println!("closed cleanly");
    Ok(())
}
