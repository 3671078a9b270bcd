/**
 * Consumer-group membership for the SQL event log: members heartbeat into `log_members`; the
 * partitions of the group's topics are split over the live members by a deterministic fair split;
 * a member processes a partition only while it holds its row in `log_leases`. A lease is taken
 * when free or when its holder stopped heartbeating; a commit is written only by the lease holder.
 */
import type { PartitionRef } from '../../ports/event-log.ts';
import { toBigInt, type SqlDriver } from './sql-driver.ts';

export interface Member {
  memberId: string;
  topics: string[];
}

/**
 * The partitions `memberId` should own: every partition of every topic, in (topic, partition)
 * order, goes round-robin to the members subscribed to its topic, sorted by member id.
 */
export const fairShare = (
  members: Member[],
  memberId: string,
  partitionCounts: Map<string, number>,
): PartitionRef[] => {
  const sorted = [...members].sort((a, b) => (a.memberId < b.memberId ? -1 : a.memberId > b.memberId ? 1 : 0));
  const mine: PartitionRef[] = [];
  let slot = 0;
  for (const topic of [...partitionCounts.keys()].sort()) {
    const eligible = sorted.filter((m) => m.topics.includes(topic));
    for (let partition = 0; partition < (partitionCounts.get(topic) ?? 0); partition++, slot++) {
      if (eligible.length > 0 && eligible[slot % eligible.length]!.memberId === memberId)
        mine.push({ topic, partition });
    }
  }
  return mine;
};

export interface MembershipOptions {
  groupId: string;
  memberId: string;
  topics: string[];
  /** A member whose last heartbeat is older than this is dead and loses its leases. */
  sessionTimeoutMs: number;
}

export class SqlGroupMembership {
  constructor(
    private readonly driver: SqlDriver,
    private readonly options: MembershipOptions,
  ) {}

  /** Registers this member or extends its session. */
  async heartbeat(): Promise<void> {
    const { groupId, memberId, topics, sessionTimeoutMs } = this.options;
    await this.driver.query(
      `INSERT INTO log_members (group_id, member_id, topics, expires_at_ms) VALUES (?, ?, ?, ${this.driver.nowMs} + ?)
       ON CONFLICT (group_id, member_id) DO UPDATE SET expires_at_ms = excluded.expires_at_ms`,
      [groupId, memberId, JSON.stringify(topics), sessionTimeoutMs],
    );
  }

  /** Members whose session has not expired; expired ones are removed on the way. */
  async liveMembers(): Promise<Member[]> {
    const rows = await this.driver.query<{ member_id: string; topics: string; live: number | string }>(
      `SELECT member_id, topics, CASE WHEN expires_at_ms > ${this.driver.nowMs} THEN 1 ELSE 0 END AS live
       FROM log_members WHERE group_id = ?`,
      [this.options.groupId],
    );
    const dead = rows.filter((r) => Number(r.live) !== 1);
    if (dead.length > 0) {
      await this.driver.query(`DELETE FROM log_members WHERE group_id = ? AND expires_at_ms <= ${this.driver.nowMs}`, [
        this.options.groupId,
      ]);
    }
    return rows
      .filter((r) => Number(r.live) === 1)
      .map((r) => ({ memberId: r.member_id, topics: JSON.parse(r.topics) as string[] }));
  }

  /** Partitions whose lease this member holds according to the database. */
  async heldLeases(): Promise<PartitionRef[]> {
    const rows = await this.driver.query<{ topic: string; partition: number }>(
      'SELECT topic, partition FROM log_leases WHERE group_id = ? AND member_id = ?',
      [this.options.groupId, this.options.memberId],
    );
    return rows.map((r) => ({ topic: r.topic, partition: Number(r.partition) }));
  }

  /** Takes the leases that are free or held by a dead member; resolves with those taken. */
  async acquire(refs: PartitionRef[]): Promise<PartitionRef[]> {
    const { groupId, memberId } = this.options;
    return this.driver.transaction(async (tx) => {
      const taken: PartitionRef[] = [];
      for (const ref of refs) {
        const rows = await tx.query(
          `INSERT INTO log_leases (group_id, topic, partition, member_id) VALUES (?, ?, ?, ?)
           ON CONFLICT (group_id, topic, partition) DO UPDATE SET member_id = excluded.member_id
           WHERE log_leases.member_id = excluded.member_id OR NOT EXISTS (
             SELECT 1 FROM log_members m
             WHERE m.group_id = log_leases.group_id AND m.member_id = log_leases.member_id AND m.expires_at_ms > ${this.driver.nowMs})
           RETURNING member_id`,
          [groupId, ref.topic, ref.partition, memberId],
        );
        if (rows.length > 0) taken.push(ref);
      }
      return taken;
    });
  }

  /** Gives leases up (only those this member holds). */
  async release(refs: PartitionRef[]): Promise<void> {
    if (refs.length === 0) return;
    const { groupId, memberId } = this.options;
    await this.driver.transaction(async (tx) => {
      for (const ref of refs) {
        await tx.query('DELETE FROM log_leases WHERE group_id = ? AND topic = ? AND partition = ? AND member_id = ?', [
          groupId,
          ref.topic,
          ref.partition,
          memberId,
        ]);
      }
    });
  }

  /**
   * Stores committed offsets, each only while this member holds the partition's lease (fencing).
   * Resolves with the partitions whose commit was refused.
   */
  async commit(offsets: Array<{ ref: PartitionRef; offset: bigint }>): Promise<PartitionRef[]> {
    if (offsets.length === 0) return [];
    const { groupId, memberId } = this.options;
    return this.driver.transaction(async (tx) => {
      const refused: PartitionRef[] = [];
      for (const { ref, offset } of offsets) {
        const rows = await tx.query(
          `INSERT INTO log_offsets (group_id, topic, partition, next_offset)
           SELECT group_id, topic, partition, CAST(? AS BIGINT) FROM log_leases
           WHERE group_id = ? AND topic = ? AND partition = ? AND member_id = ?
           ON CONFLICT (group_id, topic, partition) DO UPDATE SET next_offset = excluded.next_offset
           RETURNING next_offset`,
          [offset, groupId, ref.topic, ref.partition, memberId],
        );
        if (rows.length === 0) refused.push(ref);
      }
      return refused;
    });
  }

  /** Committed offset of this member's group for one partition. */
  async committedOffset(ref: PartitionRef): Promise<bigint | undefined> {
    return committedOffset(this.driver, this.options.groupId, ref);
  }

  /** Releases every lease of this member and deregisters it. */
  async leave(): Promise<void> {
    const { groupId, memberId } = this.options;
    await this.driver.transaction(async (tx) => {
      await tx.query('DELETE FROM log_leases WHERE group_id = ? AND member_id = ?', [groupId, memberId]);
      await tx.query('DELETE FROM log_members WHERE group_id = ? AND member_id = ?', [groupId, memberId]);
    });
  }
}

/** Committed offset of a group for one partition, if any. */
export const committedOffset = async (
  driver: SqlDriver,
  groupId: string,
  ref: PartitionRef,
): Promise<bigint | undefined> => {
  const [row] = await driver.query<{ next_offset: unknown }>(
    'SELECT next_offset FROM log_offsets WHERE group_id = ? AND topic = ? AND partition = ?',
    [groupId, ref.topic, ref.partition],
  );
  return row === undefined ? undefined : toBigInt(row.next_offset);
};
