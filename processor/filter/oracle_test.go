package filter

import (
	"bufio"
	"bytes"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"
)

// TestJavaOracle compares compile results and tri-state evaluations with the real
// Java filter on random selectors. It runs only when RMQD_FILTER_ORACLE names a
// command that reads "hex(expr) TAB hex(props)..." lines and answers PARSE or one
// letter per properties string: T, F, N (null) or X (exception).
// testdata/oracle/Oracle.java is such a command around rocketmq-filter 5.3.x:
//
//	mvn dependency:build-classpath -Dmdep.outputFile=cp.txt  # any pom depending on rocketmq-filter
//	javac -cp $(cat cp.txt) -d /tmp/oracle testdata/oracle/Oracle.java
//	RMQD_FILTER_ORACLE="java -cp $(cat cp.txt):/tmp/oracle Oracle" go test -run JavaOracle
//	RMQD_FILTER_TAG_ORACLE="java -cp <rocketmq-remoting jar>:$(cat cp.txt):/tmp/oracle TagOracle" go test -run JavaTagOracle
//
// RMQD_FILTER_ORACLE_SEED picks another random sequence.
func TestJavaOracle(t *testing.T) {
	cmdline := os.Getenv("RMQD_FILTER_ORACLE")
	if cmdline == "" {
		t.Skip("RMQD_FILTER_ORACLE not set")
	}
	seed := uint64(1)
	if s := os.Getenv("RMQD_FILTER_ORACLE_SEED"); s != "" {
		fmt.Sscan(s, &seed)
	}
	r := rand.New(rand.NewPCG(seed, 2))
	propSets := oracleProps(r, 12)
	var exprs []string
	for range 20000 {
		exprs = append(exprs, genSelector(r, 0))
	}
	var in bytes.Buffer
	for _, e := range exprs {
		in.WriteString(hex.EncodeToString([]byte(e)))
		for _, p := range propSets {
			in.WriteByte('\t')
			in.WriteString(hex.EncodeToString([]byte(p)))
		}
		in.WriteByte('\n')
	}
	cmd := exec.Command("sh", "-c", cmdline)
	cmd.Stdin = &in
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("oracle: %v", err)
	}
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	i, bad, parsed := 0, 0, 0
	letters := map[rune]int{}
	for sc.Scan() {
		want := sc.Text()
		for _, c := range want {
			letters[c]++
		}
		got := goOracle(exprs[i], propSets)
		if want != "PARSE" {
			parsed++
		}
		if got != want {
			bad++
			if bad <= 40 {
				t.Errorf("%q: java %s, go %s", exprs[i], want, got)
			}
		}
		i++
	}
	if i != len(exprs) {
		t.Fatalf("oracle answered %d of %d", i, len(exprs))
	}
	t.Logf("%d selectors (%d valid) x %d property sets, %d mismatches; outcomes T %d F %d N %d X %d",
		len(exprs), parsed, len(propSets), bad, letters['T'], letters['F'], letters['N'], letters['X'])
}

func goOracle(expr string, propSets []string) string {
	e, err := Compile(TypeSQL92, expr)
	if err != nil {
		return "PARSE"
	}
	var sb strings.Builder
	for _, p := range propSets {
		src := source{props: p}
		v, ok := e.eval(e.root, &src)
		switch {
		case !ok:
			sb.WriteByte('X')
		case v.kind == vNull:
			sb.WriteByte('N')
		case v.kind == vBool && v.b:
			sb.WriteByte('T')
		case v.kind == vBool:
			sb.WriteByte('F')
		default:
			sb.WriteByte('O')
		}
	}
	return sb.String()
}

var oracleValues = []string{"3", "5", "-5", "abc", "true", "TRUE", "false", "3.5", "-1", "NaN", "Infinity",
	"-Infinity", " 7 ", "１２", "٣", "2147483648", "-2147483648", "9223372036854775807", "1e3", "0x1p3",
	"+4", "1.5f", "1.5d", "axb", "x", "3.0", "-0.0", "0", "1L", ".5", "5.", "1e", "hello", "'", "a\x01b",
	"1e400", "-1e99999999999", "1e-400", "4.9e-324", "1.8e308", "0x1.8p1", "٣", "00", "2", "10", "3.14", "99.5"}

func oracleProps(r *rand.Rand, n int) []string {
	sets := []string{""}
	names := []string{"a", "b", "c", "TAGS", "now"}
	for len(sets) < n {
		var sb strings.Builder
		for _, name := range names {
			if r.IntN(4) == 0 {
				continue
			}
			fmt.Fprintf(&sb, "%s\x01%s\x02", name, oracleValues[r.IntN(len(oracleValues))])
		}
		sets = append(sets, sb.String())
	}
	return sets
}

