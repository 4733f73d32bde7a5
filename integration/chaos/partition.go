package chaos

import (
	"fmt"
	"net"
	"os/exec"
	"strconv"
	"strings"
	"sync"

	"rmqd/integration/harness"
)

// A partition between the clients and the broker on loopback: iptables rules that DROP every TCP packet
// to or from the broker's client ports (listen port and its VIP port, listen-2). The broker keeps its own
// connection to the name server (another port), so its route stays published while no client reaches it,
// as when a network splits clients from a broker. The rules carry a comment naming this process, so that
// only they are ever removed.

var iptablesMu sync.Mutex // one iptables command at a time from this process (both targets run in parallel)

func iptables(args ...string) error {
	iptablesMu.Lock()
	defer iptablesMu.Unlock()
	out, err := exec.Command("iptables", append([]string{"-w", "5"}, args...)...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("iptables %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

// partitionRules are the rule specs (after the chain) cutting the clients off the broker at addr.
func partitionRules(tb harness.TB, addr string) [][]string {
	tb.Helper()
	_, p, err := net.SplitHostPort(addr)
	if err != nil {
		tb.Fatalf("chaos: broker address %q: %v", addr, err)
	}
	listen, _ := strconv.Atoi(p)
	comment := fmt.Sprintf("rmqd-chaos-%s", addr)
	var rules [][]string
	for _, port := range []int{listen, listen - 2} {
		for _, dir := range []string{"--dport", "--sport"} {
			rules = append(rules, []string{"-i", "lo", "-p", "tcp", dir, strconv.Itoa(port),
				"-m", "comment", "--comment", comment, "-j", "DROP"})
		}
	}
	return rules
}

// partitionUsable says why the partition fault cannot run here (iptables missing or not allowed), or "".
func partitionUsable() string {
	if _, err := exec.LookPath("iptables"); err != nil {
		return fmt.Sprintf("no iptables (%v); `apt-get install iptables` (Debian), as root", err)
	}
	// A rule on a port nothing uses, inserted and removed at once.
	rule := []string{"-i", "lo", "-p", "tcp", "--dport", "9", "-m", "comment", "--comment", "rmqd-chaos-probe", "-j", "DROP"}
	if err := iptables(append([]string{"-I", "INPUT"}, rule...)...); err != nil {
		return err.Error()
	}
	if err := iptables(append([]string{"-D", "INPUT"}, rule...)...); err != nil {
		return err.Error()
	}
	return ""
}

// partition cuts (on) or heals (off) the clients' path to the broker at addr.
func partition(tb harness.TB, addr string, on bool) {
	tb.Helper()
	op := "-I"
	if !on {
		op = "-D"
	}
	for _, r := range partitionRules(tb, addr) {
		if err := iptables(append([]string{op, "INPUT"}, r...)...); err != nil {
			tb.Fatalf("chaos: partition: %v", err)
		}
	}
}

// healAll removes whatever rules of addr's partition are left (a test that failed mid-fault).
func healAll(tb harness.TB, addr string) {
	for _, r := range partitionRules(tb, addr) {
		for iptables(append([]string{"-D", "INPUT"}, r...)...) == nil {
		}
	}
}
