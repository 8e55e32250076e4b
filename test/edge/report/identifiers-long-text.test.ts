/**
 * The identifier patterns run over text an AP controls (its stderr, through scrubMacs) and over whatever
 * leaves the gateway. A megabyte of it must be scanned in one pass: a search from every position of a
 * long run took quadratic time (80,000 characters about 3 s, a megabyte many minutes: tap's timeout),
 * freezing the collector's event loop. What they find stays the same.
 */
import t from 'tap';
import { identifierKind, redactIdentifiers, redactMacs } from '../../../edge/src/report/identifiers.js';

const MiB = 1024 * 1024;

t.test('a megabyte of hex letters without a digit is scanned, and is no MAC', async (t) => {
  const letters = 'a'.repeat(MiB);
  t.equal(redactMacs(letters, '<mac>'), letters);
  const mixedCase = 'aB'.repeat(MiB / 2);
  t.equal(redactMacs(mixedCase, '<mac>'), mixedCase);
  t.equal(redactIdentifiers(`x${letters}`), 'x[hex]', 'it is still a long hex run for the audit');
  t.equal(identifierKind(letters), 'hex');
});

t.test('a run of hex letters holding a digit is still a MAC run into a name, however long', async (t) => {
  t.equal(redactMacs('device aabbccddeeff0 left', '<mac>'), 'device <mac> left');
  t.equal(redactMacs('device3c22fb010203', '<mac>'), 'devi<mac>');
  t.equal(redactMacs(`x-${'a'.repeat(MiB)}1-y`, '<mac>'), 'x-<mac>-y');
  t.equal(redactMacs(`${'ab'.repeat(MiB / 2)} aabbccddeef1`, '<mac>'), `${'ab'.repeat(MiB / 2)} <mac>`, 'after a long run without one');
  t.equal(redactMacs('abcdefabcdefab and deadbeefcafe', '<mac>'), 'abcdefabcdefab and <mac>', 'no digit: only exactly twelve, as six pairs, is a MAC');
});

t.test('a megabyte of hex and dots without two colons is scanned for IPv6 addresses, which are still found', async (t) => {
  const dotted = 'a.'.repeat(MiB / 2);
  t.equal(identifierKind(dotted), null);
  t.equal(identifierKind(`${dotted} 2001:db8::1`), 'ip');
  t.equal(identifierKind(`${dotted}:1 and more`), null, 'one colon is no address');
  t.equal(identifierKind('gw fe80::1%eth0 up'), 'ip');
  t.equal(identifierKind('via 10:20:30 at noon'), null, 'a time is no address');
});

t.test('a megabyte of base64-like text, mixed separators or zero-padded octets is scanned in one pass', async (t) => {
  const words = 'North-Wing2-'.repeat(MiB / 12);
  t.equal(identifierKind(words), null);
  t.equal(identifierKind(`${words}LYp9+bqYsAMCd/C5ppqY2g==`), 'base64', 'a padded base64 key at the end of that run is found');
  t.equal(identifierKind('Gh7Xy.'.repeat(MiB / 6)), null, 'short runs, each too short for 16 bytes');
  t.equal(identifierKind('GhXy7'.repeat(MiB / 5)), 'base64', 'one long run mixing case and digits');
  t.equal(identifierKind('00.'.repeat(MiB / 3)), 'mac', 'zero-padded octets');
  t.equal(identifierKind('1_'.repeat(MiB / 2)), null, 'a long run of underscored groups is no MAC');
  t.equal(redactMacs(`${'0.'.repeat(MiB / 2)} 3c:22:fb-01-02-03`, '<mac>').endsWith(' <mac>'), true, 'a mixed-separator MAC after them');
});
