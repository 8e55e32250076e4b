import t, { type Test } from 'tap';
import { request } from 'node:http';
import { MongoClient, type CommandStartedEvent, type Db } from 'mongodb';
import { LIST_INDEX } from '../../../cloud/chat/mongo-store.js';
import { LEASE_COLLECTION, type LeaseDocument } from '../../../cloud/chat/conversation-lock.js';
import { serve } from '../../support/http.js';
import { freshChatDatabase } from './support/mongo.js';
import { call, claimsOf, conversationsOf, createConversation, fillConversation, getConversation, send, startChat, type ConversationWire } from './support/harness.js';

const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

t.test('create: default title, an optional title, camelCase fields and a Location', async (t) => {
  const chat = await startChat(t);
  const res = await call(chat.url, 'POST', '/conversations', 'ana', {});
  t.equal(res.status, 201);
  const created = res.body as ConversationWire;
  t.match(created, { userId: 'ana', title: 'New chat', messages: [] });
  t.match(created.id, /^[0-9a-f]{24}$/);
  t.match(created.createdAt, ISO);
  t.equal(created.updatedAt, created.createdAt);
  t.equal(res.headers.get('location'), `conversations/${created.id}`, 'relative, so it resolves under whatever prefix the request came by');

  const bodiless = await fetch(`${chat.url}/chat/conversations`, { method: 'POST', headers: { 'x-gateway-claims': (await import('./support/harness.js')).claimsOf('ana') } });
  t.equal(bodiless.status, 201, 'no body at all is a default conversation');
  t.match(bodiless.headers.get('location'), /^conversations\/[0-9a-f]{24}$/);
  t.equal(((await bodiless.json()) as ConversationWire).title, 'New chat');

  const named = await createConversation(chat.url, 'ana', '  Boiler room  ');
  t.equal(named.title, 'Boiler room', 'trimmed');
});

/**
 * An ingress in front of the service that routes only `/chat` to it and strips the prefix, as some
 * deployments do: the service then sees `/conversations` while the client posted to
 * `/chat/conversations`. Any other path is not the chat service's (404 here).
 */
async function prefixStrippingIngress(t: Test, target: string): Promise<string> {
  const { url } = await serve(t, (req, res) => {
    const path = /^\/chat(\/.*)$/.exec(req.url ?? '')?.[1];
    if (path === undefined) {
      res.writeHead(404).end();
      return;
    }
    const upstream = request(`${target}${path}`, { method: req.method, headers: req.headers }, (answer) => {
      res.writeHead(answer.statusCode ?? 502, answer.headers);
      answer.pipe(res);
    });
    upstream.on('error', () => res.destroy());
    req.pipe(upstream);
  });
  return url;
}

t.test('the Location of a created conversation resolves, against the URL the client posted to, to that conversation: behind an ingress that strips /chat, one that keeps it, and with a trailing slash', async (t) => {
  const chat = await startChat(t);
  const stripping = await prefixStrippingIngress(t, chat.url);
  const claims = claimsOf('ana');
  const cases = [
    { via: 'an ingress stripping /chat', base: stripping, path: '/chat/conversations' },
    { via: 'an ingress stripping /chat', base: stripping, path: '/chat/conversations/' },
    { via: 'the service itself', base: chat.url, path: '/chat/conversations' },
    { via: 'the service itself', base: chat.url, path: '/conversations' },
    { via: 'the service itself', base: chat.url, path: '/conversations/' },
  ];
  for (const { via, base, path } of cases) {
    const name = `${path} through ${via}`;
    const requestUrl = `${base}${path}`;
    const created = await fetch(requestUrl, { method: 'POST', headers: { 'x-gateway-claims': claims } });
    t.equal(created.status, 201, `${name}: created`);
    const { id } = (await created.json()) as ConversationWire;
    const location = created.headers.get('location');
    if (location === null) throw new Error(`${name}: no Location`);
    const target = new URL(location, requestUrl);
    t.equal(target.href, `${base}${path.replace(/\/$/, '')}/${id}`, `${name}: the Location stays under the prefix the client used`);
    const fetched = await fetch(target, { headers: { 'x-gateway-claims': claims } });
    t.equal(fetched.status, 200, `${name}: the Location answers`);
    const found = fetched.status === 200 ? ((await fetched.json()) as ConversationWire) : undefined;
    t.equal(found?.id, id, `${name}: it is the created conversation`);
  }
});

