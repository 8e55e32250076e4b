/**
 * The document store adapter: device subscriptions, per-domain preferences and migration markers in a
 * MongoDB-wire database. Uses only what FerretDB 1.24 also supports: no array dot-paths or $elemMatch
 * on fields, no $lookup, no transactions. Query-side fields (`subscribedTypes`, `configuredTypes`) are
 * derived from `preferences` and written with it.
 *
 * FerretDB 1.x applies an update as read-then-write without isolation: its filter is checked on the
 * read, so the revision check does not stop a replica from writing back a record another replica changed
 * meanwhile. A write to one preferences record therefore holds a lock document, which FerretDB's unique
 * `_id` makes exclusive across replicas; writes are also queued in process, so replicas contend, not
 * requests. On MongoDB the revision check alone would be enough.
 *
 * A lock's `claimedAt` is stamped by its holder's wall clock, and replicas' clocks disagree (skew, an NTP
 * step). So no replica compares another's stamp with its own clock: a waiter takes a lock over only once
 * it has seen the same claim (owner and stamp) unchanged for a whole lease on its own monotonic clock,
 * as the chat service's conversation lock does.
 */
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { MongoServerError, ObjectId, type Collection, type Db, type Document } from 'mongodb';
import { ALERTABLE_METRICS } from '../../shared/catalog/metrics.js';
import { systemClock, type Clock } from '../../shared/ttl-cache.js';
import { applyPreferenceChanges, configuredTypesOf, subscribedTypesOf, type PreferenceChange, type PreferenceEntry } from './preferences.js';
import { MAX_ENDPOINT_LENGTH, endpointHref, type DeviceSubscription } from './requests.js';

export const COLLECTIONS = {
  devices: 'webpushsubscriptions',
  preferences: 'notificationsubscriptions',
  migrations: 'notificationmigrations',
  locks: 'notificationlocks',
} as const;

/** A preferences record as the API shows it. */
export interface PreferencesRecord {
  accountName: string;
  domainName: string;
  preferences: PreferenceEntry[];
  createdAt: string;
  updatedAt?: string;
}

/** A device that should receive a push. */
export interface Recipient {
  accountName: string;
  subscription: DeviceSubscription;
}

interface PreferencesDoc {
  _id: ObjectId;
  accountName: string;
  domainName: string;
  preferences: PreferenceEntry[];
  createdAt: string;
  updatedAt?: string;
  revision?: number;
  subscribedTypes?: string[];
  configuredTypes?: string[];
}

interface DeviceDoc {
  _id: ObjectId;
  accountName: string;
  endpoint: string;
  keys: { p256dh: string; auth: string };
  createdAt: string;
  updatedAt: string;
}

interface LockDoc {
  _id: string;
  owner: string;
  claimedAt: Date;
}

interface MigrationDoc extends LockDoc {
  state: 'running' | 'done';
  completedAt?: Date;
  modified?: number;
}

/**
 * How saving a device went. `held_by_another_account`: the endpoint is stored for another account and
 * the keys presented are not its keys, so nothing was changed.
 */
export type DeviceSave = 'saved' | 'held_by_another_account';

/**
 * Devices kept per account: a person's browsers and phones fit easily. Past it, subscribing a new
 * device deletes the account's least recently subscribed one, so subscribing always succeeds while one
 * account cannot make a fan-out (and the shared push pool) as long as it likes.
 */
export const MAX_DEVICES_PER_ACCOUNT = 50;

/** How a claim on the migration lock went. */
export type LockClaim = 'claimed' | 'held';

