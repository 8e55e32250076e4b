/**
 * A key given twice with the same spelling is refused like `name` and `Name`: JSON.parse would keep
 * the last one silently, so `{"Name":"Acme",…,"Name":"Evil"}` would store Evil.
 */
import t from 'tap';
import { topLevelKeys } from '../../../cloud/registry/json-keys.js';
import { startRegistry } from './support/harness.js';

t.test('topLevelKeys: the keys as written, decoded, nested values skipped', async (t) => {
  const cases: [string, string[] | undefined][] = [
    ['{}', []],
    [' \r\n\t{ } ', []],
    ['{"Name":"Acme","Tier":"pooled","Name":"Evil"}', ['Name', 'Tier', 'Name']],
    ['{"N\\u0061me":"a","Name":"b"}', ['Name', 'Name']],
    ['{"\\u004e\\u0061\\u006D\\u0065":1}', ['Name']],
    ['{"a\\"b":1,"c\\\\":2,"\\/":3}', ['a"b', 'c\\', '/']],
    ['{"nested":{"Name":1,"Name":2},"list":[{"Name":3},"}",["{"]],"Name":4}', ['nested', 'list', 'Name']],
    ['{"s":"a \\" , } ] \\\\","n":-1.5e+3,"t":true,"f":false,"z":null}', ['s', 'n', 't', 'f', 'z']],
    ['{ "a" : 1 , "b" : [ ] , "c" : { } }', ['a', 'b', 'c']],
    ['{"é":1,"😀":2,"\\ud83d\\ude00":3}', ['é', '😀', '😀']],
    ['[{"Name":1}]', undefined],
    ['"Name"', undefined],
    ['', undefined],
    ['{"Name":', undefined],
    ['{"Name" 1}', undefined],
    ['{"Name":1 "Tier":2}', undefined],
    ['{"Name":"open', undefined],
  ];
  for (const [text, keys] of cases) t.same(topLevelKeys(text), keys, text);
});

t.test('signup: a key given twice with the same spelling is a 400 naming it, and nothing is stored', async (t) => {
  const app = await startRegistry(t);
  const bodies = [
    '{"Name":"Acme","Tier":"pooled","Name":"Evil"}',
    '{"N\\u0061me":"Acme","Tier":"pooled","Name":"Evil"}',
    '{"Name":"Acme","Tier":"pooled","DisplayName":"A","DisplayName":"B"}',
  ];
  for (const body of bodies) {
    const refused = await app.signup(body);
    t.equal(refused.status, 400, body);
    t.match(refused.json, { type: 'Validation Error', message: /^(Name|DisplayName): given twice$/ }, body);
  }
  const thrice = await app.signup('{"Name":"Acme","Tier":"pooled","name":"Evil","Name":"Worse"}');
  t.equal(thrice.status, 400);
  t.match(thrice.json, { message: 'Name: given twice (as Name and name)' }, 'one problem per key, however often it is repeated');
  t.equal(await app.rowCount(), 0, 'nothing stored');
  const nested = await app.signup('{"Name":"Acme","Tier":"pooled","DisplayName":{"Name":1,"Name":2}}');
  t.match(nested.json, { message: /^DisplayName: expected a string/ }, 'a repeat inside a nested value is not a top-level repeat');
  const once = await app.signup('{"Name":"Acme","Tier":"pooled"}');
  t.equal(once.status, 201, 'each key once is accepted');
});

t.test('status report: a key given twice is a 400 naming it, and nothing changes', async (t) => {
  const app = await startRegistry(t);
  const id = ((await app.signup({ Name: 'acme', Tier: 'pooled' })).json as { ID: string }).ID;
  for (const body of ['{"status":"ready","status":"failed"}', '{"status":"failed","detail":"a","detail":"b"}']) {
    const refused = await app.signed('POST', `/internal/organizations/${id}/status`, body);
    t.equal(refused.status, 400, body);
    t.match(refused.json, { type: 'Validation Error', message: /^(status|detail): given twice$/ }, body);
  }
  const row = (await app.pool.query('SELECT status, status_detail FROM organizations WHERE id = $1', [id])).rows[0];
  t.same(row, { status: 'provisioning', status_detail: null }, 'nothing changed');
});
