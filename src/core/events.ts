/**
 * Why this file: domains must react to each other without calling each other's internals. Ingestion
 * and operations publish domain events here (a Sentry check-in arrived, a monitor went down or
 * recovered, an incident opened); monitors, the in-project agent's signals, automations and alerts
 * subscribe. In-process and synchronous: `publish` runs every subscriber before it returns, after the
 * publisher's write has committed; a failing subscriber is reported and never breaks the publisher or
 * the other subscribers.
 */

import type { GroupChange } from '../storage/errors-repo.js';

export type DomainEvent =
  | { type: 'checkin.received'; projectId: string; at: number; checkIn: Record<string, unknown> }
  | { type: 'monitor.down'; projectId: string; at: number; monitorId: string; monitorName: string; reason: string; incidentId: string | null }
  | { type: 'monitor.degraded'; projectId: string; at: number; monitorId: string; monitorName: string; reason: string }
  | { type: 'monitor.recovered'; projectId: string; at: number; monitorId: string; monitorName: string; downForMs: number; incidentId: string | null }
  | { type: 'incident.opened'; projectId: string; at: number; incidentId: string; displayId: string; title: string }
  | { type: 'incident.updated'; projectId: string; at: number; incidentId: string; displayId: string; status: string }
  | { type: 'incident.resolved'; projectId: string; at: number; incidentId: string; displayId: string }
  /** Ingest created a group (its first event) or a resolved group got a new event; after commit. */
  | ({ type: 'error.group.created' | 'error.group.reopened'; projectId: string; at: number } & GroupChange)
  /** A group's events in the last minutes far above its usual rate (published by the spike detector). */
  | { type: 'error.spike'; projectId: string; at: number; groupId: string; shortId: string; title: string; count: number; baseline: number; windowMinutes: number }
  /** A release's health verdict turned `regressed` (published once per release by the release watcher). */
  | { type: 'release.regressed'; projectId: string; at: number; releaseId: string; service: string; environment: string; version: string; reasons: string[] }
  /** Feedback was stored (REST or the Sentry SDK); after commit. */
  | { type: 'feedback.received'; projectId: string; at: number; feedbackId: string; message: string; errorGroupId: string | null };

export type DomainEventType = DomainEvent['type'];
type EventOf<T extends DomainEventType> = Extract<DomainEvent, { type: T }>;

export interface EventBus {
  publish(event: DomainEvent): void;
  /** Subscribes to one type, or to every event with '*'. Returns the unsubscribe function. */
  subscribe<T extends DomainEventType>(type: T, fn: (e: EventOf<T>) => void): () => void;
  subscribe(type: '*', fn: (e: DomainEvent) => void): () => void;
  /** Called with a subscriber's error (the server logs it). */
  onError: (err: unknown, event: DomainEvent) => void;
}

export function createEventBus(): EventBus {
  const subs = new Map<string, Set<(e: DomainEvent) => void>>();
  const bus: EventBus = {
    onError: () => {},
    publish(event) {
      for (const key of [event.type, '*']) {
        for (const fn of subs.get(key) ?? []) {
          try {
            fn(event);
          } catch (err) {
            bus.onError(err, event);
          }
        }
      }
    },
    subscribe(type: string, fn: (e: never) => void) {
      let set = subs.get(type);
      if (!set) subs.set(type, (set = new Set()));
      set.add(fn as (e: DomainEvent) => void);
      return () => set!.delete(fn as (e: DomainEvent) => void);
    },
  };
  return bus;
}
