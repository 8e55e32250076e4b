import t from 'tap';
import * as io from 'io-ts';
import { decode, Finite, NonEmptyString, NonNegativeInt, describeValue } from '../../shared/kinds.js';

t.test('kinds accept what they name and nothing else', async (t) => {
  t.ok(NonEmptyString.is('a'));
  t.notOk(NonEmptyString.is(''));
  t.notOk(NonEmptyString.is('   '));
  t.notOk(NonEmptyString.is('x'.repeat(257)));
  t.notOk(NonEmptyString.is(3));
  t.ok(Finite.is(-1.5));
  t.notOk(Finite.is(Number.NaN));
  t.notOk(Finite.is(Number.POSITIVE_INFINITY));
  t.notOk(Finite.is('1'));
  t.ok(NonNegativeInt.is(0));
  t.notOk(NonNegativeInt.is(-1));
  t.notOk(NonNegativeInt.is(1.5));
  t.notOk(NonNegativeInt.is(2 ** 60));
});

t.test('the reporter names each path, what was expected and what came', async (t) => {
  const Config = io.type({
    pollIntervalS: NonNegativeInt,
    accessPoints: io.array(io.type({ name: NonEmptyString, host: NonEmptyString, transport: io.keyof({ snmp: null, ssh: null }) })),
  });
  const r = decode(Config, {
    pollIntervalS: -5,
    accessPoints: [{ name: 'ap1', host: 'h', transport: 'snmp' }, { name: 'ap2', host: 'h', transport: 'snmp' }, { name: 'ap3', host: '', transport: 'telnet' }],
  });
  t.notOk(r.ok);
  if (!r.ok) {
    t.same(r.errors, [
      'pollIntervalS: expected a non-negative integer, got -5',
      'accessPoints[2].host: expected a non-empty string of at most 256 characters, without NUL (\\u0000), other control characters or lone surrogates, got ""',
      'accessPoints[2].transport: expected one of "snmp" | "ssh", got "telnet"',
    ]);
  }
});

t.test('a root-level failure and a good decode', async (t) => {
  t.same(decode(NonNegativeInt, -1), { ok: false, errors: ['(root): expected a non-negative integer, got -1'] });
  t.same(decode(Finite, 2.5), { ok: true, value: 2.5 });
  t.same(decode(io.type({ a: io.string }), undefined, 'config'), { ok: false, errors: ['config: expected { a: string }, got nothing'] });
});

t.test('values are described briefly, never echoed whole', async (t) => {
  t.equal(describeValue('x'.repeat(100)), JSON.stringify(`${'x'.repeat(40)}…`));
  t.equal(describeValue(Number.NaN), 'NaN');
  t.equal(describeValue([1]), 'an array');
  t.equal(describeValue({ secret: 'x' }), 'an object');
  t.equal(describeValue(null), 'null');
});
