package acl

import (
	"net/netip"
	"strconv"
	"strings"
)

// AddrMatcher is a compiled whiteRemoteAddress / globalWhiteRemoteAddresses
// entry (Java's RemoteAddressStrategy).
type AddrMatcher interface {
	// Match reports whether the peer address a (unmapped) is covered.
	Match(a netip.Addr) bool
}

type matchAll struct{}

func (matchAll) Match(netip.Addr) bool { return true }

type matchNone struct{}

func (matchNone) Match(netip.Addr) bool { return false }

// matchSet is Java's Multiple and One strategies: a set of exact addresses.
type matchSet []netip.Addr

func (m matchSet) Match(a netip.Addr) bool {
	a = a.Unmap()
	for _, b := range m {
		if a == b {
			return true
		}
	}
	return false
}

// matchRange is Java's RangeRemoteAddressStrategy for IPv4: the first octets
// fixed, octet idx in [lo, hi], the rest anything.
type matchRange struct {
	head   [4]byte
	idx    int
	lo, hi int
}

func (m matchRange) Match(a netip.Addr) bool {
	a = a.Unmap()
	if !a.Is4() {
		return false
	}
	b := a.As4()
	for i := 0; i < m.idx; i++ {
		if b[i] != m.head[i] {
			return false
		}
	}
	v := int(b[m.idx])
	return v >= m.lo && v <= m.hi
}

// ParseAddrPattern compiles one address pattern as RemoteAddressStrategyFactory
// does: blank matches nothing; "*" (and "*.*.*.*", "*:*:*:*:*:*:*:*") matches
// everything; "192.168.1.{1,2,3}" and "a,b,c" are sets of addresses;
// "192.168.*.*", "192.168.1.1-100", "10.1-9.*.*" are IPv4 ranges; anything else
// must be one IPv4 or IPv6 address. Ranges over IPv6 are not supported.
func ParseAddrPattern(s string) (AddrMatcher, error) {
	s = strings.TrimSpace(s)
	switch s {
	case "":
		return matchNone{}, nil
	case "*", "*.*.*.*", "*:*:*:*:*:*:*:*":
		return matchAll{}, nil
	}
	if strings.HasSuffix(s, "}") {
		open := strings.LastIndexByte(s, '{')
		if open < 0 {
			return nil, javaErr("MultipleRemoteAddressStrategy netAddress examine scope Exception netAddress: %s", s)
		}
		head := s[:open]
		var set matchSet
		for _, tail := range strings.Split(s[open+1:len(s)-1], ",") {
			a, err := parseAddr(head + strings.TrimSpace(tail))
			if err != nil {
				return nil, err
			}
			set = append(set, a)
		}
		return set, nil
	}
	if strings.Contains(s, ",") {
		var set matchSet
		for _, p := range strings.Split(s, ",") {
			if p = strings.TrimSpace(p); p == "" {
				continue
			}
			a, err := parseAddr(p)
			if err != nil {
				return nil, err
			}
			set = append(set, a)
		}
		return set, nil
	}
	if strings.ContainsAny(s, "*-") {
		return parseRange(s)
	}
	a, err := parseAddr(s)
	if err != nil {
		return nil, err
	}
	return matchSet{a}, nil
}

func parseAddr(s string) (netip.Addr, error) {
	a, err := netip.ParseAddr(s)
	if err != nil || a.Zone() != "" {
		return netip.Addr{}, javaErr("NetAddress examine Exception netAddress is %s", s)
	}
	return a.Unmap(), nil
}

func parseRange(s string) (AddrMatcher, error) {
	parts := strings.Split(s, ".")
	if len(parts) != 4 {
		return nil, javaErr("RangeRemoteAddressStrategy netAddress examine scope Exception netAddress: %s (IPv4 only)", s)
	}
	var m matchRange
	m.idx = -1
	for i, p := range parts {
		p = strings.TrimSpace(p)
		if m.idx >= 0 {
			// After the range every part must be '*' (AclUtils.verify).
			if p != "*" {
				return nil, javaErr("RangeRemoteAddressStrategy netAddress examine scope Exception netAddress: %s", s)
			}
			continue
		}
		switch {
		case p == "*":
			m.idx, m.lo, m.hi = i, 0, 255
		case strings.Contains(p, "-"):
			lo, hi, _ := strings.Cut(p, "-")
			l, err1 := strconv.Atoi(lo)
			h, err2 := strconv.Atoi(hi)
			if err1 != nil || err2 != nil || l < 0 || h > 255 || l > h {
				return nil, javaErr("RangeRemoteAddressStrategy netAddress examine scope Exception value %s", p)
			}
			m.idx, m.lo, m.hi = i, l, h
		default:
			v, err := strconv.Atoi(p)
			if err != nil || v < 0 || v > 255 {
				return nil, javaErr("NetAddress examine Exception netAddress is %s", s)
			}
			m.head[i] = byte(v)
		}
	}
	if m.idx <= 0 {
		// Java looks for the range in the 2nd to 4th part only.
		return nil, javaErr("RangeRemoteAddressStrategy netAddress examine scope Exception netAddress: %s", s)
	}
	return m, nil
}
