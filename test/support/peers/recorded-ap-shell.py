#!/usr/bin/env python3
"""ForceCommand for the test sshd: answers the command the client asked for with a recorded output.

sshd runs `recorded-ap-shell.py COMMANDS.json` instead of whatever the client sent, and passes the
client's command in SSH_ORIGINAL_COMMAND. COMMANDS.json maps an exact command line to
{"stdoutFile" | "stdout", "stderr", "exitCode", "delayMs"}. A command that is not listed fails like a
shell would (exit 127), so a test that sends an unexpected command sees it.
"""
import json
import os
import sys
import time


def main():
    with open(sys.argv[1], encoding='utf-8') as handle:
        commands = json.load(handle)
    asked = os.environ.get('SSH_ORIGINAL_COMMAND', '')
    entry = commands.get(asked)
    if entry is None:
        sys.stderr.write('sh: %s: not found\n' % (asked.split(' ')[0] if asked else 'sh'))
        sys.exit(127)
    if entry.get('delayMs'):
        time.sleep(entry['delayMs'] / 1000.0)
    if 'stdoutFile' in entry:
        with open(entry['stdoutFile'], 'rb') as handle:
            sys.stdout.buffer.write(handle.read())
    else:
        sys.stdout.write(entry.get('stdout', ''))
    sys.stdout.flush()
    sys.stderr.write(entry.get('stderr', ''))
    sys.exit(entry.get('exitCode', 0))


if __name__ == '__main__':
    main()
