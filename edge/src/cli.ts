#!/usr/bin/env node
/**
 * lintel-edge: the gateway's one executable. Runs the command line and exits with its code (pipes and
 * files are written synchronously on Linux, so nothing printed is lost).
 */
// First: holds SIGHUP while `run` loads (hangup-hold.ts).
import './hangup-hold.js';
import { main } from './commands/main.js';

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (err: unknown) => {
    process.stderr.write(`lintel-edge: ${(err as Error).message}\n`);
    process.exit(1);
  },
);
