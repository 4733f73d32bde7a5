package filter

import (
	"math"
	"strconv"
	"unicode"
	"unicode/utf8"
)

// Conversions of property strings exactly as the Java evaluator does them. Each
// returns ok=false where Java throws NumberFormatException. None allocates.

// javaParseInt is Integer.parseInt / Long.parseLong for radix 10 (bits 32 or 64):
// an optional sign, then one or more decimal digits (Character.digit accepts any
// BMP Unicode decimal digit, e.g. fullwidth '５'), no spaces, no overflow.
func javaParseInt(s string, bits int) (int64, bool) {
	if s == "" {
		return 0, false
	}
	neg := false
	i := 0
	if s[0] == '-' || s[0] == '+' {
		neg = s[0] == '-'
		i = 1
		if len(s) == 1 {
			return 0, false
		}
	}
	// Accumulate negatively, as Java does, so the minimum value fits.
	var limit int64
	switch {
	case neg && bits == 32:
		limit = math.MinInt32
	case neg:
		limit = math.MinInt64
	case bits == 32:
		limit = -math.MaxInt32
	default:
		limit = -math.MaxInt64
	}
	multmin := limit / 10
	var acc int64
	for i < len(s) {
		d, size := javaDigit(s[i:])
		if d < 0 {
			return 0, false
		}
		i += size
		if acc < multmin {
			return 0, false
		}
		acc *= 10
		if acc < limit+int64(d) {
			return 0, false
		}
		acc -= int64(d)
	}
	if neg {
		return acc, true
	}
	return -acc, true
}

// javaDigit is Character.digit(c, 10) on the first char of s: its value and the
// UTF-8 length, or -1. Java walks UTF-16 units, so a supplementary-plane digit is
// two surrogates and not a digit.
func javaDigit(s string) (int, int) {
	c := s[0]
	if c < utf8.RuneSelf {
		if isDigit(c) {
			return int(c - '0'), 1
		}
		return -1, 1
	}
	r, size := utf8.DecodeRuneInString(s)
	if r == utf8.RuneError || r > 0xFFFF || !unicode.IsDigit(r) {
		return -1, size
	}
	// Unicode decimal digits come in contiguous runs of ten, zero first.
	zero := r
	for zero > 0 && unicode.IsDigit(zero-1) {
		zero--
	}
	return int(r-zero) % 10, size
}

// javaParseBool is Boolean.valueOf(String): "true" in any case, anything else false.
func javaParseBool(s string) bool { return asciiEqualFold(s, "true") }

// javaParseDouble is Double.valueOf(String) (FloatingDecimal.readJavaFormatString):
// String.trim, optional sign, then "NaN", "Infinity", a hexadecimal float
// (0x1.8p3, exponent required) or a decimal (digits with at most one '.', at
// least one digit, optional e/E exponent), optionally followed by f/F/d/D.
func javaParseDouble(s string) (float64, bool) {
	s = javaTrim(s)
	if s == "" {
		return 0, false
	}
	i := 0
	neg := false
	if s[0] == '+' || s[0] == '-' {
		neg = s[0] == '-'
		i = 1
	}
	rest := s[i:]
	switch rest {
	case "NaN":
		return math.NaN(), true
	case "Infinity":
		if neg {
			return math.Inf(-1), true
		}
		return math.Inf(1), true
	}
	body := s
	if n := len(s); n > 0 {
		switch s[n-1] {
		case 'f', 'F', 'd', 'D':
			body = s[:n-1]
		}
	}
	if !validJavaFloat(body[i:]) {
		return 0, false
	}
	// Settle far-out magnitudes here: ParseFloat allocates its range error.
	switch e := decimalMagnitude(body[i:]); {
	case e > 309:
		if neg {
			return math.Inf(-1), true
		}
		return math.Inf(1), true
	case e < -324:
		if neg {
			return math.Copysign(0, -1), true
		}
		return 0, true
	}
	f, err := strconv.ParseFloat(body, 64)
	if err != nil {
		// Only range errors get here (syntax was checked): Java yields ±Infinity
		// or zero, and so does ParseFloat alongside the error.
		if ne, ok := err.(*strconv.NumError); ok && ne.Err == strconv.ErrRange {
			return f, true
		}
		return 0, false
	}
	return f, true
}

