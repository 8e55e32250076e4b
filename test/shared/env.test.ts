import t from 'tap';
import { readEnv, str, int, url, hostPorts, listenAddr, keyRing, mongoUri, mongoDatabaseOf, ConfigError, type EnvVar } from '../../shared/env.js';

const spec = {
  PORT: int({ default: 3000, min: 0, max: 65535 }),
  DATABASE_URL: url(['postgres', 'postgresql']),
  REDIS_URL: url(['redis', 'rediss'], { optional: true }),
  KAFKA_BROKERS: hostPorts({ default: 'localhost:9092' }),
  ADDR: listenAddr({ default: ':3000' }),
  SECRET: str(),
};

t.test('defaults and parsing', async (t) => {
  const env = readEnv(spec, { DATABASE_URL: 'postgres://u@h/db', SECRET: 's', ADDR: '127.0.0.1:8080' });
  t.equal(env.PORT, 3000);
  t.equal(env.REDIS_URL, undefined);
  t.same(env.KAFKA_BROKERS, ['localhost:9092']);
  t.same(env.ADDR, { host: '127.0.0.1', port: 8080 });
  t.same(readEnv({ ADDR: listenAddr({ default: ':3000' }) }, {}).ADDR, { host: undefined, port: 3000 });
});

t.test('every problem is reported at once, each naming its variable', async (t) => {
  try {
    readEnv(spec, { PORT: 'eighty', REDIS_URL: 'http://x', KAFKA_BROKERS: 'a:1,b', ADDR: 'nope' });
    t.fail('should throw');
  } catch (err) {
    t.ok(err instanceof ConfigError);
    t.same((err as ConfigError).problems, [
      'PORT: expected an integer, got "eighty"',
      'DATABASE_URL: required but not set',
      'REDIS_URL: not a redis:// or rediss:// URL',
      'KAFKA_BROKERS: expected host:port[,host:port…], got "a:1,b"',
      'ADDR: expected [host]:port, got "nope"',
      'SECRET: required but not set',
    ]);
  }
  t.throws(() => readEnv({ PORT: int({ min: 1 }) }, { PORT: '0' }), new ConfigError(['PORT: expected at least 1, got 0']));
});

t.test('a key ring: current first, every secret long enough', async (t) => {
  t.same(readEnv({ S: keyRing() }, { S: 'new, old' }).S, ['new', 'old']);
  t.throws(() => readEnv({ S: keyRing() }, {}), new ConfigError(['S: required but not set (comma-separated secrets, current first)']));
  t.throws(() => readEnv({ S: keyRing() }, { S: ' , ' }), new ConfigError(['S: expected at least one non-empty secret']));
  t.throws(() => readEnv({ S: keyRing({ minLength: 16 }) }, { S: 'a-long-enough-secret,short' }), new ConfigError(['S: every secret must be at least 16 characters; 1 of 2 are shorter']));
});

t.test('a broker port outside 1..65535 and a URL without "//" are refused, not read as garbage', async (t) => {
  t.throws(() => readEnv({ KAFKA_BROKERS: hostPorts() }, { KAFKA_BROKERS: 'kafka-1:9092,kafka-2:99999' }), new ConfigError(['KAFKA_BROKERS: expected host:port[,host:port…], got "kafka-1:9092,kafka-2:99999"']));
  t.throws(() => readEnv({ KAFKA_BROKERS: hostPorts() }, { KAFKA_BROKERS: 'kafka:0' }), new ConfigError(['KAFKA_BROKERS: expected host:port[,host:port…], got "kafka:0"']));
  // `redis:cache:6379` parses as a URL with no host at all; a client would quietly connect to localhost.
  t.throws(() => readEnv({ REDIS_URL: url(['redis', 'rediss']) }, { REDIS_URL: 'redis:cache:6379' }), new ConfigError(['REDIS_URL: not a redis:// or rediss:// URL']));
  t.throws(() => readEnv({ DATABASE_URL: url(['postgres']) }, { DATABASE_URL: 'postgres:lintel@db/lintel' }), new ConfigError(['DATABASE_URL: not a postgres:// URL']));
  t.same(readEnv({ DATABASE_URL: url(['postgres']) }, { DATABASE_URL: 'postgres:///lintel?host=/run/postgresql' }).DATABASE_URL, 'postgres:///lintel?host=/run/postgresql', 'a socket URL without a host is still fine');
});

t.test('a MongoDB connection string: one host, a replica set seed list, or mongodb+srv; the database from its path', async (t) => {
  const read = (value: string) => readEnv({ MONGO_URI: mongoUri() }, { MONGO_URI: value }).MONGO_URI;
  for (const good of [
    'mongodb://127.0.0.1:27017/notificationdb',
    'mongodb://h1:27017,h2:27017,h3/notificationdb?replicaSet=rs0&w=majority',
    'mongodb://app:p%40ss@h1.example.net:27017,h2.example.net:27018/chat?authSource=admin',
    'mongodb://[::1]:27017,[fe80::1]/db',
    'mongodb+srv://cluster0.example.net/chat?retryWrites=true',
    'mongodb://localhost',
  ]) t.equal(read(good), good, good);
  for (const [bad, why] of [
    ['postgres://h/db', 'not a mongodb:// or mongodb+srv:// URL'],
    ['mongodb:h1:27017/db', 'not a mongodb:// or mongodb+srv:// URL'],
    ['mongodb://h1:27017,,h2/db', 'not a mongodb:// or mongodb+srv:// URL: "" is not a host[:port]'],
    ['mongodb://h1:99999/db', 'not a mongodb:// or mongodb+srv:// URL: "h1:99999" is not a host[:port]'],
    ['mongodb+srv://a.example.net,b.example.net/db', 'a mongodb+srv:// URL names one host, without a port'],
    ['mongodb+srv://a.example.net:27017/db', 'a mongodb+srv:// URL names one host, without a port'],
    ['mongodb://127.0.0.1:27017/notif%zz', 'the database name in the path is not valid percent-encoding (write a literal % as %25)'],
  ] as const) t.throws(() => read(bad), new ConfigError([`MONGO_URI: ${why}`]), bad);
  t.equal(mongoDatabaseOf('mongodb://h1:27017,h2:27017/notificationdb?replicaSet=rs0'), 'notificationdb');
  t.equal(mongoDatabaseOf('mongodb://u:p@h/my%20db'), 'my db');
  t.equal(mongoDatabaseOf('mongodb://h1,h2/?replicaSet=rs0'), undefined);
  t.equal(mongoDatabaseOf('mongodb://h1'), undefined);
});