t.test('create with a body that is not JSON (fetch sends a string as text/plain) is 400, not a conversation without its title', async (t) => {
  const chat = await startChat(t);
  const claims = (await import('./support/harness.js')).claimsOf('ana');
  const res = await fetch(`${chat.url}/conversations`, { method: 'POST', headers: { 'x-gateway-claims': claims }, body: JSON.stringify({ title: 'Boiler room' }) });
  t.equal(res.status, 400);
  t.same(await res.json(), { type: 'Validation Error', message: 'body: expected JSON with content-type application/json' });
  t.same((await call(chat.url, 'GET', '/conversations', 'ana')).body, [], 'nothing created');
});

t.test('create and rename refuse bad titles with 400 and the shared error body', async (t) => {
  const chat = await startChat(t);
  const conversation = await createConversation(chat.url, 'ana', 'Keep me');
  const cases: Array<[unknown, RegExp]> = [
    [{ title: '' }, /title: expected 1 to 120 characters, got 0/],
    [{ title: '   ' }, /title: expected 1 to 120 characters, got 0/],
    [{ title: 'x'.repeat(121) }, /got 121/],
    [{ title: 'a\u0000b' }, /title: NUL \(\\u0000\) cannot be stored/],
    // Half of a surrogate pair has no UTF-8 form: the store would keep U+FFFD instead of what was sent.
    ['{"title":"half \\ud83d pair"}', /title: an unpaired surrogate \(\\ud83d\) cannot be stored/],
    ['{"title":"\\udc00"}', /title: an unpaired surrogate \(\\udc00\) cannot be stored/],
    [{ title: 42 }, /title: expected a string, got 42/],
    [{ title: null }, /title: expected a string, got null/],
    [{ titel: 'typo' }, /titel: unknown field/],
    [[], /body: expected a JSON object/],
    ['{"title":', /not valid JSON/],
  ];
  for (const [body, message] of cases) {
    const created = await call(chat.url, 'POST', '/conversations', 'ana', body);
    t.equal(created.status, 400, `create ${JSON.stringify(body)}`);
    t.match(created.body, { type: 'Validation Error', message });
    const renamed = await call(chat.url, 'PATCH', `/conversations/${conversation.id}`, 'ana', body);
    t.equal(renamed.status, 400, `rename ${JSON.stringify(body)}`);
  }
  const missing = await call(chat.url, 'PATCH', `/conversations/${conversation.id}`, 'ana', {});
  t.match(missing, { status: 400, body: { message: /title: expected a string, got nothing/ } });
  t.equal((await getConversation(chat.url, 'ana', conversation.id)).title, 'Keep me', 'nothing stored was lost');
  const longest = await call(chat.url, 'PATCH', `/conversations/${conversation.id}`, 'ana', { title: '🏢'.repeat(120) });
  t.equal(longest.status, 200, '120 characters, counted as a reader counts them');
});

t.test('rename: the new title, updatedAt moved, the summary shape back', async (t) => {
  const chat = await startChat(t);
  const conversation = await createConversation(chat.url, 'ana');
  const res = await call(chat.url, 'PATCH', `/conversations/${conversation.id}`, 'ana', { title: ' Night setback ' });
  t.equal(res.status, 200);
  t.match(res.body, { id: conversation.id, userId: 'ana', title: 'Night setback', messageCount: 0, createdAt: conversation.createdAt });
  t.notOk('messages' in (res.body as object));
  t.ok((res.body as ConversationWire).updatedAt >= conversation.updatedAt);
  t.equal((await getConversation(chat.url, 'ana', conversation.id)).title, 'Night setback');
});

t.test('delete: 204, then 404 everywhere, and it leaves the list', async (t) => {
  const chat = await startChat(t);
  const gone = await createConversation(chat.url, 'ana', 'Gone');
  const kept = await createConversation(chat.url, 'ana', 'Kept');
  const del = await call(chat.url, 'DELETE', `/conversations/${gone.id}`, 'ana');
  t.equal(del.status, 204);
  t.equal(del.body, undefined);
  t.equal((await call(chat.url, 'GET', `/conversations/${gone.id}`, 'ana')).status, 404);
  t.equal((await call(chat.url, 'DELETE', `/conversations/${gone.id}`, 'ana')).status, 404);
  const list = (await call(chat.url, 'GET', '/conversations', 'ana')).body as ConversationWire[];
  t.same(list.map((c) => c.id), [kept.id]);
});

