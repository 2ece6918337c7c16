//! Clients of the `lockgate.seq.v1` subprotocol, and a plain publisher
//! that learns when the node has accepted (stored) each message.

use futures_util::StreamExt;
use lockgate_fanout::seq::{EPOCH_HEADER, Kind, SUBPROTOCOL, Sequenced};
use tokio::sync::mpsc;
use tokio_lockgate::http::Request;
use tokio_lockgate::{CloseCode, Error, Message, WebSocketWriteHalf, connect_async};

use super::{Client, within};

/// One message as a seq client received it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Received {
    pub position: u64,
    pub kind: Kind,
    pub payload: Vec<u8>,
}

impl Received {
    pub fn text(&self) -> &str {
        std::str::from_utf8(&self.payload).expect("a UTF-8 payload")
    }
}

/// What a seq client reads next.
#[derive(Debug)]
pub enum Next {
    Data(Received),
    /// A close frame: its code and reason (`None`: no code).
    Closed(Option<(CloseCode, String)>),
    /// The connection ended without a close frame (its node was killed).
    Broken(String),
}

/// A client that offered `lockgate.seq.v1` and got it.
pub struct SeqClient {
    pub ws: Client,
    pub epoch: String,
}

/// The URL of `topic` on `addr`, resuming after `since` if given.
pub fn topic_url(addr: &str, topic: &str, since: Option<&str>) -> String {
    match since {
        Some(since) => format!("ws://{addr}/topics/{topic}?since={since}"),
        None => format!("ws://{addr}/topics/{topic}"),
    }
}

/// The upgrade offering the subprotocol, as a resuming client sends it.
pub async fn connect_seq(url: &str) -> Result<(Client, tokio_lockgate::http::Response<()>), Error> {
    let request = Request::get(url)
        .header("sec-websocket-protocol", SUBPROTOCOL)
        .body(())
        .expect("a request");
    let (ws, response) = within(20, "a seq client's handshake", connect_async(request)).await?;
    let (parts, _) = response.into_parts();
    Ok((ws, tokio_lockgate::http::Response::from_parts(parts, ())))
}

impl SeqClient {
    /// Connects to `topic` on `addr` (after `since`, if given) and checks
    /// the 101: the subprotocol chosen and an epoch given.
    pub async fn connect(addr: &str, topic: &str, since: Option<&str>) -> Self {
        let url = topic_url(addr, topic, since);
        let (ws, response) = connect_seq(&url)
            .await
            .unwrap_or_else(|e| panic!("{url}: {e}"));
        let protocol = response
            .headers()
            .get("sec-websocket-protocol")
            .map(|v| v.to_str().expect("ASCII").to_owned());
        assert_eq!(protocol.as_deref(), Some(SUBPROTOCOL), "{url}: the 101");
        assert_eq!(ws.subprotocol(), Some(SUBPROTOCOL));
        let epoch = response
            .headers()
            .get(EPOCH_HEADER)
            .unwrap_or_else(|| panic!("{url}: no {EPOCH_HEADER} in the 101"))
            .to_str()
            .expect("an ASCII epoch")
            .to_owned();
        assert!(!epoch.is_empty(), "{url}: an empty epoch");
        Self { ws, epoch }
    }

    /// The next message, close or end (at most 30 s).
    pub async fn next(&mut self) -> Next {
        let read = within(30, "a seq client's next message", async {
            loop {
                // The node's keepalive pings are answered by the library.
                match self.ws.read().await {
                    Ok(Message::Ping(_) | Message::Pong(_)) => {}
                    other => return other,
                }
            }
        })
        .await;
        match read {
            Ok(Message::Binary(frame)) => {
                let m = Sequenced::decode(&frame)
                    .unwrap_or_else(|| panic!("an undecodable frame {frame:?}"));
                Next::Data(Received {
                    position: m.position,
                    kind: m.kind,
                    payload: m.payload.to_vec(),
                })
            }
            Ok(Message::Close(frame)) => {
                // Answering the close completes the closing handshake.
                let _ = within(10, "the end after a close", async {
                    while self.ws.read().await.is_ok() {}
                })
                .await;
                Next::Closed(frame.map(|f| (f.code, f.reason.as_str().to_owned())))
            }
            Ok(other) => panic!("a seq client got {other:?}, not a binary frame"),
            Err(e) => Next::Broken(e.to_string()),
        }
    }

