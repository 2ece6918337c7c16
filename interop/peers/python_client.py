"""Python `websockets` client peer for interop/tests/interop.rs.

    python_client.py URL SCENARIO [ARGS...]

Connects to URL (the test's lockgate server), runs one scenario and exits 0,
or prints the problem on stderr and exits 1. It reports to the test through
stdout, one JSON object per line:

    {"event": "open", "extensions": E, "deflate": B, ...}
                                                          the connection is open: E is the
                                                          Sec-WebSocket-Extensions answered
                                                          (null if none), B whether
                                                          permessage-deflate is active, and
                                                          then what it applies: server_/
                                                          client_no_context_takeover (bools),
                                                          server_/client_max_window_bits (ints)
    {"event": "echo", "kind": "text"|"binary", "len": N}  an echo matched what was sent
    {"event": "pong", "data": "..."}                      the pong for our ping arrived
    {"event": "text", "data": "..."}                      a text message arrived
    {"event": "closed", "code": C, "reason": R}           the close frame it received
                                                          (code 1006 if none)

Scenarios:

    messages             send a small text, a small binary, 64 KiB text and 64 KiB
                         binary (all before reading), check each echo, close 1000 "done"
    large                send 16 MiB binary, check the echo, close 1000 "done"
    deflate-messages     like messages, plus an empty binary, the same 1 KiB of JSON
                         lines three times and 12 KiB of JSON lines in three fragments
    deflate-large        send 16 MiB of JSON lines as text, check the echo, close 1000 "done"
    ping DATA            ping with payload DATA, wait for the pong, close 1000 "done"
    server-ping          wait for one text message (the server pings first and
                         checks our automatic pong), close 1000 "done"
    close CODE REASON    start the closing handshake with CODE and REASON
    wait-close           wait for the server to close

permessage-deflate is chosen by the environment variable
LOCKGATE_INTEROP_DEFLATE:

    off (or unset)             disabled (compression=None)
    on                         websockets' default (compression="deflate": offers
                               client_max_window_bits)
    no-context-takeover        the same, also offering server_no_context_takeover
                               and client_no_context_takeover

It exits on its own if stdin reaches EOF (the test process died) or after
DEADLINE seconds.
"""

import asyncio
import json
import os
import sys
import threading

from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed
from websockets.extensions.permessage_deflate import ClientPerMessageDeflateFactory

DEADLINE = 120  # seconds; the Rust test's own timeouts are much shorter
MAX_SIZE = 64 * 2**20  # the test sends 16 MiB messages


def emit(event, **fields):
    print(json.dumps({"event": event, **fields}), flush=True)


def compression_options():
    """connect() arguments for LOCKGATE_INTEROP_DEFLATE (see the module doc)."""
    mode = os.environ.get("LOCKGATE_INTEROP_DEFLATE", "off")
    if mode == "off":
        return {"compression": None}
    if mode == "on":
        return {"compression": "deflate"}
    if mode == "no-context-takeover":
        # websockets' defaults (enable_client_permessage_deflate) plus both flags.
        factory = ClientPerMessageDeflateFactory(
            server_no_context_takeover=True,
            client_no_context_takeover=True,
            compress_settings={"memLevel": 5},
        )
        return {"compression": None, "extensions": [factory]}
    raise ValueError(f"unknown LOCKGATE_INTEROP_DEFLATE={mode!r}")


def emit_open(ws):
    """Reports what was negotiated: the header received and the extension in use."""
    fields = {
        "extensions": ws.response.headers.get("Sec-WebSocket-Extensions"),
        "deflate": False,
    }
    for ext in ws.protocol.extensions:
        if ext.name == "permessage-deflate":
            # local is the client (us), remote the server.
            fields.update(
                deflate=True,
                server_no_context_takeover=ext.remote_no_context_takeover,
                client_no_context_takeover=ext.local_no_context_takeover,
                server_max_window_bits=ext.remote_max_window_bits,
                client_max_window_bits=ext.local_max_window_bits,
            )
    emit("open", **fields)


def exit_when_parent_goes():
    """Exit when stdin closes: the test that spawned us is gone."""

    def watch():
        # os.read, not sys.stdin: a daemon thread blocked inside a buffered
        # reader aborts the interpreter's shutdown.
        try:
            while os.read(0, 4096):
                pass
        finally:
            os._exit(3)

    threading.Thread(target=watch, daemon=True).start()


