/**
 * The Web Push payload of a notification, bounded by its size in octets. Every push service must take a
 * message of 4096 octets (RFC 8030, 7.2), and may refuse a larger one (413); under aes128gcm the header
 * (86 octets), the padding delimiter (1) and the tag (16) leave 3993 octets of plaintext (RFC 8291, 4).
 * A /trigger message of 2000 characters is up to 6000 octets of UTF-8 (CJK text), and more in JSON when
 * it holds characters JSON escapes; long ids make a breach message long too. A payload over the bound
 * gets its message shortened, then its title, by whole code points, with a trailing `…`. Ids are never
 * cut: the browser uses them to open the right building. Only the push is shortened; the in-app
 * notification keeps every character.
 */
import type { Notification } from '../../shared/notification.js';

/** The largest plaintext payload a push service must accept, octets. */
export const MAX_PUSH_PAYLOAD_BYTES = 4096 - 86 - 1 - 16;

const ELLIPSIS = '…';

function octets(notification: Notification): number {
  return Buffer.byteLength(JSON.stringify(notification), 'utf8');
}

/**
 * The notification as a push payload of at most `maxBytes` octets of UTF-8 JSON, shortening the message
 * and then the title when it is larger. A payload whose ids alone exceed the bound is answered whole
 * (the push service decides); ids are at most 256 characters, so that takes a domain name of thousands.
 *
 * @example
 * pushPayloadOf({ ...notification, message: '警報'.repeat(1000) });
 * // '{"id":…,"message":"警報警報…警…",…}', at most 3993 octets
 */
export function pushPayloadOf(notification: Notification, maxBytes = MAX_PUSH_PAYLOAD_BYTES): string {
  const whole = JSON.stringify(notification);
  if (Buffer.byteLength(whole, 'utf8') <= maxBytes) return whole;
  let shortened = notification;
  for (const field of ['message', 'title'] as const) {
    if (shortened !== notification && octets(shortened) <= maxBytes) break;
    const text = Array.from(shortened[field]);
    const withPrefix = (length: number): Notification => ({ ...shortened, [field]: length === text.length ? text.join('') : `${text.slice(0, length).join('')}${ELLIPSIS}` });
    if (octets(withPrefix(0)) > maxBytes) {
      shortened = { ...shortened, [field]: '' };
      continue;
    }
    // The longest prefix that fits: JSON escapes make the size of a prefix no simple sum of characters.
    let fits = 0;
    let over = text.length;
    while (over - fits > 1) {
      const middle = Math.floor((fits + over) / 2);
      if (octets(withPrefix(middle)) <= maxBytes) fits = middle;
      else over = middle;
    }
    return JSON.stringify(withPrefix(fits));
  }
  return JSON.stringify(shortened);
}
