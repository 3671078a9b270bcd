/**
 * The deal: sent as the `deal` object or as flat fields (`dealSize`, `dealNotes`, …), each under
 * its camelCase or snake_case name. All places a deal field may come from are aliases of one
 * another: equal values are fine, different ones are a 400 naming both (docs/decisions/0008-deal-fields.md).
 *
 * Validity (docs/decisions/0008-deal-fields.md): amounts finite and ≥ 0 (numbers, or plain decimal strings); `dealDate`
 * ISO 8601, date-only meaning midnight UTC; notes at most 2000 characters. A deal with any invalid
 * field is a 400 for the whole submission (spec rule 2), never written in part.
 */
import type { Deal } from './submission.ts';
import type { FieldError } from './submission-schema.ts';
import { DEAL_FIELDS, SUBMISSION_LIMITS } from './submission-schema.ts';
import { truncateChars } from './truncate-utf8.ts';
import {
  isBlank,
  isPlainObject,
  readAmount,
  readIsoDate,
  readLimitedText,
  resolveAliases,
  sourcesOf,
  type Reader,
} from './field-readers.ts';

export interface DealRead {
  deal?: Deal;
  errors: FieldError[];
  warnings: string[];
}

type DealKey = keyof Deal;

// For each deal field: its names inside `deal`, its flat names in the body, and how to read it.
const FIELDS: ReadonlyArray<{ key: DealKey; inDeal: string[]; flat: string[]; reader: Reader<string | number> }> = [
  { key: 'dealSize', inDeal: ['dealSize', 'deal_size'], flat: ['dealSize', 'deal_size'], reader: readAmount },
  {
    key: 'revenueCollected',
    inDeal: ['revenueCollected', 'revenue_collected'],
    flat: ['revenueCollected', 'revenue_collected'],
    reader: readAmount,
  },
  { key: 'dealDate', inDeal: ['dealDate', 'deal_date'], flat: ['dealDate', 'deal_date'], reader: readIsoDate },
  {
    key: 'notes',
    inDeal: ['notes'],
    flat: ['dealNotes', 'deal_notes'],
    reader: readLimitedText(SUBMISSION_LIMITS.maxNotesChars),
  },
];

const FLAT_NAMES = FIELDS.flatMap((f) => f.flat);

/** Reads the deal from the whole body (the `deal` object and the flat aliases). */
/** Unknown keys of `deal` listed one by one in warnings; the rest are counted. */
const MAX_LISTED_UNKNOWN_DEAL = 20;

export const readDeal = (body: Readonly<Record<string, unknown>>): DealRead => {
  // Most calls carry no deal: answer without building the sources.
  if (body.deal === undefined && !FLAT_NAMES.some((name) => Object.hasOwn(body, name)))
    return { errors: [], warnings: [] };
  const errors: FieldError[] = [];
  const warnings: string[] = [];
  const raw = body.deal;
  let inner: Record<string, unknown> = {};
  if (isPlainObject(raw)) {
    inner = raw;
    // Listed up to a bound, then counted: a deal with 150,000 unknown keys is one more warning, not 150,000.
    const unknown = Object.keys(raw).filter((name) => !DEAL_FIELDS.has(name));
    for (const name of unknown.slice(0, MAX_LISTED_UNKNOWN_DEAL))
      warnings.push(`unknown field deal.${truncateChars(name, 100)} ignored`);
    if (unknown.length > MAX_LISTED_UNKNOWN_DEAL)
      warnings.push(`${unknown.length - MAX_LISTED_UNKNOWN_DEAL} more unknown fields in deal ignored`);
  } else if (!isBlank(raw)) {
    // A blank `deal` ("", white space) is not sent, like any blank field (field-readers.ts).
    errors.push({ field: 'deal', message: 'deal must be an object' });
  }

  const deal: Deal = {};
  for (const { key, inDeal, flat, reader } of FIELDS) {
    const sources = sourcesOf(inner, inDeal, 'deal.').concat(sourcesOf(body, flat));
    const resolved = resolveAliases(sources, reader);
    errors.push(...resolved.errors);
    if (resolved.value !== undefined) (deal as Record<DealKey, unknown>)[key] = resolved.value;
  }
  const any = Object.keys(deal).length > 0;
  return errors.length > 0 || !any ? { errors, warnings } : { deal, errors, warnings };
};