// validJavaFloat checks the unsigned, suffix-free part of a Java double literal
// in the subset strconv.ParseFloat reads the same way.
func validJavaFloat(s string) bool {
	if len(s) > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X') {
		return validHexFloat(s[2:])
	}
	i, digits := 0, 0
	for i < len(s) && isDigit(s[i]) {
		i++
		digits++
	}
	if i < len(s) && s[i] == '.' {
		i++
		for i < len(s) && isDigit(s[i]) {
			i++
			digits++
		}
	}
	if digits == 0 {
		return false
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		n := exponentLen(s[i:])
		if n == 0 {
			return false
		}
		i += n
	}
	return i == len(s)
}

// decimalMagnitude is, for a valid decimal literal 0.d1d2...×10^e with d1 != 0,
// the e (so the value lies in [10^(e-1), 10^e)); 0 for zero values and hex.
// The exponent saturates, so absurd exponents stay absurd.
func decimalMagnitude(s string) int {
	if len(s) > 1 && (s[1] == 'x' || s[1] == 'X') {
		return 0
	}
	i, point, first := 0, -1, -1
	for ; i < len(s) && (isDigit(s[i]) || s[i] == '.'); i++ {
		if s[i] == '.' {
			point = i
		} else if first < 0 && s[i] != '0' {
			first = i
		}
	}
	if first < 0 {
		return 0
	}
	if point < 0 {
		point = i
	}
	e := point - first
	if first > point {
		e++ // digits after the point: 0.001 has its first digit at 10^-3
	}
	if i < len(s) { // exponent
		i++
		neg := false
		if s[i] == '+' || s[i] == '-' {
			neg = s[i] == '-'
			i++
		}
		x := 0
		for ; i < len(s); i++ {
			if x < 1_000_000 {
				x = x*10 + int(s[i]-'0')
			}
		}
		if neg {
			x = -x
		}
		e += x
	}
	return e
}

func isHexDigit(c byte) bool {
	return isDigit(c) || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

// validHexFloat: hex digits with an optional '.', at least one digit, then p/P,
// an optional sign and decimal digits.
func validHexFloat(s string) bool {
	i, digits := 0, 0
	for i < len(s) && isHexDigit(s[i]) {
		i++
		digits++
	}
	if i < len(s) && s[i] == '.' {
		i++
		for i < len(s) && isHexDigit(s[i]) {
			i++
			digits++
		}
	}
	if digits == 0 || i >= len(s) || s[i] != 'p' && s[i] != 'P' {
		return false
	}
	i++
	if i < len(s) && (s[i] == '+' || s[i] == '-') {
		i++
	}
	d := i
	for i < len(s) && isDigit(s[i]) {
		i++
	}
	return i > d && i == len(s)
}

// javaDoubleCompare is Double.compare: numeric order, but -0.0 < 0.0 and NaN is
// equal to itself and above +Infinity.
func javaDoubleCompare(a, b float64) int {
	if a < b {
		return -1
	}
	if a > b {
		return 1
	}
	ab, bb := javaDoubleBits(a), javaDoubleBits(b)
	switch {
	case ab == bb:
		return 0
	case ab < bb:
		return -1
	default:
		return 1
	}
}

// javaDoubleBits is Double.doubleToLongBits: the IEEE bits with every NaN collapsed
// to the canonical one, read as a signed long.
func javaDoubleBits(f float64) int64 {
	if f != f {
		return 0x7ff8000000000000
	}
	return int64(math.Float64bits(f))
}
