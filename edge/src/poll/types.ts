/**
 * What polling hands to the zone tracker: per access point, the stations it hears now, with signal
 * normalised to dBm so that hysteresis compares like with like.
 */

/** One station as one access point hears it. `mac` is lowercase `aa:bb:cc:dd:ee:ff`; it never leaves the process. */
export interface StationSighting {
  mac: string;
  /**
   * Signal in dBm (SNR dialects are converted with the dialect's noise floor). Higher is louder.
   * -Infinity: the AP lists the station but gives no readable signal for it.
   */
  rssiDbm: number;
}

/**
 * Why an AP gave nothing this tick (optional, for `doctor` and metrics labels):
 * - `timeout`: no complete answer within the tick's timeout (an SNMP agent with a wrong v2c community also
 *   stays silent, so it lands here);
 * - `unreachable`: connection refused or reset;
 * - `auth`: credentials or the pinned host key were refused;
 * - `bad_output`: the AP answered something the dialect cannot read;
 * - `config`: the AP's configuration cannot work with its dialect;
 * - `ap_down`: an AP behind a controller that the controller reports as not up, or does not list (the
 *   controller answered; only dialects with an AP status table can tell);
 * - `error`: anything else.
 */
export type PollFailureReason = 'timeout' | 'unreachable' | 'auth' | 'bad_output' | 'config' | 'ap_down' | 'error';

/** The outcome of polling one configured access point in one tick. */
export type ApPollResult =
  | { ap: string; zone: string; ok: true; stations: StationSighting[]; durationMs: number }
  | { ap: string; zone: string; ok: false; error: string; durationMs: number; reason?: PollFailureReason };

/** How an access point is reached; credentials are read from files, never inline. */
export interface SnmpTarget {
  transport: 'snmp';
  host: string;
  port: number;
  version: '2c' | '3';
  /** v2c */
  community?: string;
  /** v3 (USM) */
  user?: string;
  authProtocol?: 'sha' | 'md5';
  authKey?: string;
  privProtocol?: 'aes' | 'des';
  privKey?: string;
}

export interface SshTarget {
  transport: 'ssh';
  host: string;
  port: number;
  username: string;
  /** PEM private key contents (read from the configured file). */
  privateKey: string;
  /** Expected host key SHA-256 fingerprint (base64, as `ssh-keygen -l` prints without the prefix); optional pinning. */
  hostKeySha256?: string;
  /** Interface name substituted for `{if}` in the dialect's command. */
  interface?: string;
}

/** One access point as the poller sees it. */
export interface AccessPoint {
  name: string;
  zone: string;
  dialect: string;
  target: SnmpTarget | SshTarget;
  /**
   * For controller dialects (cisco-wlc, ruckus-zd): the AP identity (AP name or AP MAC, as the dialect
   * reports it) to zone map for the APs behind this controller. Stations of unmapped APs are ignored.
   * A MAC may be written in any spelling for a dialect that names APs by MAC; a name is matched exactly as
   * the controller writes it, even one that looks like a MAC.
   */
  apZones?: Record<string, string>;
}

/** The poller port: polls all APs concurrently, each bounded by the timeout; never rejects. */
export interface Poller {
  pollAll(aps: readonly AccessPoint[], timeoutMs: number): Promise<ApPollResult[]>;
  close(): Promise<void>;
}
