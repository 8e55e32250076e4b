/**
 * A stopping service lets an answer already being stored (its lease held, its write slowed by a loaded
 * database) finish and send its last frame before it closes the browser's connection. It used to wait
 * only a second after aborting the answers still streaming, then close every connection: the write
 * still landed, but its `done` went to a closed socket. The slow write is real: the test holds the
 * conversation's row in FerretDB's PostgreSQL, so FerretDB's update waits for it.
 *
 * Nothing here races a timer of the test's: one write is let go once the service says it aborted the
 * answers still streaming (it must then end with `done`), the other is held until the service closes
 * its connection (which must be the stop running out of time, as the service then says).
 */
import t, { type Test } from 'tap';
import type { ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import type { Db } from 'mongodb';
import { chatWithConversation } from './support/chat-process.js';
import { startFakeAgent } from './support/fake-agent.js';
import { holdConversationRows } from './support/ferret-backend.js';
import { conversationsOf, openSend, OpenStream, terminalOf } from './support/harness.js';
import { freshChatDatabase } from './support/mongo.js';

async function untilOutput(output: () => string, line: string): Promise<void> {
  for (let i = 0; i < 1_000 && !output().includes(line); i++) await new Promise((resolve) => setTimeout(resolve, 20));
  if (!output().includes(line)) throw new Error(`the service never logged "${line}"; it printed:\n${output()}`);
}

/** A chat process with one conversation whose append is held in FerretDB, as a loaded database would. */
async function chatStoringOnHeldRow(t: Test): Promise<{ child: ChildProcess; stream: OpenStream; output: () => string; db: Db; commit: () => Promise<unknown> }> {
  const agent = await startFakeAgent(t);
  const { uri, db } = await freshChatDatabase(t);
  const { child, base, id, output } = await chatWithConversation(t, uri, agent.url);
  // The append's update waits behind this hold until it is released.
  const rows = await holdConversationRows(t, db);
  agent.expect({ tokens: ['stored ', 'at last'] });
  const stream = await openSend(base, 'ana', id, { content: 'store me' });
  if (!(stream instanceof OpenStream)) throw new Error(`expected a stream, got ${stream.status} ${JSON.stringify(stream.body)}`);
  await rows.untilWriteWaits();
  return { child, stream, output, db, commit: rows.release };
}

t.test('SIGTERM while an answer is being stored on a slow database: a write ending after the streaming answers were aborted still sends done, exit 0', async (t) => {
  const { child, stream, output, db, commit } = await chatStoringOnHeldRow(t);
  const exited = once(child, 'exit') as Promise<[number | null]>;
  child.kill('SIGTERM');
  // 3 s on, the answers still streaming are aborted; this one only waits for its write, which ends now.
  await untilOutput(output, 'aborting answers still streaming');
  await commit();
  await stream.ended;

  t.match(terminalOf(stream), { type: 'done', message: { role: 'assistant', content: 'stored at last' } }, 'the stream ends with done, not a cut connection');
  const [code] = await exited;
  t.equal(code, 0, 'the process stopped within its deadline');
  const stored = await conversationsOf(db).findOne({});
  t.same(
    (stored?.messages as Array<{ content: string }>).map((m) => m.content),
    ['store me', 'stored at last'],
    'the exchange is stored',
  );
});

t.test('SIGTERM while an answer is being stored: its connection stays open until the stop runs out of time, not a moment after the abort', async (t) => {
  const { child, stream, output, commit } = await chatStoringOnHeldRow(t);
  const closed = once(child, 'close');
  child.kill('SIGTERM');
  // The write is held until the service closes the connection: what matters is why it did.
  await stream.ended;
  await commit();
  await closed;

  t.match(terminalOf(stream), { type: 'token' }, 'the connection was closed under the answer, after its tokens and without a last frame');
  t.match(
    output(),
    /closing the connections of answers still being stored/,
    'it was closed only once the stop had waited for the write all its deadline allows (the old stop closed it a second after the abort)',
  );
});
