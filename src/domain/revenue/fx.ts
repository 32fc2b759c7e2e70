/**
 * Currency maths for the revenue reads: ISO 4217 minor units and a bundled reference-rate table.
 *
 * The table holds approximate euro rates (units of each currency per 1 EUR) around the date it names,
 * rounded and written by hand — not official ECB reference figures; `source` says so in every answer. It is bundled so reads never depend on a network call; amounts in a
 * currency missing from it appear in `by_currency` but not in converted totals (spec, Revenue:
 * `fx.missing_currencies`). Replace the snapshot (and its date) to refresh it.
 */
export const FX_TABLE = {
  source: 'bundled approximate euro rates (rounded, written by hand; not official ECB reference figures)',
  date: '2025-01-02',
  base: 'EUR',
  /** Units of the currency per 1 EUR. */
  rates: {
    EUR: 1,
    USD: 1.035,
    JPY: 163.0,
    GBP: 0.83,
    CHF: 0.94,
    CAD: 1.49,
    AUD: 1.66,
    NZD: 1.84,
    SEK: 11.5,
    NOK: 11.8,
    DKK: 7.46,
    PLN: 4.27,
    CZK: 25.2,
    HUF: 411.0,
    RON: 4.97,
    BGN: 1.9558,
    ISK: 144.0,
    TRY: 36.7,
    BRL: 6.4,
    MXN: 21.5,
    CNY: 7.57,
    HKD: 8.05,
    SGD: 1.41,
    INR: 88.8,
    IDR: 16800,
    KRW: 1530,
    MYR: 4.64,
    PHP: 60.0,
    THB: 35.6,
    ILS: 3.78,
    ZAR: 19.5,
  } as Record<string, number>,
} as const;

/** ISO 4217 exponents that are not 2 (the default). */
const EXPONENTS: Record<string, number> = {
  BIF: 0, CLP: 0, DJF: 0, GNF: 0, ISK: 0, JPY: 0, KMF: 0, KRW: 0, PYG: 0, RWF: 0, UGX: 0, UYI: 0, VND: 0, VUV: 0, XAF: 0, XOF: 0, XPF: 0,
  BHD: 3, IQD: 3, JOD: 3, KWD: 3, LYD: 3, OMR: 3, TND: 3,
};

export function minorUnitExponent(currency: string): number {
  return EXPONENTS[currency.toUpperCase()] ?? 2;
}

/** Smallest-unit integer → decimal amount in the same currency. */
export function toMajor(amountMinor: number, currency: string): number {
  return amountMinor / 10 ** minorUnitExponent(currency);
}

export function hasRate(currency: string): boolean {
  return FX_TABLE.rates[currency.toUpperCase()] !== undefined;
}

/**
 * Convert a smallest-unit amount of `from` into a decimal amount of `to` through the table's base.
 * null when either currency has no rate.
 */
export function convertMinor(amountMinor: number, from: string, to: string): number | null {
  const f = FX_TABLE.rates[from.toUpperCase()];
  const t = FX_TABLE.rates[to.toUpperCase()];
  if (f === undefined || t === undefined) return null;
  return (toMajor(amountMinor, from) / f) * t;
}

/**
 * `convertMinor(·, ·, to)` with the per-currency look-ups done once: the same operations in the same
 * order, so every result is bit-for-bit equal to convertMinor's (reads that convert row by row).
 */
export function converterTo(to: string): (amountMinor: number, from: string) => number | null {
  const t = FX_TABLE.rates[to.toUpperCase()];
  const per = new Map<string, { p: number; f: number } | null>();
  return (amountMinor, from) => {
    let c = per.get(from);
    if (c === undefined) {
      const f = FX_TABLE.rates[from.toUpperCase()];
      per.set(from, (c = f === undefined || t === undefined ? null : { p: 10 ** minorUnitExponent(from), f }));
    }
    return c === null ? null : (amountMinor / c.p / c.f) * t!;
  };
}

/**
 * One ledger amount in the reporting currency, in its minor units, rounded per row (as payment
 * processors report a converted transaction): half away from zero, so a refund cancels its payment
 * exactly. Sums of these integers are exact whatever their order, which is what lets the daily rollup
 * and every read add them up in any grouping. null when either currency has no rate.
 */
export function toReportingMinor(amountMinor: number, from: string, to: string): number | null {
  return reportingMinorOf(to)(amountMinor, from);
}

/** `toReportingMinor(·, ·, to)` with the per-currency factors looked up once. */
export function reportingMinorOf(to: string): (amountMinor: number, from: string) => number | null {
  const T = to.toUpperCase();
  const conv = converterTo(T);
  const p = 10 ** minorUnitExponent(T);
  return (amountMinor, from) => {
    if (from === T) return amountMinor;
    const v = conv(amountMinor, from);
    if (v === null) return null;
    const x = Math.abs(v) * p;
    // The relative nudge undoes binary representation error (1.005 × 100 = 100.49999999999999).
    const r = Math.round(x + x * 1e-12);
    return r === 0 ? 0 : v < 0 ? -r : r;
  };
}

/** Round a decimal amount to the reporting currency's minor unit. */
export function roundMoney(amount: number, currency: string): number {
  const p = 10 ** minorUnitExponent(currency);
  const r = Math.round((amount + Number.EPSILON * Math.sign(amount)) * p) / p;
  return Object.is(r, -0) ? 0 : r;
}

/** Sums per currency (smallest units) converted and added in `to`; currencies without a rate are listed apart. */
export function convertTotals(perCurrency: ReadonlyMap<string, number>, to: string): { total: number; missing: string[] } {
  let total = 0;
  const missing: string[] = [];
  for (const [cur, minor] of perCurrency) {
    const v = convertMinor(minor, cur, to);
    if (v === null) missing.push(cur);
    else total += v;
  }
  return { total: roundMoney(total, to), missing: missing.sort() };
}

export const ISO_CURRENCY = /^[A-Za-z]{3}$/;