t.test('list: newest first by updatedAt, no message bodies, a messageCount', async (t) => {
  const chat = await startChat(t);
  const a = await createConversation(chat.url, 'ana', 'A');
  const b = await createConversation(chat.url, 'ana', 'B');
  const c = await createConversation(chat.url, 'ana', 'C');
  await fillConversation(chat.db, c.id, 4);
  chat.agent.expect({ tokens: ['answer'] });
  await send(chat.url, 'ana', a.id, 'bump A to the top');
  const list = (await call(chat.url, 'GET', '/conversations', 'ana')).body as ConversationWire[];
  t.same(list.map((x) => x.title), ['A', 'C', 'B'], 'A was updated last; C and B by creation');
  for (const item of list) {
    t.notOk('messages' in item, `${item.title} carries no messages`);
    t.same(Object.keys(item).sort(), ['createdAt', 'id', 'messageCount', 'title', 'updatedAt', 'userId']);
  }
  t.same(list.map((x) => x.messageCount), [2, 4, 0]);
  t.same(list.map((x) => x.id), [a.id, c.id, b.id], 'the ids in that order: B, created before C and never touched, is last');
});

t.test('list without limit: the whole list past 100, newest first, no cursor, in one query without message bodies', async (t) => {
  const { uri } = await freshChatDatabase(t);
  const client = new MongoClient(uri, { monitorCommands: true });
  await client.connect();
  t.teardown(() => client.close());
  const chat = await startChat(t, { db: client.db() });
  const start = Date.parse('2025-01-01T00:00:00.000Z');
  const created: string[] = [];
  for (let i = 0; i < 130; i++) created.push((await chat.store.create('ana', `C${i}`, new Date(start + i * 1000))).id);
  await chat.store.create('ben', 'Not ana', new Date(start + 500_000));
  await fillConversation(chat.db, created[0] ?? '', 2);

  const commands: CommandStartedEvent[] = [];
  const record = (event: CommandStartedEvent) => commands.push(event);
  client.on('commandStarted', record);
  const res = await call(chat.url, 'GET', '/conversations', 'ana');
  client.off('commandStarted', record);
  t.equal(res.status, 200);
  const list = res.body as ConversationWire[];
  t.equal(list.length, 130, 'every conversation, not the first 100');
  t.same(list.map((c) => c.id), [...created].reverse(), 'newest first by updatedAt');
  t.equal(list.at(-1)?.messageCount, 2);
  t.notOk(list.some((c) => 'messages' in c), 'no message bodies');
  t.equal(res.headers.get('x-next-cursor'), null, 'no cursor: nothing was cut');

  const queries = commands.filter((c) => c.commandName !== 'getMore');
  t.same(queries.map((c) => c.commandName), ['find'], "one query (its cursor's getMore aside)");
  const find = queries[0]?.command ?? {};
  t.match(find, { find: conversationsOf(chat.db, 'ana').collectionName, filter: { user_id: 'ana' }, projection: { messages: 0 } }, 'by owner, messages left out');
  t.same([...(find.sort as Map<string, number>)], [['updated_at', -1], ['_id', -1]], 'in the order of the list index (user_id, updated_at)');
  t.notOk('limit' in find, 'no limit');

  const prefixed = await call(chat.url, 'GET', '/chat/conversations', 'ana');
  t.equal((prefixed.body as ConversationWire[]).length, 130, 'the same under /chat');
  t.equal(prefixed.headers.get('x-next-cursor'), null);
});

