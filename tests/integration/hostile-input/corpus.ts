/**
 * The hostile-input corpus: request bodies that are valid JSON (or nearly) but hard to store —
 * U+0000, other control characters, lone and reversed surrogates, non-characters, bidi and
 * zero-width characters, 4-byte emoji at every length limit, extreme numbers, deep nesting, odd
 * keys and a 500 KB transcript of multi-byte text. Each case says what the answer must be: a 201,
 * or a 4xx with its code (and, for a 400 on a field, the field named as the caller sent it).
 */
import { MAX_BODY_DEPTH } from '../../../shared/domain/submission/storable-text.ts';
import { TRANSCRIPT_MAX_BYTES } from '../../../shared/domain/submission/truncate-utf8.ts';

/**
 * What GET /api/calls/:callId must show of an accepted call: these submission fields, the displayed
 * title, and the call's own `metadata` (the list's item shows the same).
 */
export interface Kept {
  submission?: Record<string, unknown>;
  title?: string;
  metadata?: Record<string, unknown>;
}

export type Expected =
  /** `kept`: checked against what was sent, not against what the normaliser made of it. */
  | { status: 201; warning?: RegExp; kept?: Kept }
  /** A 4xx with this code; `field` must be named in `errors[]`; `detail` must match the problem's detail. */
  | { status: 400 | 413 | 415; code: string; field?: string; detail?: RegExp };

export interface CorpusCase {
  name: string;
  /** The request body exactly as sent: JSON text (escapes as a caller writes them) or raw bytes. */
  payload: string | Buffer;
  headers?: Record<string, string>;
  expect: Expected;
}

const CONVERSATION =
  'Rep: Hi Dana, thanks for joining. What does your team use today?\nDana: Spreadsheets, mostly. The price of tools worries me.\nRep: We can start with a pilot next Tuesday.';

/** A normal call with `extra` fields; the payload is JSON.stringify's text, so NUL and lone surrogates travel as \u escapes. */
const call = (extra: Record<string, unknown>): string =>
  JSON.stringify({ transcript: CONVERSATION, repName: 'Sam Seller', ...extra });

const accepted = (name: string, payload: string | Buffer, warning?: RegExp): CorpusCase => ({
  name,
  payload,
  expect: { status: 201, ...(warning ? { warning } : {}) },
});
const keptAs = (name: string, payload: string, kept: Kept): CorpusCase => ({
  name,
  payload,
  expect: { status: 201, kept },
});
const invalid = (name: string, payload: string, field: string): CorpusCase => ({
  name,
  payload,
  expect: { status: 400, code: 'VALIDATION_FAILED', field },
});

// Every code point of C0 and C1 but U+0000: all storable everywhere, kept as sent.
const C0_C1 = [...Array.from({ length: 31 }, (_, i) => i + 1), ...Array.from({ length: 33 }, (_, i) => 0x7f + i)]
  .map((c) => String.fromCharCode(c))
  .join('');
const NON_CHARACTERS = '\ufdd0\ufdef\ufffe\uffff\u{1fffe}\u{1ffff}\u{10fffe}\u{10ffff}';
const INVISIBLE = '\u200b\u200c\u200d\u2060\ufeff\u00ad\u034f';
const BIDI = '\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u200e\u200f\u061c';
const EMOJI = '😀';
const LINE_BREAK_KEYS = {
  plain: 'p',
  'line\nfeed': 'lf',
  'carriage\rreturn': 'cr',
  'both\r\n': 'crlf',
  '\n': 'lf alone',
  'line\u2028separator': 'ls',
  'paragraph\u2029separator': 'ps',
};

const nest = (levels: number, leaf: unknown): unknown => {
  let value = leaf;
  for (let i = 0; i < levels; i++) value = { n: value };
  return value;
};

/** A transcript of multi-byte text (2-, 3- and 4-byte characters) of more than 512,000 bytes. */
const multiByteTranscript = (): string => {
  const lines = [
    'Rep: 日本語のテキストです😀 é ü ñ 𝐀 — what budget do you have for this?',
    'Dana: はい、わかりました 👍 the price is high, Ωμέγα ✓.',
  ];
  let text = '';
  for (let i = 0; Buffer.byteLength(text) <= TRANSCRIPT_MAX_BYTES + 10_000; i++) text += `${lines[i % 2]}\n`;
  return text;
};

