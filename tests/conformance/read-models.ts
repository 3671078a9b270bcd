/**
 * The read-model conformance suite: every adapter passes it unchanged.
 * `readModelsConformance(name, factory)` is called once per adapter from a `*.test.ts` file.
 *
 * Events are appended to a real event store of the same backend and read back from its global
 * feed, so positions, revisions and payloads are the real thing.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, describe, test } from 'node:test';
import { type CallHistoryRow, historySubmission, matchesSearch } from '../../shared/domain/call/call-history.ts';
import { CALL_LIST_ROW_FIELDS, callListItemView, type CallListRow } from '../../shared/domain/call/call-view.ts';
import { dealEventId } from '../../shared/domain/call/deal-record.ts';
import { SUBMISSION_LIMITS } from '../../shared/domain/submission/submission-schema.ts';
import type { EventStore } from '../../shared/ports/event-store.ts';
import {
  CheckpointMismatchError,
  InvalidQueryError,
  type CallHistoryQuery,
  type ReadModels,
} from '../../shared/ports/read-models.ts';
import type { RebuildLimits } from '../../shared/adapters/read-models/rebuild-buffer.ts';
import { appendCall, at, catchUp, events, readFeed, submitCall } from './read-models-fixtures.ts';

export interface ReadModelsHandle {
  models: ReadModels;
  /** An event store over the same backend. */
  store: EventStore;
  /** Names of the tables in the storage, to see a replaced version dropped. */
  tables(): Promise<string[]>;
  /**
   * Leaves the storage as a service of fold revision 1 left it (SEARCH_FOLD_REVISION): the active
   * call history version's folded titles and rep names (`fold.text`) and tag keys (`fold.tag`) made
   * by the given functions, in every index, and no revision recorded for the version.
   */
  foldedByRevision1(fold: EarlierFold): Promise<void>;
  /** Read models opened again over the same storage, as a restarted service opens them. */
  reopen(): Promise<ReadModels>;
  /** Closes everything and removes what the test created. */
  cleanup(): Promise<void>;
}

/** How an earlier fold revision folded a title or rep name, and a tag into its key. */
export interface EarlierFold {
  text: (text: string) => string;
  tag: (tag: string) => string;
}

export interface ReadModelsFactory {
  /** Read models and an event store over fresh, empty storage. */
  fresh(options?: { rebuildLimits?: RebuildLimits }): Promise<ReadModelsHandle>;
}

export interface ReadModelsConformanceOptions {
  skip?: string;
}

const team = () => `team-${randomUUID()}`;

/** Calls in every state, their events interleaved in the feed as processing interleaves them. */
const fillMixedHistory = async (store: EventStore, teamId: string): Promise<void> => {
  const calls = [];
  for (let i = 0; i < 8; i++) {
    calls.push(
      await submitCall(store, {
        teamId,
        submittedAt: at(i),
        submission: {
          repName: `Rep ${i}`,
          tags: i % 2 ? ['a', 'b'] : ['b'],
          deal: i % 3 ? undefined : { dealSize: i },
        },
      }),
    );
  }
  for (const [i, call] of calls.entries()) if (i % 4 !== 0) await appendCall(store, call.callId, [events.started()]);
  for (const [i, call] of calls.entries())
    if (i % 4 !== 0) await appendCall(store, call.callId, [events.transcript(`text ${i}`)]);
  for (const [i, call] of calls.entries()) {
    if (i % 4 === 1) await appendCall(store, call.callId, [events.failed('analysis_failed', 'The analyser gave up')]);
    if (i % 4 >= 2)
      await appendCall(store, call.callId, [
        events.analysed(`Title ${i}`),
        ...(i % 3 ? [] : [events.dealRecorded({ dealSize: i })]),
        events.completed(),
      ]);
  }
};

/** Every page of a query, following the cursors. */
const allPages = async (models: ReadModels, teamId: string, query: CallHistoryQuery = {}): Promise<CallListRow[][]> => {
  const pages: CallListRow[][] = [];
  let cursor: string | undefined;
  do {
    const page = await models.callHistory.list(teamId, { ...query, ...(cursor ? { cursor } : {}) });
    pages.push(page.calls);
    cursor = page.nextCursor ?? undefined;
  } while (cursor);
  return pages;
};

const ids = (rows: Pick<CallHistoryRow, 'callId'>[]) => rows.map((r) => r.callId);
/** Bytes of a page's calls as the list answer shows them. */
const itemBytes = (rows: CallListRow[]) =>
  rows.reduce((bytes, row) => bytes + Buffer.byteLength(JSON.stringify(callListItemView(row))), 0);
const found = async (models: ReadModels, teamId: string, search: string, query: CallHistoryQuery = {}) =>
  ids((await models.callHistory.list(teamId, { ...query, search, limit: 100 })).calls).sort();

const tagged = async (models: ReadModels, teamId: string, tags: string[]) =>
  ids((await models.callHistory.list(teamId, { tags, limit: 100 })).calls).sort();

/** Fold revision 1 as the service folded before revision 2: upper case then lower case, tags trimmed by trim(). */
const REVISION_1: EarlierFold = {
  text: (text) => text.normalize('NFC').toUpperCase().toLowerCase().replaceAll('ς', 'σ').normalize('NFC'),
  tag: (tag) => REVISION_1.text(tag.trim()),
};

/** Calls whose titles and tags revision 2 (full case folding, tags trimmed of white space only) and revision 1 fold differently. */
const foldingCorpus = async (store: EventStore, teamId: string) => {
  const call = async (i: number, callTitle: string, tags: string[] = []) =>
    (await submitCall(store, { teamId, submittedAt: at(i), submission: { aiTitleEnabled: false, callTitle, tags } }))
      .callId;
  return {
    capitalSharpS: await call(0, 'STRAẞE upper'),
    sharpS: await call(1, 'Straße review'),
    dotless: await call(2, 'ıspanak'),
    dotted: await call(3, 'pizza night'),
    capitalSharpSTag: await call(4, 'T4', ['STRAẞE']),
    dotlessTag: await call(5, 'T5', ['ı']),
    dottedTag: await call(6, 'T6', ['I']),
    bomTag: await call(7, 'T7', ['\ufeffdemo']),
    plainTag: await call(8, 'T8', ['demo']),
  };
};

/** What full case folding finds in foldingCorpus. */
const expectFullFolding = async (
  models: ReadModels,
  teamId: string,
  calls: Awaited<ReturnType<typeof foldingCorpus>>,
) => {
  const sharp = [calls.capitalSharpS, calls.sharpS].sort();
  for (const search of ['ẞ', 'ß', 'ss', 'STRASSE', 'straße', 'STRAẞE'])
    assert.deepEqual(await found(models, teamId, search), sharp, `search ${search}`);
  assert.deepEqual(await found(models, teamId, 'ı'), [calls.dotless], 'ı finds only ı');
  assert.deepEqual(await found(models, teamId, 'ıspanak'), [calls.dotless]);
  assert.deepEqual(await found(models, teamId, 'ispanak'), [], 'i does not find ı');
  assert.deepEqual(await found(models, teamId, 'I'), [calls.sharpS, calls.dotted].sort(), 'I finds i, not ı');
  assert.deepEqual(await tagged(models, teamId, ['strasse']), [calls.capitalSharpSTag]);
  assert.deepEqual(await tagged(models, teamId, ['Straße']), [calls.capitalSharpSTag]);
  assert.deepEqual(await tagged(models, teamId, ['ı']), [calls.dotlessTag]);
  assert.deepEqual(await tagged(models, teamId, ['i']), [calls.dottedTag]);
  assert.deepEqual(await tagged(models, teamId, ['demo']), [calls.plainTag], 'U+FEFF is kept in a tag');
  assert.deepEqual(await tagged(models, teamId, ['\ufeffdemo']), [calls.bomTag]);
};

