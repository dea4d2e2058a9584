/** Retry-After as RFC 9110 allows it, seconds or an HTTP date, in ms from `now`; else undefined. */
export function parseRetryAfter(value: string | string[] | undefined, now = Date.now()): number | undefined {
  const raw = (Array.isArray(value) ? value[0] : value)?.trim();
  if (raw === undefined || raw === '') return undefined;
  if (/^\d+$/.test(raw)) return Number(raw) * 1000;
  // Date.parse takes almost anything ('-1' is a date to V8); every HTTP-date form has a day name and hh:mm:ss.
  if (!/^[A-Za-z]{3}/.test(raw) || !/\d{2}:\d{2}:\d{2}/.test(raw)) return undefined;
  const at = Date.parse(raw);
  return Number.isNaN(at) ? undefined : Math.max(0, at - now);
}
