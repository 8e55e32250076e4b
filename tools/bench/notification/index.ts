/**
 * Notification benchmark: 50,000 alerts over 5,000 distinct cooldown keys on a fresh 4-partition topic,
 * read from the beginning by fresh consumer groups, five rounds of each, alternating so that both run
 * with a warm JIT (the machine is shared and noisy: the best round of each side is compared):
 * - the limit: a bare kafkajs consumer (eachBatch, the same partitions in flight) that only counts
 *   (a bare eachMessage consumer is measured once more, for context);
 * - the service: its own consumer path (KafkaAlertConsumer → BreachHandler) settling every record end
 *   to end: parse, cooldown `SET NX EX` on Redis, building lookup (15-minute cache, cold at the start
 *   of each round) against a directory in its own process, in-app publish on Redis, recipient query on
 *   FerretDB, offsets resolved and committed. Each round starts with fresh cooldown keys and caches.
 * Both consumers run the same kafkajs consumer configuration (eachBatch, the same partitions in flight,
 * default fetch sizes, the same maxWait) and both commit (autoCommit after every batch; the service
 * resolves only settled offsets). Throughput runs from the first record seen to the commit that covers
 * the last record of every partition, the same stop line for both, so group joins count for neither
 * and commits count for both. Headline: ratio = best service alerts/s ÷ best bare alerts/s (target ≥ 0.5).
 * A service round counts only when it settled as it should (5,000 delivered, 45,000 suppressed, every
 * offset committed); any other ends the benchmark with an error and no figures.
 * For the best round of each side it also prints who used the CPU while it was timed (cpu-marks.ts):
 * the machine, this process (where both consumers run), the Kafka broker, Redis and, for the service,
 * the directory.
 */
import { randomBytes } from 'node:crypto';
import '../../../shared/kafkajs-idle-loop.js';
import { Kafka, logLevel } from 'kafkajs';
import { silentLogger } from '../../../shared/logger.js';
import { KafkaAlertConsumer } from '../../../cloud/notification/kafka.js';
import { printLine } from '../report.js';
import { cpuMark, findParties, PARTIES, PARTY_LABELS, type CpuMark, type CpuParties } from './cpu-marks.js';
import { ALERTS, alerts, checkedOutcomes, DISTINCT_KEYS, fastest, openServers, roundOf, runToExit, serviceBreach, type Round, type RoundOutcomes, type Servers } from './workload.js';

const PARTITIONS = 4;
const IN_FLIGHT_PARTITIONS = 4;
const ROUNDS = 5;
const DEADLINE_MS = 40_000;
/** The one consumer setting the service sets (an idle fetch waits at most 1 s); the bare consumer uses it too. */
const MAX_WAIT_MS = 1000;

const brokers = (process.env.KAFKA_BROKERS ?? '127.0.0.1:59092').split(',');
const run = randomBytes(4).toString('hex');
const line = printLine;