/** The port the routes, the delivery and the migration use. */
export interface NotificationStore {
  /**
   * Stores a device for an account, under its endpoint's href ({@link endpointHref}, as
   * parseDeviceSubscription answers it): the form every stored endpoint is in, so one push subscription is
   * one device whatever the spelling it was sent in. An endpoint already stored for another account is rebound only
   * when the same p256dh and auth keys are presented: only the browser holding the subscription has
   * them. The same account may always replace its keys (key rotation). Saving refreshes the device's
   * `updatedAt`; the account then keeps its {@link MAX_DEVICES_PER_ACCOUNT} most recently saved
   * devices, this one always among them, and the older ones are deleted.
   */
  saveDevice(accountName: string, subscription: DeviceSubscription): Promise<DeviceSave>;
  /**
   * Deletes the device at `endpoint`, when it still holds `keys`: a push service's 410 or 404 is about
   * the subscription the push was encrypted for, not one re-registered at the endpoint meanwhile.
   * Answers whether a device was deleted.
   */
  removeDevice(endpoint: string, keys: { p256dh: string; auth: string }): Promise<boolean>;
  setPreferences(accountName: string, domainName: string, changes: readonly PreferenceChange[]): Promise<PreferencesRecord>;
  preferencesOf(accountName: string): Promise<PreferencesRecord[]>;
  /**
   * Devices of accounts opted in to `metric` in `domainName`; with no metric, of accounts with any
   * alertable metric on there (manual alerts).
   */
  recipientsIn(domainName: string, metric: string | undefined): Promise<Recipient[]>;
  backfillDerivedFields(): Promise<number>;
  /**
   * Takes a lock under a unique id. A lock held by another owner is taken over once this replica has
   * seen it unchanged for `leaseMs` on its own monotonic clock: the first look at a lock only starts
   * that count, whatever its `claimedAt` says.
   */
  claimLock(id: string, owner: string, leaseMs: number): Promise<LockClaim>;
  releaseLock(id: string, owner: string): Promise<void>;
  isMarkerDone(id: string): Promise<boolean>;
  completeMarker(id: string, owner: string, modified: number): Promise<void>;
  /**
   * Switches `metric` on where temperature is on and no choice for `metric` is stored, each record
   * under its preferences lock. Answers how many records were switched on.
   */
  enableWhereTemperatureOn(metric: string): Promise<number>;
}

export interface MongoStoreOptions {
  /** The wall clock: what `createdAt`, `updatedAt` and a lock's `claimedAt` are stamped with. */
  clock?: Clock;
  /**
   * A clock that is never stepped (default `performance.now()`): what ages the recipient lists, times
   * a wait for a record lock, and counts how long another replica's lock has been seen unchanged.
   * Injectable so tests move it by hand.
   */
  monotonicClock?: Clock;
  /** How long a recipient list is reused; local writes clear it at once. 0 disables. Default 5000 ms. */
  recipientsCacheMs?: number;
  /**
   * How long a preferences write (the startup migration's too) waits for another replica's lock on its
   * record before it gives up, a 409 at the API. Default {@link RECORD_LOCK_WAIT_MS}.
   */
  recordLockWaitMs?: number;
}

const DUPLICATE_KEY = 11000;
const NAMESPACE_NOT_FOUND = 26;
const INDEX_NOT_FOUND = 27;
const WRITE_ATTEMPTS = 20;
const IN_CHUNK = 500;
/**
 * A record lock seen unchanged this long is taken over: its holder stopped mid-write. A write takes
 * milliseconds.
 */
const RECORD_LOCK_LEASE_MS = 10_000;
/**
 * How long a write waits for another replica's lock on its record before answering 409, by default.
 * Longer than the lease: the lease counts from this replica's first look at the lock, so a write that
 * finds a lock its holder left behind waits the lease out and lands, rather than giving up just before.
 */
export const RECORD_LOCK_WAIT_MS = 15_000;
/**
 * Sightings of other replicas' locks kept at most (see {@link MongoNotificationStore.sightLock}). Past it
 * the oldest is forgotten: a lock forgotten is only counted again from the next look.
 */
const MAX_LOCK_SIGHTINGS = 10_000;
/** Records the startup migration updates at once, each under its lock. */
const MIGRATION_WRITES_IN_FLIGHT = 8;

function isDuplicateKey(err: unknown): boolean {
  return err instanceof MongoServerError && err.code === DUPLICATE_KEY;
}

/**
 * Another replica's lock as this one saw it: which claim (its owner and stamp), and since when, on this
 * replica's monotonic clock, it has been seen unchanged.
 */
interface LockSighting {
  owner: string;
  claimedAt: number;
  since: number;
}

/** The id of the lock that makes taking over one claim of lock `id` exclusive ({@link MongoNotificationStore.takeOver}). */
function takeoverLockId(id: string, claim: { owner: string; claimedAt: number }): string {
  return `takeover:${JSON.stringify([id, claim.owner, claim.claimedAt])}`;
}

interface IndexInfo {
  name: string;
  key: Record<string, unknown>;
  unique?: boolean;
}

/** The indexes of a collection; none when the collection does not exist yet. */
async function indexesOf(collection: Collection<Document>): Promise<IndexInfo[]> {
  try {
    return (await collection.listIndexes().toArray()) as IndexInfo[];
  } catch (err) {
    if (err instanceof MongoServerError && err.code === NAMESPACE_NOT_FOUND) return [];
    throw err;
  }
}

