/**
 * A stopping service that aborts an answer still streaming (its agent client closed after the 3 s
 * drain) ends that answer with the same `agent_interrupted` frame as before, but does not count it in
 * chat_agent_errors_total: the agent did nothing wrong, and counting it paged someone for every rolling
 * deploy that caught an answer longer than 3 s. The agent's own connection breaking mid-answer is still
 * counted (agent-failures.test.ts).
 */
import t from 'tap';
import { createConversation, getConversation, metricValue, openSend, OpenStream, startChat, terminalOf } from './support/harness.js';

t.test('an answer streaming when the agent client stops: agent_interrupted frame, no agent error counted, nothing stored', async (t) => {
  const chat = await startChat(t);
  const conversation = await createConversation(chat.url, 'ana');
  chat.agent.expect({ tokens: ['still ', 'thinking'], holdAfter: 1 });
  const stream = await openSend(chat.url, 'ana', conversation.id, { content: 'a long answer, please' });
  if (!(stream instanceof OpenStream)) throw new Error(`expected a stream, got ${stream.status} ${JSON.stringify(stream.body)}`);
  await stream.until(() => stream.frames.length === 1);
  t.same(stream.frames[0]?.frame, { type: 'token', text: 'still ' }, 'the answer is streaming');

  await chat.agentClient.stop();
  await stream.ended;

  t.same(terminalOf(stream), { type: 'error', error: 'agent_interrupted', message: 'agent connection broke in the middle of the answer' }, 'the frame the browser got before');
  t.equal(await metricValue(chat.registry, 'chat_agent_errors_total', { reason: 'stream_broken' }), 0, 'the stop is not an agent error');
  t.equal(await metricValue(chat.registry, 'chat_streams_failed_total', { reason: 'agent_interrupted' }), 1, 'the stream still counts as failed');
  t.same((await getConversation(chat.url, 'ana', conversation.id)).messages, [], 'nothing stored');
});
