import { randomBytes } from 'node:crypto';
import { hostAddresses } from './mx-step.js';
import { classifyRcpt, type RcptAnswer } from './rcpt-reply.js';
import { SMTP_FAILURES, SmtpConnectionError, SmtpSession, type SmtpReply } from './smtp-session.js';
import type { AddressProbe, HostFailure, HostItem, ProbeResult, SmtpProbeOptions } from './probe-types.js';
import type { SmtpEvidence, TlsEvidence } from './validity-result.js';


/**
 * Recipients one transaction asks (one MAIL FROM), then RSET and a new MAIL FROM on the same
 * connection: RFC 5321 §4.5.3.1.8 has servers accept at least 100 recipients a message.
 */
const RCPTS_PER_TRANSACTION = 100;

/**
 * Recipients one connection asks before it says QUIT and the next one takes over: a connection
 * that never ends looks like a harvester, and a new one is paced like any other.
 */
const RCPTS_PER_SESSION = 1_000;

/**
 * Queued addresses that make a host worth one more session: a session costs the server a banner, an
 * EHLO and a MAIL FROM, so a handful of addresses share one (and a small list never opens the
 * host's every slot), while a bulk job's queue opens up to the limit.
 */
export const ADDRESSES_PER_SESSION = 25;

/**
 * Sessions in a row that one drain may open after a 452 4.5.3 (too many recipients) or a drop in the
 * middle, before the rest of its queue is given up as smtp_unavailable: a server that takes one
 * recipient a session would otherwise be asked for a session per address.
 */
const MAX_SHORT_SESSIONS = 20;

/**
 * Recipients sent at once to a server that offers PIPELINING (RFC 2920): the verifier's round trip
 * and its event loop's pauses are paid once a round instead of once a recipient.
 */
const PIPELINE_WINDOW = 16;

/** One batch's addresses for one host: settled when every address is answered or failed. */
interface Group {
  result: ProbeResult;
  remaining: number;
  failure: HostFailure | undefined;
  settled: boolean;
  /** Settles the batch's wait: the host's failure, if an address got one, or the error that stopped its drain. */
  resolve: (outcome: HostFailure | undefined | Error) => void;
}

interface Entry {
  group: Group;
  item: HostItem;
}

/** One RCPT TO of a round: an address, or the catch-all probe of its domain asked just before it. */
interface Question {
  entry: Entry;
  probe: boolean;
  recipient: string;
}

interface HostState {
  queue: Entry[];
  head: number;
  /** Drains started (waiting for a slot or holding one). */
  drains: number;
  /** Sessions open now. */
  open: number;
  /**
   * Drains this host gets: the configured limit, lowered to the sessions that were working when a
   * new one was refused (a server that allows fewer sessions than we would open): without it every
   * refused drain would be followed by another connection attempt for as long as the queue lasts.
   */
  limit: number;
}

type SessionEnd =
  /** The queue is empty. */
  | { kind: 'drained' }
  /** The session asked its share of recipients; the next session goes on. */
  | { kind: 'rotated' }
  /** A 452 4.5.3 or a drop after some answers: the next session goes on, up to MAX_SHORT_SESSIONS. */
  | { kind: 'short' }
  /** Nothing answered: the host (at this address) could not be asked. */
  | { kind: 'failed'; failure: HostFailure };

/**
 * The SMTP sessions of one process, per MX host: every batch's addresses for a host join the host's
 * queue, and up to `perHost` sessions drain it, each asking recipient after recipient from whichever
 * batch queued them. A session outlives the batch that opened it, so a host's sessions stay busy
 * while a batch waits for its slowest host or commits its checkpoint: the rate is what the host
 * limits allow, not what one batch's shape leaves of it (issue 26, bench 80% of Little's bound).
 * The slots themselves are the HostLimiter's, held per session across processes and machines.
 */
export class HostSessions {
  private readonly hosts = new Map<string, HostState>();
  /**
   * Catch-all probes asked and not yet answered, by domain: a batch that needs a domain another
   * batch is probing waits for that answer instead of asking again (the bench's first batches
   * asked each domain about twice).
   */
  private readonly probing = new Map<string, { promise: Promise<boolean | null>; resolve: (catchAll: boolean | null) => void }>();

  constructor(
    private readonly options: SmtpProbeOptions,
    private readonly perHost: number,
  ) {}

