import assert from 'node:assert/strict';
import { randomBytes, randomUUID } from 'node:crypto';
import { describe, test } from 'node:test';
import kafkajs from 'kafkajs';
import { murmur2, partitionForKey } from '../../../shared/adapters/event-log/partitioner.ts';

/** kafkajs's own DefaultPartitioner, the reference implementation. */
const kafkajsPartition = (key: string, partitions: number): number => {
  const partitioner = kafkajs.Partitioners.DefaultPartitioner();
  const partitionMetadata = Array.from({ length: partitions }, (_, partitionId) => ({ partitionId, leader: 0 }));
  return partitioner({
    topic: 't',
    partitionMetadata: partitionMetadata as kafkajs.PartitionMetadata[],
    message: { key, value: null },
  });
};

const randomKey = (i: number): string => {
  switch (i % 4) {
    case 0:
      return randomUUID();
    case 1:
      return randomBytes(1 + (i % 13)).toString('base64');
    case 2:
      return `call-${i}-${'é✓🙂'.slice(0, i % 4)}`;
    default:
      return 'x'.repeat(i % 9);
  }
};

describe('murmur2 partitioner', () => {
  test('matches kafkajs DefaultPartitioner for 400 random keys and several partition counts', () => {
    for (let i = 0; i < 400; i++) {
      const key = randomKey(i);
      for (const partitions of [1, 2, 3, 4, 7, 12, 100]) {
        assert.equal(
          partitionForKey(key, partitions),
          kafkajsPartition(key, partitions),
          `key ${JSON.stringify(key)}, ${partitions} partitions`,
        );
      }
    }
  });

  test('matches hashes published by the Java client', () => {
    // From Kafka's UtilsTest.testMurmur2.
    const cases: Array<[string, number]> = [
      ['21', -973932308],
      ['foobar', -790332482],
      ['a-little-bit-long-string', -985981536],
      ['a-little-bit-longer-string', -1486304829],
      ['lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8', -58897971],
      ['abc', 479470107],
    ];
    for (const [key, hash] of cases) assert.equal(murmur2(Buffer.from(key)), hash, key);
  });

  test('rejects a partition count below one', () => {
    assert.throws(() => partitionForKey('k', 0), RangeError);
  });
});
