import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  type CallHistoryRow,
  evolveHistoryRow,
  type RecordedCallEvent,
  foldForSearch,
  matchesSearch,
  searchTerm,
  searchText,
} from '../../../../shared/domain/call/call-history.ts';
import type { CallEvent } from '../../../../shared/domain/call/call-events.ts';
import { type CallState, evolveCall, initialCallState } from '../../../../shared/domain/call/call-state.ts';
import type { CallSubmittedData } from '../../../../shared/domain/call/call-submitted.ts';
import type { Submission } from '../../../../shared/domain/submission/submission.ts';
import { callEvents } from '../../../../shared/domain/call/call-catalogue.ts';
import { EventDecodeError } from '../../../../shared/domain/event-catalogue.ts';
import { recordedCallEvents } from '../../../support/recorded-events.ts';
import { segmentsFromText } from '../../../../shared/domain/transcript/transcript-segments.ts';

const T0 = '2026-11-20T10:00:00.000Z';
const at = (s: number) => new Date(Date.parse(T0) + s * 1000).toISOString();

const submitted = (submission: Partial<Submission> = {}, callId = 'c1'): CallSubmittedData => ({
  callId,
  teamId: 't1',
  keyId: 'k1',
  submittedAt: T0,
  submission: {
    aiTitleEnabled: true,
    tags: [],
    metadata: {},
    transcript: { text: 'Rep: hi', truncated: false, originalBytes: 7 },
    ...submission,
  },
  attributedTo: { kind: 'member', memberId: 'm1', email: 'dana@acme.test', name: 'Dana Reyes' },
  capacity: { reservedMinutes: 1, autoRechargedMinutes: 0 },
  warnings: [],
});

const e = {
  submitted: (s: CallSubmittedData): CallEvent => ({ type: 'CallSubmitted', data: s }),
  started: (mode: 'audio' | 'transcript' = 'transcript'): CallEvent => ({
    type: 'ProcessingStarted',
    data: { mode, deadline: at(3600), at: at(1) },
  }),
  fetched: (): CallEvent => ({ type: 'AudioFetched', data: { bytes: 10, contentType: 'audio/wav', at: at(2) } }),
  transcript: (text = 'Rep: hi', durationSeconds: number | null = 61): CallEvent => ({
    type: 'TranscriptRecorded',
    data: {
      source: 'inline',
      text,
      truncated: false,
      durationSeconds,
      engine: null,
      segments: segmentsFromText(text),
      at: at(3),
    },
  }),
  analysed: (title: string): CallEvent => ({
    type: 'CallAnalysed',
    data: { title, summary: 's', score: 64, components: [], insights: [], engine: 'built-in', at: at(4) },
  }),
  deal: (): CallEvent => ({ type: 'DealRecorded', data: { deal: { dealSize: 10 }, at: at(5) } }),
  completed: (durationSeconds: number | null = 62): CallEvent => ({
    type: 'CallCompleted',
    data: { durationSeconds, at: at(6) },
  }),
  failed: (): CallEvent => ({
    type: 'CallFailed',
    data: { code: 'audio_fetch_failed', reason: 'The recording could not be downloaded (HTTP 404)', at: at(6) },
  }),
};

/** Records a call's events as the event store would: revisions from 0, positions from `firstPosition`. */
const recorded = (events: CallEvent[], callId = 'c1', firstPosition = 1n): RecordedCallEvent[] =>
  recordedCallEvents(events, callId, firstPosition);

const project = (events: CallEvent[], callId = 'c1'): CallHistoryRow => {
  const row = recorded(events, callId).reduce<CallHistoryRow | undefined>(evolveHistoryRow, undefined);
  assert.ok(row);
  return row;
};

/** A call as history shows it, after analysis gave it `aiTitle` (or before analysis when absent). */
const call = (submission: Partial<Submission>, aiTitle?: string): CallHistoryRow =>
  project([e.submitted(submitted(submission)), ...(aiTitle ? [e.started(), e.transcript(), e.analysed(aiTitle)] : [])]);

const check = (cases: Array<{ row: CallHistoryRow; search: string; match: boolean; why: string }>) => {
  for (const c of cases)
    assert.equal(
      matchesSearch(c.row, c.search),
      c.match,
      `${c.why}: ${JSON.stringify(c.search)} in ${JSON.stringify(c.row.title)} / ${JSON.stringify(c.row.repName)}`,
    );
};