/** Whether an index's key pattern is `wanted`: the same fields, in the same order and directions. */
function sameKeyPattern(key: Record<string, unknown>, wanted: Record<string, 1>): boolean {
  const have = Object.entries(key);
  const want = Object.entries(wanted);
  return have.length === want.length && have.every(([field, direction], i) => field === want[i]?.[0] && Number(direction) === want[i]?.[1]);
}

/** The href a stored endpoint is kept under now; undefined when it has none /subscribe would accept. */
function storedEndpointHref(endpoint: unknown): string | undefined {
  if (typeof endpoint !== 'string') return undefined;
  try {
    const href = endpointHref(new URL(endpoint));
    return href.length <= MAX_ENDPOINT_LENGTH ? href : undefined;
  } catch {
    return undefined;
  }
}

/** Whether device `a` was registered after `b`: a later `updatedAt`, or on a tie a later `_id`. */
function registeredAfter(a: { _id: ObjectId; updatedAt?: string }, b: { _id: ObjectId; updatedAt?: string }): boolean {
  const at = a.updatedAt ?? '';
  const bt = b.updatedAt ?? '';
  return at !== bt ? at > bt : a._id.toHexString() > b._id.toHexString();
}

function toRecord(doc: PreferencesDoc): PreferencesRecord {
  const record: PreferencesRecord = {
    accountName: doc.accountName,
    domainName: doc.domainName,
    preferences: (doc.preferences ?? []).map((p) => ({ notificationType: p.notificationType, isSubscribed: p.isSubscribed })),
    createdAt: doc.createdAt,
  };
  if (doc.updatedAt !== undefined) record.updatedAt = doc.updatedAt;
  return record;
}

/** Raised when a preferences record keeps changing under a write. */
export class WriteConflictError extends Error {
  constructor() {
    super('preferences record changed concurrently too many times');
    this.name = 'WriteConflictError';
  }
}

/**
 * The MongoDB adapter. `start()` creates the indexes; the client is owned by the caller.
 *
 * @example
 * const store = new MongoNotificationStore(client.db('notificationdb'));
 * await store.start();
 */
export class MongoNotificationStore implements NotificationStore {
  private readonly devices: Collection<DeviceDoc>;
  private readonly records: Collection<PreferencesDoc>;
  private readonly markers: Collection<MigrationDoc>;
  private readonly locks: Collection<LockDoc>;
  /** The migration lock, in the markers' collection. */
  private readonly migrationLocks: Collection<LockDoc>;
  private readonly clock: Clock;
  private readonly monotonic: Clock;
  private readonly cacheMs: number;
  private readonly recordLockWaitMs: number;
  private readonly writeQueues = new Map<string, Promise<unknown>>();
  /**
   * Recipient lists by domain and metric, oldest first: an entry is only ever added at the end. `at` is
   * on the monotonic clock: a wall clock stepped back would keep a list (pushes to devices opted out
   * since) as long as the step.
   */
  private readonly recipientCache = new Map<string, { at: number; value: Promise<Recipient[]> }>();
  /** Other replicas' locks this replica waits for, by collection and lock id, oldest first. */
  private readonly lockSightings = new Map<string, LockSighting>();

  constructor(db: Db, options: MongoStoreOptions = {}) {
    this.devices = db.collection<DeviceDoc>(COLLECTIONS.devices);
    this.records = db.collection<PreferencesDoc>(COLLECTIONS.preferences);
    this.markers = db.collection<MigrationDoc>(COLLECTIONS.migrations);
    this.locks = db.collection<LockDoc>(COLLECTIONS.locks);
    this.migrationLocks = db.collection<LockDoc>(COLLECTIONS.migrations);
    this.clock = options.clock ?? systemClock;
    this.monotonic = options.monotonicClock ?? (() => performance.now());
    this.cacheMs = options.recipientsCacheMs ?? 5000;
    this.recordLockWaitMs = options.recordLockWaitMs ?? RECORD_LOCK_WAIT_MS;
  }

  /**
   * Creates the indexes and brings stored endpoints to their href. An index whose keys and uniqueness
   * are already there, under any name, is left as it is: a database the seed's service created holds
   * them under the driver's default names (`endpoint_1`, `accountName_1`, `accountName_1_domainName_1`),
   * and creating ours beside them fails (IndexOptionsConflict).
   */
  async start(): Promise<void> {
    // An earlier version kept devices unique per (account, endpoint), so an endpoint can be stored
    // twice, and the unique index would not build. The browser holds one subscription per endpoint:
    // the newest registration is it.
    await this.ensureIndex(this.devices, { endpoint: 1 }, { unique: true, name: 'endpoint_unique' }, () => this.dropSupersededDevices());
    await this.ensureIndex(this.devices, { accountName: 1 }, { unique: false, name: 'accountName' });
    // Only a database whose (account, domain) index was not unique can hold a record twice; as for
    // devices, the newest write is kept.
    await this.ensureIndex(this.records, { accountName: 1, domainName: 1 }, { unique: true, name: 'account_domain_unique' }, () => this.dropSupersededPreferences());
    await this.ensureIndex(this.records, { domainName: 1 }, { unique: false, name: 'domainName' });
    await this.normaliseStoredEndpoints();
  }

