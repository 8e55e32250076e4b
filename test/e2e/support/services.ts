/**
 * Support for the cross-service pipeline test (test/e2e/pipeline.test.ts): the cloud services as their
 * own processes, started the way `npm run <service>` starts them (their composition roots, configured
 * by environment only), with names unique to the test; the Kafka topics and groups they use; a
 * socket.io client standing in for a browser; and signed ingest. Everything is stopped or removed at
 * teardown.
 */
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import { Kafka, logLevel, type Consumer } from 'kafkajs';
import { io as connect, type Socket } from 'socket.io-client';
import { request } from 'undici';
import { encodeClaims } from '../../../shared/claims.js';
import { sign } from '../../../shared/hmac.js';
import { stackEnv, uniqueName, type Teardown } from '../../support/stack.js';

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));

/**
 * The names the services meet on, each unique to one test. The contract's names (CONTRACTS.md,
 * Telemetry, Notification; seed 000, broker subscriptions) with a unique prefix: the same value is
 * handed to both ends of each link, under the variable each service reads it from.
 */
export interface PipelineNames {
  /** `notifications`: notification's and the relay's NOTIFICATIONS_CHANNEL. */
  notificationsChannel: string;
  /** `telemetry:raw`: telemetry's RAW_CHANNEL. */
  rawChannel: string;
  /** `telemetry:filtered:`: telemetry's FILTERED_CHANNEL_PREFIX, the relay's TELEMETRY_CHANNEL_PREFIX. */
  filteredPrefix: string;
  /** `alerts`: telemetry's and notification's ALERTS_TOPIC. */
  alertsTopic: string;
  /** Notification's ALERTS_GROUP (`alerts`). */
  alertsGroup: string;
  /** Telemetry's REGISTRATIONS_TOPIC (`building-registrations`); the service consumes it at start. */
  registrationsTopic: string;
  /** Telemetry's REGISTRATIONS_GROUP. */
  registrationsGroup: string;
}

export function pipelineNames(): PipelineNames {
  const prefix = uniqueName('e2e');
  return {
    notificationsChannel: `${prefix}:notifications`,
    rawChannel: `${prefix}:telemetry:raw`,
    filteredPrefix: `${prefix}:telemetry:filtered:`,
    alertsTopic: `${prefix}-alerts`,
    alertsGroup: `${prefix}-alerts`,
    registrationsTopic: `${prefix}-building-registrations`,
    registrationsGroup: `${prefix}-telemetry-registrations`,
  };
}

// --- Processes ----------------------------------------------------------------------------------------

export interface ServiceProcess {
  name: string;
  url: string;
  /** Its JSON log lines, parsed, as they arrive. */
  logs: Array<Record<string, unknown>>;
  /** Resolves with the first log line with this message (already seen or still to come). */
  logged(message: string, timeoutMs?: number): Promise<Record<string, unknown>>;
}

/**
 * Starts `node --import tsx <script>` with only PATH, HOME and `env`, waits for the log line
 * `listening` (which must carry the bound `port`), then for each of `ready` in turn. At teardown it
 * is sent SIGTERM and given 10 s to stop before SIGKILL.
 */
