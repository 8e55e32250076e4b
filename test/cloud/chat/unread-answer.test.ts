import { once } from 'node:events';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer } from 'node:http';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { createChatApp } from '../../../cloud/chat/app.js';
import { MAX_MESSAGE_LENGTH } from '../../../cloud/chat/conversation.js';
import { HttpAgent } from '../../../cloud/chat/http-agent.js';
import { createChatMetrics } from '../../../cloud/chat/metrics.js';
import { MongoConversationStore } from '../../../cloud/chat/mongo-store.js';
import { closeServer } from '../../../shared/lifecycle.js';
import { createRegistry } from '../../../shared/prom.js';
import { capturedLogger } from '../../support/captured-logger.js';
import { FakeAgent } from './support/fake-agent.js';
import { claimsOf, until } from './support/harness.js';
import { freshChatDatabase } from './support/mongo.js';

const DROPPED = 'client did not read its answer; connection destroyed';

/**
 * An answer's stream is written without waiting for the browser, so a client that sent a message and
 * then read nothing, keeping its connection open, held the answer's bytes and the connection forever:
 * the response never finished, so no server timeout applied, and the request stayed owed an answer.
 *
 * The service listens on a Unix socket here: over TCP loopback the kernel takes about 4 MB of a reader
 * that reads nothing, more than the longest answer (8,000 frames of one character, about 0.4 MB), so
 * the whole answer would leave the process. A Unix socket takes about 200 KB, as a distant browser's
 * window would, and the rest waits in the service as it does in production.
 */
t.test('an answer nobody reads is dropped with its connection, the request ends and the service says so', async (t) => {
  const agent = new FakeAgent();
  t.teardown(() => agent.verify());
  const { db } = await freshChatDatabase(t);
  const cleanups: Array<() => unknown> = [];
  t.teardown(async () => {
    for (const cleanup of cleanups.reverse()) await cleanup();
  });
  await agent.start();
  cleanups.push(() => agent.stop());
  const store = new MongoConversationStore(db);
  await store.start();
  cleanups.push(() => store.stop());
  const agentClient = new HttpAgent({ baseUrl: agent.url, connectTimeoutMs: 1_000, responseTimeoutMs: 5_000, idleTimeoutMs: 10_000 });
  cleanups.push(() => agentClient.stop());
  const { logger, lines, text } = capturedLogger('chat');
  const registry = createRegistry('chat', { defaults: false });
  const chat = createChatApp({ store, agent: agentClient, registry, metrics: createChatMetrics(registry), logger, stalledAfterMs: 500 });
  const server = createServer(chat.app);
  chat.watchStalledReaders(server);
  const dir = await mkdtemp(join(tmpdir(), 'chat-unread-'));
  cleanups.push(() => rm(dir, { recursive: true, force: true }));
  const path = join(dir, 'chat.sock');
  await new Promise<void>((resolve) => server.listen(path, resolve));
  cleanups.push(() => closeServer(server));
  cleanups.push(() => chat.inFlight.drain(5_000));

  const conversation = await store.create('ana', 'New chat', new Date());
  agent.expect({ tokens: Array.from({ length: MAX_MESSAGE_LENGTH }, () => 'x') });

  const body = JSON.stringify({ content: 'Tell me everything.' });
  const unread = connect({ path });
  unread.on('error', () => undefined);
  t.teardown(() => unread.destroy());
  unread.pause();
  unread.write(
    `POST /conversations/${conversation.id}/messages HTTP/1.1\r\nHost: chat\r\nX-Gateway-Claims: ${claimsOf('ana')}\r\n` +
      `Content-Type: application/json\r\nAccept: text/event-stream\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
  );

  await until(() => lines.some((line) => line.msg === DROPPED), 'the unread answer to be dropped');
  const dropped = lines.find((line) => line.msg === DROPPED);
  t.equal(dropped?.level, 40, 'a warning');
  t.ok(typeof dropped?.unwritten === 'number' && dropped.unwritten > 0, 'the bytes it held are logged');
  const line = text.find((written) => written.includes(DROPPED)) ?? '';
  t.notOk(line.includes(conversation.id) || line.includes('ana'), 'no conversation or user in the line');

  t.ok(await chat.requests.drain(10_000), 'the request ended with its connection, so a stop does not wait for it');
  t.ok(await chat.inFlight.drain(10_000), 'the answer went on to its end');
  const stored = await store.get(conversation.id, 'ana');
  t.equal(stored?.messages[1]?.content.length, MAX_MESSAGE_LENGTH, 'and was stored, as when a browser leaves');

  unread.resume();
  await once(unread, 'close');
  t.pass('the client sees its connection closed');
});
