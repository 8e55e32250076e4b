/**
 * A stand-in for the telemetry ingest on 127.0.0.1 port 0 that behaves like the contract: it verifies
 * X-Signature over the exact bytes (403 `invalid signature`), refuses an empty batch and validates every
 * reading against the shared catalog (400 with errors), and answers 200 {accepted}. Anything else (another path or method) is
 * answered 500, recorded as unexpected, and fails the test at teardown. It records the exact bytes of
 * each batch and can fail or hang on demand; test/edge/e2e/simulate-real-ingest.test.ts posts to the
 * real service instead.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { verify } from '../../../shared/hmac.js';
import { validateReading } from '../../../shared/catalog/validate.js';
import { closeServer, listen } from '../../../shared/lifecycle.js';

export interface ReceivedBatch {
  raw: Buffer;
  headers: IncomingMessage['headers'];
  signatureValid: boolean;
  status: number;
}

export interface VerifyingIngest {
  url: string;
  received: ReceivedBatch[];
  unexpected: string[];
  /** Switches how it answers from now on. */
  behave(mode: 'verify' | 'fail-500' | 'hang'): void;
  close(): Promise<void>;
}

export async function startVerifyingIngest(t: { teardown(fn: () => unknown): void }, keys: Record<string, string> & { default: string }): Promise<VerifyingIngest> {
  const received: ReceivedBatch[] = [];
  const unexpected: string[] = [];
  let mode: 'verify' | 'fail-500' | 'hang' = 'verify';
  const hanging: ServerResponse[] = [];

  const server = createServer((req, res) => {
    if (req.method !== 'POST' || req.url !== '/ingest') {
      unexpected.push(`${req.method} ${req.url}`);
      res.writeHead(500, { 'content-type': 'application/json' }).end('{"type":"Internal Server Error","message":"unexpected call"}');
      return;
    }
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const raw = Buffer.concat(chunks);
      const keyId = req.headers['x-key-id'];
      const key = typeof keyId === 'string' ? keys[keyId] : keys.default;
      const signatureValid = key !== undefined && verify(raw, req.headers['x-signature'], key);
      const record: ReceivedBatch = { raw, headers: req.headers, signatureValid, status: 0 };
      received.push(record);
      const answer = (status: number, body: string, type = 'application/json') => {
        record.status = status;
        res.writeHead(status, { 'content-type': type }).end(body);
      };
      if (mode === 'hang') {
        hanging.push(res);
        return;
      }
      if (mode === 'fail-500') return answer(500, '{"type":"Internal Server Error","message":"internal error"}');
      if (!signatureValid) return answer(403, 'invalid signature', 'text/plain');
      let batch: { batchId?: unknown; readings?: unknown };
      try {
        batch = JSON.parse(raw.toString('utf8'));
      } catch {
        return answer(400, '{"type":"Validation Error","message":"request body is not valid JSON"}');
      }
      if (!Array.isArray(batch.readings)) return answer(400, '{"type":"Validation Error","message":"readings must be a list"}');
      if (batch.readings.length === 0) {
        return answer(400, JSON.stringify({ type: 'Validation Error', message: 'the batch is malformed; nothing was stored', errors: [{ index: null, field: 'readings', message: 'expected at least one reading' }] }));
      }
      const errors: Array<{ index: number; field: string; message: string }> = [];
      let invalid = 0;
      batch.readings.forEach((reading, index) => {
        const result = validateReading(reading);
        if (!result.ok) {
          invalid += 1;
          for (const e of result.errors) errors.push({ index, ...e });
        }
      });
      // The real service's wording (cloud/telemetry/domain/batch.ts); poster.test.ts checks it against the service.
      if (invalid > 0) return answer(400, JSON.stringify({ type: 'Validation Error', message: `${invalid} of ${batch.readings.length} readings are invalid; nothing was stored`, errors }));
      return answer(200, JSON.stringify({ accepted: batch.readings.length }));
    });
  });
  // Registered before the close, so it runs after it (tap runs teardowns last-registered first).
  t.teardown(() => {
    if (unexpected.length > 0) throw new Error(`the ingest stand-in got ${unexpected.length} call(s) it was not set up for: ${unexpected.join(' | ')}`);
  });
  const port = await listen(server, 0, '127.0.0.1');
  const close = async () => {
    for (const res of hanging.splice(0)) res.destroy();
    await closeServer(server);
  };
  t.teardown(close);
  return {
    url: `http://127.0.0.1:${port}/ingest`,
    received,
    unexpected,
    behave: (next) => {
      mode = next;
    },
    close,
  };
}
