import { test } from 'node:test';
import { webhookDecider, type RegisterWebhook } from '../../../../shared/domain/webhook/webhook-decider.ts';
import type { WebhookEvent } from '../../../../shared/domain/webhook/webhook-events.ts';
import { deciderSpec } from '../../../support/decider-spec.ts';

const { given } = deciderSpec(webhookDecider);
const SECRET = `whsec_${Buffer.alloc(32, 1).toString('base64')}`;
const NEW_SECRET = `whsec_${Buffer.alloc(32, 2).toString('base64')}`;
const NOW = '2026-11-25T12:00:00.000Z';
const register: RegisterWebhook = {
  type: 'RegisterWebhook',
  webhookId: 'w1',
  teamId: 't1',
  url: 'https://hooks.example.com/in',
  events: ['call.completed', 'call.completed', 'call.erased'],
  secret: SECRET,
  now: NOW,
};
const registered: WebhookEvent = {
  type: 'WebhookRegistered',
  data: {
    webhookId: 'w1',
    teamId: 't1',
    url: 'https://hooks.example.com/in',
    events: ['call.completed', 'call.erased'],
    secret: SECRET,
    at: NOW,
  },
};

test('register: an http(s) URL and known event types (duplicates folded) make WebhookRegistered', () => {
  given([]).when(register).then([registered]);
  given([registered]).when(register).thenThrows('WEBHOOK_ALREADY_EXISTS');
});

test('register refuses other schemes, credentials, long URLs, unknown or no events, and a secret not of the form', () => {
  for (const url of [
    'ftp://example.com/x',
    'https://user:pw@example.com/',
    'example.com/hook',
    `https://example.com/${'a'.repeat(2048)}`,
  ]) {
    given([])
      .when({ ...register, url })
      .thenThrows('INVALID_WEBHOOK_INPUT');
  }
  given([])
    .when({ ...register, events: [] })
    .thenThrows('INVALID_WEBHOOK_INPUT');
  given([])
    .when({ ...register, events: ['call.submitted'] })
    .thenThrows('INVALID_WEBHOOK_INPUT');
  given([])
    .when({ ...register, secret: 'whsec_short' })
    .thenThrows('INVALID_WEBHOOK_INPUT');
});

test('rotate: the previous secret keeps signing for 24 hours', () => {
  given([registered])
    .when({ type: 'RotateWebhookSecret', secret: NEW_SECRET, now: NOW })
    .then([
      {
        type: 'WebhookSecretRotated',
        data: { secret: NEW_SECRET, previousSecret: SECRET, previousValidUntil: '2026-11-26T12:00:00.000Z', at: NOW },
      },
    ]);
});

test('rotate again within the 24 hours: refused, so the first secret keeps signing; after them, taken', () => {
  const rotated: WebhookEvent = {
    type: 'WebhookSecretRotated',
    data: { secret: NEW_SECRET, previousSecret: SECRET, previousValidUntil: '2026-11-26T12:00:00.000Z', at: NOW },
  };
  const third = `whsec_${Buffer.alloc(32, 3).toString('base64')}`;
  given([registered, rotated])
    .when({ type: 'RotateWebhookSecret', secret: third, now: '2026-11-26T11:59:59.999Z' })
    .thenThrows('WEBHOOK_ROTATION_OVERLAP');
  given([registered, rotated])
    .when({ type: 'RotateWebhookSecret', secret: third, now: '2026-11-26T12:00:00.000Z' })
    .then([
      {
        type: 'WebhookSecretRotated',
        data: {
          secret: third,
          previousSecret: NEW_SECRET,
          previousValidUntil: '2026-11-27T12:00:00.000Z',
          at: '2026-11-26T12:00:00.000Z',
        },
      },
    ]);
});

test('a disabled webhook takes no test; disabling twice changes nothing; a deleted one is not found', () => {
  const disabled: WebhookEvent = { type: 'WebhookDisabled', data: { reason: 'gone', at: NOW } };
  given([registered])
    .when({ type: 'RequestWebhookTest', testId: 'x', now: NOW })
    .then([{ type: 'WebhookTestRequested', data: { testId: 'x', teamId: 't1', at: NOW } }]);
  given([registered, disabled])
    .when({ type: 'RequestWebhookTest', testId: 'x', now: NOW })
    .thenThrows('WEBHOOK_DISABLED');
  given([registered, disabled]).when({ type: 'DisableWebhook', reason: 'gone', now: NOW }).thenNothing();
  const deleted: WebhookEvent = { type: 'WebhookDeleted', data: { at: NOW } };
  given([registered, deleted]).when({ type: 'DeleteWebhook', now: NOW }).thenThrows('WEBHOOK_NOT_FOUND');
  given([]).when({ type: 'DeleteWebhook', now: NOW }).thenThrows('WEBHOOK_NOT_FOUND');
});
