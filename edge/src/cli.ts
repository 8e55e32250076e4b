#!/usr/bin/env node
/**
 * lintel-edge: the gateway's one executable. Runs the command line and exits with its code (pipes and
 * files are written synchronously on Linux, so nothing printed is lost).
 *
 * The command line is loaded here, not imported: in the single executable, a module that finds its data
 * files while it loads (the AP dialects') makes the banner unpack them, and a cache directory the banner
 * refuses must end in one line and exit 2 (commands/cache-directory.ts), not in a stack trace and exit 1,
 * which the unit restarts for ever.
 */
// First: holds SIGHUP while `run` loads (hangup-hold.ts).
import './hangup-hold.js';
import { isCacheDirectoryRefusal } from './commands/cache-directory.js';

function fail(err: unknown): never {
  process.stderr.write(`lintel-edge: ${(err as Error).message}\n`);
  process.exit(isCacheDirectoryRefusal(err) ? 2 : 1);
}

import('./commands/main.js').then(({ main }) => main(process.argv.slice(2)).then((code) => process.exit(code), fail), fail);