export const readModelsConformance = (
  name: string,
  factory: ReadModelsFactory,
  options: ReadModelsConformanceOptions = {},
) => {
  describe(`read models conformance: ${name}`, { skip: options.skip }, () => {
    const handles: ReadModelsHandle[] = [];
    const open = async (o?: { rebuildLimits?: RebuildLimits }) => {
      const handle = await factory.fresh(o);
      handles.push(handle);
      return handle;
    };
    after(async () => {
      for (const h of handles.reverse()) await h.cleanup();
    });
    const sync = async (h: ReadModelsHandle) => {
      await catchUp(h.store, h.models.callHistory);
      await catchUp(h.store, h.models.deals);
    };

    describe('call history rows', () => {
      test('a submitted call is pending, queued_for_processing, with the generic title until analysis (title rule 1)', async () => {
        const h = await open();
        const teamId = team();
        const call = await submitCall(h.store, {
          teamId,
          submission: {
            repName: 'Dana Reyes',
            repEmail: 'dana@acme.test',
            callTitle: 'Discovery with Lee',
            tags: ['demo'],
            notes: 'n',
            metadata: { source: 'aircall' },
          },
        });
        await sync(h);
        const row = await h.models.callHistory.get(teamId, call.callId);
        assert.ok(row);
        assert.equal(row.status, 'pending');
        assert.equal(row.stage, 'queued');
        assert.equal(row.statusReason, 'queued_for_processing');
        assert.equal(row.processingError, null);
        assert.equal(row.title, 'Call with Dana Reyes on 2026-11-20');
        assert.equal(row.createdAt, call.submittedAt);
        assert.equal(row.callDate, call.submittedAt);
        assert.deepEqual(row.tags, ['demo']);
        assert.deepEqual(row.metadata, { source: 'aircall' });
        assert.deepEqual(row.attributedTo, { kind: 'owner', email: 'owner@acme.test', name: 'Olive Owner' });
        assert.deepEqual(row.submission, historySubmission(call.submission));
        assert.equal(
          row.submission.transcript && 'text' in row.submission.transcript,
          false,
          'the inline text is kept once, as the transcript',
        );
        assert.equal(row.transcript, null);
        assert.equal(row.analysis, null);
      });

      test('transcript, analysis, deal and completion fill the row; the AI title is displayed', async () => {
        const h = await open();
        const teamId = team();
        const deal = { dealSize: 1200.5, dealDate: '2026-11-21T00:00:00.000Z' };
        const call = await submitCall(
          h.store,
          {
            teamId,
            submission: {
              repName: 'Dana Reyes',
              repEmail: 'dana@acme.test',
              audioUrl: 'https://rec.test/a.mp3',
              deal,
              callDate: '2026-11-19T09:00:00.000Z',
            },
            attributedTo: { kind: 'member', memberId: 'm1', email: 'dana@acme.test', name: 'Dana Reyes' },
          },
          [
            events.started('audio'),
            events.audioFetched(),
            events.transcript('Rep: pricing', 'audio'),
            events.analysed('Pricing with Lee', 81),
          ],
        );
        await sync(h);
        const analysed = await h.models.callHistory.get(teamId, call.callId);
        assert.equal(analysed?.stage, 'recording_deal');
        assert.equal(analysed?.statusReason, 'recording_deal');
        assert.equal(analysed?.deal, null);
        await appendCall(h.store, call.callId, [events.dealRecorded(deal), events.completed()]);
        await sync(h);
        const row = await h.models.callHistory.get(teamId, call.callId);
        const [, , , , analysedEvent, , completedEvent] = await h.store.readStream(`call-${call.callId}`);
        assert.deepEqual(row, {
          callId: call.callId,
          teamId,
          title: 'Pricing with Lee',
          repName: 'Dana Reyes',
          repEmail: 'dana@acme.test',
          status: 'completed',
          stage: null,
          statusReason: 'completed',
          processingError: null,
          callDate: '2026-11-19T09:00:00.000Z',
          durationSeconds: 95,
          tags: [],
          notes: null,
          metadata: {},
          attributedTo: { kind: 'member', email: 'dana@acme.test', name: 'Dana Reyes' },
          createdAt: call.submittedAt,
          transcript: { text: 'Rep: pricing', source: 'audio', truncated: false },
          analysis: {
            title: 'Pricing with Lee',
            summary: 'Summary of Pricing with Lee',
            score: 81,
            components: (analysedEvent!.data as { components: unknown }).components,
            insights: (analysedEvent!.data as { insights: unknown }).insights,
          },
          deal: { dealSize: 1200.5, revenueCollected: null, dealDate: '2026-11-21T00:00:00.000Z', notes: null },
          submission: historySubmission(call.submission),
          score: 81,
          updatedAt: at(6),
          lastPosition: completedEvent!.position.toString(),
          steps: {
            mode: 'audio',
            audioFetched: true,
            transcribed: true,
            analysed: true,
            dealRecorded: true,
            dealDue: true,
          },
        });
      });

      test('a failed call: status failed, statusReason is the reason, processingError the code; a late result does not revive it', async () => {
        const h = await open();
        const teamId = team();
        const call = await submitCall(h.store, { teamId }, [
          events.started(),
          events.failed('processing_timeout', 'processing_timeout'),
        ]);
        await appendCall(h.store, call.callId, [events.analysed('Late title')]);
        await sync(h);
        const row = await h.models.callHistory.get(teamId, call.callId);
        assert.equal(row?.status, 'failed');
        assert.equal(row?.stage, null);
        assert.equal(row?.statusReason, 'processing_timeout');
        assert.equal(row?.processingError, 'processing_timeout');
        assert.equal(row?.analysis, null);
        assert.equal(row?.title, 'Call with unknown rep on 2026-11-20');
      });

      test("another team's call is not visible: get is undefined, list does not show it", async () => {
        const h = await open();
        const [mine, theirs] = [team(), team()];
        const call = await submitCall(h.store, { teamId: theirs, submission: { repName: 'Dana' } });
        await submitCall(h.store, { teamId: mine, submission: { repName: 'Dana' } });
        await sync(h);
        assert.equal(await h.models.callHistory.get(mine, call.callId), undefined);
        assert.ok(await h.models.callHistory.get(theirs, call.callId));
        const page = await h.models.callHistory.list(mine, { search: 'dana' });
        assert.equal(page.calls.length, 1);
        assert.notEqual(page.calls[0]!.callId, call.callId);
      });
    });

    describe('search (spec, "Call history search")', () => {
      test('title rule 2 through search: with AI titles disabled the supplied title is displayed and found; with AI titles on it is neither', async () => {
        const h = await open();
        const teamId = team();
        const shown = await submitCall(h.store, {
          teamId,
          submission: { aiTitleEnabled: false, callTitle: 'Renewal with Priya' },
        });
        const hidden = await submitCall(
          h.store,
          { teamId, submission: { aiTitleEnabled: true, callTitle: 'Renewal with Priya' } },
          [events.started(), events.transcript('x'), events.analysed('Quarterly check-in')],
        );
        const generic = await submitCall(h.store, { teamId, submission: { aiTitleEnabled: false, repName: 'Sam' } });
        await sync(h);
        assert.equal((await h.models.callHistory.get(teamId, shown.callId))?.title, 'Renewal with Priya');
        assert.equal((await h.models.callHistory.get(teamId, hidden.callId))?.title, 'Quarterly check-in');
        assert.equal((await h.models.callHistory.get(teamId, generic.callId))?.title, 'Call with Sam on 2026-11-20');
        assert.deepEqual(await found(h.models, teamId, 'priya'), [shown.callId]);
        assert.deepEqual(await found(h.models, teamId, 'quarterly'), [hidden.callId]);
      });

      test('rule 1: "Search matches only the displayed call title and the rep name."', async () => {
        const h = await open();
        const teamId = team();
        const byTitle = await submitCall(h.store, {
          teamId,
          submission: { aiTitleEnabled: false, callTitle: 'Onboarding Northwind' },
        });
        const byRep = await submitCall(h.store, { teamId, submission: { repName: 'Northwind Nora' } });
        const byEmail = await submitCall(h.store, {
          teamId,
          submission: { repEmail: 'northwind@acme.test', repName: 'Kim' },
        });
        const byMetadata = await submitCall(h.store, { teamId, submission: { metadata: { account: 'Northwind' } } });
        await sync(h);
        assert.deepEqual(await found(h.models, teamId, 'northwind'), [byTitle.callId, byRep.callId].sort());
        assert.deepEqual(await found(h.models, teamId, 'kim'), [byEmail.callId]);
        assert.ok(byMetadata.callId);
      });

      test('rule 2: "exact, case-insensitive substring match. It is not fuzzy, so a longer name does not match a shorter title."', async () => {
        const h = await open();
        const teamId = team();
        const call = await submitCall(h.store, {
          teamId,
          submission: { aiTitleEnabled: false, callTitle: 'Demo with Jon' },
        });
        await sync(h);
        assert.deepEqual(await found(h.models, teamId, 'DEMO WITH JON'), [call.callId]);
        assert.deepEqual(await found(h.models, teamId, 'o with j'), [call.callId]);
        assert.deepEqual(
          await found(h.models, teamId, 'Demo with Jonathan'),
          [],
          'a longer name does not match a shorter title',
        );
        assert.deepEqual(await found(h.models, teamId, 'Demo with John'), [], 'not fuzzy');
        assert.deepEqual(await found(h.models, teamId, 'demo  with'), [], 'whitespace inside the term is exact');
      });

      test('rule 3: "Search does not look at the transcript, the prospect or contact name, tags, or notes."', async () => {
        const h = await open();
        const teamId = team();
        await submitCall(
          h.store,
          {
            teamId,
            submission: {
              repName: 'Ann',
              tags: ['zebracorn'],
              notes: 'zebracorn in notes',
              metadata: { contactName: 'Zebracorn Person', prospect: 'zebracorn' },
              transcript: { text: 'Prospect: I am Zebracorn', truncated: false, originalBytes: 24 },
            },
          },
          [events.started(), events.transcript('Prospect: I am Zebracorn'), events.analysed('Intro call')],
        );
        await sync(h);
        assert.deepEqual(await found(h.models, teamId, 'zebracorn'), []);
      });

      test('rule 4: "To find a call by the person spoken with, that name goes in the call title."', async () => {
        const h = await open();
        const teamId = team();
        const call = await submitCall(h.store, {
          teamId,
          submission: { aiTitleEnabled: false, callTitle: 'Discovery – Marisol Ortega (Globex)' },
        });
        await submitCall(h.store, { teamId, submission: { metadata: { contact: 'Marisol Ortega' } } });
        await sync(h);
        assert.deepEqual(await found(h.models, teamId, 'marisol ortega'), [call.callId]);
      });

      test('rule 5: "Tags can be used to filter call history. The free-text search box does not match tags." (repeatable, all must match)', async () => {
        const h = await open();
        const teamId = team();
        const both = await submitCall(h.store, { teamId, submission: { tags: ['Inbound', 'demo'], repName: 'Ann' } });
        const one = await submitCall(h.store, { teamId, submission: { tags: ['inbound'], repName: 'Ann' } });
        await submitCall(h.store, { teamId, submission: { tags: [], repName: 'Ann' } });
        await sync(h);
        const tagged = async (tags: string[], search?: string) =>
          ids((await h.models.callHistory.list(teamId, { tags, ...(search ? { search } : {}) })).calls).sort();
        assert.deepEqual(await tagged(['inbound']), [both.callId, one.callId].sort());
        assert.deepEqual(await tagged(['inbound', 'demo']), [both.callId]);
        assert.deepEqual(await tagged(['INBOUND', 'Demo']), [both.callId], 'tags compare case-insensitively');
        assert.deepEqual(await tagged(['inbound', 'missing']), []);
        assert.deepEqual(await tagged(['demo'], 'ann'), [both.callId]);
        assert.deepEqual(await found(h.models, teamId, 'inbound'), [], 'the search box does not match tags');
      });

      test('Unicode case folding: "MÜLLER" finds "Müller", both spellings of ü, ß as ss; 1–2 character terms', async () => {
        const h = await open();
        const teamId = team();
        const muller = await submitCall(h.store, { teamId, submission: { repName: 'Jörg Müller' } });
        const decomposed = await submitCall(h.store, {
          teamId,
          submission: { aiTitleEnabled: false, callTitle: 'Treffen mit Mu\u0308ller' },
        });
        const strasse = await submitCall(h.store, {
          teamId,
          submission: { aiTitleEnabled: false, callTitle: 'Hauptstraße Büro' },
        });
        const greek = await submitCall(h.store, { teamId, submission: { repName: 'ΟΔΥΣΣΕΑΣ' } });
        await sync(h);
        assert.deepEqual(await found(h.models, teamId, 'MÜLLER'), [muller.callId, decomposed.callId].sort());
        assert.deepEqual(await found(h.models, teamId, 'müller'), [muller.callId, decomposed.callId].sort());
        assert.deepEqual(await found(h.models, teamId, 'HAUPTSTRASSE'), [strasse.callId]);
        assert.deepEqual(await found(h.models, teamId, 'οδυσσεας'), [greek.callId]);
        assert.deepEqual(await found(h.models, teamId, 'ÖR'), [muller.callId], 'two characters');
        assert.deepEqual(await found(h.models, teamId, 'ß'), [strasse.callId], 'one character');
      });

      test('full case folding (CaseFolding.txt, C + F): ẞ, ß and SS alike; dotless ı is only itself; the same for tags', async () => {
        const h = await open();
        const teamId = team();
        const calls = await foldingCorpus(h.store, teamId);
        await sync(h);
        await expectFullFolding(h.models, teamId, calls);
      });

      test('rows an earlier fold revision folded (ẞ as ß, ı as i, U+FEFF trimmed from tags) are refolded when the store opens, in every index', async () => {
        const h = await open();
        const teamId = team();
        const calls = await foldingCorpus(h.store, teamId);
        await sync(h);
        await h.foldedByRevision1(REVISION_1);
        // What the store held before the upgrade: the dotless ı was folded to i.
        assert.deepEqual(await found(h.models, teamId, 'ı'), []);
        const upgraded = await h.reopen();
        await expectFullFolding(upgraded, teamId, calls);
        // Live applies go on from the refolded rows.
        const late = await submitCall(h.store, {
          teamId,
          submittedAt: at(100),
          submission: { aiTitleEnabled: false, callTitle: 'Yeni ıspanak', tags: ['ı'] },
        });
        await catchUp(h.store, upgraded.callHistory);
        assert.deepEqual(await found(upgraded, teamId, 'ıspanak'), [calls.dotless, late.callId].sort());
        assert.deepEqual(await tagged(upgraded, teamId, ['ı']), [calls.dotlessTag, late.callId].sort());
      });

      test('U+FEFF is not white space: a search or tag of it is not blank; tags are trimmed as the ingest trims them; a blank tag is refused', async () => {
        const h = await open();
        const teamId = team();
        const call = async (i: number, callTitle: string, submission: { repName?: string; tags?: string[] }) =>
          (
            await submitCall(h.store, {
              teamId,
              submittedAt: at(i),
              submission: { aiTitleEnabled: false, callTitle, ...submission },
            })
          ).callId;
        const bomRep = await call(0, 'bomrep', { repName: '\ufeff' });
        const bomTag = await call(1, 'T1', { tags: ['\ufeff'] });
        const bomDemo = await call(2, 'T2', { tags: ['\ufeffdemo'] });
        const demo = await call(3, 'T3', { tags: ['demo'] });
        await call(4, 'plain', {});
        await sync(h);
        assert.deepEqual(await found(h.models, teamId, '\ufeff'), [bomRep]);
        assert.deepEqual(await found(h.models, teamId, ' \ufeff '), [bomRep]);
        assert.deepEqual(await tagged(h.models, teamId, ['\ufeff']), [bomTag]);
        assert.deepEqual(await tagged(h.models, teamId, ['\ufeffdemo']), [bomDemo]);
        assert.deepEqual(await tagged(h.models, teamId, ['demo']), [demo]);
        assert.deepEqual(await tagged(h.models, teamId, [' DEMO\u3000']), [demo], 'white space trimmed, case folded');
        for (const tags of [[''], [' '], ['demo', '\u00a0\t']]) {
          await assert.rejects(
            h.models.callHistory.list(teamId, { tags }),
            (e: unknown) => e instanceof InvalidQueryError && e.field === 'tags' && /blank/.test(e.message),
            JSON.stringify(tags),
          );
        }
        await assert.rejects(
          h.models.callHistory.list(teamId, { from: '\ufeff2026-03-01' }),
          (e: unknown) => e instanceof InvalidQueryError && e.field === 'from',
        );
      });

      test('a title of the longest length a call can carry is found by the whole of it, in any case', async () => {
        const h = await open();
        const teamId = team();
        const title = `Renewal ${'éxÅ'.repeat(200)}`.slice(0, SUBMISSION_LIMITS.maxCallTitleChars);
        const long = await submitCall(h.store, { teamId, submission: { aiTitleEnabled: false, callTitle: title } });
        await submitCall(h.store, { teamId, submission: { aiTitleEnabled: false, callTitle: title.slice(0, -1) } });
        await sync(h);
        assert.deepEqual(await found(h.models, teamId, title), [long.callId]);
        assert.deepEqual(await found(h.models, teamId, title.toUpperCase()), [long.callId]);
      });

      test('%, _ and \\ in a search are literal characters', async () => {
        const h = await open();
        const teamId = team();
        const percent = await submitCall(h.store, {
          teamId,
          submission: { aiTitleEnabled: false, callTitle: '100% renewal' },
        });
        const underscore = await submitCall(h.store, {
          teamId,
          submission: { aiTitleEnabled: false, callTitle: 'deal_desk review' },
        });
        const backslash = await submitCall(h.store, {
          teamId,
          submission: { aiTitleEnabled: false, callTitle: 'path C:\\deals' },
        });
        const quote = await submitCall(h.store, {
          teamId,
          submission: { aiTitleEnabled: false, callTitle: 'the "big" one' },
        });
        await submitCall(h.store, {
          teamId,
          submission: { aiTitleEnabled: false, callTitle: '100 renewals, dealXdesk' },
        });
        await sync(h);
        assert.deepEqual(await found(h.models, teamId, '0% r'), [percent.callId]);
        assert.deepEqual(await found(h.models, teamId, '%'), [percent.callId]);
        assert.deepEqual(await found(h.models, teamId, 'deal_desk'), [underscore.callId]);
        assert.deepEqual(await found(h.models, teamId, '_'), [underscore.callId]);
        assert.deepEqual(await found(h.models, teamId, ':\\d'), [backslash.callId]);
        assert.deepEqual(await found(h.models, teamId, '"big"'), [quote.callId]);
        assert.deepEqual(await found(h.models, teamId, 'big" OR "one'), []);
      });

      test('search agrees with the reference rule on a mixed corpus, with a blank search meaning no search', async () => {
        const h = await open();
        const teamId = team();
        const titles = [
          'Call with Ana',
          'ANA review',
          'Banana split',
          'Pricing – Zoë',
          'zoe pricing',
          'ÉCOLE visit',
          'école',
          'Q3 plan',
          'q3_plan',
          'Ann-Marie',
        ];
        const reps = ['Ana Lima', 'Anastasia', 'Zoë Kravitz', 'Ed', 'ANNE', undefined];
        const rows: Array<{ callId: string; title: string; repName: string | null }> = [];
        for (let i = 0; i < 40; i++) {
          const title = titles[i % titles.length]!;
          const repName = reps[i % reps.length];
          const call = await submitCall(h.store, {
            teamId,
            submittedAt: at(i),
            submission: { aiTitleEnabled: false, callTitle: title, ...(repName ? { repName } : {}) },
          });
          rows.push({ callId: call.callId, title, repName: repName ?? null });
        }
        await sync(h);
        for (const query of [
          'ana',
          'AN',
          'a',
          'zoë',
          'ZOE',
          'école',
          'ECOLE',
          'q3_',
          'ann',
          'anne',
          'ana lima',
          'pricing – z',
          ' Ana ',
          '   ',
          '',
        ]) {
          const expected = rows
            .filter((r) => matchesSearch(r, query))
            .map((r) => r.callId)
            .sort();
          assert.deepEqual(await found(h.models, teamId, query), expected, `search ${JSON.stringify(query)}`);
        }
      });
    });

    describe('listing', () => {
      test('status filter', async () => {
        const h = await open();
        const teamId = team();
        const pending = await submitCall(h.store, { teamId });
        const completed = await submitCall(h.store, { teamId }, [
          events.started(),
          events.transcript('x'),
          events.analysed('T'),
          events.completed(),
        ]);
        const failed = await submitCall(h.store, { teamId }, [
          events.failed('audio_fetch_blocked', 'The recording link points to a private address'),
        ]);
        await sync(h);
        for (const [status, call] of [
          ['pending', pending],
          ['completed', completed],
          ['failed', failed],
        ] as const) {
          assert.deepEqual(ids((await h.models.callHistory.list(teamId, { status })).calls), [call.callId]);
        }
      });

      test('newest first (createdAt, then callId), cursor pages without duplicates or gaps, also under filters', async () => {
        const h = await open();
        const teamId = team();
        const made: Array<{ callId: string; createdAt: string }> = [];
        for (let i = 0; i < 57; i++) {
          // Pairs share a submission time, so the callId tiebreak is exercised.
          const call = await submitCall(h.store, {
            teamId,
            submittedAt: at(Math.floor(i / 2)),
            submission: { repName: i % 3 === 0 ? 'Rita Third' : 'Other', tags: i % 2 === 0 ? ['even'] : [] },
          });
          made.push({ callId: call.callId, createdAt: call.submittedAt });
        }
        await sync(h);
        const order = [...made]
          .sort((a, b) =>
            a.createdAt === b.createdAt ? (a.callId < b.callId ? 1 : -1) : a.createdAt < b.createdAt ? 1 : -1,
          )
          .map((c) => c.callId);

        const pages = await allPages(h.models, teamId, { limit: 10 });
        assert.deepEqual(
          pages.map((p) => p.length),
          [10, 10, 10, 10, 10, 7],
        );
        assert.deepEqual(
          pages.flat().map((r) => r.callId),
          order,
        );

        const first = await h.models.callHistory.list(teamId);
        assert.equal(first.calls.length, 25, 'default limit 25');

        const exact = await allPages(h.models, teamId, { limit: 19 });
        assert.deepEqual(
          exact.map((p) => p.length),
          [19, 19, 19],
          'no empty page after an exact multiple',
        );

        const filtered = await allPages(h.models, teamId, { limit: 4, search: 'third', tags: ['even'] });
        const expected = order.filter((id) => {
          const i = made.findIndex((c) => c.callId === id);
          return i % 3 === 0 && i % 2 === 0;
        });
        assert.deepEqual(
          filtered.flat().map((r) => r.callId),
          expected,
        );

        const even = order.filter((id) => made.findIndex((c) => c.callId === id) % 2 === 0);
        const byTag = await allPages(h.models, teamId, { limit: 7, tags: ['even'] });
        assert.deepEqual(
          byTag.flat().map((r) => r.callId),
          even,
          'tag filter across pages',
        );
        const shortTerm = await allPages(h.models, teamId, { limit: 3, tags: ['even'], search: 'rd' });
        assert.deepEqual(
          shortTerm.flat().map((r) => r.callId),
          expected,
          'a 2-character term with a tag across pages',
        );
        const withStatus = await allPages(h.models, teamId, { limit: 9, status: 'pending' });
        assert.deepEqual(
          withStatus.flat().map((r) => r.callId),
          order,
          'status filter across pages',
        );
      });

      test('a page ends early, with a cursor, once its list items pass about a megabyte; following it gives every row once', async () => {
        const handle = await open();
        const teamId = team();
        // 60 calls of about 40 KB each (metadata at its bounds, in 2-byte characters): 2.4 MB.
        const metadata = Object.fromEntries(Array.from({ length: 20 }, (_, i) => [`key${i}`, 'é'.repeat(1000)]));
        for (let i = 0; i < 60; i++)
          await submitCall(handle.store, { teamId, submittedAt: at(i), submission: { metadata } });
        await catchUp(handle.store, handle.models.callHistory);
        const first = await handle.models.callHistory.list(teamId, { limit: 100 });
        assert.ok(first.calls.length > 0 && first.calls.length < 60, `first page ${first.calls.length} rows`);
        assert.notEqual(first.nextCursor, null);
        // What the answer carries: the budget is spent on the items, and the page ends only at it.
        const bytes = itemBytes(first.calls);
        const second = await handle.models.callHistory.list(teamId, { limit: 100, cursor: first.nextCursor! });
        assert.ok(bytes <= 1_000_000, `${bytes} bytes of items`);
        assert.ok(
          bytes + itemBytes(second.calls.slice(0, 1)) > 1_000_000,
          `${bytes} bytes of items, and room for more`,
        );
        const pages = await allPages(handle.models, teamId, { limit: 100 });
        assert.equal(new Set(pages.flat().map((r) => r.callId)).size, 60);
        assert.equal(pages.flat().length, 60);
      });

      test('a list reads what its items show, never the transcript, analysis, deal or submission; large transcripts do not cut a page short', async () => {
        const h = await open();
        const teamId = team();
        // 25 calls with a 100 KB transcript each: 2.5 MB of transcripts, a few KB of list items.
        const text = 'Rep: we went through the pricing of the enterprise plan in detail.\n'.repeat(1500);
        const submitted = [];
        for (let i = 0; i < 25; i++)
          submitted.push(
            await submitCall(h.store, { teamId, submittedAt: at(i), submission: { repName: `Rep ${i}` } }, [
              events.started(),
              events.transcript(text),
              events.analysed(`Pricing ${i}`),
              events.dealRecorded({ dealSize: i }),
              events.completed(),
            ]),
          );
        await sync(h);
        const page = await h.models.callHistory.list(teamId, { limit: 100 });
        assert.equal(page.calls.length, 25);
        assert.equal(page.nextCursor, null);
        for (const listed of page.calls) {
          assert.deepEqual(Object.keys(listed).sort(), [...CALL_LIST_ROW_FIELDS].sort());
          const row = await h.models.callHistory.get(teamId, listed.callId);
          assert.ok(row);
          assert.equal(row.transcript?.text, text);
          assert.deepEqual(callListItemView(listed), callListItemView(row));
          assert.equal(listed.updatedAt, row.updatedAt);
        }
        assert.deepEqual(ids(page.calls), submitted.map((c) => c.callId).reverse());
      });

      test('from / to on the call date (inclusive; a bare date "to" includes its whole day), repEmail (ASCII case-insensitive), across pages', async () => {
        const h = await open();
        const teamId = team();
        const dated: Awaited<ReturnType<typeof submitCall>>[] = [];
        // Calls dated 2026-03-01 … 2026-03-06 at 12:00 UTC, two a day, reps alternating.
        for (let i = 0; i < 12; i++) {
          const day = String(1 + Math.floor(i / 2)).padStart(2, '0');
          dated.push(
            await submitCall(h.store, {
              teamId,
              submittedAt: at(i),
              submission: {
                callDate: `2026-03-${day}T12:00:00.000Z`,
                repEmail: i % 2 ? 'Dana.Seller@Example.com' : 'sam@example.com',
                tags: ['t'],
              },
            }),
          );
        }
        // No callDate: it is the submission time (2026-11-20).
        const undated = await submitCall(h.store, {
          teamId,
          submittedAt: at(100),
          submission: { repEmail: 'sam@example.com' },
        });
        await sync(h);
        const newestFirst = (rows: typeof dated) => rows.map((c) => c.callId).reverse();
        const list = async (query: CallHistoryQuery) =>
          (await allPages(h.models, teamId, { limit: 3, ...query })).flat().map((r) => r.callId);

        assert.deepEqual(
          await list({ from: '2026-03-02', to: '2026-03-03' }),
          newestFirst(dated.slice(2, 6)),
          'bare dates: 2 March 00:00 through 3 March 23:59:59.999',
        );
        assert.deepEqual(
          await list({ from: '2026-03-05T12:00:00Z' }),
          [undated.callId, ...newestFirst(dated.slice(8))],
          'from is inclusive',
        );
        assert.deepEqual(
          await list({ to: '2026-03-01T12:00:00.000+00:00' }),
          newestFirst(dated.slice(0, 2)),
          'to is inclusive',
        );
        assert.deepEqual(await list({ to: '2026-03-01T11:59:59.999Z' }), [], 'one millisecond before');
        assert.deepEqual(
          await list({ from: '2026-03-01T13:00:00+02:00', to: '2026-03-01T14:00:00+02:00' }),
          newestFirst(dated.slice(0, 2)),
          'offsets are instants',
        );
        const dana = dated.filter((_, i) => i % 2);
        assert.deepEqual(await list({ repEmail: 'dana.seller@example.com' }), newestFirst(dana));
        assert.deepEqual(
          await list({ repEmail: ' DANA.SELLER@EXAMPLE.COM ' }),
          newestFirst(dana),
          'trimmed, ASCII case folded',
        );
        assert.deepEqual(await list({ repEmail: 'dana.seller@example' }), [], 'exact, not a substring');
        assert.deepEqual(
          await list({ repEmail: 'sam@example.com', from: '2026-03-06', tags: ['t'] }),
          [dated[10]!.callId],
          'with a tag and a date',
        );
        assert.deepEqual(await list({ repEmail: 'sam@example.com', from: '2026-11-01' }), [undated.callId]);
      });

      test('order=updated_asc with updatedSince: least recently changed first by (updatedAt, callId), every change seen once when syncing page by page', async () => {
        const h = await open();
        const teamId = team();
        // Four calls submitted at t=0…3; then call 1 completes (t=10), call 3 fails (t=20).
        const calls = [];
        for (let i = 0; i < 4; i++) calls.push(await submitCall(h.store, { teamId, submittedAt: at(i) }));
        // Two more sharing one submission time: the callId tiebreak.
        const twins = [
          await submitCall(h.store, { teamId, submittedAt: at(5) }),
          await submitCall(h.store, { teamId, submittedAt: at(5) }),
        ].sort((a, b) => (a.callId < b.callId ? -1 : 1));
        await appendCall(h.store, calls[1]!.callId, [
          events.started('transcript', 10),
          events.transcript('x', 'inline', 10),
          events.analysed('T', 70, 10),
          events.completed(10),
        ]);
        await appendCall(h.store, calls[3]!.callId, [events.failed('analysis_failed', 'no', 20)]);
        await sync(h);
        const byUpdate = [calls[0]!, calls[2]!, ...twins, calls[1]!, calls[3]!].map((c) => c.callId);
        const pages = await allPages(h.models, teamId, { order: 'updated_asc', limit: 4 });
        assert.deepEqual(
          pages.map((p) => p.length),
          [4, 2],
        );
        assert.deepEqual(
          pages.flat().map((r) => r.callId),
          byUpdate,
        );
        assert.deepEqual(
          pages.flat().map((r) => r.updatedAt),
          [at(0), at(2), at(5), at(5), at(10), at(20)],
        );

        // A sync: everything changed at or after t=5, two at a time.
        assert.deepEqual(
          (await allPages(h.models, teamId, { order: 'updated_asc', updatedSince: at(5), limit: 2 }))
            .flat()
            .map((r) => r.callId),
          byUpdate.slice(2),
        );
        assert.deepEqual(
          (await allPages(h.models, teamId, { order: 'updated_asc', updatedSince: at(21), limit: 2 })).flat(),
          [],
        );
        // Filters combine with the sync order; updatedSince also filters the default order.
        assert.deepEqual(
          ids((await h.models.callHistory.list(teamId, { order: 'updated_asc', status: 'pending' })).calls),
          [calls[0]!, calls[2]!, ...twins].map((c) => c.callId),
        );
        assert.deepEqual(ids((await h.models.callHistory.list(teamId, { updatedSince: at(10) })).calls), [
          calls[3]!.callId,
          calls[1]!.callId,
        ]);
        // A later change moves a call to the end of the sync order.
        await appendCall(h.store, calls[0]!.callId, [events.failed('processing_timeout', 'late', 30)]);
        await sync(h);
        assert.deepEqual(
          ids((await h.models.callHistory.list(teamId, { order: 'updated_asc', updatedSince: at(20) })).calls),
          [calls[3]!.callId, calls[0]!.callId],
        );
        // A cursor of one order is refused by the other.
        const created = await h.models.callHistory.list(teamId, { limit: 1 });
        await assert.rejects(
          h.models.callHistory.list(teamId, { order: 'updated_asc', cursor: created.nextCursor! }),
          (e: unknown) => e instanceof InvalidQueryError && e.field === 'cursor',
        );
        const updated = await h.models.callHistory.list(teamId, { order: 'updated_asc', limit: 1 });
        await assert.rejects(
          h.models.callHistory.list(teamId, { cursor: updated.nextCursor! }),
          (e: unknown) => e instanceof InvalidQueryError && e.field === 'cursor',
        );
      });

      test('invalid queries are refused with InvalidQueryError', async () => {
        const h = await open();
        const teamId = team();
        for (const query of [
          { limit: 0 },
          { limit: 101 },
          { limit: 2.5 },
          { cursor: 'nope' },
          { cursor: Buffer.from('{"a":1}').toString('base64url') },
          { status: 'done' as never },
        ]) {
          await assert.rejects(h.models.callHistory.list(teamId, query), InvalidQueryError, JSON.stringify(query));
        }
        const refused: Array<[CallHistoryQuery, string]> = [
          [{ from: '2026-02-30' }, 'from'],
          [{ from: 'yesterday' }, 'from'],
          [{ to: '10000-01-01' }, 'to'],
          [{ from: '2026-03-02', to: '2026-03-01' }, 'to'],
          [{ updatedSince: '2026-13-01T00:00:00Z' }, 'updatedSince'],
          [{ repEmail: '  ' }, 'repEmail'],
          [{ order: 'newest' as never }, 'order'],
        ];
        // Cursors this store did not issue, however they decode: refused before any SQL runs.
        const cursorOf = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');
        const callId = randomUUID();
        const ms = Date.parse(at(0));
        for (const cursor of [
          cursorOf([ms, 'x\u0000']),
          cursorOf([ms, `${callId}\u0000`]),
          cursorOf([ms, '\ud800']),
          cursorOf([ms, 'not-a-call-id']),
          cursorOf([ms, callId.toUpperCase()]),
          cursorOf([1e20, callId]),
          cursorOf([ms + 0.5, callId]),
          `${cursorOf([ms, callId])}=`,
          Buffer.from(`[${ms}, "${callId}"]`).toString('base64url'),
        ])
          refused.push([{ cursor }, 'cursor']);
        for (const cursor of [
          cursorOf(['u', 'x\u0000', callId]),
          cursorOf(['u', at(0), `${callId}\u0000`]),
          cursorOf(['u', '2026-11-20T10:00:00Z', callId]),
          cursorOf(['u', '2026-02-30T10:00:00.000Z', callId]),
          cursorOf(['u', at(0), 'x']),
        ])
          refused.push([{ order: 'updated_asc', cursor }, 'cursor']);
        for (const [query, field] of refused) {
          await assert.rejects(
            h.models.callHistory.list(teamId, query),
            (e: unknown) => e instanceof InvalidQueryError && e.field === field,
            JSON.stringify(query),
          );
        }
        assert.equal((await h.models.callHistory.list(teamId, { limit: 100 })).calls.length, 0);
        // The same positions written as this store writes them are accepted.
        assert.deepEqual((await h.models.callHistory.list(teamId, { cursor: cursorOf([ms, callId]) })).calls, []);
        assert.deepEqual(
          (await h.models.callHistory.list(teamId, { order: 'updated_asc', cursor: cursorOf(['u', at(0), callId]) }))
            .calls,
          [],
        );
      });
    });

    describe('idempotency, checkpoint and rebuild', () => {
      test('the checkpoint is stored with the rows; replaying the same batch changes neither rows nor checkpoint', async () => {
        const h = await open();
        const teamId = team();
        assert.equal(await h.models.callHistory.checkpoint(), 0n);
        const a = await submitCall(h.store, { teamId, submission: { repName: 'A' } }, [
          events.started(),
          events.transcript('x'),
          events.analysed('Alpha'),
        ]);
        const b = await submitCall(h.store, { teamId, submission: { repName: 'B', tags: ['t'] } });
        const [batch] = await readFeed(h.store, 0n, 10_000);
        const head = batch![batch!.length - 1]!.position;
        await h.models.callHistory.apply(batch!, head);
        assert.equal(await h.models.callHistory.checkpoint(), head);
        const before = await allPages(h.models, teamId);

        const replays: Array<[string, () => Promise<void>]> = [
          ['the same batch again', () => h.models.callHistory.apply(batch!, head)],
          ['a partial redelivery', () => h.models.callHistory.apply(batch!.slice(1, 3), head)],
          ['a lower checkpoint', () => h.models.callHistory.apply(batch!, 0n)],
        ];
        for (const [what, replay] of replays) {
          await replay();
          assert.equal(await h.models.callHistory.checkpoint(), head, what);
          assert.deepEqual(await allPages(h.models, teamId), before, what);
        }
        assert.deepEqual(ids((await h.models.callHistory.list(teamId, { tags: ['t'] })).calls), [b.callId]);
        assert.equal((await h.models.callHistory.get(teamId, a.callId))?.title, 'Alpha');
      });

      test('batches split anywhere give the same rows as one batch', async () => {
        const h = await open();
        const teamId = team();
        for (let i = 0; i < 6; i++) {
          await submitCall(h.store, { teamId, submittedAt: at(i), submission: { repName: `Rep ${i}`, tags: ['x'] } }, [
            events.started(),
            events.transcript('x'),
            events.analysed(`Title ${i}`),
            ...(i % 2 ? [events.completed()] : [events.failed('analysis_failed', 'The analyser gave up')]),
          ]);
        }
        const one = await open();
        const [all] = await readFeed(h.store, 0n, 10_000);
        await one.models.callHistory.apply(all!, all![all!.length - 1]!.position);
        for (let size = 1; size <= 4; size++) {
          const split = await open();
          for (let i = 0; i < all!.length; i += size) {
            const batch = all!.slice(i, i + size);
            await split.models.callHistory.apply(batch, batch[batch.length - 1]!.position);
          }
          assert.deepEqual(await allPages(split.models, teamId), await allPages(one.models, teamId));
        }
      });

      test('expectedCheckpoint: a mismatch writes nothing and names the stored checkpoint', async () => {
        const h = await open();
        const teamId = team();
        const call = await submitCall(h.store, { teamId });
        const [batch] = await readFeed(h.store);
        const head = batch![batch!.length - 1]!.position;
        const error = await h.models.callHistory
          .apply(batch!, head, { expectedCheckpoint: 7n })
          .catch((e: unknown) => e);
        assert.ok(error instanceof CheckpointMismatchError);
        assert.equal(error.stored, 0n);
        assert.equal(await h.models.callHistory.get(teamId, call.callId), undefined);
        assert.equal(await h.models.callHistory.checkpoint(), 0n);
        await h.models.callHistory.apply(batch!, head, { expectedCheckpoint: 0n });
        assert.ok(await h.models.callHistory.get(teamId, call.callId));
      });

      test('rebuild: a new version is built while the old one answers, activation switches reads and live applies, the old one is dropped', async () => {
        const h = await open();
        const teamId = team();
        const first = await submitCall(h.store, { teamId, submission: { repName: 'First' } });
        await catchUp(h.store, h.models.callHistory);
        const liveCheckpoint = await h.models.callHistory.checkpoint();
        const tablesBefore = await h.tables();

        const target = await h.models.callHistory.beginRebuild();
        assert.ok(target.version > 1);
        assert.equal(await target.checkpoint(), 0n);
        // The rebuild reads the feed up to here; a call submitted later reaches the live version only.
        const [upToNow] = await readFeed(h.store, 0n, 10_000);
        const late = await submitCall(h.store, { teamId, submission: { repName: 'Late' } });
        await target.apply(upToNow!, upToNow![upToNow!.length - 1]!.position);
        assert.equal(await target.checkpoint(), liveCheckpoint);
        await catchUp(h.store, h.models.callHistory, 1);
        const liveHead = await h.models.callHistory.checkpoint();
        assert.deepEqual(
          ids((await h.models.callHistory.list(teamId)).calls).sort(),
          [first.callId, late.callId].sort(),
          'reads still use the old version',
        );
        const during = await h.tables();
        assert.ok(during.length > tablesBefore.length, 'the new version has its own tables');

        await target.activate();
        assert.deepEqual(
          ids((await h.models.callHistory.list(teamId)).calls),
          [first.callId],
          'reads come from the new version',
        );
        assert.equal(await h.models.callHistory.checkpoint(), liveCheckpoint);
        assert.deepEqual(
          (await h.tables()).sort(),
          tablesBefore
            .sort()
            .map((t) => t.replace(/_v1(?=$|_)/, `_v${target.version}`))
            .sort(),
          'the old version is dropped',
        );

        // The live runner still believes in its own checkpoint: it is told where to resume.
        const [tail] = await readFeed(h.store, liveCheckpoint);
        const mismatch = await h.models.callHistory
          .apply(tail!, liveHead, { expectedCheckpoint: liveHead })
          .catch((e: unknown) => e);
        assert.ok(mismatch instanceof CheckpointMismatchError);
        assert.equal(mismatch.stored, liveCheckpoint);
        await catchUp(h.store, h.models.callHistory);
        assert.deepEqual(
          ids((await h.models.callHistory.list(teamId)).calls).sort(),
          [first.callId, late.callId].sort(),
        );

        // An abandoned rebuild cannot write or activate once a newer one began.
        const abandoned = await h.models.callHistory.beginRebuild();
        const newer = await h.models.callHistory.beginRebuild();
        assert.ok(newer.version > abandoned.version);
        await abandoned.apply(upToNow!, 1n).catch(() => undefined); // refused now or at its next write
        await assert.rejects(abandoned.activate());
        await target.activate(); // already active: nothing happens
        assert.equal((await h.models.callHistory.list(teamId)).calls.length, 2);
      });
    });

    describe('rebuild window', () => {
      for (const events of [1, 4, 1000]) {
        test(`a rebuild writing every ${events} event(s) yields exactly the rows of the live projection`, async () => {
          const h = await open({ rebuildLimits: { events, bytes: Number.MAX_SAFE_INTEGER } });
          const teamId = team();
          await fillMixedHistory(h.store, teamId);
          await catchUp(h.store, h.models.callHistory, 3);
          const live = await allPages(h.models, teamId, { limit: 5 });
          const tagged = await allPages(h.models, teamId, { tags: ['b'], search: 'rep' });
          const target = await h.models.callHistory.beginRebuild();
          for (const batch of await readFeed(h.store, 0n, 2))
            await target.apply(batch, batch[batch.length - 1]!.position);
          await target.activate();
          assert.deepEqual(await allPages(h.models, teamId, { limit: 5 }), live);
          assert.deepEqual(await allPages(h.models, teamId, { tags: ['b'], search: 'rep' }), tagged);
          assert.equal(
            await h.models.callHistory.checkpoint(),
            (await readFeed(h.store, 0n, 100_000))[0]!.at(-1)!.position,
          );
        });
      }
    });

    describe('erasure (docs/decisions/0014-erasure-crypto-shredding.md)', () => {
      test('CallErased drops the row (get, list, tags, search), the deal record and its unpublished outbox entry; a call erased in its first batch never shows', async () => {
        const h = await open();
        const teamId = team();
        const deal = { dealSize: 10, notes: 'n' };
        const done = await submitCall(h.store, { teamId, submission: { repName: 'Erin Done', tags: ['x'], deal } }, [
          events.started(),
          events.transcript('t'),
          events.analysed('Erin title'),
          events.dealRecorded(deal),
          events.completed(),
        ]);
        const pending = await submitCall(
          h.store,
          { teamId, submittedAt: at(1), submission: { repName: 'Erin Pending', tags: ['x'] } },
          [events.started()],
        );
        const kept = await submitCall(h.store, {
          teamId,
          submittedAt: at(2),
          submission: { repName: 'Kim Kept', tags: ['x'] },
        });
        await sync(h);
        assert.ok(await h.models.deals.get(done.callId));
        await appendCall(h.store, done.callId, [events.erased()]);
        await appendCall(h.store, pending.callId, [events.erased()]);
        const brief = await submitCall(
          h.store,
          { teamId, submittedAt: at(3), submission: { repName: 'Erin Brief', deal } },
          [events.erased()],
        );
        await sync(h);
        for (const callId of [done.callId, pending.callId, brief.callId])
          assert.equal(await h.models.callHistory.get(teamId, callId), undefined, callId);
        assert.deepEqual(ids((await h.models.callHistory.list(teamId)).calls), [kept.callId]);
        assert.deepEqual(ids((await h.models.callHistory.list(teamId, { tags: ['x'] })).calls), [kept.callId]);
        assert.deepEqual(await found(h.models, teamId, 'erin'), []);
        assert.equal(await h.models.deals.get(done.callId), undefined);
        assert.ok(
          !(await h.models.deals.unpublished(100)).some((e) => e.callId === done.callId || e.callId === brief.callId),
        );
        assert.deepEqual(
          (await h.models.callHistory.submittedBefore(teamId, at(100), 10)).map((c) => c.callId),
          [kept.callId],
        );
      });

      for (const window of [1, 1000]) {
        test(`a rebuild writing every ${window} event(s) has no row for an erased call`, async () => {
          const h = await open({ rebuildLimits: { events: window, bytes: Number.MAX_SAFE_INTEGER } });
          const teamId = team();
          await fillMixedHistory(h.store, teamId);
          const erased = await submitCall(
            h.store,
            { teamId, submittedAt: at(50), submission: { repName: 'Erin', tags: ['b'] } },
            [events.started(), events.transcript('t')],
          );
          await catchUp(h.store, h.models.callHistory, 2);
          await appendCall(h.store, erased.callId, [events.erased()]);
          await catchUp(h.store, h.models.callHistory, 2);
          const live = await allPages(h.models, teamId, { limit: 5 });
          assert.ok(!ids(live.flat()).includes(erased.callId));
          const target = await h.models.callHistory.beginRebuild();
          for (const batch of await readFeed(h.store, 0n, 2))
            await target.apply(batch, batch[batch.length - 1]!.position);
          await target.activate();
          assert.deepEqual(await allPages(h.models, teamId, { limit: 5 }), live);
          assert.equal(await h.models.callHistory.get(teamId, erased.callId), undefined);
        });
      }

      test('the calls of an e-mail (rep e-mail or attributed member, ASCII case-insensitive) and the calls submitted before an instant, oldest first', async () => {
        const h = await open();
        const teamId = team();
        const byRep = await submitCall(h.store, {
          teamId,
          submittedAt: at(1),
          submission: { repEmail: 'Dana@Acme.test' },
        });
        const byMember = await submitCall(h.store, {
          teamId,
          submittedAt: at(2),
          submission: { repEmail: 'other@acme.test' },
          attributedTo: { kind: 'member', memberId: 'm1', email: 'dana@acme.test', name: 'Dana' },
        });
        const owner = await submitCall(h.store, {
          teamId,
          submittedAt: at(3),
          attributedTo: { kind: 'owner', email: 'dana@acme.test', name: 'Dana' },
        });
        await submitCall(h.store, { teamId: team(), submission: { repEmail: 'dana@acme.test' } });
        await sync(h);
        assert.deepEqual(
          (await h.models.callHistory.callsOfEmail(teamId, 'DANA@acme.test')).sort(),
          [byRep.callId, byMember.callId].sort(),
        );
        const due = async (before: string, limit: number) =>
          (await h.models.callHistory.submittedBefore(teamId, before, limit)).map((c) => c.callId);
        assert.deepEqual(await due(at(3), 10), [byRep.callId, byMember.callId]);
        assert.deepEqual(await due(at(4), 1), [byRep.callId]);
        assert.ok(owner);
      });

      test('the calls submitted before an instant page on after the last call of a page, calls of one instant in call id order', async () => {
        const h = await open();
        const teamId = team();
        const calls = [
          await submitCall(h.store, { teamId, callId: `b-${randomUUID()}`, submittedAt: at(1) }),
          await submitCall(h.store, { teamId, callId: `a-${randomUUID()}`, submittedAt: at(1) }),
          await submitCall(h.store, { teamId, callId: `c-${randomUUID()}`, submittedAt: at(2) }),
          await submitCall(h.store, { teamId, callId: `d-${randomUUID()}`, submittedAt: at(9) }),
        ];
        await submitCall(h.store, { teamId: team(), submittedAt: at(1) });
        await sync(h);
        const seen: string[] = [];
        let page = await h.models.callHistory.submittedBefore(teamId, at(5), 1);
        while (page.length > 0) {
          seen.push(...page.map((c) => c.callId));
          assert.ok(seen.length <= 3, `paged past the end: ${seen.join(', ')}`);
          page = await h.models.callHistory.submittedBefore(teamId, at(5), 1, page.at(-1));
        }
        assert.deepEqual(seen, [calls[1]!.callId, calls[0]!.callId, calls[2]!.callId]);
        const [first] = await h.models.callHistory.submittedBefore(teamId, at(5), 1);
        assert.equal(first!.submittedAtMs, Date.parse(at(1)));
      });
    });

    describe('deal records and the deal.outcome.updated outbox', () => {
      test('a call event the deal projection does not read (one that does not even decode) does not stop it', async () => {
        const h = await open();
        const teamId = team();
        const deal = { dealSize: 900 };
        const call = await submitCall(h.store, { teamId, submission: { deal } }, [events.started()]);
        // An analysis in a shape no version of CallAnalysed had: the history projection stops on it
        // (an operator decides); the deal projection never decodes that type.
        await h.store.append(`call-${call.callId}`, [{ type: 'CallAnalysed', data: { score: 'high' } }]);
        await appendCall(h.store, call.callId, [events.dealRecorded(deal)]);
        await catchUp(h.store, h.models.deals);
        assert.equal((await h.models.deals.get(call.callId))?.dealSize, 900);
        assert.deepEqual(
          (await h.models.deals.unpublished(10)).map((entry) => entry.callId),
          [call.callId],
        );
        await assert.rejects(catchUp(h.store, h.models.callHistory), { code: 'EVENT_DECODE_FAILED' });
      });

      test('a deal write: one record per call and exactly one outbox entry with a stable event id, across replays', async () => {
        const h = await open();
        const teamId = team();
        const deal = { dealSize: 5000, revenueCollected: 1200, dealDate: '2026-11-21T00:00:00.000Z', notes: 'Signed' };
        const call = await submitCall(
          h.store,
          {
            teamId,
            submission: { repName: 'Dana Reyes', repEmail: 'dana@acme.test', deal },
            attributedTo: { kind: 'member', memberId: 'm1', email: 'dana@acme.test', name: 'Dana Reyes' },
          },
          [
            events.started(),
            events.transcript('x'),
            events.analysed('T'),
            events.dealRecorded(deal),
            events.completed(),
          ],
        );
        await submitCall(h.store, { teamId }, [events.started()]); // no deal
        await sync(h);
        const dealEvent = (await h.store.readStream(`call-${call.callId}`)).find((e) => e.type === 'DealRecorded')!;
        const expected = {
          callId: call.callId,
          teamId,
          repName: 'Dana Reyes',
          repEmail: 'dana@acme.test',
          attributedTo: { kind: 'member', email: 'dana@acme.test', name: 'Dana Reyes' },
          dealSize: 5000,
          revenueCollected: 1200,
          dealDate: '2026-11-21T00:00:00.000Z',
          notes: 'Signed',
          recordedAt: at(5),
          eventId: dealEventId(call.callId, dealEvent.revision),
        };
        assert.deepEqual(await h.models.deals.get(call.callId), expected);
        assert.deepEqual(await h.models.deals.listByTeam(teamId), [expected]);
        const outbox = await h.models.deals.unpublished(10);
        assert.deepEqual(outbox, [
          { eventId: expected.eventId, callId: call.callId, payload: expected, createdAt: at(5), publishedAt: null },
        ]);

        // Replays (whole feed, one event at a time) neither add an entry nor change the id.
        for (const batch of await readFeed(h.store, 0n, 10_000))
          await h.models.deals.apply(batch, batch[batch.length - 1]!.position);
        for (const batch of await readFeed(h.store, 0n, 1)) await h.models.deals.apply(batch, batch[0]!.position);
        assert.deepEqual(await h.models.deals.unpublished(10), outbox);

        await h.models.deals.markPublished([expected.eventId, randomUUID()], new Date('2026-11-21T10:00:00.000Z'));
        assert.deepEqual(await h.models.deals.unpublished(10), []);
        for (const batch of await readFeed(h.store, 0n, 10_000))
          await h.models.deals.apply(batch, batch[batch.length - 1]!.position);
        assert.deepEqual(await h.models.deals.unpublished(10), [], 'a replay does not publish again');
        assert.deepEqual(await h.models.deals.get(call.callId), expected);
      });

      test('the call facts survive between batches; the deal checkpoint is stored with the records; outbox order is write order', async () => {
        const h = await open();
        const teamId = team();
        const calls = [];
        for (let i = 0; i < 3; i++) {
          calls.push(
            await submitCall(h.store, { teamId, submission: { repName: `Rep ${i}`, deal: { dealSize: i * 100 } } }, [
              events.started(),
            ]),
          );
        }
        await catchUp(h.store, h.models.deals, 1);
        const checkpoint = await h.models.deals.checkpoint();
        assert.equal(await h.models.deals.get(calls[0]!.callId), undefined, 'no record before the deal is written');
        for (const call of [...calls].reverse())
          await appendCall(h.store, call.callId, [
            events.transcript('x'),
            events.analysed('T'),
            events.dealRecorded({ dealSize: 7 }),
          ]);
        const [tail] = await readFeed(h.store, checkpoint);
        const mismatch = await h.models.deals
          .apply(tail!, tail![tail!.length - 1]!.position, { expectedCheckpoint: 0n })
          .catch((e: unknown) => e);
        assert.ok(mismatch instanceof CheckpointMismatchError);
        await h.models.deals.apply(tail!, tail![tail!.length - 1]!.position, { expectedCheckpoint: checkpoint });
        assert.equal(await h.models.deals.checkpoint(), tail![tail!.length - 1]!.position);
        const outbox = await h.models.deals.unpublished(10);
        assert.deepEqual(
          outbox.map((e) => e.callId),
          [...calls].reverse().map((c) => c.callId),
        );
        assert.deepEqual(
          outbox.map((e) => e.payload.repName),
          ['Rep 2', 'Rep 1', 'Rep 0'],
        );
        assert.deepEqual((await h.models.deals.unpublished(2)).length, 2);
        assert.equal((await h.models.deals.listByTeam(teamId)).length, 3);
        assert.equal((await h.models.deals.listByTeam(team())).length, 0);
      });
    });
  });
};
