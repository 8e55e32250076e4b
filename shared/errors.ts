/**
 * One error body for every service: `{type, message}`, with the type fixed by the status.
 */
import { isUtf8 } from 'node:buffer';
import type { ServerResponse } from 'node:http';
import type { ErrorRequestHandler, Request, RequestHandler, Response } from 'express';
import express from 'express';
import type { Logger } from 'pino';
import { describeError } from './describe-error.js';

export { describeError };

export const ERROR_TYPES = {
  400: 'Validation Error',
  401: 'Unauthorized',
  403: 'Forbidden',
  404: 'Not Found',
  409: 'Conflict',
  413: 'Payload Too Large',
  500: 'Internal Server Error',
  502: 'Bad Gateway',
  503: 'Service Unavailable',
} as const;

export type ErrorStatus = keyof typeof ERROR_TYPES;

/** The JSON error body. Extra fields (e.g. ingest's per-reading `errors`) may ride along. */
export interface ErrorBody {
  type: (typeof ERROR_TYPES)[ErrorStatus];
  message: string;
  [extra: string]: unknown;
}

/**
 * Builds the error body for a status.
 *
 * @example
 * errorBody(404, 'conversation not found'); // { type: 'Not Found', message: 'conversation not found' }
 */
export function errorBody(status: ErrorStatus, message: string, extra: Record<string, unknown> = {}): ErrorBody {
  return { ...extra, type: ERROR_TYPES[status], message };
}

/**
 * An error a handler throws (or passes to `next`) to answer with a given status. The message is shown
 * to the caller, so it must never carry secrets, SQL or stack traces.
 *
 * @example
 * throw new HttpError(409, 'domain name already taken');
 */
export class HttpError extends Error {
  readonly status: ErrorStatus;
  readonly extra: Record<string, unknown>;
  constructor(status: ErrorStatus, message: string, extra: Record<string, unknown> = {}) {
    super(message);
    this.name = 'HttpError';
    this.status = status;
    this.extra = extra;
  }
}

/** Sends the error body with its status. */
export function sendError(res: Response, status: ErrorStatus, message: string, extra: Record<string, unknown> = {}): void {
  res.status(status).json(errorBody(status, message, extra));
}

/**
 * {@link sendError} for a plain Node response, for the hot routes served in front of Express: the same
 * status, headers and body, written at once.
 */
export function writeError(res: ServerResponse, status: ErrorStatus, message: string, extra: Record<string, unknown> = {}): void {
  const body = JSON.stringify(errorBody(status, message, extra));
  res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(body) });
  res.end(body);
}

/** At most this many problems are reported in one answer: enough to mend a request, never an amplifier. */
export const MAX_REPORTED_PROBLEMS = 20;

/**
 * The problems an answer reports: the first {@link MAX_REPORTED_PROBLEMS}, then one line saying how
 * many more there were (those cut here, plus `notListed` the caller never described). A request with
 * thousands of bad keys or elements gets a short answer.
 *
 * @example
 * reportedProblems(['a: bad', 'b: bad'], 0, 1); // ['a: bad', 'and 1 more']
 */
export function reportedProblems(problems: readonly string[], notListed = 0, max = MAX_REPORTED_PROBLEMS): string[] {
  const more = Math.max(0, problems.length - max) + notListed;
  const shown = problems.slice(0, max);
  return more > 0 ? [...shown, `and ${more} more`] : shown;
}

/**
 * One problem per key a route does not know, described only for the first `max` keys (the rest are
 * counted in `notListed`), with long keys cut: a key is caller input and is never echoed whole.
 *
 * @example
 * unknownKeyProblems(['Nmae'], (key) => `${key}: not a field`); // { problems: ['Nmae: not a field'], notListed: 0 }
 */
export function unknownKeyProblems(
  keys: readonly string[],
  describe: (shownKey: string) => string,
  max = MAX_REPORTED_PROBLEMS,
): { problems: string[]; notListed: number } {
  const problems = keys.slice(0, max).map((key) => describe(key.length > 64 ? `${key.slice(0, 64)}…` : key));
  return { problems, notListed: Math.max(0, keys.length - max) };
}

/** Sends a fixed text/plain body, for the few answers the seeds fix as plain text. */
export function sendText(res: Response, status: number, text: string): void {
  res.status(status).type('text/plain').send(text);
}

/** The JSON body limit every service uses, unless a route says otherwise (ingest: 5 MiB). */
export const DEFAULT_JSON_LIMIT = 1024 * 1024;

/** body-parser's error `type` for a body whose bytes are not UTF-8. */
export const INVALID_UTF8 = 'encoding.invalid';

/**
 * Refuses body bytes that are not UTF-8 (JSON text must be, RFC 8259). Decoded leniently, each bad
 * byte would become U+FFFD, so two different bodies could be stored as one value (two names colliding
 * in a unique column, say), and the caller would never learn its text was altered.
 */
export function invalidUtf8Error(body: Buffer): Error | undefined {
  if (isUtf8(body)) return undefined;
  return Object.assign(new Error('request body is not valid UTF-8'), { type: INVALID_UTF8, status: 400 });
}

/** A request whose body {@link jsonBody} kept as text too. */
interface TextKeepingRequest {
  jsonBodyText?: string;
}

