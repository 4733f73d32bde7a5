package processor

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"net/netip"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"rmqd/codec"
	"rmqd/compat"
)

// Name server and controller addresses found while the broker runs, as Java's
// broker finds them: namesrvAddr's (or controllerAddr's) host names resolved
// to every address they have (fetchNameSrvAddrByDnsLookup,
// fetchControllerAddrByDnsLookup: BrokerOuterAPI.dnsLookupAddressByDomain, a
// headless service's name servers each get the registration), or, with no
// namesrvAddr, the list an address server hands out over HTTP
// (fetchNamesrvAddrByAddressServer: TopAddressing.fetchNSAddr).

// Bounds of a lookup: a lookup waits at most lookupTimeout (Java's HTTP
// timeout is 3 s), and an address server's answer is read up to
// maxAddrServerReply bytes: a first line longer than namesrvAddr may be is
// refused by checkNamesrvAddr anyway.
const (
	lookupTimeout      = 3 * time.Second
	maxAddrServerReply = maxNamesrvAddrLen + 2
	// controllerLookupPeriod is ReplicasManager's updateControllerAddr period.
	controllerLookupPeriod = 2 * time.Minute
)

// addrLookup holds the lists looked up; nil until the first lookup found one.
type addrLookup struct {
	ns  atomic.Pointer[[]string]
	ctl atomic.Pointer[[]string]
	// refresh asks the name server lookup for a new lookup now (a namesrvAddr
	// update under fetchNameSrvAddrByDnsLookup).
	refresh chan struct{}
	// nsByEntry and ctlByEntry are each entry's addresses at its last lookup
	// that found any: an entry that fails to resolve keeps them. Each is used
	// by one goroutine at a time (Start, then its lookup loop).
	nsByEntry, ctlByEntry map[string][]string
	// resolve and fetch are the network; tests put their own.
	resolve func(ctx context.Context, host string) ([]netip.Addr, error)
	fetch   func(ctx context.Context, url string) (string, error)
}

func newAddrLookup() addrLookup {
	// No proxy from the environment (Java's HTTP client takes none from it) and
	// no connection kept between fetches seconds apart.
	hc := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	return addrLookup{refresh: make(chan struct{}, 1), nsByEntry: map[string][]string{}, ctlByEntry: map[string][]string{},
		resolve: func(ctx context.Context, host string) ([]netip.Addr, error) {
			return net.DefaultResolver.LookupNetIP(ctx, "ip", host)
		},
		fetch: func(ctx context.Context, url string) (string, error) { return httpGetFirstLine(ctx, hc, url) },
	}
}

// lookupNameServers reports whether the name servers come from a lookup, not
// from namesrvAddr as written.
func (c *BrokerConfig) lookupNameServers() bool { return c.lookedUp(c.nameServers()) }

// lookedUp is lookupNameServers for namesrvAddr's entries, already split.
func (c *BrokerConfig) lookedUp(entries []string) bool {
	if len(entries) > 0 {
		return c.FetchNameSrvAddrByDNSLookup
	}
	return c.FetchNamesrvAddrByAddressServer
}

// fromAddressServer: Java asks the address server only when no namesrvAddr is
// set (BrokerController.initializeScheduledTasks).
func (c *BrokerConfig) fromAddressServer() bool {
	return c.FetchNamesrvAddrByAddressServer && len(c.nameServers()) == 0
}

// registers reports whether the broker has name servers to register with, or
// will have once a lookup finds them.
func (c *BrokerConfig) registers() bool {
	return len(c.nameServers()) > 0 || c.fromAddressServer()
}

// addressServerURL is MixAll.getWSAddr: rocketmq.namesrv.domain (a JVM system
// property in Java, a config key in rmqd) on port 8080 unless it names one.
func (c *BrokerConfig) addressServerURL() string {
	domain, sub := c.NamesrvDomain, c.NamesrvDomainSubgroup
	if strings.Index(domain, ":") > 0 {
		return "http://" + domain + "/rocketmq/" + sub
	}
	return "http://" + domain + ":8080/rocketmq/" + sub
}

// nameServerAddrs is the name servers in force: namesrvAddr's entries, or the
// last lookup's result.
func (b *Broker) nameServerAddrs() []string {
	cfg := b.conf()
	if entries := cfg.nameServers(); !cfg.lookedUp(entries) {
		return entries
	}
	if p := b.lookup.ns.Load(); p != nil {
		return *p
	}
	return nil
}

// controllerAddrs is the controllers in force: controllerAddr's entries, or
// the last lookup's result.
func (b *Broker) controllerAddrs() []string {
	cfg := b.conf()
	if cfg.Controller.FetchControllerAddrByDNSLookup {
		if p := b.lookup.ctl.Load(); p != nil {
			return *p
		}
	}
	return cfg.Controller.addrs()
}

// lookUpNameServers looks the name servers up once and keeps the result; it
// reports whether the list changed. A failed lookup keeps the last list (Java
// empties it when DNS fails).
func (b *Broker) lookUpNameServers(ctx context.Context) bool {
	cfg := b.conf()
	if !cfg.lookupNameServers() {
		return false
	}
	ctx, cancel := context.WithTimeout(ctx, lookupTimeout)
	defer cancel()
	var addrs []string
	var err error
	if cfg.fromAddressServer() {
		addrs, err = b.fetchNameServers(ctx, cfg.addressServerURL())
	} else {
		addrs, err = b.resolveAll(ctx, cfg.nameServers(), b.lookup.nsByEntry)
	}
	if err != nil {
		b.log.Warn("name server lookup failed; the last list stays", "err", err)
		return false
	}
	if old := b.lookup.ns.Load(); old != nil && slices.Equal(*old, addrs) {
		return false
	}
	b.lookup.ns.Store(&addrs)
	b.log.Info("name servers looked up", "namesrvAddr", cfg.NamesrvAddr, "addrs", addrs)
	return true
}

