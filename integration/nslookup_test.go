package integration

import (
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"rmqd/integration/harness"
)

// TestNameServerLookup starts each target's broker apart from an rmqd name server that it finds as a Java
// broker can: by DNS (fetchNameSrvAddrByDnsLookup, namesrvAddr=localhost:<port>, every address of the name
// registered with) and from an address server (fetchNamesrvAddrByAddressServer, no namesrvAddr, the list
// served over HTTP by the test at rocketmq.namesrv.domain: a JVM system property for Apache, a broker.conf
// key for rmqd). In each case the name server routes the broker and a Go client sends and consumes through it.
func TestNameServerLookup(t *testing.T) {
	for _, kind := range targetsFromEnv(t) {
		for _, mode := range []string{"dns", "address-server"} {
			t.Run(kind+"/"+mode, func(t *testing.T) {
				t.Parallel()
				if kind == harness.KindApache {
					harness.RequireJars(t, "apache")
				}
				ns := harness.StartNamesrv(t, harness.KindRmqd, harness.Options{})
				_, port, err := net.SplitHostPort(ns.Addr)
				if err != nil {
					t.Fatal(err)
				}
				opts := harness.Options{BrokerConf: map[string]string{}}
				nsAddr := ns.Addr
				switch mode {
				case "dns":
					nsAddr = "localhost:" + port
					opts.BrokerConf["fetchNameSrvAddrByDnsLookup"] = "true"
				case "address-server":
					asked := make(chan struct{}, 1)
					srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
						if r.URL.Path != "/rocketmq/nsaddr-it" {
							http.NotFound(w, r)
							return
						}
						select {
						case asked <- struct{}{}:
						default:
						}
						fmt.Fprintf(w, "%s\n", ns.Addr)
					}))
					t.Cleanup(srv.Close)
					domain := strings.TrimPrefix(srv.URL, "http://")
					opts.NoNamesrvAddr = true
					opts.BrokerConf["fetchNamesrvAddrByAddressServer"] = "true"
					opts.BrokerConf["fetchNamesrvAddrInterval"] = "2000"
					// Java registers with a fetched list at its next registration (rmqd at once): Java's shortest period.
					opts.BrokerConf["registerNameServerPeriod"] = "10000"
					if kind == harness.KindApache {
						opts.JVMArgs = []string{"-Drocketmq.namesrv.domain=" + domain, "-Drocketmq.namesrv.domain.subgroup=nsaddr-it"}
					} else {
						opts.BrokerConf["rocketmq.namesrv.domain"] = domain
						opts.BrokerConf["rocketmq.namesrv.domain.subgroup"] = "nsaddr-it"
					}
					defer func() {
						select {
						case <-asked:
						default:
							t.Errorf("the address server was never asked")
						}
					}()
				}
				// StartBroker waits until the name server routes the broker; the Go client takes IP addresses only.
				tg := harness.StartBroker(t, kind, nsAddr, opts).Via(ns.Addr)
				topic := "IT_nslookup_" + strings.ReplaceAll(mode, "-", "_")
				harness.CreateTopic(t, tg, topic, 2, "")
				sent := harness.RunGoProduce(t, tg, harness.GoProduce{Topic: topic, Count: 4, KeyPrefix: mode})
				onlyOK(t, sent)
				got := harness.RunGoConsume(t, tg, harness.GoConsume{Topic: topic, Group: uniq("IT_nslookup_cg"), Count: len(sent)})
				sameMessages(t, sent, got)
			})
		}
	}
}
