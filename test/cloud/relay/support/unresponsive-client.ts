/**
 * A websocket client made by hand on a TCP socket, to play a peer the ws library cannot: one that
 * completes the Engine.IO websocket handshake, joins the main namespace, and from then on reads nothing
 * and answers nothing, not even a close frame. A vanished network, a full receive window or a hostile
 * client look like this to the relay.
 */
import { randomBytes } from 'node:crypto';
import { connect, type Socket } from 'node:net';
import type { Teardown } from './relay-harness.js';

export interface UnresponsiveClient {
  /** The TCP socket, paused: what the relay sends waits unread. `resume()` it to see the end. */
  socket: Socket;
  /** Resolves once the TCP connection is gone (seen only while the socket reads). */
  closed: Promise<void>;
}

/**
 * Upgrades to the websocket transport with `header` as the claims, sends the Socket.IO CONNECT to "/",
 * then stops reading. Destroyed at teardown. Resolves once the relay answered the upgrade.
 *
 * @example
 * const silent = await unresponsiveClient(t, relay.url, claimsOf({ sub: 'ana', domains: [] }));
 */
export async function unresponsiveClient(t: Teardown, url: string, header: string): Promise<UnresponsiveClient> {
  const { hostname, port } = new URL(url);
  const socket = connect(Number(port), hostname);
  t.teardown(() => socket.destroy());
  // The relay ends the connection by destroying it; a reset here is the point of the test, not a failure.
  socket.on('error', () => undefined);
  const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
  socket.write(
    [
      'GET /socket.io/?EIO=4&transport=websocket HTTP/1.1',
      `Host: ${hostname}:${port}`,
      'Connection: Upgrade',
      'Upgrade: websocket',
      'Sec-WebSocket-Version: 13',
      `Sec-WebSocket-Key: ${randomBytes(16).toString('base64')}`,
      `x-gateway-claims: ${header}`,
      '',
      '',
    ].join('\r\n'),
  );
  const status = await new Promise<string>((resolve, reject) => {
    let head = '';
    const onData = (chunk: Buffer) => {
      head += chunk.toString('latin1');
      if (!head.includes('\r\n')) return;
      socket.off('data', onData);
      socket.pause();
      resolve(head.slice(0, head.indexOf('\r\n')));
    };
    socket.on('data', onData);
    closed.then(() => reject(new Error(`connection closed during the upgrade: ${JSON.stringify(head)}`)), reject);
  });
  if (!status.startsWith('HTTP/1.1 101')) throw new Error(`expected 101 Switching Protocols, got ${JSON.stringify(status)}`);
  socket.write(maskedTextFrame('40'));
  return { socket, closed };
}

/** One client-to-server websocket text frame (RFC 6455 §5.2: a client masks every frame it sends). */
function maskedTextFrame(text: string): Buffer {
  const payload = Buffer.from(text, 'utf8');
  if (payload.length > 125) throw new Error('maskedTextFrame: payloads over 125 bytes are not supported');
  const mask = randomBytes(4);
  const masked = payload.map((byte, i) => byte ^ (mask[i % 4] as number));
  return Buffer.concat([Buffer.from([0x81, 0x80 | payload.length]), mask, masked]);
}
