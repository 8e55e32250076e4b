/**
 * The Web Push adapter. The web-push library encrypts the payload (RFC 8291) and signs the VAPID JWT;
 * the request itself goes out with undici, with a whole-request timeout, so an endpoint that never
 * answers costs one timeout and nothing more. Private destinations (loopback, the private network, cloud
 * metadata) are refused when the socket is opened, and plain-http endpoints before anything is encrypted,
 * unless explicitly allowed for local push services. Connections are kept for a bounded number of push
 * services, and push hosts are looked up a few at a time (`destinations.ts`).
 */
import { createECDH } from 'node:crypto';
import { Pool, request } from 'undici';
import webpush, { type Urgency } from 'web-push';
import { LookupSlotTimeoutError, LookupUnansweredError, limitLookups, systemResolver, type Resolver } from '../../shared/lookup.js';
import { OriginPools } from '../../shared/origin-pools.js';
import { ForbiddenDestinationError, pushConnector, pushLookup, pushSchemeAllowed } from './destinations.js';
import type { PushFailure } from './metrics.js';

export interface VapidKeys {
  /** A `mailto:` or `https:` contact the push service may use. */
  subject: string;
  publicKey: string;
  privateKey: string;
}

/** Why a push failed: the `reason` label of `notification_push_failed_total`. */
export type PushFailureReason = PushFailure;

/**
 * What one push attempt came to. `gone` means the push service answered 410 or 404: the subscription
 * will never work again. A 403 is a failure, not `gone`: push services answer it when the VAPID key does
 * not match the one the subscription was made with, so deleting would wipe every device after one key
 * misconfiguration.
 */
export type PushResult =
  | { kind: 'sent'; status: number }
  | { kind: 'gone'; status: number }
  | { kind: 'failed'; reason: PushFailureReason; status?: number; detail: string };

export interface PushMessage {
  payload: string;
  urgency?: Urgency;
  /** Coalescing key: a newer message with the same topic replaces an undelivered one. */
  topic?: string;
}

/** The port delivery uses. */
export interface PushSender {
  send(subscription: { endpoint: string; keys: { p256dh: string; auth: string } }, message: PushMessage): Promise<PushResult>;
  /** After it, every push fails without being sent. */
  close(): Promise<void>;
}

export interface WebPushSenderOptions {
  /** Without keys every push fails with `not_configured`. */
  vapid?: VapidKeys | undefined;
  /** Whole-request timeout per push. Default 10 s. */
  timeoutMs?: number;
  /** How long the push service keeps an undelivered message, seconds. Default 1 hour. */
  ttlSeconds?: number;
  /**
   * Let pushes reach loopback and private addresses (local push services in development and tests).
   * Default false: such a push fails with `forbidden_destination` and nothing is sent.
   */
  allowPrivateDestinations?: boolean;
  /**
   * Push to `http:` endpoints (local push services in development and tests). Default false: only
   * `https:` endpoints are pushed to; any other fails with `forbidden_destination` and nothing is sent.
   * Checked on every push, since an endpoint stored while this was on (or before /subscribe checked it)
   * stays stored after it is turned off.
   */
  allowHttp?: boolean;
  /**
   * Push services (endpoint origins) whose connection pools are kept at once; pushing to one more closes
   * the pool of the least recently pushed-to one. Default {@link DEFAULT_MAX_PUSH_SERVICES}.
   */
  maxPushServices?: number;
  /**
   * Push hosts looked up at once. Default {@link DEFAULT_MAX_PUSH_LOOKUPS}, leaving the rest of libuv's
   * 4 threads to the process's other lookups (the building directory), files and crypto.
   */
  maxLookups?: number;
  /** How push hosts are resolved. Default dns.lookup, so /etc/hosts applies. */
  resolve?: Resolver;
}

/**
 * Every real subscription is on one of a handful of push services (FCM, Mozilla, Apple, Windows), but
 * /subscribe takes any public https origin, and an account may rotate through new ones: without a bound
 * the sender would keep a pool per origin ever pushed to.
 */
