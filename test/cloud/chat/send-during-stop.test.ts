/**
 * A send still waiting for the agent's response headers when the stopping service closes its agent
 * client is told the service is stopping (503, as a rename or a delete would be), not that the agent is
 * unreachable: the agent did nothing wrong, and counting it in chat_agent_errors_total would page
 * someone for every deploy.
 */
import t from 'tap';
import { createConversation, getConversation, metricValue, openSend, OpenStream, startChat } from './support/harness.js';

t.test('a send waiting for the agent when its client stops: 503 stopping, no agent error counted, nothing stored', async (t) => {
  const chat = await startChat(t);
  const conversation = await createConversation(chat.url, 'ana');
  chat.agent.expect({ neverAnswer: true });
  const sending = openSend(chat.url, 'ana', conversation.id, { content: 'anyone there?' });
  await chat.agent.called(1);
  t.equal(chat.agent.calls.length, 1, 'the question reached the agent, which holds its headers');

  await chat.agentClient.stop();
  const answer = await sending;

  if (answer instanceof OpenStream) throw new Error('expected a JSON answer, got a stream');
  t.equal(answer.status, 503);
  t.match(answer.headers.get('content-type'), /^application\/json/);
  t.same(answer.body, { type: 'Service Unavailable', message: 'the service is stopping; send the request again' });
  for (const reason of ['unreachable', 'timeout', 'bad_response']) {
    t.equal(await metricValue(chat.registry, 'chat_agent_errors_total', { reason }), 0, `no agent error counted as ${reason}`);
  }
  t.equal(await metricValue(chat.registry, 'chat_streams_started_total'), 0);
  t.equal((await getConversation(chat.url, 'ana', conversation.id)).messages?.length, 0, 'nothing stored');
});

t.test('a send arriving after the agent client stopped: 503 stopping, no agent error counted', async (t) => {
  const chat = await startChat(t);
  const conversation = await createConversation(chat.url, 'ana');
  await chat.agentClient.stop();

  const answer = await openSend(chat.url, 'ana', conversation.id, { content: 'too late?' });

  if (answer instanceof OpenStream) throw new Error('expected a JSON answer, got a stream');
  t.same([answer.status, answer.body], [503, { type: 'Service Unavailable', message: 'the service is stopping; send the request again' }]);
  t.equal(await metricValue(chat.registry, 'chat_agent_errors_total', { reason: 'unreachable' }), 0);
});
