/**
 * The chat service seen from a real browser (headless Chromium): a page served by the ingress, which
 * routes /chat/ to the service and turns the HttpOnly `authentication_token` cookie into
 * `x-gateway-claims`, creates a conversation, sends a question and reads the answer stream with fetch
 * and a ReadableStream reader, rendering tokens as they arrive, then reopens the conversation with GET.
 * The service runs in-process on the stack's FerretDB, in front of a fake agent.
 */
import { randomBytes } from 'node:crypto';
import { createServer } from 'node:http';
import { readFileSync } from 'node:fs';
import { MongoClient } from 'mongodb';
import t from 'tap';
import { encodeClaims } from '../../../shared/claims.js';
import { closeServer, listen } from '../../../shared/lifecycle.js';
import { silentLogger } from '../../../shared/logger.js';
import { createRegistry } from '../../../shared/prom.js';
import { createChatApp } from '../../../cloud/chat/app.js';
import { HttpAgent } from '../../../cloud/chat/http-agent.js';
import { createChatMetrics } from '../../../cloud/chat/metrics.js';
import { MongoConversationStore } from '../../../cloud/chat/mongo-store.js';
import { freshMongoUri, uniqueName } from '../../support/stack.js';
import { launchBrowser, openPage, profile, screenshotPath } from './support/browser.js';
import { startFakeAgent } from './support/fake-agent.js';
import { frontend } from './support/frontend.js';
import { startMesh } from './support/mesh.js';

interface MessageWire {
  id: string;
  role: string;
  content: string;
  citations?: unknown[];
  createdAt: string;
}
interface ConversationWire {
  id: string;
  userId: string;
  title: string;
  createdAt: string;
  updatedAt: string;
  messages?: MessageWire[];
}
interface Frame {
  type: string;
  text?: string;
  message?: MessageWire;
  error?: string;
}
interface SendState {
  status: number | null;
  contentType: string | null;
  frames: Array<{ id: string | null; frame: Frame }>;
  renders: string[];
  chunks: number;
  done: MessageWire | null;
  error: Frame | null;
  finished: boolean;
  failure: string | null;
}
/** What the page keeps on `window.chat` (see the script in pages/chat.html). */
interface ChatPage {
  conversation: ConversationWire | null;
  send: SendState | null;
  reloaded: { status: number; body: unknown } | null;
  call(method: string, path: string, body?: unknown, headers?: Record<string, string>): Promise<{ status: number; body: unknown }>;
  create(title?: string): Promise<{ status: number; body: ConversationWire }>;
  startSend(id: string, content: string): void;
}
type PageGlobals = { chat: ChatPage };

const CITATIONS = [
  { chunk_id: 'c-17', document_id: 'doc-hvac', source: 'manuals/hvac.pdf', section_path: ['Operation', 'Night setback'] },
  { chunk_id: 'c-18', document_id: 'doc-bms', source: 'bms/schedules.md', section_path: [], page: 4, score: 0.82 },
];
const TOKENS = ['The ', 'night ', 'setback ', 'starts ', 'at ', '22:00', ' — see the HVAC manual.'];
const QUESTION = 'When does the night setback start?';

// --- The service, its fake agent, the ingress and the browser, for the file ------------------------

const agent = await startFakeAgent(t);

const mongo = new MongoClient(await freshMongoUri(t), { serverSelectionTimeoutMS: 5_000 });
await mongo.connect();
t.teardown(() => mongo.close());
const store = new MongoConversationStore(mongo.db());
await store.start();
const httpAgent = new HttpAgent({ baseUrl: agent.url, connectTimeoutMs: 1_000, responseTimeoutMs: 5_000, idleTimeoutMs: 15_000 });
t.teardown(() => httpAgent.stop());
const registry = createRegistry('chat', { defaults: false });
const chat = createChatApp({ store, agent: httpAgent, registry, metrics: createChatMetrics(registry), logger: silentLogger() });
const chatServer = createServer(chat.app);
const chatPort = await listen(chatServer, 0, '127.0.0.1');
t.teardown(async () => {
  await chat.inFlight.drain(5_000);
  await closeServer(chatServer);
});

const anaToken = randomBytes(18).toString('base64url');
const bobToken = randomBytes(18).toString('base64url');
const anaSub = uniqueName('ana');
const ana = encodeClaims({ sub: anaSub, accountName: 'ana@acme.test', memberships: [{ domainName: 'acme', role: 'member' }] });
const bob = encodeClaims({ sub: uniqueName('bob'), accountName: 'bob@acme.test', memberships: [{ domainName: 'acme', role: 'member' }] });

