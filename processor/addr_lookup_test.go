package processor

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"rmqd/codec"
)

// registeredAddrs is the name servers inv saw REGISTER_BROKER sent to, sorted.
func registeredAddrs(inv *captureInvoker) []string {
	inv.mu.Lock()
	defer inv.mu.Unlock()
	var out []string
	for i, r := range inv.reqs {
		if r.Code == codec.ReqRegisterBroker && !slices.Contains(out, inv.addr[i]) {
			out = append(out, inv.addr[i])
		}
	}
	slices.Sort(out)
	return out
}

func resetCaptured(inv *captureInvoker) {
	inv.mu.Lock()
	inv.reqs, inv.addr = nil, nil
	inv.mu.Unlock()
}

// lookupBroker is a broker, not started, whose name server requests inv takes.
func lookupBroker(t *testing.T, mod func(*BrokerConfig)) (*Broker, *captureInvoker) {
	t.Helper()
	cfg := testConfig(t)
	mod(&cfg)
	tb := newTestBroker(t, nil) // for its store
	b, err := NewBroker(cfg, tb.st, quietLog())
	require.NoError(t, err)
	inv := &captureInvoker{}
	b.SetNameServerInvoker(inv)
	t.Cleanup(func() { _ = b.Shutdown() })
	return b, inv
}

// fakeResolver answers host names from a table that the test changes.
type fakeResolver struct {
	mu    sync.Mutex
	hosts map[string][]string
}

func (f *fakeResolver) set(host string, ips ...string) {
	f.mu.Lock()
	f.hosts[host] = ips
	f.mu.Unlock()
}

func (f *fakeResolver) drop(host string) {
	f.mu.Lock()
	delete(f.hosts, host)
	f.mu.Unlock()
}

func (f *fakeResolver) resolve(ctx context.Context, host string) ([]netip.Addr, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	ips, ok := f.hosts[host]
	if !ok {
		return nil, errors.New("no such host")
	}
	var out []netip.Addr
	for _, s := range ips {
		out = append(out, netip.MustParseAddr(s))
	}
	return out, nil
}

// fetchNameSrvAddrByDnsLookup: every address of namesrvAddr's host names gets
// the registration at start; a new address found at the next lookup gets it at
// once, a failed lookup keeps the list, and a namesrvAddr update is looked up
// before it is registered with.
func TestNameServersByDNSLookup(t *testing.T) {
	res := &fakeResolver{hosts: map[string][]string{"ns.test": {"10.0.0.2", "10.0.0.1", "::ffff:10.0.0.1"}}}
	b, inv := lookupBroker(t, func(c *BrokerConfig) {
		c.NamesrvAddr = "ns.test:9876;10.0.0.9:9876"
		c.FetchNameSrvAddrByDNSLookup = true
		c.UpdateNameServerAddrPeriod = 1000
	})
	b.lookup.resolve = res.resolve
	require.NoError(t, b.Start(context.Background()))
	want := []string{"10.0.0.1:9876", "10.0.0.2:9876", "10.0.0.9:9876"}
	require.Equal(t, want, registeredAddrs(inv), "each address once, at start")

	res.set("ns.test", "10.0.0.3")
	require.Eventually(t, func() bool { return slices.Contains(registeredAddrs(inv), "10.0.0.3:9876") }, 5*time.Second, 20*time.Millisecond)
	require.Equal(t, []string{"10.0.0.3:9876", "10.0.0.9:9876"}, b.nameServerAddrs())

	// A name that resolves to nothing, then not at all, keeps its last addresses.
	for _, fail := range []func(){func() { res.set("ns.test") }, func() { res.drop("ns.test") }} {
		fail()
		time.Sleep(1500 * time.Millisecond)
		require.Equal(t, []string{"10.0.0.3:9876", "10.0.0.9:9876"}, b.nameServerAddrs())
	}

	res.set("ns2.test", "10.0.0.4")
	resetCaptured(inv)
	_, _, err := b.updateConfig(map[string]string{"namesrvAddr": "ns2.test:9877"})
	require.NoError(t, err)
	require.Eventually(t, func() bool { return slices.Equal(registeredAddrs(inv), []string{"10.0.0.4:9877"}) }, 5*time.Second, 20*time.Millisecond)
}

