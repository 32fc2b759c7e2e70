/**
 * Which addresses an uptime check may connect to. Private, loopback, link-local, CGNAT, multicast and
 * other special-purpose ranges are refused unless the operator allows them
 * (`SIGHTLINE_MONITOR_ALLOW_PRIVATE`: comma-separated CIDRs or addresses, or `all`), so a monitor URL
 * cannot be used to probe the server's own network. Checked on the address actually connected to.
 */
import { BlockList, isIP } from 'node:net';

const SPECIAL_V4 = [
  ['0.0.0.0', 8], ['10.0.0.0', 8], ['100.64.0.0', 10], ['127.0.0.0', 8], ['169.254.0.0', 16], ['172.16.0.0', 12],
  ['192.0.0.0', 24], ['192.0.2.0', 24], ['192.168.0.0', 16], ['198.18.0.0', 15], ['198.51.100.0', 24], ['203.0.113.0', 24],
  ['224.0.0.0', 4], ['240.0.0.0', 4],
] as const;
// ::ffff:0:0/96 (IPv4-mapped) is not listed: BlockList matches IPv4 addresses against it; check() maps them itself.
const SPECIAL_V6 = [
  ['::', 128], ['::1', 128], ['64:ff9b::', 96], ['100::', 64], ['2001:db8::', 32], ['fc00::', 7], ['fe80::', 10], ['ff00::', 8],
] as const;

const special = new BlockList();
for (const [a, p] of SPECIAL_V4) special.addSubnet(a, p, 'ipv4');
for (const [a, p] of SPECIAL_V6) special.addSubnet(a, p, 'ipv6');

export interface AddressPolicy {
  /** null when allowed, else the reason. */
  check(address: string): string | null;
}

/** Parses the allow list; throws on an entry that is not an address or CIDR. */
/** `setting` names the variable that allows more (said in refusals and errors). */
export function createAddressPolicy(allow: string, setting = 'SIGHTLINE_MONITOR_ALLOW_PRIVATE'): AddressPolicy {
  const entries = allow.split(',').map((s) => s.trim()).filter(Boolean);
  const all = entries.some((e) => e.toLowerCase() === 'all' || e === '*');
  const allowed = new BlockList();
  for (const e of entries) {
    if (e.toLowerCase() === 'all' || e === '*') continue;
    const [addr, prefixText] = e.split('/');
    const family = isIP(addr!);
    if (!family) throw new Error(`${setting}: \`${e}\` is not an address or CIDR`);
    const type = family === 4 ? 'ipv4' : 'ipv6';
    if (prefixText === undefined) allowed.addAddress(addr!, type);
    else allowed.addSubnet(addr!, Number(prefixText), type);
  }
  return {
    check(address) {
      const family = isIP(address);
      if (!family) return `\`${address}\` is not an IP address`;
      const type = family === 4 ? 'ipv4' : 'ipv6';
      let v4mapped: string | null = null;
      const m = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
      if (m) v4mapped = m[1]!;
      const isSpecial = v4mapped ? special.check(v4mapped, 'ipv4') : special.check(address, type);
      if (!isSpecial || all) return null;
      if (v4mapped ? allowed.check(v4mapped, 'ipv4') : allowed.check(address, type)) return null;
      return `${address} is a private or special-purpose address; allow it with ${setting}`;
    },
  };
}
