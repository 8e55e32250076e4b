/**
 * The README's two tables stay true to the tree: the services table names each cloud service once, with
 * the seed it comes from and a script that starts it; the benchmarks table has one row per bench
 * script, each a directory under tools/bench. Hand edits of long table rows have replaced one row
 * with another before.
 */
import t from 'tap';
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';

const root = process.cwd();
const readme = readFileSync(join(root, 'README.md'), 'utf8');
const scripts = (JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { scripts: Record<string, string> }).scripts;

/** The rows of the markdown table whose header row starts with `| <first> |`, as trimmed cells. */
function tableAfter(header: string): string[][] {
  const lines = readme.split('\n');
  const start = lines.findIndex((line) => line.startsWith(`| ${header} |`));
  if (start < 0) return [];
  const rows: string[][] = [];
  for (const line of lines.slice(start + 2)) {
    if (!line.startsWith('|')) break;
    rows.push(line.slice(1, -1).split(' | ').map((cell) => cell.trim()));
  }
  return rows;
}

const nameOf = (cell: string | undefined) => /^`([a-z-]+)`$/.exec(cell ?? '')?.[1];

t.test('the services table: each cloud service once, with its seed and a start script', async (t) => {
  const services = readdirSync(join(root, 'cloud'), { withFileTypes: true })
    .filter((entry) => entry.isDirectory())
    .map((entry) => entry.name)
    .sort();
  const rows = tableAfter('service');
  t.same(rows.map((row) => nameOf(row[0])).sort(), services, 'one row per directory under cloud/');
  for (const row of rows) {
    const name = nameOf(row[0]) ?? '';
    t.equal(row.length, 3, `${name}: three cells`);
    t.match(row[2] ?? '', /^00[0-2]$/, `${name}: the seed it comes from`);
    t.ok(scripts[name], `${name}: npm run ${name} exists`);
  }
});

t.test('the benchmarks table: one row per bench script, each with its directory', async (t) => {
  const benches = Object.keys(scripts)
    .filter((script) => script.startsWith('bench:'))
    .map((script) => script.slice('bench:'.length))
    .sort();
  const rows = tableAfter('bench');
  t.same(rows.map((row) => nameOf(row[0])).sort(), benches, 'one row per npm run bench:<name>');
  for (const row of rows) {
    const name = nameOf(row[0]) ?? '';
    t.equal(row.length, 5, `${name}: what it measures, headline, target, latest figures`);
    t.match(row[2] ?? '', /ratio/, `${name}: the headline is a ratio`);
    t.ok(existsSync(join(root, 'tools/bench', name, 'index.ts')), `${name}: tools/bench/${name}/index.ts`);
  }
});
