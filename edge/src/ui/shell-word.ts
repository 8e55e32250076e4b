/**
 * Values in the command lines printed for an operator to paste into a shell (doctor's fixes, simulate's
 * `ledger verify` line). A building id may hold a space ("HQ Amsterdam") and a path any character: put
 * in as they are, the shell splits them into several arguments, and the command is refused or does
 * something else.
 */

/** Characters no POSIX shell treats specially anywhere in a word. */
const PLAIN_WORD = /^[A-Za-z0-9_@%+=:,./-]+$/;

/**
 * `value` as one word of a POSIX shell command line. A plain word stays as it is, so the usual command
 * reads as before; any other is single-quoted (the shell expands nothing there), each single quote in it
 * written `'\''`.
 *
 * @example
 * shellWord('/etc/lintel-edge/config.yaml'); // '/etc/lintel-edge/config.yaml'
 * shellWord('HQ Amsterdam'); // "'HQ Amsterdam'"
 * shellWord("O'Hare"); // "'O'\\''Hare'"
 */
export function shellWord(value: string): string {
  if (PLAIN_WORD.test(value)) return value;
  return `'${value.replace(/'/g, `'\\''`)}'`;
}
