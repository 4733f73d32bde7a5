package main

import "testing"

func TestRowMet(t *testing.T) {
	for _, c := range []struct {
		target string
		a, r   float64
		want   string
	}{
		{"", 10, 5, ""},
		{"<= 0.5x", 10, 5, "yes"},
		{"<= 0.5x", 10, 6, "**no**"},
		{"<= 0.5x", 0, 6, ""},
		{">= 2x", 10, 20, "yes"},
		{"<= 0.12x, <= 50", 500, 55, "**no**"}, // ratio holds, absolute does not
		{"<= 0.12x, <= 50", 500, 45, "yes"},
		{"<= 0.12x, <= 50", 300, 45, "**no**"},
		{">= 70", 0, 71, "yes"}, // absolute targets need no Apache figure
		{">= 70", 50, 20, "**no**"},
	} {
		x := row{a: c.a, r: c.r, target: c.target}
		if got := x.met(); got != c.want {
			t.Errorf("met(%q, a=%v r=%v) = %q, want %q", c.target, c.a, c.r, got, c.want)
		}
	}
}
