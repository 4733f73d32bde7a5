package processor

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"rmqd/codec"
)

// FuzzFixStoredProps: any properties string gets exactly one CLUSTER and keeps
// or gains a UNIQ_KEY.
func FuzzFixStoredProps(f *testing.F) {
	f.Add("TAGS\x01a\x02KEYS\x01k\x02")
	f.Add("CLUSTER\x01x\x02CLUSTER\x01y")
	f.Add("\x01\x02\x02\x01UNIQ_KEY\x01")
	ids := newUniqIDGen("127.0.0.1")
	cfg := DefaultBrokerConfig()
	cfg.BrokerClusterName = "C"
	f.Fuzz(func(t *testing.T, props string) {
		pv := codec.ViewProperties(props)
		out := fixStoredProps(&pv, &cfg, ids, false, "", nil)
		if err := viewMismatch(&pv, out); err != nil {
			t.Fatal(err)
		}
		if v, ok := codec.PropertyValue(out, codec.PropCluster); !ok || v != "C" {
			t.Fatalf("CLUSTER=%q,%v in %q", v, ok, out)
		}
		if _, ok := codec.PropertyValue(out, codec.PropUniqKey); !ok {
			t.Fatalf("no UNIQ_KEY in %q", out)
		}
		// Stored properties name each property once, as Java's re-encoding does.
		seen := map[string]bool{}
		for i := 0; ; {
			n, _, next, ok := codec.NextProperty(out, i)
			if !ok {
				break
			}
			if seen[n] {
				t.Fatalf("%q twice in %q", n, out)
			}
			seen[n] = true
			i = next
		}
	})
}

// viewMismatch says how pv fails to answer as the properties props do.
func viewMismatch(pv *codec.PropView, props string) error {
	if pv.Props() != props {
		return fmt.Errorf("view of %q, not of %q", pv.Props(), props)
	}
	names := []string{codec.PropUniqKey, codec.PropCluster, codec.PropDelay, ""}
	for n := range codec.ParseProperties(props) {
		names = append(names, n)
	}
	for _, n := range names {
		got, ok := pv.Get(n)
		if want, wantOK := codec.PropertyValue(props, n); got != want || ok != wantOK {
			return fmt.Errorf("view of %q: %s=%q,%v, want %q,%v", props, n, got, ok, want, wantOK)
		}
	}
	return nil
}