  /**
   * Creates an index on `key` unless one with the same key pattern and uniqueness exists, whatever its
   * name. One with the same key pattern and the other uniqueness is replaced (a key pattern holds one
   * index), after `beforeUnique` has removed what a unique index would not build over.
   */
  private async ensureIndex<T extends Document>(
    collection: Collection<T>,
    key: Record<string, 1>,
    wanted: { unique: boolean; name: string },
    beforeUnique?: () => Promise<unknown>,
  ): Promise<void> {
    const sameKey = (await indexesOf(collection as unknown as Collection<Document>)).filter((index) => sameKeyPattern(index.key, key));
    if (sameKey.some((index) => (index.unique === true) === wanted.unique)) return;
    if (wanted.unique) await beforeUnique?.();
    for (const index of sameKey) {
      // Another replica starting at the same time may have dropped it first.
      await collection.dropIndex(index.name).catch((err: unknown) => {
        if (!(err instanceof MongoServerError && err.code === INDEX_NOT_FOUND)) throw err;
      });
    }
    await collection.createIndex(key, wanted);
  }

  /**
   * Deletes every device whose endpoint is also stored with a later `updatedAt` (or, on a tie, a later
   * `_id`), keeping one per endpoint. Answers how many were deleted.
   */
  dropSupersededDevices(): Promise<number> {
    return this.dropSuperseded(this.devices, ['endpoint']);
  }

  /** Deletes every preferences record of an (account, domain) also stored with a later write; as {@link dropSupersededDevices}. */
  dropSupersededPreferences(): Promise<number> {
    return this.dropSuperseded(this.records, ['accountName', 'domainName']);
  }

  /** Deletes every document whose `fields` another holds with a later `updatedAt` (then `_id`). */
  private async dropSuperseded<T extends { _id: ObjectId; updatedAt?: string }>(collection: Collection<T>, fields: readonly string[]): Promise<number> {
    const superseded: ObjectId[] = [];
    let previous: string | undefined;
    const docs = collection as unknown as Collection<Document>;
    const projection = Object.fromEntries([...fields, 'updatedAt'].map((field) => [field, 1]));
    const sort = Object.fromEntries([...fields.map((field) => [field, 1] as const), ['updatedAt', -1] as const, ['_id', -1] as const]);
    for await (const doc of docs.find({}, { projection, sort })) {
      const key = JSON.stringify(fields.map((field) => doc[field] as unknown));
      if (key === previous) superseded.push(doc._id as ObjectId);
      previous = key;
    }
    for (let at = 0; at < superseded.length; at += IN_CHUNK) {
      await docs.deleteMany({ _id: { $in: superseded.slice(at, at + IN_CHUNK) } });
    }
    return superseded.length;
  }

  /**
   * Rewrites every stored endpoint to its {@link endpointHref}. Versions before 2026-11-28 stored the
   * endpoint as sent, and saves now look devices up by href: a device stored as
   * `https://FCM.googleapis.com/…` would not be found by a subscribe of its endpoint, which could then
   * register it under a second account. Where the href is stored as well, the later registration is
   * kept, as when the unique index was first built. An endpoint whose href is longer than /subscribe
   * accepts stays as it is: no subscribe can name it any more, and FerretDB's index could not hold the
   * href. Runs at every start (a read of each device's endpoint), so what an older replica stored
   * during a rolling upgrade is brought over at the next one. Answers how many devices were rewritten
   * or dropped.
   */
  async normaliseStoredEndpoints(): Promise<number> {
    const stale: Array<{ device: Pick<DeviceDoc, '_id' | 'endpoint' | 'updatedAt'>; href: string }> = [];
    for await (const device of this.devices.find({}, { projection: { endpoint: 1, updatedAt: 1 } })) {
      const href = storedEndpointHref(device.endpoint);
      if (href !== undefined && href !== device.endpoint) stale.push({ device, href });
    }
    for (const { device, href } of stale) await this.moveToHref(device, href);
    if (stale.length > 0) this.changed();
    return stale.length;
  }

