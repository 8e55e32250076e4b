/**
 * The building directory's timeout covers connecting too. undici 6 acts on an abort signal only once the
 * request has a connected socket, so a directory whose host drops SYNs once held every lookup until
 * undici's own 10 s connect timeout, and then failed it as `unreachable`: the relay's subscribe acks, the
 * notification breach path and its stop plan all count on 2 s. A real listener whose accept queue is
 * full stands for the host: the kernel drops the SYNs of new connections to it.
 */
import t from 'tap';
import { Agent } from 'undici';
import { encodeClaims } from '../../shared/claims.js';
import { createBuildingDirectory, DirectoryError } from '../../shared/directory.js';
import { unacceptingUrl } from '../cloud/chat/support/unaccepting-listener.js';

t.test('a directory whose host never completes the connection is a timeout once the lookup timeout passes', async (t) => {
  const url = await unacceptingUrl(t);
  // undici's own connect timeout, far past the lookup's: without the fix the lookup fails by its hand.
  const agent = new Agent({ connect: { timeout: 10_000 } });
  t.teardown(() => agent.destroy());
  const directory = createBuildingDirectory({ baseUrl: url, timeoutMs: 300, cacheTtlMs: 0, dispatcher: agent });
  const claims = encodeClaims({ sub: 'system:test', memberships: [] });
  const failure = await directory.domainsOf('b1', claims).then(
    () => undefined,
    (err: unknown) => err,
  );
  t.ok(failure instanceof DirectoryError, 'the lookup fails with a directory error');
  t.match(failure, { code: 'timeout', message: 'building directory did not answer within 300 ms' }, 'a timeout, by the lookup\'s own limit');
});