    /// The next data message; anything else fails the test.
    pub async fn data(&mut self) -> Received {
        match self.next().await {
            Next::Data(m) => m,
            other => panic!("expected a message, got {other:?}"),
        }
    }

    /// Reads data messages until one whose payload is `last` (included).
    pub async fn until(&mut self, last: &str) -> Vec<Received> {
        let mut got = Vec::new();
        for _ in 0..100_000 {
            let m = self.data().await;
            let done = m.payload == last.as_bytes();
            got.push(m);
            if done {
                return got;
            }
        }
        panic!("{last:?} never came");
    }

    /// `since` to resume after `position`.
    pub fn since(&self, position: u64) -> String {
        format!("{}:{position}", self.epoch)
    }
}

/// Positions strictly increasing, as the contract promises.
pub fn assert_increasing(got: &[Received]) {
    for pair in got.windows(2) {
        assert!(
            pair[0].position < pair[1].position,
            "positions not increasing: {:?} then {:?}",
            pair[0],
            pair[1]
        );
    }
}

/// The payloads, as text.
pub fn texts(got: &[Received]) -> Vec<String> {
    got.iter().map(|m| m.text().to_owned()).collect()
}

/// A plain client (no subprotocol) that publishes; being subscribed too,
/// it receives its own messages back, which with a history happens only
/// once the history stored them: the evidence that a message was
/// accepted.
pub struct Publisher {
    sink: WebSocketWriteHalf<super::MaybeTls>,
    echoes: mpsc::UnboundedReceiver<Message>,
}

impl Publisher {
    pub async fn connect(addr: &str, topic: &str) -> Self {
        let url = topic_url(addr, topic, None);
        let (ws, response) = within(20, "the publisher connects", connect_async(&url))
            .await
            .unwrap_or_else(|e| panic!("{url}: {e}"));
        assert!(
            response.headers().get("sec-websocket-protocol").is_none(),
            "no subprotocol was offered"
        );
        let (sink, mut stream) = ws.into_split();
        let (tx, echoes) = mpsc::unbounded_channel();
        tokio::spawn(async move {
            while let Some(Ok(msg)) = stream.next().await {
                if msg.is_data() && tx.send(msg).is_err() {
                    return;
                }
            }
        });
        Self { sink, echoes }
    }

    pub async fn send(&mut self, msg: Message) {
        within(20, "a publish", self.sink.send(msg))
            .await
            .expect("the publisher's connection is open");
    }

    pub async fn text(&mut self, text: &str) {
        self.send(Message::text(text.to_owned())).await;
    }

    /// Sends `name{i}` for each `i` in `range`, then waits until the last
    /// came back (accepted).
    pub async fn texts(&mut self, name: &str, range: std::ops::Range<usize>) {
        let mut last = None;
        for i in range {
            let text = format!("{name}{i}");
            self.text(&text).await;
            last = Some(text);
        }
        if let Some(last) = last {
            self.accepted(&last).await;
        }
    }

    /// Waits until the echo of the text `text` (messages before it are
    /// passed over).
    pub async fn accepted(&mut self, text: &str) {
        within(30, "the publisher's echo", async {
            loop {
                let msg = self.echoes.recv().await.expect("the publisher is open");
                if msg == Message::text(text.to_owned()) {
                    return;
                }
            }
        })
        .await;
    }

    /// The next echo, if one comes within `limit`.
    pub async fn echo_within(&mut self, limit: std::time::Duration) -> Option<Message> {
        tokio::time::timeout(limit, self.echoes.recv())
            .await
            .ok()
            .flatten()
    }
}

/// The next data message of a plain client, past keepalive pings.
pub async fn plain_data(client: &mut Client) -> Message {
    within(30, "a plain client's message", async {
        loop {
            let msg = client.read().await.expect("the plain client is open");
            if msg.is_data() {
                return msg;
            }
        }
    })
    .await
}
