/** Reloads one at a time: SIGHUPs during a reload are served by one more reload, none after close. */
import t from 'tap';
import { ReloadQueue } from '../../../edge/src/commands/reload.js';

/** A reload that runs until the test lets it finish, counting how many ran and how many at once. */
function controlledReload() {
  const finishers: Array<() => void> = [];
  const stats = { runs: 0, active: 0, mostAtOnce: 0 };
  const reload = () => {
    stats.runs++;
    stats.active++;
    stats.mostAtOnce = Math.max(stats.mostAtOnce, stats.active);
    return new Promise<void>((resolve) =>
      finishers.push(() => {
        stats.active--;
        resolve();
      }),
    );
  };
  /** Finishes the reload in progress and lets the queue start the next one, if any. */
  const finish = async () => {
    finishers.shift()!();
    await new Promise((r) => setImmediate(r));
  };
  return { reload, stats, finish };
}

t.test('requests during a reload are coalesced into one more, run after it', async (t) => {
  const { reload, stats, finish } = controlledReload();
  const queue = new ReloadQueue(reload);
  t.equal(queue.request(), 'started');
  t.equal(queue.request(), 'queued');
  t.equal(queue.request(), 'queued');
  t.equal(stats.runs, 1, 'one at a time');
  await finish();
  t.equal(stats.runs, 2, 'the queued requests run as one reload');
  await finish();
  t.equal(stats.runs, 2, 'and nothing more');
  t.equal(stats.mostAtOnce, 1, 'never two at once');
  t.equal(queue.request(), 'started', 'idle again: a request starts at once');
  await finish();
  await queue.close();
});

t.test('close drops a queued reload, waits for the one in progress, and ignores later requests', async (t) => {
  const { reload, stats, finish } = controlledReload();
  const queue = new ReloadQueue(reload);
  queue.request();
  queue.request();
  let closed = false;
  const closing = queue.close().then(() => (closed = true));
  await new Promise((r) => setImmediate(r));
  t.equal(closed, false, 'waits for the reload in progress');
  t.equal(queue.request(), 'ignored');
  await finish();
  await closing;
  t.equal(stats.runs, 1, 'the queued reload never ran');
});