  /** Stores a device under `href`, or deletes it when a later registration is stored there. */
  private async moveToHref(device: Pick<DeviceDoc, '_id' | 'endpoint' | 'updatedAt'>, href: string): Promise<void> {
    for (let attempt = 0; attempt < WRITE_ATTEMPTS; attempt++) {
      const holder = await this.devices.findOne({ endpoint: href }, { projection: { _id: 1, updatedAt: 1 } });
      // Moved already, by another replica starting at the same time: deleting "the holder" would delete it.
      if (holder?._id.equals(device._id)) return;
      if (holder && registeredAfter(holder, device)) {
        await this.devices.deleteOne({ _id: device._id, endpoint: device.endpoint });
        return;
      }
      // Only as it was read: one subscribed again meanwhile stays, and the update below then fails and
      // compares again.
      if (holder) await this.devices.deleteOne({ _id: holder._id, updatedAt: holder.updatedAt ?? null });
      try {
        await this.devices.updateOne({ _id: device._id, endpoint: device.endpoint }, { $set: { endpoint: href } });
        return;
      } catch (err) {
        if (!isDuplicateKey(err)) throw err; // registered at the href meanwhile: compare again
      }
    }
    throw new Error(`device ${device._id.toHexString()}: its endpoint's href kept being registered meanwhile; start again`);
  }

  private now(): string {
    return new Date(this.clock()).toISOString();
  }

  private changed(): void {
    this.recipientCache.clear();
  }

  async saveDevice(accountName: string, subscription: DeviceSubscription): Promise<DeviceSave> {
    const now = this.now();
    const { endpoint, keys } = subscription;
    const writable = { endpoint, $or: [{ accountName }, { 'keys.p256dh': keys.p256dh, 'keys.auth': keys.auth }] };
    const update = {
      $set: { accountName, keys: { p256dh: keys.p256dh, auth: keys.auth }, updatedAt: now },
      $setOnInsert: { endpoint, createdAt: now },
    };
    try {
      await this.devices.updateOne(writable, update, { upsert: true });
    } catch (err) {
      // The endpoint is stored but not writable by this caller, or two upserts of a new endpoint ran at
      // once and this one lost the insert: only in the second case does the update now match.
      if (!isDuplicateKey(err)) throw err;
      const retried = await this.devices.updateOne(writable, { $set: update.$set });
      if (retried.matchedCount === 0) return 'held_by_another_account';
    }
    try {
      await this.dropDevicesOverLimit(accountName, endpoint);
    } finally {
      this.changed();
    }
    return 'saved';
  }

  /**
   * Deletes the account's devices past its newest {@link MAX_DEVICES_PER_ACCOUNT}, by `updatedAt` (then `_id`), keeping
   * `saved` (the device just saved) whatever its timestamp. Runs after every save rather than as a check
   * before it, which FerretDB could not make atomic: of concurrent saves, the one whose read comes last
   * sees them all, so the account is back within the limit once they are done.
   */
  private async dropDevicesOverLimit(accountName: string, saved: string): Promise<void> {
    const over = await this.devices
      .find({ accountName, endpoint: { $ne: saved } }, { projection: { _id: 1, updatedAt: 1 } })
      .sort({ updatedAt: -1, _id: -1 })
      .skip(MAX_DEVICES_PER_ACCOUNT - 1)
      .toArray();
    // Only a device still as it was read: one subscribed again meanwhile (now the newest), or taken
    // over by another account, is not this sweep's to delete.
    for (let at = 0; at < over.length; at += IN_CHUNK) {
      const unchanged = over.slice(at, at + IN_CHUNK).map((d) => ({ _id: d._id, accountName, updatedAt: d.updatedAt ?? null }));
      await this.devices.deleteMany({ $or: unchanged });
    }
  }

  async removeDevice(endpoint: string, keys: { p256dh: string; auth: string }): Promise<boolean> {
    const result = await this.devices.deleteOne({ endpoint, 'keys.p256dh': keys.p256dh, 'keys.auth': keys.auth });
    this.changed();
    return result.deletedCount > 0;
  }

  /** Runs writes to one record one after another within this process. */
  private serialized<T>(key: string, task: () => Promise<T>): Promise<T> {
    const previous = this.writeQueues.get(key) ?? Promise.resolve();
    const run = previous.then(task, task);
    const tail = run.catch(() => undefined);
    this.writeQueues.set(key, tail);
    void tail.then(() => {
      if (this.writeQueues.get(key) === tail) this.writeQueues.delete(key);
    });
    return run;
  }

