/**
 * An immutable map from strings that updates in near-constant time: `set` and `delete` return a
 * new map sharing all but one path with the old one (a two-level trie of 32 × 32 slots over the
 * key's hash, small maps at the leaves). Aggregate states hold it where a plain Map would have to
 * be copied whole on every event — a team's open capacity reservations, say — so `evolve` stays
 * pure without costing time proportional to the map's size.
 */
type Leaf<V> = ReadonlyMap<string, V>;
type Branch<V> = ReadonlyArray<Leaf<V> | undefined>;
type Root<V> = ReadonlyArray<Branch<V> | undefined>;

const WIDTH = 32;

/** FNV-1a, 32 bits. */
const hash = (key: string): number => {
  let h = 0x811c9dc5;
  for (let i = 0; i < key.length; i++) {
    h ^= key.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return h >>> 0;
};

const replaced = <T>(array: ReadonlyArray<T> | undefined, index: number, value: T): T[] => {
  const copy = array ? [...array] : new Array<T>(WIDTH);
  copy[index] = value;
  return copy;
};

export class PersistentMap<V> {
  private static readonly EMPTY = new PersistentMap<never>([], 0);

  private constructor(
    private readonly root: Root<V>,
    /** Number of entries. */
    readonly size: number,
  ) {}

  static empty<V>(): PersistentMap<V> {
    return PersistentMap.EMPTY;
  }

  static of<V>(entries: Iterable<readonly [string, V]>): PersistentMap<V> {
    let map = PersistentMap.empty<V>();
    for (const [key, value] of entries) map = map.set(key, value);
    return map;
  }

  private leaf(key: string): { top: number; mid: number; leaf: Leaf<V> | undefined } {
    const h = hash(key);
    const top = h % WIDTH;
    const mid = (h >>> 5) % WIDTH;
    return { top, mid, leaf: this.root[top]?.[mid] };
  }

  get(key: string): V | undefined {
    return this.leaf(key).leaf?.get(key);
  }

  has(key: string): boolean {
    return this.leaf(key).leaf?.has(key) ?? false;
  }

  set(key: string, value: V): PersistentMap<V> {
    const { top, mid, leaf } = this.leaf(key);
    const next = new Map(leaf).set(key, value);
    return new PersistentMap(
      replaced(this.root, top, replaced(this.root[top], mid, next)),
      this.size + (leaf?.has(key) ? 0 : 1),
    );
  }

  delete(key: string): PersistentMap<V> {
    const { top, mid, leaf } = this.leaf(key);
    if (!leaf?.has(key)) return this;
    const next = new Map(leaf);
    next.delete(key);
    return new PersistentMap(
      replaced(this.root, top, replaced(this.root[top], mid, next.size > 0 ? next : undefined)),
      this.size - 1,
    );
  }

  *entries(): IterableIterator<[string, V]> {
    for (const branch of this.root) for (const leaf of branch ?? []) if (leaf) yield* leaf.entries();
  }
}