  /** Asks `host` about `items` for the batch whose answers go to `result`; the failure, if any address got one. */
  ask(host: string, items: readonly HostItem[], result: ProbeResult, signal?: AbortSignal): Promise<HostFailure | undefined> {
    if (items.length === 0) return Promise.resolve(undefined);
    return new Promise((resolve, reject) => {
      const group: Group = { result, remaining: items.length, failure: undefined, settled: false, resolve: (outcome) => (outcome instanceof Error ? reject(outcome) : resolve(outcome)) };
      if (signal && !watch(signal, group)) return;
      const state = this.state(host);
      for (const item of items) state.queue.push({ group, item });
      this.startDrains(host, state);
    });
  }

  private state(host: string): HostState {
    let state = this.hosts.get(host);
    if (!state) this.hosts.set(host, (state = { queue: [], head: 0, drains: 0, open: 0, limit: this.perHost }));
    return state;
  }

  private startDrains(host: string, state: HostState): void {
    while (state.drains < state.limit && pending(state) > state.drains * ADDRESSES_PER_SESSION) {
      state.drains++;
      void this.options.hostLimiter
        .run(host, () => this.drain(host, state))
        // Not the host's fault (the store's slots could not be reached, a bug): the batches waiting
        // on its queue fail with the error, and the job retries them as any failed lookup call,
        // instead of their addresses becoming unreachable ones deferred to a later pass.
        .catch((e: unknown) => this.rejectAll(state, e instanceof Error ? e : new Error(String(e))))
        .finally(() => {
          state.drains--;
          if (pending(state) === 0 && state.drains === 0) this.hosts.delete(host);
          else this.startDrains(host, state);
        });
    }
  }

  /** Holds one of the host's slots: sessions one after another until the queue is empty. */
  private async drain(host: string, state: HostState): Promise<void> {
    if (pending(state) === 0) return;
    const { addresses, transient } = await hostAddresses(this.options.resolver, host);
    if (addresses.length === 0) return this.failAll(state, { reason: transient ? 'timeout' : 'smtp_unavailable', evidence: null });
    // The address policy on every address an MX resolves to: an MX that points into a private network
    // is how a verifier is turned into a port scanner of the network it runs in.
    const allowed = this.options.allowPrivate ? addresses : addresses.filter((a) => this.options.blockedReason(a) === undefined);
    if (allowed.length === 0) return this.failAll(state, { reason: 'blocked_address', evidence: { host, code: null, enhanced_code: null, text: `${host} resolves only to non-public addresses`, tls: null } });
    let ip = 0;
    let shortSessions = 0;
    while (pending(state) > 0) {
      const outcome = await this.session(host, allowed[ip]!, state);
      if (outcome.kind === 'drained') return;
      if (outcome.kind === 'rotated') continue;
      if (outcome.kind === 'short' && ++shortSessions <= MAX_SHORT_SESSIONS) continue;
      if (outcome.kind === 'short') return this.failAll(state, { reason: 'smtp_unavailable', evidence: null });
      // Nothing answered: this address of the host is passed over for the next; with none left the
      // host could not be asked, unless another session of it is getting answers (the server allows
      // fewer sessions than we would open): that one drains the queue, and no more drains start.
      if (++ip < allowed.length) continue;
      if (state.open > 0) {
        state.limit = Math.max(1, Math.min(state.limit, state.open));
        return;
      }
      return this.failAll(state, outcome.failure);
    }
  }

