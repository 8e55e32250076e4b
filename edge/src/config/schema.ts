/**
 * The shape of the gateway's YAML config. Secrets are file references only: an inline secret key is
 * refused with the name of the key to use instead.
 */
import * as t from 'io-ts';
import {
  closed,
  DevicesPerPerson,
  emptyAllowed,
  EndpointUrl,
  ExportedName,
  FilePath,
  Hostname,
  HostKeySha256,
  HttpUrl,
  IngestKeyId,
  InterfaceList,
  ListenAddress,
  LogLevel,
  mapOf,
  NonEmptyText,
  NonNegativeNumber,
  Port,
  PositiveInt,
  PositiveSeconds,
  SecretFilePath,
  SnmpVersion,
  TimerSeconds,
} from './codecs.js';

const inline = (fileKey: string) => `inline secrets are not accepted; put the value in a file (mode 600) and set ${fileKey} to its path`;

const Snmp = closed(
  'the snmp settings (an object)',
  { version: SnmpVersion },
  {
    port: Port,
    communityFile: SecretFilePath,
    user: t.string,
    authProtocol: t.keyof({ sha: null, md5: null }, 'one of sha, md5'),
    authKeyFile: SecretFilePath,
    privProtocol: t.keyof({ aes: null, des: null }, 'one of aes, des'),
    privKeyFile: SecretFilePath,
  },
  {
    community: inline('communityFile'),
    authKey: inline('authKeyFile'),
    authPassword: inline('authKeyFile'),
    privKey: inline('privKeyFile'),
    privPassword: inline('privKeyFile'),
  },
);

const Ssh = closed(
  'the ssh settings (an object)',
  { username: NonEmptyText, privateKeyFile: SecretFilePath },
  { port: Port, hostKeySha256: HostKeySha256, interface: InterfaceList },
  { password: 'password login is not supported; use key authentication with privateKeyFile', privateKey: inline('privateKeyFile') },
);

/** An AP behind a controller: its zone, and the name reports use (needed when it is keyed by MAC). */
const ControlledAp = t.union(
  [ExportedName, closed('an AP behind the controller ({zone, name})', { zone: ExportedName }, { name: ExportedName })],
  'a zone, or {zone, name}',
);

export const AccessPointConfig = closed(
  'an access point (an object)',
  { name: ExportedName, host: Hostname, dialect: t.string, transport: t.keyof({ snmp: null, ssh: null }, 'one of snmp, ssh') },
  { zone: ExportedName, snmp: Snmp, ssh: Ssh, apZones: t.record(t.string, ControlledAp, 'a map from AP name (or MAC) to its zone') },
  { zones: 'use apZones (AP behind the controller → zone) or zone (this AP’s zone)', port: 'set the port inside the snmp or ssh block' },
);
export type AccessPointConfig = t.TypeOf<typeof AccessPointConfig>;

const Zone = emptyAllowed(closed('a zone (an object, or empty)', {}, { devicesPerPerson: DevicesPerPerson }, { useDevicesPerPerson: 'set devicesPerPerson to the factor' }));

const Tracker = closed(
  'the tracker settings (an object)',
  {},
  {
    switchPolls: PositiveInt,
    switchMarginDb: NonNegativeNumber,
    frozenPolls: PositiveInt,
    absentPolls: PositiveInt,
    transitionWindowS: PositiveSeconds,
  },
);

const Ingest = closed(
  'the ingest settings (an object)',
  { url: HttpUrl, secretFile: SecretFilePath },
  { keyId: IngestKeyId, timeoutS: TimerSeconds },
  { secret: inline('secretFile'), signingSecret: inline('secretFile') },
);

/** A building device the gateway drives locally (a thermostat), reached through its driver's bindings. */
const Sensor = closed(
  'a sensor (an object)',
  { sensorId: ExportedName, zone: ExportedName, metric: t.string, driver: t.string, endpoint: EndpointUrl },
  {},
  { roomId: 'use zone (the sensor’s zone)' },
);

export const EdgeConfigFile = closed(
  'the configuration (a YAML mapping)',
  {
    buildingId: ExportedName,
    pollIntervalS: TimerSeconds,
    requestTimeoutS: TimerSeconds,
    zones: mapOf('a map from zone id to its settings', ExportedName, Zone),
    accessPoints: t.array(AccessPointConfig, 'a list of access points'),
  },
  {
    stateDir: FilePath,
    tracker: Tracker,
    ingest: Ingest,
    metrics: closed('the metrics settings (an object)', { listen: ListenAddress }, {}),
    logLevel: LogLevel,
    ledgerRetentionDays: PositiveInt,
    sensors: t.array(Sensor, 'a list of sensors'),
  },
  {
    pollInterval: 'renamed to pollIntervalS (seconds)',
    requestTimeout: 'renamed to requestTimeoutS (seconds)',
    frozenPolls: 'set it under tracker: (tracker.frozenPolls)',
    devicesPerPerson: 'set it per zone: zones.<zone>.devicesPerPerson',
  },
);
export type EdgeConfigFile = t.TypeOf<typeof EdgeConfigFile>;
