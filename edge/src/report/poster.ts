/**
 * Posting a batch to the ingest: the exact body bytes, signed (X-Signature, and X-Key-Id when set), over
 * undici with a deadline. A rejected or unreachable post is an outcome, never an exception: the next tick
 * supersedes it.
 */
import { Agent, request } from 'undici';
import { KEY_ID_HEADER, SIGNATURE_HEADER, sign } from '../../../shared/hmac.js';

export type PostOutcome =
  | { outcome: 'accepted'; status: number; serverDate?: string }
  | { outcome: 'rejected'; status: number; reason: string; serverDate?: string }
  | { outcome: 'unreachable'; reason: string };

export interface BatchPoster {
  post(body: string): Promise<PostOutcome>;
  close(): Promise<void>;
}

export interface PosterOptions {
  url: string;
  secret: string;
  keyId?: string;
  timeoutMs: number;
  /** Report the ingest's Date header (doctor's clock check). */
  withServerDate?: boolean;
}

const MAX_REASON = 200;

/** A short, single-line reason from an error body: its `message` when JSON, else the text. */
function reasonOf(text: string): string {
  let reason = text;
  try {
    const parsed = JSON.parse(text) as { message?: unknown };
    if (typeof parsed?.message === 'string') reason = parsed.message;
  } catch {
    // not JSON: the text itself (e.g. `invalid signature`)
  }
  const line = reason.replace(/\s+/g, ' ').trim();
  return line.length > MAX_REASON ? `${line.slice(0, MAX_REASON)}…` : line || 'no reason given';
}

/** Why a request never got an answer, in a word an operator can act on; never the URL or the body. */
export function unreachableReason(err: unknown): string {
  const e = err as { name?: string; code?: string; cause?: { code?: string } };
  if (e?.name === 'TimeoutError' || e?.name === 'AbortError' || e?.code === 'UND_ERR_HEADERS_TIMEOUT' || e?.code === 'UND_ERR_BODY_TIMEOUT') return 'timeout';
  return e?.code ?? e?.cause?.code ?? e?.name ?? 'error';
}

/**
 * A poster for one ingest URL. Keeps connections alive between ticks; `close()` drops them.
 *
 * @example
 * const poster = createBatchPoster({ url, secret, keyId: 'gw-1', timeoutMs: 5000 });
 * const result = await poster.post(body); // { outcome: 'accepted', status: 200 }
 */
export function createBatchPoster(options: PosterOptions): BatchPoster {
  const agent = new Agent({ connect: { timeout: options.timeoutMs }, headersTimeout: options.timeoutMs, bodyTimeout: options.timeoutMs });
  return {
    async post(body) {
      const headers: Record<string, string> = {
        'content-type': 'application/json',
        [SIGNATURE_HEADER]: sign(body, options.secret),
      };
      if (options.keyId) headers[KEY_ID_HEADER] = options.keyId;
      try {
        const response = await request(options.url, {
          method: 'POST',
          body,
          headers,
          dispatcher: agent,
          signal: AbortSignal.timeout(options.timeoutMs),
        });
        const text = await response.body.text();
        const date = response.headers.date;
        const serverDate = typeof date === 'string' && options.withServerDate ? { serverDate: date } : {};
        if (response.statusCode >= 200 && response.statusCode < 300) return { outcome: 'accepted', status: response.statusCode, ...serverDate };
        return { outcome: 'rejected', status: response.statusCode, reason: reasonOf(text), ...serverDate };
      } catch (err) {
        return { outcome: 'unreachable', reason: unreachableReason(err) };
      }
    },
    async close() {
      await agent.close();
    },
  };
}
