package processor

import (
	"io"
	"log/slog"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"rmqd/codec"
)

func quietLog() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func testConfig(t testing.TB) BrokerConfig {
	cfg := DefaultBrokerConfig()
	cfg.BrokerIP1, cfg.BrokerIP2 = "127.0.0.1", "127.0.0.1"
	cfg.Store.StorePathRootDir = t.TempDir()
	cfg.NamesrvAddr = ""
	return cfg
}

func TestApplyProperties(t *testing.T) {
	cfg := DefaultBrokerConfig()
	unknown, err := cfg.ApplyProperties(map[string]string{
		"brokerName": "broker-x", "brokerId": "1", "listenPort": "20911", "autoCreateTopicEnable": "FALSE",
		"defaultTopicQueueNums": "4", "namesrvAddr": "127.0.0.1:9876;127.0.0.1:9877", "unknownKey": "x",
		"longPollingEnable": "yes", "flushDiskType": "SYNC_FLUSH",
	})
	require.NoError(t, err)
	require.Equal(t, []string{"unknownKey"}, unknown)
	require.Equal(t, "SYNC_FLUSH", cfg.Store.FlushDiskType, "the store's keys bind in the same pass")
	require.Equal(t, "broker-x", cfg.BrokerName)
	require.EqualValues(t, 1, cfg.BrokerID)
	require.Equal(t, 20911, cfg.ListenPort)
	require.False(t, cfg.AutoCreateTopicEnable)
	require.False(t, cfg.LongPollingEnable, "Boolean.parseBoolean: only true is true")
	require.EqualValues(t, 4, cfg.DefaultTopicQueueNums)
	require.Equal(t, []string{"127.0.0.1:9876", "127.0.0.1:9877"}, cfg.nameServers())
	_, err = cfg.ApplyProperties(map[string]string{"listenPort": "abc"})
	require.Error(t, err)
	_, err = cfg.ApplyProperties(map[string]string{"flushDiskType": "SOMETIMES"})
	require.Error(t, err, "the store's values are checked too")
	require.Equal(t, "DefaultCluster", cfg.BrokerClusterName)
	require.EqualValues(t, 6, cfg.BrokerPermission)
}

func TestValidateTopic(t *testing.T) {
	_, ok := validateTopic("Topic_A-1%|x")
	require.True(t, ok)
	_, ok = validateTopic("bad topic")
	require.False(t, ok)
	_, ok = validateTopic(strings.Repeat("a", 128))
	require.False(t, ok)
	_, ok = validateTopic("%RETRY%" + strings.Repeat("a", 200)) // 5.3.x: 127 for every topic
	require.False(t, ok)
	_, ok = checkTopicName("%RETRY%" + strings.Repeat("a", 200)) // the gate: retry topics of long groups exist
	require.True(t, ok)
	_, ok = checkTopicName("%RETRY%" + strings.Repeat("a", 249))
	require.False(t, ok)
	_, ok = checkTopicName("%RETRY%../../x")
	require.False(t, ok)
}

func TestFixStoredProps(t *testing.T) {
	ids := newUniqIDGen("10.0.0.1")
	cfg := DefaultBrokerConfig()
	fix := func(props string) string {
		pv := codec.ViewProperties(props)
		out := fixStoredProps(&pv, &cfg, ids, false, "", nil)
		require.NoError(t, viewMismatch(&pv, out))
		return out
	}
	p := fix("TAGS\x01a\x02")
	u, ok := codec.PropertyValue(p, codec.PropUniqKey)
	require.True(t, ok)
	require.Len(t, u, 32)
	require.True(t, strings.HasPrefix(u, "0A000001"))
	c, _ := codec.PropertyValue(p, codec.PropCluster)
	require.Equal(t, "DefaultCluster", c)
	tag, _ := codec.PropertyValue(p, codec.PropTags)
	require.Equal(t, "a", tag)
	// As Java's buildMsgContext stores them on every sent message.
	region, _ := codec.PropertyValue(p, codec.PropMsgRegion)
	require.Equal(t, "DefaultRegion", region)
	trace, _ := codec.PropertyValue(p, codec.PropTraceSwitch)
	require.Equal(t, "true", trace)

	cfg.BrokerClusterName, cfg.TraceOn = "C", false
	p2 := fix("UNIQ_KEY\x01ABC\x02CLUSTER\x01old\x02TRACE_ON\x01true")
	u, _ = codec.PropertyValue(p2, codec.PropUniqKey)
	require.Equal(t, "ABC", u)
	c, _ = codec.PropertyValue(p2, codec.PropCluster)
	require.Equal(t, "C", c)
	require.Equal(t, 1, strings.Count(p2, "CLUSTER"))
	trace, _ = codec.PropertyValue(p2, codec.PropTraceSwitch)
	require.Equal(t, "false", trace)
	require.Equal(t, 1, strings.Count(p2, "TRACE_ON"))
	require.NotEqual(t, ids.next(), ids.next())
}

func TestTagFilter(t *testing.T) {
	sd := parseTagSubscription("T", "a || b")
	require.Equal(t, []string{"a", "b"}, sd.TagsSet)
	b := &Broker{}
	f, err := b.newMessageFilter(&sd)
	require.NoError(t, err)
	require.True(t, f.MatchTagsCode(tagsCodeOf("a")))
	require.True(t, f.MatchTagsCode(tagsCodeOf("b")))
	require.False(t, f.MatchTagsCode(tagsCodeOf("c")))
	all := parseTagSubscription("T", "*")
	f, _ = b.newMessageFilter(&all)
	require.True(t, f.MatchTagsCode(12345))
	sql, err := b.newMessageFilter(&codec.SubscriptionData{ExpressionType: "SQL92", SubString: "a > 1"})
	require.NoError(t, err)
	require.True(t, sql.(propsMatcher).MatchEncodedProperties("a\x012\x02"))
	require.False(t, sql.(propsMatcher).MatchEncodedProperties("a\x010\x02"))
	_, err = b.newMessageFilter(&codec.SubscriptionData{ExpressionType: "SQL92", SubString: "a >"})
	require.Error(t, err)
}

func TestHeartbeatBodyCodeSetForms(t *testing.T) {
	var hb codec.HeartbeatData
	body := `{"clientID":"1.2.3.4@1","consumerDataSet":[{"groupName":"g","subscriptionDataSet":[` +
		`{"topic":"T","subString":"a||b","codeSet":["97","98"],"tagsSet":["a","b"],"subVersion":1700000000000000000},` +
		`{"topic":"U","subString":"c","codeSet":[99]}]}],"producerDataSet":[{"groupName":"p"}]}`
	require.NoError(t, jsonUnmarshal([]byte(body), &hb))
	require.Equal(t, codec.CodeSet{97, 98}, hb.ConsumerDataSet[0].SubscriptionDataSet[0].CodeSet)
	require.Equal(t, codec.CodeSet{99}, hb.ConsumerDataSet[0].SubscriptionDataSet[1].CodeSet)
}
