'use strict';
// Node `ws` server peer for interop/tests/interop.rs.
//
// Serves exactly one WebSocket connection on 127.0.0.1 (port chosen by the
// OS), then exits (0 on success, 1 on error). It talks to the test through
// stdout, one JSON object per line:
//
//   {"event": "listening", "port": N}            always the first line
//   {"event": "open", "extensions": E, "deflate": B}
//                                                the connection is open: E is the
//                                                Sec-WebSocket-Extensions it answered
//                                                (null if none), B whether
//                                                permessage-deflate is active
//   {"event": "ping", "data": "..."}             a ping arrived (ws answers it itself)
//   {"event": "pong", "data": "..."}             /ping: the client's pong arrived
//   {"event": "closed", "code": C, "reason": R}  the close frame it received
//                                                (code 1006 if none, 1005 if it had no code)
//
// The request path picks the scenario:
//
//   /echo                     echo every text/binary message until the client closes
//   /ping?data=D              send a ping with payload D, wait for the pong, send the
//                             text "pong:D", then echo like /echo
//   /close?code=C&reason=R    start the closing handshake with C and R right away
//
// permessage-deflate is chosen by the environment variable
// LOCKGATE_INTEROP_DEFLATE:
//
//   off (or unset)             disabled (perMessageDeflate: false)
//   on                         enabled, threshold 0 (every message compressed)
//   no-context-takeover        the same, and the server requires
//                              server_no_context_takeover and client_no_context_takeover
//
// It exits on its own if stdin reaches EOF (the test process died) or after
// DEADLINE_MS.

const { WebSocketServer } = require('ws');

const DEADLINE_MS = 120_000; // the Rust test's own timeouts are much shorter
const MAX_PAYLOAD = 64 * 1024 * 1024; // the test sends 16 MiB messages

function emit(event, fields = {}) {
  process.stdout.write(JSON.stringify({ event, ...fields }) + '\n');
}

function fail(err) {
  process.stderr.write(`node_server: ${err && err.stack ? err.stack : err}\n`);
  process.exit(1);
}

process.on('uncaughtException', fail);
// Exit when the test that spawned us is gone.
process.stdin.on('end', () => process.exit(3));
process.stdin.on('error', () => process.exit(3));
process.stdin.resume();
setTimeout(() => fail(new Error(`no clean close within ${DEADLINE_MS} ms`)), DEADLINE_MS).unref();

// The perMessageDeflate option for LOCKGATE_INTEROP_DEFLATE (see the header).
function perMessageDeflate() {
  const mode = process.env.LOCKGATE_INTEROP_DEFLATE || 'off';
  switch (mode) {
    case 'off':
      return false;
    case 'on':
      return { threshold: 0 };
    case 'no-context-takeover':
      return { threshold: 0, serverNoContextTakeover: true, clientNoContextTakeover: true };
    default:
      throw new Error(`unknown LOCKGATE_INTEROP_DEFLATE=${mode}`);
  }
}

const wss = new WebSocketServer({
  host: '127.0.0.1',
  port: 0,
  perMessageDeflate: perMessageDeflate(),
  maxPayload: MAX_PAYLOAD,
});

// The Sec-WebSocket-Extensions answered to each request.
const answered = new WeakMap();
wss.on('headers', (headers, req) => {
  const prefix = 'sec-websocket-extensions:';
  const line = headers.find((h) => h.toLowerCase().startsWith(prefix));
  answered.set(req, line === undefined ? null : line.slice(prefix.length).trim());
});

wss.on('error', fail);
wss.on('listening', () => emit('listening', { port: wss.address().port }));

let served = false;
wss.on('connection', (ws, req) => {
  if (served) {
    ws.terminate();
    return;
  }
  served = true;
  const url = new URL(req.url, 'ws://127.0.0.1');
  const echo = () =>
    ws.on('message', (data, isBinary) => ws.send(data, { binary: isBinary }));

  emit('open', {
    extensions: answered.has(req) ? answered.get(req) : null,
    deflate: ws.extensions.split(',').includes('permessage-deflate'),
  });
  ws.on('error', fail);
  ws.on('ping', (data) => emit('ping', { data: data.toString() }));
  ws.on('close', (code, reason) => {
    emit('closed', { code, reason: reason.toString() });
    wss.close(() => process.exit(0));
  });

  switch (url.pathname) {
    case '/echo':
      echo();
      break;
    case '/ping': {
      const data = url.searchParams.get('data');
      ws.once('pong', (pong) => {
        if (pong.toString() !== data) {
          fail(new Error(`pong payload ${JSON.stringify(pong.toString())}, pinged ${JSON.stringify(data)}`));
        }
        emit('pong', { data });
        ws.send('pong:' + data);
        echo();
      });
      ws.ping(data);
      break;
    }
    case '/close':
      ws.close(Number(url.searchParams.get('code')), url.searchParams.get('reason'));
      break;
    default:
      fail(new Error(`unknown scenario ${req.url}`));
  }
});
