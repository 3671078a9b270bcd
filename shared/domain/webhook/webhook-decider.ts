/**
 * The Webhook aggregate as a decider: registration, secret rotation, test requests, disabling on
 * 410 Gone and deletion. Ids, secrets and time come in the command (pure).
 *
 * Rules: `url` is an absolute http(s) URL of at most 2,048 characters without credentials;
 * `events` is a non-empty set of WEBHOOK_EVENT_TYPES; a deleted webhook is gone (WEBHOOK_NOT_FOUND);
 * a disabled one can be deleted, rotated and listed but not tested; a rotation keeps the previous
 * secret signing for ROTATION_OVERLAP_MS (24 h) after it, and no other rotation is taken meanwhile.
 */
import { DomainError, type Decider } from '../decider.ts';
import { WEBHOOK_EVENT_TYPES, type WebhookEvent, type WebhookEventType } from './webhook-events.ts';

export type RegisterWebhook = {
  type: 'RegisterWebhook';
  webhookId: string;
  teamId: string;
  url: string;
  events: readonly string[];
  secret: string;
  now: string;
};
export type RotateWebhookSecret = { type: 'RotateWebhookSecret'; secret: string; now: string };
export type RequestWebhookTest = { type: 'RequestWebhookTest'; testId: string; now: string };
export type DisableWebhook = { type: 'DisableWebhook'; reason: string; now: string };
export type DeleteWebhook = { type: 'DeleteWebhook'; now: string };
export type WebhookCommand =
  RegisterWebhook | RotateWebhookSecret | RequestWebhookTest | DisableWebhook | DeleteWebhook;

export interface WebhookSecrets {
  current: string;
  previous?: { secret: string; validUntil: string };
}

export type WebhookState =
  | { status: 'absent' }
  | {
      status: 'active' | 'disabled';
      webhookId: string;
      teamId: string;
      url: string;
      events: readonly WebhookEventType[];
      secrets: WebhookSecrets;
      createdAt: string;
    }
  | { status: 'deleted'; webhookId: string; teamId: string };

export const WEBHOOK_ERROR_CODES = [
  'WEBHOOK_NOT_FOUND',
  'WEBHOOK_ALREADY_EXISTS',
  'INVALID_WEBHOOK_INPUT',
  'WEBHOOK_DISABLED',
  'WEBHOOK_ROTATION_OVERLAP',
] as const;
export type WebhookErrorCode = (typeof WEBHOOK_ERROR_CODES)[number];

/** How long a rotated-out secret keeps signing, alongside the new one. */
export const ROTATION_OVERLAP_MS = 24 * 60 * 60 * 1000;
export const WEBHOOK_URL_MAX_LENGTH = 2048;
/** `whsec_` + base64 of 32 bytes. */
const SECRET = /^whsec_[A-Za-z0-9+/]{43}=$/;

const refuse = (code: WebhookErrorCode, message: string, field?: string): never => {
  throw new DomainError(code, message, field === undefined ? {} : { field });
};

/** Why `url` cannot be a webhook URL, or undefined when it can. */
export const webhookUrlProblem = (url: string): string | undefined => {
  if (url.length > WEBHOOK_URL_MAX_LENGTH) return `url must be at most ${WEBHOOK_URL_MAX_LENGTH} characters`;
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return 'url must be an absolute URL';
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') return 'url must be http or https';
  if (parsed.username !== '' || parsed.password !== '') return 'url must not carry credentials';
  return undefined;
};

const register = (command: RegisterWebhook): WebhookEvent[] => {
  const problem = webhookUrlProblem(command.url);
  if (problem) refuse('INVALID_WEBHOOK_INPUT', problem, 'url');
  if (command.events.length === 0)
    refuse('INVALID_WEBHOOK_INPUT', 'events must name at least one event type', 'events');
  const unknown = command.events.filter((e) => !(WEBHOOK_EVENT_TYPES as readonly string[]).includes(e));
  if (unknown.length > 0)
    refuse(
      'INVALID_WEBHOOK_INPUT',
      `unknown event type ${unknown.join(', ')}; known: ${WEBHOOK_EVENT_TYPES.join(', ')}`,
      'events',
    );
  if (!SECRET.test(command.secret))
    refuse('INVALID_WEBHOOK_INPUT', 'secret must be whsec_ + base64 of 32 bytes', 'secret');
  const events = [...new Set(command.events)] as WebhookEventType[];
  return [
    {
      type: 'WebhookRegistered',
      data: {
        webhookId: command.webhookId,
        teamId: command.teamId,
        url: command.url,
        events,
        secret: command.secret,
        at: command.now,
      },
    },
  ];
};

