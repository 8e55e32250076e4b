/**
 * Small helpers for in-process HTTP tests: serve an app on 127.0.0.1 port 0 and close it at teardown;
 * read an answer's body as JSON when it is JSON.
 */
import { createServer, type RequestListener, type Server } from 'node:http';
import { listen, closeServer } from '../../shared/lifecycle.js';

/** Serves a request listener (an express app) on a free loopback port; returns its base URL. */
export async function serve(t: { teardown(fn: () => unknown): void }, handler: RequestListener): Promise<{ url: string; server: Server }> {
  const server = createServer(handler);
  const port = await listen(server, 0, '127.0.0.1');
  t.teardown(() => closeServer(server));
  return { url: `http://127.0.0.1:${port}`, server };
}

/** A body as JSON when it parses, else the text itself (an error page, a plain-text answer). */
export function jsonOrText(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}
