/**
 * The plain handler in front of Express for the common send (cloud/chat/send-path.ts): which requests
 * it takes, how it reads their bodies, and that every answer it gives is the answer the Express route
 * gives to the same request.
 */
import type { IncomingMessage } from 'node:http';
import t from 'tap';
import { fetch } from 'undici';
import { jsonBodyOf, plainSendIdOf } from '../../../cloud/chat/send-path.js';
import { claimsOf, createConversation, getConversation, startChat } from './support/harness.js';
import { jsonOrText } from '../../support/http.js';

const ID = '65a1b2c3d4e5f60718293a4b';

function request(method: string, url: string, headers: Record<string, string>): IncomingMessage {
  return { method, url, headers } as unknown as IncomingMessage;
}

const JSON_HEADERS = { 'content-type': 'application/json', 'content-length': '20' };

t.test('it takes the common send and leaves every other shape of request to Express', async (t) => {
  t.equal(plainSendIdOf(request('POST', `/conversations/${ID}/messages`, JSON_HEADERS)), ID);
  t.equal(plainSendIdOf(request('POST', `/chat/conversations/${ID}/messages`, JSON_HEADERS)), ID, 'under the ingress prefix');
  t.equal(plainSendIdOf(request('POST', `/conversations/${ID}/messages?x=1`, JSON_HEADERS)), ID, 'a query string is ignored, as Express routes');
  t.equal(plainSendIdOf(request('POST', `/conversations/${ID}/messages`, { ...JSON_HEADERS, 'content-type': 'application/json; charset=UTF-8' })), ID);
  t.equal(plainSendIdOf(request('POST', `/conversations/${ID}/messages`, { ...JSON_HEADERS, 'content-length': String(1024 * 1024) })), ID, 'exactly the JSON limit');

  const toExpress: Array<[string, IncomingMessage]> = [
    ['GET', request('GET', `/conversations/${ID}/messages`, JSON_HEADERS)],
    ['a malformed id', request('POST', '/conversations/not-an-id/messages', JSON_HEADERS)],
    ['a percent-encoded id', request('POST', `/conversations/%36${ID.slice(1)}/messages`, JSON_HEADERS)],
    ['a trailing slash', request('POST', `/conversations/${ID}/messages/`, JSON_HEADERS)],
    ['another prefix', request('POST', `/api/conversations/${ID}/messages`, JSON_HEADERS)],
    ['no content type', request('POST', `/conversations/${ID}/messages`, { 'content-length': '20' })],
    ['text/plain', request('POST', `/conversations/${ID}/messages`, { ...JSON_HEADERS, 'content-type': 'text/plain' })],
    ['a +json type', request('POST', `/conversations/${ID}/messages`, { ...JSON_HEADERS, 'content-type': 'application/merge-patch+json' })],
    ['another charset', request('POST', `/conversations/${ID}/messages`, { ...JSON_HEADERS, 'content-type': 'application/json; charset=latin1' })],
    ['another parameter', request('POST', `/conversations/${ID}/messages`, { ...JSON_HEADERS, 'content-type': 'application/json; v=1' })],
    ['a compressed body', request('POST', `/conversations/${ID}/messages`, { ...JSON_HEADERS, 'content-encoding': 'gzip' })],
    ['a chunked body', request('POST', `/conversations/${ID}/messages`, { 'content-type': 'application/json', 'transfer-encoding': 'chunked' })],
    ['no length', request('POST', `/conversations/${ID}/messages`, { 'content-type': 'application/json' })],
    ['a body over the limit', request('POST', `/conversations/${ID}/messages`, { ...JSON_HEADERS, 'content-length': String(1024 * 1024 + 1) })],
  ];
  for (const [what, req] of toExpress) t.equal(plainSendIdOf(req), undefined, what);
});

t.test('the body is read as express.json reads it', async (t) => {
  t.same(jsonBodyOf(Buffer.from('{"content":"hi"}')), { content: 'hi' });
  t.same(jsonBodyOf(Buffer.from(' \r\n\t[1]')), [1], 'leading whitespace, then an array');
  t.same(jsonBodyOf(Buffer.alloc(0)), {}, 'an empty body reads as an empty object');
  t.same(jsonBodyOf(Buffer.from('\ufeff{"content":"hi"}')), { content: 'hi' }, 'a byte order mark is dropped');
  const refused: Array<[string, Buffer, RegExp]> = [
    ['a string at the top', Buffer.from('"hi"'), /not valid JSON/],
    ['a number at the top', Buffer.from('12'), /not valid JSON/],
    ['whitespace only', Buffer.from('  '), /not valid JSON/],
    ['broken JSON', Buffer.from('{"content": "unterminated'), /not valid JSON/],
    ['bytes that are not UTF-8', Buffer.from([0x7b, 0xff, 0x7d]), /not valid UTF-8/],
  ];
  for (const [what, bytes, message] of refused) t.throws(() => jsonBodyOf(bytes), { message, status: 400 }, what);
});

