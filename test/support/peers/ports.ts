/**
 * Free loopback ports for peers that take a port number on their command line (snmpd, sshd).
 */
import { freeTcpPorts, freeUdpPorts } from '../../../edge/src/simulate/ports.js';

export { freeUdpPorts };

/** A TCP port that was free on 127.0.0.1 a moment ago. */
export async function freeTcpPort(): Promise<number> {
  const [port] = await freeTcpPorts(1);
  if (port === undefined) throw new Error('no TCP port');
  return port;
}
