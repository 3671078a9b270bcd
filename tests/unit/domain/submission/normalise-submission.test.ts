import { test } from 'node:test';
import assert from 'node:assert/strict';
import { accepted, base, refused, refusedWith } from './helpers.ts';
import { MAX_LISTED_ERRORS } from '../../../../shared/domain/submission/normalise-submission.ts';

const eitherMissing = { field: 'transcript', message: 'send at least one of transcript or audioUrl, non-empty' };

test('400 when neither transcript nor audioUrl is present (error names both)', () => {
  refusedWith({ repName: 'Dana' }, [eitherMissing]);
  assert.match(eitherMissing.message, /transcript/);
  assert.match(eitherMissing.message, /audioUrl/);
});

test('empty, whitespace-only and null transcript/audioUrl count as missing', () => {
  refusedWith({ transcript: '   ', audioUrl: '' }, [eitherMissing]);
  refusedWith({ transcript: null, audio_url: null }, [eitherMissing]);
});

test('a transcript alone is accepted, with the canonical defaults', () => {
  const { submission, warnings } = accepted({ transcript: 'Hi' });
  assert.deepEqual(submission, {
    transcript: { text: 'Hi', truncated: false, originalBytes: 2 },
    aiTitleEnabled: true,
    tags: [],
    metadata: {},
  });
  assert.deepEqual(warnings, []);
});

test('an audioUrl alone is accepted', () => {
  assert.equal(
    accepted({ audioUrl: 'https://cdn.example.com/rec/1.mp3' }).submission.audioUrl,
    'https://cdn.example.com/rec/1.mp3',
  );
});

test('the body must be a JSON object', () => {
  for (const body of [null, [], 'transcript', 42])
    refusedWith(body, [{ field: 'body', message: 'the request body must be a JSON object' }]);
});

// Every alias, read into its canonical field.
const aliases: Array<
  [string, unknown, keyof import('../../../../shared/domain/submission/submission.ts').Submission, unknown]
> = [
  ['audioUrl', 'https://x.example/a.mp3', 'audioUrl', 'https://x.example/a.mp3'],
  ['audio_url', 'https://x.example/a.mp3', 'audioUrl', 'https://x.example/a.mp3'],
  ['repName', 'Dana Reyes', 'repName', 'Dana Reyes'],
  ['rep_name', 'Dana Reyes', 'repName', 'Dana Reyes'],
  ['repEmail', 'Dana@Acme.io', 'repEmail', 'Dana@Acme.io'],
  ['rep_email', 'Dana@Acme.io', 'repEmail', 'Dana@Acme.io'],
  ['callTitle', 'Discovery with Lee', 'callTitle', 'Discovery with Lee'],
  ['call_title', 'Discovery with Lee', 'callTitle', 'Discovery with Lee'],
  ['disableAiTitleGeneration', true, 'aiTitleEnabled', false],
  ['disable_ai_title_generation', true, 'aiTitleEnabled', false],
  ['useAiCallTitle', false, 'aiTitleEnabled', false],
  ['use_ai_call_title', false, 'aiTitleEnabled', false],
  ['callDate', '2026-11-20', 'callDate', '2026-11-20T00:00:00.000Z'],
  ['call_date', '2026-11-20T09:15:00Z', 'callDate', '2026-11-20T09:15:00.000Z'],
  ['tags', ['demo'], 'tags', ['demo']],
  ['callTags', ['demo'], 'tags', ['demo']],
  ['call_tags', ['demo'], 'tags', ['demo']],
  ['notes', 'Follow up Friday', 'notes', 'Follow up Friday'],
  ['callNotes', 'Follow up Friday', 'notes', 'Follow up Friday'],
  ['call_notes', 'Follow up Friday', 'notes', 'Follow up Friday'],
];
for (const [alias, value, canonical, expected] of aliases) {
  test(`alias ${alias} is read as ${canonical}`, () => {
    assert.deepEqual(accepted({ ...base, [alias]: value }).submission[canonical], expected);
  });
}

