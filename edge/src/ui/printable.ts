/**
 * Text from outside the gateway (an ingest's error message, the first line of an AP's stderr) made safe
 * to show on the installer's terminal. Such text reaches `doctor`'s report and `simulate`'s table as a
 * failure reason; a control character in it is a command to the terminal (`ESC ]0;…BEL` retitles the
 * window, `ESC [2J` clears the screen, C1 `CSI` does the same in one byte), not something to read.
 */

import { CONTROL_CHARACTERS } from '../../../shared/kinds.js';

/**
 * Every character a terminal may act on rather than show: the control characters ids refuse everywhere
 * (C0, DEL, C1; U+2028 and U+2029 are white space, made spaces first).
 */
const CONTROL_CHARACTER = new RegExp(CONTROL_CHARACTERS.source, 'g');

/** Shown in place of a control character, so the reader sees that something was there. */
const REPLACEMENT = '\ufffd';

/**
 * One line of plain text: runs of whitespace (line breaks included) become one space, the ends are
 * trimmed, and every control character left is replaced by U+FFFD.
 *
 * @example
 * printableLine('refused:\n\u001b]0;pwned\u0007 bad\u009b2J'); // 'refused: �]0;pwned� bad�2J'
 */
export function printableLine(text: string): string {
  return text.replace(/\s+/g, ' ').trim().replace(CONTROL_CHARACTER, REPLACEMENT);
}
