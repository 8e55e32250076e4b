/**
 * Free loopback ports for peers that take a port number on their command line (snmpd, sshd).
 */
import { createSocket } from 'node:dgram';
import { createServer } from 'node:net';

/** `count` distinct UDP ports that were free on 127.0.0.1 a moment ago. */
export async function freeUdpPorts(count: number): Promise<number[]> {
  const sockets = await Promise.all(
    Array.from(
      { length: count },
      () =>
        new Promise<ReturnType<typeof createSocket>>((resolve, reject) => {
          const socket = createSocket('udp4');
          socket.once('error', reject);
          socket.bind(0, '127.0.0.1', () => resolve(socket));
        }),
    ),
  );
  const ports = sockets.map((socket) => socket.address().port);
  await Promise.all(sockets.map((socket) => new Promise<void>((resolve) => socket.close(() => resolve()))));
  return ports;
}

/** A TCP port that was free on 127.0.0.1 a moment ago. */
export async function freeTcpPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const address = server.address();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  if (address === null || typeof address === 'string') throw new Error('no TCP port');
  return address.port;
}
