import { request } from 'undici';
import type { Teardown } from './relay-harness.js';

/** Engine.IO v4 separates the packets of one long-polling body with a record separator. */
const SEPARATOR = '\x1e';

/**
 * A raw Engine.IO v4 long-polling client: a GET opens the connection, each POST carries a payload of
 * packets, each GET returns what the server has waiting (or waits for it). The claims go with the opening
 * request only, as the mesh would inject them.
 */
export async function pollingClient(t: Teardown, url: string, header: string) {
  const base = `${url}/socket.io/?EIO=4&transport=polling`;
  const opened = await request(base, { headers: { 'x-gateway-claims': header } });
  const open = await opened.body.text();
  if (!open.startsWith('0{')) throw new Error(`expected an Engine.IO open packet, got ${open.slice(0, 80)}`);
  const { sid } = JSON.parse(open.slice(1)) as { sid: string };
  const session = `${base}&sid=${encodeURIComponent(sid)}`;
  const post = async (packets: string[]): Promise<void> => {
    const response = await request(session, { method: 'POST', body: packets.join(SEPARATOR), headers: { 'content-type': 'text/plain;charset=UTF-8' } });
    const text = await response.body.text();
    if (response.statusCode !== 200 || text !== 'ok') throw new Error(`POST answered ${response.statusCode} ${text}`);
  };
  // 1 = Engine.IO close: ends the connection, and with it any GET still waiting.
  t.teardown(() => post(['1']).catch(() => undefined));
  const received: string[] = [];
  /** One GET; a server ping (2) is answered with a pong (3) so a slow run keeps the connection. */
  const poll = async (): Promise<void> => {
    const response = await request(session);
    const text = await response.body.text();
    if (response.statusCode !== 200) throw new Error(`GET answered ${response.statusCode} ${text}`);
    const packets = text.split(SEPARATOR);
    if (packets.includes('2')) await post(['3']);
    received.push(...packets.filter((p) => p !== '2'));
  };
  /** Polls until `condition` holds over everything received so far. */
  const pollUntil = async (condition: (packets: string[]) => boolean, what: string): Promise<void> => {
    const deadline = Date.now() + 10_000;
    while (!condition(received)) {
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
      await poll();
    }
  };
  return { sid, session, post, received, pollUntil };
}
