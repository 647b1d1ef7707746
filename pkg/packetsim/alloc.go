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
	hostBits := prefix.Addr().BitLen() - cidr
	if hostBits < 0 || hostBits > 63 || cidr < prefix.Bits() {
		return netip.Addr{}, fmt.Errorf("cannot carve a /%d from %s", cidr, pool)
	}
	size := uint64(1) << hostBits
	next := (a.Next[pool] + size - 1) / size * size
	poolBits := prefix.Addr().BitLen() - prefix.Bits()
	if poolBits < 64 && next+size > uint64(1)<<poolBits {
		return netip.Addr{}, fmt.Errorf("address pool %s is exhausted", pool)
	}
	a.Next[pool] = next + size
	return addrAdd(prefix.Masked().Addr(), next), nil
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