describe('call history search (spec, "Call history search")', () => {
  test('rule 1: "Search matches only the displayed call title and the rep name."', () => {
    const row = call(
      {
        repName: 'Dana Reyes',
        repEmail: 'dana.reyes@acme.test',
        callTitle: 'Hidden supplied title',
        metadata: { account: 'Globex' },
      },
      'Pricing review',
    );
    check([
      { row, search: 'pricing', match: true, why: 'displayed title' },
      { row, search: 'reyes', match: true, why: 'rep name' },
      {
        row,
        search: 'hidden supplied',
        match: false,
        why: 'the supplied title is not displayed while AI titles are on',
      },
      { row, search: 'acme.test', match: false, why: 'rep e-mail' },
      { row, search: 'globex', match: false, why: 'metadata' },
      { row, search: 'summary', match: false, why: 'analysis summary' },
    ]);
  });

  test('rule 2: "Matching is an exact, case-insensitive substring match. It is not fuzzy, so a longer name does not match a shorter title."', () => {
    const row = call({ aiTitleEnabled: false, callTitle: 'Demo with Jon' });
    check([
      { row, search: 'Demo with Jon', match: true, why: 'the whole title' },
      { row, search: 'DEMO WITH JON', match: true, why: 'case-insensitive' },
      { row, search: 'mo wi', match: true, why: 'any substring' },
      { row, search: '  with  ', match: true, why: 'the query is trimmed' },
      { row, search: 'Demo with Jonathan', match: false, why: 'a longer name does not match a shorter title' },
      { row, search: 'Demo with John', match: false, why: 'not fuzzy' },
      { row, search: 'Demo  with', match: false, why: 'inner spaces are exact' },
      { row, search: 'Jon with Demo', match: false, why: 'word order matters' },
    ]);
  });

  test('rule 3: "Search does not look at the transcript, the prospect or contact name, tags, or notes."', () => {
    const row = project([
      e.submitted(
        submitted({
          repName: 'Ann',
          tags: ['zebracorn-tag'],
          notes: 'notes zebracorn',
          metadata: { contactName: 'Zebracorn Contact' },
        }),
      ),
      e.started(),
      e.transcript('Prospect: my name is Zebracorn'),
      e.analysed('Intro call'),
    ]);
    for (const search of ['zebracorn', 'Zebracorn Contact', 'zebracorn-tag', 'notes', 'my name is'])
      check([{ row, search, match: false, why: 'not searched' }]);
    check([{ row, search: 'intro', match: true, why: 'the title still is' }]);
  });

  test('rule 4: "A call has no separate prospect or contact field. To find a call by the person spoken with, that name goes in the call title."', () => {
    const withName = call({ aiTitleEnabled: false, callTitle: 'Discovery – Marisol Ortega (Globex)' });
    const withoutName = call({
      aiTitleEnabled: false,
      callTitle: 'Discovery',
      metadata: { contact: 'Marisol Ortega' },
    });
    check([
      { row: withName, search: 'marisol ortega', match: true, why: 'the prospect name in the title' },
      { row: withoutName, search: 'marisol ortega', match: false, why: 'a prospect name anywhere else' },
    ]);
  });

  test('rule 5: "Tags can be used to filter call history. The free-text search box does not match tags."', () => {
    const row = call({ repName: 'Ann', tags: ['inbound', 'demo'] });
    assert.deepEqual(row.tags, ['inbound', 'demo'], 'the row keeps the tags for the tag filter');
    check([
      { row, search: 'inbound', match: false, why: 'the search box does not match tags' },
      { row, search: 'demo', match: false, why: 'the search box does not match tags' },
    ]);
  });

  test('case folding is full Unicode: "MÜLLER" finds "Müller"; ß and SS; final sigma; composed and decomposed accents', () => {
    check([
      { row: call({ repName: 'Jörg Müller' }), search: 'MÜLLER', match: true, why: 'non-ASCII upper case' },
      { row: call({ repName: 'Jörg Mu\u0308ller' }), search: 'müller', match: true, why: 'decomposed ü in the row' },
      { row: call({ repName: 'Jörg Müller' }), search: 'MU\u0308LLER', match: true, why: 'decomposed Ü in the query' },
      {
        row: call({ aiTitleEnabled: false, callTitle: 'Hauptstraße' }),
        search: 'HAUPTSTRASSE',
        match: true,
        why: 'ß folds like SS',
      },
      { row: call({ repName: 'ΟΔΥΣΣΕΑΣ' }), search: 'οδυσσεας', match: true, why: 'final sigma' },
      { row: call({ repName: 'ΟΔΥΣΣΕΑΣ' }), search: 'δυσσεασ', match: true, why: 'σ at the end of a term' },
      { row: call({ repName: 'Müller' }), search: 'muller', match: false, why: 'accents are not removed' },
    ]);
    assert.equal(foldForSearch('MÜLLER'), foldForSearch('müller'));
    assert.equal(searchTerm('   '), undefined);
    assert.deepEqual(searchText({ title: 'ÉCOLE', repName: null }), { title: 'école', repName: '' });
  });

  test('the fold is Unicode full case folding (CaseFolding.txt, C + F, no Turkic T), idempotent', () => {
    const folds: Array<[string, string, string]> = [
      ['ẞ', 'ss', 'capital sharp s folds like ß (it lower-cases to ß)'],
      ['STRAẞE', 'strasse', 'within a word'],
      ['ı', 'ı', 'dotless i folds to itself (it upper-cases to I)'],
      ['Işık', 'işık', 'I folds to i, ı stays'],
      ['İ', 'i\u0307', 'dotted capital I folds to i and a combining dot'],
      ['ſ', 's', 'long s folds to s'],
      ['µ', 'μ', 'micro sign folds to mu'],
      ['\u212a', 'k', 'Kelvin sign'],
      ['ﬃ', 'ffi', 'ligature'],
      ['ŉ', 'ʼn', 'n preceded by apostrophe'],
      ['ᾳ', 'αι', 'Greek with ypogegrammeni'],
      ['ΟΔΥΣΣΕΑΣ', 'οδυσσεασ', 'final sigma folds like σ'],
    ];
    for (const [text, folded, why] of folds) {
      assert.equal(foldForSearch(text), folded, why);
      assert.equal(foldForSearch(folded), folded, `${why}: idempotent`);
    }
    check([
      { row: call({ aiTitleEnabled: false, callTitle: 'pizza night' }), search: 'ı', match: false, why: 'ı is not i' },
      {
        row: call({ aiTitleEnabled: false, callTitle: 'ıspanak' }),
        search: 'ispanak',
        match: false,
        why: 'i is not ı',
      },
      {
        row: call({ aiTitleEnabled: false, callTitle: 'ıspanak' }),
        search: 'ISPANAK',
        match: false,
        why: 'I is not ı',
      },
      { row: call({ aiTitleEnabled: false, callTitle: 'Straße' }), search: 'STRAẞE', match: true, why: 'ẞ finds ß' },
      { row: call({ aiTitleEnabled: false, callTitle: 'STRAẞE' }), search: 'strasse', match: true, why: 'ss finds ẞ' },
    ]);
  });
});

