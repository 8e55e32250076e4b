/**
 * A fake SNMPv2c device on loopback, a real UDP server, for agents snmpd cannot play: OIDs longer than its
 * 128 sub-ids, a genErr in the middle of a walk. Each GetBulkRequest is answered as the test's script
 * says. Anything else (another version, another community, another PDU, a request the script has no
 * answer for) fails the test at teardown, as a device that does not understand it would.
 *
 * @example
 * const agent = await startFakeSnmpAgent(t, { community: 'lintel-ro', answer: (request) => ({ varbinds: [{ oid: [...request.oid, 1], value: 40 }] }) });
 * // … poll 127.0.0.1:agent.port …
 */
import type { Test } from 'tap';
import { createSocket } from 'node:dgram';

/** A GetBulkRequest as it arrived: its first OID, and how many rows it asked for. */
export interface BulkRequest {
  oid: number[];
  maxRepetitions: number;
}

/** An INTEGER value, or the end of the agent's MIB view. */
export type FakeValue = number | 'endOfMibView';

/**
 * What the agent answers a request: varbinds, or an error status (5 is genErr) with the request's varbind
 * echoed and the error index at it, as RFC 3416 has an agent answer; `undefined` for a request the test did
 * not expect (the agent stays silent, and the test fails).
 */
export type BulkAnswer = { varbinds: Array<{ oid: number[]; value: FakeValue }> } | { errorStatus: number } | undefined;

export interface FakeSnmpAgent {
  port: number;
  /** Every GetBulkRequest answered or not, in order. */
  requests: BulkRequest[];
}

const SEQUENCE = 0x30;
const INTEGER = 0x02;
const OCTET_STRING = 0x04;
const NULL = 0x05;
const OBJECT_IDENTIFIER = 0x06;
const GET_BULK = 0xa5;
const RESPONSE = 0xa2;
const END_OF_MIB_VIEW = 0x82;

/** A BER TLV at `at`: its tag, where its value starts, and where it ends. */
export function readTlv(buf: Buffer, at: number): { tag: number; start: number; end: number } {
  const tag = buf[at]!;
  let length = buf[at + 1]!;
  let start = at + 2;
  if (length & 0x80) {
    const bytes = length & 0x7f;
    length = 0;
    for (let i = 0; i < bytes; i++) length = length * 256 + buf[start + i]!;
    start += bytes;
  }
  if (start + length > buf.length) throw new Error(`TLV ${tag.toString(16)} at ${at} runs past the datagram`);
  return { tag, start, end: start + length };
}

function expectTag(buf: Buffer, at: number, tag: number): { start: number; end: number } {
  const read = readTlv(buf, at);
  if (read.tag !== tag) throw new Error(`expected tag 0x${tag.toString(16)} at ${at}, got 0x${read.tag.toString(16)}`);
  return read;
}

function readInteger(buf: Buffer, at: number): { value: number; end: number } {
  const { start, end } = expectTag(buf, at, INTEGER);
  let value = (buf[start]! & 0x80) !== 0 ? -1 : 0;
  for (let i = start; i < end; i++) value = value * 256 + buf[i]!;
  return { value, end };
}

function decodeOid(bytes: Buffer): number[] {
  const ids: number[] = [];
  let id = 0;
  for (const byte of bytes) {
    id = id * 128 + (byte & 0x7f);
    if (byte & 0x80) continue;
    if (ids.length === 0) ids.push(Math.min(2, Math.floor(id / 40)), id - 40 * Math.min(2, Math.floor(id / 40)));
    else ids.push(id);
    id = 0;
  }
  return ids;
}

function tlv(tag: number, ...parts: Buffer[]): Buffer {
  const body = Buffer.concat(parts);
  const length = body.length;
  if (length < 0x80) return Buffer.concat([Buffer.from([tag, length]), body]);
  const bytes: number[] = [];
  for (let rest = length; rest > 0; rest = Math.floor(rest / 256)) bytes.unshift(rest & 255);
  return Buffer.concat([Buffer.from([tag, 0x80 | bytes.length, ...bytes]), body]);
}

/** A 32-bit INTEGER in as few two's complement bytes as keep its sign. */
function encodeInteger(value: number): Buffer {
  const bytes = [value & 255];
  let rest = value >> 8;
  // done once the rest is only the sign the top byte already carries
  while (!((rest === 0 && bytes[0]! < 0x80) || (rest === -1 && bytes[0]! >= 0x80))) {
    bytes.unshift(rest & 255);
    rest >>= 8;
  }
  return tlv(INTEGER, Buffer.from(bytes));
}

