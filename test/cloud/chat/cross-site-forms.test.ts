/**
 * A page on another site can make the user's browser POST to chat with the user's claims (the mesh
 * builds them from the cookie): a bodiless form creates a conversation, a text/plain one reaches the
 * send route. Browsers mark such requests `Sec-Fetch-Site: cross-site`, or give them `Origin: null`;
 * they must change nothing, on the Express routes and on the plain send path in front of them alike.
 */
import t from 'tap';
import { fetch } from 'undici';
import { claimsOf, conversationsOf, createConversation, getConversation, send, startChat } from './support/harness.js';

const CROSS_SITE_MARKS: Array<Record<string, string>> = [
  { 'sec-fetch-site': 'cross-site', origin: 'https://attacker.example' },
  { origin: 'null' },
];

async function post(url: string, path: string, headers: Record<string, string>, body?: string): Promise<{ status: number; body: unknown }> {
  const res = await fetch(`${url}${path}`, { method: 'POST', headers: { 'x-gateway-claims': claimsOf('ana'), ...headers }, ...(body !== undefined ? { body } : {}) });
  const text = await res.text();
  return { status: res.status, body: text === '' ? undefined : (JSON.parse(text) as unknown) };
}

t.test('POST /conversations from another site is 403 and creates nothing; from the same site it creates one', async (t) => {
  const chat = await startChat(t);
  for (const prefix of ['', '/chat']) {
    for (const marks of CROSS_SITE_MARKS) {
      const refused = await post(chat.url, `${prefix}/conversations`, { 'content-type': 'application/x-www-form-urlencoded', ...marks }, '');
      t.equal(refused.status, 403, `${prefix}/conversations ${JSON.stringify(marks)}`);
      t.match(refused.body, { type: 'Forbidden', message: /^cross-site request refused/ });
    }
  }
  t.equal(await conversationsOf(chat.db, 'ana').countDocuments(), 0, 'no conversation was created');

  const sameOrigin = await post(chat.url, '/conversations', { 'sec-fetch-site': 'same-origin', origin: 'https://app.lintel.build' });
  t.equal(sameOrigin.status, 201, 'the app itself creates one');
  const sameSite = await post(chat.url, '/chat/conversations', { 'sec-fetch-site': 'same-site' });
  t.equal(sameSite.status, 201, 'so does a frontend on a sibling host of the same site');
  t.equal(await conversationsOf(chat.db, 'ana').countDocuments(), 2);
});

t.test('a send from another site is 403 and never reaches the agent, on the plain path and through Express', async (t) => {
  const chat = await startChat(t);
  const conversation = await createConversation(chat.url, 'ana');
  const question = JSON.stringify({ content: 'open the doors' });
  for (const marks of CROSS_SITE_MARKS) {
    // application/json with a length: the shape the plain send path takes.
    const plain = await post(chat.url, `/conversations/${conversation.id}/messages`, { 'content-type': 'application/json', ...marks }, question);
    t.equal(plain.status, 403, `plain path ${JSON.stringify(marks)}`);
    t.match(plain.body, { type: 'Forbidden', message: /^cross-site request refused/ });
    // text/plain, as a form can send it: Express's route.
    const form = await post(chat.url, `/chat/conversations/${conversation.id}/messages`, { 'content-type': 'text/plain', ...marks }, question);
    t.equal(form.status, 403, `Express route ${JSON.stringify(marks)}`);
  }
  t.same((await getConversation(chat.url, 'ana', conversation.id)).messages, [], 'nothing was stored');
  t.same(chat.agent.unexpected, [], 'the agent was never called');

  chat.agent.expect({ tokens: ['Done.'] });
  const own = await send(chat.url, 'ana', conversation.id, 'open the doors');
  t.equal(own.status, 200, 'a send without the marks streams as before');
  t.equal((await getConversation(chat.url, 'ana', conversation.id)).messages?.length, 2);
});
