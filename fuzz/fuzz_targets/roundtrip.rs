//! Structure-aware: the input describes messages (text, binary, ping, pong;
//! sizes up to 256 KiB; some written uncompressed) and a role; one context
//! writes them, with or without permessage-deflate, the peer context reads
//! the bytes in arbitrary reads. Invariant: the peer reads exactly the
//! messages written, in order, and an optional closing handshake completes
//! on both ends.
#![no_main]

use libfuzzer_sys::fuzz_target;
use lockgate::{CloseCode, CloseFrame, Config, Error, Message, Role};
use lockgate_fuzz::{Knobs, chunk_len, context_pair, deflate_config, deflate_params, transfer};

/// Close codes an application may send.
const CODES: [u16; 8] = [1000, 1001, 1002, 1003, 1008, 1011, 3000, 4999];

/// The messages described by `body`: records of a kind byte, a length
/// byte and that many data bytes. Kind bits 0-1: text, binary, ping, pong;
/// bits 2-3: the data is repeated to 1, 16, 256 or 2048 times the length
/// byte (capped at 256 KiB); bit 4: write uncompressed.
fn messages(mut body: &[u8]) -> Vec<(Message, bool)> {
    let mut out = Vec::new();
    while let [kind, len, rest @ ..] = body {
        let data = &rest[..usize::from(*len).min(rest.len())];
        body = &rest[data.len()..];
        let size =
            (usize::from(*len) * [1, 16, 256, 2048][usize::from(kind >> 2 & 3)]).min(256 << 10);
        let payload: Vec<u8> = data
            .iter()
            .copied()
            .cycle()
            .take(if data.is_empty() { 0 } else { size })
            .collect();
        let msg = match kind & 3 {
            0 => Message::text(String::from_utf8_lossy(&payload).into_owned()),
            1 => Message::binary(payload),
            2 => Message::Ping(payload[..payload.len().min(125)].to_vec().into()),
            _ => Message::Pong(payload[..payload.len().min(125)].to_vec().into()),
        };
        out.push((msg, kind & 0x10 != 0));
        if out.len() == 64 {
            break;
        }
    }
    out
}

fuzz_target!(|data: &[u8]| {
    let (mut knobs, body) = Knobs::split(data, 5);
    let flags = knobs.byte();
    let params = deflate_params(knobs.byte());
    let local = knobs.byte();
    let step = chunk_len(knobs.byte());
    let close = knobs.byte();
    let role = if flags & 1 != 0 {
        Role::Client
    } else {
        Role::Server
    };
    let config = Config::default().deflate(Some(deflate_config(local)));
    let (mut writer, mut reader) = context_pair(role, config, (flags & 2 != 0).then_some(params));

    let sent = messages(body);
    let mut got = Vec::new();
    for (i, (msg, uncompressed)) in sent.iter().enumerate() {
        let result = if *uncompressed {
            writer.write_uncompressed(msg.clone())
        } else {
            writer.write(msg.clone())
        };
        result.expect("write");
        // Transfer after some messages only: several may share a read.
        if flags >> 2 & 3 == 0 || i.is_multiple_of(usize::from(flags >> 2 & 3)) {
            got.extend(transfer(&mut writer, &mut reader, step));
        }
    }
    got.extend(transfer(&mut writer, &mut reader, step));
    let sent: Vec<Message> = sent.into_iter().map(|(msg, _)| msg).collect();
    assert_eq!(got, sent, "the peer reads what was written");

    if close & 1 != 0 {
        let code = CloseCode::from(CODES[usize::from(close >> 1 & 7)]);
        let mut reason = String::from_utf8_lossy(body).into_owned();
        let mut cut = reason.len().min(123);
        while !reason.is_char_boundary(cut) {
            cut -= 1;
        }
        reason.truncate(cut);
        writer
            .close(Some(CloseFrame::new(code, reason.clone())))
            .expect("close");
        let got = transfer(&mut writer, &mut reader, step);
        assert_eq!(got, [Message::Close(Some(CloseFrame::new(code, reason)))]);
        // The reader may still owe a pong for the newest ping.
        let last_ping = sent.iter().rev().find_map(|m| match m {
            Message::Ping(p) => Some(Message::Pong(p.clone())),
            _ => None,
        });
        let mut echo = transfer(&mut reader, &mut writer, step);
        if echo.len() == 2 {
            assert_eq!(
                Some(echo.remove(0)),
                last_ping,
                "pong before the close reply"
            );
        }
        assert_eq!(echo, [Message::Close(Some(CloseFrame::new(code, "")))]);
        assert!(matches!(
            writer.next_message(),
            Err(Error::ConnectionClosed)
        ));
        assert!(matches!(
            reader.next_message(),
            Err(Error::ConnectionClosed)
        ));
        assert!(matches!(reader.next_message(), Err(Error::AlreadyClosed)));
    }
});
