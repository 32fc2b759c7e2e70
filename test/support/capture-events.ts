import type { CaptureEvent } from '../../src/domain/analytics/capture.js';

/** A capture event as parseCapturePayload makes it (src/domain/analytics/capture.ts). */
export function captureEvent(distinctId: string, ts: number, extra: Partial<CaptureEvent> = {}): CaptureEvent {
  return {
    uuid: null, event: '$pageview', distinct_id: distinctId, ts, session_id: null, url: null, pathname: null, referrer: null,
    utm_source: null, utm_medium: null, utm_campaign: null, merge_from: null, replay_id: null, properties: {}, ...extra,
  };
}
