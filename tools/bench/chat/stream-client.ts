/**
 * Reads one answer stream the way a browser client does (eventsource-parser), noting when the request
 * left, when each token frame arrived and when the terminal frame arrived. The chat's frames and the
 * agent's events share the `{"type":"token","text"}` shape, so one reader serves both paths.
 */
import { createParser } from 'eventsource-parser';
import { request, type Dispatcher } from 'undici';
import { now } from './paced-agent.js';

export interface StreamTimings {
  startedAt: number;
  tokenReceivedAt: number[];
  /** When the chat's `done` (or the agent's `final`) frame arrived. */
  endedAt: number;
  terminal: string;
}

export async function readStream(
  dispatcher: Dispatcher,
  url: string,
  headers: Record<string, string>,
  body: unknown,
): Promise<StreamTimings> {
  const timings: StreamTimings = { startedAt: now(), tokenReceivedAt: [], endedAt: 0, terminal: 'none' };
  const response = await request(url, {
    dispatcher,
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'text/event-stream', ...headers },
    body: JSON.stringify(body),
  });
  if (response.statusCode !== 200) {
    const text = await response.body.text();
    throw new Error(`${url} answered ${response.statusCode}: ${text.slice(0, 200)}`);
  }
  const parser = createParser({
    onEvent: (event) => {
      const at = now();
      const frame = JSON.parse(event.data) as { type: string };
      if (frame.type === 'token') timings.tokenReceivedAt.push(at);
      else {
        timings.endedAt = at;
        timings.terminal = frame.type;
      }
    },
  });
  const decoder = new TextDecoder();
  for await (const chunk of response.body) parser.feed(decoder.decode(chunk as Buffer, { stream: true }));
  return timings;
}