const conflicts: Array<[string, unknown, string, unknown]> = [
  ['audioUrl', 'https://x.example/a.mp3', 'audio_url', 'https://x.example/b.mp3'],
  ['repName', 'Dana', 'rep_name', 'Lee'],
  ['repEmail', 'dana@acme.io', 'rep_email', 'lee@acme.io'],
  ['callTitle', 'A', 'call_title', 'B'],
  ['disableAiTitleGeneration', true, 'disable_ai_title_generation', false],
  ['useAiCallTitle', true, 'use_ai_call_title', false],
  ['callDate', '2026-11-20', 'call_date', '2026-11-21'],
  ['tags', ['a'], 'callTags', ['b']],
  ['tags', ['a'], 'call_tags', ['a', 'b']],
  ['notes', 'x', 'call_notes', 'y'],
  ['callNotes', 'x', 'call_notes', 'y'],
  ['durationUnit', 'seconds', 'duration_unit', 'minutes'],
];
for (const [a, av, b, bv] of conflicts) {
  test(`400 when ${a} and ${b} are both sent with different values (the error names both)`, () => {
    refusedWith({ ...base, [a]: av, [b]: bv }, [{ field: a, message: `${a} and ${b} differ; send one` }]);
  });
  test(`${a} and ${b} sent with the same value are fine`, () => {
    accepted({ ...base, [a]: av, [b]: av });
  });
}

test('camelCase and snake_case compare after trimming and date canonicalisation', () => {
  accepted({ ...base, repName: 'Dana', rep_name: ' Dana ' });
  assert.equal(
    accepted({ ...base, callDate: '2026-11-20', call_date: '2026-11-20T00:00:00Z' }).submission.callDate,
    '2026-11-20T00:00:00.000Z',
  );
});

test('AI titles are on by default and off when disabled either way', () => {
  assert.equal(accepted(base).submission.aiTitleEnabled, true);
  assert.equal(accepted({ ...base, useAiCallTitle: true }).submission.aiTitleEnabled, true);
  assert.equal(accepted({ ...base, disableAiTitleGeneration: false }).submission.aiTitleEnabled, true);
  assert.equal(
    accepted({ ...base, disableAiTitleGeneration: true, useAiCallTitle: false }).submission.aiTitleEnabled,
    false,
  );
  assert.equal(
    accepted({ ...base, disableAiTitleGeneration: false, use_ai_call_title: true }).submission.aiTitleEnabled,
    true,
  );
});

test('400 when useAiCallTitle contradicts disableAiTitleGeneration (it is the inverse)', () => {
  refusedWith({ ...base, disableAiTitleGeneration: true, useAiCallTitle: true }, [
    {
      field: 'disableAiTitleGeneration',
      message:
        'disableAiTitleGeneration and useAiCallTitle contradict each other (useAiCallTitle is the inverse of disableAiTitleGeneration); send one',
    },
  ]);
  const [error] = refused({ ...base, disable_ai_title_generation: false, use_ai_call_title: false });
  assert.equal(error?.field, 'disable_ai_title_generation');
  assert.match(error?.message ?? '', /use_ai_call_title/);
});

test('booleans: real booleans and the exact strings "true"/"false"; anything else is a 400', () => {
  assert.equal(accepted({ ...base, disableAiTitleGeneration: 'true' }).submission.aiTitleEnabled, false);
  assert.equal(accepted({ ...base, useAiCallTitle: 'false' }).submission.aiTitleEnabled, false);
  for (const value of ['yes', 'TRUE', 1, 0, 'on', []]) {
    refusedWith({ ...base, disableAiTitleGeneration: value }, [
      { field: 'disableAiTitleGeneration', message: 'disableAiTitleGeneration must be a boolean (true or false)' },
    ]);
  }
});

test('audioUrl must be an absolute http(s) URL', () => {
  for (const url of [
    'ftp://x.example/a.mp3',
    '/recordings/1.mp3',
    'not a url',
    'file:///etc/passwd',
    'javascript:alert(1)',
    'https://',
  ]) {
    refusedWith({ audio_url: url, transcript: 'x' }, [
      { field: 'audio_url', message: 'audio_url must be an absolute http(s) URL' },
    ]);
  }
  accepted({ audioUrl: 'http://10.0.0.1:8080/rec.wav?sig=abc' }); // SSRF is the fetcher's job, not the validator's
});

