package filter

import (
	"errors"
	"sort"
	"strings"
	"testing"
)

// kv builds an encoded properties string from name, value pairs.
func kv(pairs ...string) string {
	var sb strings.Builder
	for i := 0; i+1 < len(pairs); i += 2 {
		sb.WriteString(pairs[i] + "\x01" + pairs[i+1] + "\x02")
	}
	return sb.String()
}

// evalResult is the tri-state outcome Java's evaluate would give: T, F, N (null)
// or X (an exception, which the broker logs and counts as no match).
func evalResult(e *Expression, props string) string {
	src := source{props: props}
	v, ok := e.eval(e.root, &src)
	switch {
	case !ok:
		return "X"
	case v.kind == vNull:
		return "N"
	case v.kind == vBool && v.b:
		return "T"
	case v.kind == vBool:
		return "F"
	}
	return "O"
}

type evalCase struct {
	expr  string
	props string
	want  string
}

// Cases in the spirit of rocketmq-filter's ExpressionTest, plus the corners of
// null handling and type mixing. Every expected value was checked against the
// Java filter (see TestJavaOracle).
var evalCases = []evalCase{
	// AND / OR over numbers held as strings
	{"a=3 and b<>4 And c>5 AND d<=4", kv("a", "3", "b", "5", "c", "6", "d", "1"), "T"},
	{"a=3 and b<>4 And c>5 AND d<=4", kv("a", "4", "b", "5", "c", "6", "d", "1"), "F"},
	{"a=3 or b<>4 Or c>5 OR d<=4", kv("a", "3"), "T"},
	{"a=3 or b<>4 Or c>5 OR d<=4", kv("a", "4", "b", "5"), "T"},
	{"a=3 or b<>4 Or c>5 OR d<=4", kv("a", "4", "b", "4", "c", "3", "d", "2"), "T"},
	{"a=3 or b<>4 Or c>5 OR d<=4", kv("a", "4", "b", "4", "c", "3", "d", "10"), "F"},
	// IN / NOT IN (strings only)
	{"a in ('3', '4', '5')", kv("a", "4"), "T"},
	{"a in ('3', '4', '5')", kv("a", "8"), "F"},
	{"a in ('3', '4', '5')", "", "N"},
	{"a not in ('3', '4', '5')", kv("a", "8"), "T"},
	{"a not in ('3', '4', '5')", kv("a", "3"), "F"},
	{"a not in ('3', '4', '5')", "", "N"},
	{"a in ('1','2','3','4','5','6')", kv("a", "6"), "T"}, // hashed list
	{"a in ('1','2','3','4','5','6')", kv("a", "7"), "F"},
	{"a in ('a''b')", kv("a", "a'b"), "T"},
	// BETWEEN
	{"a between 2 and 10", kv("a", "2"), "T"},
	{"a between 2 and 10", kv("a", "10"), "T"},
	{"a between 2 and 10", kv("a", "11"), "F"},
	{"a not between 2 and 10", kv("a", "1"), "T"},
	{"a not between 2 and 10", kv("a", "3"), "F"},
	{"a between 2 and 10", "", "N"},
	{"a between 2 and 10", kv("a", "abc"), "X"},
	{"a between 2 and 10", kv("a", "3.5"), "X"},   // Integer.valueOf("3.5") throws
	{"a between 2.0 and 10", kv("a", "3.5"), "X"}, // a <= 10 still reads a as an Integer
	{"a between 2.0 and 10.0", kv("a", "3.5"), "T"},
	{"a between -10 and -5", kv("a", "-7"), "T"},
	{"a between -5 and -10", kv("a", "-7"), "F"}, // negated bounds are not literals: no order check
	// IS NULL
	{"a is null", kv("abc", "2"), "T"},
	{"a is null", kv("a", "2"), "F"},
	{"a is not null", kv("a", "2"), "T"},
	{"a is not null", "", "F"},
	{"(a > 1) is null", "", "T"},
	// null propagation through comparisons and logic
	{"a = 'x'", "", "N"},
	{"'x' = a", "", "F"}, // Java's doCreateEqual is not symmetric
	{"a <> 'x'", "", "N"},
	{"'x' <> a", "", "T"},
	{"a = b", "", "T"}, // both null
	{"a > 1", "", "N"},
	{"a is null OR a='hello'", "", "T"},
	{"a is null OR a='hello'", kv("a", "hello"), "T"},
	{"a is null OR a='hello'", kv("a", "abc"), "F"},
	{"a = 1 OR b = 1", kv("b", "1"), "T"},
	{"a = 1 OR b = 1", kv("b", "2"), "N"},
	{"a = 1 AND b = 1", kv("b", "2"), "F"},
	{"a = 1 AND b = 1", kv("b", "1"), "N"},
	{"NOT (a = 1)", "", "N"},
	// exceptions abort everything, unless short-circuited away
	{"a = 1 OR b = 'x'", kv("a", "abc", "b", "x"), "X"},
	{"b = 'x' OR a = 1", kv("a", "abc", "b", "x"), "T"},
	{"a = 1 AND b = 'x'", kv("a", "2", "b", "zzz"), "F"},
	// equality converts the string to the literal's type
	{"a = 3", kv("a", "3"), "T"},
	{"a = 3", kv("a", "+3"), "T"},
	{"a = 3", kv("a", "0003"), "T"},
	{"a = 3", kv("a", "３"), "T"}, // Character.digit accepts Unicode digits
	{"a = 3", kv("a", " 3"), "X"},
	{"a = 3", kv("a", "3.0"), "X"},
	{"a = 3", kv("a", "2147483648"), "X"}, // Integer overflow
	{"a = 2147483648", kv("a", "2147483648"), "T"},
	{"a = 3L", kv("a", "3"), "T"},
	{"a = 3.0", kv("a", "3"), "T"},
	{"a = 3.0", kv("a", " 3 "), "T"}, // Double.valueOf trims
	{"a = 3.0", kv("a", "3f"), "T"},
	{"a = 8.0", kv("a", "0x1p3"), "T"},
	{"a = 3", kv("a", "abc"), "X"},
	{"a = '3'", kv("a", "3.0"), "F"},
	{"a = 'hello'", kv("a", "hello"), "T"},
	{"TAGS is not null and TAGS='''''tag'''''", kv("TAGS", "''tag''"), "T"},
	{"a=TRUE OR b=FALSE", kv("a", "true", "b", "false"), "T"},
	{"a=TRUE OR b=FALSE", kv("a", "false", "b", "true"), "F"},
	{"a = TRUE", kv("a", "TrUe"), "T"},
	{"a = TRUE", kv("a", "yes"), "F"},
	{"3 = TRUE", "", "F"},
	{"(a = 1) = 'x'", kv("a", "1"), "X"}, // Boolean vs String is a ClassCastException
	{"(a = 1) = TRUE", kv("a", "1"), "T"},
	{"(a = 1) = 1", kv("a", "1"), "F"},
	{"3 = 3.0", "", "T"},
	{"a = -0.5", kv("a", "-0.5"), "T"},
	{"a = 2 - -3", kv("a", "2"), "T"}, // trailing tokens are ignored: "a = 2"
	// relational: two strings compare as doubles, otherwise as the literal's type
	{"a > b", kv("a", "10", "b", "20"), "F"},
	{"a > b", kv("a", "20", "b", "10"), "T"},
	{"a > b", kv("a", "20", "b", "x"), "X"},
	{"a > 3.14", kv("a", "3.1415"), "T"},
	{"a > 3.1E10", kv("a", "3.1415E10"), "T"},
	{"a > 1.5", kv("a", "NaN"), "T"},
	{"a < 1.5", kv("a", "NaN"), "F"},
	{"a > 1.5", kv("a", "Infinity"), "T"},
	{"a < -1.5", kv("a", "-Infinity"), "T"},
	{"a >= 1", kv("a", "1"), "T"},
	{"a < 1", kv("a", "-2147483648"), "T"},
	{"a < 1", kv("a", "-2147483649"), "X"},
	{"a < 9223372036854775807", kv("a", "9223372036854775806"), "T"},
	{"-a > 1", kv("a", "5"), "N"}, // negating a string gives null
	{"a > -'x'", kv("a", "5"), "N"},
	{"a = -NULL", "", "T"},
	{"a = -NULL", kv("a", "1"), "F"},
	// a bare property is a boolean cast: a String is never TRUE
	{"a", kv("a", "true"), "F"},
	{"a", "", "N"},
	{"NOT a", kv("a", "true"), "T"},
	{"TRUE", "", "T"},
	{"FALSE", "", "F"},
	{"NULL", "", "N"},
	{"NOT NULL", "", "N"},
	// NOT binds tighter than comparisons: (NOT a) = 'x'
	{"NOT a = 'x'", kv("a", "y"), "X"},
	{"NOT a = 'x'", "", "N"},
	// CONTAINS / STARTSWITH / ENDSWITH
	{"value contains 'x'", kv("value", "axb"), "T"},
	{"value startswith 'ax'", kv("value", "axb"), "T"},
	{"value endswith 'xb'", kv("value", "axb"), "T"},
	{"value not contains 'x'", kv("value", "axb"), "F"},
	{"value not startswith 'x'", kv("value", "abb"), "T"},
	{"value not endswith 'x'", kv("value", "abb"), "T"},
	{"value contains ''", kv("value", "axb"), "F"},
	{"value not contains ''", kv("value", "axb"), "F"},
	{"value contains 'x'", "", "F"},
	{"value not contains 'x'", "", "F"}, // null is FALSE here, not NULL
	{"'axb' contains 'x'", "", "T"},
	{"' ' startswith ' '", "", "T"},
	{"(a = 1) contains 'x'", kv("a", "1"), "F"},
	{"a not in ('4', '4', '5') and b between 3 and 10 and c not startswith 'axbc'", kv("a", "3", "b", "3", "c", "axbdc"), "T"},
	// property names and keyword case
	{"TAGS = 'TagA'", kv("TAGS", "TagA"), "T"},
	{"$x_1 = '1' aNd _Y IS nUlL", kv("$x_1", "1"), "T"},
	{"now <= 5", kv("now", "4"), "T"},        // "now" is an ordinary property
	{"a = '1'", "a\x011\x02a\x012\x02", "F"}, // the last duplicate wins
	{"a = '1\x012'", "a\x011\x012\x02", "T"}, // the value may hold 0x01
	// comments and white space
	{"a = 1 /* c */ AND b = 2", kv("a", "1", "b", "2"), "T"},
	{"a = 1 -- c\nAND b = 2", kv("a", "1", "b", "3"), "F"},
	{"\ta\r\n=\f1", kv("a", "1"), "T"},
}