/**
 * express.json with the shared limit. Malformed JSON, bytes that are not UTF-8 and oversize bodies
 * reach {@link errorHandler}. With `keepText`, the text parsed is kept for {@link jsonBodyText}: JSON.parse
 * keeps only the last of a key given twice, so the text is where a check finds a repeated key.
 */
export function jsonBody(limit: string | number = DEFAULT_JSON_LIMIT, options: { keepText?: boolean } = {}): RequestHandler {
  return express.json({
    limit,
    strict: true,
    type: ['application/json', 'application/*+json'],
    // Runs on the (inflated) bytes before they are decoded; a thrown error keeps its status. The parser
    // would decode in any `utf-*` charset the request names (utf-7 turns the ASCII bytes checked here into
    // other text), so only UTF-8 is read, as RFC 8259 has JSON.
    verify: (req, _res, body, charset) => {
      if (charset !== 'utf-8') throw Object.assign(new Error(`charset ${charset} is not UTF-8`), { type: 'charset.unsupported', status: 415 });
      const invalid = invalidUtf8Error(body);
      if (invalid) throw invalid;
      // Decoded as the parser decodes (a leading byte order mark dropped): exactly the text it parsed.
      if (options.keepText) (req as TextKeepingRequest).jsonBodyText = new TextDecoder('utf-8').decode(body);
    },
  });
}

/** The text a `jsonBody({ keepText })` parsed; undefined when it parsed nothing (another media type, no body). */
export function jsonBodyText(req: object): string | undefined {
  return (req as TextKeepingRequest).jsonBodyText;
}

interface BodyParserError {
  type?: string;
  status?: number;
  statusCode?: number;
  /** The decoder's code (zlib's `Z_DATA_ERROR`, brotli's `ERR__ERROR_FORMAT_…`) when a compressed body cannot be decoded. */
  code?: string;
  /** The decoder's error number, beside its code. */
  errno?: number;
}

/** What an error is answered with, when its status and message may be shown to the caller. */
export interface ErrorAnswer {
  status: ErrorStatus;
  message: string;
  extra?: Record<string, unknown>;
}

/**
 * The answer for an error the caller caused or may be told of: HttpError with its own status;
 * body-parser's malformed JSON 400 and oversize body 413; a route parameter that is not valid
 * percent-encoding 400. Undefined for anything else, which is a 500 whose message says nothing of the
 * cause.
 *
 * @example
 * errorAnswerOf(new HttpError(404, 'conversation not found')); // { status: 404, message: 'conversation not found', extra: {} }
 */
export function errorAnswerOf(err: unknown): ErrorAnswer | undefined {
  if (err instanceof HttpError) return { status: err.status, message: err.message, extra: err.extra };
  const parserError = err as BodyParserError;
  switch (parserError?.type) {
    case 'entity.parse.failed':
      return { status: 400, message: 'request body is not valid JSON' };
    case 'entity.too.large':
      return { status: 413, message: 'request body is too large' };
    case INVALID_UTF8:
      return { status: 400, message: 'request body is not valid UTF-8' };
    case 'encoding.unsupported':
    case 'charset.unsupported':
      return { status: 400, message: 'unsupported body encoding' };
    case 'request.aborted':
      return { status: 400, message: 'request body was truncated' };
  }
  // body-parser decodes a gzip, deflate or brotli body and marks the decoder's refusal with status 400:
  // zlib's codes are Z_…, brotli's ERR_… with a numeric errno.
  if (parserError?.status === 400 && (parserError.code?.startsWith('Z_') || (parserError.code?.startsWith('ERR_') && typeof parserError.errno === 'number'))) {
    return { status: 400, message: 'request body is not valid for its Content-Encoding' };
  }
  // Express's router marks a route parameter it cannot percent-decode with status 400: bad input.
  if (err instanceof URIError && parserError.status === 400) {
    return { status: 400, message: 'the URL path is not valid percent-encoding' };
  }
  return undefined;
}

/**
 * The last middleware of every app: the answer {@link errorAnswerOf} gives, or a 500 whose message
 * says nothing of the cause. The cause is logged without stack, SQL or secrets (the logger redacts).
 */
export function errorHandler(logger?: Logger): ErrorRequestHandler {
  return (err: unknown, req, res, next) => {
    if (res.headersSent) {
      next(err);
      return;
    }
    const answer = errorAnswerOf(err);
    if (answer) {
      sendError(res, answer.status, answer.message, answer.extra);
      return;
    }
    logger?.error({ method: req.method, path: loggedPathOf(req), error: describeError(err) }, 'unhandled error');
    sendError(res, 500, 'internal error');
  };
}

/**
 * The path a log line names: the matched route's pattern (`/invite-codes/:code/redeem`) when a route
 * matched, since a path parameter may be a bearer secret such as an invite code. Before any route
 * matched (an error in app-level middleware, such as a body that cannot be read), only the first
 * segment of the path, `/invite-codes/…`: the rest may be that secret.
 */
function loggedPathOf(req: Request): string {
  const pattern = (req.route as { path?: unknown } | undefined)?.path;
  if (typeof pattern === 'string') return `${req.baseUrl}${pattern}`;
  const path = req.originalUrl.split('?')[0] ?? '';
  const next = path.indexOf('/', 1);
  return next === -1 ? path : `${path.slice(0, next)}/…`;
}

/** Answers 404 in the shared body for any route no router matched. */
export const notFoundHandler: RequestHandler = (_req, res) => sendError(res, 404, 'no such route');
