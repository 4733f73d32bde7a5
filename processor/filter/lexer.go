package filter

import "fmt"

// tokKind numbers the tokens of SelectorParser.jj.
type tokKind uint8

const (
	tEOF tokKind = iota
	tNot
	tAnd
	tOr
	tBetween
	tIn
	tTrue
	tFalse
	tNull
	tIs
	tContains
	tStartsWith
	tEndsWith
	tDecimal
	tFloat
	tString
	tID
	tEq     // =
	tNe     // <>
	tGt     // >
	tGe     // >=
	tLt     // <
	tLe     // <=
	tLParen // (
	tComma  // ,
	tRParen // )
	tPlus   // +
	tMinus  // -
)

var tokNames = [...]string{"end of input", "NOT", "AND", "OR", "BETWEEN", "IN", "TRUE", "FALSE", "NULL",
	"IS", "CONTAINS", "STARTSWITH", "ENDSWITH", "integer", "decimal", "string", "identifier",
	"'='", "'<>'", "'>'", "'>='", "'<'", "'<='", "'('", "','", "')'", "'+'", "'-'"}

func (k tokKind) String() string {
	if int(k) < len(tokNames) {
		return tokNames[k]
	}
	return fmt.Sprintf("token(%d)", k)
}

// keywords are matched case-insensitively (IGNORE_CASE) and only as a whole word:
// the lexer takes the longest match, so "NOTE" is an identifier.
var keywords = [...]struct {
	word string
	kind tokKind
}{
	{"NOT", tNot}, {"AND", tAnd}, {"OR", tOr}, {"BETWEEN", tBetween}, {"IN", tIn},
	{"TRUE", tTrue}, {"FALSE", tFalse}, {"NULL", tNull}, {"IS", tIs},
	{"CONTAINS", tContains}, {"STARTSWITH", tStartsWith}, {"ENDSWITH", tEndsWith},
}

type token struct {
	kind tokKind
	pos  int
	text string // raw image (string literals keep their quotes)
}

// lexer produces tokens on demand. Laziness matters: the Java parser never asks for
// the tokens after the first complete expression (but one), so trailing text that
// would not even lex is accepted there, and must be here.
type lexer struct {
	src string
	pos int
}

func isIDStart(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_' || c == '$'
}

func isIDPart(c byte) bool { return isIDStart(c) || c >= '0' && c <= '9' }

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// skip passes over white space and comments. A "--" comment needs a line end; without
// one the dashes are minus tokens. An unterminated "/*" is left for next to reject.
func (l *lexer) skip() {
	s := l.src
	for l.pos < len(s) {
		switch c := s[l.pos]; {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f':
			l.pos++
		case c == '-' && l.pos+1 < len(s) && s[l.pos+1] == '-':
			end := -1
			for j := l.pos + 2; j < len(s); j++ {
				if s[j] == '\n' || s[j] == '\r' {
					end = j
					break
				}
			}
			if end < 0 {
				return
			}
			l.pos = end + 1
		case c == '/' && l.pos+1 < len(s) && s[l.pos+1] == '*':
			end := -1
			for j := l.pos + 2; j+1 < len(s); j++ {
				if s[j] == '*' && s[j+1] == '/' {
					end = j + 2
					break
				}
			}
			if end < 0 {
				return
			}
			l.pos = end
		default:
			return
		}
	}
}

func (l *lexer) next() (token, error) {
	l.skip()
	s := l.src
	start := l.pos
	if start >= len(s) {
		return token{kind: tEOF, pos: start}, nil
	}
	c := s[start]
	emit := func(k tokKind, n int) (token, error) {
		l.pos = start + n
		return token{kind: k, pos: start, text: s[start : start+n]}, nil
	}
	switch {
	case isIDStart(c):
		n := 1
		for start+n < len(s) && isIDPart(s[start+n]) {
			n++
		}
		word := s[start : start+n]
		for _, kw := range keywords {
			if len(kw.word) == n && asciiEqualFold(word, kw.word) {
				return emit(kw.kind, n)
			}
		}
		return emit(tID, n)
	case isDigit(c) || c == '.':
		return l.number(start)
	case c == '\'':
		n := stringLiteralLen(s[start:])
		if n == 0 {
			return token{}, fmt.Errorf("unterminated string literal at offset %d", start)
		}
		return emit(tString, n)
	case c == '=':
		return emit(tEq, 1)
	case c == '<':
		if start+1 < len(s) && s[start+1] == '>' {
			return emit(tNe, 2)
		}
		if start+1 < len(s) && s[start+1] == '=' {
			return emit(tLe, 2)
		}
		return emit(tLt, 1)
	case c == '>':
		if start+1 < len(s) && s[start+1] == '=' {
			return emit(tGe, 2)
		}
		return emit(tGt, 1)
	case c == '(':
		return emit(tLParen, 1)
	case c == ',':
		return emit(tComma, 1)
	case c == ')':
		return emit(tRParen, 1)
	case c == '+':
		return emit(tPlus, 1)
	case c == '-':
		return emit(tMinus, 1)
	}
	return token{}, fmt.Errorf("unexpected character %q at offset %d", rune(c), start)
}