  /** One session to `ip`: recipients from the queue until it is empty, full or the session ends. */
  private async session(host: string, ip: string, state: HostState): Promise<SessionEnd> {
    const o = this.options;
    let session: SmtpSession | undefined;
    /** The addresses asked and not yet answered, in order: back to the queue if the session ends. */
    let window: Entry[] = [];
    /** The questions of the round in flight not yet answered. */
    let round: Question[] = [];
    let answered = 0;
    try {
      await o.pace?.(host);
      o.onSession?.();
      const opened = await SmtpSession.open({ host, address: ip, port: o.port, helo: o.helo, timeoutMs: o.timeoutMs });
      if (!opened.session) return { kind: 'failed', failure: { reason: 'smtp_unavailable', evidence: evidenceOf(host, opened.banner, null) } };
      session = opened.session;
      state.open++;
      const from = await session.mailFrom(o.mailFrom);
      if (from.code !== 250) {
        // MAIL FROM refused: every queued address gets the server's word, as a temporary or a policy answer.
        const word: RcptAnswer = from.code >= 400 && from.code < 500 ? { kind: 'temporary' } : classifyRcpt(from);
        const answer: RcptAnswer = word.kind === 'accepted' ? { kind: 'temporary' } : word;
        for (let entry = take(state); entry; entry = take(state)) record(entry, { kind: 'answered', answer, evidence: evidenceOf(host, from, session.tls) });
        await session.quit();
        return { kind: 'drained' };
      }
      let rcpts = 0;
      let inTransaction = 0;
      while (rcpts < RCPTS_PER_SESSION) {
        if (inTransaction >= RCPTS_PER_TRANSACTION) {
          if (pending(state) === 0) break;
          // A new transaction on this connection: no new banner, EHLO or pacing wait; a server that
          // refuses either command gets a new connection instead.
          if ((await session.rset()).code !== 250 || (await session.mailFrom(o.mailFrom)).code !== 250) break;
          inTransaction = 0;
        }
        window = takeWindow(state, session.extensions.has('PIPELINING') ? Math.min(PIPELINE_WINDOW, RCPTS_PER_TRANSACTION - inTransaction) : 1);
        if (window.length === 0) break;
        const questions = this.questions(window);
        round = questions;
        rcpts += questions.length;
        inTransaction += questions.length;
        const asked = session.rcptToEach(questions.map((q) => q.recipient));
        for (const question of questions) {
          const reply = (await asked.next()).value as SmtpReply;
          round = round.slice(1);
          const answer = classifyRcpt(reply);
          const { group, item } = question.entry;
          if (answer.kind === 'too_many_recipients') {
            // This question and every later one go to the next session, in their order.
            this.abandonProbes([question, ...round]);
            await asked.return(undefined);
            return await full(session, state, window);
          }
          if (question.probe) {
            // A 4xx is not kept in the cache: a later batch asks again.
            const isCatchAll = answer.kind === 'accepted' ? true : answer.kind === 'rejected' ? false : null;
            group.result.catchAll.set(item.domain, isCatchAll);
            if (isCatchAll !== null) o.catchAll.set(item.domain, isCatchAll);
            this.answerProbe(item.domain, isCatchAll);
            continue;
          }
          record(question.entry, { kind: 'answered', answer, evidence: evidenceOf(host, reply, session.tls) });
          window.shift();
          answered++;
        }
      }
      await session.quit();
      return pending(state) === 0 ? { kind: 'drained' } : { kind: 'rotated' };
    } catch (e: unknown) {
      session?.close();
      this.abandonProbes(round);
      putBack(state, window);
      if (!(e instanceof SmtpConnectionError)) throw e;
      const reason = e.failure === SMTP_FAILURES.timeout ? 'timeout' : 'smtp_unavailable';
      // A session that answered some addresses and then dropped is followed by another for the rest;
      // one that failed before any answer counts against this address of the host.
      if (answered > 0) return { kind: 'short' };
      return { kind: 'failed', failure: { reason, evidence: { host, code: null, enhanced_code: null, text: e.message, tls: session?.tls ?? null } } };
    } finally {
      if (session) state.open--;
    }
  }

  /**
   * The recipients to ask for `window`: each address, after a random one of its domain when the
   * domain's catch-all is not known and no session has asked yet (marked before the question, so
   * that another session taking the domain's next address meanwhile does not ask it again).
   */
  private questions(window: readonly Entry[]): Question[] {
    const questions: Question[] = [];
    for (const entry of window) {
      const { result } = entry.group;
      const domain = entry.item.domain;
      if (result.catchAll.get(domain) === null && !result.catchAllProbed.has(domain)) {
        result.catchAllProbed.add(domain);
        const known = this.options.catchAll.get(domain);
        const inFlight = this.probing.get(domain);
        // Answered meanwhile for another batch, or being asked for one: not asked again.
        if (known !== undefined) result.catchAll.set(domain, known);
        else if (inFlight) result.catchAllWaits.set(domain, inFlight.promise);
        else {
          let resolve: (catchAll: boolean | null) => void = () => undefined;
          const promise = new Promise<boolean | null>((r) => (resolve = r));
          this.probing.set(domain, { promise, resolve });
          questions.push({ entry, probe: true, recipient: `${(this.options.randomLocal ?? randomLocal)()}@${domain}` });
        }
      }
      questions.push({ entry, probe: false, recipient: entry.item.address });
    }
    return questions;
  }

