/**
 * A REDIS_URL whose password holds a lone `%` (`50%off`) is valid to WHATWG URL, yet ioredis's
 * constructor decodes the password and throws `URI malformed`. The relay refuses it at start, naming
 * REDIS_URL; and should a subscriber be handed one anyway, building the client is a failed attempt of its
 * loop like any other, never an unhandled rejection that kills the process after it listens.
 */
import t from 'tap';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { request } from 'undici';
import { startFakeDirectory } from '../../support/fake-directory.js';
import { capturedLogger, stackRedisUrl, startRelay, waitFor } from './support/relay-harness.js';

/** The stack's Redis, with a password ioredis cannot decode. */
function undecodableRedisUrl(): string {
  const url = new URL(stackRedisUrl());
  return `redis://:50%off@${url.host}/0`;
}

t.test('the relay exits 2 naming REDIS_URL, without the password, before it listens', async (t) => {
  const result = spawnSync(process.execPath, ['--import', 'tsx', 'cloud/relay/main.ts'], {
    cwd: fileURLToPath(new URL('../../../', import.meta.url)),
    env: { PATH: process.env.PATH ?? '', PORT: '0', REDIS_URL: undecodableRedisUrl() },
    encoding: 'utf8',
    timeout: 30_000,
  });
  t.equal(result.status, 2, 'a configuration error');
  t.match(result.stderr, /REDIS_URL: the password holds a % that is not valid percent-encoding; write a literal % as %25/);
  t.notMatch(result.stdout + result.stderr, /50%off|off@/, 'the password is not echoed');
  t.notMatch(result.stdout, /listening/, 'refused before listening');
});

t.test('a client the subscriber cannot build is a failed attempt: logged, retried, the relay stays up', async (t) => {
  const directory = await startFakeDirectory(t);
  const { logger, lines } = capturedLogger();
  const relay = await startRelay(t, { directory, redisUrl: undecodableRedisUrl(), waitForBroker: false, logger });
  const retried = () => lines.filter((l) => l.msg === 'broker subscription lost; retrying');
  await waitFor(() => retried().length >= 2, 'two failed attempts');
  t.same(
    retried().slice(0, 2).map((l) => ({ error: l.error, attempt: l.attempt, retryInMs: l.retryInMs })),
    [
      { error: 'URIError', attempt: 1, retryInMs: 1000 },
      { error: 'URIError', attempt: 2, retryInMs: 1000 },
    ],
    'each attempt is logged with a safe description and retried after the usual delay',
  );
  const health = await request(`${relay.url}/health`);
  await health.body.text();
  t.equal(health.statusCode, 200, '/health still answers');
  t.notOk(JSON.stringify(lines).includes('50%off'), 'the password is not logged');
  await relay.relay.stop();
  t.pass('stop() resolves: the loop ended without rejecting');
});
