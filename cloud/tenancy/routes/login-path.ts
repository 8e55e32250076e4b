/**
 * GET /internal/memberships?accountId=: claims-gateway's call on every login, the hottest route.
 *
 * It is served by a plain Node handler in front of Express, because on this path Express's
 * per-request machinery (router layers, res.json's conversions, header helpers) costs more CPU than
 * the indexed query it wraps; the answer is written as one string, headers included, in one write.
 * Behaviour is the same as any other signed route: the signature covers the exact body (empty bytes
 * for a GET), a mismatch is 403 text/plain `invalid signature`, a bad accountId is a 400 error body,
 * a body over 1 MiB is 413, and a failure is a vague 500 whose cause is logged without detail.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Logger } from 'pino';
import { describeError, writeError } from '../../../shared/errors.js';
import { SIGNATURE_HEADER, verify, type KeyRing } from '../../../shared/hmac.js';
import { describeValue } from '../../../shared/kinds.js';
import type { TenancyStore } from '../model.js';
import { isUuid } from '../policy.js';
import { membershipJson } from '../wire.js';

const PATH = '/internal/memberships';
const BODY_LIMIT = 1024 * 1024;
const EMPTY = Buffer.alloc(0);

/** True for the requests this handler answers: GET on the login path, with or without a query. */
export function isLoginPath(req: IncomingMessage): boolean {
  if (req.method !== 'GET' || req.url === undefined) return false;
  return req.url === PATH || req.url.startsWith(`${PATH}?`);
}

function send(res: ServerResponse, status: number, contentType: string, body: string): void {
  res.writeHead(status, { 'content-type': contentType, 'content-length': Buffer.byteLength(body) });
  res.end(body);
}

/** Reads the request body (usually none), or undefined when it exceeds the limit. */
function readBody(req: IncomingMessage): Promise<Buffer | undefined> {
  if (req.headers['content-length'] === undefined && req.headers['transfer-encoding'] === undefined) return Promise.resolve(EMPTY);
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > BODY_LIMIT) {
        resolve(undefined);
        req.resume();
        return;
      }
      chunks.push(chunk);
    });
    req.once('end', () => resolve(size > BODY_LIMIT ? undefined : Buffer.concat(chunks)));
    req.once('error', reject);
  });
}

function accountIdOf(url: string): { ok: true; accountId: string } | { ok: false; message: string } {
  const values = new URLSearchParams(url.slice(PATH.length + 1)).getAll('accountId');
  const [value] = values;
  if (values.length === 1 && value !== undefined && isUuid(value)) return { ok: true, accountId: value.toLowerCase() };
  const got = values.length > 1 ? 'several values' : describeValue(value);
  return { ok: false, message: `accountId: expected an account id (uuid), got ${got}` };
}

export function loginPathHandler(store: TenancyStore, keys: KeyRing, logger: Logger): (req: IncomingMessage, res: ServerResponse) => void {
  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    // As on every signed route: a signed body is never inflated, so one with an encoding is refused.
    const encoding = req.headers['content-encoding'];
    if (encoding !== undefined && encoding.trim().toLowerCase() !== 'identity') {
      req.resume();
      writeError(res, 400, 'unsupported body encoding');
      return;
    }
    const body = await readBody(req);
    if (body === undefined) {
      writeError(res, 413, 'request body is too large');
      return;
    }
    if (!verify(body, req.headers[SIGNATURE_HEADER], keys)) {
      send(res, 403, 'text/plain; charset=utf-8', 'invalid signature');
      return;
    }
    const query = accountIdOf(req.url ?? '');
    if (!query.ok) {
      writeError(res, 400, query.message);
      return;
    }
    const memberships = await store.membershipsOf(query.accountId);
    send(res, 200, 'application/json; charset=utf-8', JSON.stringify(memberships.map(membershipJson)));
  };
  return (req, res) => {
    handle(req, res).catch((err: unknown) => {
      logger.error({ method: req.method, path: PATH, error: describeError(err) }, 'unhandled error');
      if (!res.headersSent) writeError(res, 500, 'internal error');
      else res.destroy();
    });
  };
}
