//! The raw permessage-deflate inflater (`lockgate::fuzz_api::Inflater`,
//! built only with `--cfg fuzzing`).
//!
//! 1. Arbitrary bytes as compressed frames (cut by the input, some final):
//!    no panic; the output, and the capacity reserved for it, never exceed
//!    `max + 1`; `TooLarge` only once the output passed `max`; heap stays
//!    within a constant of `max`, whatever the input (no bomb).
//! 2. Round trip: messages a context writes with permessage-deflate are
//!    read back intact by the peer context, and the raw inflater decodes
//!    the same payloads from the frames on the wire.
#![no_main]

#[cfg(fuzzing)]
mod target {
    use libfuzzer_sys::fuzz_target;
    use lockgate::fuzz_api::{InflateFailure, Inflater};
    use lockgate::{Buf, Config, Message, Next, Operation, Role, frame::OpCode};
    use lockgate_fuzz::{
        HeapWatch, Knobs, Shape, context_pair, deflate_config, deflate_params, take_frames,
    };

    fuzz_target!(|data: &[u8]| {
        let (mut knobs, body) = Knobs::split(data, 11);
        let params = deflate_params(knobs.byte());
        let local = knobs.byte();
        let max = [64 << 10, 1 << 10, 0, 16 << 10][usize::from(knobs.byte() & 3)];
        let fins = knobs.byte();
        let shape = Shape::read(&mut knobs);
        let stream = shape.expand(body);
        raw(
            &stream,
            &shape,
            params.server_max_window_bits,
            params.server_no_context_takeover,
            max,
            fins,
            data,
        );
        let role = if local & 0x80 != 0 {
            Role::Client
        } else {
            Role::Server
        };
        round_trip(&stream, body, &shape, role, params, local);
    });

    fn raw(stream: &[u8], shape: &Shape, bits: u8, nct: bool, max: usize, fins: u8, data: &[u8]) {
        let watch = HeapWatch::start();
        let mut inflater = Inflater::new(bits, nct);
        for (i, frame) in shape.chunks(stream).enumerate() {
            let fin = fins >> (i % 8) & 1 == 0;
            let result = inflater.inflate(frame, fin, max);
            assert!(inflater.output().len() <= max + 1);
            assert!(
                inflater.output_capacity() <= max + 1,
                "capacity past the limit"
            );
            match result {
                Ok(()) if fin => assert!(inflater.take_output().len() <= max),
                Ok(()) => {}
                Err(InflateFailure::TooLarge) => {
                    assert!(inflater.output().len() > max);
                    inflater.take_output();
                }
                Err(InflateFailure::Invalid) => {
                    inflater.take_output();
                }
            }
        }
        // Output and its copy while growing, the decompressor, slack.
        watch.check(4 * max + (256 << 10), "4 x max + 256 KiB", data);
    }

    fn round_trip(
        stream: &[u8],
        body: &[u8],
        shape: &Shape,
        role: Role,
        params: lockgate::deflate::DeflateParams,
        local: u8,
    ) {
        let config = Config::default().deflate(Some(deflate_config(local)));
        let (mut writer, mut reader) = context_pair(role, config, Some(params));
        let sent = [
            Message::binary(stream[..stream.len().min(256 << 10)].to_vec()),
            Message::text(String::from_utf8_lossy(body).into_owned()),
            Message::binary(body.to_vec()),
        ];
        let mut inflater = Inflater::new(
            params.compress_window_bits(role),
            params.compress_no_context_takeover(role),
        );
        let mut wire = Vec::new();
        let mut got = Vec::new();
        for msg in &sent {
            writer.write(msg.clone()).expect("write");
            while writer.buffered_output() > 0 {
                let mut output = writer.output();
                let chunk = output.chunk();
                let take = chunk.len().min(lockgate_fuzz::chunk_len(shape.chunk_a));
                wire.extend_from_slice(&chunk[..take]);
                reader.feed(&chunk[..take]);
                output.advance(take);
                while let Some(msg) = reader
                    .next_message()
                    .expect("peer reads what lockgate wrote")
                {
                    got.push(msg);
                }
            }
            // A flushed burst may release idle compression state.
            writer.flush();
            while writer.poll(Operation::Flush).expect("flush") == Next::Flush {
                writer.flushed();
            }
        }
        assert_eq!(got, sent, "round trip through permessage-deflate");

        let mut messages = sent.iter();
        for (header, payload) in take_frames(&mut wire) {
            assert!(header.is_final, "whole messages are one frame");
            let expected = messages.next().expect("one frame per message");
            let expected: &[u8] = match expected {
                Message::Text(t) => t.as_bytes(),
                Message::Binary(b) => b,
                _ => unreachable!(),
            };
            assert!(matches!(header.opcode, OpCode::Text | OpCode::Binary));
            if header.rsv1 {
                inflater
                    .inflate(&payload, true, usize::MAX - 1)
                    .expect("inflate own output");
                assert_eq!(inflater.take_output(), expected, "raw inflater");
            } else {
                assert_eq!(payload, expected);
            }
        }
        assert!(wire.is_empty() && messages.next().is_none());
    }
}
