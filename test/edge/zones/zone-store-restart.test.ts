import t from 'tap';
import { join } from 'node:path';
import { applyPoll, transitionWindow, zoneCounts } from '../../../edge/src/zones/tracker.js';
import { openSqliteZoneStore } from '../../../edge/src/zones/store.js';
import type { ApObservation, TrackerConfig } from '../../../edge/src/zones/types.js';

// A restart between any two polls must leave every count, dwell, frozen count and transition where a
// process that never stopped would have them.
const config: TrackerConfig = { switchPolls: 3, switchMarginDb: 8, frozenPolls: 4, absentPolls: 2, transitionWindowPolls: 3 };
const ZONES = ['lobby', 'cafe'];
const obs = (ap: string, zone: string, stations: Record<string, number> | null): ApObservation =>
  stations === null
    ? { ap, zone, answered: false }
    : { ap, zone, answered: true, stations: Object.entries(stations).map(([device, rssiDbm]) => ({ device, rssiDbm })) };

/** Applies `polls`, closing and reopening the store after each one, and returns what each poll counted. */
function withRestarts(path: string, polls: ApObservation[][]) {
  const counts: Array<Record<string, number>> = [];
  const windows: Array<ReturnType<typeof transitionWindow>> = [];
  for (const aps of polls) {
    const store = openSqliteZoneStore(path);
    try {
      const outcome = applyPoll(store.load(), { aps }, config);
      store.save(outcome);
      counts.push(zoneCounts(outcome.state, ZONES));
      windows.push(transitionWindow(outcome.state, config));
    } finally {
      store.close();
    }
  }
  return { counts, windows };
}

/** The same polls in one process. */
function withoutRestarts(path: string, polls: ApObservation[][]) {
  const store = openSqliteZoneStore(path);
  try {
    let state = store.load();
    const counts: Array<Record<string, number>> = [];
    const windows: Array<ReturnType<typeof transitionWindow>> = [];
    for (const aps of polls) {
      const outcome = applyPoll(state, { aps }, config);
      store.save(outcome);
      state = outcome.state;
      counts.push(zoneCounts(state, ZONES));
      windows.push(transitionWindow(state, config));
    }
    return { counts, windows };
  } finally {
    store.close();
  }
}

t.test('a restart after every poll counts, moves and expires exactly as one process does', async (t) => {
  const polls: ApObservation[][] = [
    // d1 in the lobby, d2 in the cafe
    [obs('ap-l', 'lobby', { d1: -60 }), obs('ap-c', 'cafe', { d2: -55 })],
    // d1 drifts to the cafe, louder there by less than the margin: the dwell runs across the restarts
    [obs('ap-l', 'lobby', { d1: -66 }), obs('ap-c', 'cafe', { d1: -61, d2: -55 })],
    [obs('ap-l', 'lobby', { d1: -66 }), obs('ap-c', 'cafe', { d1: -61, d2: -55 })],
    [obs('ap-l', 'lobby', { d1: -66 }), obs('ap-c', 'cafe', { d1: -61, d2: -55 })],
    // the cafe AP reboots: both are frozen in the cafe until the ceiling
    [obs('ap-l', 'lobby', {}), obs('ap-c', 'cafe', null)],
    [obs('ap-l', 'lobby', {}), obs('ap-c', 'cafe', null)],
    [obs('ap-l', 'lobby', {}), obs('ap-c', 'cafe', null)],
    [obs('ap-l', 'lobby', {}), obs('ap-c', 'cafe', null)],
    [obs('ap-l', 'lobby', {}), obs('ap-c', 'cafe', {})],
  ];
  const restarted = withRestarts(join(t.testdir({}), 'zones.sqlite'), polls);
  const continuous = withoutRestarts(join(t.testdir({}), 'zones.sqlite'), polls);
  t.same(restarted, continuous);
  t.same(
    restarted.counts.map((c) => `${c.lobby}/${c.cafe}`),
    ['1/1', '1/1', '1/1', '0/2', '0/2', '0/2', '0/2', '0/0', '0/0'],
    'the move lands on the third poll in a row, once; the frozen pair is dropped on the fourth silent poll',
  );
  t.same(
    restarted.windows.map((w) => w.map((p) => `${p.from}>${p.to}:${p.count}`).join(' ')),
    ['', '', '', 'lobby>cafe:1', 'lobby>cafe:1', 'lobby>cafe:1', 'lobby>cafe:0', '', ''],
    'the move is reported once per window poll, never twice after a restart',
  );
});
