/**
 * A throwaway Kafka 3.9 broker for tests that stop and start the broker itself: a single KRaft node
 * (broker + controller) on free loopback ports with a fresh data directory, run from the jars that
 * `bash tools/stack install` fetched. The stack's shared broker is never touched. A restart keeps the
 * ports and the data directory, so topics and committed offsets survive as on a real broker.
 *
 * @example
 * const kafka = await startOwnKafka(t);
 * // new Kafka({ brokers: [kafka.broker] })
 * await kafka.stop(); // the outage
 * await kafka.start(); // back on the same port, same data
 */
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import '../../../shared/kafkajs-idle-loop.js';
import { Kafka, logLevel } from 'kafkajs';
import { freeTcpPorts } from '../../../edge/src/simulate/ports.js';
import type { Teardown } from '../stack.js';
import { startPeer, type PeerProcess } from './process.js';

const HOST = '127.0.0.1';
const POM = fileURLToPath(new URL('../../../tools/stack.d/kafka/pom.xml', import.meta.url));
const START_TIMEOUT_MS = 60_000;
/** util-linux; the broker gets SIGKILL when the test process dies, even by a signal no handler sees. */
const SETPRIV = '/usr/bin/setpriv';
const STOP_GRACE_MS = 20_000;

export interface OwnKafka {
  /** `127.0.0.1:<port>`, for a client's `brokers`. */
  broker: string;
  /** Starts the broker again on the same ports and data directory; resolves once it answers. */
  start(): Promise<void>;
  /** SIGTERM (SIGKILL after a grace period); resolves once the process has exited. */
  stop(): Promise<void>;
}

/**
 * Where tools/stack put the Kafka jars: `KAFKA_HOME` when set, otherwise the stack's cache,
 * `${LINTEL_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/lintel}/kafka-<kafka.version from its pom.xml>`.
 */
export function kafkaHome(): string {
  if (process.env.KAFKA_HOME) return process.env.KAFKA_HOME;
  const version = /<kafka\.version>(.*)<\/kafka\.version>/.exec(readFileSync(POM, 'utf8'))?.[1];
  if (!version) throw new Error(`${POM}: no <kafka.version>`);
  const cache = process.env.LINTEL_CACHE || join(process.env.XDG_CACHE_HOME || join(homedir(), '.cache'), 'lintel');
  return join(cache, `kafka-${version}`);
}

