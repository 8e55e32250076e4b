/**
 * The paced agent in a process of its own, as the real agent is a service of its own: the load
 * client's event loop then never delays the agent's tokens, nor the agent's pacing the client's reads,
 * on either path. Started by the benchmark over an IPC channel: it answers `{url}` once listening,
 * the timings it noted on `timings`, and stops on `stop` or when the benchmark goes away.
 */
import { PacedAgent, type AgentTimings } from './paced-agent.js';

export type AgentRequest = { type: 'timings' } | { type: 'stop' };
export type AgentReply = { type: 'listening'; url: string } | { type: 'timings'; timings: Array<[string, AgentTimings]> };

const send = (reply: AgentReply) => process.send?.(reply);

const tokens = Number(process.argv[2]);
const intervalMs = Number(process.argv[3]);
const agent = new PacedAgent({ tokens, intervalMs });
await agent.start();

const stop = async () => {
  await agent.stop();
  process.disconnect?.();
};
process.on('message', (message: AgentRequest) => {
  if (message.type === 'timings') send({ type: 'timings', timings: [...agent.timings] });
  else void stop();
});
process.on('disconnect', () => void agent.stop());
send({ type: 'listening', url: agent.url });
