'use strict';
// Node `ws` client peer for interop/tests/interop.rs.
//
//   node node_client.js URL SCENARIO [ARGS...]
//
// Connects to URL (the test's lockgate server), runs one scenario and exits 0,
// or prints the problem on stderr and exits 1. It reports to the test through
// stdout, one JSON object per line:
//
//   {"event": "open", "extensions": E, "deflate": B}       the connection is open: E is the
//                                                         Sec-WebSocket-Extensions answered
//                                                         (null if none), B whether
//                                                         permessage-deflate is active
//   {"event": "echo", "kind": "text"|"binary", "len": N}  an echo matched what was sent
//   {"event": "ping", "data": "..."}                      a ping arrived (ws answers it itself)
//   {"event": "pong", "data": "..."}                      a pong arrived
//   {"event": "text", "data": "..."}                      a text message arrived
//   {"event": "closed", "code": C, "reason": R}           the close frame it received
//                                                         (code 1006 if none, 1005 if it had no code)
//
// Scenarios:
//
//   messages             send a small text, a small binary, 64 KiB text and 64 KiB
//                        binary (all before reading), check each echo, close 1000 "done"
//   large                send 16 MiB binary, check the echo, close 1000 "done"
//   deflate-messages     like messages, plus an empty binary, the same 1 KiB of JSON
//                        lines three times and 12 KiB of JSON lines in three fragments
//   deflate-large        send 16 MiB of JSON lines as text, check the echo, close 1000 "done"
//   ping DATA            ping with payload DATA, wait for the pong, close 1000 "done"
//   server-ping          wait for one text message (the server pings first and
//                        checks our automatic pong), close 1000 "done"
//   close CODE REASON    start the closing handshake with CODE and REASON
//   wait-close           wait for the server to close
//
// permessage-deflate is chosen by the environment variable
// LOCKGATE_INTEROP_DEFLATE:
//
//   off (or unset)             disabled (perMessageDeflate: false)
//   on                         enabled, threshold 0 (every message compressed); offers
//                              client_max_window_bits
//   no-context-takeover        the same, also offering server_no_context_takeover
//                              and client_no_context_takeover
//
// It exits on its own if stdin reaches EOF (the test process died) or after
// DEADLINE_MS.

const WebSocket = require('ws');

const DEADLINE_MS = 120_000; // the Rust test's own timeouts are much shorter
const MAX_PAYLOAD = 64 * 1024 * 1024; // the test sends 16 MiB messages

function emit(event, fields = {}) {
  process.stdout.write(JSON.stringify({ event, ...fields }) + '\n');
}

function fail(err) {
  process.stderr.write(`node_client: ${err && err.stack ? err.stack : err}\n`);
  process.exit(1);
}

process.on('uncaughtException', fail);
process.stdin.on('end', () => process.exit(3));
process.stdin.on('error', () => process.exit(3));
process.stdin.resume();
setTimeout(() => fail(new Error(`no clean close within ${DEADLINE_MS} ms`)), DEADLINE_MS).unref();

// n deterministic bytes that are not a short repetition (251 is prime).
function pattern(n, seed) {
  const out = Buffer.alloc(n);
  for (let i = 0; i < n; i++) out[i] = (((i % 251) * 31) + seed) & 0xff;
  return out;
}

// n bytes of JSON lines (a string): compressible, yet not a short repetition.
// The same bytes as json_lines in interop.rs and python_client.py.
function jsonLines(n) {
  const lines = [];
  let size = 0;
  for (let i = 0; ; i++) {
    const line =
      `{"id":${i},"user":"us\u00e9r-${i % 997}",` +
      `"score":${(i * 7919) % 100003},"ok":${i % 3 === 0}}\n`;
    const lineSize = Buffer.byteLength(line);
    if (size + lineSize > n) return lines.join('') + ' '.repeat(n - size);
    lines.push(line);
    size += lineSize;
  }
}

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

const [url, scenario, ...args] = process.argv.slice(2);
const ws = new WebSocket(url, {
  perMessageDeflate: perMessageDeflate(),
  maxPayload: MAX_PAYLOAD,
  handshakeTimeout: 30_000,
});

// The Sec-WebSocket-Extensions of the handshake response.
let answered = null;
ws.on('upgrade', (res) => {
  answered = res.headers['sec-websocket-extensions'] ?? null;
});

ws.on('error', fail);
ws.on('ping', (data) => emit('ping', { data: data.toString() }));
ws.on('close', (code, reason) => {
  emit('closed', { code, reason: reason.toString() });
  process.exit(0);
});