// FuzzHandlers feeds arbitrary headers and bodies to every broker handler over
// a real store: nothing may panic.
func FuzzHandlers(f *testing.F) {
	f.Add(uint8(0), "topic=T\nqueueId=0", []byte(`{}`))
	f.Add(uint8(3), "producerGroup=P\ntopic=T\ndefaultTopic=TBW102\ndefaultTopicQueueNums=4\nqueueId=-1\nsysFlag=0\nbornTimestamp=1\nflag=0\nproperties=TAGS\x01a\x02", []byte("body"))
	f.Add(uint8(5), "", []byte(`{"clientID":"c","consumerDataSet":[{"groupName":"g","subscriptionDataSet":[{"topic":"T","subString":"a||b","codeSet":["1",2]}]}],"producerDataSet":[{"groupName":"p"}]}`))
	f.Add(uint8(7), "consumerGroup=g\ntopic=T\nqueueId=0\nqueueOffset=0\nmaxMsgNums=32\nsysFlag=7\ncommitOffset=3\nsuspendTimeoutMillis=0\nsubVersion=0\nsubscription=a||b\nexpressionType=SQL92", []byte{})
	f.Add(uint8(9), "", []byte(`{"clientId":"c","consumerGroup":"g","mqSet":[{"brokerName":"b","queueId":"x","topic":"t"}]}`))
	f.Add(uint8(11), "a=P\nb=T\nc=TBW102\nd=4\ne=0\nf=0\ng=1\nh=0\nm=true", []byte{0, 0, 0, 30, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 200})

	// The store sits three levels below a directory of its own, so a name that
	// climbs up to three levels out of it lands where fsEscapes looks.
	top := f.TempDir()
	root := filepath.Join(top, "a", "b", "store")
	// ACL 2.0 on, so that its admin codes reach past "not enabled" (the
	// handlers are called without the RPC hooks, which would refuse them).
	b := newTestBroker(f, func(c *BrokerConfig) {
		c.Store.StorePathRootDir = root
		c.AuthenticationEnabled, c.AuthorizationEnabled = true, true
		c.InitAuthenticationUser = `{"username":"su","password":"supw"}`
	})
	fx := makeFuzzFixture(f, b)
	var keep []string // what the store holds before any request; none of it may go
	entries, err := os.ReadDir(root)
	if err != nil {
		f.Fatal(err)
	}
	for _, e := range entries {
		keep = append(keep, e.Name())
	}
	handlers := b.Handlers()
	codes := make([]int32, 0, len(handlers))
	for c := range handlers {
		codes = append(codes, c)
	}
	sort.Slice(codes, func(i, j int) bool { return codes[i] < codes[j] })
	if len(codes) > 256 {
		f.Fatalf("%d codes: which (a uint8) reaches only 256", len(codes))
	}
	index := make(map[int32]uint8, len(codes))
	for i, c := range codes {
		index[c] = uint8(i)
	}
	for _, s := range handlerSeeds(fx) {
		i, ok := index[s.code]
		if !ok {
			f.Fatalf("seed for code %d, which the broker does not serve", s.code)
		}
		// Signed as the super user (the handlers' own checks of topics a
		// request names by offset would refuse an anonymous caller).
		f.Add(i, s.ext+"\nAccessKey=su", []byte(s.body))
	}
	// Seeds: every attack name in every name field of every code, header and body.
	for i := range codes {
		for _, bad := range []string{"../x", "../../victim.txt", "../checkpoint", "/tmp/x", "x/../../y", "x/../../../grp_escape", "x\x00y"} {
			ext := "topic=" + bad + "\ngroup=" + bad + "\nconsumerGroup=" + bad + "\ngroupName=" + bad +
				"\nb=" + bad + "\nqueueId=0\nreadQueueNums=1\nwriteQueueNums=1\nperm=6\noffset=0\ndelayLevel=-1"
			q, _ := json.Marshal(bad)
			f.Add(uint8(i), ext, []byte(`{"groupName":`+string(q)+`,"consumerGroup":`+string(q)+
				`,"topicConfigList":[{"topicName":`+string(q)+`}],"groupConfigList":[{"groupName":`+string(q)+`}]}`))
		}
	}
	f.Fuzz(func(t *testing.T, which uint8, ext string, body []byte) {
		defer fsEscapes(t, top, root, keep)
		code := codes[int(which)%len(codes)]
		req := codec.NewRequest(code)
		for _, line := range strings.Split(ext, "\n") {
			if k, v, ok := strings.Cut(line, "="); ok {
				req.Ext.Set(k, v)
			}
		}
		req.Body = body
		c := newTestConn(1)
		// A hold of a long-polling pull is bounded by its deadline; keep them short.
		if s, ok := req.Ext.Get("suspendTimeoutMillis"); ok && len(s) > 3 {
			req.Ext.Set("suspendTimeoutMillis", "10")
		}
		if _, err := handlers[code].ProcessRequest(context.Background(), c, req); err != nil {
			t.Logf("code %d: %v", code, err)
		}
	})
}

// fsEscapes fails t when anything but the store's own directory chain exists
// between top and root, or when a file the store had is gone: a fuzzed
// request may neither create nor remove anything outside the store.
func fsEscapes(t *testing.T, top, root string, keep []string) {
	t.Helper()
	for dir := root; dir != top; {
		parent := filepath.Dir(dir)
		entries, err := os.ReadDir(parent)
		if err != nil {
			t.Fatalf("read %s: %v", parent, err)
		}
		if len(entries) != 1 || entries[0].Name() != filepath.Base(dir) {
			names := make([]string, len(entries))
			for i, e := range entries {
				names[i] = e.Name()
			}
			t.Fatalf("%s holds %q, want only %q", parent, names, filepath.Base(dir))
		}
		dir = parent
	}
	for _, name := range keep {
		if _, err := os.Stat(filepath.Join(root, name)); err != nil {
			t.Fatalf("store lost %s: %v", name, err)
		}
	}
}
