/**
 * Diagnostic: what the conversation read a send waits for costs on its own, with nothing else running.
 *
 * The chat benchmark's added time to first token can be no less than this read: the seed has the
 * service check the message cap and take the history before it calls the agent. This script builds the
 * collection the benchmark's chat phases see (220 conversations: empty in its first round, each holding
 * one 300-token exchange in its second), then times the service's own read (`sendContext` of
 * `MongoConversationStore`), one at a time, on the local FerretDB. For scale it also times a `ping`
 * (one round trip through FerretDB, no query) and the same read on a collection of small documents.
 *
 * FerretDB 1.24 pushes an `_id` filter down as a jsonb containment (`_jsonb->'_id' @> …`), which its
 * btree index on `_id` cannot serve: every read is a sequential scan that decompresses each conversation
 * stored in its collection. The store spreads the conversations over 32 collections by owner, so a read
 * scans the few of its owner's collection (the 220 here are each another user's, as in the benchmark).
 * On MongoDB the same read is an index lookup.
 *
 * Besides the latency, each series prints the CPU one read costs, from /proc: FerretDB's process, the
 * PostgreSQL backends of FerretDB's database, and this process (`caller`: mostly the MongoDB driver,
 * which in the service runs on the relay's event loop). The benchmark's chat phases make 200 such
 * reads in about a second, beside the relaying.
 *
 * Run: `npx tsx tools/bench/chat/read-floor.ts` (stack up). Prints p50 and p99 of each, in ms.
 */
import { MongoClient, ObjectId } from 'mongodb';
import { MongoConversationStore } from '../../../cloud/chat/mongo-store.js';
import { nearestRank, printLine } from '../report.js';
import { ferretdbCpuSeconds } from './ferretdb-cpu.js';

const CONVERSATIONS = 220;
const READS = 400;
const WARMUP = 40;
const HISTORY = 10;
/** The benchmark agent's answer: 300 tokens `word0 ` … `word299 `. */
const ANSWER = Array.from({ length: 300 }, (_, i) => `word${i} `).join('');

/** CPU seconds so far of FerretDB, of the PostgreSQL backends serving it, and of this process. */
function cpuNow(): { ferretdb: number; postgres: number; caller: number } {
  const own = process.cpuUsage();
  return { ...ferretdbCpuSeconds(), caller: (own.user + own.system) / 1e6 };
}

async function timed(label: string, read: (i: number) => Promise<unknown>): Promise<void> {
  for (let i = 0; i < WARMUP; i++) await read(i);
  const samples: number[] = [];
  const before = cpuNow();
  for (let i = 0; i < READS; i++) {
    const started = performance.now();
    await read(i);
    samples.push(performance.now() - started);
  }
  const after = cpuNow();
  samples.sort((a, b) => a - b);
  printLine(`${label} p50`, nearestRank(samples, 0.5).toFixed(2), 'ms');
  printLine(`${label} p99`, nearestRank(samples, 0.99).toFixed(2), 'ms');
  for (const part of ['ferretdb', 'postgres', 'caller'] as const) {
    printLine(`${label}, cpu per read, ${part}`, (((after[part] - before[part]) / READS) * 1000).toFixed(2), 'ms');
  }
}

async function conversations(store: MongoConversationStore): Promise<Array<{ id: string; userId: string }>> {
  const made: Array<{ id: string; userId: string }> = [];
  for (let i = 0; i < CONVERSATIONS; i++) {
    const userId = `bench-user-${i}`;
    made.push({ id: (await store.create(userId, 'New chat', new Date())).id, userId });
  }
  return made;
}

async function main(): Promise<void> {
  const uri = new URL(process.env.MONGO_URI ?? 'mongodb://127.0.0.1:57017/lintel');
  uri.pathname = `/chat_read_floor_${Date.now().toString(36)}`;
  const client = new MongoClient(uri.toString(), { serverSelectionTimeoutMS: 5_000 });
  await client.connect();
  const db = client.db();
  try {
    const store = new MongoConversationStore(db);
    await store.start();
    const made = await conversations(store);
    const read = (i: number) => {
      const { id, userId } = made[i % made.length]!;
      return store.sendContext(id, userId, HISTORY);
    };
    printLine('conversations', String(CONVERSATIONS));
    printLine('reads timed, one at a time', String(READS));
    await timed('ferretdb ping', () => db.command({ ping: 1 }));
    await timed('read, empty conversations (first round)', read);
    for (const [i, { id, userId }] of made.entries()) {
      const at = new Date();
      const outcome = await store.appendExchange(id, userId, {
        question: { id: new ObjectId().toHexString(), role: 'user', content: `chat0-${i}`, createdAt: at },
        answer: { id: new ObjectId().toHexString(), role: 'assistant', content: ANSWER, citations: [], createdAt: at },
        at,
      });
      if (outcome !== 'appended') throw new Error(`could not append to conversation ${i}: ${outcome}`);
    }
    await timed('read, one 300-token exchange each (second round)', read);
    const small = db.collection<{ _id: ObjectId; user_id: string; title: string; message_count: number }>('small_documents');
    const smallIds = made.map(() => new ObjectId());
    await small.insertMany(smallIds.map((_id, i) => ({ _id, user_id: `bench-user-${i}`, title: 'New chat', message_count: 2 })));
    await timed('the same find on small documents', (i) => small.findOne({ _id: smallIds[i % smallIds.length]!, user_id: `bench-user-${i % smallIds.length}` }));
    await store.stop();
  } finally {
    await db.dropDatabase().catch(() => undefined);
    await client.close();
  }
}

await main();
