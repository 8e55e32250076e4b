/**
 * What the edge's end-to-end tests share: the command IO captured line by line, and every spelling a
 * device MAC could take in stored or posted bytes (the "no identifier leaves the gateway" checks).
 */

/** A non-TTY command IO that keeps what the command printed. */
export function captureIo() {
  const out: string[] = [];
  const err: string[] = [];
  return { out, err, io: { out: (s: string) => void out.push(s), err: (s: string) => void err.push(s), isTty: false } };
}

/** Every spelling a MAC could take in a byte stream: separators, bare hex, Cisco dotted, decimal OID form; both cases. */
export function spellings(mac: string): string[] {
  const hex = mac.replace(/[^0-9a-f]/gi, '').toLowerCase();
  const pairs = hex.match(/../g)!;
  const forms = [pairs.join(':'), pairs.join('-'), hex, `${hex.slice(0, 4)}.${hex.slice(4, 8)}.${hex.slice(8)}`, pairs.map((p) => String(parseInt(p, 16))).join('.')];
  return [...forms, ...forms.map((f) => f.toUpperCase())];
}