/** A send with the given headers and body bytes; the answer's status and its JSON body or its frames' types. */
async function post(url: string, path: string, headers: Record<string, string>, body: string | Buffer): Promise<{ status: number; body: unknown }> {
  const res = await fetch(`${url}${path}`, { method: 'POST', headers, body });
  const text = await res.text();
  if (res.headers.get('content-type')?.startsWith('text/event-stream')) {
    return { status: res.status, body: [...text.matchAll(/^data: (.*)$/gm)].map((m) => (JSON.parse(m[1]!) as { type: string }).type) };
  }
  return { status: res.status, body: text ? jsonOrText(text) : undefined };
}

t.test('every answer of the plain handler is the answer Express gives the same request', async (t) => {
  const chat = await startChat(t);
  const conversation = await createConversation(chat.url, 'ana');
  const path = `/chat/conversations/${conversation.id}/messages`;
  // The same request twice: as the plain handler takes it, and with a content type parameter that
  // only Express takes (body-parser reads it as JSON all the same).
  const plain = { 'content-type': 'application/json' };
  const viaExpress = { 'content-type': 'application/json; v=1' };
  const asSent = (headers: Record<string, string>, body: string | Buffer) =>
    request('POST', path, { ...headers, 'content-length': String(Buffer.byteLength(body)) });

  const cases: Array<[string, Record<string, string>, string | Buffer, number]> = [
    ['broken JSON', { 'x-gateway-claims': claimsOf('ana') }, '{"content": "unterminated', 400],
    ['a string at the top', { 'x-gateway-claims': claimsOf('ana') }, '"hi"', 400],
    ['an empty body', { 'x-gateway-claims': claimsOf('ana') }, '', 400],
    ['a byte order mark before an empty object', { 'x-gateway-claims': claimsOf('ana') }, '\ufeff{}', 400],
    ['bytes that are not UTF-8', { 'x-gateway-claims': claimsOf('ana') }, Buffer.from([0x7b, 0xff, 0x7d]), 400],
    ['an array', { 'x-gateway-claims': claimsOf('ana') }, ' [{"content":"hi"}]', 400],
    ['an unknown field', { 'x-gateway-claims': claimsOf('ana') }, '{"content":"hi","role":"assistant"}', 400],
    ['8001 characters', { 'x-gateway-claims': claimsOf('ana') }, JSON.stringify({ content: 'a'.repeat(8001) }), 400],
    ['no claims', {}, '{"content":"hi"}', 401],
    ['claims that do not decode', { 'x-gateway-claims': 'not-base64-json' }, '{"content":"hi"}', 401],
    ["another user's conversation", { 'x-gateway-claims': claimsOf('bob') }, '{"content":"hi"}', 404],
  ];
  for (const [what, headers, body, status] of cases) {
    t.equal(plainSendIdOf(asSent(plain, body)), conversation.id, `${what}: the plain handler takes it`);
    t.equal(plainSendIdOf(asSent(viaExpress, body)), undefined, `${what}: Express takes the other`);
    const fromPlain = await post(chat.url, path, { ...headers, ...plain }, body);
    const fromExpress = await post(chat.url, path, { ...headers, ...viaExpress }, body);
    t.equal(fromPlain.status, status, what);
    t.same(fromPlain, fromExpress, `${what}: the same answer`);
  }

  const unknownPath = `/conversations/${ID}/messages`;
  const missing = await post(chat.url, unknownPath, { 'x-gateway-claims': claimsOf('ana'), ...plain }, '{"content":"hi"}');
  t.same(missing, await post(chat.url, unknownPath, { 'x-gateway-claims': claimsOf('ana'), ...viaExpress }, '{"content":"hi"}'));
  t.same(missing, { status: 404, body: { type: 'Not Found', message: 'conversation not found' } });
  t.equal(chat.agent.calls.length, 0, 'no refused send reached the agent');

  chat.agent.expect({ tokens: ['Hel', 'lo'], citations: [] }, { tokens: ['Hel', 'lo'], citations: [] });
  const streamed = await post(chat.url, path, { 'x-gateway-claims': claimsOf('ana'), ...plain }, '{"content":"hi"}');
  t.same(streamed, { status: 200, body: ['token', 'token', 'done'] });
  t.same(await post(chat.url, path, { 'x-gateway-claims': claimsOf('ana'), ...viaExpress }, '{"content":"hi"}'), streamed);
  t.same(
    (await getConversation(chat.url, 'ana', conversation.id)).messages?.map((m) => [m.role, m.content]),
    [
      ['user', 'hi'],
      ['assistant', 'Hello'],
      ['user', 'hi'],
      ['assistant', 'Hello'],
    ],
    'both sends stored, and nothing of the refused ones',
  );
  t.same(chat.agent.unexpected, []);
});
