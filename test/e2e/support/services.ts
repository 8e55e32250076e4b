/**
 * Support for the cross-service pipeline test (test/e2e/pipeline.test.ts): the cloud services as their
 * own processes, started the way `npm run <service>` starts them (their composition roots, configured
 * by environment only), with names unique to the test; the Kafka topics and groups they use; a
 * socket.io client standing in for a browser; and signed ingest. Everything is stopped or removed at
 * teardown.
 */
import { Redis } from 'ioredis';
import '../../../shared/kafkajs-idle-loop.js';
import { Kafka, logLevel, type Consumer } from 'kafkajs';
import { io as connect, type Socket } from 'socket.io-client';
import { request } from 'undici';
import { encodeClaims } from '../../../shared/claims.js';
import { sign } from '../../../shared/hmac.js';
import { startServiceProcess, type ServiceProcess, type ServiceProcessOptions } from '../../support/service-process.js';
import { stackEnv, uniqueName, type Teardown } from '../../support/stack.js';
import { jsonOrText } from '../../support/http.js';
import { startRelayProcess } from '../../cloud/relay/support/relay-process.js';

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

/**
 * A service of the pipeline on the shared stack's Redis and Kafka, looking buildings up in the
 * directory at `directoryUrl`; `env` adds what is particular to it.
 */
function startOnStack(t: Teardown, service: Omit<ServiceProcessOptions, 'env'>, directoryUrl: string, env: Record<string, string>): Promise<ServiceProcess> {
  const { REDIS_URL, KAFKA_BROKERS } = stackEnv();
  return startServiceProcess(t, { ...service, env: { REDIS_URL, KAFKA_BROKERS, DIGITAL_TWIN_URL: directoryUrl, ...env } });
}

/** The telemetry service (cloud/telemetry/main.ts) on a database of its own, with the shared key `secret`. */
export function startTelemetry(t: Teardown, options: { names: PipelineNames; databaseUrl: string; directoryUrl: string; secret: string }): Promise<ServiceProcess> {
  const { names } = options;
  return startOnStack(t, { name: 'telemetry', script: 'cloud/telemetry/main.ts', listening: 'telemetry listening' }, options.directoryUrl, {
    DATABASE_URL: options.databaseUrl,
    INGEST_SIGNING_SECRET: options.secret,
    ALERTS_TOPIC: names.alertsTopic,
    REGISTRATIONS_TOPIC: names.registrationsTopic,
    REGISTRATIONS_GROUP: names.registrationsGroup,
    RAW_CHANNEL: names.rawChannel,
    FILTERED_CHANNEL_PREFIX: names.filteredPrefix,
  });
}

/** The notification service (cloud/notification/main.ts), once its alert consumer has joined its group. */
export function startNotification(t: Teardown, options: { names: PipelineNames; mongoUri: string; directoryUrl: string }): Promise<ServiceProcess> {
  const service = { name: 'notification', script: 'cloud/notification/main.ts', listening: 'notification service listening', ready: ['alert consumer running'] };
  const { notificationsChannel, alertsTopic, alertsGroup } = options.names;
  return startOnStack(t, service, options.directoryUrl, {
    MONGO_URI: options.mongoUri,
    NOTIFICATIONS_CHANNEL: notificationsChannel,
    ALERTS_TOPIC: alertsTopic,
    ALERTS_GROUP: alertsGroup,
  });
}

/** The socket relay (cloud/relay/main.ts), once its broker subscriptions are live (no Kafka: it uses none). */
export function startRelay(t: Teardown, options: { names: PipelineNames; directoryUrl: string }): Promise<ServiceProcess> {
  const { names } = options;
  return startRelayProcess(t, {
    REDIS_URL: stackEnv().REDIS_URL,
    DIGITAL_TWIN_URL: options.directoryUrl,
    NOTIFICATIONS_CHANNEL: names.notificationsChannel,
    TELEMETRY_CHANNEL_PREFIX: names.filteredPrefix,
  });
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

async function send(url: string, method: 'GET' | 'POST' | 'PUT', body: string | undefined, headers: Record<string, string>): Promise<Answer> {
  const res = await request(url, { method, headers: body === undefined ? headers : { 'content-type': 'application/json', ...headers }, body });
  return { status: res.statusCode, json: jsonOrText(await res.body.text()) };
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

/**
 * The value of the sample of `metric` on a service's GET /metrics (Prometheus text) whose labels include
 * `labels` (services add labels of their own, such as `service`); undefined when there is none.
 */
export async function metricValue(serviceUrl: string, metric: string, labels: Record<string, string>): Promise<number | undefined> {
  const { status, json: text } = await send(`${serviceUrl}/metrics`, 'GET', undefined, {});
  if (status !== 200 || typeof text !== 'string') throw new Error(`GET ${serviceUrl}/metrics answered ${status}`);
  const wanted = Object.entries(labels).map(([name, value]) => `${name}=${JSON.stringify(value)}`);
  for (const line of text.split('\n')) {
    const sample = /^([a-zA-Z_:][\w:]*)\{(.*)\} (\S+)$/.exec(line);
    if (sample?.[1] !== metric) continue;
    const have = new Set((sample[2] ?? '').split(','));
    if (wanted.every((label) => have.has(label))) return Number(sample[3]);
  }
  return undefined;
}

/** Polls until `check` holds, or fails after `timeoutMs` naming `what`. */
export async function waitFor(what: string, check: () => boolean | Promise<boolean>, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}
