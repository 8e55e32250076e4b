/**
 * A push service host for what web-push-testing cannot emulate (a 404, a 403, a 503, a slow answer, a
 * host on a private address): a real HTTP server on 127.0.0.1 port 0. It accepts only what a push
 * service accepts: a POST to a path the test subscribed, carrying what the web-push library sends —
 * `Authorization: vapid t=<JWT>, k=<key>` with an ES256 JWT signed by the expected application server
 * key for this origin, `Content-Encoding: aes128gcm` with an RFC 8188 body of at most 4096 octets, `Content-Type:
 * application/octet-stream` and a `TTL`. An accepted push is recorded in `calls` and answered with the
 * subscription's status, after its hold. Anything else answers 400 and is recorded in `unexpected`,
 * which fails the test at teardown.
 *
 * Start it before the service under test: its check is registered first, so it runs last (tap runs
 * teardowns last-registered first), after the service drained and this server closed, and a failing
 * check skips no other cleanup.
 */
import { createPublicKey, verify } from 'node:crypto';
import { createServer, type IncomingMessage } from 'node:http';
import { closeServer, listen } from '../../../../shared/lifecycle.js';
import type { Teardown } from './stack.js';

export interface FakePushHost {
  /** http://127.0.0.1:port */
  origin: string;
  port: number;
  /**
   * Sets up a subscription at `path` (e.g. `/push/a`) answered with `status` after `holdMs`, and returns
   * its endpoint URL on `host` (default 127.0.0.1; any spelling that reaches this server). With
   * `answerWhen`, each push is answered only once that promise has settled (and the hold has passed).
   */
  subscribe(path: string, status: number, options?: { holdMs?: number; host?: string; answerWhen?: Promise<unknown> }): string;
  /** The paths of the accepted pushes, in arrival order. */
  calls: string[];
  /** Every request that arrived, accepted or not. */
  readonly received: number;
  /** The most requests in flight at once. */
  readonly peak: number;
  /** `METHOD path: what was wrong` for each request that was not a well-formed push to a subscribed path. */
  unexpected: string[];
}

const AUTHORIZATION = /^vapid t=([\w-]+)\.([\w-]+)\.([\w-]+), k=([\w-]+)$/;

function json(part: string): Record<string, unknown> | undefined {
  try {
    const value: unknown = JSON.parse(Buffer.from(part, 'base64url').toString('utf8'));
    return typeof value === 'object' && value !== null ? (value as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

/** What is wrong with a push request, or undefined when a push service would take it. */
function pushProblem(req: IncomingMessage, body: Buffer, vapidPublicKey: string): string | undefined {
  if (req.method !== 'POST') return 'not a POST';
  const auth = AUTHORIZATION.exec(req.headers.authorization ?? '');
  if (!auth) return 'no "vapid t=..., k=..." Authorization';
  const [, header = '', claims = '', signature = '', key = ''] = auth;
  if (key !== vapidPublicKey) return 'k is not the application server key';
  if (json(header)?.alg !== 'ES256') return 'the JWT is not ES256';
  const payload = json(claims);
  if (payload?.aud !== `http://${req.headers.host}`) return 'the JWT audience is not this origin';
  if (typeof payload.exp !== 'number' || payload.exp * 1000 <= Date.now()) return 'the JWT has expired';
  if (typeof payload.sub !== 'string' || !/^(mailto:|https:)/.test(payload.sub)) return 'the JWT has no mailto: or https: subject';
  const point = Buffer.from(key, 'base64url');
  const publicKey = createPublicKey({
    key: { kty: 'EC', crv: 'P-256', x: point.subarray(1, 33).toString('base64url'), y: point.subarray(33, 65).toString('base64url') },
    format: 'jwk',
  });
  const signed = verify('sha256', Buffer.from(`${header}.${claims}`), { key: publicKey, dsaEncoding: 'ieee-p1363' }, Buffer.from(signature, 'base64url'));
  if (!signed) return 'the JWT signature does not verify';
  if (req.headers['content-encoding'] !== 'aes128gcm') return 'Content-Encoding is not aes128gcm';
  if (req.headers['content-type'] !== 'application/octet-stream') return 'Content-Type is not application/octet-stream';
  const ttl = req.headers.ttl;
  if (typeof ttl !== 'string' || !/^\d+$/.test(ttl)) return 'no TTL';
  // RFC 8188: salt (16), record size (4), key id length (1), key id (the sender's 65-byte P-256 key), then at least one sealed record.
  if (body.length < 21 + 65 + 17 || body.readUInt32BE(16) < 18 || body.readUInt8(20) !== 65) return 'the body is not an aes128gcm message';
  // RFC 8030 7.2: a push service need take no more; real ones answer 413.
  if (body.length > 4096) return `the body is ${body.length} octets, over the 4096 a push service must accept`;
  return undefined;
}

export async function startFakePushHost(t: Teardown, options: { vapidPublicKey: string }): Promise<FakePushHost> {
  const routes = new Map<string, { status: number; holdMs: number; answerWhen: Promise<unknown> }>();
  const calls: string[] = [];
  const unexpected: string[] = [];
  let received = 0;
  let inFlight = 0;
  let peak = 0;
  t.teardown(() => {
    if (unexpected.length > 0) throw new Error(`the fake push host got requests it was not set up for: ${unexpected.join(' | ')}`);
  });
  const server = createServer((req, res) => {
    received += 1;
    inFlight += 1;
    peak = Math.max(peak, inFlight);
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const path = req.url ?? '';
      const route = routes.get(path);
      const problem = route ? pushProblem(req, Buffer.concat(chunks), options.vapidPublicKey) : 'no subscription at this path';
      if (!route || problem) {
        unexpected.push(`${req.method} ${path}: ${problem}`);
        inFlight -= 1;
        res.writeHead(400).end(problem);
        return;
      }
      calls.push(path);
      const answer = () => {
        inFlight -= 1;
        res.writeHead(route.status).end();
      };
      void route.answerWhen.finally(() => setTimeout(answer, route.holdMs));
    });
  });
  const port = await listen(server, 0, '127.0.0.1');
  t.teardown(() => closeServer(server));
  return {
    origin: `http://127.0.0.1:${port}`,
    port,
    subscribe(path, status, { holdMs = 0, host = '127.0.0.1', answerWhen = Promise.resolve() } = {}) {
      routes.set(path, { status, holdMs, answerWhen });
      return `http://${host}:${port}${path}`;
    },
    calls,
    get received() {
      return received;
    },
    get peak() {
      return peak;
    },
    unexpected,
  };
}
