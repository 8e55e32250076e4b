/**
 * The keys of a JSON object as written in its text. JSON.parse keeps only the last of a key given twice
 * (`{"Name":"Acme","Name":"Evil"}` is `{Name: 'Evil'}`), so a repeat is visible in the text alone.
 */

const WHITESPACE = new Set([' ', '\t', '\n', '\r']);

function skipWhitespace(text: string, at: number): number {
  let i = at;
  while (i < text.length && WHITESPACE.has(text.charAt(i))) i++;
  return i;
}

/** The index just past the string that opens at `at` (a `"`), or undefined when it never closes. */
function stringEnd(text: string, at: number): number | undefined {
  let i = at + 1;
  while (i < text.length) {
    const c = text.charAt(i);
    if (c === '\\') i += 2;
    else if (c === '"') return i + 1;
    else i++;
  }
  return undefined;
}

/** The index just past a nested object or array that opens at `at`; strings inside are skipped whole. */
function nestedEnd(text: string, at: number): number | undefined {
  let depth = 0;
  let i = at;
  while (i < text.length) {
    const c = text.charAt(i);
    if (c === '"') {
      const end = stringEnd(text, i);
      if (end === undefined) return undefined;
      i = end;
      continue;
    }
    if (c === '{' || c === '[') depth++;
    else if (c === '}' || c === ']') {
      depth--;
      if (depth === 0) return i + 1;
    }
    i++;
  }
  return undefined;
}

/** The index just past the value that starts at `at`: a string, an object, an array or a literal. */
function valueEnd(text: string, at: number): number | undefined {
  const c = text.charAt(at);
  if (c === '"') return stringEnd(text, at);
  if (c === '{' || c === '[') return nestedEnd(text, at);
  let i = at;
  while (i < text.length && !WHITESPACE.has(text.charAt(i)) && !',}]'.includes(text.charAt(i))) i++;
  return i === at ? undefined : i;
}

/** A key's text decoded (`"N\u0061me"` is `Name`), or undefined for an escape JSON does not have. */
function decodedKey(quoted: string): string | undefined {
  try {
    return JSON.parse(quoted) as string;
  } catch {
    return undefined;
  }
}

/**
 * The top-level keys of a JSON object text, in the order written, a repeated key as often as it is
 * written and each decoded from its escapes; nested values are skipped. Undefined when the text is not a
 * JSON object. Meant for text JSON.parse has accepted: it checks the structure it walks, not the
 * literals it skips.
 *
 * @example
 * topLevelKeys('{"Name":"Acme","Tier":"pooled","N\\u0061me":{"Name":1}}'); // ['Name', 'Tier', 'Name']
 * topLevelKeys('[1]'); // undefined
 */
export function topLevelKeys(text: string): string[] | undefined {
  let at = skipWhitespace(text, 0);
  if (text.charAt(at) !== '{') return undefined;
  const keys: string[] = [];
  at = skipWhitespace(text, at + 1);
  if (text.charAt(at) === '}') return keys;
  for (;;) {
    if (text.charAt(at) !== '"') return undefined;
    const keyEnd = stringEnd(text, at);
    if (keyEnd === undefined) return undefined;
    const key = decodedKey(text.slice(at, keyEnd));
    if (key === undefined) return undefined;
    keys.push(key);
    at = skipWhitespace(text, keyEnd);
    if (text.charAt(at) !== ':') return undefined;
    const end = valueEnd(text, skipWhitespace(text, at + 1));
    if (end === undefined) return undefined;
    at = skipWhitespace(text, end);
    if (text.charAt(at) === '}') return keys;
    if (text.charAt(at) !== ',') return undefined;
    at = skipWhitespace(text, at + 1);
  }
}
