/**
 * Posting a batch to the ingest: the exact body bytes, signed (X-Signature, and X-Key-Id when set), over
 * Node's own HTTP client with a deadline. A rejected or unreachable post is an outcome, never an
 * exception: the next tick supersedes it. Only the ingest's own answer, a 2xx `{"accepted": n}`, is
 * `accepted`: any other 2xx (a captive portal's page, another server at a wrong URL, a proxy's empty 204)
 * is not the ingest's, and is `rejected` with a reason that says so.
 *
 * Node's client parses with the llhttp built into the runtime. undici parses with llhttp compiled to
 * WebAssembly, whose first request instantiates it: about 15 MB more resident memory at the collector's
 * first post, which took the shipped collector's peak over its 100 MB budget.
 */
import * as http from 'node:http';
import * as https from 'node:https';
import { KEY_ID_HEADER, SIGNATURE_HEADER, sign } from '../../../shared/hmac.js';
import { printableLine } from '../ui/printable.js';
import { redactIdentifiers } from './identifiers.js';

/**
 * How a post went. `accepted` only for the ingest's 2xx `{"accepted": n}`; `rejected` for any other
 * answer, a 2xx from something else included (see {@link acceptedCountOf}).
 */
export type PostOutcome =
  | { outcome: 'accepted'; status: number; answer?: IngestAnswer }
  | { outcome: 'rejected'; status: number; reason: string; answer?: IngestAnswer }
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
  /** Report what the ingest answered: its text and Date header (doctor's probe and clock check). */
  withAnswer?: boolean;
}

/** What an ingest answered, beyond its status. */
export interface IngestAnswer {
  /** The answer's text, its first 64 KiB. */
  body: string;
  /** Its Date header. */
  serverDate?: string;
}

const MAX_REASON = 200;

/**
 * Text from outside the gateway as one printable line without identifiers (see
 * {@link redactIdentifiers}), cut after `max` characters only once redacted: a MAC cut in two is a few
 * octets no pattern finds, which would then be logged.
 *
 * @example
 * redactedLine('refused: station 3c:22:fb:01:02:03 unknown', 20); // 'refused: station [ma…'
 */
export function redactedLine(text: string, max: number): string {
  const line = redactIdentifiers(printableLine(text));
  return line.length > max ? `${line.slice(0, max)}…` : line;
}

/**
 * A short, single-line reason from an error body: its `message` when JSON, else the text, cut after
 * `max` characters. Printable: it is shown on the installer's terminal (doctor, simulate), where a
 * control character from the ingest would be obeyed, not read. Without identifiers, redacted before it
 * is cut: the collector logs it, and an ingest (or a proxy's error page) may quote a MAC anywhere in it.
 * Doctor words its probe's refusals with it.
 *
 * @example
 * reasonOf('{"type":"validation","message":"invalid batch"}'); // 'invalid batch'
 * reasonOf(''); // 'no reason given'
 */
export function reasonOf(text: string, max = MAX_REASON): string {
  let reason = text;
  try {
    const parsed = JSON.parse(text) as { message?: unknown };
    if (typeof parsed?.message === 'string') reason = parsed.message;
  } catch {
    // not JSON: the text itself (e.g. `invalid signature`)
  }
  return redactedLine(reason, max) || 'no reason given';
}

/**
 * The count an ingest's 2xx answer says it took: `{"accepted": n}` with n a non-negative integer
 * (CONTRACTS.md; a repeated batch id answers its first result in the same shape). Undefined for any other
 * text: a captive portal's page, another server answering at a wrong URL, a proxy's empty 204. Such an
 * answer did not come from the ingest, so the batch was not delivered.
 *
 * n is not held to the readings sent: the poster posts opaque bytes, and the ingest answers a repeated
 * batch id with its first result, which for the collector's own batch is that same count anyway.
 *
 * @example
 * acceptedCountOf('{"accepted":3}'); // 3
 * acceptedCountOf('<html>Sign in to the guest Wi-Fi</html>'); // undefined
 * acceptedCountOf(''); // undefined
 */
export function acceptedCountOf(text: string): number | undefined {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return undefined;
  }
  const accepted = (parsed as { accepted?: unknown } | null)?.accepted;
  return typeof accepted === 'number' && Number.isSafeInteger(accepted) && accepted >= 0 ? accepted : undefined;
}

/**
 * Why a 2xx that is not the ingest's `{"accepted": n}` is no delivery, with what came instead: printable
 * and without identifiers, redacted before it is cut (see {@link redactedLine}), as every reason.
 */
function notTheIngestsAnswer(text: string): string {
  const got = redactedLine(text, MAX_REASON);
  return `not the ingest's {"accepted": n} answer, so not delivered: ${got === '' ? 'an empty body' : got}`;
}

/** The most of an answer's body read: a reason is at most a line; an ingest has nothing longer to say. */
const MAX_ANSWER_BYTES = 64 * 1024;

/** Why a request never got an answer, in a word an operator can act on; never the URL or the body. */
export function unreachableReason(err: unknown): string {
  const e = err as { name?: string; code?: string; cause?: { code?: string; name?: string } };
  if (e?.name === 'TimeoutError' || e?.cause?.name === 'TimeoutError' || e?.code === 'ETIMEDOUT') return 'timeout';
  if (e?.name === 'AbortError') return 'timeout';
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
  const target = new URL(options.url);
  const client = target.protocol === 'https:' ? https : http;
  const agent = new client.Agent({ keepAlive: true, maxSockets: 2, timeout: options.timeoutMs });
  return {
    post(body) {
      const bytes = Buffer.from(body, 'utf8');
      const headers: Record<string, string | number> = {
        'content-type': 'application/json',
        'content-length': bytes.length,
        [SIGNATURE_HEADER]: sign(bytes, options.secret),
      };
      if (options.keyId) headers[KEY_ID_HEADER] = options.keyId;
      return new Promise<PostOutcome>((resolve) => {
        try {
          const req = client.request(target, { method: 'POST', headers, agent, signal: AbortSignal.timeout(options.timeoutMs) }, (res) => {
            const chunks: Buffer[] = [];
            let size = 0;
            res.on('data', (chunk: Buffer) => {
              if (size < MAX_ANSWER_BYTES) chunks.push(chunk);
              size += chunk.length;
            });
            res.once('error', (err) => resolve({ outcome: 'unreachable', reason: unreachableReason(err) }));
            res.once('end', () => {
              const status = res.statusCode ?? 0;
              const date = res.headers.date;
              const text = Buffer.concat(chunks).subarray(0, MAX_ANSWER_BYTES).toString('utf8');
              const answer = options.withAnswer ? { answer: { body: text, ...(typeof date === 'string' ? { serverDate: date } : {}) } } : {};
              if (status < 200 || status >= 300) resolve({ outcome: 'rejected', status, reason: reasonOf(text), ...answer });
              else if (acceptedCountOf(text) === undefined) resolve({ outcome: 'rejected', status, reason: notTheIngestsAnswer(text), ...answer });
              else resolve({ outcome: 'accepted', status, ...answer });
            });
          });
          req.once('error', (err) => resolve({ outcome: 'unreachable', reason: unreachableReason(err) }));
          req.end(bytes);
        } catch (err) {
          // Node refuses a header it cannot send (a key id holding a control character: ERR_INVALID_CHAR)
          // by throwing, before anything leaves; thrown out of this executor, it would reject the post.
          resolve({ outcome: 'unreachable', reason: unreachableReason(err) });
        }
      });
    },
    async close() {
      agent.destroy();
    },
  };
}
