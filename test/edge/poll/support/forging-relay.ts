/**
 * An on-path attacker in front of the real snmpd: a loopback relay the poller polls as its AP, which
 * forwards each request to snmpd and snmpd's answer back, but first has the test's forged answers sent to
 * the poller, from the relay's own address and port (a spoofed AP) or from another socket. A forged answer
 * is in the poller's socket before snmpd has even seen the request, so it always arrives first.
 *
 * @example
 * const relay = await startForgingRelay(t, snmpd.port, (request) => [{ from: 'agent', datagram: forgedV2cAnswer(request, stations) }]);
 * // … poll 127.0.0.1:relay.port …
 */
import type { Test } from 'tap';
import { createSocket, type RemoteInfo, type Socket } from 'node:dgram';
import { readTlv } from './fake-snmp-agent.js';

/** A datagram for the poller, and where it comes from: the AP's address and port, or another port. */
export interface Forged {
  from: 'agent' | 'elsewhere';
  datagram: Buffer;
}

export interface ForgingRelay {
  port: number;
  /** How many forged datagrams were sent. */
  forged: number;
}

const send = (socket: Socket, datagram: Buffer, port: number, address: string) =>
  new Promise<void>((resolve, reject) => socket.send(datagram, port, address, (error) => (error ? reject(error) : resolve())));

async function bound(): Promise<Socket> {
  const socket = createSocket('udp4');
  await new Promise<void>((resolve) => socket.bind(0, '127.0.0.1', () => resolve()));
  return socket;
}

export async function startForgingRelay(t: Test, agentPort: number, forge: (request: Buffer) => Forged[]): Promise<ForgingRelay> {
  const [relay, upstream, elsewhere] = await Promise.all([bound(), bound(), bound()]);
  const state: ForgingRelay = { port: relay.address().port, forged: 0 };
  const failures: string[] = [];
  let client: RemoteInfo | undefined;
  relay.on('message', (request, from) => {
    client = from;
    void (async () => {
      for (const { from: source, datagram } of forge(request)) {
        await send(source === 'agent' ? relay : elsewhere, datagram, from.port, from.address);
        state.forged++;
      }
      await send(upstream, request, agentPort, '127.0.0.1');
    })().catch((error: Error) => failures.push(error.message));
  });
  upstream.on('message', (answer) => {
    if (client) relay.send(answer, client.port, client.address);
  });
  t.teardown(async () => {
    await Promise.all([relay, upstream, elsewhere].map((socket) => new Promise<void>((resolve) => socket.close(() => resolve()))));
    if (failures.length > 0) throw new Error(`the forging relay failed: ${failures.join('; ')}`);
  });
  return state;
}

const SEQUENCE = 0x30;
const INTEGER = 0x02;
const OCTET_STRING = 0x04;
const OBJECT_IDENTIFIER = 0x06;
const GET_BULK = 0xa5;
const RESPONSE = 0xa2;

function tlv(tag: number, ...parts: Buffer[]): Buffer {
  const body = Buffer.concat(parts);
  if (body.length < 0x80) return Buffer.concat([Buffer.from([tag, body.length]), body]);
  const bytes: number[] = [];
  for (let rest = body.length; rest > 0; rest = Math.floor(rest / 256)) bytes.unshift(rest & 255);
  return Buffer.concat([Buffer.from([tag, 0x80 | bytes.length, ...bytes]), body]);
}

/** A small non-negative INTEGER. */
const integer = (value: number) => tlv(INTEGER, Buffer.from(value < 0x80 ? [value] : [value >> 8, value & 255]));
const octets = (bytes: Buffer) => tlv(OCTET_STRING, bytes);

function oid(dotted: string): Buffer {
  const [first = 0, second = 0, ...rest] = dotted.split('.').map(Number);
  const bytes: number[] = [];
  for (const id of [first * 40 + second, ...rest]) {
    const group = [id & 0x7f];
    for (let high = Math.floor(id / 128); high > 0; high = Math.floor(high / 128)) group.unshift(0x80 | (high & 0x7f));
    bytes.push(...group);
  }
  return tlv(OBJECT_IDENTIFIER, Buffer.from(bytes));
}

/** A GetResponse PDU with the given request-id TLV (as it was sent) and INTEGER varbinds. */
function getResponse(requestId: Buffer, varbinds: Array<[string, number]>): Buffer {
  return tlv(RESPONSE, requestId, integer(0), integer(0), tlv(SEQUENCE, ...varbinds.map(([name, value]) => tlv(SEQUENCE, oid(name), integer(value)))));
}

const slice = (datagram: Buffer, read: { start: number; end: number }) => datagram.subarray(read.start, read.end);

/**
 * A v2c GetResponse to a v2c GetBulkRequest, under its community and request-id (both sent in clear);
 * undefined for any other request.
 */
export function forgedV2cAnswer(request: Buffer, varbinds: Array<[string, number]>): Buffer | undefined {
  const message = readTlv(request, 0);
  const version = readTlv(request, message.start);
  if (request[version.start] !== 1) return undefined;
  const community = readTlv(request, version.end);
  const pdu = readTlv(request, community.end);
  if (pdu.tag !== GET_BULK) return undefined;
  const requestId = readTlv(request, pdu.start);
  return tlv(SEQUENCE, integer(1), octets(slice(request, community)), getResponse(request.subarray(pdu.start, requestId.end), varbinds));
}

/**
 * A plaintext SNMPv3 GetResponse, flags clear (no authentication, no privacy), to an encrypted request:
 * its msgID and the engine it names are sent in clear. Undefined for a request without privacy (the
 * engine discovery).
 */
export function forgedV3PlaintextAnswer(request: Buffer, varbinds: Array<[string, number]>): Buffer | undefined {
  const message = readTlv(request, 0);
  const version = readTlv(request, message.start);
  if (request[version.start] !== 3) return undefined;
  const header = readTlv(request, version.end);
  const msgId = readTlv(request, header.start);
  const maxSize = readTlv(request, msgId.end);
  const flags = readTlv(request, maxSize.end);
  if ((request[flags.start]! & 2) === 0) return undefined;
  const securityParameters = readTlv(request, header.end);
  const usm = readTlv(request, securityParameters.start);
  const engineId = readTlv(request, usm.start);
  const boots = readTlv(request, engineId.end);
  const time = readTlv(request, boots.end);
  const user = readTlv(request, time.end);
  const engine = slice(request, engineId);
  const forgedHeader = tlv(SEQUENCE, request.subarray(header.start, msgId.end), integer(1472), octets(Buffer.from([0])), integer(3));
  const forgedUsm = tlv(
    SEQUENCE,
    octets(engine),
    request.subarray(engineId.end, boots.end),
    request.subarray(boots.end, time.end),
    octets(slice(request, user)),
    octets(Buffer.alloc(0)),
    octets(Buffer.alloc(0)),
  );
  const scopedPdu = tlv(SEQUENCE, octets(engine), octets(Buffer.alloc(0)), getResponse(integer(1), varbinds));
  return tlv(SEQUENCE, integer(3), forgedHeader, octets(forgedUsm), scopedPdu);
}