var (
	genOperands = []string{"a", "b", "c", "TAGS", "now", "A", "$x", "_y", "3", "0", "5L", "2147483648",
		"9223372036854775807", "9223372036854775808", "3.14", "1e3", ".5", "5.", "0.0", "1E400", "'3'", "'abc'",
		"'true'", "''", "'''x'''", "TRUE", "FALSE", "NULL", "true", "nUlL", "-3", "- -3", "+3", "+'x'",
		"-a", "(a)", "-TRUE", "007", "0x10"}
	genCmp  = []string{"=", "<>", ">", ">=", "<", "<=", "==", "!="}
	genJunk = []string{"", "", "", "", "", "", " )", " junk", " #", " 'open", " -- c", " -- c\n", " /* c */",
		" /* open", " NOT x", " IS", " .", ",", " 1.5.5", " a = 1"}
)

func genSelector(r *rand.Rand, depth int) string {
	if r.IntN(2) == 0 {
		return genBool(r, depth)
	}
	return genBool(r, depth) + genJunk[r.IntN(len(genJunk))]
}

func genOperand(r *rand.Rand) string { return genOperands[r.IntN(len(genOperands))] }

func genString(r *rand.Rand) string {
	return []string{"'x'", "'3'", "''", "'ax'", "'xb'", "'abc'", "'a''b'", "3", "x"}[r.IntN(9)]
}

func genBool(r *rand.Rand, depth int) string {
	k := r.IntN(16)
	if depth > 3 {
		k = r.IntN(9)
	}
	switch k {
	case 0, 1, 2:
		return genOperand(r) + " " + genCmp[r.IntN(len(genCmp))] + " " + genOperand(r)
	case 3:
		not := []string{"", "NOT "}[r.IntN(2)]
		return genOperand(r) + " " + not + "BETWEEN " + genOperand(r) + " AND " + genOperand(r)
	case 4:
		not := []string{"", "NOT "}[r.IntN(2)]
		list := genString(r)
		for range r.IntN(6) {
			list += ", " + genString(r)
		}
		return genOperand(r) + " " + not + "IN (" + list + ")"
	case 5:
		return genOperand(r) + " IS " + []string{"", "NOT "}[r.IntN(2)] + "NULL"
	case 6:
		op := []string{"CONTAINS", "STARTSWITH", "ENDSWITH", "NOT CONTAINS", "NOT STARTSWITH", "NOT ENDSWITH"}[r.IntN(6)]
		return genOperand(r) + " " + op + " " + genString(r)
	case 7:
		return genOperand(r)
	case 8:
		return "NOT " + genOperand(r) + " " + genCmp[r.IntN(2)] + " " + genOperand(r)
	case 9, 10, 11:
		return genBool(r, depth+1) + " AND " + genBool(r, depth+1)
	case 12, 13:
		return genBool(r, depth+1) + " OR " + genBool(r, depth+1)
	case 14:
		return "(" + genBool(r, depth+1) + ")"
	default:
		return "NOT (" + genBool(r, depth+1) + ")"
	}
}

// TestJavaOracleTables runs this package's own tables through the Java filter.
func TestJavaOracleTables(t *testing.T) {
	cmdline := os.Getenv("RMQD_FILTER_ORACLE")
	if cmdline == "" {
		t.Skip("RMQD_FILTER_ORACLE not set")
	}
	type item struct{ expr, props, want string }
	var items []item
	for _, c := range evalCases {
		items = append(items, item(c))
	}
	for _, s := range validExprs {
		items = append(items, item{s, "", "valid"})
	}
	for _, s := range invalidExprs {
		items = append(items, item{s, "", "PARSE"})
	}
	// Java's recursive-descent parser fails a deep nesting with a stack
	// overflow whose depth depends on the thread's stack and on what the JIT has
	// compiled so far; rmqd's fixed depth limit is checked by its own tables.
	items = slices.DeleteFunc(items, func(it item) bool { return strings.Count(it.expr, "(") > 200 })
	var in bytes.Buffer
	for _, it := range items {
		fmt.Fprintf(&in, "%s\t%s\n", hex.EncodeToString([]byte(it.expr)), hex.EncodeToString([]byte(it.props)))
	}
	cmd := exec.Command("sh", "-c", cmdline)
	cmd.Stdin = &in
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("oracle: %v", err)
	}
	lines := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
	if len(lines) != len(items) {
		t.Fatalf("oracle answered %d of %d", len(lines), len(items))
	}
	for i, it := range items {
		got := lines[i]
		if it.want == "valid" {
			if got == "PARSE" {
				t.Errorf("java rejects %q", it.expr)
			}
		} else if got != it.want {
			t.Errorf("java: %q on %q = %s, table says %s", it.expr, it.props, got, it.want)
		}
	}
}

