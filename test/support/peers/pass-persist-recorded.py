#!/usr/bin/env python3
"""Net-SNMP pass_persist helper that serves recorded tables.

snmpd runs it once (`pass_persist .1.3.6.1.4.1 /usr/bin/python3 pass-persist-recorded.py FILE...`) and
asks it for `get` and `getnext` over stdin. Each FILE is the output of `snmpwalk -On` (or snmpbulkwalk)
captured from a real access point or controller, one `OID = TYPE: value` line per object, so a new
recording is just a new capture.
"""
import re
import sys

LINE = re.compile(r'^\s*(\.?[0-9][0-9.]*)\s*=\s*([A-Za-z0-9-]+):\s?(.*)$')

# snmpwalk type names -> pass_persist type names
TYPES = {
    'STRING': 'string',
    'Hex-STRING': 'octet',
    'INTEGER': 'integer',
    'Gauge32': 'gauge',
    'Unsigned32': 'gauge',
    'Counter32': 'counter',
    'Counter64': 'counter64',
    'Timeticks': 'timeticks',
    'IpAddress': 'ipaddress',
    'OID': 'objectid',
}


def oid_key(oid):
    return tuple(int(part) for part in oid.strip('.').split('.'))


def value_of(kind, raw):
    raw = raw.strip()
    if kind == 'STRING':
        if len(raw) >= 2 and raw[0] == '"' and raw[-1] == '"':
            raw = raw[1:-1].replace('\\"', '"')
        return raw
    if kind == 'Timeticks':
        match = re.match(r'\((\d+)\)', raw)
        return match.group(1) if match else raw
    if kind == 'INTEGER':
        match = re.search(r'\((-?\d+)\)$', raw)
        return match.group(1) if match else raw
    return raw


def load(paths):
    objects = {}
    for path in paths:
        with open(path, encoding='utf-8') as handle:
            for number, line in enumerate(handle, 1):
                if not line.strip() or line.lstrip().startswith('#'):
                    continue
                match = LINE.match(line.rstrip('\n'))
                if not match or match.group(2) not in TYPES:
                    sys.stderr.write('%s:%d: not an snmpwalk -On line\n' % (path, number))
                    sys.exit(2)
                oid, kind, raw = match.groups()
                objects[oid_key(oid)] = (TYPES[kind], value_of(kind, raw))
    return sorted(objects.items())


def answer(entry):
    key, (kind, value) = entry
    sys.stdout.write('.%s\n%s\n%s\n' % ('.'.join(str(part) for part in key), kind, value))


def main():
    table = load(sys.argv[1:])
    keys = [key for key, _ in table]
    from bisect import bisect_left, bisect_right

    while True:
        command = sys.stdin.readline()
        if not command:
            return
        command = command.strip()
        if command == 'PING':
            sys.stdout.write('PONG\n')
        elif command in ('get', 'getnext'):
            requested = oid_key(sys.stdin.readline().strip())
            if command == 'get':
                at = bisect_left(keys, requested)
                found = at < len(keys) and keys[at] == requested
            else:
                at = bisect_right(keys, requested)
                found = at < len(keys)
            if found:
                answer(table[at])
            else:
                sys.stdout.write('NONE\n')
        elif command == 'set':
            sys.stdin.readline()
            sys.stdin.readline()
            sys.stdout.write('not-writable\n')
        else:
            sys.stdout.write('NONE\n')
        sys.stdout.flush()


if __name__ == '__main__':
    main()
