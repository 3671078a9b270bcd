/**
 * The work of one call's actor: look at the call's state, run its next step, record the outcome as
 * an event (appended with the expected version), repeat until the call is finished. Every step is
 * safe to run again after a crash: effects are reads (fetch, transcribe, analyse) or idempotent
 * (capacity settle/release), and the event that records a step can only be appended once.
 */
import type { Logger } from 'pino';
import {
  callDecider,
  type CallCommand,
  deadlineOf,
  type NextStep,
  nextStep,
  processingMode,
} from '../../shared/domain/call/call-decider.ts';
import type { CallSubmittedData } from '../../shared/domain/call/call-submitted.ts';
import type { CallEvent } from '../../shared/domain/call/call-events.ts';
import type { CallState, PendingCall } from '../../shared/domain/call/call-state.ts';
import { callEvents, callStreamId } from '../../shared/domain/call/call-catalogue.ts';
import { isDomainError } from '../../shared/domain/decider.ts';
import { minutesForSeconds, submittedSeconds } from '../../shared/domain/team/capacity.ts';
import type { TeamCommand } from '../../shared/domain/team/team-commands.ts';
import { toStorable } from '../../shared/domain/submission/storable-text.ts';
import { segmentsFromText } from '../../shared/domain/transcript/transcript-segments.ts';
import type { Analyser } from '../../shared/ports/analyser.ts';
import type { AudioSource, FetchedAudio } from '../../shared/ports/audio-source.ts';
import type { EventStore, Json } from '../../shared/ports/event-store.ts';
import { StepError } from '../../shared/ports/step-error.ts';
import type { Transcriber } from '../../shared/ports/transcriber.ts';
import { AggregateRepository, type BoundedStateCache } from '../runtime/aggregate-repository.ts';
import { createTeamWriter, type TeamRepository } from '../runtime/team-writer.ts';
import type { ActorContext } from './actors.ts';
import { retrying, type RetryPolicy, sleep } from './retry.ts';
import { countFinishedCalls, timeStep } from '../../shared/observability/metrics.ts';
import { inSpan, traceContextFrom, traceHeaders, tracingEnabled } from '../../shared/observability/tracing.ts';

export interface PipelineDeps {
  store: EventStore;
  audio: AudioSource;
  transcriber: Transcriber;
  analyser: Analyser;
  logger: Logger;
  processingTimeoutMs: number;
  retry: RetryPolicy;
  /** Runs one transcription when the team's turn comes (the local engine is CPU-bound; see processor.ts). */
  transcriptionSlot: <T>(teamId: string, work: () => Promise<T>, signal: AbortSignal) => Promise<T>;
  /** Runs one audio download when the team's turn comes (downloads hold sockets and disk). */
  downloadSlot: <T>(teamId: string, work: () => Promise<T>, signal: AbortSignal) => Promise<T>;
  /**
   * Time one call may spend downloading its audio, over all its attempts; past it the fetch fails
   * for good. Kept well under the processing timeout, so a call whose audio cannot be had fails
   * with the fetch's own reason, not with `processing_timeout`.
   */
  audioFetchBudgetMs: number;
  /** The process's one writer of team streams (shared with an ingress in the same process); default a new one. */
  teams?: TeamRepository;
  /**
   * Folded states of the calls being worked on, shared with the intake: a step reads only the
   * events appended since the last one (another process's, e.g. a retry) instead of the stream.
   */
  callStates?: BoundedStateCache<CallState>;
  now?: () => Date;
  /**
   * Steps resolve once committed, not once on disk: nothing a step does is acknowledged outside
   * the database, whose commits reach the disk in order, so a power loss takes back a suffix of
   * steps that then run again (the embedded default:
   * docs/decisions/0015-embedded-durability-off-the-event-loop.md).
   */
  deferDurability?: boolean;
}

/**
 * What a remote engine returns (a transcript, an analysis, an error text) is not checked by the
 * ingress: a U+0000 or an unpaired surrogate in it becomes U+FFFD, so every backend can store it.
 */
const storable = <T>(value: T): T => {
  if (typeof value === 'string') return toStorable(value) as T;
  if (Array.isArray(value)) return value.map(storable) as T;
  if (value !== null && typeof value === 'object')
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [toStorable(k), storable(v)])) as T;
  return value;
};

