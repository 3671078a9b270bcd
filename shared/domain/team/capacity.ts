/**
 * Converting to the team's unit of capacity, whole minutes, and estimating what a call will use.
 *
 * The admin API speaks hours (the spec's "live call hours"): hours × 60, rounded to the minute.
 * A call uses its length rounded up to the next whole minute (a started minute counts), at least 1.
 * The estimate reserved at submission: the normalised duration — corrected by the transcript
 * length when there is a transcript — else the transcript length at 150 words per minute, else
 * DEFAULT_ESTIMATE_MINUTES for an audio-only call of unknown length. A duration of 0 tells no
 * length (systems send 0 for "unknown"): it is read as not sent. Settling corrects the estimate.
 */
import { correctDuration, countWords, estimateSpokenSeconds } from '../submission/duration.ts';
import type { Submission } from '../submission/submission.ts';

/** Reserved for an audio-only call sent without a duration; settled to the real length later. */
export const DEFAULT_ESTIMATE_MINUTES = 30;

/** Whole minutes for an amount of hours from the admin API. */
export const hoursToMinutes = (hours: number): number => Math.round(hours * 60);

/** Whole minutes a call of this many seconds consumes: every started minute counts. */
export const minutesForSeconds = (seconds: number): number => (seconds > 0 ? Math.ceil(seconds / 60) : 0);

/**
 * A call's length as its submission tells it, in seconds: its duration (corrected by the
 * transcript's length), else the transcript's spoken length; undefined when neither tells one
 * (no transcript, and no duration or a duration of 0). What a call is reserved at submission, and
 * what an inline-transcript call is settled at.
 */
export const submittedSeconds = (submission: Pick<Submission, 'duration' | 'transcript'>): number | undefined => {
  const words = submission.transcript ? countWords(submission.transcript.text) : 0;
  const { duration } = submission;
  if (duration && duration.seconds > 0)
    return (words ? correctDuration(duration, { transcriptWords: words }) : duration).seconds;
  return words ? estimateSpokenSeconds(words) : undefined;
};

/** Minutes to reserve for a submission (≥ 1); see the top of this file. */
export const estimateCallMinutes = (submission: Pick<Submission, 'duration' | 'transcript'>): number => {
  const seconds = submittedSeconds(submission);
  return seconds === undefined ? DEFAULT_ESTIMATE_MINUTES : Math.max(1, minutesForSeconds(seconds));
};
