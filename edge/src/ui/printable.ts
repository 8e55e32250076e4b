/**
 * Text from outside the gateway (an ingest's error message, the first line of an AP's stderr) made safe
 * to show on the installer's terminal. Such text reaches `doctor`'s report and `simulate`'s table as a
 * failure reason; a control character in it is a command to the terminal (`ESC ]0;…BEL` retitles the
 * window, `ESC [2J` clears the screen, C1 `CSI` does the same in one byte), not something to read.
 */

/** C0 controls, DEL and the C1 controls: every character a terminal may act on rather than show. */
// eslint-disable-next-line no-control-regex
const CONTROL_CHARACTER = /[\u0000-\u001f\u007f-\u009f]/g;

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