  async setPreferences(accountName: string, domainName: string, changes: readonly PreferenceChange[]): Promise<PreferencesRecord> {
    try {
      return await this.underPreferencesLock(accountName, domainName, () => this.writePreferences(accountName, domainName, changes));
    } finally {
      this.changed();
    }
  }

  /** Runs a write of one preferences record: after this replica's writes of it, holding its record lock. */
  private underPreferencesLock<T>(accountName: string, domainName: string, task: () => Promise<T>): Promise<T> {
    // A stored string cannot hold NUL, so the lock is named by the pair as JSON.
    return this.serialized(`${accountName}\u0000${domainName}`, () => this.underRecordLock(`preferences:${JSON.stringify([accountName, domainName])}`, task));
  }

  /** Runs a write holding the record's lock, waiting for another replica's; 409 when it is held too long. */
  private async underRecordLock<T>(id: string, task: () => Promise<T>): Promise<T> {
    const owner = new ObjectId().toHexString();
    const giveUpAt = this.monotonic() + this.recordLockWaitMs;
    while ((await this.claimIn(this.locks, id, owner, RECORD_LOCK_LEASE_MS, {})) === 'held') {
      if (this.monotonic() >= giveUpAt) throw new WriteConflictError();
      await sleep(5 + Math.random() * 20);
    }
    try {
      return await task();
    } finally {
      await this.locks.deleteOne({ _id: id, owner });
    }
  }

  private async writePreferences(accountName: string, domainName: string, changes: readonly PreferenceChange[]): Promise<PreferencesRecord> {
    for (let attempt = 0; attempt < WRITE_ATTEMPTS; attempt++) {
      const existing = await this.records.findOne({ accountName, domainName });
      const now = this.now();
      if (!existing) {
        const preferences = applyPreferenceChanges([], changes);
        const doc: PreferencesDoc = {
          _id: new ObjectId(),
          accountName,
          domainName,
          preferences,
          createdAt: now,
          updatedAt: now,
          revision: 1,
          subscribedTypes: subscribedTypesOf(preferences),
          configuredTypes: configuredTypesOf(preferences),
        };
        try {
          await this.records.insertOne(doc);
          return toRecord(doc);
        } catch (err) {
          if (isDuplicateKey(err)) continue; // created meanwhile: apply the change to it
          throw err;
        }
      }
      const preferences = applyPreferenceChanges(existing.preferences ?? [], changes);
      if (await this.replacePreferences(existing, preferences, now)) return toRecord({ ...existing, preferences, updatedAt: now });
    }
    throw new WriteConflictError();
  }

  /** Writes `preferences` over a record read as `existing`, when no write came between; whether it did. */
  private async replacePreferences(existing: PreferencesDoc, preferences: PreferenceEntry[], now: string): Promise<boolean> {
    const result = await this.records.updateOne(
      { _id: existing._id, revision: existing.revision === undefined ? { $exists: false } : existing.revision },
      {
        $set: {
          preferences,
          updatedAt: now,
          revision: (existing.revision ?? 0) + 1,
          subscribedTypes: subscribedTypesOf(preferences),
          configuredTypes: configuredTypesOf(preferences),
        },
      },
    );
    return result.matchedCount === 1;
  }

  async preferencesOf(accountName: string): Promise<PreferencesRecord[]> {
    const docs = await this.records.find({ accountName }).sort({ domainName: 1 }).toArray();
    return docs.map(toRecord);
  }

  recipientsIn(domainName: string, metric: string | undefined): Promise<Recipient[]> {
    if (this.cacheMs <= 0) return this.queryRecipients(domainName, metric);
    const key = `${domainName}\u0000${metric ?? ''}`;
    const now = this.monotonic();
    this.dropExpiredRecipients(now);
    const hit = this.recipientCache.get(key);
    if (hit && now - hit.at < this.cacheMs) return hit.value;
    this.recipientCache.delete(key);
    const value = this.queryRecipients(domainName, metric);
    this.recipientCache.set(key, { at: now, value });
    value.catch(() => {
      if (this.recipientCache.get(key)?.value === value) this.recipientCache.delete(key);
    });
    return value;
  }

  /**
   * Forgets the recipient lists that have expired, oldest first, up to the first one still fresh: a list
   * asked for once is not kept, with its whole recipient array, for the life of the process.
   */
  private dropExpiredRecipients(now: number): void {
    for (const [key, entry] of this.recipientCache) {
      if (now - entry.at < this.cacheMs) return;
      this.recipientCache.delete(key);
    }
  }

  /** How many recipient lists are held (expired ones are dropped on the next lookup); for tests. */
  get cachedRecipientLists(): number {
    return this.recipientCache.size;
  }

