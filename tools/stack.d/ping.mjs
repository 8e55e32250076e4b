// Protocol-level health checks for tools/stack, with no dependencies beyond
// Node itself (so they work before `npm ci`).
//
//   node tools/stack.d/ping.mjs kafka 127.0.0.1 59092   # Metadata v0: >= 1 broker
//   node tools/stack.d/ping.mjs mongo 127.0.0.1 57017   # OP_MSG {ping: 1}: ok == 1
//
// Exits 0 when the server answers correctly, 1 otherwise (reason on stderr).
import net from 'node:net';

const [kind, host = '127.0.0.1', portText] = process.argv.slice(2);
const port = Number(portText);
const TIMEOUT_MS = 3000;

/** Sends one framed request and resolves with the first complete frame. */
function roundTrip(payload, frameLength) {
  return new Promise((resolve, reject) => {
    const socket = net.connect({ host, port });
    let buf = Buffer.alloc(0);
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error(`no answer within ${TIMEOUT_MS} ms`));
    }, TIMEOUT_MS);
    socket.on('connect', () => socket.write(payload));
    socket.on('data', (chunk) => {
      buf = Buffer.concat([buf, chunk]);
      const len = frameLength(buf);
      if (len !== undefined && buf.length >= len) {
        clearTimeout(timer);
        socket.end();
        resolve(buf.subarray(0, len));
      }
    });
    socket.on('error', (err) => {
      clearTimeout(timer);
      reject(err);
    });
    socket.on('close', () => {
      clearTimeout(timer);
      reject(new Error('connection closed before a full answer'));
    });
  });
}

async function pingKafka() {
  // Request header v1 + Metadata v0 body (empty topic array = all topics).
  const clientId = Buffer.from('lintel-stack');
  const body = Buffer.alloc(2 + 2 + 4 + 2 + clientId.length + 4);
  let o = 0;
  o = body.writeInt16BE(3, o); // api_key: Metadata
  o = body.writeInt16BE(0, o); // api_version
  o = body.writeInt32BE(7, o); // correlation_id
  o = body.writeInt16BE(clientId.length, o);
  o += clientId.copy(body, o);
  body.writeInt32BE(0, o); // topics: []
  const size = Buffer.alloc(4);
  size.writeInt32BE(body.length);
  const res = await roundTrip(Buffer.concat([size, body]), (b) => (b.length >= 4 ? 4 + b.readInt32BE(0) : undefined));
  if (res.readInt32BE(4) !== 7) throw new Error('unexpected correlation id');
  const brokers = res.readInt32BE(8);
  if (brokers < 1) throw new Error('broker answered but lists no brokers yet');
}

/** Minimal BSON encoder for {ping: 1, $db: "admin"}. */
function pingDoc() {
  const parts = [];
  const int = Buffer.alloc(4);
  int.writeInt32LE(1);
  parts.push(Buffer.from([0x10]), Buffer.from('ping\0'), int);
  const db = Buffer.from('admin\0');
  const dbLen = Buffer.alloc(4);
  dbLen.writeInt32LE(db.length);
  parts.push(Buffer.from([0x02]), Buffer.from('$db\0'), dbLen, db, Buffer.from([0]));
  const inner = Buffer.concat(parts);
  const total = Buffer.alloc(4);
  total.writeInt32LE(4 + inner.length);
  return Buffer.concat([total, inner]);
}

async function pingMongo() {
  const doc = pingDoc();
  const header = Buffer.alloc(16 + 4 + 1);
  header.writeInt32LE(16 + 4 + 1 + doc.length, 0); // messageLength
  header.writeInt32LE(42, 4); // requestID
  header.writeInt32LE(0, 8); // responseTo
  header.writeInt32LE(2013, 12); // OP_MSG
  header.writeUInt32LE(0, 16); // flagBits
  header.writeUInt8(0, 20); // section kind 0: body
  const res = await roundTrip(Buffer.concat([header, doc]), (b) => (b.length >= 4 ? b.readInt32LE(0) : undefined));
  if (res.readInt32LE(8) !== 42) throw new Error('unexpected responseTo');
  if (res.readInt32LE(12) !== 2013) throw new Error('answer is not OP_MSG');
  // Look for the top-level field `ok` (double, int32 or int64) equal to 1.
  const at = res.indexOf(Buffer.from('ok\0'), 21);
  if (at < 1) throw new Error('answer has no "ok" field');
  const type = res[at - 1];
  const value = type === 0x01 ? res.readDoubleLE(at + 3) : type === 0x10 ? res.readInt32LE(at + 3) : type === 0x12 ? Number(res.readBigInt64LE(at + 3)) : NaN;
  if (value !== 1) throw new Error(`ping answered ok=${value}`);
}

const checks = { kafka: pingKafka, mongo: pingMongo };
if (!checks[kind] || !Number.isInteger(port)) {
  console.error('usage: node ping.mjs kafka|mongo HOST PORT');
  process.exit(2);
}
try {
  await checks[kind]();
  process.exit(0);
} catch (err) {
  console.error(`${kind} ${host}:${port}: ${err.message}`);
  process.exit(1);
}
