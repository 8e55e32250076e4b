/**
 * The npm package web-push-testing as a real push service, served in process on 127.0.0.1 port 0. It
 * creates browser-like subscriptions, checks the VAPID JWT against the application server key the
 * subscription was made with, decrypts each message (RFC 8291) and returns what a browser would read.
 */
import { createServer, type RequestListener } from 'node:http';
import { createRequire } from 'node:module';
import { request } from 'undici';
import { closeServer, listen } from '../../../../shared/lifecycle.js';
import type { Teardown } from './stack.js';

const require = createRequire(import.meta.url);

interface TestingServer {
  _app: RequestListener;
  setRequestHandlers(): void;
}
interface ApiModel {
  notifyUrl: string;
}
const WebPushTestingServer = require('web-push-testing/src/server.js') as new (model: ApiModel, port: number) => TestingServer;
const { PushApiModel } = require('web-push-testing/src/PushApiModel.js') as { PushApiModel: new () => ApiModel };

export interface BrowserSubscription {
  endpoint: string;
  keys: { p256dh: string; auth: string };
  clientHash: string;
}

export class PushService {
  constructor(readonly url: string) {}

  private async call(path: string, body: unknown): Promise<{ status: number; json: unknown }> {
    const response = await request(`${this.url}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body ?? {}),
    });
    const text = await response.body.text();
    let json: unknown = text;
    try {
      json = JSON.parse(text);
    } catch {
      // plain-text answers (e.g. "OK") stay text
    }
    return { status: response.statusCode, json };
  }

  /** What `pushManager.subscribe({userVisibleOnly: true, applicationServerKey})` gives a browser. */
  async subscribe(applicationServerKey: string): Promise<BrowserSubscription> {
    const { status, json } = await this.call('/subscribe', { userVisibleOnly: 'true', applicationServerKey });
    if (status !== 200) throw new Error(`push service refused the subscription: ${JSON.stringify(json)}`);
    return (json as { data: BrowserSubscription }).data;
  }

  /** The decrypted payloads the subscription received, oldest first. */
  async messages(clientHash: string): Promise<string[]> {
    const { status, json } = await this.call('/get-notifications', { clientHash });
    if (status !== 200) throw new Error(`push service: ${JSON.stringify(json)}`);
    return (json as { data: { messages: string[] } }).data.messages;
  }

  /** Marks the subscription expired: the push service then answers 410 Gone. */
  async expire(clientHash: string): Promise<void> {
    const { status } = await this.call(`/expire-subscription/${clientHash}`, {});
    if (status !== 200) throw new Error(`push service could not expire ${clientHash}`);
  }
}

/** Starts web-push-testing on a free loopback port; closed at teardown. One per test process. */
export async function startPushService(t: Teardown): Promise<PushService> {
  const model = new PushApiModel();
  const testing = new WebPushTestingServer(model, 0);
  testing.setRequestHandlers();
  const server = createServer(testing._app);
  const port = await listen(server, 0, '127.0.0.1');
  model.notifyUrl = `http://127.0.0.1:${port}/notify/`;
  t.teardown(() => closeServer(server));
  return new PushService(`http://127.0.0.1:${port}`);
}
