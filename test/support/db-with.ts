/**
 * A real database whose named collections answer some methods with functions of the test's: to watch
 * the calls the store makes, or to reorder them the way another replica's writes would interleave.
 * Every other method is the real collection's.
 */
import type { Db } from 'mongodb';

/** `db` with `overrides[collection][method]` answering in place of that collection's method. */
export function dbWith(db: Db, overrides: Record<string, Record<string, unknown>>): Db {
  return {
    collection(name: string) {
      const collection = db.collection(name);
      const methods = overrides[name] ?? {};
      return new Proxy(collection, {
        get(target, property) {
          if (typeof property === 'string' && property in methods) return methods[property];
          const value: unknown = Reflect.get(target, property, target);
          return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value;
        },
      });
    },
  } as unknown as Db;
}
