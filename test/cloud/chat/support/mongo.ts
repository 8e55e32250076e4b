/**
 * A MongoDB-wire database of its own for one test file, on the stack's FerretDB (see
 * test/support/stack.ts), so parallel test files never see each other's conversations.
 */
import { MongoClient, type Db } from 'mongodb';
import { freshMongoUri, type Teardown } from '../../../support/stack.js';

/**
 * A unique database with a connected client. Teardowns run last-registered first, so the client
 * closes and then the database is dropped.
 */
export async function freshChatDatabase(t: Teardown): Promise<{ client: MongoClient; db: Db; uri: string }> {
  const uri = await freshMongoUri(t);
  const client = new MongoClient(uri, { serverSelectionTimeoutMS: 5_000 });
  await client.connect();
  t.teardown(() => client.close());
  return { client, db: client.db(), uri };
}
