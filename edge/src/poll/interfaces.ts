/**
 * The interface names an SSH dialect's command runs for (`{if}`). The command runs in the AP's shell, so
 * only plain interface names are accepted: the config check and the poller read a list the same way.
 */

/** A plain network interface name. */
export const INTERFACE_NAME = /^[A-Za-z0-9_.@-]{1,32}$/;

/**
 * The names of a comma-separated list, trimmed, empty entries dropped.
 *
 * @example
 * interfaceNames('phy0-ap0, phy1-ap0'); // ['phy0-ap0', 'phy1-ap0']
 */
export function interfaceNames(list: string): string[] {
  return list
    .split(',')
    .map((name) => name.trim())
    .filter(Boolean);
}
