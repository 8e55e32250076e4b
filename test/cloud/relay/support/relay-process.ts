/**
 * The relay as a separate process, started the way `npm run relay` starts it (tsx cloud/relay/main.ts),
 * with its JSON log lines collected from stdout (test/support/service-process.ts).
 */
import { startServiceProcess, type ServiceProcess } from '../../../support/service-process.js';
import type { Teardown } from './relay-harness.js';

export type RelayProcess = ServiceProcess;

/**
 * Starts a relay process with `env` and waits until it listens and, unless `waitForBroker` is false,
 * its broker subscription is live. Stopped at teardown if it still runs.
 */
export function startRelayProcess(t: Teardown, env: Record<string, string>, options: { waitForBroker?: boolean } = {}): Promise<RelayProcess> {
  return startServiceProcess(t, {
    name: 'relay',
    script: 'cloud/relay/main.ts',
    env,
    listening: 'listening',
    ready: options.waitForBroker === false ? [] : ['broker subscribed'],
  });
}