def pattern(n, seed):
    """n deterministic bytes that are not a short repetition."""
    block = bytes((i * 31 + seed) & 0xFF for i in range(251))  # 251 is prime
    return (block * (n // len(block) + 1))[:n]


def json_lines(n):
    """n bytes of JSON lines (a str): compressible, yet not a short repetition.
    The same bytes as json_lines in interop.rs and node_client.js."""
    lines, size, i = [], 0, 0
    while True:
        ok = "true" if i % 3 == 0 else "false"
        line = f'{{"id":{i},"user":"us\u00e9r-{i % 997}","score":{i * 7919 % 100003},"ok":{ok}}}\n'
        line_size = len(line.encode())
        if size + line_size > n:
            return "".join(lines) + " " * (n - size)
        lines.append(line)
        size += line_size
        i += 1


def kind(message):
    return "text" if isinstance(message, str) else "binary"


def length(message):
    return len(message.encode()) if isinstance(message, str) else len(message)


async def echo(ws, messages):
    """Sends every message, then checks the echoes. A list is one message
    sent in fragments (its items, all str or all bytes)."""
    for message in messages:
        await ws.send(message)
    for sent in messages:
        if isinstance(sent, list):
            sent = sent[0][:0].join(sent)
        got = await ws.recv()
        if type(got) is not type(sent) or got != sent:
            raise AssertionError(
                f"echo mismatch: sent {kind(sent)} of {length(sent)} bytes, "
                f"got {kind(got)} of {length(got)} bytes"
            )
        emit("echo", kind=kind(sent), len=length(sent))


async def wait_closed(ws):
    try:
        async for message in ws:
            raise AssertionError(f"unexpected {kind(message)} message while waiting for close")
    except ConnectionClosed:
        pass
    await ws.wait_closed()


async def run(url, scenario, args):
    async with connect(
        url,
        **compression_options(),
        max_size=MAX_SIZE,
        ping_interval=None,  # no keepalive pings: the test decides who pings
        open_timeout=30,
    ) as ws:
        emit_open(ws)
        text = "h\u00e9llo, lockgate \u2713 \U0001f512"  # 1-, 2-, 3- and 4-byte UTF-8
        big_text = "lock gate \u00e9\u2713 " * 4096  # 16 bytes of UTF-8 each: 64 KiB
        if scenario == "messages":
            await echo(ws, [text, bytes(range(256)), big_text, pattern(64 * 1024, 7)])
            await ws.close(1000, "done")
        elif scenario == "large":
            await echo(ws, [pattern(16 * 2**20, 11)])
            await ws.close(1000, "done")
        elif scenario == "deflate-messages":
            repeated = json_lines(1024)  # with context takeover, mostly back-references
            chunked = json_lines(12 * 1024)
            third = len(chunked) // 3
            fragments = [chunked[:third], chunked[third : 2 * third], chunked[2 * third :]]
            await echo(
                ws,
                [text, bytes(range(256)), b"", big_text, pattern(64 * 1024, 7)]
                + [repeated, repeated, repeated, fragments],
            )
            await ws.close(1000, "done")
        elif scenario == "deflate-large":
            await echo(ws, [json_lines(16 * 2**20)])
            await ws.close(1000, "done")
        elif scenario == "ping":
            (data,) = args
            pong = await ws.ping(data.encode())
            # Resolves only for a pong with the ping's payload.
            await pong
            emit("pong", data=data)
            await ws.close(1000, "done")
        elif scenario == "server-ping":
            # websockets answers the server's ping by itself and does not
            # expose it; the server checks the pong.
            message = await ws.recv()
            if not isinstance(message, str):
                raise AssertionError(f"expected text, got binary of {len(message)} bytes")
            emit("text", data=message)
            await ws.close(1000, "done")
        elif scenario == "close":
            code, reason = args
            await ws.close(int(code), reason)
        elif scenario == "wait-close":
            await wait_closed(ws)
        else:
            raise ValueError(f"unknown scenario {scenario!r}")
        await ws.wait_closed()
    emit("closed", code=ws.close_code, reason=ws.close_reason)


async def main():
    exit_when_parent_goes()
    url, scenario, *args = sys.argv[1:]
    await asyncio.wait_for(run(url, scenario, args), DEADLINE)


if __name__ == "__main__":
    try:
        asyncio.run(main())
    except Exception as exc:
        print(f"python_client: {type(exc).__name__}: {exc}", file=sys.stderr)
        sys.exit(1)
