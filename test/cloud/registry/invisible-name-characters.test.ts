import t from 'tap';
import { startRegistry } from './support/harness.js';

// A Name is unique on lower(name): a character no font draws must not make a second organization whose
// name reads exactly like an existing one. Unicode lists those characters as Default_Ignorable_Code_Point;
// only the joiners and the emoji variation selectors are kept, and only where they change what is drawn.

/** `U+034F`: assertion names stay readable when the character itself shows nothing. */
const codePoints = (s: string) => Array.from(s, (c) => `U+${(c.codePointAt(0) ?? 0).toString(16).toUpperCase().padStart(4, '0')}`).join(' ');

t.test('a Name that reads like a stored one thanks to an invisible character is 400, and nothing is written', async (t) => {
  const app = await startRegistry(t);
  for (const name of ['acme', 'acme-corp', 'acme.corp', 'Acme Corp']) t.equal((await app.signup({ Name: name, Tier: 'pooled' })).status, 201, name);
  const lookalikes: Array<[string, string]> = [
    ['ac\u034fme', 'a combining grapheme joiner'],
    ['acme\ufe0f', 'an emoji variation selector after a letter'],
    ['acme\ufe0e', 'a text variation selector after a letter'],
    ['acme\ufe00', 'a variation selector'],
    ['acme\u{e0100}', 'a supplementary variation selector'],
    ['acme\u{e01ef}', 'the last supplementary variation selector'],
    ['ac\u17b4me', 'a Khmer inherent vowel'],
    ['ac\u17b5me', 'the other Khmer inherent vowel'],
    ['ac\u180bme', 'a Mongolian free variation selector'],
    ['ac\u115fme', 'a Hangul choseong filler'],
    ['ac\u1160me', 'a Hangul jungseong filler'],
    ['ac\u3164me', 'a Hangul filler'],
    ['ac\uffa0me', 'a half-width Hangul filler (U+1160 once canonical)'],
    ['acme-\u200dcorp', 'a zero-width joiner after punctuation'],
    ['acme.\u200ccorp', 'a zero-width non-joiner after punctuation'],
    ['ac\u0301\u200dme', 'a zero-width joiner after an accent on a Latin letter'],
    ['Acme \u200cCorp', 'a zero-width non-joiner after a space'],
  ];
  for (const [name, what] of lookalikes) {
    const refused = await app.signup({ Name: name, Tier: 'pooled' });
    t.equal(refused.status, 400, `${what} (${codePoints(name)})`);
    t.match(refused.json, { type: 'Validation Error', message: /^Name: must not hold invisible characters .*, got U\+[0-9A-F]{4,5}$/ }, what);
  }
  t.equal(await app.rowCount(), 4, 'no lookalike written');
});

t.test('joiners and variation selectors are refused where they change nothing that is drawn', async (t) => {
  const app = await startRegistry(t);
  const refused: Array<[string, string]> = [
    ['\u0915\u094d\u200d\u200d\u0937', 'a second joiner after a Devanagari joiner'],
    ['\u0915\u0966\u200d\u0937', 'a joiner after a Devanagari digit'],
    ['\u200c\u0645\u06cc', 'a non-joiner at the start of a Persian name'],
    ['\u{1f469}\u200d', 'a zero-width joiner after an emoji that joins nothing'],
    ['\u{1f469}\u200dLabs', 'a zero-width joiner between an emoji and a Latin letter'],
    ['\u{1f600}\ufe0f', 'an emoji variation selector after an emoji that is drawn as one anyway'],
    ['\u2764\ufe0e', 'a text variation selector after a character that is drawn as text anyway'],
    ['\u2764\ufe0f\ufe0f', 'a second variation selector'],
    ['1\ufe0fx', 'a variation selector after a digit that is no keycap'],
  ];
  for (const [name, what] of refused) {
    const answer = await app.signup({ Name: name, Tier: 'pooled' });
    t.equal(answer.status, 400, `${what} (${codePoints(name)})`);
    t.match(answer.json, { type: 'Validation Error', message: /^Name: must not hold invisible characters/ }, what);
  }
  t.equal(await app.rowCount(), 0);
});

t.test('a Name that is blank once its invisible characters are taken out is 400', async (t) => {
  const app = await startRegistry(t);
  for (const name of ['\u3164', '\uffa0', '\u115f\u1160', '\u3164 \u3164', '\u034f', '\u{e0100}']) {
    const answer = await app.signup({ Name: name, Tier: 'pooled' });
    t.equal(answer.status, 400, codePoints(name));
    t.match(answer.json, { type: 'Validation Error', message: /^Name: expected a name, got only white space or invisible characters$/ }, codePoints(name));
  }
  t.equal(await app.rowCount(), 0);
});

t.test('scripts and emoji that need a joiner or a variation selector keep them', async (t) => {
  const app = await startRegistry(t);
  const allowed: Array<[string, string]> = [
    ['\u0645\u06cc\u200c\u062e\u0648\u0627\u0647\u0645', 'Persian with a zero-width non-joiner'],
    ['\u0645\u0650\u200c\u06cc', 'Persian with a vowel sign before the non-joiner'],
    ['\u0915\u094d\u200d\u0937', 'Devanagari with a zero-width joiner (a half form)'],
    ['\u0d05\u0d35\u0d28\u0d4d\u200d', 'Malayalam ending in a joiner (a chillu letter)'],
    ['\u{1f468}\u200d\u{1f469}\u200d\u{1f467}\u200d\u{1f466}', 'an emoji family joined by zero-width joiners'],
    ['\u{1f469}\u{1f3fd}\u200d\u{1f4bb} Labs', 'an emoji with a skin tone, joined'],
    ['\u2764\ufe0f Care', 'a heart with an emoji variation selector'],
    ['Studio 1\ufe0f\u20e3', 'a keycap: a digit, a variation selector and the enclosing keycap'],
    ['\u2764\ufe0f\u200d\u{1f525}', 'a heart on fire: a variation selector, then a joiner'],
    ['\u{1f600}\ufe0e', 'an emoji asked to be drawn as text'],
    ['\ud55c\uad6d \ud68c\uc0ac', 'Korean Hangul syllables'],
    ['\u1112\u1161\u11ab', 'Korean written in conjoining jamo (composed once canonical)'],
  ];
  for (const [name, what] of allowed) {
    const created = await app.signup({ Name: name, Tier: 'pooled' });
    t.equal(created.status, 201, `${what} (${codePoints(name)})`);
    t.equal((created.json as { Name?: string }).Name, name.normalize('NFKC'), `${what}: stored as sent, in its canonical form`);
  }
  t.equal(await app.rowCount(), allowed.length);
});
