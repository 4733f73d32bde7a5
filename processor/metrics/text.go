package metrics

import (
	"math"
	"slices"
	"strconv"
	"strings"
)

// The Prometheus text format (0.0.4) is written here by hand: it is a few
// lines of syntax, and the client library it replaces (with protobuf under it)
// cost 2.4 MiB of resident memory in an idle broker and a quarter of the binary.

// Metric types as the format's TYPE line names them.
const (
	typeGauge     = "gauge"
	typeCounter   = "counter"
	typeHistogram = "histogram"
	typeSummary   = "summary"
)

// desc names one family: its help, type and label keys (values come per sample).
type desc struct {
	name, help, typ string
	labels          []string
}

func newDesc(name, help, typ string, labels ...string) *desc {
	return &desc{name: name, help: help, typ: typ, labels: labels}
}

type labelPair struct{ name, value string }

// metric is one label set of a family: a value, or the buckets (cumulative, by
// upper bound) or quantiles with count and sum of a histogram or summary.
type metric struct {
	labels []labelPair // sorted by name
	value  float64
	bounds []float64 // histogram upper bounds or summary quantiles
	counts []float64 // cumulative bucket counts or quantile values
	count  uint64
	sum    float64
}

type family struct {
	d       *desc
	metrics []metric
}

// sink gathers one scrape: samples by family, each family's label sets
// carrying the sink's common labels.
type sink struct {
	common []labelPair
	fams   map[string]*family
}

func newSink() *sink { return &sink{fams: map[string]*family{}} }

// withCommon returns a sink sharing s's families whose samples also carry the
// given labels (the scope and node labels of every rocketmq_* series).
func (s *sink) withCommon(common map[string]string) *sink {
	c := &sink{fams: s.fams}
	for k, v := range common {
		c.common = append(c.common, labelPair{k, v})
	}
	return c
}

func (s *sink) labelSet(d *desc, lv []string) []labelPair {
	ls := make([]labelPair, 0, len(s.common)+len(d.labels))
	ls = append(ls, s.common...)
	for i, n := range d.labels {
		v := ""
		if i < len(lv) {
			v = lv[i]
		}
		ls = append(ls, labelPair{n, v})
	}
	slices.SortFunc(ls, func(a, b labelPair) int { return strings.Compare(a.name, b.name) })
	return ls
}

func (s *sink) put(d *desc, m metric) {
	f := s.fams[d.name]
	if f == nil {
		f = &family{d: d}
		s.fams[d.name] = f
	}
	f.metrics = append(f.metrics, m)
}

func (s *sink) gauge(d *desc, v float64, lv ...string) {
	s.put(d, metric{labels: s.labelSet(d, lv), value: v})
}

func (s *sink) counter(d *desc, v float64, lv ...string) { s.gauge(d, v, lv...) }

// histogram adds one histogram: cum[i] counts observations up to bounds[i];
// count is all of them (the +Inf bucket).
func (s *sink) histogram(d *desc, bounds []float64, cum []uint64, count uint64, sum float64, lv ...string) {
	c := make([]float64, len(cum))
	for i, n := range cum {
		c[i] = float64(n)
	}
	s.put(d, metric{labels: s.labelSet(d, lv), bounds: bounds, counts: c, count: count, sum: sum})
}

// summary adds one summary: values[i] is quantile q[i].
func (s *sink) summary(d *desc, q, values []float64, count uint64, sum float64, lv ...string) {
	s.put(d, metric{labels: s.labelSet(d, lv), bounds: q, counts: values, count: count, sum: sum})
}

// appendText renders every family, sorted by name and each family's label
// sets by their values, as the client library did.
func (s *sink) appendText(b []byte) []byte {
	names := make([]string, 0, len(s.fams))
	for n := range s.fams {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		f := s.fams[n]
		slices.SortStableFunc(f.metrics, func(x, y metric) int { return compareLabels(x.labels, y.labels) })
		b = append(b, "# HELP "...)
		b = append(b, n...)
		b = append(b, ' ')
		b = appendEscaped(b, f.d.help, false)
		b = append(b, "\n# TYPE "...)
		b = append(b, n...)
		b = append(b, ' ')
		b = append(b, f.d.typ...)
		b = append(b, '\n')
		for i := range f.metrics {
			b = appendMetric(b, f.d, &f.metrics[i])
		}
	}
	return b
}

func compareLabels(x, y []labelPair) int {
	for i := 0; i < len(x) && i < len(y); i++ {
		if c := strings.Compare(x[i].value, y[i].value); c != 0 {
			return c
		}
	}
	return len(x) - len(y)
}

func appendMetric(b []byte, d *desc, m *metric) []byte {
	switch d.typ {
	case typeHistogram:
		for i, bound := range m.bounds {
			b = appendSample(b, d.name, "_bucket", m.labels, "le", bound, m.counts[i])
		}
		b = appendSample(b, d.name, "_bucket", m.labels, "le", math.Inf(1), float64(m.count))
	case typeSummary:
		for i, q := range m.bounds {
			b = appendSample(b, d.name, "", m.labels, "quantile", q, m.counts[i])
		}
	default:
		return appendSample(b, d.name, "", m.labels, "", 0, m.value)
	}
	b = appendSample(b, d.name, "_sum", m.labels, "", 0, m.sum)
	return appendSample(b, d.name, "_count", m.labels, "", 0, float64(m.count))
}

// appendSample writes one line; extra, when set, is a last label (le or
// quantile) with a numeric value.
func appendSample(b []byte, name, suffix string, ls []labelPair, extra string, extraV, v float64) []byte {
	b = append(b, name...)
	b = append(b, suffix...)
	if len(ls) > 0 || extra != "" {
		b = append(b, '{')
		for i, l := range ls {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, l.name...)
			b = append(b, `="`...)
			b = appendEscaped(b, l.value, true)
			b = append(b, '"')
		}
		if extra != "" {
			if len(ls) > 0 {
				b = append(b, ',')
			}
			b = append(b, extra...)
			b = append(b, `="`...)
			b = appendFloat(b, extraV)
			b = append(b, '"')
		}
		b = append(b, '}')
	}
	b = append(b, ' ')
	b = appendFloat(b, v)
	return append(b, '\n')
}

// appendEscaped escapes a backslash and a newline, and in a label value a
// double quote too (the format's two escaping rules).
func appendEscaped(b []byte, s string, quote bool) []byte {
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '\\':
			b = append(b, `\\`...)
		case c == '\n':
			b = append(b, `\n`...)
		case c == '"' && quote:
			b = append(b, `\"`...)
		default:
			b = append(b, c)
		}
	}
	return b
}

func appendFloat(b []byte, f float64) []byte {
	switch {
	case math.IsInf(f, 1):
		return append(b, "+Inf"...)
	case math.IsInf(f, -1):
		return append(b, "-Inf"...)
	case math.IsNaN(f):
		return append(b, "NaN"...)
	}
	return strconv.AppendFloat(b, f, 'g', -1, 64)
}