export const decideWebhook = (command: WebhookCommand, state: WebhookState): WebhookEvent[] => {
  if (command.type === 'RegisterWebhook') {
    if (state.status !== 'absent') refuse('WEBHOOK_ALREADY_EXISTS', `webhook ${command.webhookId} already exists`);
    return register(command);
  }
  if (state.status === 'absent' || state.status === 'deleted') return refuse('WEBHOOK_NOT_FOUND', 'no such webhook');
  switch (command.type) {
    case 'RotateWebhookSecret': {
      if (!SECRET.test(command.secret))
        refuse('INVALID_WEBHOOK_INPUT', 'secret must be whsec_ + base64 of 32 bytes', 'secret');
      // Rows keep one previous secret: a second rotation within the overlap would stop the first
      // secret signing at once, though receivers were promised it for 24 hours. So it is refused.
      const open = state.secrets.previous;
      if (open && Date.parse(open.validUntil) > Date.parse(command.now))
        refuse(
          'WEBHOOK_ROTATION_OVERLAP',
          `the secret was rotated less than 24 hours ago and the previous one signs until ${open.validUntil}: rotate again after then`,
        );
      const previousValidUntil = new Date(Date.parse(command.now) + ROTATION_OVERLAP_MS).toISOString();
      return [
        {
          type: 'WebhookSecretRotated',
          data: { secret: command.secret, previousSecret: state.secrets.current, previousValidUntil, at: command.now },
        },
      ];
    }
    case 'RequestWebhookTest':
      if (state.status === 'disabled')
        refuse('WEBHOOK_DISABLED', 'the webhook is disabled (its receiver answered 410 Gone); register it again');
      return [
        { type: 'WebhookTestRequested', data: { testId: command.testId, teamId: state.teamId, at: command.now } },
      ];
    case 'DisableWebhook':
      if (state.status === 'disabled') return [];
      return [{ type: 'WebhookDisabled', data: { reason: command.reason, at: command.now } }];
    case 'DeleteWebhook':
      return [{ type: 'WebhookDeleted', data: { at: command.now } }];
    default: {
      const unhandled: never = command;
      throw new Error(`unknown webhook command ${JSON.stringify(unhandled)}`);
    }
  }
};

export const evolveWebhook = (state: WebhookState, event: WebhookEvent): WebhookState => {
  if (event.type === 'WebhookRegistered') {
    const { webhookId, teamId, url, events, secret, at } = event.data;
    return { status: 'active', webhookId, teamId, url, events, secrets: { current: secret }, createdAt: at };
  }
  if (state.status !== 'active' && state.status !== 'disabled') return state;
  switch (event.type) {
    case 'WebhookSecretRotated':
      return {
        ...state,
        secrets: {
          current: event.data.secret,
          previous: { secret: event.data.previousSecret, validUntil: event.data.previousValidUntil },
        },
      };
    case 'WebhookTestRequested':
      return state;
    case 'WebhookDisabled':
      return { ...state, status: 'disabled' };
    case 'WebhookDeleted':
      return { status: 'deleted', webhookId: state.webhookId, teamId: state.teamId };
    default: {
      const unhandled: never = event;
      throw new Error(`unknown webhook event ${JSON.stringify(unhandled)}`);
    }
  }
};

export const initialWebhookState: WebhookState = { status: 'absent' };

/** The Webhook aggregate: stream `webhook-{webhookId}`. */
export const webhookDecider: Decider<WebhookCommand, WebhookState, WebhookEvent> = {
  decide: decideWebhook,
  evolve: evolveWebhook,
  initialState: initialWebhookState,
};