  private async queryRecipients(domainName: string, metric: string | undefined): Promise<Recipient[]> {
    const opted = await this.records
      .find({ domainName, subscribedTypes: metric !== undefined ? metric : { $in: [...ALERTABLE_METRICS] } })
      .project<{ accountName: string }>({ _id: 0, accountName: 1 })
      .toArray();
    const accounts = [...new Set(opted.map((r) => r.accountName))];
    const recipients: Recipient[] = [];
    for (let i = 0; i < accounts.length; i += IN_CHUNK) {
      const devices = await this.devices.find({ accountName: { $in: accounts.slice(i, i + IN_CHUNK) } }).toArray();
      for (const device of devices) {
        recipients.push({ accountName: device.accountName, subscription: { endpoint: device.endpoint, keys: { p256dh: device.keys.p256dh, auth: device.keys.auth } } });
      }
    }
    return recipients;
  }

  async backfillDerivedFields(): Promise<number> {
    let updated = 0;
    const legacy = this.records.find({ $or: [{ subscribedTypes: { $exists: false } }, { configuredTypes: { $exists: false } }] });
    for await (const doc of legacy) {
      const preferences = Array.isArray(doc.preferences) ? doc.preferences : [];
      const result = await this.records.updateOne(
        { _id: doc._id, $or: [{ subscribedTypes: { $exists: false } }, { configuredTypes: { $exists: false } }] },
        { $set: { subscribedTypes: subscribedTypesOf(preferences), configuredTypes: configuredTypesOf(preferences) } },
      );
      updated += result.modifiedCount;
    }
    if (updated > 0) this.changed();
    return updated;
  }

  claimLock(id: string, owner: string, leaseMs: number): Promise<LockClaim> {
    return this.claimIn(this.migrationLocks, id, owner, leaseMs, { state: 'running' });
  }

  /**
   * Takes the lock `id` in `locks`; `extra` rides along on a new lock document (the migration's state).
   * A lock held by another claim is taken over once this replica has seen that claim unchanged for
   * `leaseMs` ({@link sightLock}): never by comparing its `claimedAt`, stamped by another replica's
   * clock, with this one's.
   */
  private async claimIn(locks: Collection<LockDoc>, id: string, owner: string, leaseMs: number, extra: Partial<MigrationDoc>): Promise<LockClaim> {
    if (await this.insertLock(locks, { ...extra, _id: id, owner, claimedAt: new Date(this.clock()) })) {
      this.forgetLock(locks, id);
      return 'claimed';
    }
    // Timed before the read is sent, and sighted after its answer: a takeover then needs the same claim
    // in two reads a whole lease apart, however slow either answer was.
    const askedAt = this.monotonic();
    const lock = await locks.findOne({ _id: id });
    if (!lock) {
      this.forgetLock(locks, id);
      return this.claimIn(locks, id, owner, leaseMs, extra);
    }
    if (askedAt - this.sightLock(locks, lock).since < leaseMs) return 'held';
    return this.takeOver(locks, lock, owner, leaseMs, extra);
  }

  /**
   * Records a look at `lock`: the sighting of the same claim (owner and `claimedAt`) while it has not
   * changed, else a new one from now. Kept across waits, so a write that gave up (409) does not restart
   * the count for the next write of the record.
   */
  private sightLock(locks: Collection<LockDoc>, lock: LockDoc): LockSighting {
    const key = JSON.stringify([locks.collectionName, lock._id]);
    const claimedAt = lock.claimedAt.getTime();
    const seen = this.lockSightings.get(key);
    if (seen && seen.owner === lock.owner && seen.claimedAt === claimedAt) return seen;
    this.forgetLock(locks, lock._id);
    const sighting = { owner: lock.owner, claimedAt, since: this.monotonic() };
    this.lockSightings.set(key, sighting);
    if (this.lockSightings.size > MAX_LOCK_SIGHTINGS) {
      const oldest = this.lockSightings.keys().next().value;
      if (oldest !== undefined) this.lockSightings.delete(oldest);
    }
    return sighting;
  }

  /**
   * Forgets the sighting of lock `id` (claimed, gone, or changed), and that of the lock taking its claim
   * over, which can no longer be waited for.
   */
  private forgetLock(locks: Collection<LockDoc>, id: string): void {
    const key = JSON.stringify([locks.collectionName, id]);
    const seen = this.lockSightings.get(key);
    if (!seen) return;
    this.lockSightings.delete(key);
    this.forgetLock(locks, takeoverLockId(id, seen));
  }

