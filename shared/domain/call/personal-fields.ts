/**
 * Which fields of each call event (and of each record about a call) are personal data: they are
 * stored and published only encrypted under the call's data key, and are gone once the key is
 * destroyed (docs/decisions/0014-erasure-crypto-shredding.md). Pure: `splitPersonal` takes them
 * out of a payload, `mergePersonal` puts them back, or puts the erased placeholders in when the key
 * is gone, so every reader still gets a payload of the right shape.
 *
 * Personal: the transcript (and its segments), notes, rep name and e-mail, the attributed member,
 * metadata, deal notes, the audio URL, what the analysis derived from the transcript (title,
 * summary, component explanations, insights with their quoted evidence), a failure's reason (it
 * may name the audio host) and the submission's warnings (they may quote what was sent).
 */
import type { Json } from '../../ports/event-store.ts';

type Path = readonly string[];

/** A personal field and what it reads as once erased (undefined: absent). */
interface PersonalField {
  /** The field's name inside its parent object. */
  name: string;
  /** The names of the objects on the way to it, from the payload's root. */
  parents: Path;
  /** The path with dots, as sealed payloads key their fields. */
  dotted: string;
  erased?: Json;
}

const field = (dotted: string, erased?: Json): PersonalField => {
  const path = dotted.split('.');
  return { name: path[path.length - 1]!, parents: path.slice(0, -1), dotted, erased };
};

/** The personal fields of each payload type: call event types and `deal.outcome.updated`. */
export const PERSONAL_FIELDS: Readonly<Record<string, readonly PersonalField[]>> = {
  CallSubmitted: [
    field('submission.transcript.text', ''),
    field('submission.audioUrl'),
    field('submission.repName'),
    field('submission.repEmail'),
    field('submission.notes'),
    field('submission.metadata', {}),
    field('submission.deal.notes'),
    field('attributedTo.email', ''),
    field('attributedTo.name', ''),
    field('warnings', []),
  ],
  TranscriptRecorded: [field('text', ''), field('segments', [])],
  CallAnalysed: [field('title', ''), field('summary', ''), field('components', []), field('insights', [])],
  DealRecorded: [field('deal.notes')],
  CallFailed: [field('reason', 'erased')],
  CallRetried: [field('previousFailure.reason', 'erased')],
  'deal.outcome.updated': [
    field('repName', null),
    field('repEmail', null),
    field('attributedTo.email', ''),
    field('attributedTo.name', ''),
    field('notes', null),
  ],
};

/** Where a sealed payload carries its personal fields (encrypted). */
export const SEALED_FIELD = 'sealed';

/** How the value of `sealed` begins: the version of its format, before the base64 of the ciphertext. */
export const SEALED_VERSION = 'v1.';

type JsonObject = { [key: string]: Json };
const isObject = (value: Json | undefined): value is JsonObject =>
  value !== null && typeof value === 'object' && !Array.isArray(value);

/**
 * The object at the end of `parents` inside `root`, for changing a field in it: each object on
 * the way is a shallow copy made once (`copies` holds those already made), so the payload `root`
 * was copied from is never changed; with `create`, missing objects on the way are made. Undefined
 * when the way is missing and not created.
 */
const ownParentOf = (
  root: JsonObject,
  parents: Path,
  create: boolean,
  copies: WeakSet<JsonObject>,
): JsonObject | undefined => {
  let node = root;
  for (const name of parents) {
    const next = node[name];
    let own: JsonObject;
    if (isObject(next)) own = copies.has(next) ? next : { ...next };
    else if (create) own = {};
    else return undefined;
    copies.add(own);
    node[name] = own;
    node = own;
  }
  return node;
};

/**
 * A copy of a payload to change personal fields in: the root and, as they are reached, the objects
 * on the way to each field are copied; everything else is shared with the payload (payloads are
 * never changed in place, and a stored event's are frozen).
 */
const copyOnPaths = (data: JsonObject) => {
  const copies = new WeakSet<JsonObject>();
  const root = { ...data };
  copies.add(root);
  return { root, parentOf: (parents: Path, create: boolean) => ownParentOf(root, parents, create, copies) };
};

/** Whether the payload type has personal fields. */
export const hasPersonalFields = (type: string): boolean => Object.hasOwn(PERSONAL_FIELDS, type);

/**
 * The payload without its personal fields (a copy; the input is left as it is) and those fields by
 * dotted path. `personal` is empty when the payload holds none.
 */
export const splitPersonal = (type: string, data: Json): { rest: Json; personal: Record<string, Json> } => {
  const fields = PERSONAL_FIELDS[type];
  if (!fields || !isObject(data)) return { rest: data, personal: {} };
  const { root: rest, parentOf } = copyOnPaths(data);
  const personal: Record<string, Json> = {};
  for (const { name, parents, dotted } of fields) {
    const parent = parentOf(parents, false);
    if (parent && Object.hasOwn(parent, name)) {
      personal[dotted] = parent[name]!;
      delete parent[name];
    }
  }
  return { rest, personal };
};

/**
 * The payload with its personal fields put back; with `personal` undefined (the key is destroyed),
 * each field's erased placeholder where one is needed for the shape, the others left absent.
 */
export const mergePersonal = (type: string, rest: Json, personal: Record<string, Json> | undefined): Json => {
  const fields = PERSONAL_FIELDS[type];
  if (!fields || !isObject(rest)) return rest;
  const { root: data, parentOf } = copyOnPaths(rest);
  for (const { name, parents, dotted, erased } of fields) {
    const value = personal ? personal[dotted] : erased;
    if (value === undefined) continue;
    // A placeholder only where its parent exists (an erased deal's notes need no deal).
    const parent = parentOf(parents, personal !== undefined);
    if (parent) parent[name] = value;
  }
  return data;
};

/**
 * The payload as a reader without the call's key sees it: a sealed payload's personal fields as
 * their erased placeholders (what an erased call's events read as), an unsealed one as it is.
 */
export const withoutPersonal = (type: string, data: Json): Json => {
  if (!isObject(data) || typeof data[SEALED_FIELD] !== 'string') return data;
  const { [SEALED_FIELD]: _sealed, ...rest } = data;
  return mergePersonal(type, rest, undefined);
};
