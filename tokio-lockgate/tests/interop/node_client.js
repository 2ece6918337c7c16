'use strict';
// Node `ws` client peer for tokio-lockgate/tests/interop.rs.
//
//   node node_client.js URL SCENARIO [ARGS...]
//
// Connects to URL (the test's lockgate server), runs one scenario and exits 0,
// or prints the problem on stderr and exits 1. It reports to the test through
// stdout, one JSON object per line:
//
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
//   ping DATA            ping with payload DATA, wait for the pong, close 1000 "done"
//   server-ping          wait for one text message (the server pings first and
//                        checks our automatic pong), close 1000 "done"
//   close CODE REASON    start the closing handshake with CODE and REASON
//   wait-close           wait for the server to close
//
// permessage-deflate is disabled (perMessageDeflate: false): lockgate does not
// implement it yet. A later change adds compressed interop.
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

const [url, scenario, ...args] = process.argv.slice(2);
const ws = new WebSocket(url, {
  perMessageDeflate: false, // no permessage-deflate yet (see the header)
  maxPayload: MAX_PAYLOAD,
  handshakeTimeout: 30_000,
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

async function echo(messages) {
  for (const { data, binary } of messages) ws.send(data, { binary });
  for (const sent of messages) {
    const got = await next();
    const sentBytes = Buffer.from(sent.data);
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
  switch (scenario) {
    case 'messages': {
      const text = 'h\u00e9llo, lockgate \u2713 \u{1f512}'; // 1-, 2-, 3- and 4-byte UTF-8
      const bigText = 'lock gate \u00e9\u2713 '.repeat(4096); // 16 bytes of UTF-8 each: 64 KiB
      const small = Buffer.alloc(256);
      for (let i = 0; i < 256; i++) small[i] = i;
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
