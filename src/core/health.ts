/**
 * Liveness and readiness for load balancers and orchestrators (`GET /healthz`, `GET /readyz`).
 * Both answer without credentials and say nothing about the data: liveness is "the process answers";
 * readiness runs each registered check (database writable, migrations applied, sandbox pool up) and
 * answers 503 naming the checks that failed. Checks are registered by the pieces that own them.
 */
export type CheckResult = { ok: true; detail?: string } | { ok: false; detail: string };
export type ReadinessCheck = () => CheckResult | Promise<CheckResult>;

export interface Readiness {
  ready: boolean;
  checks: Record<string, { ok: boolean; detail?: string }>;
}

export async function runReadiness(checks: ReadonlyMap<string, ReadinessCheck>): Promise<Readiness> {
  const out: Readiness['checks'] = {};
  for (const [name, check] of checks) {
    try {
      const r = await check();
      out[name] = r.detail ? { ok: r.ok, detail: r.detail } : { ok: r.ok };
    } catch (err) {
      out[name] = { ok: false, detail: (err as Error).message };
    }
  }
  return { ready: Object.values(out).every((c) => c.ok), checks: out };
}
