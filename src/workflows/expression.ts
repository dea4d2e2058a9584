import { AppError, ERROR_CODES } from '../shared/errors.js';

/**
 * The one expression language of workflows (conditions, transforms, step inputs): a small subset
 * of json-logic, evaluated here by a tree walker over JSON data. Tenant text is never handed to
 * JavaScript (no eval, no Function, no regular expressions built from it), and every evaluation
 * runs under a hard budget: operations, wall-clock time, nesting depth, array and string sizes.
 * There are no loops or recursion in the language, but nested `map`s over `range`s multiply, so
 * the operation budget, not the language, is what guarantees an end.
 */

export interface Budget {
  /** Operations (nodes evaluated) per evaluation. */
  readonly maxOps: number;
  /** Wall-clock milliseconds per evaluation, checked every 256 operations. */
  readonly maxMs: number;
  /** Nesting depth of an expression, checked at save. */
  readonly maxDepth: number;
  /** Longest array `range` or `map` may build, and longest string `cat` may build. */
  readonly maxItems: number;
  readonly maxStringLength: number;
}

export const DEFAULT_BUDGET: Budget = { maxOps: 100_000, maxMs: 50, maxDepth: 32, maxItems: 10_000, maxStringLength: 65_536 };

/** Property names no path may walk through, at save and at run time. */
export const FORBIDDEN_KEYS: ReadonlySet<string> = new Set(['__proto__', 'constructor', 'prototype']);

const ITERATING = new Set(['map', 'filter', 'all', 'some']);

/** Operators and how many arguments each takes ([min, max]). */
const ARITY: Readonly<Record<string, readonly [number, number]>> = {
  var: [1, 2],
  '==': [2, 2],
  '!=': [2, 2],
  '<': [2, 2],
  '<=': [2, 2],
  '>': [2, 2],
  '>=': [2, 2],
  and: [1, 20],
  or: [1, 20],
  '!': [1, 1],
  if: [2, 21],
  '+': [1, 20],
  '-': [1, 2],
  '*': [1, 20],
  '/': [2, 2],
  '%': [2, 2],
  min: [1, 20],
  max: [1, 20],
  cat: [1, 20],
  substr: [2, 3],
  lower: [1, 1],
  upper: [1, 1],
  in: [2, 2],
  length: [1, 1],
  range: [2, 2],
  map: [2, 2],
  filter: [2, 2],
  all: [2, 2],
  some: [2, 2],
  object: [1, 1],
};

function invalid(message: string, details: Record<string, unknown> = {}): AppError {
  return new AppError(ERROR_CODES.invalidExpression, message, { statusCode: 422, details });
}

function overBudget(what: string): AppError {
  return new AppError(ERROR_CODES.expressionBudgetExceeded, `the expression used up its ${what} budget and was cut off`, { details: { budget: what } });
}

/** Splits a `var` path, refusing forbidden names; '' is the whole data. */
export function pathSegments(path: string): string[] {
  if (path === '') return [];
  const segments = path.split('.');
  for (const s of segments) {
    if (s === '') throw new AppError(ERROR_CODES.invalidReference, `"${path}" has an empty segment`, { statusCode: 422, details: { path } });
    if (FORBIDDEN_KEYS.has(s)) throw new AppError(ERROR_CODES.invalidReference, `"${path}" names ${s}, which no path may`, { statusCode: 422, details: { path } });
  }
  return segments;
}

/**
 * Checks an expression's shape at save and returns the `var` paths it reads from the run's data
 * (those inside a map/filter body read the item and are not returned). Throws invalid_expression
 * or invalid_reference.
 */
