package stats

import (
	"sync"
	"sync/atomic"
)

// COWMap is a copy-on-write map of per-series values (atomic counters, atomic
// histograms): a lookup of a known key is one atomic load and a map read, with
// no lock and no allocation, so a hot path can count into it; a new key copies
// the map once under the lock.
type COWMap[K comparable, V any] struct {
	grow sync.Mutex
	m    atomic.Pointer[map[K]*V]
}

// Get returns k's value, made by mk and stored under clone(k) the first time
// (clone copies strings that may alias a request's buffer).
func (c *COWMap[K, V]) Get(k K, clone func(K) K, mk func() *V) *V {
	return cowGet(&c.m, &c.grow, k, clone, mk)
}

// Drop removes the keys drop matches.
func (c *COWMap[K, V]) Drop(drop func(K) bool) {
	c.grow.Lock()
	defer c.grow.Unlock()
	cowDrop(&c.m, drop, nil)
}

// Range calls f for each key and value of the current map.
func (c *COWMap[K, V]) Range(f func(K, *V)) {
	if m := c.m.Load(); m != nil {
		for k, v := range *m {
			f(k, v)
		}
	}
}

// Len is the number of keys.
func (c *COWMap[K, V]) Len() int {
	if m := c.m.Load(); m != nil {
		return len(*m)
	}
	return 0
}

// cowGet is COWMap.Get over a map pointer and the lock that guards its growth
// (shared by several maps in Broker).
func cowGet[K comparable, V any](p *atomic.Pointer[map[K]*V], grow *sync.Mutex, k K, clone func(K) K, mk func() *V) *V {
	if m := p.Load(); m != nil {
		if v, ok := (*m)[k]; ok {
			return v
		}
	}
	grow.Lock()
	defer grow.Unlock()
	old := p.Load()
	n := 0
	if old != nil {
		if v, ok := (*old)[k]; ok {
			return v
		}
		n = len(*old)
	}
	next := make(map[K]*V, n+1)
	if old != nil {
		for k, v := range *old {
			next[k] = v
		}
	}
	v := mk()
	next[clone(k)] = v
	p.Store(&next)
	return v
}

// cowDrop replaces the map p by one without the keys drop matches, handing
// each dropped value to retire (nil: none). The caller holds p's grow lock.
func cowDrop[K comparable, V any](p *atomic.Pointer[map[K]*V], drop func(K) bool, retire func(*V)) {
	old := p.Load()
	if old == nil {
		return
	}
	n := 0
	for k := range *old {
		if drop(k) {
			n++
		}
	}
	if n == 0 {
		return
	}
	next := make(map[K]*V, len(*old)-n)
	for k, v := range *old {
		if !drop(k) {
			next[k] = v
		} else if retire != nil {
			retire(v)
		}
	}
	p.Store(&next)
}
