/**
 * The device key behind every stored hash: generated on the gateway on first start, kept in a 0600 file,
 * the same key on every later start, and a broken key file refused with what to do.
 */
import t from 'tap';
import { chmodSync, existsSync, readdirSync, readFileSync, readlinkSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { DEVICE_KEY_BYTES, loadOrCreateDeviceKey } from '../../../edge/src/zones/device-key.js';

t.test('first start generates 32 random bytes in a new 0600 file; later starts read the same key', async (t) => {
  const path = join(t.testdir({}), 'state', 'device.key');
  const warnings: string[] = [];
  const key = loadOrCreateDeviceKey(path, (w) => warnings.push(w));
  t.equal(key.length, DEVICE_KEY_BYTES);
  t.equal(statSync(path).mode & 0o777, 0o600, 'owner read/write only');
  t.same(readFileSync(path), key, 'the file holds the key');
  t.same(readdirSync(join(path, '..')), ['device.key'], 'the file the key was staged in is gone');
  t.same(loadOrCreateDeviceKey(path, (w) => warnings.push(w)), key, 'a restart keeps the key (and so the stored ids)');
  t.same(warnings, []);
  const other = loadOrCreateDeviceKey(join(t.testdir({}), 'device.key'));
  t.not(other.toString('hex'), key.toString('hex'), 'another gateway, another key');
});

t.test('a file staged by a start that was cut off is left alone, and the key is made beside it', async (t) => {
  const dir = t.testdir({ 'device.key.0a1b2c3d4e5f.new': '' });
  const key = loadOrCreateDeviceKey(join(dir, 'device.key'));
  t.same(readFileSync(join(dir, 'device.key')), key);
  t.same(readdirSync(dir).sort(), ['device.key', 'device.key.0a1b2c3d4e5f.new']);
});

t.test('a key file others can read is tightened to 0600, with a warning that holds no key material', async (t) => {
  const path = join(t.testdir({}), 'device.key');
  const key = Buffer.alloc(DEVICE_KEY_BYTES, 0xab);
  writeFileSync(path, key);
  chmodSync(path, 0o644);
  const warnings: string[] = [];
  t.same(loadOrCreateDeviceKey(path, (w) => warnings.push(w)), key);
  t.equal(statSync(path).mode & 0o777, 0o600);
  t.same(warnings, [`device key file ${path} was mode 644; tightened to 600`]);
  t.notOk(warnings.join('').includes(key.toString('hex')) || warnings.join('').includes(key.toString('base64')));
});

t.test('a key file of the wrong size is refused with what to do, never echoed', async (t) => {
  const path = join(t.testdir({}), 'device.key');
  writeFileSync(path, 'not-a-32-byte-key\n', { mode: 0o600 });
  t.throws(() => loadOrCreateDeviceKey(path), {
    name: 'DeviceKeyError',
    message: `device key file ${path} holds 18 bytes, expected 32; remove it to generate a new key (tracked devices will be forgotten)`,
  });
  t.same(readFileSync(path, 'utf8'), 'not-a-32-byte-key\n', 'the file is left alone');
});

t.test('a state directory the key cannot be written to is a clear error', async (t) => {
  const dir = t.testdir({ 'not-a-dir': 'a file where the state directory should be' });
  const path = join(dir, 'not-a-dir', 'device.key');
  t.throws(() => loadOrCreateDeviceKey(path), { name: 'DeviceKeyError', message: /^cannot create the directory of the device key file .*\/not-a-dir\/device\.key: (EEXIST|ENOTDIR)$/ });
});

t.test('a device.key that is a symbolic link is followed to the key it points to', async (t) => {
  const dir = t.testdir({});
  const key = Buffer.alloc(DEVICE_KEY_BYTES, 0x5c);
  writeFileSync(join(dir, 'kept-elsewhere.key'), key, { mode: 0o600 });
  symlinkSync(join(dir, 'kept-elsewhere.key'), join(dir, 'device.key'));
  t.same(loadOrCreateDeviceKey(join(dir, 'device.key')), key);
});

t.test('a device.key that is a symbolic link to nothing is refused with what to do, no new key made', async (t) => {
  const dir = t.testdir({});
  const path = join(dir, 'device.key');
  const target = join(dir, 'lost', 'device.key');
  symlinkSync(target, path);
  t.throws(() => loadOrCreateDeviceKey(path), {
    name: 'DeviceKeyError',
    code: undefined,
    message: `device key file ${path} is a symbolic link to ${target}, which does not exist; put the key back there, or remove the link to generate a new key (tracked devices will be forgotten)`,
  });
  t.equal(readlinkSync(path), target, 'the link is left alone');
  t.notOk(existsSync(target), 'no key is made where it points');
  t.same(readdirSync(dir), ['device.key'], 'nothing staged is left behind');
});
