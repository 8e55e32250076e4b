/**
 * A cap on what one socket may have waiting to be written. Engine.IO buffers, without a limit, every
 * packet meant for a client whose earlier writes have not reached the network, so a client that stops
 * reading (a frozen tab, a dead link, or on purpose) would grow the relay's memory with each reading of
 * its buildings and each broadcast. The heartbeat does not catch it: Engine.IO accepts a pong nobody
 * asked for, so a client can look alive while it reads nothing.
 */
import type { Socket } from 'socket.io';

/** Packets one socket may have waiting behind writes its client has not taken yet, before it is watched. */
export const MAX_BUFFERED_PACKETS = 1000;
/**
 * How long a backlog past the cap may go without a single flush before the client counts as stalled.
 * A client that reads drains a burst in milliseconds, however large: the relay emits every message of
 * one broker read at once, so a big batch can put thousands of packets behind one write.
 */
export const STALLED_AFTER_MS = 5000;

/**
 * Watches a socket's write buffer. Once more than `max` packets wait and no write has completed for
 * `stalledAfterMs`, calls `onStalled` with their number and closes the connection, dropping the buffer.
 * A stalled socket thus holds at most `max` packets plus `stalledAfterMs` of traffic. The client sees a
 * transport close and reconnects by itself; what it missed is not replayed, as for any disconnection.
 *
 * @example
 * capBacklog(socket, (waiting) => logger.warn({ waiting }, 'client does not read; connection closed'));
 */
export function capBacklog(socket: Socket, onStalled: (waiting: number) => void, max = MAX_BUFFERED_PACKETS, stalledAfterMs = STALLED_AFTER_MS): void {
  const { conn } = socket;
  let waiting = 0;
  let watch: NodeJS.Timeout | undefined;
  // A flush hands the whole buffer to the transport, which writes again only once the client took it.
  const onFlush = (): void => {
    waiting = 0;
    clearTimeout(watch);
    watch = undefined;
  };
  const onPacket = (): void => {
    waiting++;
    if (waiting <= max || watch !== undefined) return;
    watch = setTimeout(() => {
      onStalled(waiting);
      // Discarding: a close that waited for the buffer to drain would wait on a client that does not read.
      conn.close(true);
    }, stalledAfterMs);
  };
  // The listeners sit on the connection, which can outlive the socket: they leave with the socket.
  const detach = (): void => {
    clearTimeout(watch);
    conn.off('flush', onFlush);
    conn.off('packetCreate', onPacket);
    conn.off('close', detach);
  };
  conn.on('flush', onFlush);
  conn.on('packetCreate', onPacket);
  conn.on('close', detach);
  socket.once('disconnect', detach);
}
