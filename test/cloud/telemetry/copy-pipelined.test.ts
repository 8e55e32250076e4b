/**
 * A COPY sends its data with the statement, before the server asked for it (store/copy-in.ts). On the
 * real server: the data lands; a statement that fails before its copy, and a copy that fails in its
 * data, reject with the server's error, store nothing, and leave the connection in step (the data the
 * server dropped is not read as the next statement's); and the statements after the COPY run with it.
 */
import t from 'tap';
import pg from 'pg';
import { copyFrom, copyIn } from '../../../cloud/telemetry/store/copy-in.js';
import { freshPgDatabase, quietAtTeardown } from './support/database.js';

async function table(t: Parameters<typeof freshPgDatabase>[0]): Promise<pg.PoolClient> {
  const pool = quietAtTeardown(new pg.Pool({ connectionString: await freshPgDatabase(t), max: 1 }));
  t.teardown(() => pool.end());
  const client = await pool.connect();
  t.teardown(() => client.release());
  await client.query('CREATE TABLE items (id int PRIMARY KEY, label text NOT NULL)');
  return client;
}

const chunk = (text: string) => Buffer.from(text);

t.test('the rows sent with the statement are copied, in several chunks too', async (t) => {
  const client = await table(t);
  t.equal(await copyFrom(client, 'COPY items (id, label) FROM STDIN', [chunk('1\tone\n2\ttwo\n'), chunk('3\tthree\n')]), 3);
  const { rows } = await client.query<{ id: number; label: string }>('SELECT id, label FROM items ORDER BY id');
  t.same(rows, [
    { id: 1, label: 'one' },
    { id: 2, label: 'two' },
    { id: 3, label: 'three' },
  ]);
});

t.test('a statement that fails before its copy rejects, and the next statement is answered in step', async (t) => {
  const client = await table(t);
  await t.rejects(copyFrom(client, 'COPY no_such_table (id) FROM STDIN', [chunk('1\n2\n')]), { message: /no_such_table/ });
  // The data went out unasked; the server dropped it, so the next statement's answer is its own.
  t.equal(await copyFrom(client, 'COPY items (id, label) FROM STDIN', [chunk('7\tseven\n')]), 1);
  const { rows } = await client.query<{ n: string }>('SELECT count(*) AS n FROM items');
  t.equal(rows[0]?.n, '1');
});

t.test('a copy that fails in its data rejects, stores none of it, and runs none of the statements after it', async (t) => {
  const client = await table(t);
  await client.query("INSERT INTO items VALUES (2, 'kept')");
  await t.rejects(copyIn(client, "COPY items (id, label) FROM STDIN; INSERT INTO items VALUES (9, 'after')", [chunk('1\tone\n2\tclash\n3\tthree\n')]), {
    message: /duplicate key/,
  });
  await t.rejects(copyFrom(client, 'COPY items (id, label) FROM STDIN', [chunk('four\tfour\n')]), { message: /invalid input syntax/ });
  const { rows } = await client.query<{ id: number; label: string }>('SELECT id, label FROM items ORDER BY id');
  t.same(rows, [{ id: 2, label: 'kept' }]);
});

t.test('the statements after the COPY run once the copy is done, in one transaction with it', async (t) => {
  const client = await table(t);
  const tags = await copyIn(client, "BEGIN; COPY items (id, label) FROM STDIN; INSERT INTO items VALUES (10, 'ten'); COMMIT", [chunk('1\tone\n')]);
  t.same(tags, ['BEGIN', 'COPY 1', 'INSERT 0 1', 'COMMIT']);
  const { rows } = await client.query<{ n: string }>('SELECT count(*) AS n FROM items');
  t.equal(rows[0]?.n, '2');
});