test('audioUrl must not carry a user name or password (the fetcher refuses it; the call would only fail)', () => {
  for (const url of [
    'https://user:secret@recordings.example.com/1.wav',
    'https://user@x.example/a.mp3',
    'http://:pw@x.example/',
  ]) {
    refusedWith({ audioUrl: url, transcript: 'x' }, [
      { field: 'audioUrl', message: 'audioUrl must not carry a user name or password' },
    ]);
  }
  accepted({ audioUrl: 'https://x.example/a.mp3?user=a&password=b' });
});

test('repEmail must be an e-mail address', () => {
  for (const email of ['dana', 'dana@', '@acme.io', 'dana acme@acme.io', 'dana@acme..io']) {
    refusedWith({ ...base, rep_email: email }, [
      { field: 'rep_email', message: 'rep_email must be an e-mail address' },
    ]);
  }
  assert.equal(
    accepted({ ...base, repEmail: '  Dana.Reyes+calls@Acme.io ' }).submission.repEmail,
    'Dana.Reyes+calls@Acme.io',
  );
});

test('callDate must be an ISO 8601 date or date-time', () => {
  for (const date of ['20/11/2026', '2026-02-30', 'yesterday', '2026-11-20 09:00']) {
    const [error] = refused({ ...base, callDate: date });
    assert.equal(error?.field, 'callDate');
    assert.match(error?.message ?? '', /ISO 8601/);
  }
  refusedWith({ ...base, callDate: 1732060800 }, [{ field: 'callDate', message: 'callDate must be a string' }]);
});

test('text fields must be strings', () => {
  refusedWith({ transcript: 42 }, [{ field: 'transcript', message: 'transcript must be a string' }]);
  refusedWith({ ...base, repName: { first: 'Dana' } }, [{ field: 'repName', message: 'repName must be a string' }]);
  refusedWith({ ...base, call_title: 7 }, [{ field: 'call_title', message: 'call_title must be a string' }]);
});

test('every error is reported, not only the first, each under the name the caller sent', () => {
  const errors = refused({
    audio_url: 'ftp://x',
    rep_email: 'nope',
    call_date: 'soon',
    call_tags: ['ok', 'x'.repeat(51), 'ok', 7],
    call_notes: 'n'.repeat(2001),
    metadata: { nested: { a: 1 } },
    deal: { deal_size: -1 },
    duration: 'long',
    use_ai_call_title: 'maybe',
  });
  assert.deepEqual(errors.map((e) => e.field).sort(), [
    'audio_url',
    'call_date',
    'call_notes',
    'call_tags[1]',
    'call_tags[3]',
    'deal.deal_size',
    'duration',
    'metadata.nested',
    'rep_email',
    'use_ai_call_title',
  ]);
});

test(`at most ${MAX_LISTED_ERRORS} errors are listed; the rest are counted in one more entry`, () => {
  const badTags = Array.from({ length: 500 }, () => 1); // 1 count error + 20 element errors per alias
  const metadata = Object.fromEntries(Array.from({ length: 25 }, (_, i) => [`k${i}`, {}]));
  const wrongType = Object.fromEntries(
    [
      'repName',
      'rep_name',
      'repEmail',
      'rep_email',
      'callTitle',
      'call_title',
      'callDate',
      'call_date',
      'notes',
      'callNotes',
      'call_notes',
      'dealSize',
      'deal_size',
      'dealDate',
      'deal_date',
      'audioUrl',
      'audio_url',
      'dealNotes',
      'deal_notes',
      'revenueCollected',
      'revenue_collected',
    ].map((name) => [name, { wrong: true }]),
  );
  const errors = refused({
    transcript: 1,
    ...wrongType,
    tags: badTags,
    callTags: badTags,
    call_tags: badTags,
    metadata,
  });
  assert.equal(errors.length, MAX_LISTED_ERRORS);
  assert.equal(errors.at(-1)?.field, 'body');
  assert.match(errors.at(-1)?.message ?? '', /^\d+ more errors not listed$/);
});

