/**
 * Station MACs in one form, lowercase `aa:bb:cc:dd:ee:ff`, whatever the AP wrote, so one device heard by
 * several APs (of different vendors) is one key.
 */
import { redactMacs } from '../report/identifiers.js';

const HEX12 = /^[0-9a-f]{12}$/;

/**
 * Normalises a MAC written as `AA:BB:CC:DD:EE:FF`, `aa-bb-cc-dd-ee-ff`, `aabb.ccdd.eeff`, `aabbccddeeff`,
 * or given as 6 octets (an SNMP MacAddress or OID index). Returns undefined for anything else.
 *
 * @example
 * normalizeMac('00-1A-2B-3C-4D-5E'); // '00:1a:2b:3c:4d:5e'
 * normalizeMac([0, 26, 43, 60, 77, 94]); // '00:1a:2b:3c:4d:5e'
 */
export function normalizeMac(input: string | Uint8Array | readonly number[]): string | undefined {
  if (typeof input !== 'string') return input.length === 6 ? macFromOctets(input) : undefined;
  const trimmed = input.trim();
  if (!/^[0-9a-f:.-]+$/i.test(trimmed)) return undefined;
  const hex = trimmed.toLowerCase().replace(/[:.-]/g, '');
  if (!HEX12.test(hex)) return undefined;
  return hex.replace(/(..)(?!$)/g, '$1:');
}

const HEX_DIGIT = Array.from('0123456789abcdef', (c) => c.charCodeAt(0));
const COLON = ':'.charCodeAt(0);

/**
 * The 6 octets at `offset` → `aa:bb:…`, or undefined when one is not an octet (the hot path: one call
 * per walked SNMP row, straight from the OID index).
 */
export function macFromOctets(octets: ArrayLike<number>, offset = 0): string | undefined {
  if (octets.length < offset + 6) return undefined;
  for (let i = offset; i < offset + 6; i++) {
    const octet = octets[i] as number;
    if ((octet & 255) !== octet) return undefined;
  }
  const o = offset;
  const d = HEX_DIGIT;
  const a = octets;
  // One flat string (not a chain of concatenations): the zone tracker hashes it as a map key right away.
  return String.fromCharCode(
    d[a[o]! >> 4]!, d[a[o]! & 15]!, COLON,
    d[a[o + 1]! >> 4]!, d[a[o + 1]! & 15]!, COLON,
    d[a[o + 2]! >> 4]!, d[a[o + 2]! & 15]!, COLON,
    d[a[o + 3]! >> 4]!, d[a[o + 3]! & 15]!, COLON,
    d[a[o + 4]! >> 4]!, d[a[o + 4]! & 15]!, COLON,
    d[a[o + 5]! >> 4]!, d[a[o + 5]! & 15]!,
  );
}

/**
 * Blanks MAC-like substrings, in every spelling the audit counts as a MAC, for text taken from an AP
 * (stderr, a parse error, an SNMP error quoting an OID) that may end up in a log: device identifiers never
 * leave the process. An OID (seven dotted numbers or more) is blanked whole first, as its index may be a
 * station's MAC in decimal octets.
 *
 * @example
 * scrubMacs('GeneralError: 1.3.6.1.4.1.14823.2.2.1.5.2.2.1.1.14.4.211.176.18.52.86'); // 'GeneralError: <oid>'
 */
export function scrubMacs(text: string): string {
  return redactMacs(text, '<mac>', '<oid>');
}

const isHexAt = (text: string, i: number) => /[0-9a-f]/i.test(text.charAt(i));
/** No MAC spelling holds both characters around `at`: the two before it are not hex (or start the text). */
const safeCut = (text: string, at: number) => at === 0 || (!isHexAt(text, at - 1) && (at === 1 || !isHexAt(text, at - 2)));

/**
 * At most `maxLength` characters of a text taken from an AP, MACs blanked as {@link scrubMacs} does, for
 * a failure reason. Only a head of twice that length is scrubbed, so megabytes of stderr cost what a line
 * does. The head is cut after two characters in a row that are not hex, where no MAC spelling can straddle
 * the cut (each has at most one separator between its hex groups), so no part of one shows unblanked; a
 * cut text ends in `…`.
 *
 * @example
 * scrubMacsShort(`no station aa:bb:cc:dd:ee:ff; ${'ff:'.repeat(5000)}`, 40); // 'no station <mac>; …'
 */
export function scrubMacsShort(text: string, maxLength: number): string {
  const head = maxLength * 2;
  if (text.length <= head) return scrubMacs(text).slice(0, maxLength);
  let cut = head;
  while (!safeCut(text, cut)) cut--;
  return `${scrubMacs(text.slice(0, cut))}…`.slice(0, maxLength);
}
