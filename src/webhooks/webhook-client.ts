import type { HttpTransport, PostResult } from './http-transport.js';
import { deliveryHeaders } from './sign.js';
import { telegramText } from './telegram-text.js';
import { WEBHOOK_KINDS, type Webhook, type WebhookStore } from './webhook-store.js';

/** Adds what must be fresh at send time (a bulk event's download URLs) to a stored payload. */
export type PayloadEnricher = (event: string, payload: unknown) => Promise<unknown>;

export interface WebhookClientDeps {
  webhooks: WebhookStore;
  /** Webhook URLs are the callers' choice: this one applies the address rules. */
  transport: HttpTransport;
  /** The Telegram Bot API is the operator's choice, reached without those rules. */
  telegramTransport: HttpTransport;
  telegramApiUrl: string;
  attemptTimeoutMs: number;
  enrich?: PayloadEnricher;
  /** Headers of the event's own (a workflow webhook step's, secrets filled in), resolved at send time and never recorded. */
  extraHeaders?: (accountId: string, eventType: string, payload: unknown) => Promise<Record<string, string>>;
  now: () => number;
}

export interface Attempt {
  result: PostResult;
  /** The payload as sent, download URLs included, for the delivery record. */
  payload: unknown;
}

/** Makes one attempt of one delivery: a signed JSON POST, or a chat message for `telegram`. */
export class WebhookClient {
  constructor(private readonly deps: WebhookClientDeps) {}

  async attempt(webhook: Webhook, delivery: { messageId: string; eventType: string; payload: unknown }): Promise<Attempt> {
    const { deps } = this;
    const payload = deps.enrich ? await deps.enrich(delivery.eventType, delivery.payload) : delivery.payload;
    if (webhook.kind === WEBHOOK_KINDS.telegram) {
      const token = (await deps.webhooks.telegramToken(webhook.id)) ?? '';
      const body = Buffer.from(JSON.stringify({ chat_id: webhook.telegramChat, text: telegramText(delivery.eventType, payload) }));
      const result = await deps.telegramTransport.post({
        url: `${deps.telegramApiUrl}/bot${token}/sendMessage`,
        body,
        headers: { 'content-type': 'application/json' },
        timeoutMs: deps.attemptTimeoutMs,
      });
      return { result, payload };
    }
    const now = deps.now();
    const secrets = await deps.webhooks.signingSecrets(webhook.id, now);
    const body = Buffer.from(JSON.stringify(payload));
    // The signed headers last: nothing a step sets replaces them (its reserved names are refused at save too).
    const extra = deps.extraHeaders ? await deps.extraHeaders(webhook.accountId, delivery.eventType, delivery.payload) : {};
    const headers = { ...extra, ...deliveryHeaders(body, secrets.length > 0 ? secrets : [''], delivery.eventType, delivery.messageId, now) };
    const result = await deps.transport.post({ url: webhook.url, body, headers, timeoutMs: deps.attemptTimeoutMs });
    return { result, payload };
  }

  async close(): Promise<void> {
    await Promise.all([this.deps.transport.close(), this.deps.telegramTransport.close()]);
  }
}