function deadline<T>(what: string, promise: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const expired = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} did not finish within ${DEADLINE_MS / 1000} s`)), DEADLINE_MS);
  });
  return Promise.race([promise, expired]).finally(() => clearTimeout(timer));
}

/**
 * Calls `done` once the committed offset of every partition reached its end: the stop line of both
 * consumers.
 */
function commitTracker(ends: ReadonlyMap<number, string>, done: () => void): (partitions: ReadonlyArray<{ partition: number; offset: string }>) => void {
  const left = new Set(ends.keys());
  return (partitions) => {
    // kafkajs names the partitions of a commit event by string keys.
    for (const { partition, offset } of partitions) {
      const p = Number(partition);
      if (left.has(p) && BigInt(offset) >= BigInt(ends.get(p) ?? '0')) left.delete(p);
    }
    if (left.size === 0) done();
  };
}

async function topicEnds(kafka: Kafka, topic: string): Promise<Map<number, string>> {
  const admin = kafka.admin();
  await admin.connect();
  try {
    return new Map((await admin.fetchTopicOffsets(topic)).map((p) => [p.partition, p.high]));
  } finally {
    await admin.disconnect();
  }
}

/** A consumer that does nothing but count: with eachBatch (the limit), or eachMessage (for context). */
async function measureBare(kafka: Kafka, topic: string, round: string, parties: CpuParties, mode: 'eachBatch' | 'eachMessage' = 'eachBatch'): Promise<Round> {
  const ends = await topicEnds(kafka, topic);
  const consumer = kafka.consumer({ groupId: `bench-bare-${run}-${round}`, maxWaitTimeInMs: MAX_WAIT_MS });
  await consumer.connect();
  await consumer.subscribe({ topic, fromBeginning: true });
  // The first record seen and the commit that ends the round, each with the CPU used so far.
  let first: CpuMark | undefined;
  let last: CpuMark | undefined;
  const done = new Promise<void>((resolve) => {
    const committed = commitTracker(ends, () => {
      last ??= cpuMark(parties);
      resolve();
    });
    consumer.on(consumer.events.COMMIT_OFFSETS, (event) => {
      for (const t of event.payload.topics) if (t.topic === topic) committed(t.partitions);
    });
    const seen = () => {
      first ??= cpuMark(parties);
    };
    void consumer.run({
      partitionsConsumedConcurrently: IN_FLIGHT_PARTITIONS,
      ...(mode === 'eachBatch' ? { eachBatch: async () => seen() } : { eachMessage: async () => seen() }),
    });
  });
  await deadline('the bare consumer', done);
  await consumer.disconnect();
  return roundOf(first!, last!);
}

interface ServiceRound extends Round, RoundOutcomes {
  uncommitted: number;
}

async function measureService(kafka: Kafka, topic: string, round: number, servers: Servers, parties: CpuParties): Promise<ServiceRound> {
  const ends = await topicEnds(kafka, topic);
  const logger = silentLogger();
  const { breach, metrics, outcome, close } = await serviceBreach({ ...servers, run, round });
  // The first record seen and the commit that ends the round, each with the CPU used so far.
  let first: CpuMark | undefined;
  let last: CpuMark | undefined;
  let finish: () => void = () => undefined;
  const done = new Promise<void>((resolve) => (finish = resolve));
  const committed = commitTracker(ends, () => {
    last ??= cpuMark(parties);
    finish();
  });
  const consumer = new KafkaAlertConsumer({
    brokers,
    topic,
    groupId: `bench-service-${run}-${round}`,
    partitionsConsumedConcurrently: IN_FLIGHT_PARTITIONS,
    lagIntervalMs: 0,
    metrics,
    logger,
    onCommit: committed,
    settle: (records, source) => {
      first ??= cpuMark(parties);
      return breach.settle(records, source);
    },
  });
  try {
    await consumer.start();
    await deadline('the service consumer', done);
    let uncommitted = await consumer.refreshLag();
    for (let i = 0; i < 50 && uncommitted > 0; i++) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      uncommitted = await consumer.refreshLag();
    }
    const what = `service round ${round + 1}`;
    const outcomes = await checkedOutcomes(what, outcome);
    if (uncommitted !== 0) throw new Error(`${what}: ${uncommitted} records still uncommitted 5 s after the commit that ended the round`);
    return { ...roundOf(first!, last!), ...outcomes, uncommitted };
  } finally {
    await consumer.stop();
    await close();
  }
}

async function main(): Promise<void> {
  const kafka = new Kafka({ clientId: `bench-notification-${run}`, brokers, logLevel: logLevel.NOTHING });
  const admin = kafka.admin();
  await admin.connect();
  const topic = `bench-alerts-${run}`;
  await admin.createTopics({ topics: [{ topic, numPartitions: PARTITIONS, replicationFactor: 1 }], waitForLeaders: true });
  const servers = await openServers(run, `bench_notification_${run}`);
  try {
    const producer = kafka.producer({ allowAutoTopicCreation: false });
    await producer.connect();
    const records = alerts(run);
    const produceStart = performance.now();
    for (let i = 0; i < records.length; i += 5000) await producer.send({ topic, messages: records.slice(i, i + 5000) });
    const produceRate = ALERTS / ((performance.now() - produceStart) / 1000);
    await producer.disconnect();

    const parties = findParties(servers.directoryPid);
    const bare: Round[] = [];
    const service: ServiceRound[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      bare.push(await measureBare(kafka, topic, String(round), parties));
      service.push(await measureService(kafka, topic, round, servers, parties));
    }
    const perMessage = (await measureBare(kafka, topic, 'each-message', parties, 'eachMessage')).rate;
    const bestBareRound = fastest(bare);
    const bestBare = bestBareRound.rate;
    const best = fastest(service);
    line('alerts', String(ALERTS));
    line('distinct keys', String(DISTINCT_KEYS));
    line('partitions', String(PARTITIONS));
    line('produce rate', produceRate.toFixed(0), 'alerts/s');
    bare.forEach((r, i) => line(`bare kafkajs consumer round ${i + 1}`, r.rate.toFixed(0), 'alerts/s'));
    service.forEach((r, i) => line(`service consumer path round ${i + 1}`, r.rate.toFixed(0), 'alerts/s'));
    line('delivered per round', String(best.delivered), 'alerts');
    line('suppressed per round', String(best.suppressed), 'alerts');
    line('uncommitted after a round', String(Math.max(...service.map((r) => r.uncommitted))), 'records');
    line('bare kafkajs consumer with eachMessage, for context', perMessage.toFixed(0), 'alerts/s');
    const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? 0;
    line('bare kafkajs consumer (median)', median(bare.map((r) => r.rate)).toFixed(0), 'alerts/s');
    line('service consumer path (median)', median(service.map((r) => r.rate)).toFixed(0), 'alerts/s');
    line('bare kafkajs consumer (best)', bestBare.toFixed(0), 'alerts/s');
    line('service consumer path, settled end to end (best)', best.rate.toFixed(0), 'alerts/s');
    // Who used the CPU while the best round of each side was timed (percent of one core; the
    // machine's over both, so 200 % is all of it). The directory is the service's alone.
    for (const party of PARTIES) if (party !== 'directory') line(`bare best round: ${PARTY_LABELS[party]}`, bestBareRound.cpu[party].toFixed(0), '%');
    for (const party of PARTIES) line(`service best round: ${PARTY_LABELS[party]}`, best.cpu[party].toFixed(0), '%');
    line('ratio', (best.rate / bestBare).toFixed(2));
  } finally {
    await admin.deleteTopics({ topics: [topic] }).catch(() => undefined);
    await admin.disconnect();
    await servers.close();
  }
}

runToExit('bench', main);