export function checkExpression(expr: unknown, budget: Budget = DEFAULT_BUDGET): string[] {
  const paths: string[] = [];
  const walk = (node: unknown, depth: number, inItem: boolean): void => {
    if (depth > budget.maxDepth) throw invalid(`the expression is nested deeper than ${budget.maxDepth}`);
    if (node === null || typeof node === 'string' || typeof node === 'boolean') return;
    if (typeof node === 'number') {
      if (!Number.isFinite(node)) throw invalid('numbers must be finite');
      return;
    }
    if (Array.isArray(node)) {
      for (const n of node) walk(n, depth + 1, inItem);
      return;
    }
    if (typeof node !== 'object') throw invalid(`unexpected ${typeof node}`);
    const keys = Object.keys(node);
    if (keys.length !== 1) throw invalid('an operation is an object with exactly one key, the operator', { keys });
    const op = keys[0]!;
    const arity = Object.hasOwn(ARITY, op) ? ARITY[op] : undefined;
    if (!arity) throw invalid(`unknown operator "${op}"`, { operator: op, known: Object.keys(ARITY) });
    const raw = (node as Record<string, unknown>)[op];
    if (op === 'object') {
      if (raw === null || typeof raw !== 'object' || Array.isArray(raw)) throw invalid('object takes an object of field expressions');
      for (const [k, v] of Object.entries(raw)) {
        if (FORBIDDEN_KEYS.has(k)) throw new AppError(ERROR_CODES.invalidReference, `object may not build a field named ${k}`, { statusCode: 422 });
        walk(v, depth + 1, inItem);
      }
      return;
    }
    const args = Array.isArray(raw) ? raw : [raw];
    if (args.length < arity[0] || args.length > arity[1]) throw invalid(`${op} takes ${arity[0]} to ${arity[1]} arguments, not ${args.length}`, { operator: op });
    if (op === 'var') {
      if (typeof args[0] !== 'string') throw invalid('var takes a literal path');
      pathSegments(args[0]);
      if (!inItem) paths.push(args[0]);
      if (args.length === 2) walk(args[1], depth + 1, inItem);
      return;
    }
    if (ITERATING.has(op)) {
      walk(args[0], depth + 1, inItem);
      walk(args[1], depth + 1, true);
      return;
    }
    for (const a of args) walk(a, depth + 1, inItem);
  };
  walk(expr, 0, false);
  return paths;
}

/** Own properties only: a path never reaches a prototype, whatever the data holds. */
export function readPath(data: unknown, segments: readonly string[]): unknown {
  let at: unknown = data;
  for (const s of segments) {
    if (at === null || typeof at !== 'object' || FORBIDDEN_KEYS.has(s) || !Object.hasOwn(at, s)) return null;
    at = (at as Record<string, unknown>)[s];
  }
  return at === undefined ? null : at;
}

function truthy(v: unknown): boolean {
  if (Array.isArray(v)) return v.length > 0;
  return Boolean(v);
}

function num(v: unknown): number {
  const n = typeof v === 'number' ? v : typeof v === 'string' && v.trim() !== '' ? Number(v) : typeof v === 'boolean' ? Number(v) : NaN;
  return n;
}

/** JSON only: NaN and infinities become null, as JSON.stringify would write them. */
function finite(n: number): number | null {
  return Number.isFinite(n) ? n : null;
}

function looseEqual(a: unknown, b: unknown): boolean {
  if (a === null || b === null || typeof a === 'object' || typeof b === 'object') return a === b;
  if (typeof a === typeof b) return a === b;
  return num(a) === num(b);
}

function compare(a: unknown, b: unknown): number | undefined {
  if (typeof a === 'string' && typeof b === 'string') return a < b ? -1 : a > b ? 1 : 0;
  const x = num(a);
  const y = num(b);
  if (Number.isNaN(x) || Number.isNaN(y)) return undefined;
  return x - y;
}

/**
 * Evaluates a checked expression against JSON `data`. Throws expression_budget_exceeded when the
 * evaluation would use more than its budget; the result is always JSON (no undefined, no NaN).
 */
