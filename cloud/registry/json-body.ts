/**
 * The text of a signed body, beside the parsed one: JSON.parse keeps only the last of a key given twice,
 * so the text is where the wire checks find a repeated key. (A plain JSON body keeps its text with
 * shared's `jsonBody(limit, { keepText: true })`.)
 */
import type { Request } from 'express';
import type { SignedRequest } from '../../shared/signed-body.js';

/** The text of a body `signedBody()` verified and parsed; undefined when it was empty (and so not parsed). */
export function signedText(req: Request): string | undefined {
  const raw = (req as SignedRequest).rawBody;
  return raw === undefined || raw.length === 0 ? undefined : raw.toString('utf8');
}