export const DEFAULT_MAX_PUSH_SERVICES = 256;
export const DEFAULT_MAX_PUSH_LOOKUPS = 2;

/**
 * Checks a VAPID key pair the way web-push will use it. Returns the problems, each naming its variable.
 *
 * @example
 * vapidProblems({ subject: 'mailto:ops@example.com', publicKey: 'x', privateKey: 'y' });
 * // ['VAPID_PUBLIC_KEY: …']
 */
export function vapidProblems(keys: VapidKeys): string[] {
  const good = webpush.generateVAPIDKeys();
  const probes: Array<[string, VapidKeys]> = [
    ['VAPID_SUBJECT', { subject: keys.subject, publicKey: good.publicKey, privateKey: good.privateKey }],
    ['VAPID_PUBLIC_KEY', { subject: 'mailto:check@example.invalid', publicKey: keys.publicKey, privateKey: good.privateKey }],
    ['VAPID_PRIVATE_KEY', { subject: 'mailto:check@example.invalid', publicKey: good.publicKey, privateKey: keys.privateKey }],
  ];
  const problems: string[] = [];
  for (const [name, probe] of probes) {
    try {
      webpush.getVapidHeaders('https://push.example.invalid', probe.subject, probe.publicKey, probe.privateKey, 'aes128gcm');
    } catch (err) {
      problems.push(`${name}: ${(err as Error).message}`);
    }
  }
  if (problems.length === 0) {
    try {
      const derived = createECDH('prime256v1');
      derived.setPrivateKey(Buffer.from(keys.privateKey, 'base64url'));
      if (derived.getPublicKey().toString('base64url') !== keys.publicKey.replace(/=+$/, '')) {
        problems.push('VAPID_PUBLIC_KEY: does not belong to VAPID_PRIVATE_KEY (generate a pair with `npm run notification -- vapid-keys`)');
      }
    } catch {
      problems.push('VAPID_PRIVATE_KEY: not a P-256 private key');
    }
  }
  return problems;
}

/** The origin of an endpoint: what is safe to log (the path is a bearer capability). */
export function endpointOrigin(endpoint: string): string {
  try {
    return new URL(endpoint).origin;
  } catch {
    return 'invalid-endpoint';
  }
}

/** The scheme of an endpoint a push must not go to, or undefined when it may (or is no URL at all). */
function refusedScheme(endpoint: string, allowHttp: boolean): string | undefined {
  let protocol: string;
  try {
    protocol = new URL(endpoint).protocol;
  } catch {
    return undefined; // web-push refuses it as it encrypts: `rejected`
  }
  return pushSchemeAllowed(protocol, allowHttp) ? undefined : protocol;
}

export class WebPushSender implements PushSender {
  private readonly timeoutMs: number;
  private readonly ttlSeconds: number;
  private readonly pools: OriginPools;
  /**
   * Set by {@link close}. Pushes still queued when the drain runs out call `send` as the aborted ones
   * free their slots; a closed sender must not open a new pool for them and send after all.
   */
  private closed = false;

  constructor(private readonly options: WebPushSenderOptions) {
    this.timeoutMs = options.timeoutMs ?? 10_000;
    this.ttlSeconds = options.ttlSeconds ?? 3600;
    const allowPrivate = options.allowPrivateDestinations ?? false;
    // A lookup (a slot, then its answer) is waited for at most half the push's time, so the push keeps
    // time to connect and be answered, and its failure names the lookup rather than a generic timeout.
    const resolve = limitLookups(options.resolve ?? systemResolver, {
      maxInFlight: options.maxLookups ?? DEFAULT_MAX_PUSH_LOOKUPS,
      waitMs: Math.ceil(this.timeoutMs / 2),
      subject: 'push endpoint host',
    });
    const connect = pushConnector({ timeout: this.timeoutMs, lookup: pushLookup(resolve, { allowPrivate }), allowPrivate });
    const poolOptions = { headersTimeout: this.timeoutMs, bodyTimeout: this.timeoutMs, connections: 32, connect };
    this.pools = new OriginPools(options.maxPushServices ?? DEFAULT_MAX_PUSH_SERVICES, (origin) => new Pool(origin, poolOptions));
  }