describe('title rules through the projection', () => {
  test('rule 1: "By default the title is generated by AI"; before analysis the generic title, never the supplied one', () => {
    const before = call({ repName: 'Dana Reyes', callTitle: 'Supplied' });
    assert.equal(before.title, 'Call with Dana Reyes on 2026-11-20');
    assert.equal(call({ repName: 'Dana Reyes', callTitle: 'Supplied' }, 'AI made this').title, 'AI made this');
  });

  test('rule 2: "The supplied title is displayed only when both hold: AI generation is disabled, and callTitle is non-empty"', () => {
    assert.equal(call({ aiTitleEnabled: false, callTitle: 'Supplied' }, 'AI made this').title, 'Supplied');
    assert.equal(
      call({ aiTitleEnabled: false, callTitle: '  ', repName: 'Dana' }).title,
      'Call with Dana on 2026-11-20',
    );
  });

  test('rule 3: "When AI generation is disabled and no callTitle is given, the call gets a generic title" (callDate, else submission time)', () => {
    assert.equal(
      call({ aiTitleEnabled: false, repEmail: 'dana@acme.test' }, 'AI').title,
      'Call with dana@acme.test on 2026-11-20',
    );
    const dated = call({ aiTitleEnabled: false, repName: 'Dana', callDate: '2026-10-01T23:30:00.000Z' });
    assert.equal(dated.title, 'Call with Dana on 2026-10-01');
    assert.equal(dated.callDate, '2026-10-01T23:30:00.000Z');
    assert.equal(call({}).callDate, T0);
  });
});

