import t from 'tap';
import { randomBytes } from 'node:crypto';
import { Writable } from 'node:stream';
import { REDACTED, createLogger } from '../../shared/logger.js';
import { MigrationError } from '../../shared/pg-migrations.js';

/** A logger writing into an array of parsed lines, and a maker of values that must never reach it. */
function capture() {
  const lines: string[] = [];
  const sink = new Writable({ write(chunk, _e, cb) { lines.push(chunk.toString()); cb(); } });
  const made: string[] = [];
  const secret = () => {
    const value = `v${randomBytes(6).toString('hex')}`;
    made.push(value);
    return value;
  };
  return { logger: createLogger('test', { destination: sink }), lines, made, secret, parsed: () => lines.map((line) => JSON.parse(line) as Record<string, unknown>) };
}

t.test('an error logged without a message does not become the message: the line says its class and code', async (t) => {
  const { logger, lines, made, secret, parsed } = capture();
  const failure = () => Object.assign(new Error(`connect to postgres://lintel:${secret()}@db/lintel failed`), { code: 'ECONNREFUSED' });
  logger.error(failure());
  logger.error({ err: failure() });
  logger.error({ err: failure() }, 'with its own message');
  logger.error(new MigrationError('tenancy migration 0002_x.sql failed (error (42P01)); none of it was applied'));
  t.equal(lines.length, 4, 'every line was written');
  const out = lines.join('');
  for (const leaked of made) t.notMatch(out, leaked, leaked);
  t.same(parsed().map((line) => line.msg), [
    'Error (ECONNREFUSED)',
    'Error (ECONNREFUSED)',
    'with its own message',
    'MigrationError: tenancy migration 0002_x.sql failed (error (42P01)); none of it was applied',
  ]);
  t.equal(parsed()[0]?.err, 'Error (ECONNREFUSED)', 'the error itself is still described');
});

t.test('a password in a URL is redacted under any key, in URL objects, class instances and messages', async (t) => {
  const { logger, lines, made, secret, parsed } = capture();
  class PoolOptions {
    host = 'db';
    password = secret();
  }
  logger.info({ endpoint: `http://admin:${secret()}@10.0.4.21:8089/api`, upstream: [{ target: `amqp://u:${secret()}@broker:5672` }], written: `mqtt://u:${secret()}@${secret()}@broker` }, 'string values');
  logger.info({ connection: new URL(`postgres://lintel:${secret()}@db:5432/lintel`) }, 'a URL object');
  logger.info({ options: new PoolOptions() }, 'a class instance');
  logger.info(`reconnecting to %s`, `redis://:${secret()}@cache:6379`);
  logger.info({ when: new Date(0), plain: 'http://example.test/a@b', user: 'http://only-user@example.test/' }, 'kept');
  t.equal(lines.length, 5, 'every line was written');
  const out = lines.join('');
  for (const leaked of made) t.notMatch(out, leaked, leaked);
  const [strings, urlObject, instance, message, kept] = parsed();
  t.equal(strings?.endpoint, `http://admin:${REDACTED}@10.0.4.21:8089/api`, 'the rest of the URL is kept');
  t.same(strings?.upstream, [{ target: `amqp://u:${REDACTED}@broker:5672` }]);
  t.equal(strings?.written, `mqtt://u:${REDACTED}@broker`, 'a password holding "@" is hidden whole');
  t.equal(urlObject?.connection, `postgres://lintel:${REDACTED}@db:5432/lintel`);
  t.same(instance?.options, { host: 'db', password: REDACTED });
  t.equal(message?.msg, `reconnecting to redis://:${REDACTED}@cache:6379`);
  t.same(kept, { ...kept, when: '1970-01-01T00:00:00.000Z', plain: 'http://example.test/a@b', user: 'http://only-user@example.test/' }, 'dates and URLs without a password are as they were');
});
