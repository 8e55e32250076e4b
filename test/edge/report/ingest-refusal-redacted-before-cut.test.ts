/**
 * The collector logs an ingest's refusal, which may quote a MAC anywhere (a proxy's 403 page echoing
 * what it saw). The reason was cut at 200 characters and redacted after: a MAC straddling the cut was
 * logged as a few octets no pattern matches. It is redacted first, then cut, as doctor does.
 */
import t, { type Test } from 'tap';
import { Writable } from 'node:stream';
import { createLogger } from '../../../shared/logger.js';
import { createBatchPoster } from '../../../edge/src/report/poster.js';
import { printableLine } from '../../../edge/src/ui/printable.js';
import { oneApLobby, setupDaemon } from '../support/daemon.js';
import { startScriptedIngest } from './scripted-ingest.js';

const MAC = '3c:22:fb:01:02:03';
/** Where the poster cuts a reason. */
const CUT = 200;

/** A proxy's 403 page whose text, as one line, has MAC start 13 characters before the cut. */
function forbiddenPage(): string {
  const head = '<html><head><title>403 Forbidden</title></head>\n<body>\n<h1>Forbidden</h1>\n<p>Access denied by the building firewall policy for station ';
  // As one line: the head (its last space trimmed), a space, the padding, a space, the MAC.
  const lead = printableLine(head).length;
  const pad = 'x'.repeat(CUT - 13 - lead - 2);
  return `${head}${pad} ${MAC} on port 443; contact your network administrator.</p>\n</body></html>\n`;
}

/** An ingest stand-in that refuses every batch with the page. */
async function refusingIngest(t: Test, page: string) {
  const { url, received } = await startScriptedIngest(t, [{ status: 403, body: page, type: 'text/html' }], { every: true });
  return { url, refused: () => received.length };
}

t.test('a refusal quoting a MAC across the cut is logged without any part of it', async (t) => {
  const page = forbiddenPage();
  const at = printableLine(page).indexOf(MAC);
  t.ok(at < CUT && at + MAC.length > CUT, `the MAC straddles character ${CUT} (it starts at ${at})`);
  const ingest = await refusingIngest(t, page);

  const lines: string[] = [];
  const stream = new Writable({
    write(chunk, _encoding, done) {
      lines.push(...String(chunk).split('\n').filter(Boolean));
      done();
    },
  });
  const logger = createLogger('lintel-edge', { level: 'debug', destination: stream });
  const { config, poller } = oneApLobby('aa:bb:cc:00:00:01');
  const poster = createBatchPoster({ url: ingest.url, secret: 'k', timeoutMs: 10_000 });
  t.teardown(() => poster.close());
  const { daemon } = setupDaemon(t, config, poller, { poster, logger });

  const report = await daemon.tick();
  t.equal(ingest.refused(), 1, 'the batch reached the ingest and was refused');
  t.equal(report.batch.delivery, 'rejected');
  const refusal = lines.find((line) => line.includes('ingest rejected the batch'));
  t.ok(refusal, 'the refusal is logged');
  t.match(JSON.parse(refusal ?? '{}'), { status: 403, reason: /Access denied by the building firewall policy for station x+ \[mac\]/ }, 'with its reason, the MAC redacted whole');
  const prefix = MAC.slice(0, 5);
  t.same(
    lines.filter((line) => line.includes(prefix)),
    [],
    'no log line holds the start of the MAC',
  );
  t.notOk(report.batch.reason?.includes(prefix), `nor does the tick's reason: ${report.batch.reason}`);
});