/**
 * A step error as logged: its code, not its message, which may name the audio URL (a personal
 * field, sealed in CallFailed and never written in clear; docs/decisions/0014-erasure-crypto-shredding.md).
 */
const loggable = (error: unknown): unknown =>
  error instanceof StepError ? { type: 'StepError', code: error.code, retriable: error.retriable } : error;

export const createCallPipeline = (deps: PipelineDeps) => {
  // A step decides on the state the actor just loaded (the cache) without reading the stream again:
  // the append's expected version catches the rare write of another process (an erasure, a retry,
  // a processor that took the partition over), and the repository then reads and decides again.
  const calls = new AggregateRepository(deps.store, callDecider, callEvents, {
    cache: deps.callStates,
    deferDurability: deps.deferDurability,
    decideOnCachedState: deps.callStates !== undefined,
  });
  const teamWrite = { deferDurability: deps.deferDurability };
  // A team's stream grows with every call: keep folded states and read only newer events.
  const teams = deps.teams ?? createTeamWriter(deps.store).repository;
  const now = () => (deps.now ?? (() => new Date()))().toISOString();

  /** A refusal that means the step lost a race (the call finished or moved on): it changes nothing. */
  const lostRace = (error: unknown) =>
    isDomainError(error) && ['CALL_ALREADY_FINISHED', 'CALL_STEP_OUT_OF_ORDER', 'CALL_ERASED'].includes(error.code);

  /**
   * What every event of a step carries in its metadata: the team, so downstream consumers of any
   * call event know it, and the step's trace context, so the projections continue the call's trace.
   */
  const stepMetadata = (call: { submitted: { teamId: string } }): Record<string, Json> => ({
    teamId: call.submitted.teamId,
    ...traceHeaders(),
  });

  /** The call's trace, begun at its ingest request: the context its CallSubmitted carries. */
  const traceOf = async (callId: string) =>
    tracingEnabled()
      ? traceContextFrom(
          (await deps.store.readStream(callStreamId(callId), { maxCount: 1 }).catch(() => []))[0]?.metadata,
        )
      : undefined;

  /** Appends a step's outcome; a step that lost a race changes nothing. Whether it was appended. */
  const record = (call: { callId: string; submitted: { teamId: string } }, command: CallCommand) =>
    recordAll(call.callId, [{ command, metadata: stepMetadata(call) }]);

  /**
   * Appends the outcomes of several steps together (one transaction); those that lost a race change
   * nothing. Whether every one was appended.
   */
  const recordAll = async (
    callId: string,
    commands: Array<{ command: CallCommand; metadata: Record<string, Json> }>,
  ): Promise<boolean> => {
    const outcomes = await calls.handleMany(callId, commands);
    let all = true;
    for (const outcome of outcomes) {
      if ('error' in outcome) {
        if (!lostRace(outcome.error)) throw outcome.error;
        all = false;
      } else countFinishedCalls(outcome.events);
    }
    return all;
  };

  /**
   * Whether a step runs in this process and waits on nothing outside it (starting, an inline
   * transcript, the built-in analysis, the deal, completing): its outcome is decided on the state
   * the one before left, without reading the stream (see `keeps` and `run`). A download, a
   * transcription or a remote analysis is not: what came before it is appended first, so the call
   * shows its stage while it waits.
   */
  const runsHere = (step: NextStep): boolean =>
    step === 'start' ||
    step === 'record_inline_transcript' ||
    step === 'record_deal' ||
    step === 'complete' ||
    (step === 'analyse' && deps.analyser.inProcess === true);

  /**
   * Whether an actor keeps a step's outcome to append with the next ones: a step that runs here,
   * but not completing. Completing settles the capacity before it appends CallCompleted, so what
   * came before it is appended first: from the settlement on, the store shows the call at
   * `completing`, which the deadline's timer completes instead of failing (a failed call would
   * stay charged, and be charged again on a retry).
   */
  const keeps = (step: NextStep): boolean => runsHere(step) && step !== 'complete';

  /** A call, as far as its capacity goes. */
  type CapacityHolder = { callId: string; submitted: { teamId: string } };
  /**
   * A capacity command for the call's team. A team that does not exist holds no capacity: nothing
   * to settle or give back (a record from outside the ingress may name one), and the call still
   * ends, instead of staying pending with its every end refused.
   */
  const onTeam = async (call: CapacityHolder, command: TeamCommand): Promise<void> => {
    const { teamId } = call.submitted;
    try {
      await teams.handle(teamId, command, undefined, teamWrite);
    } catch (error) {
      if (!isDomainError(error, 'TEAM_NOT_FOUND')) throw error;
      deps.logger.warn({ teamId, callId: call.callId }, 'the call names no known team: no capacity to change');
    }
  };
  const settleCapacity = (call: PendingCall, seconds: number | null) =>
    onTeam(call, {
      type: 'SettleCapacity',
      callId: call.callId,
      actualMinutes:
        seconds === null ? call.submitted.capacity.reservedMinutes : Math.max(1, minutesForSeconds(seconds)),
    });
  const releaseCapacity = (call: CapacityHolder, callMayStillRun = false) =>
    onTeam(call, {
      type: 'ReleaseCapacity',
      callId: call.callId,
      ...(callMayStillRun ? { callMayStillRun } : {}),
    });

  /**
   * Length of an inline-transcript call, whole seconds: as its submission tells it (the estimate it
   * was reserved at), rounded up, so a started minute is charged as the estimate counted it.
   */
  const inlineSeconds = (call: PendingCall): number | null => {
    const seconds = submittedSeconds(call.submitted.submission);
    return seconds === undefined ? null : Math.ceil(seconds);
  };

  const seconds = (ms: number) => `${Math.round(ms / 1000)} s`;

  /** What a call's actor carries from one step, and one attempt, to the next. */
  interface Progress {
    /** Time spent downloading the audio over all attempts (bounded by `audioFetchBudgetMs`). */
    fetchingMs: number;
    /** The capacity was settled: the call is charged, so it may end completed, never failed. */
    settled: boolean;
  }
  const freshProgress = (): Progress => ({ fetchingMs: 0, settled: false });

  /**
   * One attempt at the call's audio, bounded by what is left of its fetch budget. A retriable
   * failure that leaves no budget is made terminal, so the call fails with the fetch's reason.
   */
  const fetchAudio = async (url: string, spent: Progress, signal: AbortSignal): Promise<FetchedAudio> => {
    const budgetMs = deps.audioFetchBudgetMs;
    if (spent.fetchingMs >= budgetMs)
      throw new StepError(
        'audio_timeout',
        `Fetching the audio took more than ${seconds(budgetMs)} over all attempts.`,
        false,
      );
    const started = Date.now();
    const attempt = await deps.audio.fetch(url, { signal, timeoutMs: budgetMs - spent.fetchingMs }).then(
      (fetched) => ({ fetched }),
      (error: unknown) => ({ error }),
    );
    spent.fetchingMs += Date.now() - started;
    if ('fetched' in attempt) return attempt.fetched;
    const { error } = attempt;
    if (error instanceof StepError && error.retriable && spent.fetchingMs >= budgetMs) {
      throw new StepError(
        error.code,
        `${error.message} Gave up: fetching the audio took more than ${seconds(budgetMs)} over all attempts.`,
        false,
        { cause: error },
      );
    }
    throw error;
  };

  /** How a step's outcome is recorded: appended now, or kept to be appended with the next ones. */
  type Recorder = (call: PendingCall, command: CallCommand) => Promise<unknown>;

  const runStep = async (
    call: PendingCall,
    actor: ActorContext,
    progress: Progress,
    record: Recorder,
  ): Promise<void> => {
    const { signal, teamId } = actor;
    const step = nextStep(call);
    const { submission } = call.submitted;
    switch (step) {
      case 'start':
        await record(call, { type: 'StartProcessing', now: now(), timeoutMs: deps.processingTimeoutMs });
        return;
      case 'record_inline_transcript': {
        const transcript = submission.transcript;
        if (!transcript)
          throw new StepError('transcript_missing', 'The call has neither a recording nor a transcript.', false);
        await record(call, {
          type: 'RecordTranscript',
          source: 'inline',
          text: transcript.text,
          truncated: transcript.truncated,
          durationSeconds: inlineSeconds(call),
          engine: null,
          segments: segmentsFromText(transcript.text),
          now: now(),
        });
        return;
      }
      case 'fetch_and_transcribe': {
        // The download is held here as soon as it is a file, not once the actor has its slot back:
        // an actor stopped while it queues for the slot gets no result, and the file goes all the same.
        const download: { fetched?: FetchedAudio } = {};
        const fetchHeld = async () => (download.fetched = await fetchAudio(submission.audioUrl!, progress, signal));
        try {
          const fetched = await actor.outsideSlot(() =>
            deps.downloadSlot(teamId, () => timeStep('fetch', fetchHeld), signal),
          );
          if (!call.audio)
            await record(call, {
              type: 'RecordAudioFetched',
              bytes: fetched.bytes,
              contentType: fetched.contentType,
              now: now(),
            });
          const transcription = await actor.outsideSlot(() =>
            deps.transcriptionSlot(
              teamId,
              () =>
                timeStep('transcribe', () =>
                  deps.transcriber.transcribe({ audioPath: fetched.path, contentType: fetched.contentType, signal }),
                ),
              signal,
            ),
          );
          await record(call, {
            type: 'RecordTranscript',
            source: 'audio',
            text: storable(transcription.text),
            truncated: false,
            durationSeconds: transcription.durationSeconds,
            engine: transcription.engine,
            segments: storable(transcription.segments ?? segmentsFromText(transcription.text)),
            now: now(),
          });
        } finally {
          await download.fetched?.cleanup();
        }
        return;
      }
      case 'analyse': {
        const analysis = await timeStep('analyse', () =>
          deps.analyser.analyse(
            {
              transcript: call.transcript!.text,
              segments: call.transcript!.segments,
              repName: submission.repName,
              repEmail: submission.repEmail,
              callDate: submission.callDate,
              callTitle: submission.callTitle,
            },
            { signal },
          ),
        );
        const { title, summary, score, components, insights, engine } = analysis;
        await record(call, {
          type: 'RecordAnalysis',
          analysis: storable({ title, summary, score, components, insights, engine }),
          now: now(),
        });
        return;
      }
      case 'record_deal':
        await record(call, { type: 'RecordDeal', now: now() });
        return;
      case 'complete':
        // Settle first: it is idempotent, so a crash before CallCompleted only repeats a no-op.
        await settleCapacity(call, call.transcript?.durationSeconds ?? null);
        progress.settled = true;
        await record(call, { type: 'CompleteCall', now: now() });
        return;
      case 'none':
        return;
    }
  };

  /** Whether the call is pending past its deadline. */
  const pastDeadline = (state: CallState): state is PendingCall =>
    state.status === 'pending' && Date.parse(deadlineOf(state, deps.processingTimeoutMs)) <= Date.parse(now());

  /** Ends the call as failed; the capacity goes back first (idempotent, see `complete`). */
  /**
   * Fails the call, then gives its reservation back: the release comes after CallFailed is stored,
   * never before. Released first, a CallFailed that was not stored (an outage, a crash between the
   * two writes) left the call pending with no reservation; woken again, it completed and its
   * settlement found nothing to charge. The other way round, a process that stops after the append
   * leaves the reservation of a call no longer pending, which the orphan sweep releases (as the
   * eraser does). A call that moved on meanwhile (a lost race) keeps its reservation.
   */
  const fail = async (call: PendingCall, code: string, reason: string) => {
    if (await record(call, { type: 'FailCall', code, reason: storable(reason), now: now() }))
      await releaseCapacity(call);
  };

  /** Whether every step of a newly submitted call runs here: no recording, the built-in analyser. */
  const runsWhollyHere = (submitted: CallSubmittedData): boolean =>
    processingMode(submitted) === 'transcript' && deps.analyser.inProcess === true;

  return {
    runsWhollyHere,

    /**
     * A call whose every step runs here (`runsWhollyHere`), taken from its submission to its end
     * at intake (docs/decisions/0020-calls-that-run-here-stored-whole.md): the steps are decided
     * one after the other on the state CallSubmitted leaves and appended with it, in one
     * transaction; then, as completing always does, the capacity is settled and CallCompleted
     * appended. Resolves true once completed; the intake commits the record's offset only after
     * it resolves, so a crash before the first append runs it all again, and one after it finds
     * the stream and leaves the rest to the call's actor. Resolves false when a step fails before
     * that append (nothing appended: the call takes the actor's way, CallSubmitted alone, then the
     * steps with their retries, and CallFailed when they give up), when the stored state refuses a
     * step (a redelivered record of a call that moved on), or when completing fails (the actor
     * completes it).
     */
    async runAtIntake(
      submitted: CallSubmittedData,
      metadata: Record<string, Json>,
      signal: AbortSignal,
    ): Promise<boolean> {
      const { callId } = submitted;
      const commands: Array<{ command: CallCommand; metadata: Record<string, Json> }> = [
        { command: { type: 'SubmitCall', data: submitted }, metadata },
      ];
      let state: CallState = callDecider
        .decide(commands[0]!.command, callDecider.initialState)
        .reduce(callDecider.evolve, callDecider.initialState);
      const keepHere: Recorder = async (call, command) => {
        commands.push({ command, metadata: stepMetadata(call) });
        state = callDecider.decide(command, state).reduce(callDecider.evolve, state);
      };
      // Nothing here waits outside the process: the context only carries the signal.
      const context: ActorContext = { callId, teamId: submitted.teamId, signal, outsideSlot: (work) => work() };
      /** Runs `step` on the pending state, its outcome going to `recorder`. */
      const runNext = (pending: PendingCall, step: NextStep, recorder: Recorder) =>
        inSpan(`step ${step}`, { attributes: { 'call.id': callId, 'call.step': step } }, () =>
          runStep(pending, context, freshProgress(), recorder),
        );
      try {
        // Every step but completing, which settles the capacity first (see below).
        while (state.status === 'pending') {
          const step = nextStep(state);
          if (step === 'complete') break;
          if (!runsHere(step)) return false;
          await runNext(state, step, keepHere);
        }
      } catch (error) {
        deps.logger.debug({ callId, err: loggable(error) }, "a step failed at intake: the call takes the actor's way");
        return false;
      }
      const outcomes = await calls.handleMany(callId, commands, { expectNew: true });
      if (outcomes.some((outcome) => 'error' in outcome)) {
        // The call was in the store already and moved on: left to the actor, which reads the stream.
        deps.callStates?.delete(callId);
        return false;
      }
      // Completing settles the capacity, then appends CallCompleted. Not in the append above: until
      // the call is stored, its reservation is what shows it was accepted (an erasure waits for it),
      // so the reservation goes only once the call is in its stream.
      try {
        if (state.status === 'pending') await runNext(state, 'complete', record);
      } catch (error) {
        deps.logger.debug(
          { callId, err: loggable(error) },
          "completing failed at intake: the call's actor completes it",
        );
        return false;
      }
      // Finished: nothing asks for its state again.
      deps.callStates?.delete(callId);
      return true;
    },

    /** Runs the call to the end (or until aborted). */
    async run(actor: ActorContext): Promise<void> {
      const { callId, signal } = actor;
      const log = deps.logger.child({ callId });
      // Backoff sleeps hold no processing slot: the actor queues for one again when it wakes.
      const pause = (ms: number) => actor.outsideSlot(() => sleep(ms, signal));
      const progress = freshProgress();
      // Each step is a span of the call's trace, which began at the ingest request.
      const trace = await traceOf(callId);
      // The actor reads the stream when it starts (another process may have written since this one
      // last did: a retry, an erasure, a partition taken over); between its own steps it goes on from
      // the state its last step left, and a write of another process shows at its next step.
      let first = true;
      // Outcomes of steps that ran here (`keeps`), not appended yet, and the state after them: a
      // transcript-only call's steps are decided one after the other on that state and appended in
      // one transaction, before completing settles the capacity. Nothing is acknowledged before
      // they are appended, so a crash only runs them again.
      let kept:
        { commands: Array<{ command: CallCommand; metadata: Record<string, Json> }>; state: CallState } | undefined;
      const keep: Recorder = async (call, command) => {
        const before = kept?.state ?? call;
        let events: CallEvent[];
        try {
          events = callDecider.decide(command, before);
        } catch (error) {
          if (!lostRace(error)) throw error;
          // The state it was decided on is behind the stream: append what is kept, then read it.
          await appendKept();
          first = true;
          return;
        }
        kept = {
          commands: [...(kept?.commands ?? []), { command, metadata: stepMetadata(call) }],
          state: events.reduce(callDecider.evolve, before),
        };
      };
      const appendKept = async () => {
        if (!kept) return;
        const { commands } = kept;
        kept = undefined;
        await recordAll(callId, commands);
      };
      for (;;) {
        if (signal.aborted) return;
        // An outage while loading is retried like a step's; past the policy the actor ends and the
        // processor's sweep wakes it again.
        const { state } = kept
          ? kept
          : await retrying(
              () => (first ? calls.load(callId) : calls.current(callId)),
              deps.retry,
              signal,
              (error, attempt, delayMs) =>
                log.warn({ attempt, delayMs, err: error }, 'loading the call failed; retrying'),
              pause,
            );
        first = false;
        const step = nextStep(state);
        if (kept && (state.status !== 'pending' || !keeps(step))) {
          // What was kept is appended before the call ends or waits on something outside.
          const flushing = kept;
          try {
            await retrying(
              () => {
                kept = flushing;
                return appendKept();
              },
              deps.retry,
              signal,
              (error, attempt, delayMs) =>
                log.warn({ attempt, delayMs, err: error }, 'recording the steps failed; retrying'),
              pause,
            );
          } catch (error) {
            if (signal.aborted) return;
            // The steps run again when the processor's sweep wakes the call.
            log.warn({ err: error }, 'recording the steps failed; the call is picked up again later');
            return;
          }
          continue;
        }
        if (state.status !== 'pending') {
          deps.callStates?.delete(callId);
          return;
        }
        try {
          await retrying(
            () =>
              inSpan(`step ${step}`, { parent: trace, attributes: { 'call.id': callId, 'call.step': step } }, () =>
                runStep(state, actor, progress, keeps(step) ? keep : record),
              ),
            deps.retry,
            signal,
            (error, attempt, delayMs) =>
              log.warn(
                { step, attempt, delayMs, code: (error as StepError).code, err: loggable(error) },
                'step failed; retrying',
              ),
            pause,
          );
        } catch (error) {
          if (signal.aborted) return;
          if (progress.settled || step === 'complete') {
            // Every step is recorded and the capacity may be settled (by this run, or by an earlier
            // one whose settlement was stored though it seemed to fail): failing the call could leave
            // a failed call charged, and a retry would charge it again. It stays at `completing`, for
            // the actor's next wake-up (the sweep) or the deadline's timer, which completes it.
            log.warn({ step, err: loggable(error) }, 'completing failed; the call is completed later');
            return;
          }
          const terminal =
            error instanceof StepError
              ? error
              : new StepError('internal_error', 'Processing failed unexpectedly; the error was logged.', false, {
                  cause: error,
                });
          log.warn({ step, code: terminal.code, err: loggable(error) }, 'call failed');
          await inSpan(
            'fail call',
            {
              parent: trace,
              attributes: { 'call.id': callId, 'call.step': step, 'call.processing_error': terminal.code },
            },
            async () => {
              // The steps before the failure are appended first, so the call shows how far it got.
              await appendKept();
              await fail(state, terminal.code, terminal.message);
            },
          );
          return;
        }
        log.debug({ step }, 'step done');
      }
    },

    /**
     * Fails a pending call whose deadline has passed; nothing for a finished one. The timer races
     * the call's actor, and each changes the capacity before it appends the call's end (two
     * streams, two writes): a call with every step recorded is completed instead (its actor may
     * have settled it already, its CallCompleted not stored yet), and a released reservation is
     * charged all the same should the actor complete the call after all. Which of the two is
     * decided on the stream as TimeOut is appended, not as it was read here: the decider does not
     * time out a call at `completing`, so an actor that recorded the last step and settled in
     * between finds its call completed, never failed.
     */
    async timeOut(callId: string): Promise<CallState> {
      // A span of the call's trace, as its steps are: the CallFailed it appends continues the trace.
      const trace = await traceOf(callId);
      return inSpan('time out', { parent: trace, attributes: { 'call.id': callId } }, async () => {
        const { state } = await calls.load(callId);
        if (pastDeadline(state) && nextStep(state) !== 'complete') await releaseCapacity(state, true);
        const metadata =
          state.status === 'absent'
            ? undefined
            : { teamId: state.status === 'erased' ? state.teamId : state.submitted.teamId, ...traceHeaders() };
        const result = await calls.handle(
          callId,
          { type: 'TimeOut', now: now(), timeoutMs: deps.processingTimeoutMs },
          metadata,
        );
        countFinishedCalls(result.events);
        const after = result.state;
        if (!pastDeadline(after) || nextStep(after) !== 'complete') return after;
        await settleCapacity(after, after.transcript?.durationSeconds ?? null);
        await record(after, { type: 'CompleteCall', now: now() });
        return (await calls.load(callId)).state;
      });
    },
  };
};

export type CallPipeline = ReturnType<typeof createCallPipeline>;