// Messages that arrive, in order; `next()` waits for the next one.
const inbox = [];
let waiting = null;
ws.on('message', (data, isBinary) => {
  const msg = { data, isBinary };
  if (waiting) {
    const resolve = waiting;
    waiting = null;
    resolve(msg);
  } else {
    inbox.push(msg);
  }
});
function next() {
  if (inbox.length > 0) return Promise.resolve(inbox.shift());
  return new Promise((resolve) => (waiting = resolve));
}

// Sends every message, then checks the echoes. A `fragments` array instead of
// `data` is one message sent in fragments.
async function echo(messages) {
  for (const { data, fragments, binary } of messages) {
    if (fragments) {
      fragments.forEach((part, i) => ws.send(part, { binary, fin: i === fragments.length - 1 }));
    } else {
      ws.send(data, { binary });
    }
  }
  for (const sent of messages) {
    const got = await next();
    const sentBytes = sent.fragments
      ? Buffer.concat(sent.fragments.map((part) => Buffer.from(part)))
      : Buffer.from(sent.data);
    const kind = sent.binary ? 'binary' : 'text';
    if (got.isBinary !== sent.binary || !got.data.equals(sentBytes)) {
      throw new Error(
        `echo mismatch: sent ${kind} of ${sentBytes.length} bytes, ` +
          `got ${got.isBinary ? 'binary' : 'text'} of ${got.data.length} bytes`,
      );
    }
    emit('echo', { kind, len: sentBytes.length });
  }
}

async function run() {
  emit('open', {
    extensions: answered,
    deflate: ws.extensions.split(',').includes('permessage-deflate'),
  });
  const text = 'h\u00e9llo, lockgate \u2713 \u{1f512}'; // 1-, 2-, 3- and 4-byte UTF-8
  const bigText = 'lock gate \u00e9\u2713 '.repeat(4096); // 16 bytes of UTF-8 each: 64 KiB
  const small = Buffer.alloc(256);
  for (let i = 0; i < 256; i++) small[i] = i;
  switch (scenario) {
    case 'messages': {
      await echo([
        { data: text, binary: false },
        { data: small, binary: true },
        { data: bigText, binary: false },
        { data: pattern(64 * 1024, 7), binary: true },
      ]);
      ws.close(1000, 'done');
      break;
    }
    case 'large':
      await echo([{ data: pattern(16 * 1024 * 1024, 11), binary: true }]);
      ws.close(1000, 'done');
      break;
    case 'deflate-messages': {
      const repeated = jsonLines(1024); // with context takeover, mostly back-references
      const chunked = jsonLines(12 * 1024);
      const third = Math.floor(chunked.length / 3);
      await echo([
        { data: text, binary: false },
        { data: small, binary: true },
        { data: Buffer.alloc(0), binary: true },
        { data: bigText, binary: false },
        { data: pattern(64 * 1024, 7), binary: true },
        { data: repeated, binary: false },
        { data: repeated, binary: false },
        { data: repeated, binary: false },
        {
          fragments: [
            chunked.slice(0, third),
            chunked.slice(third, 2 * third),
            chunked.slice(2 * third),
          ],
          binary: false,
        },
      ]);
      ws.close(1000, 'done');
      break;
    }
    case 'deflate-large':
      await echo([{ data: jsonLines(16 * 1024 * 1024), binary: false }]);
      ws.close(1000, 'done');
      break;
    case 'ping': {
      const [data] = args;
      const pong = await new Promise((resolve) => {
        ws.once('pong', resolve);
        ws.ping(data);
      });
      if (pong.toString() !== data) {
        throw new Error(`pong payload ${JSON.stringify(pong.toString())}, pinged ${JSON.stringify(data)}`);
      }
      emit('pong', { data: pong.toString() });
      ws.close(1000, 'done');
      break;
    }
    case 'server-ping': {
      // ws answers the server's ping by itself; the 'ping' handler above
      // reports it and the server checks the pong.
      const msg = await next();
      if (msg.isBinary) throw new Error(`expected text, got binary of ${msg.data.length} bytes`);
      emit('text', { data: msg.data.toString() });
      ws.close(1000, 'done');
      break;
    }
    case 'close': {
      const [code, reason] = args;
      ws.close(Number(code), reason);
      break;
    }
    case 'wait-close':
      ws.on('message', (data, isBinary) =>
        fail(new Error(`unexpected ${isBinary ? 'binary' : 'text'} message while waiting for close`)),
      );
      break;
    default:
      throw new Error(`unknown scenario ${scenario}`);
  }
}

ws.on('open', () => run().catch(fail));
