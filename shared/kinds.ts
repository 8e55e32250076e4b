/**
 * The io-ts kinds every wire input is checked with, and a reporter that turns decode errors into
 * `path: expected X, got Y` lines.
 */
import * as t from 'io-ts';
import { isLeft } from 'fp-ts/lib/Either.js';

/**
 * A name or id: at least one non-blank character, at most 256 characters, no control character (see
 * {@link CONTROL_CHARACTERS}) and no lone surrogate (half of a UTF-16 pair, which JSON can escape):
 * UTF-8 has no form for one, so it would be stored, published and looked up as U+FFFD instead.
 */
export interface NonEmptyStringBrand {
  readonly NonEmptyString: unique symbol;
}
/** Longest name or id a NonEmptyString holds: building, room and sensor ids, batch ids, labels. */
export const MAX_NAME_LENGTH = 256;

/**
 * C0 and C1 control characters, DEL, and the Unicode line and paragraph separators. No id may hold
 * one: NUL cannot be stored at all (PostgreSQL text and jsonb, FerretDB included, refuse it), and the
 * others break log lines, COPY text and room names, which is why the relay refuses building ids that
 * hold them; an id telemetry accepted and the relay refused would be stored but never reach a browser.
 */
// eslint-disable-next-line no-control-regex
export const CONTROL_CHARACTERS = /[\u0000-\u001f\u007f-\u009f\u2028\u2029]/;

/**
 * Half of a UTF-16 surrogate pair on its own, which JSON can escape (`"\ud800"`) but UTF-8 cannot hold:
 * it would be stored as U+FFFD. With the `u` flag a whole pair is one code point, so only a lone half
 * matches.
 */
export const LONE_SURROGATE = /\p{Cs}/u;

/**
 * Whether a text is stored exactly as sent: PostgreSQL and FerretDB refuse NUL, and a lone surrogate
 * becomes U+FFFD (so `x\ud800` and `x\udc00` would be stored as one value).
 */
export function storableText(text: string): boolean {
  return !text.includes('\u0000') && !LONE_SURROGATE.test(text);
}

/**
 * The rule of {@link NonEmptyString}, for code that checks names by hand on a hot path (the alert
 * consumer, for each record).
 */
export function isName(s: string): boolean {
  if (s.length === 0 || s.length > MAX_NAME_LENGTH || CONTROL_CHARACTERS.test(s) || LONE_SURROGATE.test(s)) return false;
  // A printable ASCII first character is not whitespace: no need to trim (and copy) the name.
  const first = s.charCodeAt(0);
  return (first > 0x20 && first < 0x7f) || s.trim().length > 0;
}

export const NonEmptyString = t.brand(t.string, (s): s is t.Branded<string, NonEmptyStringBrand> => isName(s), 'NonEmptyString');
export type NonEmptyString = t.TypeOf<typeof NonEmptyString>;

/** A number that is neither NaN nor ±Infinity. */
export interface FiniteBrand {
  readonly Finite: unique symbol;
}
export const Finite = t.brand(t.number, (n): n is t.Branded<number, FiniteBrand> => Number.isFinite(n), 'Finite');
export type Finite = t.TypeOf<typeof Finite>;

/** A safe integer ≥ 0. */
export interface NonNegativeIntBrand {
  readonly NonNegativeInt: unique symbol;
}
export const NonNegativeInt = t.brand(
  t.number,
  (n): n is t.Branded<number, NonNegativeIntBrand> => Number.isSafeInteger(n) && n >= 0,
  'NonNegativeInt',
);
export type NonNegativeInt = t.TypeOf<typeof NonNegativeInt>;

/** What a NonEmptyString is, in the words every refusal of one uses. */
export const NAME_EXPECTATION = 'a non-empty string of at most 256 characters, without NUL (\\u0000), other control characters or lone surrogates';

/** The kinds a metric field or an action parameter may declare, by name. */
export const kinds = { NonEmptyString, Finite, NonNegativeInt } as const;
export type KindName = keyof typeof kinds;

/** What the reporter says a kind expects, in words a reader acts on. */
const expectations: Record<string, string> = {
  NonEmptyString: NAME_EXPECTATION,
  Finite: 'a finite number',
  NonNegativeInt: 'a non-negative integer',
  string: 'a string',
  number: 'a number',
  boolean: 'a boolean',
};

/** Renders a value for an error message without echoing long or nested input back. */
export function describeValue(value: unknown): string {
  if (value === undefined) return 'nothing';
  if (value === null) return 'null';
  if (typeof value === 'string') {
    return value.length > 40 ? JSON.stringify(`${value.slice(0, 40)}…`) : JSON.stringify(value);
  }
  if (typeof value === 'number') return Number.isNaN(value) ? 'NaN' : String(value);
  if (Array.isArray(value)) return 'an array';
  if (typeof value === 'object') return 'an object';
  return String(value);
}

function expectation(name: string): string {
  if (expectations[name]) return expectations[name];
  if (/^\(?"[^"]*"( \| "[^"]*")*\)?$/.test(name)) return `one of ${name.replace(/[()]/g, '')}`;
  return name;
}

interface Tagged {
  _tag?: string;
}

/** `accessPoints[2].host`: the keys of a context, without the union and intersection member indexes. */
function renderPath(context: t.Context, root: string): string {
  let out = root;
  for (let i = 1; i < context.length; i++) {
    const parent = context[i - 1]?.type as unknown as Tagged;
    const key = context[i]?.key ?? '';
    if (key === '' || parent._tag === 'UnionType' || parent._tag === 'IntersectionType') continue;
    if (parent._tag === 'ArrayType' || parent._tag === 'ReadonlyArrayType') out += `[${key}]`;
    else out += out ? `.${key}` : key;
  }
  return out || '(root)';
}

/**
 * Turns io-ts errors into one line per problem, `path: expected X, got Y`.
 *
 * @example
 * formatErrors(codec.decode({ accessPoints: [{ host: '' }] }).left)
 * // ['accessPoints[0].host: expected a non-empty string of at most 256 characters, without NUL (\\u0000), other control characters or lone surrogates, got ""']
 */
export function formatErrors(errors: t.Errors, root = ''): string[] {
  const lines = new Set<string>();
  for (const error of errors) {
    const where = renderPath(error.context, root);
    const last = error.context[error.context.length - 1];
    const name = last?.type.name ?? 'a valid value';
    lines.add(error.message ?? `${where}: expected ${expectation(name)}, got ${describeValue(error.value)}`);
  }
  return [...lines];
}

/** Result of {@link decode}: the value, or every problem as a line. */
export type Decoded<A> = { ok: true; value: A } | { ok: false; errors: string[] };

/**
 * Decodes with a codec and reports every problem at once.
 *
 * @example
 * const r = decode(NonNegativeInt, -1); // { ok: false, errors: ['(root): expected a non-negative integer, got -1'] }
 */
export function decode<A, O>(codec: t.Type<A, O, unknown>, input: unknown, root = ''): Decoded<A> {
  const result = codec.decode(input);
  if (isLeft(result)) return { ok: false, errors: formatErrors(result.left, root) };
  return { ok: true, value: result.right };
}