// lookUpControllers is lookUpNameServers for controllerAddr.
func (b *Broker) lookUpControllers(ctx context.Context) {
	cfg := b.conf()
	if !cfg.Controller.FetchControllerAddrByDNSLookup {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, lookupTimeout)
	defer cancel()
	addrs, err := b.resolveAll(ctx, cfg.Controller.addrs(), b.lookup.ctlByEntry)
	if err != nil {
		b.log.Warn("controller lookup failed; the last list stays", "err", err)
		return
	}
	if old := b.lookup.ctl.Load(); old == nil || !slices.Equal(*old, addrs) {
		b.lookup.ctl.Store(&addrs)
		b.log.Info("controllers looked up", "controllerAddr", cfg.Controller.ControllerAddr, "addrs", addrs)
	}
}

// resolveAll resolves each host:port entry to every address of its host, the
// port kept: sorted, without repeats, at most maxNameServers. An entry that
// does not resolve keeps its addresses of the last lookup (last, updated
// here); it fails when no entry has any. Java takes one domain:port; a list of
// them is resolved entry by entry.
func (b *Broker) resolveAll(ctx context.Context, entries []string, last map[string][]string) ([]string, error) {
	var out []string
	var errs []error
	now := make(map[string][]string, len(entries))
	for _, e := range entries {
		addrs, err := b.resolveEntry(ctx, e)
		if err != nil {
			errs = append(errs, err)
			addrs = last[e]
		}
		if len(addrs) > 0 {
			now[e] = addrs
		}
		out = append(out, addrs...)
	}
	clear(last)
	maps.Copy(last, now)
	slices.Sort(out)
	out = slices.Compact(out)
	if len(out) == 0 {
		return nil, fmt.Errorf("no address: %w", errors.Join(errs...))
	}
	if len(errs) > 0 {
		b.log.Warn("lookup: entries kept their last addresses", "err", errors.Join(errs...))
	}
	if len(out) > maxNameServers {
		b.log.Warn("lookup found more addresses than are used", "found", len(out), "used", maxNameServers)
		out = out[:maxNameServers]
	}
	return out, nil
}

// resolveEntry is one host:port entry's addresses: itself for an IP address.
func (b *Broker) resolveEntry(ctx context.Context, e string) ([]string, error) {
	host, port, err := net.SplitHostPort(codec.DialAddr(e))
	if err != nil {
		return nil, fmt.Errorf("%q: not host:port", e)
	}
	if ip, err := netip.ParseAddr(host); err == nil {
		return []string{net.JoinHostPort(ip.String(), port)}, nil
	}
	ips, err := b.lookup.resolve(ctx, host)
	if err == nil && len(ips) == 0 {
		err = errors.New("no address")
	}
	if err != nil {
		return nil, fmt.Errorf("resolve %s: %w", host, err)
	}
	addrs := make([]string, 0, len(ips))
	for _, ip := range ips {
		addrs = append(addrs, net.JoinHostPort(ip.Unmap().WithZone("").String(), port))
	}
	return addrs, nil
}

// fetchNameServers asks the address server for the name servers: the first
// line of its answer (DefaultTopAddressing.clearNewLine), a namesrvAddr list,
// checked as one before any address is dialled.
func (b *Broker) fetchNameServers(ctx context.Context, url string) ([]string, error) {
	line, err := b.lookup.fetch(ctx, url)
	if err != nil {
		return nil, fmt.Errorf("address server %s: %w", url, err)
	}
	if err := checkNamesrvAddr(line); err != nil {
		return nil, fmt.Errorf("address server %s: %w", url, err)
	}
	addrs := (&BrokerConfig{NamesrvAddr: line}).nameServers()
	if len(addrs) == 0 {
		return nil, fmt.Errorf("address server %s: no name server in its answer", url)
	}
	return addrs, nil
}

// httpGetFirstLine is an HTTP GET of url answering 200: its body's first line,
// trimmed, read up to maxAddrServerReply bytes.
func httpGetFirstLine(ctx context.Context, hc *http.Client, url string) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return "", err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("status %d", resp.StatusCode)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxAddrServerReply))
	if err != nil {
		return "", err
	}
	line := strings.TrimSpace(string(body))
	if i := strings.IndexAny(line, "\r\n"); i >= 0 {
		line = line[:i]
	}
	return line, nil
}

// lookupLoop looks the name servers up every updateNameServerAddrPeriod (DNS)
// or fetchNamesrvAddrInterval (address server), and at once when asked
// (refresh); a changed list is registered with at once (movedNow).
func (b *Broker) lookupLoop(ctx context.Context) {
	period := func() time.Duration {
		c := b.conf()
		if c.fromAddressServer() {
			return compat.Millis(max(c.FetchNamesrvAddrInterval, 1000))
		}
		return compat.Millis(max(c.UpdateNameServerAddrPeriod, 1000))
	}
	periodicOrWoken(ctx, period(), period, b.lookup.refresh, func(ctx context.Context) {
		if b.lookUpNameServers(ctx) {
			b.movedNow()
		}
	})
}
