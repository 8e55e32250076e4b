/**
 * What an AP answers never brings a credential into an error: the error of a poll reaches the log, the
 * tick report and doctor's output.
 */
import t, { type Test } from 'tap';
import { createSocket } from 'node:dgram';
import { loadDialects } from '../../../edge/src/poll/dialects.js';
import { createPoller } from '../../../edge/src/poll/poller.js';

const COMMUNITY = 'S3cret-ro-community';

/**
 * A fake SNMPv2c device on loopback that answers each request with a response under another community
 * (the request's last community byte flipped). Anything but an SNMPv2c message fails the test.
 */
async function startOtherCommunityAgent(t: Test) {
  const socket = createSocket('udp4');
  const unexpected: string[] = [];
  let answered = 0;
  socket.on('message', (message, peer) => {
    // SEQUENCE, length (short or long form), INTEGER version, OCTET STRING community, PDU
    const lengthBytes = (message[1]! & 0x80) === 0 ? 1 : 1 + (message[1]! & 0x7f);
    const version = 1 + lengthBytes;
    if (message[0] !== 0x30 || message[version] !== 0x02 || message[version + 2] !== 0x01 || message[version + 3] !== 0x04) {
      unexpected.push(message.subarray(0, 8).toString('hex'));
      return;
    }
    const communityEnd = version + 5 + message[version + 4]!;
    const answer = Buffer.from(message);
    answer[communityEnd - 1] = answer[communityEnd - 1]! ^ 1;
    answer[communityEnd] = 0xa2; // GetResponse-PDU
    answered++;
    socket.send(answer, peer.port, peer.address);
  });
  t.teardown(() => {
    if (unexpected.length > 0) throw new Error(`the fake agent got ${unexpected.length} datagram(s) that are not SNMPv2c: ${unexpected.join(' ')}`);
  });
  await new Promise<void>((resolve) => socket.bind(0, '127.0.0.1', () => resolve()));
  t.teardown(() => new Promise<void>((resolve) => socket.close(() => resolve())));
  return { port: socket.address().port, answered: () => answered };
}

t.test('an answer under another community fails that AP without quoting the community sent', async (t) => {
  const agent = await startOtherCommunityAgent(t);
  const poller = createPoller({ dialects: loadDialects() });
  t.teardown(() => poller.close());
  const [result] = await poller.pollAll(
    [{ name: 'lobby-1', zone: 'lobby', dialect: 'mikrotik', target: { transport: 'snmp', host: '127.0.0.1', port: agent.port, version: '2c', community: COMMUNITY } }],
    2000,
  );
  t.ok(agent.answered() >= 1, 'the agent answered');
  t.match(result, { ap: 'lobby-1', ok: false, error: /community/ });
  t.notOk(JSON.stringify(result).includes('S3cret'), 'no part of the community in the result');
});
