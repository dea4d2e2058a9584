/**
 * The short human-readable line a chat destination gets instead of the JSON envelope. It names
 * the job and its counts but carries no download URL: a chat is a poor place for a bearer link.
 */
export function telegramText(event: string, payload: unknown): string {
  const data = ((payload as { data?: unknown } | null)?.data ?? {}) as Record<string, unknown>;
  switch (event) {
    case 'test':
      return 'Sluice test message: this chat receives your Sluice events.';
    case 'bulk.completed': {
      const rows = (data.rows ?? {}) as Record<string, unknown>;
      const counts = [`${num(rows.total)} rows`, `${num(rows.found)} found`, `${num(rows.invalid)} invalid`, `${num(data.credits_used)} credits`];
      const reason = typeof data.reason === 'string' && data.reason !== '' ? ` (${data.reason})` : '';
      return `Sluice: ${String(data.type ?? 'bulk')} job ${String(data.id)} ${String(data.status)}${reason}: ${counts.join(', ')}.`;
    }
    case 'lookup.completed':
      return `Sluice: ${String(data.lookup ?? 'lookup')} lookup completed (${num(data.credits)} credits).`;
    default:
      return `Sluice: ${event}.`;
  }
}

function num(value: unknown): string {
  return typeof value === 'number' ? value.toLocaleString('en-US') : '0';
}