test('null and empty strings mean "not sent" for optional fields', () => {
  const { submission } = accepted({
    ...base,
    repName: null,
    repEmail: '',
    callTitle: '  ',
    callDate: null,
    tags: null,
    metadata: null,
    deal: null,
    duration: '',
    notes: '',
  });
  assert.deepEqual(submission, {
    transcript: { text: base.transcript, truncated: false, originalBytes: 30 },
    aiTitleEnabled: true,
    tags: [],
    metadata: {},
  });
});

test('short fields are trimmed; transcript and notes are kept verbatim', () => {
  const { submission } = accepted({ transcript: '  Hi \n', repName: ' Dana ', callTitle: ' Demo ', notes: ' note ' });
  assert.deepEqual(
    [submission.transcript?.text, submission.repName, submission.callTitle, submission.notes],
    ['  Hi \n', 'Dana', 'Demo', ' note '],
  );
});

test('U+FEFF is never trimmed nor blank: kept as sent, like U+200B', () => {
  const { submission } = accepted({
    ...base,
    notes: '\ufeff',
    callTitle: '\ufeffAcme\ufeff',
    repName: ' \u00a0\ufeffSam\u200b\u3000',
    tags: ['\ufeff'],
    deal: { notes: '\ufeff' },
  });
  assert.equal(submission.notes, '\ufeff');
  assert.equal(submission.callTitle, '\ufeffAcme\ufeff');
  assert.equal(submission.repName, '\ufeffSam\u200b', 'the white space around it is trimmed');
  assert.deepEqual(submission.tags, ['\ufeff']);
  assert.equal(submission.deal?.notes, '\ufeff');
  assert.equal(accepted({ transcript: '\ufeff' }).submission.transcript?.text, '\ufeff', 'a transcript, not blank');
});

test('a number, boolean, date or e-mail field holding U+FEFF is a 400 naming it, not "not sent"', () => {
  const fields = ['dealSize', 'disableAiTitleGeneration', 'callDate', 'repEmail', 'duration'];
  assert.deepEqual(
    refused({ ...base, ...Object.fromEntries(fields.map((f) => [f, '\ufeff'])) })
      .map((e) => e.field)
      .sort(),
    [...fields].sort(),
  );
  assert.equal(refused({ ...base, callDate: '\ufeff2026-11-20' })[0]?.field, 'callDate', 'not stripped for you');
});

test('duration is normalised with durationUnit or metadata.source as hints', () => {
  assert.deepEqual(accepted({ ...base, duration: 45, duration_unit: 'minutes' }).submission.duration, {
    seconds: 2700,
    unit: 'minutes',
    basis: 'explicit',
    raw: 45,
  });
  assert.deepEqual(accepted({ ...base, duration: '45', metadata: { source: 'zoom' } }).submission.duration, {
    seconds: 2700,
    unit: 'minutes',
    basis: 'source',
    raw: 45,
  });
  refusedWith({ ...base, duration: 45, durationUnit: 'hours' }, [
    { field: 'durationUnit', message: 'durationUnit must be one of seconds, minutes, milliseconds' },
  ]);
});

test('unknown fields are ignored and reported in warnings; a key or team id in the body gets a pointed warning', () => {
  const { submission, warnings } = accepted({
    ...base,
    repEmial: 'typo@acme.io',
    apiKey: 'pk_secret',
    teamId: 't1',
    deal: { dealSize: 1, currency: 'EUR' },
  });
  assert.equal(submission.repEmail, undefined);
  assert.deepEqual(warnings, [
    'apiKey in the body does not authenticate and is ignored; send the key in the X-API-Key header',
    'teamId is ignored: the team is inferred from the API key',
    'unknown field "repEmial" ignored',
    'unknown field deal.currency ignored',
  ]);
  assert.ok(!warnings.join(' ').includes('pk_secret'), 'the key value is never echoed');
});

test('at most 20 unknown fields are named in warnings', () => {
  const extra = Object.fromEntries(Array.from({ length: 25 }, (_, i) => [`x${i}`, i]));
  const { warnings } = accepted({ ...base, ...extra });
  assert.equal(warnings.length, 21);
  assert.equal(warnings.at(-1), '5 more unknown fields ignored');
});