// TestJavaOracleCorpus replays the fuzz corpora (testdata/fuzz plus the
// directories in RMQD_FILTER_CORPUS, e.g. the fuzz cache) through the Java filter.
func TestJavaOracleCorpus(t *testing.T) {
	cmdline := os.Getenv("RMQD_FILTER_ORACLE")
	if cmdline == "" {
		t.Skip("RMQD_FILTER_ORACLE not set")
	}
	dirs := []string{"testdata/fuzz/FuzzCompile", "testdata/fuzz/FuzzEvaluate"}
	if extra := os.Getenv("RMQD_FILTER_CORPUS"); extra != "" {
		dirs = append(dirs, strings.Split(extra, ":")...)
	}
	type item struct{ expr, props string }
	var items []item
	for _, dir := range dirs {
		entries, _ := os.ReadDir(dir)
		for _, ent := range entries {
			data, err := os.ReadFile(dir + "/" + ent.Name())
			if err != nil {
				t.Fatal(err)
			}
			var args []string
			for _, line := range strings.Split(string(data), "\n") {
				if v, ok := strings.CutPrefix(line, "string("); ok {
					s, err := strconv.Unquote(strings.TrimSuffix(v, ")"))
					if err == nil {
						args = append(args, s)
					}
				}
			}
			switch len(args) {
			case 1:
				items = append(items, item{args[0], kv("a", "1", "b", "x", "c", "1.5")})
			case 2:
				items = append(items, item{args[0], args[1]})
			}
		}
	}
	var in bytes.Buffer
	for _, it := range items {
		fmt.Fprintf(&in, "%s\t%s\t\n", hex.EncodeToString([]byte(it.expr)), hex.EncodeToString([]byte(it.props)))
	}
	cmd := exec.Command("sh", "-c", cmdline)
	cmd.Stdin = &in
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("oracle: %v", err)
	}
	lines := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
	if len(lines) != len(items) {
		t.Fatalf("oracle answered %d of %d", len(lines), len(items))
	}
	bad := 0
	for i, it := range items {
		// Java decodes both strings from UTF-8 with replacement; compare only
		// inputs that survive that unchanged.
		if !utf8.ValidString(it.expr) || !utf8.ValidString(it.props) {
			continue
		}
		if got := goOracle(it.expr, []string{it.props, ""}); got != lines[i] {
			bad++
			if bad < 30 {
				t.Errorf("%q on %q: java %s, go %s", it.expr, it.props, lines[i], got)
			}
		}
	}
	t.Logf("%d corpus entries, %d mismatches", len(items), bad)
}

// TestJavaTagOracle compares Compile(TAG, ...) with FilterAPI.buildSubscriptionData
// on random subscription strings. RMQD_FILTER_TAG_ORACLE names a command like
// testdata/oracle/TagOracle.java (classpath: rocketmq-remoting and its deps).
func TestJavaTagOracle(t *testing.T) {
	cmdline := os.Getenv("RMQD_FILTER_TAG_ORACLE")
	if cmdline == "" {
		t.Skip("RMQD_FILTER_TAG_ORACLE not set")
	}
	r := rand.New(rand.NewPCG(5, 6))
	alphabet := []string{"|", "|", "|", " ", "\t", "\x01", "a", "b", "*", "Aa", "BB", "é", "\u00a0", "\u3000", "标", "\x7f"}
	cases := []string{"", "*", " * ", "||", "||||", "|||", "|| ||", "a||", "||a", "a | b", "*||*"}
	for range 5000 {
		var sb strings.Builder
		for range r.IntN(11) {
			sb.WriteString(alphabet[r.IntN(len(alphabet))])
		}
		cases = append(cases, sb.String())
	}
	var in bytes.Buffer
	for _, c := range cases {
		in.WriteString(hex.EncodeToString([]byte(c)) + "\n")
	}
	cmd := exec.Command("sh", "-c", cmdline)
	cmd.Stdin = &in
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("oracle: %v", err)
	}
	lines := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
	if len(lines) != len(cases) {
		t.Fatalf("oracle answered %d of %d", len(lines), len(cases))
	}
	for i, s := range cases {
		got := "ERR"
		if e, err := Compile(TypeTag, s); err == nil {
			tags := slices.Clone(e.Tags())
			slices.Sort(tags)
			codes := slices.Clone(e.TagCodes())
			slices.Sort(codes)
			var sb strings.Builder
			sb.WriteString(map[bool]string{true: "ALL", false: "SOME"}[e.All()])
			for _, tag := range tags {
				sb.WriteString(" " + hex.EncodeToString([]byte(tag)))
			}
			sb.WriteString(" |")
			for _, c := range codes {
				fmt.Fprintf(&sb, " %d", c)
			}
			got = sb.String()
		}
		if got != lines[i] {
			t.Errorf("%q: java %s, go %s", s, lines[i], got)
		}
	}
}