// number lexes DECIMAL_LITERAL ("0" | [1-9][0-9]*[lL]?) and FLOATING_POINT_LITERAL
// (d+.d*E? | .d+E? | d+E), longest match first, DECIMAL on a tie.
func (l *lexer) number(start int) (token, error) {
	s := l.src
	i := start
	for i < len(s) && isDigit(s[i]) {
		i++
	}
	intDigits := i - start
	floatEnd := 0
	if i < len(s) && s[i] == '.' {
		j := i + 1
		for j < len(s) && isDigit(s[j]) {
			j++
		}
		if intDigits > 0 || j > i+1 {
			floatEnd = j + exponentLen(s[j:])
		}
	} else if intDigits > 0 {
		if e := exponentLen(s[i:]); e > 0 {
			floatEnd = i + e
		}
	}
	decEnd := 0
	if intDigits > 0 {
		if s[start] == '0' {
			decEnd = start + 1
		} else {
			decEnd = i
			if i < len(s) && (s[i] == 'l' || s[i] == 'L') {
				decEnd++
			}
		}
	}
	switch {
	case decEnd == 0 && floatEnd == 0:
		return token{}, fmt.Errorf("unexpected character '.' at offset %d", start)
	case floatEnd > decEnd:
		l.pos = floatEnd
		return token{kind: tFloat, pos: start, text: s[start:floatEnd]}, nil
	default:
		l.pos = decEnd
		return token{kind: tDecimal, pos: start, text: s[start:decEnd]}, nil
	}
}

// exponentLen is the length of a complete [eE][+-]?[0-9]+ prefix of s, or 0.
func exponentLen(s string) int {
	if len(s) == 0 || s[0] != 'e' && s[0] != 'E' {
		return 0
	}
	i := 1
	if i < len(s) && (s[i] == '+' || s[i] == '-') {
		i++
	}
	d := i
	for i < len(s) && isDigit(s[i]) {
		i++
	}
	if i == d {
		return 0
	}
	return i
}

// stringLiteralLen is the length of the longest prefix of s (which starts with a
// quote) that is a STRING_LITERAL: a quote, then doubled quotes or other
// characters, then a quote; 0 if there is none. Every quote that is the 1st, 3rd,
// 5th... of a run of quotes can close the literal; the longest match closes at the
// last such quote before an odd run ends or the input runs out.
func stringLiteralLen(s string) int {
	last := 0
	i := 1
	for i < len(s) {
		if s[i] != '\'' {
			i++
			continue
		}
		run := 0
		for i+run < len(s) && s[i+run] == '\'' {
			run++
		}
		if run%2 == 1 {
			return i + run
		}
		last = i + run - 1 // the run's second-to-last quote could close it
		i += run
	}
	return last
}

// decodeString strips the quotes of a STRING_LITERAL image and turns ” into '.
func decodeString(image string) string {
	body := image[1 : len(image)-1]
	out := make([]byte, 0, len(body))
	for i := 0; i < len(body); i++ {
		out = append(out, body[i])
		if body[i] == '\'' {
			i++
		}
	}
	return string(out)
}

func asciiEqualFold(a, b string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := 0; i < len(a); i++ {
		x, y := a[i], b[i]
		if x >= 'a' && x <= 'z' {
			x -= 'a' - 'A'
		}
		if y >= 'a' && y <= 'z' {
			y -= 'a' - 'A'
		}
		if x != y {
			return false
		}
	}
	return true
}