export async function startService(
  t: Teardown,
  name: string,
  script: string,
  env: Record<string, string>,
  messages: { listening: string; ready?: string[] },
): Promise<ServiceProcess> {
  const child = spawn(process.execPath, ['--import', 'tsx', script], {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', LOG_LEVEL: 'info', PORT: '0', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const logs: Array<Record<string, unknown>> = [];
  const listeners = new Set<() => void>();
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  createInterface({ input: child.stdout }).on('line', (line) => {
    try {
      logs.push(JSON.parse(line) as Record<string, unknown>);
    } catch {
      logs.push({ msg: line });
    }
    for (const listener of listeners) listener();
  });
  const exited = new Promise<void>((resolve) =>
    child.once('exit', () => {
      for (const listener of listeners) listener();
      resolve();
    }),
  );
  const running = () => child.exitCode === null && child.signalCode === null;
  t.teardown(async () => {
    if (!running()) return;
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
    await exited;
    clearTimeout(timer);
  });

  const describe = () => `stderr: ${stderr.slice(0, 1000) || '(empty)'}; last log lines: ${JSON.stringify(logs.slice(-5))}`;
  function logged(message: string, timeoutMs = 30_000): Promise<Record<string, unknown>> {
    return new Promise((resolve, reject) => {
      const check = () => {
        const line = logs.find((l) => l.msg === message);
        if (line) {
          done();
          resolve(line);
        } else if (!running()) {
          done();
          reject(new Error(`${name} exited before logging "${message}"; ${describe()}`));
        }
      };
      const timer = setTimeout(() => {
        done();
        reject(new Error(`${name} did not log "${message}" within ${timeoutMs} ms; ${describe()}`));
      }, timeoutMs);
      const done = () => {
        clearTimeout(timer);
        listeners.delete(check);
      };
      listeners.add(check);
      check();
    });
  }

  const listening = await logged(messages.listening);
  if (typeof listening.port !== 'number') throw new Error(`${name} logged "${messages.listening}" without a port`);
  for (const message of messages.ready ?? []) await logged(message);
  return { name, url: `http://127.0.0.1:${listening.port}`, logs, logged };
}

/** The telemetry service (cloud/telemetry/main.ts) on a database of its own, with the shared key `secret`. */
export function startTelemetry(t: Teardown, options: { names: PipelineNames; databaseUrl: string; directoryUrl: string; secret: string }): Promise<ServiceProcess> {
  const { names } = options;
  const stack = stackEnv();
  return startService(
    t,
    'telemetry',
    'cloud/telemetry/main.ts',
    {
      DATABASE_URL: options.databaseUrl,
      REDIS_URL: stack.REDIS_URL,
      KAFKA_BROKERS: stack.KAFKA_BROKERS,
      DIGITAL_TWIN_URL: options.directoryUrl,
      INGEST_SIGNING_SECRET: options.secret,
      ALERTS_TOPIC: names.alertsTopic,
      REGISTRATIONS_TOPIC: names.registrationsTopic,
      REGISTRATIONS_GROUP: names.registrationsGroup,
      RAW_CHANNEL: names.rawChannel,
      FILTERED_CHANNEL_PREFIX: names.filteredPrefix,
    },
    { listening: 'telemetry listening' },
  );
}

/** The notification service (cloud/notification/main.ts), once its alert consumer has joined its group. */
export function startNotification(t: Teardown, options: { names: PipelineNames; mongoUri: string; directoryUrl: string }): Promise<ServiceProcess> {
  const { names } = options;
  const stack = stackEnv();
  return startService(
    t,
    'notification',
    'cloud/notification/main.ts',
    {
      MONGO_URI: options.mongoUri,
      REDIS_URL: stack.REDIS_URL,
      KAFKA_BROKERS: stack.KAFKA_BROKERS,
      DIGITAL_TWIN_URL: options.directoryUrl,
      NOTIFICATIONS_CHANNEL: names.notificationsChannel,
      ALERTS_TOPIC: names.alertsTopic,
      ALERTS_GROUP: names.alertsGroup,
    },
    { listening: 'notification service listening', ready: ['alert consumer running'] },
  );
}

/** The socket relay (cloud/relay/main.ts), once its broker subscriptions are live. */
export function startRelay(t: Teardown, options: { names: PipelineNames; directoryUrl: string }): Promise<ServiceProcess> {
  const { names } = options;
  return startService(
    t,
    'relay',
    'cloud/relay/main.ts',
    {
      REDIS_URL: stackEnv().REDIS_URL,
      DIGITAL_TWIN_URL: options.directoryUrl,
      NOTIFICATIONS_CHANNEL: names.notificationsChannel,
      TELEMETRY_CHANNEL_PREFIX: names.filteredPrefix,
    },
    { listening: 'listening', ready: ['broker subscribed'] },
  );
}

// --- Kafka --------------------------------------------------------------------------------------------

export interface Collected {
  key: string;
  value: Record<string, unknown>;
}

export interface KafkaSpace {
  /** Reads a topic from the beginning with a group of its own; `messages` fills as they arrive. */
  collect(topic: string): Promise<Collected[]>;
}

function stackKafka(): Kafka {
  return new Kafka({ clientId: uniqueName('e2e-pipeline'), brokers: stackEnv().KAFKA_BROKERS.split(','), logLevel: logLevel.NOTHING });
}

/**
 * Creates `topics` on the stack's broker. At teardown (after whatever is started later has stopped)
 * deletes `groups`, the groups of any collector, and the topics.
 */
export async function kafkaSpace(t: Teardown, options: { topics: string[]; groups: string[] }): Promise<KafkaSpace> {
  const kafka = stackKafka();
  const groups = [...options.groups];
  const admin = kafka.admin();
  await admin.connect();
  t.teardown(async () => {
    await admin.deleteGroups(groups).catch(() => undefined);
    await admin.deleteTopics({ topics: options.topics, timeout: 5000 }).catch(() => undefined);
    await admin.disconnect();
  });
  await admin.createTopics({ topics: options.topics.map((topic) => ({ topic, numPartitions: 3, replicationFactor: 1 })), waitForLeaders: true });
  return {
    async collect(topic) {
      const groupId = uniqueName('e2e-collector');
      groups.push(groupId);
      // A short fetch wait, so that the disconnect at teardown does not sit out a long poll.
      const consumer: Consumer = kafka.consumer({ groupId, maxWaitTimeInMs: 500 });
      const messages: Collected[] = [];
      t.teardown(() => consumer.disconnect());
      await consumer.connect();
      await consumer.subscribe({ topic, fromBeginning: true });
      await consumer.run({
        eachMessage: async ({ message }) => {
          messages.push({ key: message.key?.toString() ?? '', value: JSON.parse(message.value?.toString() ?? 'null') as Record<string, unknown> });
        },
      });
      return messages;
    },
  };
}

// --- Redis --------------------------------------------------------------------------------------------

/**
 * At teardown, deletes what the notification service's breach path leaves on the shared Redis for these
 * buildings (seed 002: cooldown keys `alert:{type}:{field}:{buildingId}:{roomId}`) and alertIds
 * (`alert-seen:{alertId}`). `alertIds` is read at teardown.
 */
export function deleteAlertKeysAtTeardown(t: Teardown, buildings: string[], alertIds: () => string[]): void {
  t.teardown(async () => {
    const redis = new Redis(stackEnv().REDIS_URL, { maxRetriesPerRequest: 1 });
    try {
      const keys = alertIds().map((id) => `alert-seen:${id}`);
      for (const building of buildings) {
        let cursor = '0';
        do {
          const [next, found] = await redis.scan(cursor, 'MATCH', `alert:*:${building}:*`, 'COUNT', 1000);
          cursor = next;
          keys.push(...found);
        } while (cursor !== '0');
      }
      if (keys.length > 0) await redis.del(...keys);
    } finally {
      await redis.quit().catch(() => redis.disconnect());
    }
  });
}

// --- The browser's side -------------------------------------------------------------------------------

/** An account as the mesh describes it in `x-gateway-claims`: one membership. */
export function claimsOf(sub: string, domainName: string, role: string): string {
  return encodeClaims({ sub, accountName: `${sub}@${domainName}.test`, memberships: [{ domainName, role }] });
}

export interface BrowserSocket {
  socket: Socket;
  /** `telemetry` events, in arrival order. */
  telemetry: Array<Record<string, unknown>>;
  /** `notification` events, in arrival order. */
  notifications: Array<Record<string, unknown>>;
}

/**
 * A socket.io client with the claims header the mesh injects (seed 000, Authentication), as the relay
 * tests connect; resolves once connected. Closed at teardown.
 */
export async function openSocket(t: Teardown, relayUrl: string, claims: string): Promise<BrowserSocket> {
  const socket = connect(relayUrl, { transports: ['websocket'], reconnection: false, forceNew: true, extraHeaders: { 'x-gateway-claims': claims } });
  t.teardown(() => {
    socket.close();
  });
  const client: BrowserSocket = { socket, telemetry: [], notifications: [] };
  socket.on('telemetry', (reading: Record<string, unknown>) => client.telemetry.push(reading));
  socket.on('notification', (notification: Record<string, unknown>) => client.notifications.push(notification));
  await new Promise<void>((resolve, reject) => {
    socket.once('connect', () => resolve());
    socket.once('connect_error', (err) => reject(err));
  });
  return client;
}

export interface SubscribeAck {
  subscribed: boolean;
  buildingId: string;
  reason?: string;
}

/** subscribe_building, waiting for the acknowledgement (seed 000, socket events). */
export function subscribeBuilding(client: BrowserSocket, buildingId: string): Promise<SubscribeAck> {
  return client.socket.timeout(10_000).emitWithAck('subscribe_building', buildingId) as Promise<SubscribeAck>;
}

// --- HTTP ---------------------------------------------------------------------------------------------

export interface Answer {
  status: number;
  json: unknown;
}

async function send(url: string, method: 'POST' | 'PUT', body: string, headers: Record<string, string>): Promise<Answer> {
  const res = await request(url, { method, headers: { 'content-type': 'application/json', ...headers }, body });
  const text = await res.body.text();
  let json: unknown = text;
  try {
    json = JSON.parse(text);
  } catch {
    // keep the text
  }
  return { status: res.statusCode, json };
}

/** POST /ingest with `X-Signature` over the exact body, with the shared key (CONTRACTS.md, Telemetry). */
export function postSigned(telemetryUrl: string, body: unknown, secret: string): Promise<Answer> {
  const text = JSON.stringify(body);
  return send(`${telemetryUrl}/ingest`, 'POST', text, { 'x-signature': sign(text, secret) });
}

/** A JSON request carrying claims. */
export function callAs(url: string, claims: string, method: 'POST' | 'PUT', body: unknown): Promise<Answer> {
  return send(url, method, JSON.stringify(body), { 'x-gateway-claims': claims });
}

/** Polls until `check` holds, or fails after `timeoutMs` naming `what`. */
export async function waitFor(what: string, check: () => boolean, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}