export function evaluate(expr: unknown, data: unknown, budget: Budget = DEFAULT_BUDGET, now: () => number = performance.now.bind(performance)): unknown {
  const deadline = now() + budget.maxMs;
  let ops = 0;
  const tick = (): void => {
    ops += 1;
    if (ops > budget.maxOps) throw overBudget('operation');
    if ((ops & 255) === 0 && now() > deadline) throw overBudget('time');
  };
  const str = (s: string): string => {
    if (s.length > budget.maxStringLength) throw overBudget('string length');
    return s;
  };
  const ev = (node: unknown, scope: unknown): unknown => {
    tick();
    if (node === null || typeof node !== 'object') return node;
    if (Array.isArray(node)) return node.map((n) => ev(n, scope));
    const op = Object.keys(node)[0]!;
    const raw = (node as Record<string, unknown>)[op];
    if (op === 'object') {
      return Object.fromEntries(Object.entries(raw as Record<string, unknown>).map(([k, v]) => [k, ev(v, scope)]));
    }
    const args = Array.isArray(raw) ? raw : [raw];
    const arg = (i: number): unknown => ev(args[i], scope);
    switch (op) {
      case 'var': {
        const value = readPath(scope, pathSegments(args[0] as string));
        return value === null && args.length === 2 ? arg(1) : value;
      }
      case '==':
        return looseEqual(arg(0), arg(1));
      case '!=':
        return !looseEqual(arg(0), arg(1));
      case '<':
      case '<=':
      case '>':
      case '>=': {
        const c = compare(arg(0), arg(1));
        if (c === undefined) return false;
        return op === '<' ? c < 0 : op === '<=' ? c <= 0 : op === '>' ? c > 0 : c >= 0;
      }
      case 'and': {
        let last: unknown = true;
        for (let i = 0; i < args.length; i++) {
          last = arg(i);
          if (!truthy(last)) return last;
        }
        return last;
      }
      case 'or': {
        let last: unknown = false;
        for (let i = 0; i < args.length; i++) {
          last = arg(i);
          if (truthy(last)) return last;
        }
        return last;
      }
      case '!':
        return !truthy(arg(0));
      case 'if': {
        let i = 0;
        for (; i + 1 < args.length; i += 2) if (truthy(arg(i))) return arg(i + 1);
        return i < args.length ? arg(i) : null;
      }
      case '+':
        return finite(args.reduce<number>((sum, _, i) => sum + num(arg(i)), 0));
      case '*':
        return finite(args.reduce<number>((p, _, i) => p * num(arg(i)), 1));
      case '-':
        return finite(args.length === 1 ? -num(arg(0)) : num(arg(0)) - num(arg(1)));
      case '/':
        return finite(num(arg(0)) / num(arg(1)));
      case '%':
        return finite(num(arg(0)) % num(arg(1)));
      case 'min':
      case 'max': {
        const values = args.map((_, i) => num(arg(i)));
        return finite(op === 'min' ? Math.min(...values) : Math.max(...values));
      }
      case 'cat': {
        let out = '';
        for (let i = 0; i < args.length; i++) {
          const v = arg(i);
          out = str(out + (v === null ? '' : typeof v === 'object' ? JSON.stringify(v) : String(v)));
        }
        return out;
      }
      case 'substr': {
        const s = String(arg(0) ?? '');
        const start = num(arg(1));
        const len = args.length === 3 ? num(arg(2)) : undefined;
        const from = start < 0 ? Math.max(0, s.length + start) : start;
        return len === undefined ? s.slice(from) : len < 0 ? s.slice(from, s.length + len) : s.slice(from, from + len);
      }
      case 'lower':
        return String(arg(0) ?? '').toLowerCase();
      case 'upper':
        return String(arg(0) ?? '').toUpperCase();
      case 'in': {
        const needle = arg(0);
        const hay = arg(1);
        if (typeof hay === 'string') return typeof needle === 'string' && hay.includes(needle);
        return Array.isArray(hay) && hay.some((h) => looseEqual(h, needle));
      }
      case 'length': {
        const v = arg(0);
        return typeof v === 'string' || Array.isArray(v) ? v.length : null;
      }
      case 'range': {
        const from = Math.trunc(num(arg(0)));
        const to = Math.trunc(num(arg(1)));
        if (!Number.isFinite(from) || !Number.isFinite(to) || to <= from) return [];
        if (to - from > budget.maxItems) throw overBudget('array size');
        const out: number[] = [];
        for (let i = from; i < to; i++) {
          tick();
          out.push(i);
        }
        return out;
      }
      case 'map':
      case 'filter':
      case 'all':
      case 'some': {
        const items = arg(0);
        if (!Array.isArray(items)) return op === 'map' || op === 'filter' ? [] : op === 'all';
        if (op === 'map') return items.map((item) => ev(args[1], item));
        if (op === 'filter') return items.filter((item) => truthy(ev(args[1], item)));
        if (op === 'all') return items.length > 0 && items.every((item) => truthy(ev(args[1], item)));
        return items.some((item) => truthy(ev(args[1], item)));
      }
      default:
        throw invalid(`unknown operator "${op}"`);
    }
  };
  return ev(expr, data);
}
