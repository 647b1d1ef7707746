package packetsim

import (
	"encoding/binary"
	"fmt"
	"net/netip"
	"strconv"
)

// allocator hands out aligned blocks from the seed's address pools. Freed
// blocks are reused first, so long benchmarks do not exhaust a pool.
type allocator struct {
	// Next is the next free offset (in addresses) per pool prefix.
	Next map[string]uint64 `json:"next"`
	// Free holds released block networks per "pool|cidr".
	Free map[string][]string `json:"free"`
	// Small is the IPv6 /64 that blocks smaller than /64 are carved from.
	Small map[string]string `json:"small,omitempty"`
}

func newAllocator() allocator {
	return allocator{Next: map[string]uint64{}, Free: map[string][]string{}}
}

// addrAdd adds n to the low 64 bits of a (enough for every pool we carve).
func addrAdd(a netip.Addr, n uint64) netip.Addr {
	if a.Is4() {
		b := a.As4()
		v := binary.BigEndian.Uint32(b[:]) + uint32(n)
		binary.BigEndian.PutUint32(b[:], v)
		return netip.AddrFrom4(b)
	}
	b := a.As16()
	v := binary.BigEndian.Uint64(b[8:]) + n
	binary.BigEndian.PutUint64(b[8:], v)
	return netip.AddrFrom16(b)
}

// alloc returns the network address of a free /cidr block in pool.
func (a *allocator) alloc(pool string, cidr int) (netip.Addr, error) {
	prefix, err := netip.ParsePrefix(pool)
	if err != nil {
		return netip.Addr{}, err
	}
	key := pool + "|" + strconv.Itoa(cidr)
	if free := a.Free[key]; len(free) > 0 {
		a.Free[key] = free[:len(free)-1]
		return netip.ParseAddr(free[len(free)-1])
	}
	if cidr < prefix.Bits() || cidr > prefix.Addr().BitLen() {
		return netip.Addr{}, fmt.Errorf("cannot carve a /%d from %s", cidr, pool)
	}
	if prefix.Addr().Is4() {
		// Packet never hands out a network's own network or broadcast address: counting starts
		// one address in and stops one short of the end.
		if a.Next[pool] == 0 {
			a.Next[pool] = 1
		}
		off, err := a.bump(pool, 32-cidr, uint64(1)<<(32-prefix.Bits())-1)
		return addrAdd(prefix.Masked().Addr(), off), err
	}
	// IPv6: blocks of /64 or larger are counted in /64 units in the upper
	// half; smaller blocks come from one /64 set aside for them.
	if cidr <= 64 {
		off, err := a.bump(pool, 64-cidr, units(64-prefix.Bits()))
		return addrAddHigh(prefix.Masked().Addr(), off), err
	}
	base, ok := a.Small[pool]
	if !ok {
		b, err := a.alloc(pool, 64)
		if err != nil {
			return netip.Addr{}, err
		}
		base = b.String()
		if a.Small == nil {
			a.Small = map[string]string{}
		}
		a.Small[pool] = base
	}
	off, err := a.bump(pool+"|small", 128-cidr, 0)
	baseAddr, _ := netip.ParseAddr(base)
	return addrAdd(baseAddr, off), err
}

// bump reserves an aligned block of 2^hostBits units from a counter whose blocks must end by
// limit units (0: no limit).
func (a *allocator) bump(key string, hostBits int, limit uint64) (uint64, error) {
	size := uint64(1) << hostBits
	next := (a.Next[key] + size - 1) / size * size
	if limit > 0 && next+size > limit {
		return 0, fmt.Errorf("address pool %s is exhausted", key)
	}
	a.Next[key] = next + size
	return next, nil
}

// units is 2^bits, or 0 (no limit) when that does not fit in a counter.
func units(bits int) uint64 {
	if bits >= 64 {
		return 0
	}
	return uint64(1) << bits
}

// addrAddHigh adds n to the upper 64 bits of an IPv6 address.
func addrAddHigh(a netip.Addr, n uint64) netip.Addr {
	b := a.As16()
	binary.BigEndian.PutUint64(b[:8], binary.BigEndian.Uint64(b[:8])+n)
	return netip.AddrFrom16(b)
}

func (a *allocator) free(pool string, cidr int, network string) {
	if network == "" {
		return
	}
	key := pool + "|" + strconv.Itoa(cidr)
	a.Free[key] = append(a.Free[key], network)
}

// netmask renders the mask of a /cidr in the family of addr.
func netmask(addr netip.Addr, cidr int) string {
	if addr.Is4() {
		m := ^uint32(0) << (32 - cidr)
		if cidr == 0 {
			m = 0
		}
		var b [4]byte
		binary.BigEndian.PutUint32(b[:], m)
		return netip.AddrFrom4(b).String()
	}
	var b [16]byte
	for i := 0; i < cidr; i++ {
		b[i/8] |= 0x80 >> (i % 8)
	}
	return netip.AddrFrom16(b).String()
}