/** Formats a fresh data directory, starts the broker and waits until it answers; it is killed and its directory removed at teardown. */
export async function startOwnKafka(t: Teardown): Promise<OwnKafka> {
  const libs = join(kafkaHome(), 'libs');
  if (!existsSync(libs) || !readdirSync(libs).some((name) => name.startsWith('kafka_'))) {
    throw new Error(`no Kafka jars in ${libs} (KAFKA_HOME or the stack's cache): run \`bash tools/stack up\` first`);
  }
  const [port, controllerPort] = await freeTcpPorts(2);
  const dir = mkdtempSync(join(tmpdir(), 'lintel-kafka-'));
  const properties = join(dir, 'server.properties');
  const broker = `${HOST}:${port}`;
  let peer: PeerProcess | undefined;

  // If a teardown before ours throws, tap skips the rest: never leave a java process behind. (A test
  // process killed outright takes the broker with it through setpriv's parent-death signal.)
  const killOnExit = () => {
    peer?.child.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  };
  process.once('exit', killOnExit);
  t.teardown(async () => {
    process.off('exit', killOnExit);
    await peer?.stop(STOP_GRACE_MS);
    rmSync(dir, { recursive: true, force: true });
  });

  mkdirSync(join(dir, 'data'));
  mkdirSync(join(dir, 'logs'));
  writeFileSync(properties, serverProperties({ dir, port: port!, controllerPort: controllerPort! }));
  // Warnings and the start-up line go to stdout, where startPeer reads them (tools/stack logs to a file).
  writeFileSync(
    join(dir, 'log4j.properties'),
    [
      'log4j.rootLogger=WARN, stdout',
      'log4j.appender.stdout=org.apache.log4j.ConsoleAppender',
      'log4j.appender.stdout.layout=org.apache.log4j.PatternLayout',
      'log4j.appender.stdout.layout.ConversionPattern=[%d] %p %m (%c)%n',
      'log4j.logger.kafka.server.KafkaRaftServer=INFO',
      '',
    ].join('\n'),
  );
  const java = [
    '-Xms64m',
    '-Xmx256m',
    '-XX:+UseG1GC',
    '-XX:MaxGCPauseMillis=20',
    '-XX:InitiatingHeapOccupancyPercent=35',
    '-XX:+ExplicitGCInvokesConcurrent',
    '-Djava.awt.headless=true',
    `-Dkafka.logs.dir=${join(dir, 'logs')}`,
    `-Dlog4j.configuration=file:${join(dir, 'log4j.properties')}`,
    '-cp',
    `${libs}/*`,
  ];
  await promisify(execFile)('java', [...java, 'kafka.tools.StorageTool', 'format', '-t', clusterId(), '-c', properties], { timeout: START_TIMEOUT_MS }).catch((err: Error & { stdout?: string; stderr?: string }) => {
    throw new Error(`formatting Kafka storage in ${dir} failed: ${err.message}\n${err.stdout ?? ''}${err.stderr ?? ''}`);
  });

  const start = async () => {
    if (peer && peer.child.exitCode === null && peer.child.signalCode === null) throw new Error(`the broker on ${broker} is already running`);
    const command = ['java', ...java, 'kafka.Kafka', properties];
    if (existsSync(SETPRIV)) command.unshift(SETPRIV, '--pdeathsig', 'KILL', '--');
    peer = await startPeer(command[0]!, command.slice(1), {
      name: `Kafka on ${broker}`,
      timeoutMs: START_TIMEOUT_MS,
      isReady: (output) => output.includes('Kafka Server started') && answers(broker),
    });
  };
  await start();
  return {
    broker,
    start,
    stop: async () => {
      await peer?.stop(STOP_GRACE_MS);
    },
  };
}

/** tools/stack's server.properties, on our own ports and directory, with one partition for group offsets. */
function serverProperties({ dir, port, controllerPort }: { dir: string; port: number; controllerPort: number }): string {
  return `# Written by test/support/peers/kafka.ts: a throwaway single KRaft node (broker + controller).
process.roles=broker,controller
node.id=1
controller.quorum.voters=1@${HOST}:${controllerPort}
listeners=PLAINTEXT://${HOST}:${port},CONTROLLER://${HOST}:${controllerPort}
advertised.listeners=PLAINTEXT://${HOST}:${port}
inter.broker.listener.name=PLAINTEXT
controller.listener.names=CONTROLLER
listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT
log.dirs=${join(dir, 'data')}
auto.create.topics.enable=true
delete.topic.enable=true
num.partitions=3
default.replication.factor=1
offsets.topic.replication.factor=1
offsets.topic.num.partitions=1
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
transaction.state.log.num.partitions=1
group.initial.rebalance.delay.ms=0
num.network.threads=2
num.io.threads=4
num.recovery.threads.per.data.dir=1
log.segment.bytes=16777216
`;
}

/** A Kafka cluster id (a base64url UUID, as `StorageTool random-uuid` prints) without starting a JVM for it. */
function clusterId(): string {
  for (;;) {
    const id = randomBytes(16).toString('base64url');
    if (!id.startsWith('-')) return id;
  }
}

/** True once the broker answers a metadata request. */
async function answers(broker: string): Promise<boolean> {
  const admin = new Kafka({ clientId: 'own-kafka-probe', brokers: [broker], connectionTimeout: 1000, retry: { retries: 0 }, logLevel: logLevel.NOTHING }).admin();
  try {
    await admin.connect();
    return (await admin.describeCluster()).brokers.length > 0;
  } catch {
    return false;
  } finally {
    await admin.disconnect().catch(() => undefined);
  }
}
