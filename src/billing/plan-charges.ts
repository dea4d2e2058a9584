/** A billable lookup of a batch: the row it belongs to, its kind (an index) and its key. */
export interface BillableItem {
  kind: number;
  key: string;
  row: number;
}

/** What a batch will pay for, planned before its checkpoint commits. */
export interface ChargePlan {
  /** Keys to charge, 1 credit each, by kind index, in row order. */
  charged: Set<string>[];
  /** The first row the balance could not pay for, if any; no item of it is charged. */
  unpaidRow: number | undefined;
  total: number;
}

/**
 * Each (kind, key) not `billed` costs one credit, in row order, until `balance` runs out. A row is
 * paid for whole or not at all: when the balance runs out inside a row, none of that row's items is
 * charged, and `unpaidRow` says where the paid rows end. Pure: the checkpoint checks the plan
 * against the store and the caller plans again with what the store says is true now.
 */
export function planCharges(
  kinds: number,
  items: readonly BillableItem[],
  billed: readonly { has(key: string): boolean }[],
  balance: number,
): ChargePlan {
  const charged = Array.from({ length: kinds }, () => new Set<string>());
  const order: BillableItem[] = [];
  let unpaidRow: number | undefined;
  for (const item of items) {
    if (billed[item.kind]!.has(item.key) || charged[item.kind]!.has(item.key)) continue;
    if (order.length === balance) {
      unpaidRow = item.row;
      // Whatever this row had already been granted goes back: its rows are not committed.
      while (order.length > 0 && order[order.length - 1]!.row === item.row) {
        const undone = order.pop()!;
        charged[undone.kind]!.delete(undone.key);
      }
      break;
    }
    charged[item.kind]!.add(item.key);
    order.push(item);
  }
  return { charged, unpaidRow, total: order.length };
}