t.test('list pages with limit and the x-next-cursor header, without gaps or repeats', async (t) => {
  const chat = await startChat(t);
  const created: string[] = [];
  for (let i = 0; i < 7; i++) created.push((await createConversation(chat.url, 'ana', `C${i}`)).id);
  const seen: string[] = [];
  let path = '/conversations?limit=3';
  for (let page = 0; page < 5; page++) {
    const res = await call(chat.url, 'GET', path, 'ana');
    t.equal(res.status, 200);
    seen.push(...(res.body as ConversationWire[]).map((c) => c.id));
    const next = res.headers.get('x-next-cursor');
    if (!next) break;
    path = `/conversations?limit=3&after=${encodeURIComponent(next)}`;
  }
  t.same(seen, [...created].reverse(), 'every conversation once, newest first');
  const first = await call(chat.url, 'GET', '/conversations?limit=2', 'ana');
  const cursor = first.headers.get('x-next-cursor') ?? '';
  const rest = await call(chat.url, 'GET', `/conversations?after=${encodeURIComponent(cursor)}`, 'ana');
  t.same((rest.body as ConversationWire[]).map((c) => c.id), [...created].reverse().slice(2), 'after without limit: all the rest');
  t.equal(rest.headers.get('x-next-cursor'), null);
  const exact = await call(chat.url, 'GET', '/conversations?limit=7', 'ana');
  t.equal((exact.body as ConversationWire[]).length, 7);
  t.equal(exact.headers.get('x-next-cursor'), null, 'no cursor when the page holds the rest');
  t.equal((await call(chat.url, 'GET', '/conversations?limit=0', 'ana')).status, 400);
  t.equal((await call(chat.url, 'GET', '/conversations?limit=501', 'ana')).status, 400);
  t.equal((await call(chat.url, 'GET', '/conversations?limit=abc', 'ana')).status, 400);
  t.match(await call(chat.url, 'GET', '/conversations?after=garbage', 'ana'), { status: 400, body: { type: 'Validation Error' } });
});

t.test('the list index (user_id, updated_at) exists', async (t) => {
  const chat = await startChat(t);
  const indexes = await conversationsOf(chat.db, 'ana').listIndexes().toArray();
  t.ok(indexes.some((index) => JSON.stringify(index.key) === JSON.stringify(LIST_INDEX.key)), JSON.stringify(indexes.map((i) => i.key)));
});

t.test('health and metrics are public, under both prefixes; unknown routes are a JSON 404', async (t) => {
  const chat = await startChat(t);
  for (const prefix of ['', '/chat']) {
    const health = await call(chat.url, 'GET', `${prefix}/health`, undefined);
    t.same([health.status, health.body], [200, { status: 'ok' }]);
    const metrics = await fetch(`${chat.url}${prefix}/metrics`);
    t.equal(metrics.status, 200);
    const text = await metrics.text();
    for (const series of [
      'chat_streams_started_total',
      'chat_streams_completed_total',
      'chat_streams_failed_total{reason="agent_error"',
      'chat_streams_completed_after_disconnect_total',
      'chat_agent_errors_total{reason="unreachable"',
      'chat_store_append_seconds_bucket',
      'chat_conversation_read_seconds_bucket',
      'chat_agent_response_seconds_bucket',
      'chat_active_streams',
    ]) {
      t.match(text, series, `${prefix}/metrics has ${series} from startup`);
    }
  }
  const nowhere = await call(chat.url, 'GET', '/nowhere', 'ana');
  t.same([nowhere.status, (nowhere.body as { type: string }).type], [404, 'Not Found']);
});

/** Takes a conversation's lease as another replica would, for a minute. */
async function holdLease(db: Db, conversationId: string): Promise<void> {
  await db.collection<LeaseDocument>(LEASE_COLLECTION).insertOne({
    _id: 'another-replica',
    conversation: conversationId,
    expires_at: new Date(Date.now() + 60_000),
  });
}

t.test('a rename that cannot get the conversation (another replica holds it too long) is 409, and nothing changes', async (t) => {
  const chat = await startChat(t, { lock: { waitMs: 200 } });
  const conversation = await createConversation(chat.url, 'ana', 'Before');
  await holdLease(chat.db, conversation.id);
  const res = await call(chat.url, 'PATCH', `/conversations/${conversation.id}`, 'ana', { title: 'After' });
  t.same([res.status, res.body], [409, { type: 'Conflict', message: 'conversation is busy; try the rename again' }]);
  t.equal((await getConversation(chat.url, 'ana', conversation.id)).title, 'Before');
});

t.test('another user renaming the conversation is 404 at once: it never takes or waits for the owner lock', async (t) => {
  const chat = await startChat(t, { lock: { waitMs: 200 } });
  const conversation = await createConversation(chat.url, 'ana', 'Before');
  await holdLease(chat.db, conversation.id);
  const res = await call(chat.url, 'PATCH', `/conversations/${conversation.id}`, 'bob', { title: 'Mine now' });
  t.same([res.status, res.body], [404, { type: 'Not Found', message: 'conversation not found' }], 'not 409: the lock was never asked for');
  t.equal((await getConversation(chat.url, 'ana', conversation.id)).title, 'Before');
});
