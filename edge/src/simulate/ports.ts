/**
 * Free loopback ports, for endpoints that must keep their port across a restart (a simulated AP that
 * reboots comes back where the collector expects it).
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

/** `count` distinct TCP ports that were free on 127.0.0.1 a moment ago. */
export async function freeTcpPorts(count: number): Promise<number[]> {
  const servers = await Promise.all(
    Array.from(
      { length: count },
      () =>
        new Promise<ReturnType<typeof createServer>>((resolve, reject) => {
          const server = createServer();
          server.once('error', reject);
          server.listen(0, '127.0.0.1', () => resolve(server));
        }),
    ),
  );
  const ports = servers.map((server) => (server.address() as { port: number }).port);
  await Promise.all(servers.map((server) => new Promise<void>((resolve) => server.close(() => resolve()))));
  return ports;
}