/** A transcript of exactly `bytes` UTF-8 bytes ending in a 4-byte emoji. */
const transcriptOfBytes = (bytes: number): string =>
  `${CONVERSATION}\n${'a'.repeat(bytes - Buffer.byteLength(CONVERSATION) - 1 - 4)}${EMOJI}`;

export const corpus = (): CorpusCase[] => [
  // The two reproductions, verbatim.
  invalid('reproduction: NUL in notes', String.raw`{"transcript":"Rep: hello\nDana: hi","notes":"x\u0000y"}`, 'notes'),
  invalid(
    'reproduction: lone surrogate in repName',
    String.raw`{"transcript":"Rep: hi\nDana: ok","repName":"Sam \ud800 X"}`,
    'repName',
  ),

  // U+0000 in every kind of string.
  invalid('NUL in transcript', call({ transcript: `${CONVERSATION}\u0000` }), 'transcript'),
  invalid('NUL in rep_name', call({ repName: undefined, rep_name: 'Sam\u0000' }), 'rep_name'),
  invalid('NUL in repEmail', call({ repEmail: 'sam\u0000@acme.test' }), 'repEmail'),
  invalid('NUL in callTitle', call({ callTitle: 'Renewal\u0000' }), 'callTitle'),
  invalid('NUL in callDate', call({ callDate: '2026-11-20\u0000' }), 'callDate'),
  invalid('NUL in audioUrl', JSON.stringify({ audioUrl: 'https://cdn.example.com/a\u0000.mp3' }), 'audioUrl'),
  invalid('NUL in call_notes', call({ call_notes: '\u0000' }), 'call_notes'),
  invalid('NUL in a tag', call({ tags: ['ok', 'fine', 'x\u0000'] }), 'tags[2]'),
  invalid('NUL in a metadata value', call({ metadata: { source: 'aircall', note: 'a\u0000b' } }), 'metadata.note'),
  invalid('NUL in a metadata key', call({ metadata: { 'k\u0000': 'v' } }), 'metadata.k\\u0000'),
  invalid('NUL in nested metadata', call({ metadata: { crm: { note: 'x\u0000' } } }), 'metadata.crm.note'),
  invalid('NUL in deal.notes', call({ deal: { dealSize: 10, notes: '\u0000' } }), 'deal.notes'),
  invalid('NUL in dealNotes', call({ dealNotes: 'a\u0000' }), 'dealNotes'),
  invalid('NUL in durationUnit', call({ duration: 60, durationUnit: 'seconds\u0000' }), 'durationUnit'),
  invalid('NUL in an unknown field', call({ customField: 'x\u0000' }), 'customField'),
  invalid('NUL as a top-level key', call({ '\u0000': 'x' }), '\\u0000'),

  // Unpaired surrogates: lone high, lone low, reversed pair, half a pair at either end.
  invalid('lone high surrogate in transcript', call({ transcript: `${CONVERSATION} \ud83d` }), 'transcript'),
  invalid('lone low surrogate in callTitle', call({ callTitle: '\ude00 title' }), 'callTitle'),
  invalid('reversed pair in a tag', call({ tags: ['\ude00\ud83d'] }), 'tags[0]'),
  invalid('lone surrogate in a metadata key', call({ metadata: { 'crm\udfff': 'v' } }), 'metadata.crm\\udfff'),
  invalid('lone surrogate in deal notes', call({ deal: { notes: 'ok \ud800' } }), 'deal.notes'),
  invalid('lone surrogate in an unknown nested field', call({ raw: [{ a: ['\udbff'] }] }), 'raw[0].a[0]'),

  // Storable on every backend: accepted and kept as sent.
  accepted(
    'C0 and C1 controls in every string field',
    call({
      transcript: `${CONVERSATION}\n${C0_C1}`,
      repName: `Sam${C0_C1}X`,
      callTitle: C0_C1,
      notes: C0_C1,
      tags: [C0_C1.slice(0, 40)],
      metadata: { [C0_C1]: C0_C1 },
      deal: { dealSize: 1, notes: C0_C1 },
    }),
  ),
  accepted(
    'non-characters (U+FFFE, U+FFFF, U+10FFFF…)',
    call({
      repName: `Sam ${NON_CHARACTERS}`,
      callTitle: NON_CHARACTERS,
      tags: [NON_CHARACTERS],
      notes: NON_CHARACTERS,
      metadata: { [NON_CHARACTERS]: NON_CHARACTERS },
    }),
  ),
  accepted(
    'zero-width characters',
    call({
      transcript: `Rep:${INVISIBLE} hello\nDana: hi${INVISIBLE}`,
      repName: `Sam${INVISIBLE}Seller`,
      tags: [INVISIBLE],
      callTitle: INVISIBLE,
    }),
  ),
  // U+FEFF is a zero-width character like U+200B, not white space: never trimmed, never blank.
  keptAs(
    'U+FEFF alone in a tag, the notes, the rep name and the deal notes',
    call({ tags: ['\ufeff'], notes: '\ufeff', repName: '\ufeff', deal: { dealSize: 1, notes: '\ufeff' } }),
    { submission: { tags: ['\ufeff'], notes: '\ufeff', repName: '\ufeff', deal: { dealSize: 1, notes: '\ufeff' } } },
  ),
  keptAs(
    'U+FEFF at both ends of the call title, shown as sent',
    call({ callTitle: '\ufeffAcme\ufeff', disableAiTitleGeneration: true }),
    { submission: { callTitle: '\ufeffAcme\ufeff' }, title: '\ufeffAcme\ufeff' },
  ),
  keptAs(
    'tags that differ only by U+FEFF are two tags; tags equal once white space is trimmed are one',
    call({ tags: ['\ufeffx', 'x', ' x\u3000', '\u00a0y', 'y'] }),
    { submission: { tags: ['\ufeffx', 'x', 'y'] } },
  ),
  keptAs(
    'white space around a rep name and a title is trimmed, U+FEFF and U+200B inside it are kept',
    call({ repName: ' \ufeffSam\u200b\t', callTitle: '\u2003Demo\ufeff\n', useAiCallTitle: false }),
    { submission: { repName: '\ufeffSam\u200b', callTitle: 'Demo\ufeff' }, title: 'Demo\ufeff' },
  ),
  // `.` matches none of these: a key pattern of ^(.*)$ dropped them from the read API (shared/domain/any-key-record.ts).
  keptAs(
    'metadata keys holding a line break (LF, CR, CRLF, U+2028, U+2029), shown as sent',
    call({ metadata: LINE_BREAK_KEYS }),
    { submission: { metadata: LINE_BREAK_KEYS }, metadata: LINE_BREAK_KEYS },
  ),
  accepted(
    'bidi controls and right-to-left text',
    call({
      transcript: `Rep: ${BIDI} مرحبا שלום\nDana: hi`,
      repName: `\u202eSam Seller\u202c`,
      callTitle: `عرض ${BIDI}`,
      tags: ['עסקה', BIDI],
      disableAiTitleGeneration: true,
    }),
  ),
  accepted(
    'emoji sequences (ZWJ families, flags, skin tones)',
    call({ repName: 'Sam 👩‍👩‍👧‍👦 🇫🇷 👍🏽', callTitle: '👩‍💻 demo', tags: ['🇺🇦', '👍🏽'], useAiCallTitle: false }),
  ),

  // Limits, with a 4-byte emoji on the boundary: exactly at the limit and one over.
  accepted('a tag of 50 characters ending in an emoji', call({ tags: [`${'t'.repeat(49)}${EMOJI}`] })),
  invalid('a tag of 51 characters ending in an emoji', call({ tags: [`${'t'.repeat(50)}${EMOJI}`] }), 'tags[0]'),
  accepted('20 tags', call({ call_tags: Array.from({ length: 20 }, (_, i) => `${EMOJI}${i}`) })),
  invalid('21 tags', call({ call_tags: Array.from({ length: 21 }, (_, i) => `${EMOJI}${i}`) }), 'call_tags'),
  accepted('notes of 2000 characters ending in an emoji', call({ notes: `${'n'.repeat(1999)}${EMOJI}` })),
  invalid('notes of 2001 characters ending in an emoji', call({ notes: `${'n'.repeat(2000)}${EMOJI}` }), 'notes'),
  accepted('deal notes of 2000 emoji', call({ deal: { dealSize: 5, notes: EMOJI.repeat(2000) } })),
  invalid('deal notes of 2001 emoji', call({ dealNotes: EMOJI.repeat(2001) }), 'dealNotes'),
  accepted(
    '20 metadata keys',
    call({ metadata: Object.fromEntries(Array.from({ length: 20 }, (_, i) => [`${EMOJI}${i}`, EMOJI])) }),
  ),
  invalid(
    '21 metadata keys',
    call({ metadata: Object.fromEntries(Array.from({ length: 21 }, (_, i) => [`k${i}`, i])) }),
    'metadata',
  ),
  accepted('a rep name of 200 characters ending in an emoji', call({ repName: `${'r'.repeat(199)}${EMOJI}` })),
  invalid(
    'a rep name of 201 characters ending in an emoji',
    call({ repName: `${'r'.repeat(200)}${EMOJI}` }),
    'repName',
  ),
  accepted('a call title of 500 emoji', call({ callTitle: EMOJI.repeat(500), disableAiTitleGeneration: true })),
  invalid('a call title of 501 emoji', call({ call_title: EMOJI.repeat(501) }), 'call_title'),
  accepted(
    'metadata with a 100-character key and a 1000-character value, emoji at both ends',
    call({ metadata: { [`${'k'.repeat(99)}${EMOJI}`]: `${EMOJI}${'v'.repeat(999)}` } }),
  ),
  invalid(
    'a metadata value of 1001 characters',
    call({ metadata: { source: `${'v'.repeat(1000)}${EMOJI}` } }),
    'metadata.source',
  ),
  // Characters are code points in every limit, the URL's too (it counted UTF-16 units). No transcript,
  // and port 1 refuses at once: the call fails with a code rather than waiting on a download.
  accepted(
    'an audio URL of 2048 characters, most of them emoji (4,077 UTF-16 units)',
    JSON.stringify({ audioUrl: `http://127.0.0.1:1/${EMOJI.repeat(2048 - 'http://127.0.0.1:1/'.length)}` }),
  ),
  invalid(
    'an audio URL of 2049 characters, most of them emoji',
    JSON.stringify({ audioUrl: `http://127.0.0.1:1/${EMOJI.repeat(2049 - 'http://127.0.0.1:1/'.length)}` }),
    'audioUrl',
  ),
  accepted('a tag of 25 flags (50 code points)', call({ tags: ['🇫🇷'.repeat(25)] })),
  invalid('a tag of 26 flags (52 code points)', call({ tags: ['🇫🇷'.repeat(26)] }), 'tags[0]'),
  invalid(
    'an audio URL of 2049 characters',
    call({ audioUrl: `https://calls.example/${'a'.repeat(2049 - 'https://calls.example/'.length)}` }),
    'audioUrl',
  ),
  invalid(
    'a call date that the offset pushes past year 9999',
    call({ callDate: '9999-12-31T23:59:59-23:59' }),
    'callDate',
  ),
  accepted(
    'a transcript of exactly 512,000 bytes ending in an emoji',
    JSON.stringify({ transcript: transcriptOfBytes(TRANSCRIPT_MAX_BYTES) }),
  ),
  accepted(
    'a transcript of 512,001 bytes: the emoji across the limit is dropped whole',
    JSON.stringify({ transcript: transcriptOfBytes(TRANSCRIPT_MAX_BYTES + 1) }),
    /transcript truncated/,
  ),
  accepted(
    'a 500 KB transcript of multi-byte characters',
    JSON.stringify({ transcript: multiByteTranscript(), repName: 'Sam Seller' }),
    /transcript truncated/,
  ),
  accepted(
    'an unknown field named with an emoji at the 100th character',
    call({ [`${'k'.repeat(99)}${EMOJI}${EMOJI}`]: 1 }),
    /unknown field/,
  ),
  {
    name: 'a 255-character Idempotency-Key',
    payload: call({}),
    headers: { 'idempotency-key': 'k'.repeat(255) },
    expect: { status: 201 },
  },
  {
    name: 'a 256-character Idempotency-Key',
    payload: call({}),
    headers: { 'idempotency-key': 'x'.repeat(256) },
    expect: { status: 400, code: 'VALIDATION_FAILED', field: 'Idempotency-Key' },
  },

  // Numbers.
  // Past 2^53 − 1 a double cannot keep an amount exactly: a 400, as a number or as a string.
  invalid('deal amount 1e308', call({ deal: { dealSize: 1e308 } }), 'deal.dealSize'),
  invalid(
    'deal amount "9007199254740993" as a string',
    call({ revenueCollected: '9007199254740993' }),
    'revenueCollected',
  ),
  keptAs(
    'deal amounts of 2^53 − 1, as a number and as a string',
    call({ deal: { dealSize: 9007199254740991, revenueCollected: '9007199254740991' } }),
    { submission: { deal: { dealSize: 9007199254740991, revenueCollected: 9007199254740991 } } },
  ),
  invalid('a deal amount of 401 digits, too large for a double', call({ dealSize: `1${'0'.repeat(400)}` }), 'dealSize'),
  invalid('deal amount -1e308', call({ dealSize: -1e308 }), 'dealSize'),
  accepted(
    'deal amount -0',
    '{"transcript":"Rep: hi\\nDana: ok","dealSize":-0,"deal":{"deal_size":0,"revenueCollected":-0}}',
  ),
  accepted(
    'deal amount 1e-320 (subnormal)',
    '{"transcript":"Rep: hi\\nDana: ok","deal":{"dealSize":1e-320,"revenueCollected":5e-324}}',
  ),
  invalid(
    'deal amount 1e-400 (not 0, but below the smallest double: it would read as 0)',
    '{"transcript":"Rep: hi\\nDana: ok","deal":{"dealSize":1e-400}}',
    'deal.dealSize',
  ),
  invalid(
    'a metadata number of 0.000…1 with 400 zeros (it would read as 0)',
    `{"transcript":"Rep: hi\\nDana: ok","metadata":{"tiny":0.${'0'.repeat(400)}1}}`,
    'metadata.tiny',
  ),
  invalid(
    'duration -1e-999 (it would read as 0)',
    '{"transcript":"Rep: hi\\nDana: ok","duration":-1e-999}',
    'duration',
  ),
  keptAs(
    'a zero written with a long exponent (0e-400), and "1e-400" as a string',
    '{"transcript":"Rep: hi\\nDana: ok","dealSize":0e-400,"metadata":{"tiny":"1e-400"}}',
    { submission: { deal: { dealSize: 0 }, metadata: { tiny: '1e-400' } } },
  ),
  invalid(
    'deal amount 1e999 (beyond double range)',
    '{"transcript":"Rep: hi\\nDana: ok","dealSize":1e999}',
    'dealSize',
  ),
  invalid(
    'a metadata integer beyond 2^53 (a CRM call id) as a number',
    '{"transcript":"Rep: hi\\nDana: ok","metadata":{"source":"hubspot","hubspotCallId":12345678901234567891}}',
    'metadata.hubspotCallId',
  ),
  keptAs(
    'the same call id as a string, and the largest safe integer as a number',
    '{"transcript":"Rep: hi\\nDana: ok","metadata":{"hubspotCallId":"12345678901234567891","n":9007199254740991}}',
    { submission: { metadata: { hubspotCallId: '12345678901234567891', n: 9007199254740991 } } },
  ),
  invalid('duration 1e308', call({ duration: 1e308 }), 'duration'),
  invalid('duration 1e308 minutes', call({ duration: 1e308, durationUnit: 'minutes' }), 'duration'),
  invalid('duration -1e308', call({ duration: -1e308 }), 'duration'),
  accepted('duration -0', '{"transcript":"Rep: hi\\nDana: ok","duration":-0}'),
  accepted('duration 1e-320', '{"transcript":"Rep: hi\\nDana: ok","duration":1e-320}'),
  invalid('duration "1e3" as a string', call({ duration: '1e3' }), 'duration'),

  // Nesting.
  invalid('nested metadata (metadata is flat)', call({ metadata: nest(10, 'x') }), 'metadata.n'),
  accepted(
    `an unknown field nested ${MAX_BODY_DEPTH - 1} levels`,
    call({ extra: nest(MAX_BODY_DEPTH - 1, 1) }),
    /unknown field/,
  ),
  invalid(
    `an unknown field nested ${MAX_BODY_DEPTH} levels`,
    call({ extra: nest(MAX_BODY_DEPTH, 1) }),
    `extra${'.n'.repeat(MAX_BODY_DEPTH - 1)}`,
  ),
  {
    name: 'metadata nested 100,000 levels deep, with an Idempotency-Key (its body hash serialises the body)',
    payload: `{"transcript":"Rep: hi\\nDana: ok","metadata":${'['.repeat(100_000)}${']'.repeat(100_000)}}`,
    headers: { 'idempotency-key': 'deep-nesting-1' },
    expect: { status: 400, code: 'VALIDATION_FAILED', field: `metadata${'[0]'.repeat(MAX_BODY_DEPTH - 1)}` },
  },
  invalid(
    'an unknown field nested 1,000,000 levels deep',
    `{"transcript":"x","extra":${'{"a":'.repeat(1_000_000)}1${'}'.repeat(1_000_000)}}`,
    `extra${'.a'.repeat(MAX_BODY_DEPTH - 1)}`,
  ),

  // Odd keys.
  accepted(
    'a duplicate key: the last value wins',
    '{"transcript":"Rep: first\\nDana: one","transcript":"Rep: second\\nDana: two","repName":"A","repName":"B"}',
  ),
  accepted(
    '"constructor", "toString" and "hasOwnProperty" keys',
    '{"transcript":"Rep: hi\\nDana: ok","constructor":"c","toString":"t","hasOwnProperty":1,"metadata":{"constructor":"m","valueOf":"v"}}',
    /unknown field/,
  ),
  {
    name: '"__proto__" at the top level',
    payload: '{"transcript":"Rep: hi\\nDana: ok","__proto__":{"isAdmin":true}}',
    expect: { status: 400, code: 'MALFORMED_JSON', field: '__proto__', detail: /__proto__/ },
  },
  {
    name: '"__proto__" in metadata',
    payload: '{"transcript":"Rep: hi\\nDana: ok","metadata":{"__proto__":"x"}}',
    expect: { status: 400, code: 'MALFORMED_JSON', field: 'metadata.__proto__', detail: /__proto__/ },
  },
  {
    name: '"constructor": {"prototype": …}',
    payload: '{"transcript":"Rep: hi\\nDana: ok","constructor":{"prototype":{"isAdmin":true}}}',
    expect: { status: 400, code: 'MALFORMED_JSON', field: 'constructor', detail: /constructor/ },
  },

  // Not quite JSON.
  {
    name: 'a body that is not valid UTF-8 (a CESU-8 surrogate, an overlong NUL, a stray 0xFF)',
    payload: Buffer.concat([
      Buffer.from('{"transcript":"Rep: hi\\nDana: ok","repName":"Sam '),
      Buffer.from([0xed, 0xa0, 0x80, 0xc0, 0x80, 0xff]),
      Buffer.from('"}'),
    ]),
    expect: { status: 400, code: 'MALFORMED_JSON', field: 'body', detail: /not UTF-8: the byte at offset 49 / },
  },
  {
    name: 'a body with a raw control character inside a string (invalid JSON)',
    payload: '{"transcript":"Rep: hi\u0001\nDana: ok"}',
    expect: { status: 400, code: 'MALFORMED_JSON', field: 'body', detail: /not valid JSON/ },
  },
];

/** Read API probes: hostile query strings, each answered without a 5xx. */
export const readProbes = (): string[] => [
  '/api/calls?search=%00',
  '/api/calls?search=a%00b',
  '/api/calls?search=%ED%A0%80',
  '/api/calls?search=%F0%9F%98%80',
  '/api/calls?search=%E2%80%AE',
  '/api/calls?tag=%00',
  '/api/calls?tag=%ED%A0%80',
  '/api/calls/%00',
  '/api/calls/%ED%A0%80',
];
