package compat

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

type innerConf struct {
	Dir  string `prop:"storePathRootDir"`
	Size int    `prop:"mappedFileSizeCommitLog"`
}

type testConf struct {
	Name    string    `prop:"brokerName"`
	ID      int64     `prop:"brokerId"`
	Nums    int32     `prop:"defaultTopicQueueNums"`
	Auto    bool      `prop:"autoCreateTopicEnable"`
	Ratio   float64   `prop:"accessMessageInMemoryMaxRatio"`
	Store   innerConf `prop:",inline"`
	Ignored string
	Skipped string `prop:"-"`
	Path    string `prop:"aclPlainFile,rocketmq.acl.plain.file,omitempty"`
}

func TestBindConfigJavaRules(t *testing.T) {
	c := testConf{Auto: true, Nums: 8}
	unknown, err := BindConfig(map[string]string{
		"brokerName":                    "  b-1 ",
		"brokerId":                      " 2",
		"autoCreateTopicEnable":         "TRUE",
		"accessMessageInMemoryMaxRatio": "40.5",
		"storePathRootDir":              "/data/store",
		"mappedFileSizeCommitLog":       "4096",
		"aclEnable":                     "true",
		"Ignored":                       "x",
	}, &c)
	require.NoError(t, err)
	require.Equal(t, []string{"Ignored", "aclEnable"}, unknown)
	require.Equal(t, "b-1", c.Name)
	require.EqualValues(t, 2, c.ID)
	require.True(t, c.Auto)
	require.EqualValues(t, 8, c.Nums, "absent keys keep their defaults")
	require.Equal(t, 40.5, c.Ratio)
	require.Equal(t, "/data/store", c.Store.Dir)
	require.Equal(t, 4096, c.Store.Size)

	// Boolean.parseBoolean: only "true" is true; "yes" and "1" are false, not errors.
	for _, v := range []string{"yes", "1", "false", ""} {
		c.Auto = true
		_, err := BindConfig(map[string]string{"autoCreateTopicEnable": v}, &c)
		require.NoError(t, err)
		require.False(t, c.Auto, v)
	}
}

func TestBindConfigMalformedNumbersNamed(t *testing.T) {
	c := testConf{Nums: 8}
	_, err := BindConfig(map[string]string{"defaultTopicQueueNums": "8x", "brokerId": "99999999999999999999", "brokerName": "ok"}, &c)
	require.Error(t, err)
	require.Contains(t, err.Error(), `defaultTopicQueueNums="8x"`)
	require.Contains(t, err.Error(), "brokerId=")
	require.Equal(t, "ok", c.Name, "valid keys still apply")
	_, err = BindConfig(map[string]string{"defaultTopicQueueNums": "3000000000"}, &c)
	require.Error(t, err, "int32 overflow")
}

func TestConfigKeysBoundOnce(t *testing.T) {
	a, b := testConf{}, innerConf{}
	_, err := ConfigKeys(&a, &b)
	require.Error(t, err)
	require.True(t, strings.Contains(err.Error(), "bound twice"))
	keys, err := ConfigKeys(&a)
	require.NoError(t, err)
	require.Len(t, keys, 9)
}

func TestBindConfigAliasesAndOmitEmpty(t *testing.T) {
	var c testConf
	unknown, err := BindConfig(map[string]string{"rocketmq.acl.plain.file": "/a"}, &c)
	require.NoError(t, err)
	require.Empty(t, unknown)
	require.Equal(t, "/a", c.Path)
	_, err = BindConfig(map[string]string{"rocketmq.acl.plain.file": "/a", "aclPlainFile": "/b"}, &c)
	require.NoError(t, err)
	require.Equal(t, "/b", c.Path, "the canonical name wins")
	require.Equal(t, "/b", ConfigProperties(&c)["aclPlainFile"])
	c.Path = ""
	_, ok := ConfigProperties(&c)["aclPlainFile"]
	require.False(t, ok)
}

func TestConfigPropertiesRoundTrip(t *testing.T) {
	c := testConf{Name: "n", ID: 3, Nums: 4, Auto: true, Ratio: 0.25, Store: innerConf{Dir: "/s", Size: 10}}
	m := ConfigProperties(&c)
	require.Equal(t, map[string]string{"brokerName": "n", "brokerId": "3", "defaultTopicQueueNums": "4",
		"autoCreateTopicEnable": "true", "accessMessageInMemoryMaxRatio": "0.25", "storePathRootDir": "/s",
		"mappedFileSizeCommitLog": "10"}, m)
	var d testConf
	unknown, err := BindConfig(m, &d)
	require.NoError(t, err)
	require.Empty(t, unknown)
	require.Equal(t, c, d)
}
