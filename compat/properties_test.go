package compat

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestParsePropertiesJavaSyntax(t *testing.T) {
	src := "# comment\n" +
		"! bang comment\n" +
		"   \n" +
		"brokerClusterName = DefaultCluster\n" +
		"brokerName:broker-a\n" +
		"brokerId 0\n" +
		"namesrvAddr=127.0.0.1:9876;127.0.0.2:9876\n" +
		"deleteWhen=04\r\n" +
		"storePathRootDir=/data/\\\n" +
		"    store\n" +
		"escaped\\ key\\=x=tab\\there\\nnl\n" +
		"unicode=\\u4e2d\\u6587 \\ud83d\\ude00\n" +
		"empty=\n" +
		"justkey\n" +
		"colon\\:key:v\n" +
		"dup=1\n" +
		"dup=2\n" +
		"trailing=back\\\\\n" +
		"  indented=yes\n" +
		"mac=1\rmac2=2\n" +
		"last=eof\\"
	got, err := ParseProperties(strings.NewReader(src))
	require.NoError(t, err)
	want := map[string]string{
		"brokerClusterName": "DefaultCluster",
		"brokerName":        "broker-a",
		"brokerId":          "0",
		"namesrvAddr":       "127.0.0.1:9876;127.0.0.2:9876",
		"deleteWhen":        "04",
		"storePathRootDir":  "/data/store",
		"escaped key=x":     "tab\there\nnl",
		"unicode":           "中文 😀",
		"empty":             "",
		"justkey":           "",
		"colon:key":         "v",
		"dup":               "2",
		"trailing":          `back\`,
		"indented":          "yes",
		"mac":               "1",
		"mac2":              "2",
		"last":              "eof",
	}
	require.Equal(t, want, got)
}

func TestParsePropertiesMalformedUnicode(t *testing.T) {
	_, err := ParseProperties(strings.NewReader("a=\\u12G4\n"))
	require.Error(t, err)
	_, err = ParseProperties(strings.NewReader("a=\\u12"))
	require.Error(t, err)
}

// The GET_NAMESRV_CONFIG body of Apache RocketMQ 5.3.3 (captured, abridged): sorted
// key=value lines, nothing escaped.
const javaNamesrvConfigBody = "bindAddress=127.0.0.1\n" +
	"configBlackList=configBlackList;configStorePath;kvConfigPath\n" +
	"enableAllTopicList=true\n" +
	"kvConfigPath=/tmp/nsrun/kvConfig.json\n" +
	"listenPort=19876\n" +
	"scanNotActiveBrokerInterval=5000\n"

func TestFormatPropertiesMatchesJavaAndRoundTrips(t *testing.T) {
	m, err := ParseProperties(strings.NewReader(javaNamesrvConfigBody))
	require.NoError(t, err)
	require.Equal(t, javaNamesrvConfigBody, string(FormatProperties(m)))

	odd := map[string]string{
		"a key":   " leading blank",
		"k=:":     "v=1:2#3",
		"#hash":   "x",
		"path":    `C:\dir`,
		"multi":   "line1\nline2\r\tx",
		"unicode": "中文",
		"ctl":     "a\x01b",
		"":        "emptykey",
	}
	out := FormatProperties(odd)
	back, err := ParseProperties(strings.NewReader(string(out)))
	require.NoError(t, err)
	require.Equal(t, odd, back)
	require.Equal(t, string(FormatProperties(odd)), string(out), "stable")
}

func FuzzParseProperties(f *testing.F) {
	f.Add("a=b\n# c\nd:e\\\n  f\ng h\\u0041\n")
	f.Add("k\\ e\\=y = v\\\\\r\nx\\u12")
	f.Fuzz(func(t *testing.T, src string) {
		m, err := ParseProperties(strings.NewReader(src))
		if err != nil {
			return
		}
		// What parses formats into something that parses back to the same map.
		back, err := ParseProperties(strings.NewReader(string(FormatProperties(m))))
		if err != nil {
			t.Fatalf("reparse: %v", err)
		}
		for k, v := range m {
			if back[k] != v {
				t.Fatalf("key %q: %q became %q", k, v, back[k])
			}
		}
	})
}
