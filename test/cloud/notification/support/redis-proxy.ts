/**
 * A TCP proxy in front of the real Redis that can lose one reply: armed with a marker, it forwards the
 * next command that contains the marker, lets Redis run it, then cuts the client's connection when the
 * reply comes back instead of passing it on. The client saw its command leave and never got an answer,
 * as when a connection drops between Redis running a command and the reply arriving. It can also cut
 * the connection before a command holding a marker is whole, so Redis never runs it, as when the
 * connection drops while the command is sent. And it can hold replies back, as a Redis slow to answer.
 * Later connections are forwarded untouched. Or it can go silent, as a network that drops every packet
 * without resetting anything.
 */
import { connect, createServer, type Socket } from 'node:net';
import { Redis } from 'ioredis';
import { STACK, type Teardown } from './stack.js';

export interface RedisProxy {
  /** A redis:// URL through the proxy. */
  url: string;
  /** Drops the reply to the next command whose bytes contain `marker`, and cuts that connection. */
  loseReplyTo(marker: string): void;
  /** How many replies were dropped so far. */
  readonly lostReplies: number;
  /**
   * Cuts the connection as soon as `marker` shows in what a client sends, without forwarding the
   * bytes that complete it: the command holding it never runs. Once.
   */
  cutBefore(marker: string): void;
  /** How many commands were cut so far. */
  readonly cutCommands: number;
  /**
   * Holds back, on the connection that next sends `marker`, every reply Redis sends from then on (the
   * one to that command included), until {@link releaseReplies}. Redis still runs the commands. Once.
   */
  holdRepliesAfter(marker: string): void;
  /** True while a connection's replies are held back. */
  readonly holding: boolean;
  /** Passes every held reply on, in order, and stops holding. */
  releaseReplies(): void;
  /**
   * Goes silent, as a network that drops every packet (no reset, nothing closed): from now, or given
   * `marker` from the first chunk a client sends that holds it (that chunk included), whatever either
   * side sends is dropped, on every connection open then and every one accepted until {@link restore}.
   * A connection silenced stays silent for good, as one whose peer lost its state: only its client
   * closing it ends it. Nothing dropped reaches Redis, so a command sent into the silence never runs.
   */
  silence(marker?: string): void;
  /** True once the silence began (its marker met). */
  readonly silent: boolean;
  /** Connections accepted from now on are forwarded again; the silenced ones stay silent. */
  restore(): void;
}

export async function startRedisProxy(t: Teardown): Promise<RedisProxy> {
  const upstream = new URL(STACK.redisUrl);
  let marker: string | undefined;
  let lostReplies = 0;
  let cutMarker: string | undefined;
  let cutCommands = 0;
  let holdMarker: string | undefined;
  /** Per held connection, what passes its held replies on. */
  const held = new Set<() => void>();
  const sockets = new Set<Socket>();
  let silenceMarker: string | undefined;
  let silent = false;
  /** Per open connection, whether it is silenced. */
  const lines = new Set<{ silenced: boolean }>();
  const goSilent = () => {
    silenceMarker = undefined;
    silent = true;
    for (const line of lines) line.silenced = true;
  };
  const server = createServer((client) => {
    const redis = connect(Number(upstream.port || 6379), upstream.hostname);
    sockets.add(client).add(redis);
    const line = { silenced: silent };
    lines.add(line);
    let cutOnReply = false;
    let heldReplies: Buffer[] | undefined;
    // The last bytes sent, so a marker split between two chunks is found.
    let tail = Buffer.alloc(0);
    client.on('data', (chunk: Buffer) => {
      if (silenceMarker !== undefined && chunk.includes(silenceMarker)) goSilent();
      if (line.silenced) return;
      if (cutMarker !== undefined) {
        const recent = Buffer.concat([tail, chunk]);
        if (recent.includes(cutMarker)) {
          cutMarker = undefined;
          cutCommands++;
          client.destroy();
          redis.destroy();
          return;
        }
        tail = recent.subarray(Math.max(0, recent.length - cutMarker.length));
      }
      if (holdMarker !== undefined && heldReplies === undefined && chunk.includes(holdMarker)) {
        holdMarker = undefined;
        const replies: Buffer[] = [];
        heldReplies = replies;
        const release = () => {
          held.delete(release);
          heldReplies = undefined;
          for (const reply of replies) client.write(reply);
        };
        held.add(release);
      }
      if (marker !== undefined && chunk.includes(marker)) {
        marker = undefined;
        cutOnReply = true;
      }
      redis.write(chunk);
    });
    redis.on('data', (chunk: Buffer) => {
      if (line.silenced) return;
      if (heldReplies) {
        heldReplies.push(chunk);
        return;
      }
      if (!cutOnReply) {
        client.write(chunk);
        return;
      }
      lostReplies++;
      client.destroy();
      redis.destroy();
    });
    const close = () => {
      client.destroy();
      redis.destroy();
      sockets.delete(client);
      sockets.delete(redis);
      lines.delete(line);
    };
    client.on('close', close).on('error', close);
    redis.on('close', close).on('error', close);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(async () => {
    for (const socket of sockets) socket.destroy();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('the proxy has no port');
  return {
    url: `redis://127.0.0.1:${address.port}`,
    loseReplyTo(next) {
      marker = next;
    },
    get lostReplies() {
      return lostReplies;
    },
    cutBefore(next) {
      cutMarker = next;
    },
    get cutCommands() {
      return cutCommands;
    },
    holdRepliesAfter(next) {
      holdMarker = next;
    },
    get holding() {
      return held.size > 0;
    },
    releaseReplies() {
      for (const release of [...held]) release();
    },
    silence(marker) {
      if (marker === undefined) goSilent();
      else silenceMarker = marker;
    },
    get silent() {
      return silent;
    },
    restore() {
      silenceMarker = undefined;
      silent = false;
    },
  };
}

/**
 * A client of the real Redis through `url` (a proxy's): its errors while the proxy cuts it are expected,
 * and it is closed at teardown. `maxRetriesPerRequest: 0` makes a command give up at once when its
 * connection drops.
 */
export function proxiedClient(t: Teardown, url: string, options: { maxRetriesPerRequest?: number } = {}): Redis {
  const client = new Redis(url, { enableAutoPipelining: true, ...options });
  client.on('error', () => undefined);
  t.teardown(() => client.quit().catch(() => client.disconnect()));
  return client;
}
