/**
 * A URL's user name and password are percent-decoded by every driver as it builds its client (ioredis,
 * pg, the MongoDB driver), and a lone `%` throws `URI malformed` there. They are refused at start instead,
 * naming the variable and never echoing the value; and a MONGO_URI goes through the driver's own parser,
 * so a misspelt option or a bad value is refused then too.
 */
import t from 'tap';
import { ConfigError, mongoUri, readEnv, url, type EnvVar } from '../../shared/env.js';

/** The problems readEnv reports for one variable, or [] if it takes the value. */
function problemsOf(name: string, kind: EnvVar<string>, value: string): string[] {
  try {
    readEnv({ [name]: kind }, { [name]: value });
    return [];
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    return err.problems;
  }
}

const redis = url(['redis', 'rediss']);
const postgres = url(['postgres', 'postgresql']);
const PASSWORD = 'the password holds a % that is not valid percent-encoding; write a literal % as %25 (the value is not shown)';
const USER = 'the user name holds a % that is not valid percent-encoding; write a literal % as %25 (the value is not shown)';

t.test('a password or user name that is not valid percent-encoding is refused, without echoing it', async (t) => {
  const cases: Array<[string, EnvVar<string>, string, string]> = [
    ['REDIS_URL', redis, 'redis://:50%off@cache:6379/0', PASSWORD],
    ['REDIS_URL', redis, 'rediss://default:50%@cache:6380', PASSWORD],
    ['REDIS_URL', redis, 'redis://ops%zz:s3cret@cache:6379', USER],
    ['DATABASE_URL', postgres, 'postgres://lintel:50%off@db:5432/lintel', PASSWORD],
    ['DATABASE_URL', postgres, 'postgres://lintel:%C3%28x@db:5432/lintel', PASSWORD],
    ['MONGO_URI', mongoUri(), 'mongodb://u:p%zz@db/chat', PASSWORD],
    ['MONGO_URI', mongoUri(), 'mongodb://u:50%off@h1:27017,h2:27017/chat?replicaSet=rs0', PASSWORD],
    ['MONGO_URI', mongoUri(), 'mongodb://u%zz:s3cret@db/chat', USER],
    ['MONGO_URI', mongoUri(), 'mongodb://u%zz@db/chat', USER],
  ];
  for (const [name, kind, value, why] of cases) {
    const problems = problemsOf(name, kind, value);
    t.same(problems, [`${name}: ${why}`], value);
    for (const secret of ['50%off', '50%@', 'p%zz', 's3cret', '%C3%28x', 'u%zz', 'ops%zz']) t.notOk(problems.join('\n').includes(secret), `${value}: "${secret}" not echoed`);
  }
});

t.test('a literal % written as %25 is fine', async (t) => {
  t.equal(readEnv({ REDIS_URL: redis }, { REDIS_URL: 'redis://:50%25off@cache:6379/0' }).REDIS_URL, 'redis://:50%25off@cache:6379/0');
  t.equal(readEnv({ DATABASE_URL: postgres }, { DATABASE_URL: 'postgres://lintel:50%25off@db/lintel' }).DATABASE_URL, 'postgres://lintel:50%25off@db/lintel');
  t.equal(readEnv({ MONGO_URI: mongoUri() }, { MONGO_URI: 'mongodb://u:50%25off@db/chat' }).MONGO_URI, 'mongodb://u:50%25off@db/chat');
  t.equal(readEnv({ MONGO_URI: mongoUri() }, { MONGO_URI: 'mongodb://u%25x:p%C3%A9@db/chat' }).MONGO_URI, 'mongodb://u%25x:p%C3%A9@db/chat', 'UTF-8 percent-encoding too');
});

t.test('a MONGO_URI the MongoDB driver refuses is refused at start, with the driver\'s reason', async (t) => {
  for (const [value, why] of [
    ['mongodb://u:s3cret@db/chat?retryWrite=true', 'option retrywrite is not supported'],
    ['mongodb://u:s3cret@db/chat?tls=yes', 'tls/ssl must be either "true" or "false"'],
    ['mongodb://db/chat?maxPoolSize=-1', 'maxPoolSize can only be a positive int value, got: -1'],
    ['mongodb://h1,h2/chat?directConnection=true', 'directConnection option requires exactly one host'],
  ] as const) {
    const problems = problemsOf('MONGO_URI', mongoUri(), value);
    t.same(problems, [`MONGO_URI: the MongoDB driver refuses it: ${why}`], value);
    t.notOk(problems.join('\n').includes('s3cret'), `${value}: the password is not echoed`);
  }
  for (const good of ['mongodb://u:s3cret@h1:27017,h2:27017/chat?replicaSet=rs0&retryWrites=true&w=majority', 'mongodb+srv://u:s3cret@cluster0.example.net/chat?authSource=admin', 'mongodb://db/chat?tls=true']) {
    t.equal(readEnv({ MONGO_URI: mongoUri() }, { MONGO_URI: good }).MONGO_URI, good, `${good}: taken, without connecting`);
  }
});

t.test('a driver message that would show the password is not shown', async (t) => {
  // The driver quotes the value it refuses (`… got: <value>`); with a password equal to that value, its
  // message would carry the password.
  t.same(problemsOf('MONGO_URI', mongoUri(), 'mongodb://db/chat?maxPoolSize=s3cret'), ['MONGO_URI: the MongoDB driver refuses it: Expected maxPoolSize to be stringified int value, got: s3cret'], 'the driver does quote the value');
  const problems = problemsOf('MONGO_URI', mongoUri(), 'mongodb://u:s3cret@db/chat?maxPoolSize=s3cret');
  t.same(problems, ['MONGO_URI: the MongoDB driver refuses it (its message is not shown: it would show the password)']);
  const encoded = problemsOf('MONGO_URI', mongoUri(), 'mongodb://u:bad%20option@db/chat?bad%20option=1');
  t.same(encoded, ['MONGO_URI: the MongoDB driver refuses it (its message is not shown: it would show the password)'], 'the password as decoded counts too');
});