t.test('a password with an unencoded / ? # is refused without echoing any part of it', async (t) => {
  const cases: Array<[string, EnvVar<string>, string]> = [
    ['REDIS_URL', url(['redis', 'rediss']), 'redis://default:2024/Xy+q@cache:6379'],
    ['DATABASE_URL', url(['postgres']), 'postgres://lintel:1234?abcd@db:5432/lintel'],
    ['DATABASE_URL', url(['postgres']), 'postgres://lintel:pa#ss@db:5432/lintel'],
    ['MONGO_URI', mongoUri(), 'mongodb://lintel:Xy7/ab+Q==@db:27017/notificationdb'],
    ['MONGO_URI', mongoUri(), 'mongodb://lintel:S3cr3t?x@db/n'],
    ['MONGO_URI', mongoUri(), 'mongodb://lintel:a@b@db/n'],
  ];
  for (const [name, kind, value] of cases) {
    let message = '';
    try {
      readEnv({ [name]: kind }, { [name]: value });
    } catch (err) {
      message = (err as Error).message;
    }
    // A # makes the URL unparseable: refused as not a URL, which echoes nothing either.
    t.match(message, new RegExp(`${name}: (its user info holds a character that must be percent-encoded|not a \\w+:// URL)`), value);
    for (const part of ['2024', 'Xy', '1234', 'abcd', 'pa#ss', 'S3cr3t', 'a@b']) t.notOk(message.includes(part), `${value}: "${part}" not echoed`);
  }
  t.equal(readEnv({ R: url(['redis']) }, { R: 'redis://default:2024%2FXy@cache:6379' }).R, 'redis://default:2024%2FXy@cache:6379', 'percent-encoded, it is fine');
  t.equal(readEnv({ M: mongoUri() }, { M: 'mongodb://lintel:Xy7%2Fab@db/n' }).M, 'mongodb://lintel:Xy7%2Fab@db/n');
});

t.test('a Go-style listen address with a bracketed IPv6 host gives the host a server can listen on', async (t) => {
  t.same(readEnv({ ADDR: listenAddr({ default: ':3000' }) }, { ADDR: '[::1]:8080' }).ADDR, { host: '::1', port: 8080 });
  t.same(readEnv({ ADDR: listenAddr({ default: ':3000' }) }, { ADDR: '[::]:8080' }).ADDR, { host: '::', port: 8080 });
  t.throws(() => readEnv({ ADDR: listenAddr({ default: ':3000' }) }, { ADDR: '[]:8080' }), new ConfigError(['ADDR: expected [host]:port, got "[]:8080"']));
});

t.test('a value echoed in a problem never shows the credentials it carries', async (t) => {
  // Broker credentials belong in the client's SASL settings; written into KAFKA_BROKERS, they must not
  // reach the start-up error that lands in the service's log.
  const err = t.throws(() =>
    readEnv(
      { KAFKA_BROKERS: hostPorts(), BACKUP_BROKERS: hostPorts(), PORT: int() },
      { KAFKA_BROKERS: 'kafka://svc:kafka-pass@broker-1:9092', BACKUP_BROKERS: 'broker-2:9092,svc:bare-pass@broker-3:9092', PORT: 'redis://:redis-pass@cache:6379' },
    ),
  ) as ConfigError;
  t.ok(err instanceof ConfigError);
  t.same(err.problems, [
    'KAFKA_BROKERS: expected host:port[,host:port…], got "kafka://svc:[redacted]@broker-1:9092"',
    'BACKUP_BROKERS: expected host:port[,host:port…], got "broker-2:9092,[redacted]@broker-3:9092"',
    'PORT: expected an integer, got "redis://:[redacted]@cache:6379"',
  ]);
  t.notMatch(err.message, /pass/, 'the whole error, as printed at start');
});

t.test('URLs joined with no separator: the password of each is hidden, not only the first one\'s', async (t) => {
  const err = t.throws(() =>
    readEnv(
      { KAFKA_BROKERS: hostPorts(), OTHER: int() },
      { KAFKA_BROKERS: 'kafka://h1:9092,kafka://user:kafka-pass@h2:9092', OTHER: 'http://a,postgres://u:pg-pass@h/db redis://h1,redis://:redis-pass@h2' },
    ),
  ) as ConfigError;
  t.same(err.problems, [
    'KAFKA_BROKERS: expected host:port[,host:port…], got "kafka://h1:9092,kafka://user:[redacted]@h2:9092"',
    'OTHER: expected an integer, got "http://a,postgres://u:[redacted]@h/db redis://h1,redis://:[redacted]@h2"',
  ]);
  t.notMatch(err.message, /pass/, 'the whole error, as printed at start');
});
