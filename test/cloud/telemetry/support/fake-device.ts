/**
 * A fake device: a real HTTP server on 127.0.0.1 port 0 that records every request (method, path,
 * headers, JSON body) and answers the status the test sets for a path. A path it was not set up for
 * answers 500 and is recorded in `unexpected`.
 */
import { createServer } from 'node:http';
import { closeServer, listen } from '../../../../shared/lifecycle.js';

export interface DeviceCall {
  method: string;
  path: string;
  contentType: string | undefined;
  body: unknown;
}

export interface FakeDevice {
  url: string;
  port: number;
  calls: DeviceCall[];
  unexpected: string[];
  /** Answer `status` (and `body`) to `method path`. */
  on(method: string, path: string, status: number, body?: string): void;
}

export async function startFakeDevice(t: { teardown(fn: () => unknown): void }): Promise<FakeDevice> {
  const routes = new Map<string, { status: number; body: string }>();
  const calls: DeviceCall[] = [];
  const unexpected: string[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const key = `${req.method} ${req.url}`;
      const route = routes.get(key);
      if (!route) {
        unexpected.push(key);
        res.writeHead(500).end('unexpected');
        return;
      }
      const text = Buffer.concat(chunks).toString('utf8');
      let body: unknown = text;
      try {
        body = JSON.parse(text);
      } catch {
        // recorded as text; the test asserts on it
      }
      calls.push({ method: req.method ?? '', path: req.url ?? '', contentType: req.headers['content-type'], body });
      res.writeHead(route.status, { 'content-type': 'application/json' }).end(route.body);
    });
  });
  const port = await listen(server, 0, '127.0.0.1');
  t.teardown(() => closeServer(server));
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    calls,
    unexpected,
    on: (method, path, status, body = '{}') => void routes.set(`${method} ${path}`, { status, body }),
  };
}
