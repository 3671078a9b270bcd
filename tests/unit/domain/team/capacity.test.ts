import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  DEFAULT_ESTIMATE_MINUTES,
  estimateCallMinutes,
  hoursToMinutes,
  minutesForSeconds,
  submittedSeconds,
} from '../../../../shared/domain/team/capacity.ts';
import { normaliseDuration } from '../../../../shared/domain/submission/duration.ts';

const duration = (raw: number) => {
  const result = normaliseDuration(raw, {});
  assert.ok(result.ok);
  return result.duration;
};
const transcript = (words: number) => ({ text: 'word '.repeat(words), truncated: false, originalBytes: words * 5 });

test('hours from the admin API are kept as minutes (× 60)', () => {
  assert.deepEqual([hoursToMinutes(10), hoursToMinutes(1.5), hoursToMinutes(0.01)], [600, 90, 1]);
});

test('a started minute counts', () => {
  assert.deepEqual([0, 1, 60, 61, 3600].map(minutesForSeconds), [0, 1, 1, 2, 60]);
});

test('the estimate: the duration, corrected by the transcript when there is one', () => {
  assert.equal(estimateCallMinutes({ duration: duration(600) }), 10);
  assert.equal(estimateCallMinutes({ duration: duration(45), transcript: transcript(6000) }), 45); // 45 minutes, not seconds
});

test('the estimate is never longer than 7 days: a corrected duration keeps the cap of a sent one', () => {
  // 256,000 words (~28 h) are nearest 12,000 minutes, which sent as minutes is a 400: 12,000 seconds.
  assert.equal(estimateCallMinutes({ duration: duration(12_000), transcript: transcript(256_000) }), 200);
});

test('the estimate without a duration: the transcript at 150 words/minute, else the default', () => {
  assert.equal(estimateCallMinutes({ transcript: transcript(1500) }), 10);
  assert.equal(estimateCallMinutes({ transcript: transcript(3) }), 1);
  assert.equal(estimateCallMinutes({}), DEFAULT_ESTIMATE_MINUTES);
  // A duration of 0 tells no length (systems send 0 for "unknown"): read as not sent.
  assert.equal(estimateCallMinutes({ duration: duration(0) }), DEFAULT_ESTIMATE_MINUTES);
  assert.equal(estimateCallMinutes({ duration: duration(0), transcript: transcript(30_000) }), 200);
});

test('the length an inline-transcript call is settled at is the one it was reserved at, a started minute counted', () => {
  // 151 words are 60.4 s: two started minutes, reserved and settled alike.
  assert.equal(submittedSeconds({ transcript: transcript(151) }), 60.4);
  assert.equal(minutesForSeconds(Math.ceil(submittedSeconds({ transcript: transcript(151) })!)), 2);
  assert.equal(estimateCallMinutes({ transcript: transcript(151) }), 2);
  assert.equal(submittedSeconds({ duration: duration(0) }), undefined);
});
