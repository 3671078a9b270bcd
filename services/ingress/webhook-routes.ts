/**
 * Admin API of webhooks (bearer ADMIN_TOKEN): register, list, delete, rotate the secret, ask for
 * a test delivery, list deliveries and deliver one again. Commands go through the Webhook decider
 * (stream `webhook-{webhookId}`); lists read the webhook projection, so a webhook appears in them
 * once the projection has applied its registration (docs/decisions/0012-webhook-outbox.md).
 */
import { randomUUID } from 'node:crypto';
import { isIP } from 'node:net';
import { classifyAddress } from '../../shared/adapters/audio/address-policy.ts';
import { Type } from '@sinclair/typebox';
import { newWebhookSecret } from '../../shared/adapters/webhooks/webhook-signature.ts';
import { ProblemSchema } from '../../shared/domain/submission/submission-schema.ts';
import { type WebhookCommand, webhookDecider, type WebhookState } from '../../shared/domain/webhook/webhook-decider.ts';
import { WEBHOOK_EVENT_TYPES, type WebhookEvent } from '../../shared/domain/webhook/webhook-events.ts';
import { webhookEvents } from '../../shared/domain/webhook/webhook-catalogue.ts';
import type { EventStore } from '../../shared/ports/event-store.ts';
import { InvalidQueryError } from '../../shared/ports/read-models.ts';
import { WEBHOOK_DELIVERY_STATUSES, type WebhookStore } from '../../shared/ports/webhook-store.ts';
import { AggregateRepository } from '../runtime/aggregate-repository.ts';
import type { adminGuard } from './admin-routes.ts';
import { ProblemError } from './errors.ts';
import type { TeamService } from './teams/team-service.ts';
import type { TypedApp } from './typed-app.ts';

export interface WebhookRoutesDeps {
  teams: TeamService;
  eventStore: EventStore;
  webhooks: WebhookStore;
  requireAdmin: ReturnType<typeof adminGuard>;
  now?: () => Date;
  /** WEBHOOK_ALLOW_PRIVATE: accept URLs that name loopback or private addresses. */
  allowPrivate: boolean;
}

/**
 * Why a URL names an address deliveries will never reach, or undefined. Only what the URL itself
 * says (an IP literal, `localhost`): a name is resolved, and checked, at every connection.
 */
const unreachableHost = (url: string): string | undefined => {
  let host: string;
  try {
    // A name's trailing dot (`localhost.`, the fully qualified form) names the same host.
    host = new URL(url).hostname
      .replace(/^\[(.*)\]$/, '$1')
      .toLowerCase()
      .replace(/\.$/, '');
  } catch {
    return undefined; // the decider says why
  }
  if (host === 'localhost' || host.endsWith('.localhost'))
    return 'url names localhost, which deliveries never reach (WEBHOOK_ALLOW_PRIVATE is off)';
  if (isIP(host) && !classifyAddress(host).allowed)
    return `url names ${host}, which is not a public internet address (WEBHOOK_ALLOW_PRIVATE is off)`;
  return undefined;
};

const tags = ['Webhooks'];
const security = [{ adminToken: [] }];
const problems = (...statuses: number[]) => Object.fromEntries(statuses.map((s) => [s, ProblemSchema]));
const Id = Type.String({ minLength: 1, maxLength: 100 });
const TeamParams = Type.Object({ teamId: Id });
const WebhookParams = Type.Object({ teamId: Id, webhookId: Id });
const EventTypes = Type.Array(Type.Union(WEBHOOK_EVENT_TYPES.map((t) => Type.Literal(t))), {
  minItems: 1,
  maxItems: WEBHOOK_EVENT_TYPES.length,
  uniqueItems: true,
});
const Secret = Type.String({
  description: 'whsec_ + base64 of 32 random bytes: shown once; verify deliveries with any Standard Webhooks library.',
});
const Nullable = <T extends Parameters<typeof Type.Union>[0][number]>(schema: T) => Type.Union([schema, Type.Null()]);
const DeliveryView = Type.Object({
  deliveryId: Type.String(),
  webhookId: Type.String(),
  eventId: Type.String({ description: 'The webhook-id header of every attempt.' }),
  type: Type.String(),
  status: Type.Union(WEBHOOK_DELIVERY_STATUSES.map((s) => Type.Literal(s))),
  attempts: Type.Integer(),
  lastStatusCode: Nullable(Type.Integer()),
  lastError: Nullable(Type.String()),
  nextAttemptAt: Nullable(Type.String()),
  deliveredAt: Nullable(Type.String()),
});

