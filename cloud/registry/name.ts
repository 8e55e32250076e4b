/**
 * What makes two organization Names one Name. Names are unique on `lower(name)`, so a Name is stored in
 * a canonical form, and a character no font draws is refused: otherwise `ac\u034fme` would be a second
 * organization that reads exactly like `acme`.
 */

/**
 * Characters that are never drawn: Unicode's Default_Ignorable_Code_Point (soft hyphen, zero-width
 * space, non-joiner and joiner, word joiner, bidi marks, the combining grapheme joiner, variation
 * selectors, Hangul fillers, Khmer inherent vowels, Mongolian free variation selectors, tag characters,
 * …) and every other format character (Cf).
 */
const INVISIBLE = /[\p{Default_Ignorable_Code_Point}\p{Cf}]/u;
const JOINERS = new Set(['\u200c', '\u200d']);
const TEXT_SELECTOR = '\ufe0e';
const EMOJI_SELECTOR = '\ufe0f';

/**
 * A letter or mark of a script whose shaping a joiner changes (Arabic, Persian, the Indic scripts, …).
 * Latin, Greek and Cyrillic words never need one, nor do characters every script shares.
 */
const JOINING_SCRIPT_LETTER = /^(?![\p{Script=Latin}\p{Script=Greek}\p{Script=Cyrillic}\p{Script=Common}\p{Script=Inherited}])[\p{L}\p{M}]$/u;
/** A mark any script may carry (an accent, an Arabic vowel sign): a joiner after one joins the letter under it. */
const INHERITED_MARK = /^(?=\p{M})\p{Script=Inherited}$/u;
const PICTOGRAPH = /^\p{Extended_Pictographic}$/u;
/** A skin tone, which sits between an emoji and the joiner that follows it (👩🏽‍💻). */
const EMOJI_MODIFIER = /^\p{Emoji_Modifier}$/u;
/** Drawn as text unless U+FE0F follows (❤ U+2764): only there does the emoji selector change anything. */
const TEXT_STYLE_EMOJI = /^(?!\p{Emoji_Presentation})(?=\p{Emoji})\p{Extended_Pictographic}$/u;
/** Drawn as an emoji unless U+FE0E follows (😀 U+1F600): only there does the text selector change anything. */
const EMOJI_STYLE_EMOJI = /^(?=\p{Emoji_Presentation})\p{Extended_Pictographic}$/u;

/**
 * A Name as it is stored and compared: in Unicode compatibility form (NFKC: `Cafe` with a combining
 * accent is `Café`, fullwidth `ａｃｍｅ` is `acme`, a half-width Hangul filler is U+1160), every run of
 * white space (a no-break space too) one space, trimmed. With {@link invisibleCharacterIn} refusing what
 * is never drawn, two names a reader cannot tell apart are then one name, and the unique index on
 * `lower(name)` refuses the second.
 *
 * @example
 * canonicalName(' Acme\u00a0 Corp '); // 'Acme Corp'
 */
export function canonicalName(name: string): string {
  return name.normalize('NFKC').replace(/\s+/gu, ' ').trim();
}

/**
 * Whether nothing of `name` would be drawn: only white space and invisible characters (`\u3164`, a
 * Hangul filler, shows as a blank).
 *
 * @example
 * isBlankName('\u3164 \u00a0'); // true
 */
export function isBlankName(name: string): boolean {
  return name.replace(new RegExp(INVISIBLE.source, 'gu'), '').trim() === '';
}

/**
 * The first character of `name` that is never drawn and changes nothing that is, as `U+XXXX`, or
 * undefined. Kept, because some names are written with them:
 * - a zero-width non-joiner or joiner after a letter or mark of a script that shapes with it (Persian
 *   `می‌خواهم`, Devanagari `क्‍ष`), never after a Latin, Greek or Cyrillic letter (`ac\u200dme` would pass
 *   for `acme`), a digit, punctuation, white space or at the start;
 * - a zero-width joiner inside an emoji sequence, from an emoji (with its skin tone or U+FE0F) to the
 *   next (👨‍👩‍👧, ❤️‍🔥);
 * - U+FE0F right after an emoji otherwise drawn as text (❤️), U+FE0E right after one otherwise drawn as
 *   an emoji.
 *
 * @example
 * invisibleCharacterIn('ac\u034fme'); // 'U+034F'
 * invisibleCharacterIn('\u2764\ufe0f'); // undefined
 */
export function invisibleCharacterIn(name: string): string | undefined {
  const characters = Array.from(name);
  const refused = characters.find((c, i) => INVISIBLE.test(c) && !drawsDifferently(characters, i));
  return refused === undefined ? undefined : `U+${(refused.codePointAt(0) ?? 0).toString(16).toUpperCase().padStart(4, '0')}`;
}

/** Whether the invisible `characters[i]` changes how its neighbours are drawn (see {@link invisibleCharacterIn}). */
function drawsDifferently(characters: readonly string[], i: number): boolean {
  const character = characters[i] ?? '';
  const before = characters[i - 1] ?? '';
  // A keycap (`1️⃣`): a digit, `#` or `*`, U+FE0F, then the combining enclosing keycap U+20E3.
  if (character === EMOJI_SELECTOR && /^[0-9#*]$/.test(before) && characters[i + 1] === '\u20e3') return true;
  if (character === EMOJI_SELECTOR) return TEXT_STYLE_EMOJI.test(before);
  if (character === TEXT_SELECTOR) return EMOJI_STYLE_EMOJI.test(before);
  if (!JOINERS.has(character)) return false;
  return JOINING_SCRIPT_LETTER.test(letterBefore(characters, i)) || (character === '\u200d' && joinsEmoji(characters, i));
}

/** The character before `characters[i]`, past the accents and vowel signs that sit on it. */
function letterBefore(characters: readonly string[], i: number): string {
  let j = i - 1;
  while (j >= 0 && INHERITED_MARK.test(characters[j] ?? '')) j--;
  return characters[j] ?? '';
}

/** Whether the joiner `characters[i]` stands between two emoji, the first one perhaps with a skin tone or U+FE0F. */
function joinsEmoji(characters: readonly string[], i: number): boolean {
  if (!PICTOGRAPH.test(characters[i + 1] ?? '')) return false;
  const before = characters[i - 1] ?? '';
  const emoji = EMOJI_MODIFIER.test(before) || before === EMOJI_SELECTOR ? characters[i - 2] ?? '' : before;
  return PICTOGRAPH.test(emoji);
}
