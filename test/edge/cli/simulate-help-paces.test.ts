/**
 * `simulate --help` describes each pace by the dwell its motion model really draws: the text said
 * lively people stay 3-12 ticks while the model drew 3 to 10.
 */
import t from 'tap';
import { main } from '../../../edge/src/commands/main.js';
import { PACES } from '../../../edge/src/commands/simulate.js';
import { captureIo } from '../support/cli-io.js';

t.test('the help gives each pace the dwell range its motion model draws', async (t) => {
  const { out, io } = captureIo();
  t.equal(await main(['simulate', '--help'], io), 0);
  const help = out.join('').replace(/\s+/g, ' ');
  const [livelyMin, livelyMax] = PACES.lively.dwellSteps;
  const [realisticMin, realisticMax] = PACES.realistic.dwellSteps;
  t.match(help, `lively (default): people stay ${livelyMin}-${livelyMax} ticks`);
  t.match(help, `realistic: they stay ${realisticMin}-${realisticMax} ticks`);
});
