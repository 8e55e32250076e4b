/**
 * An ingest stand-in on 127.0.0.1 for the poster's tests, answering as scripted: a captive portal, a
 * proxy's refusal page, an error message holding terminal controls, the ingest's own `{"accepted": n}`.
 */
import { createServer } from 'node:http';
import type { Test } from 'tap';
import { verify } from '../../../shared/hmac.js';
import { closeServer, listen } from '../../../shared/lifecycle.js';

export interface IngestAnswer {
  status: number;
  body: string;
  type?: string;
}

/**
 * Answers each POST /ingest with the next answer of `script` (an answer, or one made from the body), or
 * with `script`'s one answer every time when `every`. Another path or method, a body not signed with
 * `secret` (when given), or a call past the script is answered 500 and fails the test at teardown, as
 * does a scripted answer never asked for.
 */
export async function startScriptedIngest(
  t: Test,
  script: Array<IngestAnswer | ((raw: Buffer) => IngestAnswer)>,
  options: { secret?: string; every?: boolean } = {},
): Promise<{ url: string; received: string[] }> {
  const unexpected: string[] = [];
  const received: string[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const raw = Buffer.concat(chunks);
      const next = options.every ? script[0] : script.shift();
      const signed = options.secret === undefined || verify(raw, req.headers['x-signature'], options.secret);
      if (req.method !== 'POST' || req.url !== '/ingest' || !signed || next === undefined) {
        unexpected.push(`${req.method} ${req.url} (${next === undefined ? 'past the script' : 'signature or route'})`);
        res.writeHead(500).end();
        return;
      }
      received.push(raw.toString('utf8'));
      const answer = typeof next === 'function' ? next(raw) : next;
      res.writeHead(answer.status, answer.type ? { 'content-type': answer.type } : {}).end(answer.body);
    });
  });
  // Registered before the close, so it runs after it (tap runs teardowns last-registered first).
  t.teardown(() => {
    if (unexpected.length > 0) throw new Error(`the ingest stand-in got call(s) it was not set up for: ${unexpected.join(' | ')}`);
    if (!options.every && script.length > 0) throw new Error(`the ingest stand-in was not called for ${script.length} scripted answer(s)`);
  });
  const port = await listen(server, 0, '127.0.0.1');
  t.teardown(() => closeServer(server));
  return { url: `http://127.0.0.1:${port}/ingest`, received };
}