func TestEvaluate(t *testing.T) {
	for _, tt := range evalCases {
		e, err := Compile(TypeSQL92, tt.expr)
		if err != nil {
			t.Errorf("Compile(%q): %v", tt.expr, err)
			continue
		}
		if got := evalResult(e, tt.props); got != tt.want {
			t.Errorf("%q on %q = %s, want %s", tt.expr, tt.props, got, tt.want)
		}
		m := map[string]string{}
		for _, p := range strings.Split(tt.props, "\x02") {
			if n, v, ok := strings.Cut(p, "\x01"); ok && n != "" && v != "" {
				m[n] = v
			}
		}
		get := func(n string) (string, bool) { v, ok := m[n]; return v, ok }
		want := tt.want == "T"
		if e.MatchEncodedProperties(tt.props) != want || e.MatchProperties(get) != want {
			t.Errorf("%q on %q: Match* disagree with %s", tt.expr, tt.props, tt.want)
		}
	}
}

// Expressions the Java parser accepts (ParserTest and more).
var validExprs = []string{
	"a=3 and b<>4 And c>5 AND d<=4",
	"a=3  and    b<>4 And c>5 AND d<=4",
	"a in ('3', '4', '5')",
	"(a not in ('6', '4', '5')) or (b in ('3', '4', '5'))",
	"(a between 2 and 10) AND (b not between 6 and 9)",
	"a is null", "a is not null", "a <= now",
	"a=3 and b contains 'xxx' and c not contains 'xxx'",
	"a between 2 and 2", "a between 1 and 1.5", "a between 1L and 2",
	"a > 9223372036854775807", "a > 1e308", "a > 4.9E-324", "a > 5.", "a > .5", "a > 5E3", "a > 1.5e+3",
	"a = 3 b = 4",  // parsing stops after "a = 3"
	"a = 3 ) junk", // trailing text is never lexed beyond one token
	"a = 3 x #",    // '#' is past the one peeked token
	"a = 3 -- no newline",
	"a = 1 - -2", "a = --2", "+a = 1", "a = +'x'", "TRUE", "NOT NOT TRUE", "(((a)))",
	"NOT a", "a", "(a) in ('x')", "3 = a", "'x' = a", "3 = TRUE", "a = TRUE",
	"a > -TRUE", "a = -NULL", "(a > 1) = TRUE", "(a > 1) IS NULL", "NULL",
	"a between -5 and -10", "a not between 10 and 0",
	strings.Repeat("(", 1000) + "a" + strings.Repeat(")", 1000),
	strings.Repeat("NOT ", 2000) + "a",
	"a)", "a = 00", "a = 0L", "a = 1 -- c\n", // "a", "a = 0", "a = 0", comment
}

