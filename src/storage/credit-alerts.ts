import type { OutboxEvent } from './records.js';

/** The event a credit alert sends (issue 27, item 8). */
export const CREDITS_LOW = 'credits.low';

export interface CreditAlert {
  threshold: number;
  /** True from the crossing that sent `credits.low` until available credits are back at or above the threshold. */
  fired: boolean;
}

/** An account whose available credits are below its threshold and that has not been told yet. */
export interface CreditCrossing {
  accountId: string;
  threshold: number;
  credits: number;
  reserved: number;
}

export interface CreditAlertsPort {
  get(accountId: string): Promise<CreditAlert | undefined>;
  /** Sets the threshold (not yet fired: a balance already below it is announced once), or removes the alert with null. */
  set(accountId: string, threshold: number | null, now: number): Promise<CreditAlert | undefined>;
  /**
   * One atomic pass over the accounts with an alert: each that is below its threshold and not
   * fired becomes fired with its `credits.low` event in the outbox (only when a webhook
   * subscribes), each that is fired and back at or above it is re-armed. Any number of processes
   * may sweep: a crossing is marked fired by one conditional write, so it is announced once.
   * Returns the crossings it announced.
   */
  sweep(now: number): Promise<CreditCrossing[]>;
}

export function creditsLowEvent(crossing: CreditCrossing, now: number): OutboxEvent {
  const available = crossing.credits - crossing.reserved;
  return {
    id: `evt_credits_low_${crossing.accountId}_${now}`,
    event: CREDITS_LOW,
    accountId: crossing.accountId,
    payload: {
      event: CREDITS_LOW,
      data: { threshold: crossing.threshold, available, credits: crossing.credits, reserved: crossing.reserved },
      created_at: new Date(now).toISOString(),
    },
  };
}