export const registerWebhookRoutes = (app: TypedApp, deps: WebhookRoutesDeps): void => {
  const now = deps.now ?? (() => new Date());
  const repository = new AggregateRepository<WebhookCommand, WebhookState, WebhookEvent>(
    deps.eventStore,
    webhookDecider,
    webhookEvents,
  );
  const common = { onRequest: deps.requireAdmin };

  const requireTeam = async (teamId: string) => {
    if (!(await deps.teams.load(teamId)))
      throw new ProblemError('NOT_FOUND', `No team ${teamId}.`, {
        errors: [{ field: 'teamId', message: 'must name an existing team' }],
      });
  };
  /** The webhook's state, when it is this team's and not deleted. */
  const webhookOf = async (teamId: string, webhookId: string) => {
    const { state } = await repository.load(webhookId);
    const found = (state.status === 'active' || state.status === 'disabled') && state.teamId === teamId;
    // A team that does not exist is named as such, not its webhook.
    if (!found) await requireTeam(teamId);
    if (!found)
      throw new ProblemError('NOT_FOUND', `No webhook ${webhookId} in team ${teamId}.`, {
        errors: [{ field: 'webhookId', message: 'must name a webhook of this team' }],
      });
    return state;
  };

  app.post(
    '/api/admin/teams/:teamId/webhooks',
    {
      ...common,
      schema: {
        tags,
        security,
        summary:
          'Register a webhook: signed deliveries (Standard Webhooks) of the chosen events; the secret is shown once',
        params: TeamParams,
        body: Type.Object(
          {
            url: Type.String({ minLength: 1, maxLength: 2048, description: 'http(s) URL of a public address' }),
            events: EventTypes,
          },
          { additionalProperties: false },
        ),
        response: {
          201: Type.Object({
            webhookId: Type.String(),
            url: Type.String(),
            events: Type.Array(Type.String()),
            secret: Secret,
          }),
          ...problems(400, 401, 404),
        },
      },
    },
    async (request, reply) => {
      const { teamId } = request.params;
      const unreachable = deps.allowPrivate ? undefined : unreachableHost(request.body.url);
      if (unreachable)
        throw new ProblemError('VALIDATION_FAILED', unreachable, { errors: [{ field: 'url', message: unreachable }] });
      await requireTeam(teamId);
      const webhookId = randomUUID();
      const secret = newWebhookSecret();
      const { events } = await repository.handle(webhookId, {
        type: 'RegisterWebhook',
        webhookId,
        teamId,
        url: request.body.url,
        events: request.body.events,
        secret,
        now: now().toISOString(),
      });
      const registered = events[0] as Extract<WebhookEvent, { type: 'WebhookRegistered' }>;
      return reply.code(201).send({ webhookId, url: registered.data.url, events: registered.data.events, secret });
    },
  );

  app.get(
    '/api/admin/teams/:teamId/webhooks',
    {
      ...common,
      schema: {
        tags,
        security,
        summary: "The team's webhooks (never their secrets)",
        params: TeamParams,
        response: {
          200: Type.Object({
            webhooks: Type.Array(
              Type.Object({
                webhookId: Type.String(),
                url: Type.String(),
                events: Type.Array(Type.String()),
                status: Type.Union([Type.Literal('active'), Type.Literal('disabled')], {
                  description: 'disabled once its receiver answered 410 Gone',
                }),
                createdAt: Type.String(),
              }),
            ),
          }),
          ...problems(401, 404),
        },
      },
    },
    async (request) => {
      await requireTeam(request.params.teamId);
      const webhooks = await deps.webhooks.list(request.params.teamId);
      return {
        webhooks: webhooks.map(({ webhookId, url, events, status, createdAt }) => ({
          webhookId,
          url,
          events,
          status,
          createdAt,
        })),
      };
    },
  );

  app.delete(
    '/api/admin/teams/:teamId/webhooks/:webhookId',
    {
      ...common,
      schema: {
        tags,
        security,
        summary: 'Delete a webhook: nothing more is delivered to it',
        params: WebhookParams,
        response: { 204: Type.Null(), ...problems(401, 404) },
      },
    },
    async (request, reply) => {
      await webhookOf(request.params.teamId, request.params.webhookId);
      await repository.handle(request.params.webhookId, { type: 'DeleteWebhook', now: now().toISOString() });
      return reply.code(204).send(null);
    },
  );

  app.post(
    '/api/admin/teams/:teamId/webhooks/:webhookId/rotate-secret',
    {
      ...common,
      schema: {
        tags,
        security,
        summary:
          'A new secret; the old one keeps signing alongside it for 24 hours (both signatures in webhook-signature); 409 while an earlier rotation is within those 24 hours',
        params: WebhookParams,
        response: { 200: Type.Object({ secret: Secret }), ...problems(401, 404, 409) },
      },
    },
    async (request) => {
      await webhookOf(request.params.teamId, request.params.webhookId);
      const secret = newWebhookSecret();
      await repository.handle(request.params.webhookId, {
        type: 'RotateWebhookSecret',
        secret,
        now: now().toISOString(),
      });
      return { secret };
    },
  );

  app.post(
    '/api/admin/teams/:teamId/webhooks/:webhookId/test',
    {
      ...common,
      schema: {
        tags,
        security,
        summary: 'Queue a webhook.test delivery to this webhook',
        params: WebhookParams,
        response: {
          202: Type.Object({ eventId: Type.String({ description: 'The webhook-id of the test delivery.' }) }),
          ...problems(401, 404, 409),
        },
      },
    },
    async (request, reply) => {
      await webhookOf(request.params.teamId, request.params.webhookId);
      const testId = randomUUID();
      await repository.handle(request.params.webhookId, {
        type: 'RequestWebhookTest',
        testId,
        now: now().toISOString(),
      });
      return reply.code(202).send({ eventId: testId });
    },
  );

  app.get(
    '/api/admin/teams/:teamId/webhooks/:webhookId/deliveries',
    {
      ...common,
      schema: {
        tags,
        security,
        summary: "The webhook's deliveries, newest first",
        params: WebhookParams,
        querystring: Type.Object(
          {
            status: Type.Optional(Type.Union(WEBHOOK_DELIVERY_STATUSES.map((s) => Type.Literal(s)))),
            limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 100, default: 25 })),
            cursor: Type.Optional(Type.String({ maxLength: 200 })),
          },
          { additionalProperties: false },
        ),
        response: {
          200: Type.Object({ deliveries: Type.Array(DeliveryView), nextCursor: Nullable(Type.String()) }),
          ...problems(400, 401, 404),
        },
      },
    },
    async (request) => {
      await webhookOf(request.params.teamId, request.params.webhookId);
      const { status, limit = 25, cursor } = request.query;
      try {
        return await deps.webhooks.deliveries(request.params.webhookId, { status, limit, cursor });
      } catch (error) {
        if (error instanceof InvalidQueryError)
          throw new ProblemError('VALIDATION_FAILED', error.message, {
            errors: [{ field: error.field, message: error.message }],
          });
        throw error;
      }
    },
  );

  app.post(
    '/api/admin/teams/:teamId/webhooks/:webhookId/deliveries/:deliveryId/redeliver',
    {
      ...common,
      schema: {
        tags,
        security,
        summary: 'Deliver again (now, its retry schedule from the start)',
        params: Type.Object({ teamId: Id, webhookId: Id, deliveryId: Id }),
        response: { 202: Type.Object({ deliveryId: Type.String() }), ...problems(401, 404, 409) },
      },
    },
    async (request, reply) => {
      const webhook = await webhookOf(request.params.teamId, request.params.webhookId);
      if (webhook.status === 'disabled')
        throw new ProblemError(
          'CONFLICT',
          'The webhook is disabled (its receiver answered 410 Gone); register it again.',
          { errors: [{ field: 'webhookId', message: 'must name a webhook that is not disabled' }] },
        );
      if (!(await deps.webhooks.redeliver(request.params.webhookId, request.params.deliveryId, now()))) {
        throw new ProblemError(
          'NOT_FOUND',
          `No delivery ${request.params.deliveryId} of webhook ${request.params.webhookId}.`,
          { errors: [{ field: 'deliveryId', message: 'must name a delivery of this webhook' }] },
        );
      }
      return reply.code(202).send({ deliveryId: request.params.deliveryId });
    },
  );
};
