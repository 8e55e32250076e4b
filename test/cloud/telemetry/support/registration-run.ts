/**
 * A run of the building-registrations consumer, for its tests: messages sent to a topic of their own,
 * then the whole service started over a fresh database and a fake directory to read them.
 */
import pg from 'pg';
import type { Teardown } from '../../../support/stack.js';
import { startFakeDirectory, type FakeDirectory } from '../../../support/fake-directory.js';
import type { TelemetryService } from '../../../../cloud/telemetry/service.js';
import { startBrokeredService } from './brokered-service.js';
import { freshPgDatabase, quietAtTeardown } from './database.js';
import { createTopics, produce, uniqueName } from './kafka.js';

export interface RegistrationRun {
  /** Answers no building until the test sets one; its `unexpected` calls are the test's to check. */
  directory: FakeDirectory;
  /** The service's database. */
  pool: pg.Pool;
  service: TelemetryService;
  /** Where further registrations go. */
  registrationsTopic: string;
  /** How many registrations the consumer has counted with `outcome` (`registered`, `malformed`, …); 0 before the first. */
  counted(outcome: string): Promise<number>;
}

/**
 * Sends `registrations` (JSON values, raw strings or raw bytes) to a fresh one-partition topic, so they
 * are read in the order given, and starts the service to consume them. They are sent before it starts:
 * its group starts from the earliest offset, so they are read all the same. Everything is stopped and
 * dropped at teardown.
 *
 * @example
 * const { pool, counted } = await startRegistrationRun(t, [{ buildingId: 'b1', rooms: ['lab'] }]);
 * await until(async () => (await counted('registered')) === 1, 30_000, 'the registration to be applied');
 */
export async function startRegistrationRun(t: Teardown, registrations: unknown[]): Promise<RegistrationRun> {
  // First: it fails the test at teardown on a call it was not set up for, which must skip no cleanup.
  const directory = await startFakeDirectory(t);
  const alertsTopic = uniqueName('alerts');
  const registrationsTopic = uniqueName('registrations');
  await createTopics(t, [alertsTopic]);
  await createTopics(t, [registrationsTopic], 1);
  await produce(registrationsTopic, registrations);
  const pool = quietAtTeardown(new pg.Pool({ connectionString: await freshPgDatabase(t) }));
  const { service, metrics } = await startBrokeredService(t, { pool, directoryUrl: directory.url, alertsTopic, registrationsTopic });
  const counted = async (outcome: string) => (await metrics.registrations.get()).values.find((v) => v.labels.outcome === outcome)?.value ?? 0;
  return { directory, pool, service, registrationsTopic, counted };
}