  /** Inserts a lock document; false when one with its `_id` exists (the unique `_id` is what is exclusive). */
  private async insertLock(locks: Collection<LockDoc>, lock: LockDoc & Partial<MigrationDoc>): Promise<boolean> {
    try {
      await locks.insertOne(lock);
      return true;
    } catch (err) {
      if (isDuplicateKey(err)) return false;
      throw err;
    }
  }

  /**
   * Takes over a lock whose holder stopped without releasing it. Replicas polling the same expired lock
   * all try at once, and FerretDB 1.x makes neither an update nor a delete exclusive: each checks its
   * filter on a read and then writes by `_id`, so two replicas could both set themselves as the owner,
   * or one delete the lock the other had just inserted. So the takeover of this one expired lock (its
   * owner and claim time) is itself a lock, taken like any other: only its holder deletes the expired
   * lock, exactly the claim it saw, and inserts its own; the others answer `held` and keep waiting. A
   * takeover lock left by a replica that stopped mid-takeover is taken over the same way.
   */
  private async takeOver(locks: Collection<LockDoc>, expired: LockDoc, owner: string, leaseMs: number, extra: Partial<MigrationDoc>): Promise<LockClaim> {
    const takeoverId = takeoverLockId(expired._id, { owner: expired.owner, claimedAt: expired.claimedAt.getTime() });
    if ((await this.claimIn(locks, takeoverId, owner, leaseMs, {})) === 'held') return 'held';
    try {
      await locks.deleteOne({ _id: expired._id, owner: expired.owner, claimedAt: expired.claimedAt });
      this.forgetLock(locks, expired._id);
      // A replica that found no lock at all may have inserted its own meanwhile: then it holds it.
      return (await this.insertLock(locks, { ...extra, _id: expired._id, owner, claimedAt: new Date(this.clock()) })) ? 'claimed' : 'held';
    } finally {
      await locks.deleteOne({ _id: takeoverId, owner });
    }
  }

  async releaseLock(id: string, owner: string): Promise<void> {
    await this.markers.deleteOne({ _id: id, owner });
  }

  async isMarkerDone(id: string): Promise<boolean> {
    return (await this.markers.findOne({ _id: id }))?.state === 'done';
  }

  async completeMarker(id: string, owner: string, modified: number): Promise<void> {
    const now = new Date(this.clock());
    await this.markers.updateOne(
      { _id: id },
      { $set: { state: 'done', owner, completedAt: now, modified }, $setOnInsert: { claimedAt: now } },
      { upsert: true },
    );
  }

  /**
   * Record by record, each under its lock like a preferences write: FerretDB 1.x writes whole documents
   * back, so an `updateMany` running while another replica saved a choice on one of its records wrote
   * the record back as it had read it, and the choice was lost. The record is read again under the lock
   * and left alone when its temperature is no longer on or `metric` has a choice by then.
   */
  async enableWhereTemperatureOn(metric: string): Promise<number> {
    const candidates = await this.records
      .find({ $and: [{ subscribedTypes: 'temperature' }, { configuredTypes: { $ne: metric } }] })
      .project<{ accountName: string; domainName: string }>({ _id: 0, accountName: 1, domainName: 1 })
      .toArray();
    let modified = 0;
    let next = 0;
    let failed = false;
    const worker = async (): Promise<void> => {
      for (let at = next++; at < candidates.length && !failed; at = next++) {
        const { accountName, domainName } = candidates[at] as { accountName: string; domainName: string };
        try {
          if (await this.underPreferencesLock(accountName, domainName, () => this.enableIn(accountName, domainName, metric))) modified++;
        } catch (err) {
          failed = true; // the others stop too: the migration fails and is run again at the next start
          throw err;
        }
      }
    };
    try {
      await Promise.all(Array.from({ length: MIGRATION_WRITES_IN_FLIGHT }, worker));
    } finally {
      if (modified > 0) this.changed();
    }
    return modified;
  }

  /** Switches `metric` on in one record, holding its lock, when temperature is on and `metric` has no choice. */
  private async enableIn(accountName: string, domainName: string, metric: string): Promise<boolean> {
    for (let attempt = 0; attempt < WRITE_ATTEMPTS; attempt++) {
      const existing = await this.records.findOne({ accountName, domainName });
      const stored = Array.isArray(existing?.preferences) ? existing.preferences : [];
      if (!existing || !subscribedTypesOf(stored).includes('temperature') || configuredTypesOf(stored).includes(metric)) return false;
      const preferences = applyPreferenceChanges(stored, [{ notificationType: metric, isSubscribed: true }]);
      if (await this.replacePreferences(existing, preferences, this.now())) return true;
    }
    throw new WriteConflictError();
  }
}
