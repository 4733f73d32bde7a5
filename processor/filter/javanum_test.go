package filter

import (
	"math"
	"strconv"
	"testing"
)

func TestJavaParseInt(t *testing.T) {
	tests := []struct {
		in   string
		bits int
		want int64
		ok   bool
	}{
		{"0", 32, 0, true},
		{"-0", 32, 0, true},
		{"+7", 32, 7, true},
		{"007", 32, 7, true},
		{"2147483647", 32, math.MaxInt32, true},
		{"-2147483648", 32, math.MinInt32, true},
		{"2147483648", 32, 0, false},
		{"-2147483649", 32, 0, false},
		{"2147483648", 64, 2147483648, true},
		{"9223372036854775807", 64, math.MaxInt64, true},
		{"-9223372036854775808", 64, math.MinInt64, true},
		{"9223372036854775808", 64, 0, false},
		{"99999999999999999999", 64, 0, false},
		{"１２", 32, 12, true}, // fullwidth digits
		{"٣٤", 32, 34, true}, // Arabic-Indic digits
		{"𝟏", 32, 0, false},  // a supplementary digit is two surrogates in Java
		{"", 32, 0, false},
		{"+", 32, 0, false},
		{"-", 32, 0, false},
		{" 1", 32, 0, false},
		{"1 ", 32, 0, false},
		{"1L", 64, 0, false},
		{"1.0", 32, 0, false},
		{"0x10", 32, 0, false},
		{"1_000", 32, 0, false},
		{"\xff", 32, 0, false},
	}
	for _, tt := range tests {
		got, ok := javaParseInt(tt.in, tt.bits)
		if ok != tt.ok || ok && got != tt.want {
			t.Errorf("javaParseInt(%q, %d) = %d, %v", tt.in, tt.bits, got, ok)
		}
	}
}

func TestJavaParseDouble(t *testing.T) {
	tests := []struct {
		in   string
		want float64
		ok   bool
	}{
		{"1", 1, true},
		{"1.5", 1.5, true},
		{"-1.5", -1.5, true},
		{"+.5", 0.5, true},
		{"5.", 5, true},
		{"1e3", 1000, true},
		{"1E+3", 1000, true},
		{"1e-3", 0.001, true},
		{"  2.5\t\n", 2.5, true}, // trimmed
		{"1.5f", 1.5, true},
		{"1.5D", 1.5, true},
		{"0x1p3", 8, true},
		{"-0X1.8P1", -3, true},
		{"0x1p3d", 8, true},
		{"Infinity", math.Inf(1), true},
		{"-Infinity", math.Inf(-1), true},
		{"1e400", math.Inf(1), true},
		{"1e-400", 0, true},
		{"", 0, false},
		{" ", 0, false},
		{".", 0, false},
		{"e3", 0, false},
		{"1e", 0, false},
		{"1e+", 0, false},
		{"1.5.5", 0, false},
		{"inf", 0, false},
		{"infinity", 0, false},
		{"nan", 0, false},
		{"NaNd", 0, false},
		{"0x1", 0, false}, // hex needs an exponent
		{"0x", 0, false},
		{"1_0", 0, false},
		{"0x_1p0", 0, false},
		{"1f5", 0, false},
		{"１", 0, false}, // only ASCII digits here
		{"1,5", 0, false},
	}
	for _, tt := range tests {
		got, ok := javaParseDouble(tt.in)
		if ok != tt.ok || ok && got != tt.want {
			t.Errorf("javaParseDouble(%q) = %v, %v", tt.in, got, ok)
		}
	}
	if f, ok := javaParseDouble("NaN"); !ok || f == f {
		t.Error("NaN")
	}
	if f, ok := javaParseDouble("-NaN"); !ok || f == f {
		t.Error("-NaN")
	}
}