  private rejectAll(state: HostState, error: Error): void {
    for (let entry = take(state); entry; entry = take(state)) settle(entry.group, error);
  }

  private answerProbe(domain: string, catchAll: boolean | null): void {
    this.probing.get(domain)?.resolve(catchAll);
    this.probing.delete(domain);
  }

  /**
   * Probes sent and not answered (a 452 before them, a lost connection): batches waiting on them
   * learn nothing (null, as from a 4xx), and the asking batch asks again when its address comes back.
   */
  private abandonProbes(questions: readonly Question[]): void {
    for (const q of questions) {
      if (!q.probe) continue;
      q.entry.group.result.catchAllProbed.delete(q.entry.item.domain);
      this.answerProbe(q.entry.item.domain, null);
    }
  }

  /** The host could not be asked: every address still queued for it gets `failure`. */
  private failAll(state: HostState, failure: HostFailure): void {
    for (let entry = take(state); entry; entry = take(state)) {
      entry.group.failure = failure;
      done(entry.group);
    }
  }
}

/** A 452 4.5.3 mid-session: the addresses not answered go back to the front of the queue for the next session. */
async function full(session: SmtpSession, state: HostState, unanswered: Entry[]): Promise<SessionEnd> {
  putBack(state, unanswered.splice(0));
  await session.quit();
  return { kind: 'short' };
}

function pending(state: HostState): number {
  return state.queue.length - state.head;
}

/** The next queued address whose batch still waits for it. */
function take(state: HostState): Entry | undefined {
  while (state.head < state.queue.length) {
    const entry = state.queue[state.head++]!;
    if (state.head === state.queue.length) {
      state.queue = [];
      state.head = 0;
    }
    if (!entry.group.settled) return entry;
  }
  return undefined;
}

/** Up to `size` queued addresses for one round of questions. */
function takeWindow(state: HostState, size: number): Entry[] {
  const window: Entry[] = [];
  for (let entry; window.length < size && (entry = take(state)); ) window.push(entry);
  return window;
}

/** Entries taken and not answered, back at the front of the queue in their order. */
function putBack(state: HostState, entries: readonly Entry[]): void {
  for (let i = entries.length - 1; i >= 0; i--) {
    if (state.head > 0) state.queue[--state.head] = entries[i]!;
    else state.queue.unshift(entries[i]!);
  }
}

function record(entry: Entry, probe: AddressProbe): void {
  if (entry.group.settled) return;
  entry.group.result.addresses.set(entry.item.address, probe);
  done(entry.group);
}

function done(group: Group): void {
  if (group.settled) return;
  if (--group.remaining === 0) settle(group, group.failure);
}

function settle(group: Group, outcome: HostFailure | undefined | Error): void {
  if (group.settled) return;
  group.settled = true;
  group.resolve(outcome);
}

/** The groups waiting under each batch's signal: one listener a signal, whatever its hosts. */
const watched = new WeakMap<AbortSignal, Set<Group>>();

/**
 * Past the batch's deadline its addresses are given up as timeouts; a session busy with one of them
 * finishes that recipient for the next batch's sake, and its answer is dropped. False: already past.
 */
function watch(signal: AbortSignal, group: Group): boolean {
  if (signal.aborted) {
    settle(group, { reason: 'timeout', evidence: null });
    return false;
  }
  let groups = watched.get(signal);
  if (!groups) {
    const set = (groups = new Set());
    watched.set(signal, set);
    signal.addEventListener('abort', () => set.forEach((g) => settle(g, { reason: 'timeout', evidence: null })), { once: true });
  }
  groups.add(group);
  const resolve = group.resolve;
  group.resolve = (outcome) => {
    groups.delete(group);
    resolve(outcome);
  };
  return true;
}

function evidenceOf(host: string, reply: SmtpReply, tls: TlsEvidence | null): SmtpEvidence {
  return { host, code: reply.code, enhanced_code: reply.enhanced, text: reply.text.slice(0, 300), tls };
}

/** A local part no person has: 20 random letters and digits. */
function randomLocal(): string {
  return `x${randomBytes(12).toString('base64url').replace(/[-_]/g, '0').toLowerCase().slice(0, 19)}`;
}
