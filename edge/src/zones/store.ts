/**
 * Where the tracker's state lives between polls and across restarts. The port is what the daemon needs;
 * the SQLite adapter is the gateway's.
 */
import { openDatabase, type SqliteDatabase } from '../storage/sqlite.js';
import { zoneMigrations } from './migrations.js';
import type { PollOutcome, TrackedDevice, TrackerState, TransitionEntry } from './types.js';

export interface ZoneStore {
  /** The state saved last, or an empty state. */
  load(): TrackerState;
  /** Persists what one poll changed, atomically. */
  save(outcome: PollOutcome): void;
  /**
   * Binds the stored ids to the device key by a fingerprint of it. On a new key the stored devices are
   * meaningless (their ids cannot recur), so they are cleared; answers whether that happened.
   */
  bindKey(fingerprint: string): 'kept' | 'cleared';
  close(): void;
}

interface DeviceRow {
  device_id: string;
  zone: string;
  ap: string;
  rssi_dbm: number;
  challenger_zone: string | null;
  challenger_polls: number;
  frozen_polls: number;
  absent_polls: number;
  last_heard_poll: number;
}

/**
 * The SQLite zone store (WAL, migrations). Each save is one transaction, so a crash leaves the state of
 * one poll or the next, never half of one.
 *
 * @example
 * const store = openSqliteZoneStore('/var/lib/lintel-edge/zones.sqlite');
 * let state = store.load();
 */
export function openSqliteZoneStore(path: string): ZoneStore {
  const db: SqliteDatabase = openDatabase(path, zoneMigrations());
  const upsert = db.prepare(
    `INSERT INTO tracked_devices (device_id, zone, ap, rssi_dbm, challenger_zone, challenger_polls, frozen_polls, absent_polls, last_heard_poll)
     VALUES (@device_id, @zone, @ap, @rssi_dbm, @challenger_zone, @challenger_polls, @frozen_polls, @absent_polls, @last_heard_poll)
     ON CONFLICT (device_id) DO UPDATE SET zone = excluded.zone, ap = excluded.ap, rssi_dbm = excluded.rssi_dbm,
       challenger_zone = excluded.challenger_zone, challenger_polls = excluded.challenger_polls,
       frozen_polls = excluded.frozen_polls, absent_polls = excluded.absent_polls, last_heard_poll = excluded.last_heard_poll`,
  );
  const remove = db.prepare('DELETE FROM tracked_devices WHERE device_id = ?');
  const clearTransitions = db.prepare('DELETE FROM zone_transitions');
  const addTransition = db.prepare('INSERT INTO zone_transitions (poll, from_zone, to_zone, count) VALUES (?, ?, ?, ?)');
  const setMeta = db.prepare('INSERT INTO tracker_meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value');
  const getMeta = db.prepare('SELECT value FROM tracker_meta WHERE key = ?');

  const save = db.transaction((outcome: PollOutcome) => {
    const { devices, transitions, poll, transitionWindowPolls } = outcome.state;
    for (const id of outcome.changed) {
      const d = devices.get(id);
      if (!d) continue;
      upsert.run({
        device_id: id,
        zone: d.zone,
        ap: d.ap,
        rssi_dbm: d.rssiDbm,
        challenger_zone: d.challengerZone,
        challenger_polls: d.challengerPolls,
        frozen_polls: d.frozenPolls,
        absent_polls: d.absentPolls,
        last_heard_poll: d.lastHeardPoll,
      });
    }
    for (const { device } of outcome.removed) remove.run(device);
    clearTransitions.run();
    for (const t of transitions) addTransition.run(t.poll, t.from, t.to, t.count);
    setMeta.run('poll', String(poll));
    // so that a restart with a shorter window still reports the pairs that fall out of it once with 0
    setMeta.run('transition_window_polls', String(transitionWindowPolls));
  });

  const clear = db.transaction(() => {
    db.exec('DELETE FROM tracked_devices; DELETE FROM zone_transitions;');
    setMeta.run('poll', '0');
    setMeta.run('transition_window_polls', '0');
  });

  return {
    load() {
      const poll = Number((getMeta.get('poll') as { value: string } | undefined)?.value ?? 0);
      // 0 for a state saved before the window was recorded: a shrink at its first start goes unseen
      const transitionWindowPolls = Number((getMeta.get('transition_window_polls') as { value: string } | undefined)?.value ?? 0);
      const devices = new Map<string, TrackedDevice>();
      for (const row of db.prepare('SELECT * FROM tracked_devices').iterate() as IterableIterator<DeviceRow>) {
        devices.set(row.device_id, {
          zone: row.zone,
          ap: row.ap,
          rssiDbm: row.rssi_dbm,
          challengerZone: row.challenger_zone,
          challengerPolls: row.challenger_polls,
          frozenPolls: row.frozen_polls,
          absentPolls: row.absent_polls,
          lastHeardPoll: row.last_heard_poll,
        });
      }
      const transitions = (
        db.prepare('SELECT poll, from_zone, to_zone, count FROM zone_transitions ORDER BY poll, from_zone, to_zone').all() as Array<{
          poll: number;
          from_zone: string;
          to_zone: string;
          count: number;
        }>
      ).map((r): TransitionEntry => ({ poll: r.poll, from: r.from_zone, to: r.to_zone, count: r.count }));
      return { poll, devices, transitions, transitionWindowPolls };
    },
    save: (outcome) => save(outcome),
    bindKey(fingerprint) {
      const stored = (getMeta.get('key_fingerprint') as { value: string } | undefined)?.value;
      if (stored === fingerprint) return 'kept';
      const hadDevices = (db.prepare('SELECT COUNT(*) AS n FROM tracked_devices').get() as { n: number }).n > 0;
      if (stored !== undefined || hadDevices) clear();
      setMeta.run('key_fingerprint', fingerprint);
      return stored !== undefined || hadDevices ? 'cleared' : 'kept';
    },
    close() {
      if (db.open) db.close();
    },
  };
}
