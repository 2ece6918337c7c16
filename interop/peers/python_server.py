"""Python `websockets` server peer for interop/tests/interop.rs.

Serves exactly one WebSocket connection on 127.0.0.1 (port chosen by the OS),
then exits (0 on success, 1 on error). It talks to the test through stdout,
one JSON object per line:

    {"event": "listening", "port": N}            always the first line
    {"event": "open", "extensions": E, "deflate": B, ...}
                                                 the connection is open: E is the
                                                 Sec-WebSocket-Extensions it answered
                                                 (null if none), B whether
                                                 permessage-deflate is active, and then
                                                 what it applies: server_/client_
                                                 no_context_takeover (bools) and
                                                 server_/client_max_window_bits (ints)
    {"event": "pong", "data": "..."}             /ping: the client's pong arrived
    {"event": "closed", "code": C, "reason": R}  the close frame it received
                                                 (code 1006 if none)

The request path picks the scenario:

    /echo                      echo every text/binary message until the client closes
    /ping?data=D               send a ping with payload D, wait for the pong, send the
                               text "pong:D", then echo like /echo
    /close?code=C&reason=R     start the closing handshake with C and R right away

permessage-deflate is chosen by the environment variable
LOCKGATE_INTEROP_DEFLATE:

    off (or unset)             disabled (compression=None)
    on                         websockets' default (compression="deflate":
                               server_max_window_bits=12, client_max_window_bits=12)
    no-context-takeover        the same, but the server requires
                               server_no_context_takeover and client_no_context_takeover

It exits on its own if stdin reaches EOF (the test process died) or after
DEADLINE seconds.
"""

import asyncio
import json
import os
import sys
import threading
import urllib.parse

from websockets.asyncio.server import serve
from websockets.exceptions import ConnectionClosed
from websockets.extensions.permessage_deflate import ServerPerMessageDeflateFactory

DEADLINE = 120  # seconds; the Rust test's own timeouts are much shorter
MAX_SIZE = 64 * 2**20  # the test sends 16 MiB messages


def emit(event, **fields):
    print(json.dumps({"event": event, **fields}), flush=True)


def compression_options():
    """serve() arguments for LOCKGATE_INTEROP_DEFLATE (see the module doc)."""
    mode = os.environ.get("LOCKGATE_INTEROP_DEFLATE", "off")
    if mode == "off":
        return {"compression": None}
    if mode == "on":
        return {"compression": "deflate"}
    if mode == "no-context-takeover":
        # websockets' defaults (enable_server_permessage_deflate) plus both flags.
        factory = ServerPerMessageDeflateFactory(
            server_no_context_takeover=True,
            client_no_context_takeover=True,
            server_max_window_bits=12,
            client_max_window_bits=12,
            compress_settings={"memLevel": 5},
        )
        return {"compression": None, "extensions": [factory]}
    raise ValueError(f"unknown LOCKGATE_INTEROP_DEFLATE={mode!r}")


def emit_open(ws):
    """Reports what was negotiated: the header sent and the extension in use."""
    fields = {
        "extensions": ws.response.headers.get("Sec-WebSocket-Extensions"),
        "deflate": False,
    }
    for ext in ws.protocol.extensions:
        if ext.name == "permessage-deflate":
            # local is the server (us), remote the client.
            fields.update(
                deflate=True,
                server_no_context_takeover=ext.local_no_context_takeover,
                client_no_context_takeover=ext.remote_no_context_takeover,
                server_max_window_bits=ext.local_max_window_bits,
                client_max_window_bits=ext.remote_max_window_bits,
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


async def echo_until_closed(ws):
    try:
        async for message in ws:
            await ws.send(message)
    except ConnectionClosed:
        pass


async def handler(ws, done):
    try:
        emit_open(ws)
        url = urllib.parse.urlsplit(ws.request.path)
        query = dict(urllib.parse.parse_qsl(url.query, keep_blank_values=True))
        if url.path == "/echo":
            await echo_until_closed(ws)
        elif url.path == "/ping":
            data = query["data"]
            pong = await ws.ping(data.encode())
            # The waiter resolves only for a pong whose payload equals the
            # ping's, so reaching the next line means the payload matched.
            await pong
            emit("pong", data=data)
            await ws.send("pong:" + data)
            await echo_until_closed(ws)
        elif url.path == "/close":
            # close() sends the close frame and waits for the reply and the
            # end of the TCP connection.
            await ws.close(int(query["code"]), query["reason"])
        else:
            raise ValueError(f"unknown scenario {ws.request.path!r}")
        await ws.wait_closed()
        emit("closed", code=ws.close_code, reason=ws.close_reason)
        done.set_result(None)
    except BaseException as exc:  # report anything, including cancellation
        if not done.done():
            done.set_exception(exc)
        raise


async def main():
    exit_when_parent_goes()
    done = asyncio.get_running_loop().create_future()
    async with serve(
        lambda ws: handler(ws, done),
        "127.0.0.1",
        0,
        **compression_options(),
        max_size=MAX_SIZE,
        ping_interval=None,  # no keepalive pings: the test decides who pings
    ) as server:
        port = server.sockets[0].getsockname()[1]
        emit("listening", port=port)
        await asyncio.wait_for(done, DEADLINE)


if __name__ == "__main__":
    try:
        asyncio.run(main())
    except Exception as exc:
        print(f"python_server: {type(exc).__name__}: {exc}", file=sys.stderr)
        sys.exit(1)