// Expressions the Java parser rejects.
var invalidExprs = []string{
	"", " ", "a and between 2 and 10", " a between 10 and 0", "a between 1.5 and 1",
	"a > 100000000000000000000000", "a > 9223372036854775808", "a > 1e400", "a > 0.0", "a > 0e5", "a > 1e-400",
	"a = NULL", "NULL = a", "a <> NULL", "TRUE = 3", "TRUE = 'x'", "a > 'x'", "a > TRUE", "'x' > a",
	"a > NULL", "a between 'a' and 'b'", "a between NULL and 1", "(a > 1) > 1", "a between 1 and 'x'",
	"3 in ('3')", "'a' in ('a')", "(a = 1) in ('x')", "a in ()", "a in ('x',)", "a in (x)", "a in (1)",
	"a contains x", "a contains 123", "a not contains 123", "a not x", "a = 3 NOT x", "a is", "a is not",
	"a is 1", "a == 1", "a != 1", "a = 1 #", "a = 1 /* open", "a = 'open", "a.b = 1", "a = 1 .",
	"3", "'x'", "-a", "a AND 3", "NOT 3", "NOT 'x'", "(a", "()", "a = ", "= a", "\va = 1", "\u00a0a = 1", "ä = 1", "a = 1 OR", "a IN ('x') AND",
	strings.Repeat("(", 2000) + "a" + strings.Repeat(")", 2000),
}

