/**
 * Holds SIGHUP from the entry point's first instant, for `run` only. Node's default for SIGHUP ends the
 * process, and `systemctl reload` right after `systemctl start` can land while the collector is still
 * loading (the bundle, its data files, the config and its secrets), before `run` listens. systemd counts
 * an end by SIGHUP as a clean exit, so `Restart=on-failure` would leave the collector down. `run` takes the
 * hold over ({@link endHangupHold}) and serves a SIGHUP held meanwhile as a reload. Other commands keep the
 * default until they say otherwise: `simulate` takes a terminal hangup, once it runs, as it takes Ctrl-C
 * (it stops and removes its temporary state).
 *
 * Imported first by cli.ts: ES modules are evaluated in import order, so this runs before the rest.
 */
let held = false;
const hold = (): void => {
  held = true;
};
if (process.argv[2] === 'run') process.on('SIGHUP', hold);

/** Ends the hold; answers whether a SIGHUP arrived while it was in place. */
export function endHangupHold(): boolean {
  process.off('SIGHUP', hold);
  const arrived = held;
  held = false;
  return arrived;
}
