/**
 * tools/stack's read-only commands and its protocol health checks, against the servers `npm test`
 * started. (`up`, `down` and `install` change shared servers, so they are exercised by `npm test` and
 * `.ci/run` themselves, not here; `hold` is, on a cache of its own.)
 */
import t from 'tap';
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import { join } from 'node:path';
import { createServer, type AddressInfo, type Server, type Socket } from 'node:net';
import { fileURLToPath } from 'node:url';
import { stackEnv } from '../support/stack.js';

const root = fileURLToPath(new URL('../../', import.meta.url));
const env = stackEnv();

function stack(...args: string[]) {
  return spawnSync('bash', ['tools/stack', ...args], { cwd: root, encoding: 'utf8' });
}

/** A TCP server on a free loopback port. */
function tcpServer(onSocket?: (socket: Socket) => void): Promise<{ server: Server; port: number }> {
  const server = onSocket ? createServer(onSocket) : createServer();
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve({ server, port: (server.address() as AddressInfo).port })));
}

function ping(kind: string, host: string, port: string | number) {
  return spawnSync(process.execPath, ['tools/stack.d/ping.mjs', kind, host, String(port)], { cwd: root, encoding: 'utf8' });
}

t.test('env prints the four variables the services read, as the tests see them', async (t) => {
  const r = stack('env');
  t.equal(r.status, 0);
  const printed = Object.fromEntries(
    r.stdout
      .trim()
      .split('\n')
      .map((line) => /^export ([A-Z_]+)=(.*)$/.exec(line))
      .map((m) => [m?.[1], m?.[2]]),
  );
  t.same(printed, {
    DATABASE_URL: env.DATABASE_URL,
    REDIS_URL: env.REDIS_URL,
    KAFKA_BROKERS: env.KAFKA_BROKERS,
    MONGO_URI: env.MONGO_URI,
  });
});

t.test('status lists every server as up and exits 0', async (t) => {
  const r = stack('status');
  t.equal(r.status, 0, r.stdout);
  const states = r.stdout
    .trim()
    .split('\n')
    .map((line) => line.split(/\s{2,}/).slice(0, 2));
  t.same(
    states.map(([name]) => name),
    ['postgres', 'redis', 'kafka', 'ferretdb'],
  );
  for (const [name, state] of states) t.match(state, /^up\b/, `${name} is up`);
});

t.test('no server of the stack holds the users lock: the run that started them does not keep them in use for good', async (t) => {
  // tools/test holds `stack.users` shared from before its `up`; a server that inherited it would keep
  // every later `down --if-unused` from stopping the stack. The servers are this checkout's, as their
  // pid files name them (a test's own redis-server may well hold the lock: it ends with its test).
  const cache = process.env.LINTEL_CACHE || join(process.env.XDG_CACHE_HOME || join(homedir(), '.cache'), 'lintel');
  const lock = statSync(join(cache, 'stack.users'));
  const pidFiles = ['pg/data/postmaster.pid', 'redis/redis.pid', 'kafka/kafka.pid', 'ferretdb/ferretdb.pid'].map((f) => join(root, '.stack', f));
  const pids = pidFiles.filter((f) => existsSync(f)).map((f) => readFileSync(f, 'utf8').split('\n')[0]!.trim());
  t.ok(pids.length > 0, 'the servers were started by this checkout (their pid files are here)');
  const holders = pids.filter((pid) => {
    let fds: string[];
    try {
      fds = readdirSync(`/proc/${pid}/fd`);
    } catch {
      return false; // not running
    }
    return fds.some((fd) => {
      try {
        const target = statSync(`/proc/${pid}/fd/${fd}`);
        return target.ino === lock.ino && target.dev === lock.dev;
      } catch {
        return false;
      }
    });
  });
  t.same(holders, [], 'none of postgres, redis, kafka or ferretdb holds it');
});

t.test('hold keeps the users lock shared for as long as its command runs', async (t) => {
  // On a cache of its own, so the real servers and the runs using them are not concerned.
  const cache = mkdtempSync(join(tmpdir(), 'lintel-stack-users-'));
  t.teardown(() => rmSync(cache, { recursive: true, force: true }));
  const env = { ...process.env, LINTEL_CACHE: cache };
  const held = spawn('bash', ['tools/stack', 'hold', 'bash', '-c', 'echo held; exec sleep 60'], { cwd: root, env, stdio: ['ignore', 'pipe', 'ignore'] });
  const ended = new Promise<void>((resolve) => held.on('exit', () => resolve()));
  t.teardown(() => {
    held.kill();
  });
  // The command run under `hold` says so once it runs: the lock is held from then on.
  await new Promise<void>((resolve, reject) => {
    held.stdout.on('data', (chunk: Buffer) => {
      if (chunk.toString().includes('held')) resolve();
    });
    held.on('exit', (code) => reject(new Error(`hold ended (${code}) before its command ran`)));
  });
  const exclusive = () => spawnSync('flock', ['-xn', join(cache, 'stack.users'), 'true']).status;
  t.not(exclusive(), 0, 'while it runs, no one takes the lock exclusive (as down --if-unused does)');
  t.equal(spawnSync('flock', ['-sn', join(cache, 'stack.users'), 'true']).status, 0, 'another run may hold it shared beside it');
  held.kill();
  await ended;
  t.equal(exclusive(), 0, 'once it ended, the lock is free');
});

t.test('an unknown command prints the usage and exits 2', async (t) => {
  for (const args of [[], ['start']]) {
    const r = stack(...args);
    t.equal(r.status, 2, `tools/stack ${args.join(' ')}`);
    t.match(r.stderr, /tools\/stack up\s+install if needed, start every server/);
  }
});

t.test('the health checks speak Kafka and the MongoDB wire protocol', async (t) => {
  const [kafkaHost = '', kafkaPort = ''] = (env.KAFKA_BROKERS.split(',')[0] ?? '').split(':');
  t.equal(ping('kafka', kafkaHost, kafkaPort).status, 0, 'the broker answers Metadata');
  const mongo = new URL(env.MONGO_URI);
  t.equal(ping('mongo', mongo.hostname, mongo.port).status, 0, 'FerretDB answers ping');

  const redis = new URL(env.REDIS_URL);
  const wrong = ping('mongo', redis.hostname, redis.port);
  t.equal(wrong.status, 1, 'Redis is not taken for a MongoDB server');
  t.match(wrong.stderr, new RegExp(`^mongo ${redis.hostname}:${redis.port}: `));

  const silent = await tcpServer((socket) => socket.on('error', () => undefined));
  t.teardown(() => silent.server.close());
  const closed = await tcpServer();
  await new Promise((resolve) => closed.server.close(resolve));
  const [port, closedPort] = [silent.port, closed.port];
  const refused = ping('kafka', '127.0.0.1', closedPort);
  t.equal(refused.status, 1, 'a closed port is down');
  t.match(refused.stderr, /ECONNREFUSED/);
  const mute = ping('kafka', '127.0.0.1', port);
  t.equal(mute.status, 1, 'a port that never answers is down');
  t.match(mute.stderr, /no answer within 3000 ms/);

  const usage = ping('redis', '127.0.0.1', 1);
  t.equal(usage.status, 2);
  t.match(usage.stderr, /usage: node ping\.mjs kafka\|mongo HOST PORT/);
});