function encodeOid(ids: readonly number[]): Buffer {
  const bytes: number[] = [];
  const [first = 0, second = 0, ...rest] = ids;
  for (const id of [first * 40 + second, ...rest]) {
    const group = [id & 0x7f];
    for (let high = Math.floor(id / 128); high > 0; high = Math.floor(high / 128)) group.unshift(0x80 | (high & 0x7f));
    bytes.push(...group);
  }
  return tlv(OBJECT_IDENTIFIER, Buffer.from(bytes));
}

function encodeVarbind(oid: readonly number[], value: FakeValue | null): Buffer {
  const encoded = value === null ? tlv(NULL) : value === 'endOfMibView' ? tlv(END_OF_MIB_VIEW) : encodeInteger(value);
  return tlv(SEQUENCE, encodeOid(oid), encoded);
}

/** Reads a v2c GetBulkRequest: its community, request-id (as sent), first OID and max-repetitions. */
function parseRequest(datagram: Buffer): { community: string; requestId: Buffer; request: BulkRequest } {
  const message = expectTag(datagram, 0, SEQUENCE);
  const version = readInteger(datagram, message.start);
  if (version.value !== 1) throw new Error(`not SNMPv2c (version ${version.value})`);
  const community = expectTag(datagram, version.end, OCTET_STRING);
  const pdu = expectTag(datagram, community.end, GET_BULK);
  const requestId = readTlv(datagram, pdu.start);
  const nonRepeaters = readInteger(datagram, requestId.end);
  const maxRepetitions = readInteger(datagram, nonRepeaters.end);
  const varbinds = expectTag(datagram, maxRepetitions.end, SEQUENCE);
  const varbind = expectTag(datagram, varbinds.start, SEQUENCE);
  const oid = expectTag(datagram, varbind.start, OBJECT_IDENTIFIER);
  return {
    community: datagram.subarray(community.start, community.end).toString('latin1'),
    requestId: datagram.subarray(pdu.start, requestId.end),
    request: { oid: decodeOid(datagram.subarray(oid.start, oid.end)), maxRepetitions: maxRepetitions.value },
  };
}

function responseOf(community: string, requestId: Buffer, request: BulkRequest, answer: NonNullable<BulkAnswer>): Buffer {
  const [errorStatus, errorIndex, varbinds] =
    'errorStatus' in answer
      ? [answer.errorStatus, 1, [encodeVarbind(request.oid, null)]]
      : [0, 0, answer.varbinds.map(({ oid, value }) => encodeVarbind(oid, value))];
  const pdu = tlv(RESPONSE, requestId, encodeInteger(errorStatus), encodeInteger(errorIndex), tlv(SEQUENCE, ...varbinds));
  return tlv(SEQUENCE, encodeInteger(1), tlv(OCTET_STRING, Buffer.from(community, 'latin1')), pdu);
}

/** Starts the agent on 127.0.0.1, port 0; it closes, and reports what it did not expect, at the test's teardown. */
export async function startFakeSnmpAgent(
  t: Test,
  options: { community: string; answer: (request: BulkRequest, nth: number) => BulkAnswer },
): Promise<FakeSnmpAgent> {
  const socket = createSocket('udp4');
  const requests: BulkRequest[] = [];
  const unexpected: string[] = [];
  socket.on('message', (datagram, peer) => {
    try {
      const { community, requestId, request } = parseRequest(datagram);
      if (community !== options.community) throw new Error('a request under another community');
      requests.push(request);
      const answer = options.answer(request, requests.length);
      if (answer === undefined) throw new Error(`no answer scripted for request ${requests.length} (${request.oid.slice(0, 20).join('.')}…)`);
      socket.send(responseOf(community, requestId, request, answer), peer.port, peer.address);
    } catch (error) {
      unexpected.push((error as Error).message);
    }
  });
  await new Promise<void>((resolve) => socket.bind(0, '127.0.0.1', () => resolve()));
  t.teardown(async () => {
    await new Promise<void>((resolve) => socket.close(() => resolve()));
    if (unexpected.length > 0) throw new Error(`the fake SNMP agent got ${unexpected.length} request(s) it did not expect: ${unexpected.join('; ')}`);
  });
  return { port: socket.address().port, requests };
}

/** Dotted OID text → sub-ids. */
export const oidIds = (oid: string): number[] => oid.replace(/^\./, '').split('.').map(Number);
