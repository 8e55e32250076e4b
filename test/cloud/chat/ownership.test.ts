import t from 'tap';
import { call, conversationsOf, createConversation, getConversation, openSend, startChat } from './support/harness.js';

t.test('every conversation route answers 404 to anyone but the owner, the same way as for an unknown id', async (t) => {
  const chat = await startChat(t);
  const owned = await createConversation(chat.url, 'owner', 'Boiler room');
  const unknown = '0123456789abcdef01234567';

  for (const [label, id, sub] of [
    ["the owner's id with another sub", owned.id, 'intruder'],
    ['an unknown id, for the owner', unknown, 'owner'],
    ['an unknown id, for another user', unknown, 'intruder'],
  ] as const) {
    const expected = { type: 'Not Found', message: 'conversation not found' };
    const get = await call(chat.url, 'GET', `/conversations/${id}`, sub);
    t.same([get.status, get.body], [404, expected], `GET: ${label}`);
    const patch = await call(chat.url, 'PATCH', `/conversations/${id}`, sub, { title: 'mine now' });
    t.same([patch.status, patch.body], [404, expected], `PATCH: ${label}`);
    const del = await call(chat.url, 'DELETE', `/conversations/${id}`, sub);
    t.same([del.status, del.body], [404, expected], `DELETE: ${label}`);
    const sent = await openSend(chat.url, sub, id, { content: 'hello?' });
    t.same('body' in sent ? [sent.status, sent.body] : ['a stream'], [404, expected], `POST messages: ${label}`);
  }

  const still = await getConversation(chat.url, 'owner', owned.id);
  t.equal(still.title, 'Boiler room', 'the intruder renamed nothing');
  t.equal(still.messages?.length, 0, 'and sent nothing');
  t.equal(chat.agent.calls.length, 0, 'the agent was never called');
  t.same(chat.agent.unexpected, []);
});

t.test('a malformed id is 404 too, on every route, never 400 or 500', async (t) => {
  const chat = await startChat(t);
  await createConversation(chat.url, 'owner');
  // The last three are not valid percent-encoding: the router cannot decode them, and they are no
  // conversation's id either.
  for (const id of ['nope', '123', 'zzzzzzzzzzzzzzzzzzzzzzzz', '0123456789abcdef012345678', '0123456789abcdef0123456', '%7B%22%24ne%22%3A1%7D', 'abcdefabcdefabcd', '%zz', '0123456789abcdef0123456%', '%E0%A4%A']) {
    for (const [method, path, body] of [
      ['GET', `/conversations/${id}`, undefined],
      ['PATCH', `/conversations/${id}`, { title: 'x' }],
      ['DELETE', `/conversations/${id}`, undefined],
      ['POST', `/conversations/${id}/messages`, { content: 'x' }],
    ] as const) {
      const res = await call(chat.url, method, path, 'owner', body);
      t.same([res.status, res.body], [404, { type: 'Not Found', message: 'conversation not found' }], `${method} ${path}`);
    }
  }
  t.equal(chat.agent.calls.length, 0);
});

t.test('an id in upper-case hex finds the same conversation for its owner only', async (t) => {
  const chat = await startChat(t);
  const owned = await createConversation(chat.url, 'owner');
  const upper = owned.id.toUpperCase();
  t.equal((await call(chat.url, 'GET', `/conversations/${upper}`, 'owner')).status, 200);
  t.equal((await call(chat.url, 'GET', `/conversations/${upper}`, 'intruder')).status, 404);
});

t.test('the list holds only the caller\'s conversations', async (t) => {
  const chat = await startChat(t);
  await createConversation(chat.url, 'ana', 'A1');
  await createConversation(chat.url, 'ben', 'B1');
  await createConversation(chat.url, 'ana', 'A2');
  const ana = await call(chat.url, 'GET', '/conversations', 'ana');
  const ben = await call(chat.url, 'GET', '/conversations', 'ben');
  const eve = await call(chat.url, 'GET', '/conversations', 'eve');
  t.same((ana.body as Array<{ title: string }>).map((c) => c.title).sort(), ['A1', 'A2']);
  t.same((ben.body as Array<{ title: string }>).map((c) => c.title), ['B1']);
  t.same(eve.body, []);
});

t.test('a missing or malformed claims header is 401 on every conversation route', async (t) => {
  const chat = await startChat(t);
  const owned = await createConversation(chat.url, 'owner');
  for (const [method, path] of [
    ['POST', '/conversations'],
    ['GET', '/conversations'],
    ['GET', `/conversations/${owned.id}`],
    ['PATCH', `/conversations/${owned.id}`],
    ['DELETE', `/conversations/${owned.id}`],
    ['POST', `/conversations/${owned.id}/messages`],
  ] as const) {
    const missing = await call(chat.url, method, path, undefined, method === 'GET' || method === 'DELETE' ? undefined : {});
    t.equal(missing.status, 401, `${method} ${path} without claims`);
    t.equal((missing.body as { type: string }).type, 'Unauthorized');
    const res = await fetch(`${chat.url}${path}`, { method, headers: { 'x-gateway-claims': 'not base64 at all!' } });
    t.equal(res.status, 401, `${method} ${path} with garbage claims`);
  }
  t.equal(chat.agent.calls.length, 0);
});

t.test('a sub the store cannot hold exactly (half a surrogate pair, NUL) is 401: two such subjects never share conversations', async (t) => {
  const chat = await startChat(t);
  // Stored as UTF-8, 'x\ud800' and 'x\udc00' would both become 'x\ufffd', one owner for three subjects.
  for (const sub of ['x\ud800', 'x\udc00', 'x\u0000']) {
    const created = await call(chat.url, 'POST', '/conversations', sub, {});
    t.same([created.status, created.body], [401, { type: 'Unauthorized', message: 'x-gateway-claims rejected: text holds NUL or a lone surrogate' }], JSON.stringify(sub));
    t.equal((await call(chat.url, 'GET', '/conversations', sub)).status, 401);
  }
  await createConversation(chat.url, 'x\ufffd', 'Replacement character');
  t.equal(((await call(chat.url, 'GET', '/conversations', 'x\ufffd')).body as unknown[]).length, 1, 'a sub holding U+FFFD itself is an ordinary owner');
  t.equal(await conversationsOf(chat.db, 'x\ufffd').countDocuments({}), 1);
});
