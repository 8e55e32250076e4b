/**
 * The frontend's files as a request listener: the test pages from `../pages/` and the socket.io
 * browser bundle from node_modules. Anything else is a 404, recorded in `misses` (the browser's own
 * favicon request aside), which tests assert is empty.
 */
import { readFileSync } from 'node:fs';
import type { IncomingMessage, RequestListener, ServerResponse } from 'node:http';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../../../../', import.meta.url));
const PAGES = fileURLToPath(new URL('../pages/', import.meta.url));

const TYPES: Record<string, string> = { html: 'text/html; charset=utf-8', js: 'text/javascript; charset=utf-8' };

export interface Frontend {
  handler: RequestListener;
  misses: string[];
}

/** Serves `/<name>` for each page file named, and `/socket.io.min.js` (the client bundle). */
export function frontend(pages: string[]): Frontend {
  const files = new Map<string, { type: string; body: Buffer }>();
  for (const name of pages) {
    const ext = name.slice(name.lastIndexOf('.') + 1);
    files.set(`/${name}`, { type: TYPES[ext] ?? 'application/octet-stream', body: readFileSync(`${PAGES}${name}`) });
  }
  files.set('/socket.io.min.js', { type: TYPES.js as string, body: readFileSync(`${ROOT}node_modules/socket.io-client/dist/socket.io.min.js`) });
  const misses: string[] = [];
  const handler = (req: IncomingMessage, res: ServerResponse) => {
    const path = new URL(req.url ?? '/', 'http://frontend').pathname;
    const file = req.method === 'GET' ? files.get(path) : undefined;
    if (file === undefined) {
      misses.push(`${req.method} ${req.url}`);
      res.writeHead(404, { 'content-type': 'text/plain' }).end('not found');
      return;
    }
    res.writeHead(200, { 'content-type': file.type, 'cache-control': 'no-store', 'content-length': file.body.length }).end(file.body);
  };
  return { handler, misses };
}