describe('evolveHistoryRow', () => {
  test('status context: queued_for_processing, then the stage, then completed', () => {
    const flow = [
      e.submitted(submitted({ audioUrl: 'https://a.test/x.wav', deal: { dealSize: 1 } })),
      e.started('audio'),
      e.fetched(),
      e.transcript(),
      e.analysed('T'),
      e.deal(),
      e.completed(),
    ];
    const events = recorded(flow);
    const seen: Array<[string, string | null, string]> = [];
    let row: CallHistoryRow | undefined;
    for (const event of events) {
      row = evolveHistoryRow(row, event);
      seen.push([row!.status, row!.stage, row!.statusReason]);
    }
    assert.deepEqual(seen, [
      ['pending', 'queued', 'queued_for_processing'],
      ['pending', 'fetching_audio', 'fetching_audio'],
      ['pending', 'transcribing', 'transcribing'],
      ['pending', 'analysing', 'analysing'],
      ['pending', 'recording_deal', 'recording_deal'],
      ['pending', 'completing', 'completing'],
      ['completed', null, 'completed'],
    ]);
    assert.equal(row!.processingError, null);
    assert.deepEqual(
      row!.deal,
      { dealSize: 10, revenueCollected: null, dealDate: null, notes: null },
      'the deal as written',
    );
    assert.equal(row!.updatedAt, at(6));
    assert.equal(row!.lastPosition, '7');
  });

  test('the stage agrees with the Call aggregate after every event', () => {
    const flows: CallEvent[][] = [
      [e.submitted(submitted()), e.started(), e.transcript(), e.analysed('T'), e.completed()],
      [
        e.submitted(submitted({ audioUrl: 'https://a.test/x.wav', deal: { dealSize: 1 } })),
        e.started('audio'),
        e.fetched(),
        e.transcript(),
        e.analysed('T'),
        e.deal(),
        e.completed(),
      ],
      [e.submitted(submitted()), e.started(), e.failed()],
    ];
    for (const flow of flows) {
      let row: CallHistoryRow | undefined;
      let state: CallState = initialCallState;
      for (const [i, event] of recorded(flow).entries()) {
        row = evolveHistoryRow(row, event);
        state = evolveCall(state, flow[i]!);
        assert.equal(row?.status, state.status);
        assert.equal(row?.stage, state.status === 'pending' ? state.stage : null);
      }
    }
  });

  test('a failed call: statusReason is the CallFailed reason, processingError its code; later events change nothing', () => {
    const events = recorded([e.submitted(submitted()), e.started(), e.failed(), e.analysed('Late')]);
    const failed = events.slice(0, 3).reduce<CallHistoryRow | undefined>(evolveHistoryRow, undefined)!;
    assert.equal(failed.status, 'failed');
    assert.equal(failed.statusReason, 'The recording could not be downloaded (HTTP 404)');
    assert.equal(failed.processingError, 'audio_fetch_failed');
    assert.equal(evolveHistoryRow(failed, events[3]!), failed);
  });

  test('an event at or before lastPosition returns the row unchanged: a replay changes nothing', () => {
    const events = recorded([e.submitted(submitted()), e.started(), e.transcript(), e.analysed('T')]);
    const row = events.reduce<CallHistoryRow | undefined>(evolveHistoryRow, undefined)!;
    for (const event of events) assert.equal(evolveHistoryRow(row, event), row);
    assert.deepEqual(events.reduce<CallHistoryRow | undefined>(evolveHistoryRow, row), row);
  });

  test('details: transcript, analysis, score and duration (submitted, then transcript, then completion)', () => {
    const sub = submitted({ duration: { seconds: 600, unit: 'seconds', basis: 'magnitude', raw: 600 } });
    const events = recorded([
      e.submitted(sub),
      e.started(),
      e.transcript('Rep: hello', 61),
      e.analysed('T'),
      e.completed(62),
    ]);
    const rows: CallHistoryRow[] = [];
    events.reduce<CallHistoryRow | undefined>((row, event) => {
      const next = evolveHistoryRow(row, event)!;
      rows.push(next);
      return next;
    }, undefined);
    assert.deepEqual(
      rows.map((r) => r.durationSeconds),
      [600, 600, 61, 61, 62],
    );
    const last = rows[rows.length - 1]!;
    assert.deepEqual(last.transcript, { text: 'Rep: hello', source: 'inline', truncated: false });
    assert.deepEqual(last.analysis, { title: 'T', summary: 's', score: 64, components: [], insights: [] });
    assert.equal(last.score, 64);
    assert.deepEqual(
      last.attributedTo,
      { kind: 'member', email: 'dana@acme.test', name: 'Dana Reyes' },
      'no member id in the row',
    );
  });

  test('other streams and events before CallSubmitted leave the input; an event of another call is a bug', () => {
    const [submittedEvent, startedEvent] = recorded([e.submitted(submitted()), e.started()]);
    const row = evolveHistoryRow(undefined, submittedEvent!)!;
    assert.equal(evolveHistoryRow(row, { ...startedEvent!, streamId: 'team-t1', position: 99n }), row);
    assert.equal(evolveHistoryRow(undefined, startedEvent!), undefined);
    assert.throws(
      () => callEvents.decode({ ...startedEvent!, type: 'SomethingNew', data: {}, position: 99n }),
      (error: unknown) =>
        error instanceof EventDecodeError && /SomethingNew is not an event type of category call/.test(error.message),
    );
    assert.throws(() => evolveHistoryRow(row, { ...startedEvent!, streamId: 'call-c2', position: 99n }));
  });
});
