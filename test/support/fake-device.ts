/**
 * A fake device: a real HTTP server on 127.0.0.1 port 0 with a route table. `on(method, path, status)`
 * sets what it answers; it records every routed request (method, path, content type, JSON body). A
 * request for a route it was not set up for answers 500, is recorded in `unexpected`, and fails the test
 * at teardown. Used by the device adapter and telemetry sensor-action tests.
 */
import type { AddressInfo } from 'node:net';
import { serve } from './http.js';

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
  /** Answer `status` with `body` (JSON) and any extra `headers` (a redirect's location) to `method path`. */
  on(method: string, path: string, status: number, body?: string, headers?: Record<string, string>): void;
}

/**
 * Starts the fake device; it closes at teardown, and then fails the test if it got any call it was not
 * set up for. A test that makes such a call on purpose asserts on `unexpected` and empties it.
 *
 * Tap runs teardowns last-registered first, and one that throws skips those still to run: start it
 * before anything else the test cleans up if that must run even when the check fails.
 *
 * @example
 * const device = await startFakeDevice(t);
 * device.on('POST', '/api/v1/thermostat/hold', 204);
 */
export async function startFakeDevice(t: { teardown(fn: () => unknown): void }): Promise<FakeDevice> {
  const routes = new Map<string, { status: number; body: string; headers: Record<string, string> }>();
  const calls: DeviceCall[] = [];
  const unexpected: string[] = [];
  // Registered before serve's close, so it runs after it: a call that lands during teardown counts too.
  t.teardown(() => {
    if (unexpected.length > 0) throw new Error(`the fake device got calls it was not set up for: ${unexpected.join(' | ')}`);
  });
  const { url, server } = await serve(t, (req, res) => {
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
      res.writeHead(route.status, { 'content-type': 'application/json', ...route.headers }).end(route.body);
    });
  });
  return {
    url,
    port: (server.address() as AddressInfo).port,
    calls,
    unexpected,
    on: (method, path, status, body = '{}', headers = {}) => void routes.set(`${method} ${path}`, { status, body, headers }),
  };
}
