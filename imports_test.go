// Package rmqd_test holds the checks that span the whole module: today, the
// import rules that keep data flowing one way (remoting -> processor -> store).
package rmqd_test

import (
	"bufio"
	"bytes"
	"os/exec"
	"strings"
	"testing"
)

// importRule says which of our packages (and which sensitive std packages) a
// package below prefix may import. The longest matching prefix applies.
type importRule struct {
	prefix  string
	allowed []string // our packages, by prefix; "self" = the package's own subtree
	noNet   bool     // no sockets: "net" itself (net/netip is fine)
}

var importRules = []importRule{
	{prefix: "rmqd/codec", allowed: []string{"self"}, noNet: true},
	{prefix: "rmqd/compat", allowed: []string{"self"}, noNet: true},
	{prefix: "rmqd/store", allowed: []string{"rmqd/codec", "rmqd/compat"}, noNet: true},
	// Replication is network code over the store's API, beside the store.
	{prefix: "rmqd/store/ha", allowed: []string{"rmqd/store", "rmqd/codec", "rmqd/compat"}},
	{prefix: "rmqd/remoting", allowed: []string{"self", "rmqd/codec"}},
	{prefix: "rmqd/processor", allowed: []string{"self", "rmqd/codec", "rmqd/compat", "rmqd/remoting", "rmqd/store", "rmqd/store/ha"}},
	// Persisted metadata knows no connection or request: tested alone, usable by replication.
	{prefix: "rmqd/processor/meta", allowed: []string{"self", "rmqd/codec", "rmqd/compat"}, noNet: true},
	// The client registry knows connections, not the store or the metadata.
	{prefix: "rmqd/processor/clients", allowed: []string{"self", "rmqd/codec", "rmqd/remoting"}},
	// Runtime statistics are counters and windows: no request, connection or store.
	{prefix: "rmqd/processor/stats", allowed: []string{"self"}, noNet: true},
	// Delivery services read and put through a small store view and are lent the broker's checks:
	// no request, connection or broker.
	{prefix: "rmqd/processor/delivery", allowed: []string{"self", "rmqd/codec", "rmqd/compat", "rmqd/store", "rmqd/processor/meta"}, noNet: true},
	{prefix: "rmqd/namesrv", allowed: []string{"self", "rmqd/codec", "rmqd/compat", "rmqd/remoting"}},
	{prefix: "rmqd/cmd", allowed: []string{"rmqd/"}},
	// Black-box tests drive the binary and the wire; the load generator speaks the wire itself,
	// reading Java-world formats (message ids, delay levels) as a client does, never broker internals.
	{prefix: "rmqd/integration", allowed: []string{"rmqd/integration", "rmqd/codec", "rmqd/compat"}},
	// The chaos driver checks each stopped broker's files with the store's offline checker, as `rmqd check` does.
	{prefix: "rmqd/integration/chaos", allowed: []string{"rmqd/integration", "rmqd/codec", "rmqd/compat", "rmqd/store"}},
}

func ruleFor(pkg string) *importRule {
	var best *importRule
	for i := range importRules {
		r := &importRules[i]
		if (pkg == r.prefix || strings.HasPrefix(pkg, r.prefix+"/")) && (best == nil || len(r.prefix) > len(best.prefix)) {
			best = r
		}
	}
	return best
}

func (r *importRule) allows(pkg, imp string) bool {
	for _, a := range r.allowed {
		switch {
		case a == "self" && (imp == r.prefix || strings.HasPrefix(imp, r.prefix+"/")):
			return true
		case strings.HasSuffix(a, "/") && strings.HasPrefix(imp, a):
			return true
		case imp == a || strings.HasPrefix(imp, a+"/") && ruleFor(imp) == ruleFor(a):
			return true
		}
	}
	return false
}

// TestImportRules fails when a package imports across the one-way flow, so the
// layering stays true without anyone remembering it. Test files are exempt.
func TestImportRules(t *testing.T) {
	out, err := exec.Command("go", "list", "-f", "{{.ImportPath}}{{range .Imports}} {{.}}{{end}}", "./...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	checked := 0
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 0 || f[0] == "rmqd" {
			continue
		}
		pkg, imports := f[0], f[1:]
		r := ruleFor(pkg)
		if r == nil {
			t.Errorf("%s: no import rule covers this package; add one to importRules", pkg)
			continue
		}
		checked++
		for _, imp := range imports {
			if r.noNet && imp == "net" {
				t.Errorf("%s imports net: this package never opens a socket", pkg)
			}
			if (imp == "rmqd" || strings.HasPrefix(imp, "rmqd/")) && !r.allows(pkg, imp) {
				t.Errorf("%s imports %s: not allowed by the rule for %s", pkg, imp, r.prefix)
			}
		}
	}
	if checked < 8 {
		t.Fatalf("only %d packages checked: go list output changed?", checked)
	}
}

// TestImportRulesCatch makes sure the rules bite: a forbidden edge is refused.
func TestImportRulesCatch(t *testing.T) {
	for _, c := range []struct{ pkg, imp string }{
		{"rmqd/store", "rmqd/remoting"},
		{"rmqd/store", "rmqd/store/ha"},
		{"rmqd/processor", "rmqd/namesrv"},
		{"rmqd/namesrv", "rmqd/processor"},
		{"rmqd/remoting", "rmqd/store"},
		{"rmqd/codec", "rmqd/compat"},
		{"rmqd/processor/meta", "rmqd/namesrv"},
		{"rmqd/processor/meta", "rmqd/remoting"},
		{"rmqd/processor/meta", "rmqd/store"},
		{"rmqd/processor/meta", "rmqd/processor"},
		{"rmqd/processor/clients", "rmqd/store"},
		{"rmqd/processor/stats", "rmqd/remoting"},
		{"rmqd/processor/stats", "rmqd/processor"},
		{"rmqd/processor/stats", "rmqd/store"},
		{"rmqd/processor/delivery", "rmqd/remoting"},
		{"rmqd/processor/delivery", "rmqd/processor"},
		{"rmqd/processor/delivery", "rmqd/processor/clients"},
		{"rmqd/integration", "rmqd/processor"},
	} {
		if ruleFor(c.pkg).allows(c.pkg, c.imp) {
			t.Errorf("%s -> %s allowed; it must not be", c.pkg, c.imp)
		}
	}
	for _, c := range []struct{ pkg, imp string }{
		{"rmqd/store", "rmqd/codec"},
		{"rmqd/store/ha", "rmqd/store"},
		{"rmqd/processor", "rmqd/processor/filter"},
		{"rmqd/processor", "rmqd/processor/meta"},
		{"rmqd/processor/delivery", "rmqd/processor/meta"},
		{"rmqd/processor/delivery", "rmqd/store"},
		{"rmqd/processor/meta", "rmqd/compat"},
		{"rmqd/processor", "rmqd/store"},
		{"rmqd/cmd/rmqd", "rmqd/store/ha"},
	} {
		if !ruleFor(c.pkg).allows(c.pkg, c.imp) {
			t.Errorf("%s -> %s refused; it is allowed", c.pkg, c.imp)
		}
	}
}
