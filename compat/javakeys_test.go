package compat

import (
	"flag"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

var updateDocs = flag.Bool("update-docs", false, "rewrite the Java keys table in docs/compatibility.md")

func TestClassifyJavaKey(t *testing.T) {
	c, why := ClassifyJavaKey("sendMessageThreadPoolNums", "64")
	require.Equal(t, KeyNoEffect, c)
	require.Contains(t, why, "thread pool")
	// Honoured now (the store binds it): not in the table of unbound keys.
	_, ok := LookupJavaKey("enableCompaction")
	require.False(t, ok)
	c, _ = ClassifyJavaKey("duplicationEnable", " TRUE ")
	require.Equal(t, KeyRefused, c, "Boolean.parseBoolean of the trimmed value")
	c, why = ClassifyJavaKey("duplicationEnable", "false")
	require.Equal(t, KeyNoEffect, c, "the feature off is no effect")
	require.Contains(t, why, "the feature is off")
	c, _ = ClassifyJavaKey("storeType", "default")
	require.Equal(t, KeyNoEffect, c)
	c, _ = ClassifyJavaKey("storeType", "defaultRocksDB")
	require.Equal(t, KeyRefused, c)
	c, _ = ClassifyJavaKey("configManagerVersion", "V1")
	require.Equal(t, KeyNoEffect, c)
	c, _ = ClassifyJavaKey("configManagerVersion", "v2")
	require.Equal(t, KeyRefused, c)
	c, _ = ClassifyJavaKey("readOnlyCommitLogStorePaths", "")
	require.Equal(t, KeyNoEffect, c)
	c, _ = ClassifyJavaKey("brokerNmae", "x")
	require.Equal(t, KeyUnknown, c)
}

func TestRefusedSetting(t *testing.T) {
	require.NoError(t, RefusedSetting(map[string]string{"duplicationEnable": "false", "sendMessageThreadPoolNums": "8"}))
	err := RefusedSetting(map[string]string{"enableDLegerCommitLog": "true", "duplicationEnable": "true", "brokerName": "b"})
	require.ErrorContains(t, err, "duplicationEnable=true: duplication mode")
	require.ErrorContains(t, err, "refuses to start")
}

// Every refused key says when it refuses, every key says why.
func TestJavaKeysComplete(t *testing.T) {
	for _, k := range JavaKeyNames() {
		jk, _ := LookupJavaKey(k)
		require.NotEmpty(t, jk.Why, k)
		if jk.Class == KeyRefused {
			require.NotNil(t, jk.Refuses, k)
			require.NotEmpty(t, jk.When, k)
			require.False(t, jk.Refuses(""), "%s: an empty value asks for nothing", k)
		}
	}
}

const (
	docsBegin = "<!-- javakeys: made by compat/javakeys_test.go (go test ./compat -run TestJavaKeysDoc -update-docs) -->\n"
	docsEnd   = "<!-- javakeys: end -->\n"
)

// The table in docs/compatibility.md is this table's: the test fails when
// they differ and -update-docs rewrites it.
func TestJavaKeysDoc(t *testing.T) {
	const path = "../docs/compatibility.md"
	doc, err := os.ReadFile(path)
	require.NoError(t, err)
	s := string(doc)
	i, j := strings.Index(s, docsBegin), strings.Index(s, docsEnd)
	require.True(t, i >= 0 && j > i, "docs/compatibility.md lacks the javakeys markers")
	want := s[:i+len(docsBegin)] + javaKeysMarkdown() + s[j:]
	if *updateDocs {
		require.NoError(t, os.WriteFile(path, []byte(want), 0o644))
		return
	}
	require.Equal(t, want, s, "docs/compatibility.md is stale: go test ./compat -run TestJavaKeysDoc -update-docs")
}

func javaKeysMarkdown() string {
	var b strings.Builder
	var refused, notHonoured []string
	noEffect := map[string][]string{}
	for _, k := range JavaKeyNames() {
		jk, _ := LookupJavaKey(k)
		switch jk.Class {
		case KeyRefused:
			refused = append(refused, k)
		case KeyNotHonoured:
			notHonoured = append(notHonoured, k)
		case KeyNoEffect:
			noEffect[jk.Why] = append(noEffect[jk.Why], k)
		}
	}
	code := func(keys []string) string { return "`" + strings.Join(keys, "`, `") + "`" }

	b.WriteString("\n**Refused** (start fails, naming the key, when the value asks for the feature; any other value has no effect):\n\n")
	b.WriteString("| Key | Refused when | Why |\n|---|---|---|\n")
	for _, k := range refused {
		jk, _ := LookupJavaKey(k)
		b.WriteString("| `" + k + "` | " + jk.When + " | " + jk.Why + " |\n")
	}

	b.WriteString("\n**Not honoured** (warned about at start: rmqd behaves as Java does with the default):\n\n")
	if len(notHonoured) == 0 {
		b.WriteString("None at present.\n")
	} else {
		b.WriteString("| Keys | What rmqd does |\n|---|---|\n")
	}
	byWhy := map[string][]string{}
	var whys []string
	for _, k := range notHonoured {
		jk, _ := LookupJavaKey(k)
		if _, ok := byWhy[jk.Why]; !ok {
			whys = append(whys, jk.Why)
		}
		byWhy[jk.Why] = append(byWhy[jk.Why], k)
	}
	for _, w := range whys {
		b.WriteString("| " + code(byWhy[w]) + " | " + w + " |\n")
	}

	b.WriteString("\n**No effect** (noted at start at info level):\n\n")
	b.WriteString("| Why | Keys |\n|---|---|\n")
	whys = whys[:0]
	for w := range noEffect {
		whys = append(whys, w)
	}
	slices.Sort(whys)
	for _, w := range whys {
		b.WriteString("| " + w + " | " + code(noEffect[w]) + " |\n")
	}
	b.WriteString("\n")
	return b.String()
}
