import { createRequire } from "node:module";
import type * as IpAddr from "ipaddr.js";

// A CommonJS package whose ESM namespace has no named exports under Node: loaded with require.
const ipaddr = createRequire(import.meta.url)("ipaddr.js") as typeof IpAddr;

/**
 * Which addresses a fetch may connect to: public unicast only, unless an address is in the allow list. Refused:
 * loopback, private (10/8, 172.16/12, 192.168/16, fc00::/7), link-local (169.254/16 — where cloud metadata
 * services answer — and fe80::/10), carrier-grade NAT (100.64/10, where another cloud's metadata answers),
 * unspecified, multicast, broadcast and reserved ranges; an IPv4-mapped IPv6 address is judged as its IPv4 address.
 */
export interface AddressPolicy {
  /** Null when `address` may be connected to, else why not (in words for the model). */
  refusal(address: string): string | null;
}

/** Parses an allow list of addresses and CIDR ranges (`192.168.1.20`, `10.0.0.0/8`, `::1`). */
export function createAddressPolicy(allow: readonly string[] = []): AddressPolicy {
  const ranges = allow.map((entry) => {
    if (entry.includes("/")) return ipaddr.parseCIDR(entry);
    const address = ipaddr.parse(entry);
    return [address, address.kind() === "ipv4" ? 32 : 128] as [IpAddr.IPv4 | IpAddr.IPv6, number];
  });
  return {
    refusal(text) {
      if (!ipaddr.isValid(text)) return `${text} is not an IP address`;
      let address = ipaddr.parse(text);
      if (address.kind() === "ipv6" && (address as IpAddr.IPv6).isIPv4MappedAddress())
        address = (address as IpAddr.IPv6).toIPv4Address();
      for (const [network, bits] of ranges) {
        if (network.kind() === address.kind() && address.match(network, bits)) return null;
      }
      const range = address.range();
      return range === "unicast" ? null : `${text} is a ${describe(range)} address`;
    },
  };
}

function describe(range: string): string {
  switch (range) {
    case "loopback":
      return "loopback";
    case "private":
    case "uniqueLocal":
      return "private network";
    case "linkLocal":
      return "link-local (cloud metadata)";
    case "carrierGradeNat":
      return "carrier-grade NAT";
    default:
      return `non-public (${range})`;
  }
}