// The ingress: the frontend's files at /, the chat service under /chat (prefix kept), one origin.
const site = frontend(['chat.html']);
const mesh = await startMesh(t, {
  tokens: new Map([[anaToken, ana], [bobToken, bob]]),
  routes: [{ prefix: '/chat/', upstream: `http://127.0.0.1:${chatPort}` }],
  fallback: site.handler,
});
t.teardown(() => {
  if (site.misses.length > 0) throw new Error(`the frontend got requests it does not serve: ${site.misses.join(' | ')}`);
});

const browser = await launchBrowser(t);

// --- Tests ----------------------------------------------------------------------------------------

t.test('a signed-in page streams an answer token by token and reopens the saved conversation', async (t) => {
  const context = await profile(browser, anaToken);
  t.teardown(() => context.close());
  const { page, errors } = await openPage(context, `${mesh.url}/chat.html`);

  const created = await page.evaluate(() => (globalThis as unknown as PageGlobals).chat.create());
  t.equal(created.status, 201);
  t.equal(created.body.userId, anaSub, 'owned by the sub of the claims the mesh made from the cookie');
  t.equal(created.body.title, 'New chat');
  t.match(created.body.id, /^[0-9a-f]{24}$/);
  const id = created.body.id;

  let release!: () => void;
  agent.expect({ tokens: TOKENS, citations: CITATIONS, holdAfter: 2, release: new Promise<void>((resolve) => (release = resolve)) });
  await page.evaluate(([conversation, question]) => (globalThis as unknown as PageGlobals).chat.startSend(conversation as string, question as string), [id, QUESTION]);

  // The agent holds after two tokens: the page shows them before the rest of the answer even exists.
  const firstTwo = TOKENS.slice(0, 2).join('');
  try {
    await page.waitForFunction((text) => (globalThis as unknown as { document: { getElementById(id: string): { textContent: string } } }).document.getElementById('answer').textContent === text, firstTwo, { timeout: 10_000 });
  } finally {
    release();
  }
  t.pass('the first tokens were rendered while the agent was still answering');
  t.equal(agent.calls.length, 1);
  t.same(agent.calls[0]?.body, { question: QUESTION, history: [], stream: true });
  t.equal(agent.calls[0]?.headers['x-gateway-claims'], ana, 'the agent got the claims the mesh injected, verbatim');

  await page.waitForFunction(() => (globalThis as unknown as PageGlobals).chat.send?.finished === true, undefined, { timeout: 15_000 });
  const send = await page.evaluate(() => (globalThis as unknown as PageGlobals).chat.send as SendState);
  t.equal(send.failure, null, 'the stream was read to its end');
  t.equal(send.status, 200);
  t.match(send.contentType, /^text\/event-stream/);
  t.same(send.frames.slice(0, TOKENS.length).map((f) => f.frame), TOKENS.map((text) => ({ type: 'token', text })), 'token frames in order');
  t.equal(send.frames.length, TOKENS.length + 1, 'then one terminal frame');
  const ids = send.frames.map((f) => Number(f.id));
  t.ok(ids.every((n, i) => Number.isInteger(n) && (i === 0 || n > (ids[i - 1] as number))), `frame ids increase: ${ids.join(',')}`);
  t.same(send.renders, TOKENS.map((_, i) => TOKENS.slice(0, i + 1).join('')), 'the page rendered after every token');
  t.ok(send.chunks >= 2, 'the body arrived in more than one read');

  const answer = TOKENS.join('');
  t.equal(await page.locator('#answer').textContent(), answer, 'the rendered answer is the agent’s tokens joined');
  const done = send.frames[send.frames.length - 1]?.frame;
  t.equal(done?.type, 'done');
  const saved = done?.message;
  t.match(saved?.id, /^[0-9a-f]{24}$/, 'done carries the saved message id');
  t.equal(saved?.role, 'assistant');
  t.equal(saved?.content, answer);
  t.same(saved?.citations, CITATIONS, 'citations exactly as the agent sent them');
  t.equal(await page.locator('#answer').getAttribute('data-message-id'), saved?.id);
  t.same(await page.locator('#citations li').allTextContents(), ['manuals/hvac.pdf › Operation › Night setback', 'bms/schedules.md']);

  // Reopen the conversation in a fresh page load: GET /chat/conversations/{id}.
  await page.goto(`${mesh.url}/chat.html?conversation=${id}`);
  await page.waitForFunction(() => (globalThis as unknown as PageGlobals).chat.reloaded !== null, undefined, { timeout: 10_000 });
  const reloaded = await page.evaluate(() => (globalThis as unknown as PageGlobals).chat.reloaded as { status: number; body: ConversationWire });
  t.equal(reloaded.status, 200);
  t.equal(reloaded.body.title, QUESTION, 'the first question became the title');
  const messages = reloaded.body.messages ?? [];
  t.equal(messages.length, 2, 'both messages were stored');
  t.same(messages[0], { id: messages[0]?.id, role: 'user', content: QUESTION, createdAt: messages[0]?.createdAt });
  t.same(messages[1], saved, 'the assistant message is reopened unchanged: id, content, citations');
  t.equal(await page.locator('#title').textContent(), QUESTION);
  t.same(await page.locator('#history > li').evaluateAll((items) => items.map((li) => (li as unknown as { dataset: Record<string, string> }).dataset.role)), ['user', 'assistant']);
  t.same(await page.locator('#history > li > .content').allTextContents(), [QUESTION, answer], 'the page shows both messages');
  t.same(await page.locator('#history > li').nth(1).getAttribute('data-id'), saved?.id);
  t.same(await page.locator('#history > li.assistant .citations li').allTextContents(), ['manuals/hvac.pdf › Operation › Night setback', 'bms/schedules.md']);

  const shot = screenshotPath('chat.png');
  await page.screenshot({ path: shot, fullPage: true });
  const png = readFileSync(shot);
  t.same([...png.subarray(0, 8)], [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a], 'the page rendered to a PNG screenshot');
  t.comment(`screenshot: ${shot} (${png.length} bytes)`);

  t.same(agent.unexpected, []);
  t.same(errors, [], 'no script errors on the page');

  t.test('another signed-in user cannot open it', async (t) => {
    const context = await profile(browser, bobToken);
    t.teardown(() => context.close());
    const other = await openPage(context, `${mesh.url}/chat.html`);
    const get = await other.page.evaluate((conversation) => (globalThis as unknown as PageGlobals).chat.call('GET', `/conversations/${conversation}`), id);
    t.equal(get.status, 404);
    t.equal((get.body as { type?: string }).type, 'Not Found');
    const list = await other.page.evaluate(() => (globalThis as unknown as PageGlobals).chat.call('GET', '/conversations'));
    t.equal(list.status, 200);
    t.same(list.body, [], 'bob lists none of ana’s conversations');
    // A page script can set x-gateway-claims on fetch; the mesh replaces it with the cookie's claims.
    const forged = await other.page.evaluate(([conversation, claims]) => (globalThis as unknown as PageGlobals).chat.call('GET', `/conversations/${conversation}`, undefined, { 'x-gateway-claims': claims as string }), [id, ana]);
    t.equal(forged.status, 404, 'a forged claims header does not make bob ana');
    t.ok(mesh.records.some((r) => r.token === bobToken && r.clientClaimsDropped && r.injected === bob), 'the mesh dropped the forged header and injected bob’s claims');
    t.same(other.errors.filter((e) => e.startsWith('pageerror')), []);
  });
});

t.test('a page without the cookie is refused, even with a forged claims header', async (t) => {
  const context = await profile(browser);
  t.teardown(() => context.close());
  const { page } = await openPage(context, `${mesh.url}/chat.html`);
  const anonymous = await page.evaluate(() => (globalThis as unknown as PageGlobals).chat.create());
  t.equal(anonymous.status, 401);
  t.equal((anonymous.body as unknown as { type: string }).type, 'Unauthorized');
  const forged = await page.evaluate((claims) => (globalThis as unknown as PageGlobals).chat.call('POST', '/conversations', {}, { 'x-gateway-claims': claims }), ana);
  t.equal(forged.status, 401, 'the mesh dropped the header the page set');
  t.same((forged.body as { type: string }).type, 'Unauthorized');
  const list = await page.evaluate((claims) => (globalThis as unknown as PageGlobals).chat.call('GET', '/conversations', undefined, { 'x-gateway-claims': claims }), ana);
  t.equal(list.status, 401);
});
