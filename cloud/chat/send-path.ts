/**
 * POST /conversations/{id}/messages (and under /chat) for the common request, served by a plain Node
 * handler in front of Express.
 *
 * Every send's first token waits for this path, and under load the event loop that runs it is also
 * relaying every open stream's tokens, so what it costs per request is paid in other answers' latency
 * too. Express's per-request work (its router layers under the ingress prefix, the claims and JSON
 * middleware, the request and response decoration) is work this one route does not need.
 *
 * It takes only a request whose shape it can read as Express would: POST, the path with a well-formed
 * id, `Content-Type: application/json` (charset absent or UTF-8), a Content-Length within the JSON
 * limit, and no Content-Encoding or Transfer-Encoding. Every other request goes to Express, whose
 * answers (a compressed body, another charset, an oversize or chunked body, a malformed id) are
 * therefore unchanged. What it answers is what the Express route answers: a bad claims header is 401
 * before the body is read, bytes that are not UTF-8 400, a body that is not a JSON object or array 400
 * (an empty one reads as `{}`, a leading byte order mark is dropped), a truncated body 400, and the
 * rest as the send itself decides.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Logger } from 'pino';
import { CLAIMS_HEADER, decodeClaims } from '../../shared/claims.js';
import { DEFAULT_JSON_LIMIT, describeError, errorAnswerOf, invalidUtf8Error, writeError } from '../../shared/errors.js';
import type { SendMessage } from './send-message.js';

const SEND_PATH = /^(\/chat)?\/conversations\/([0-9a-fA-F]{24})\/messages(?:\?.*)?$/;
/** `application/json`, with no parameter but a UTF-8 charset. */
const PLAIN_JSON = /^application\/json[ \t]*(?:;[ \t]*charset[ \t]*=[ \t]*(?:utf-8|"utf-8")[ \t]*)?$/i;
/** JSON's insignificant whitespace, as body-parser's strict check skips it before the first character. */
const LEADING_WHITESPACE = /^[ \t\n\r]*/;

/** The path's conversation id when this handler takes the request; undefined leaves it to Express. */
export function plainSendIdOf(req: IncomingMessage): string | undefined {
  if (req.method !== 'POST') return undefined;
  const match = SEND_PATH.exec(req.url ?? '');
  if (!match) return undefined;
  const { headers } = req;
  if (headers['content-encoding'] !== undefined || headers['transfer-encoding'] !== undefined) return undefined;
  const type = headers['content-type'];
  if (type === undefined || !PLAIN_JSON.test(type)) return undefined;
  // Node's parser has checked the header is a decimal length; absent, it reads as NaN and fails here.
  if (!(Number(headers['content-length']) <= DEFAULT_JSON_LIMIT)) return undefined;
  return match[2];
}

const parserError = (type: string, message: string) => Object.assign(new Error(message), { type, status: 400 });

async function bodyBytes(req: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  try {
    for await (const chunk of req) chunks.push(chunk as Buffer);
  } catch {
    throw parserError('request.aborted', 'request body was truncated');
  }
  return Buffer.concat(chunks);
}

/**
 * The body as express.json reads it (jsonBody in shared/errors.ts): UTF-8 checked on the bytes, a
 * byte order mark dropped, empty as `{}`, and only an object or an array at the top (strict).
 *
 * @example
 * jsonBodyOf(Buffer.from('{"content":"hi"}')); // { content: 'hi' }
 * jsonBodyOf(Buffer.from('"hi"')); // throws: request body is not valid JSON
 */
export function jsonBodyOf(bytes: Buffer): unknown {
  const invalid = invalidUtf8Error(bytes);
  if (invalid) throw invalid;
  let text = bytes.toString('utf8');
  if (text.charCodeAt(0) === 0xfeff) text = text.slice(1);
  if (text.length === 0) return {};
  const first = text.charAt(LEADING_WHITESPACE.exec(text)![0].length);
  if (first !== '{' && first !== '[') throw parserError('entity.parse.failed', 'request body is not valid JSON');
  try {
    return JSON.parse(text) as unknown;
  } catch {
    throw parserError('entity.parse.failed', 'request body is not valid JSON');
  }
}

/** The handler for a request {@link plainSendIdOf} took, given the id it read. */
export function plainSendHandler(send: SendMessage, logger: Logger): (req: IncomingMessage, res: ServerResponse, id: string) => void {
  const handle = async (req: IncomingMessage, res: ServerResponse, id: string): Promise<void> => {
    const header = req.headers[CLAIMS_HEADER];
    const claims = decodeClaims(header);
    if (!claims.ok) {
      writeError(res, 401, `x-gateway-claims rejected: ${claims.reason}`);
      return;
    }
    const body = jsonBodyOf(await bodyBytes(req));
    await send({ id, body, caller: claims.claims, rawClaims: typeof header === 'string' ? header : '' }, res);
  };
  return (req, res, id) => {
    handle(req, res, id).catch((err: unknown) => {
      if (res.headersSent) {
        res.destroy();
        return;
      }
      const answer = errorAnswerOf(err);
      if (answer) {
        writeError(res, answer.status, answer.message, answer.extra);
        return;
      }
      const path = `${SEND_PATH.exec(req.url ?? '')?.[1] ?? ''}/conversations/:id/messages`;
      logger.error({ method: req.method, path, error: describeError(err) }, 'unhandled error');
      writeError(res, 500, 'internal error');
    });
  };
}
