/**
 * Prints the X-Signature for a body and a secret, for operators testing internal routes and ingest.
 *
 *   npm run sign -- --secret-file /run/secrets/internal --body '{"name":"acme"}'
 *   printf '' | npm run sign -- --secret-file s.txt            (a GET: empty body)
 *   npm run sign -- --secret-env INTERNAL_SIGNING_SECRET --body-file batch.json
 *
 * The secret is read from a file or an environment variable, never from the command line, so it stays
 * out of shell history and process listings. The body is signed byte for byte: no trimming. A secret is
 * read as the services read theirs, as a key ring (`new,old`, each key trimmed): the signature is made
 * with the first, current key, which every service holding the ring accepts.
 */
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { keyRingFromEnv, sign } from '../shared/hmac.js';

function usage(problem: string): never {
  process.stderr.write(
    `sign: ${problem}\nusage: sign (--secret-file F | --secret-env NAME) [--body TEXT | --body-file F] (stdin when no body is given)\n`,
  );
  process.exit(2);
}

/** Reads a file named by an option, or stops with the reason (never the file's content). */
function readOrExplain(file: string, option: string): Buffer {
  try {
    return readFileSync(file);
  } catch (err) {
    usage(`${option} ${file}: cannot read it (${(err as { code?: string }).code ?? 'error'})`);
  }
}

function main(argv: string[]): void {
  let values;
  try {
    ({ values } = parseArgs({
      args: argv,
      options: {
        'secret-file': { type: 'string' },
        'secret-env': { type: 'string' },
        body: { type: 'string' },
        'body-file': { type: 'string' },
      },
      strict: true,
    }));
  } catch (err) {
    usage((err as Error).message);
  }
  if (values['secret-file'] && values['secret-env']) usage('give the secret once: --secret-file or --secret-env, not both');
  if (values.body !== undefined && values['body-file']) usage('give the body once: --body or --body-file, not both');
  let secret: string | undefined;
  if (values['secret-file']) {
    secret = readOrExplain(values['secret-file'], '--secret-file').toString('utf8').replace(/\r?\n$/, '');
    if (!secret) usage(`the secret file ${values['secret-file']} is empty`);
  } else if (values['secret-env']) {
    secret = process.env[values['secret-env']];
    if (!secret) usage(`the environment variable ${values['secret-env']} is not set or empty`);
  } else usage('give the secret with --secret-file or --secret-env');
  const current = keyRingFromEnv(secret)[0];
  if (current === undefined) usage('the secret holds no key (a ring is comma-separated keys, current first)');

  let body: Buffer;
  if (values.body !== undefined) body = Buffer.from(values.body, 'utf8');
  else if (values['body-file']) body = readOrExplain(values['body-file'], '--body-file');
  else body = process.stdin.isTTY ? Buffer.alloc(0) : readFileSync(0);

  process.stdout.write(`${sign(body, current)}\n`);
}

main(process.argv.slice(2));
