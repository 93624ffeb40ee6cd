/**
 * Whether an IP address is one a server may fetch from on a stranger's behalf: a public unicast address. Refused are
 * the host's own (loopback, unspecified), its networks' (RFC 1918, CGNAT's 100.64/10, IPv6 unique local fc00::/7,
 * link-local 169.254/16 and fe80::/10, where cloud metadata services answer at 169.254.169.254), multicast, broadcast,
 * and the reserved, benchmarking and documentation ranges. An IPv6 address that carries an IPv4 one (IPv4-mapped
 * ::ffff:0:0/96, NAT64's 64:ff9b::/96, 6to4's 2002::/16) is judged by the IPv4 address it carries, so that
 * `::ffff:127.0.0.1` is loopback; other IPv6 addresses must be global unicast (2000::/3) outside Teredo and the IETF's
 * and documentation's blocks. Text that is no IP address (a zone index is ignored) is not public.
 *
 * Judged with no DNS: the caller resolves a name first and judges every address it resolves to.
 *
 * @example
 * isPublicAddress('93.184.215.14'); // true
 * isPublicAddress('169.254.169.254'); // false: link-local, the cloud metadata service
 * isPublicAddress('::ffff:10.0.0.1'); // false: an IPv4-mapped private address
 * @see https://www.iana.org/assignments/iana-ipv4-special-registry/
 * @see https://www.iana.org/assignments/iana-ipv6-special-registry/
 */
export function isPublicAddress(address: string): boolean {
  const bare = address.replace(/^\[(.*)\]$/, '$1').replace(/%.*$/, '');
  const v4 = parseIPv4(bare);
  if (v4) return isPublicIPv4(v4);
  const v6 = parseIPv6(bare);
  return v6 !== undefined && isPublicIPv6(v6);
}

function isPublicIPv4([a, b, c]: readonly number[]): boolean {
  return !(
    a === 0 || // "this network", 0.0.0.0 among it
    a === 10 ||
    a === 127 ||
    a! >= 224 || // multicast 224/4, reserved 240/4, broadcast 255.255.255.255
    (a === 100 && (b! & 0xc0) === 64) || // CGNAT, 100.64/10
    (a === 169 && b === 254) ||
    (a === 172 && (b! & 0xf0) === 16) ||
    (a === 192 && b === 168) ||
    (a === 192 && b === 0 && (c === 0 || c === 2)) || // IETF protocol assignments; TEST-NET-1
    (a === 192 && b === 88 && c === 99) || // 6to4 relay anycast
    (a === 198 && (b === 18 || b === 19)) || // benchmarking, 198.18/15
    (a === 198 && b === 51 && c === 100) || // TEST-NET-2
    (a === 203 && b === 0 && c === 113) // TEST-NET-3
  );
}

function isPublicIPv6(v6: Uint8Array): boolean {
  const zeros = (from: number, to: number) => v6.subarray(from, to).every((byte) => byte === 0);
  const carried = (at: number) => Array.from(v6.subarray(at, at + 4));
  if (zeros(0, 10) && v6[10] === 0xff && v6[11] === 0xff) return isPublicIPv4(carried(12)); // IPv4-mapped
  if (v6[0] === 0x00 && v6[1] === 0x64 && v6[2] === 0xff && v6[3] === 0x9b && zeros(4, 12)) {
    return isPublicIPv4(carried(12)); // NAT64's well-known prefix
  }
  if ((v6[0]! & 0xe0) !== 0x20) return false; // not global unicast: ULA, link-local, multicast, ::, ::1, …
  if (v6[0] === 0x20 && v6[1] === 0x02) return isPublicIPv4(carried(2)); // 6to4
  if (v6[0] === 0x20 && v6[1] === 0x01 && v6[2]! < 0x02) return false; // IETF protocol assignments, Teredo among them
  if (v6[0] === 0x20 && v6[1] === 0x01 && v6[2] === 0x0d && v6[3] === 0xb8) return false; // documentation
  if (v6[0] === 0x3f && v6[1] === 0xff && v6[2]! < 0x10) return false; // documentation, 3fff::/20
  return true;
}

/** Four octets of a dotted quad, each 0–255 in decimal without leading zeros (as DNS and URL.hostname give them). */
function parseIPv4(text: string): number[] | undefined {
  const parts = text.split('.');
  if (parts.length !== 4 || !parts.every((part) => /^(0|[1-9]\d{0,2})$/.test(part))) return undefined;
  const octets = parts.map(Number);
  return octets.every((octet) => octet <= 255) ? octets : undefined;
}

/** The 16 bytes of an IPv6 address in text: eight hex groups, one `::` run of zeros, an IPv4 tail. */
function parseIPv6(text: string): Uint8Array | undefined {
  const halves = text.split('::');
  if (halves.length > 2) return undefined;
  const groupsOf = (half: string): number[] | undefined => {
    if (half === '') return [];
    const groups: number[] = [];
    const parts = half.split(':');
    for (const [i, part] of parts.entries()) {
      if (i === parts.length - 1 && part.includes('.')) {
        const v4 = parseIPv4(part);
        if (!v4) return undefined;
        groups.push((v4[0]! << 8) | v4[1]!, (v4[2]! << 8) | v4[3]!);
      } else if (/^[0-9a-f]{1,4}$/i.test(part)) {
        groups.push(parseInt(part, 16));
      } else {
        return undefined;
      }
    }
    return groups;
  };
  const head = groupsOf(halves[0]!);
  const tail = halves.length === 2 ? groupsOf(halves[1]!) : [];
  if (!head || !tail) return undefined;
  const missing = 8 - head.length - tail.length;
  if (halves.length === 2 ? missing < 1 : missing !== 0) return undefined;
  const groups = [...head, ...new Array<number>(missing).fill(0), ...tail];
  const bytes = new Uint8Array(16);
  groups.forEach((group, i) => {
    bytes[2 * i] = group >> 8;
    bytes[2 * i + 1] = group & 0xff;
  });
  return bytes;
}
