/** The gateway's configuration: one YAML file, checked once at start, every problem reported at once. */
export { loadConfig, parseConfig, stateDirOf } from './load.js';
export type { ConfigResult, DialectInfo, EdgeConfig, LoadOptions } from './load.js';
export { dialectInfoOf, shippedDialects } from './dialects.js';