func TestCompileSQL92(t *testing.T) {
	for _, s := range validExprs {
		e, err := Compile(TypeSQL92, s)
		if err != nil {
			t.Errorf("Compile(%q): %v", s, err)
			continue
		}
		if e.Type() != TypeSQL92 || e.String() != s || e.Tags() != nil || !e.MatchTagsCode(42) {
			t.Errorf("Compile(%q): %+v", s, e)
		}
	}
	for _, s := range invalidExprs {
		if _, err := Compile(TypeSQL92, s); !errors.Is(err, ErrInvalidExpression) {
			t.Errorf("Compile(%q) err = %v, want ErrInvalidExpression", s, err)
		}
	}
}

func TestLongChains(t *testing.T) {
	var terms []string
	for i := range 2000 {
		terms = append(terms, "a = '"+strings.Repeat("x", i%7)+"'")
	}
	e, err := Compile(TypeSQL92, strings.Join(terms, " OR "))
	if err != nil {
		t.Fatal(err)
	}
	if !e.MatchEncodedProperties(kv("a", "xxxxxx")) || e.MatchEncodedProperties(kv("a", "y")) {
		t.Error("long OR chain")
	}
	// Java evaluates 5000 chained ANDs but overflows its stack on 10000, which
	// the broker reports as no match.
	for _, n := range []int{5000, 10000} {
		terms = terms[:0]
		for range n {
			terms = append(terms, "a = 1")
		}
		e, err := Compile(TypeSQL92, strings.Join(terms, " AND "))
		if err != nil {
			t.Fatal(err)
		}
		get := func(string) (string, bool) { return "1", true }
		if got := e.MatchEncodedProperties(kv("a", "1")); got != (n == 5000) || e.MatchProperties(get) != got {
			t.Errorf("%d ANDs matched = %v", n, got)
		}
	}
}

func TestInListOrderIrrelevant(t *testing.T) {
	list := []string{"'e'", "'d'", "'c'", "'b'", "'a'"}
	e1, _ := Compile(TypeSQL92, "x IN ("+strings.Join(list, ",")+")")
	sort.Strings(list)
	e2, _ := Compile(TypeSQL92, "x IN ("+strings.Join(list, ",")+")")
	for _, v := range []string{"a", "c", "e", "f"} {
		if e1.MatchEncodedProperties(kv("x", v)) != e2.MatchEncodedProperties(kv("x", v)) {
			t.Errorf("IN differs for %q", v)
		}
	}
}

func TestManyPropertyNames(t *testing.T) {
	// More distinct names than one-pass slots: the rest are looked up one by one.
	var terms, pairs []string
	for i := range maxSlots + 5 {
		name := "p" + string(rune('a'+i))
		terms = append(terms, name+" = '"+name+"'")
		pairs = append(pairs, name, name)
	}
	e, err := Compile(TypeSQL92, strings.Join(terms, " AND "))
	if err != nil {
		t.Fatal(err)
	}
	if len(e.names) != maxSlots {
		t.Fatalf("%d slots", len(e.names))
	}
	props := kv(pairs...)
	if !e.MatchEncodedProperties(props) {
		t.Error("all properties present but no match")
	}
	last := pairs[len(pairs)-2]
	if e.MatchEncodedProperties(props + kv(last, "other")) {
		t.Error("a later duplicate of an unslotted name must win")
	}
	first := pairs[0]
	if e.MatchEncodedProperties(props + kv(first, "other")) {
		t.Error("a later duplicate of a slotted name must win")
	}
}

func TestConcurrentUse(t *testing.T) {
	e, err := Compile(TypeSQL92, benchSQL)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan bool)
	for g := range 4 {
		go func() {
			ok := true
			for i := range 500 {
				props := benchProps
				if (i+g)%2 == 1 {
					props = kv("a", "50", "region", "hangzhou", "TAGS", "TagA")
				}
				if e.MatchEncodedProperties(props) != ((i+g)%2 == 0) {
					ok = false
				}
			}
			done <- ok
		}()
	}
	for range 4 {
		if !<-done {
			t.Error("concurrent evaluation disagreed")
		}
	}
}