func TestJavaDoubleCompare(t *testing.T) {
	nan := math.NaN()
	tests := []struct {
		a, b float64
		want int
	}{
		{1, 2, -1}, {2, 1, 1}, {1, 1, 0},
		{math.Copysign(0, -1), 0, -1},
		{0, math.Copysign(0, -1), 1},
		{nan, nan, 0},
		{nan, math.Inf(1), 1},
		{math.Inf(1), nan, -1},
	}
	for _, tt := range tests {
		if got := javaDoubleCompare(tt.a, tt.b); got != tt.want {
			t.Errorf("javaDoubleCompare(%v, %v) = %d", tt.a, tt.b, got)
		}
	}
}

func TestLexerTokens(t *testing.T) {
	tests := []struct {
		src   string
		kinds []tokKind
	}{
		{"a<>b<=c>=d<e>f", []tokKind{tID, tNe, tID, tLe, tID, tGe, tID, tLt, tID, tGt, tID}},
		{"007", []tokKind{tDecimal, tDecimal, tDecimal}},
		{"007.5", []tokKind{tFloat}},
		{"12L5", []tokKind{tDecimal, tDecimal}},
		{"0L", []tokKind{tDecimal, tID}},
		{"1e", []tokKind{tDecimal, tID}},
		{"1.5e+", []tokKind{tFloat, tID, tPlus}},
		{"5e10 .5 5.", []tokKind{tFloat, tFloat, tFloat}},
		{"'a''b' 'c'", []tokKind{tString, tString}},
		{"NOTE note Not", []tokKind{tID, tID, tNot}},
		{"--x\n a", []tokKind{tID}},
		{"--x", []tokKind{tMinus, tMinus, tID}},
		{"/**/a/* * / **/b", []tokKind{tID, tID}},
	}
	for _, tt := range tests {
		lx := lexer{src: tt.src}
		var got []tokKind
		for {
			tok, err := lx.next()
			if err != nil {
				t.Fatalf("%q: %v", tt.src, err)
			}
			if tok.kind == tEOF {
				break
			}
			got = append(got, tok.kind)
		}
		if len(got) != len(tt.kinds) {
			t.Errorf("%q: %v, want %v", tt.src, got, tt.kinds)
			continue
		}
		for i := range got {
			if got[i] != tt.kinds[i] {
				t.Errorf("%q: %v, want %v", tt.src, got, tt.kinds)
				break
			}
		}
	}
	for _, src := range []string{"'abc", "'abc''", "#", "/* x", ".", "!"} {
		lx := lexer{src: src}
		var err error
		for range 10 {
			var tok token
			if tok, err = lx.next(); err != nil || tok.kind == tEOF {
				break
			}
		}
		if err == nil {
			t.Errorf("%q lexed", src)
		}
	}
	// The longest string literal ends at the last quote that can close it.
	if n := stringLiteralLen("'ab''"); n != 4 {
		t.Errorf("stringLiteralLen = %d", n)
	}
	if got := decodeString("'it''s'"); got != "it's" {
		t.Errorf("decodeString = %q", got)
	}
}

func TestDecimalMagnitude(t *testing.T) {
	tests := map[string]int{"1": 1, "9.9": 1, "10": 2, "0.5": 0, "0.05": -1, ".001": -2, "1e3": 4, "1.5e-3": -2,
		"0": 0, "0.000": 0, "00012.5": 2, "1e99999999999": 10_000_000, "5.": 1, "0x1p3": 0}
	for in, want := range tests {
		if got := decimalMagnitude(in); got != want {
			t.Errorf("decimalMagnitude(%q) = %d, want %d", in, got, want)
		}
	}
	for _, in := range []string{"1e309", "9.99e308", "1.7976931348623157e308", "1.8e308", "2e-324", "2.5e-324",
		"4.9e-324", "1e-323", "0.1e-322", "123456e-329"} {
		want, _ := strconvParse(in)
		got, ok := javaParseDouble(in)
		if !ok || got != want {
			t.Errorf("javaParseDouble(%q) = %v, want %v", in, got, want)
		}
	}
}

func strconvParse(s string) (float64, error) { return strconv.ParseFloat(s, 64) }