  /** Push services whose connection pools are kept (at most `maxPushServices`). */
  get pushServicesKept(): number {
    return this.pools.size;
  }

  async send(subscription: { endpoint: string; keys: { p256dh: string; auth: string } }, message: PushMessage): Promise<PushResult> {
    if (this.closed) return { kind: 'failed', reason: 'unreachable', detail: 'the push sender is closed (the service is stopping); nothing was sent' };
    const vapid = this.options.vapid;
    if (!vapid) return { kind: 'failed', reason: 'not_configured', detail: 'VAPID keys are not configured' };
    const scheme = refusedScheme(subscription.endpoint, this.options.allowHttp ?? false);
    if (scheme !== undefined) {
      const allowance = scheme === 'http:' ? ' (WEB_PUSH_ALLOW_HTTP is off)' : '';
      return { kind: 'failed', reason: 'forbidden_destination', detail: `${scheme} endpoints are refused: pushes go over https only; nothing was sent${allowance}` };
    }
    let details: webpush.RequestDetails;
    try {
      details = webpush.generateRequestDetails(subscription, message.payload, {
        vapidDetails: { subject: vapid.subject, publicKey: vapid.publicKey, privateKey: vapid.privateKey },
        TTL: this.ttlSeconds,
        contentEncoding: 'aes128gcm',
        ...(message.urgency ? { urgency: message.urgency } : {}),
        ...(message.topic ? { topic: message.topic } : {}),
      });
    } catch (err) {
      return { kind: 'failed', reason: 'rejected', detail: `could not encrypt for this subscription (${(err as Error).name})` };
    }
    const headers: Record<string, string> = {};
    for (const [name, value] of Object.entries(details.headers)) {
      if (name.toLowerCase() !== 'content-length' && value !== undefined) headers[name] = String(value);
    }
    try {
      const response = await request(details.endpoint, {
        method: 'POST',
        headers,
        body: details.body ?? undefined,
        dispatcher: this.pools.poolFor(new URL(details.endpoint).origin),
        signal: AbortSignal.timeout(this.timeoutMs),
      });
      await response.body.dump();
      const status = response.statusCode;
      if (status >= 200 && status < 300) return { kind: 'sent', status };
      if (status === 404 || status === 410) return { kind: 'gone', status };
      if (status === 403) return { kind: 'failed', reason: 'rejected', status, detail: 'push service answered 403: check that VAPID_PUBLIC_KEY is the key the subscription was made with' };
      return { kind: 'failed', reason: 'rejected', status, detail: `push service answered ${status}` };
    } catch (err) {
      if (err instanceof ForbiddenDestinationError) {
        return { kind: 'failed', reason: 'forbidden_destination', detail: `${err.message}; nothing was sent (WEB_PUSH_ALLOW_PRIVATE_DESTINATIONS is off)` };
      }
      if (err instanceof LookupSlotTimeoutError) {
        return { kind: 'failed', reason: 'timeout', detail: `push service host not looked up within ${err.waitedMs} ms: earlier lookups of push hosts have not answered; nothing was sent` };
      }
      if (err instanceof LookupUnansweredError) {
        const detail = err.remembered
          ? `push service host not looked up again yet: its DNS lookup did not answer within ${err.waitedMs} ms a moment ago; nothing was sent`
          : `push service host's DNS lookup did not answer within ${err.waitedMs} ms; nothing was sent`;
        return { kind: 'failed', reason: 'timeout', detail };
      }
      const name = (err as Error).name;
      if (name === 'TimeoutError' || name === 'AbortError' || /Timeout/.test(name)) {
        return { kind: 'failed', reason: 'timeout', detail: `push service did not answer within ${this.timeoutMs} ms` };
      }
      return { kind: 'failed', reason: 'unreachable', detail: `push service unreachable (${(err as { code?: string }).code ?? name})` };
    }
  }

  /**
   * Closes the connections; a push still in flight is aborted (callers drain first), and every later
   * push fails with `unreachable` without being sent.
   */
  async close(): Promise<void> {
    this.closed = true;
    await this.pools.destroy();
  }
}
