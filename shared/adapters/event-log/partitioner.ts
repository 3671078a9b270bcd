/**
 * Kafka's default partitioner for keyed records, byte for byte as the Java client (and kafkajs's
 * `Partitioners.DefaultPartitioner`) computes it, so a key lands on the same partition number in
 * every adapter of the event log.
 */

const SEED = 0x9747b28c;
const M = 0x5bd1e995;

/** Murmur2 (32-bit) over `data`, as `org.apache.kafka.common.utils.Utils.murmur2`. */
export const murmur2 = (data: Uint8Array): number => {
  const length = data.length;
  let h = SEED ^ length;
  const length4 = length >>> 2;
  for (let i = 0; i < length4; i++) {
    const i4 = i * 4;
    let k = data[i4]! | (data[i4 + 1]! << 8) | (data[i4 + 2]! << 16) | (data[i4 + 3]! << 24);
    k = Math.imul(k, M);
    k ^= k >>> 24;
    k = Math.imul(k, M);
    h = Math.imul(h, M) ^ k;
  }
  const tail = length & ~3;
  const rest = length & 3;
  if (rest >= 3) h ^= data[tail + 2]! << 16;
  if (rest >= 2) h ^= data[tail + 1]! << 8;
  if (rest >= 1) {
    h ^= data[tail]!;
    h = Math.imul(h, M);
  }
  h ^= h >>> 13;
  h = Math.imul(h, M);
  h ^= h >>> 15;
  return h | 0;
};

/** Kafka's `toPositive`: clears the sign bit (not `Math.abs`). */
const toPositive = (n: number): number => n & 0x7fffffff;

/** Partition of a record with `key` (UTF-8) in a topic of `partitions` partitions. */
export const partitionForKey = (key: string, partitions: number): number => {
  if (!Number.isInteger(partitions) || partitions < 1)
    throw new RangeError(`partitions must be a positive integer, got ${partitions}`);
  return toPositive(murmur2(Buffer.from(key, 'utf8'))) % partitions;
};
