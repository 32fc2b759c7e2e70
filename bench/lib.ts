/** Small helpers the benchmark scripts share. */
import { createServer } from 'node:net';

/** A free TCP port on loopback. */
export const freePort = () =>
  new Promise<number>((resolve) => {
    const s = createServer();
    s.listen(0, '127.0.0.1', () => {
      const p = (s.address() as { port: number }).port;
      s.close(() => resolve(p));
    });
  });

/** Deterministic PRNG (mulberry32) so every run seeds the same shape. */
export function rng(seed: number) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

type AnyValue = { stringValue: string } | { intValue: number } | { doubleValue: number } | { boolValue: boolean };

/** An OTLP KeyValue for protobufjs `fromObject`. */
export const attr = (key: string, v: string | number | boolean) => ({
  key,
  value: (typeof v === 'string' ? { stringValue: v } : typeof v === 'boolean' ? { boolValue: v } : Number.isInteger(v) ? { intValue: v } : { doubleValue: v }) as AnyValue,
});
