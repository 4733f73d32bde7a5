package processor

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"rmqd/codec"
)

// registeredWith lists the name servers inv got REGISTER_BROKER from, in order.
func (c *captureInvoker) registeredWith() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for i, r := range c.reqs {
		if r.Code == codec.ReqRegisterBroker {
			out = append(out, c.addr[i])
		}
	}
	return out
}

// An updateBrokerConfig of namesrvAddr moves the running broker: it registers
// with the new name server at once (not at its next period), later requests
// go there, the file keeps the new list, and Shutdown unregisters from it.
func TestUpdateNamesrvAddrLive(t *testing.T) {
	conf := filepath.Join(t.TempDir(), "broker.conf")
	require.NoError(t, os.WriteFile(conf, []byte("namesrvAddr=127.0.0.1:1\n"), 0o644))
	cfg := testConfig(t)
	cfg.NamesrvAddr = "127.0.0.1:1"
	cfg.BrokerConfigPath = conf
	cfg.RegisterNameServerPeriod = 60000 // nothing registers again by itself during the test
	tb := newTestBroker(t, nil)          // for its store
	b, err := NewBroker(cfg, tb.st, quietLog())
	require.NoError(t, err)
	inv := &captureInvoker{}
	b.SetNameServerInvoker(inv)
	require.NoError(t, b.Start(context.Background()))
	require.Equal(t, []string{"127.0.0.1:1"}, inv.registeredWith())

	ctx := context.Background()
	c := newTestConn(5)
	resp, _ := b.handleUpdateBrokerConfig(ctx, c, updateConfigReq("namesrvAddr=127.0.0.1:2; [::1]:3\n"))
	require.EqualValues(t, codec.RespSuccess, resp.Code, resp.Remark)
	require.Equal(t, []string{"127.0.0.1:2", "[::1]:3"}, b.conf().nameServers())
	require.Eventually(t, func() bool {
		got := inv.registeredWith()
		return slices.Contains(got, "127.0.0.1:2") && slices.Contains(got, "[::1]:3")
	}, 10*time.Second, 10*time.Millisecond, "no registration with the new name servers")
	require.Equal(t, []string{"127.0.0.1:1"}, inv.registeredWith()[:1], "the old one got only the first")
	props, err := loadPropsFile(conf)
	require.NoError(t, err)
	require.Equal(t, "127.0.0.1:2; [::1]:3", props["namesrvAddr"])
	b.admin.cfgMu.Lock()
	require.NotContains(t, b.admin.overrides, "namesrvAddr", "applied, not pending")
	b.admin.cfgMu.Unlock()
	b.regState.mu.Lock()
	require.NotContains(t, b.regState.ok, "127.0.0.1:1", "the old name server's state is dropped")
	b.regState.mu.Unlock()

	require.NoError(t, b.Shutdown())
	inv.mu.Lock()
	defer inv.mu.Unlock()
	var unreg []string
	for i, r := range inv.reqs {
		if r.Code == codec.ReqUnregisterBroker {
			unreg = append(unreg, inv.addr[i])
		}
	}
	require.Equal(t, []string{"127.0.0.1:2", "[::1]:3"}, unreg)
}

// A namesrvAddr that is not a host:port list is refused before anything is
// applied or written, and so is one the broker cannot follow.
func TestUpdateNamesrvAddrRefused(t *testing.T) {
	conf := filepath.Join(t.TempDir(), "broker.conf")
	orig := "namesrvAddr=127.0.0.1:1\n"
	require.NoError(t, os.WriteFile(conf, []byte(orig), 0o644))
	cfg := testConfig(t)
	cfg.NamesrvAddr = "127.0.0.1:1"
	cfg.BrokerConfigPath = conf
	tb := newTestBroker(t, nil)
	b, err := NewBroker(cfg, tb.st, quietLog())
	require.NoError(t, err)
	b.SetNameServerInvoker(&captureInvoker{})
	require.NoError(t, b.Start(context.Background()))
	t.Cleanup(func() { _ = b.Shutdown() })
	ctx := context.Background()
	c := newTestConn(5)
	many := strings.Repeat("127.0.0.1:9876;", maxNameServers+1)
	for _, bad := range []string{"", " ; ", "127.0.0.1", "127.0.0.1:0", "127.0.0.1:65536", "127.0.0.1:+1",
		"host:abc", "a b:9876", "ns\x00:9876", "[::1:9876", "fe80::zz:9876", "127.0.0.1:9876;bad",
		many, strings.Repeat("a", 300) + ":9876", strings.Repeat("x", maxNamesrvAddrLen+1)} {
		resp, _ := b.handleUpdateBrokerConfig(ctx, c, updateConfigReq("traceOn=false\nnamesrvAddr="+bad+"\n"))
		require.EqualValues(t, codec.RespSystemError, resp.Code, "%q", bad)
		require.Contains(t, resp.Remark, "namesrvAddr", "%q", bad)
		require.Equal(t, "127.0.0.1:1", b.conf().NamesrvAddr, "%q", bad)
		require.True(t, b.conf().TraceOn, "a key beside it was applied: %q", bad)
	}
	got, err := os.ReadFile(conf)
	require.NoError(t, err)
	require.Equal(t, orig, string(got), "a refused update wrote the file")

	// Started without name servers: no client, no registration loop to move.
	nb := newTestBroker(t, nil)
	resp, _ := nb.handleUpdateBrokerConfig(ctx, c, updateConfigReq("namesrvAddr=127.0.0.1:9876\n"))
	require.EqualValues(t, codec.RespSystemError, resp.Code)
	require.Contains(t, resp.Remark, "started without name servers")
	require.Empty(t, nb.conf().NamesrvAddr)
}

// Java's forms pass: IPv4, host names, bracketed and bare IPv6 (split at the
// last colon), blank entries and spaces around entries.
func TestCheckNamesrvAddr(t *testing.T) {
	for _, ok := range []string{"", "127.0.0.1:9876", "127.0.0.1:9876;192.168.0.1:9876;", "ns-1.example.com:9876",
		" ns_a:1 ; ns_b:65535 ", "[::1]:9876", "::1:9876", "fe80::1%eth0:9876"} {
		require.NoError(t, checkNamesrvAddr(ok), ok)
	}
	for _, bad := range []string{"127.0.0.1", ":9876", "127.0.0.1:", "a/b:1"} {
		require.Error(t, checkNamesrvAddr(bad), bad)
	}
}

func FuzzCheckNamesrvAddr(f *testing.F) {
	for _, s := range []string{"127.0.0.1:9876;192.168.0.1:9876", "[::1]:9876", "::1:9876", "ns:1;;", "x:0"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if checkNamesrvAddr(s) != nil {
			return
		}
		c := BrokerConfig{NamesrvAddr: s}
		addrs := c.nameServers()
		require.LessOrEqual(t, len(addrs), maxNameServers)
		for _, a := range addrs {
			require.NoError(t, checkNameServer(a))
		}
	})
}
