/**
 * The chat service's environment, read once at start; every problem is reported at once.
 */
import { int, logLevel, mongoUri, readEnv, url } from '../../shared/env.js';
import { DEFAULT_HISTORY_MAX_MESSAGES } from './app.js';
import { DEFAULT_AGENT_TIMEOUTS } from './http-agent.js';

export const CHAT_ENV = {
  PORT: int({ default: 3000, min: 0, max: 65535 }),
  MONGO_URI: mongoUri(),
  AGENT_URL: url(['http', 'https'], { default: 'http://agent:3000' }),
  HISTORY_MAX_MESSAGES: int({ default: DEFAULT_HISTORY_MAX_MESSAGES, min: 0, max: 100 }),
  AGENT_CONNECT_TIMEOUT_MS: int({ default: DEFAULT_AGENT_TIMEOUTS.connectTimeoutMs, min: 1, max: 60_000 }),
  AGENT_RESPONSE_TIMEOUT_MS: int({ default: DEFAULT_AGENT_TIMEOUTS.responseTimeoutMs, min: 1, max: 600_000 }),
  AGENT_IDLE_TIMEOUT_MS: int({ default: DEFAULT_AGENT_TIMEOUTS.idleTimeoutMs, min: 1, max: 600_000 }),
  LOG_LEVEL: logLevel(),
};

export type ChatConfig = ReturnType<typeof readChatConfig>;

/** Reads the chat configuration, or throws a ConfigError naming every bad variable. */
export function readChatConfig(source: NodeJS.ProcessEnv = process.env) {
  return readEnv(CHAT_ENV, source);
}
