/**
 * A collector whose zone file is found corrupt at a save while its disk has no inodes left: the file
 * is set aside (a rename takes no inode), but the new one cannot be made. Run with `node --import tsx`
 * inside the private mount noFreeInodesTmpfs gives (`<disk>`, filled with empty files), with
 * `<ledger>` outside it. It frees the disk to make the damaged file, fills it again, ticks, frees it,
 * ticks again, and prints as one JSON line what it logged, what was set aside (during the full tick
 * and after), and which devices the zone file holds at the end.
 */
import { readdirSync, unlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { asideIn, collectorOver, fileWithDamagedFreeList, storedIds } from './damaged-zone-file.js';

const [disk, ledgerPath] = process.argv.slice(2) as [string, string];

function freeInodes(): void {
  for (const name of readdirSync(disk)) if (name.startsWith('.filler-')) unlinkSync(join(disk, name));
}

function useUpInodes(): void {
  for (let i = 0; ; i++) {
    try {
      writeFileSync(join(disk, `.filler-again-${i}`), '');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOSPC') return;
      throw err;
    }
  }
}

freeInodes();
const zonesPath = join(disk, 'zones.sqlite');
fileWithDamagedFreeList(zonesPath, []);
const collector = collectorOver(zonesPath, ledgerPath);
useUpInodes();
await collector.daemon.tick();
const asideWhileFull = asideIn(disk);
freeInodes();
await collector.daemon.tick();
let stored: string[];
try {
  stored = storedIds(zonesPath);
} catch (err) {
  stored = [`cannot read ${zonesPath}: ${(err as Error).message}`];
}
const result = { lines: collector.lines, asideWhileFull, aside: asideIn(disk), stored, deviceIds: collector.deviceIds };
await collector.close();
process.stdout.write(`${JSON.stringify(result)}\n`);
