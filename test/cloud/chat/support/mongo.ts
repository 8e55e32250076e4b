/**
 * A MongoDB-wire database of its own for one test file, on the local stack's FerretDB, dropped at
 * teardown so parallel test files never see each other's conversations.
 */
import { randomBytes } from 'node:crypto';
import { MongoClient, type Db } from 'mongodb';

type Teardown = { teardown(fn: () => unknown): void };

const DEFAULT_MONGO_URI = 'mongodb://127.0.0.1:57017/lintel';

/** A unique database; `drop` removes it and closes the client. */
export async function openChatDatabase(): Promise<{ client: MongoClient; db: Db; uri: string; drop: () => Promise<void> }> {
  const uri = new URL(process.env.MONGO_URI ?? DEFAULT_MONGO_URI);
  uri.pathname = `/chat_test_${Date.now().toString(36)}_${randomBytes(4).toString('hex')}`;
  const client = new MongoClient(uri.toString(), { serverSelectionTimeoutMS: 5_000 });
  await client.connect();
  const db = client.db();
  const drop = async () => {
    await db.dropDatabase().catch(() => undefined);
    await client.close();
  };
  return { client, db, uri: uri.toString(), drop };
}

/** A unique database and its client, both dropped and closed at teardown. */
export async function freshChatDatabase(t: Teardown): Promise<{ client: MongoClient; db: Db; uri: string }> {
  const fresh = await openChatDatabase();
  t.teardown(fresh.drop);
  return fresh;
}