// fetchNamesrvAddrByAddressServer with no namesrvAddr: the first line of the
// address server's answer is the name server list, fetched at start and every
// fetchNamesrvAddrInterval; answers that are no list, or fail, keep the last
// one; namesrvAddr cannot be updated while it is in force.
func TestNameServersFromAddressServer(t *testing.T) {
	var mu sync.Mutex
	status, answer := http.StatusOK, "127.0.0.1:1;127.0.0.1:2\nignored"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/rocketmq/nsaddr-it" {
			http.NotFound(w, r)
			return
		}
		mu.Lock()
		defer mu.Unlock()
		w.WriteHeader(status)
		fmt.Fprint(w, answer)
	}))
	defer srv.Close()
	serve := func(code int, body string) {
		mu.Lock()
		status, answer = code, body
		mu.Unlock()
	}
	b, inv := lookupBroker(t, func(c *BrokerConfig) {
		c.NamesrvAddr = ""
		c.FetchNamesrvAddrByAddressServer = true
		c.FetchNamesrvAddrInterval = 1000
		c.NamesrvDomain = strings.TrimPrefix(srv.URL, "http://")
		c.NamesrvDomainSubgroup = "nsaddr-it"
	})
	require.Equal(t, srv.URL+"/rocketmq/nsaddr-it", b.conf().addressServerURL())
	require.NoError(t, b.Start(context.Background()))
	require.Equal(t, []string{"127.0.0.1:1", "127.0.0.1:2"}, registeredAddrs(inv), "registered at start")

	resetCaptured(inv)
	serve(http.StatusOK, "  127.0.0.1:3\r\n")
	require.Eventually(t, func() bool { return slices.Equal(registeredAddrs(inv), []string{"127.0.0.1:3"}) }, 5*time.Second, 20*time.Millisecond)

	for _, bad := range []struct {
		code int
		body string
	}{{http.StatusInternalServerError, "127.0.0.1:4"}, {http.StatusOK, "not a list"}, {http.StatusOK, ""},
		{http.StatusOK, strings.Repeat("127.0.0.1:5;", 1000)}} {
		serve(bad.code, bad.body)
		time.Sleep(1200 * time.Millisecond)
		require.Equal(t, []string{"127.0.0.1:3"}, b.nameServerAddrs(), "after %d %.20q", bad.code, bad.body)
	}
	_, _, err := b.updateConfig(map[string]string{"namesrvAddr": "127.0.0.1:6"})
	require.ErrorContains(t, err, "address server")

	def := DefaultBrokerConfig()
	require.Equal(t, "http://jmenv.tbsite.net:8080/rocketmq/nsaddr", def.addressServerURL(), "MixAll.getWSAddr's default")
}

// fetchControllerAddrByDnsLookup: the controllers are controllerAddr's host
// names resolved, kept when a lookup fails.
func TestControllersByDNSLookup(t *testing.T) {
	res := &fakeResolver{hosts: map[string][]string{"ctl.test": {"10.0.1.2", "10.0.1.1"}}}
	b := &Broker{log: quietLog(), lookup: newAddrLookup()}
	cfg := testConfig(t)
	cfg.Controller.ControllerAddr = "ctl.test:9878"
	b.cfg.Store(&cfg)
	require.Equal(t, []string{"ctl.test:9878"}, b.controllerAddrs(), "as written while the lookup is off")
	cfg.Controller.FetchControllerAddrByDNSLookup = true
	b.lookup.resolve = res.resolve
	b.lookUpControllers(context.Background())
	require.Equal(t, []string{"10.0.1.1:9878", "10.0.1.2:9878"}, b.controllerAddrs())
	res.drop("ctl.test")
	b.lookUpControllers(context.Background())
	require.Equal(t, []string{"10.0.1.1:9878", "10.0.1.2:9878"}, b.controllerAddrs(), "kept")
}
