package meta

import (
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"rmqd/codec"
)

func mappingDetail(epoch int64, queues map[int32][]codec.LogicQueueMappingItem) *codec.TopicQueueMappingDetail {
	return &codec.TopicQueueMappingDetail{TopicQueueMappingInfo: codec.TopicQueueMappingInfo{Topic: "T", Scope: codec.MetadataScopeGlobal,
		Bname: "b", Epoch: epoch, TotalQueues: 4, CurrIDMap: map[int32]int32{}}, HostedQueues: queues}
}

func leader(gen, queueID int32) []codec.LogicQueueMappingItem {
	return []codec.LogicQueueMappingItem{{Gen: gen, QueueID: queueID, Bname: "b", EndOffset: -1, TimeOfStart: -1, TimeOfEnd: -1}}
}

// Java's updateTopicQueueMapping: a newer epoch takes over the queues it
// leaves out, an equal epoch must keep them and their leaders, an older one
// is refused, and force keeps the stored queues it does not name.
func TestTopicQueueMappingUpdateRules(t *testing.T) {
	dir := t.TempDir()
	m := NewTopicQueueMappingManager(dir, slog.New(slog.DiscardHandler))
	require.NoError(t, m.Update(mappingDetail(10, map[int32][]codec.LogicQueueMappingItem{0: leader(0, 0)}), false))
	require.NoError(t, m.Update(mappingDetail(20, map[int32][]codec.LogicQueueMappingItem{1: leader(0, 1)}), false))
	require.Len(t, m.Get("T").HostedQueues, 2, "queue 0 taken over from epoch 10")

	err := m.Update(mappingDetail(20, map[int32][]codec.LogicQueueMappingItem{1: leader(0, 1)}), false)
	require.EqualError(t, err, "Cannot accept equal epoch with null data")
	err = m.Update(mappingDetail(20, map[int32][]codec.LogicQueueMappingItem{0: leader(0, 0), 1: leader(0, 2)}), false)
	require.EqualError(t, err, "The new leader is different but epoch equal")
	err = m.Update(mappingDetail(5, map[int32][]codec.LogicQueueMappingItem{0: leader(0, 0), 1: leader(0, 1)}), false)
	require.EqualError(t, err, "Can't accept data with small epoch 5 < 20")
	other := mappingDetail(30, map[int32][]codec.LogicQueueMappingItem{0: leader(0, 0), 1: leader(0, 1)})
	other.Scope = "s"
	require.EqualError(t, m.Update(other, false), "Can't accept data with unmatched scope s != __global__")

	require.NoError(t, m.Update(mappingDetail(5, map[int32][]codec.LogicQueueMappingItem{2: leader(0, 2)}), true))
	require.Len(t, m.Get("T").HostedQueues, 3, "force keeps the stored queues")
	require.EqualValues(t, 5, m.Get("T").Epoch)

	// The file is Java's TopicQueueMappingSerializeWrapper and reads back.
	data, err := os.ReadFile(filepath.Join(dir, "topicQueueMapping.json"))
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(string(data), "{\n\t\"dataVersion\":{"), string(data))
	require.Contains(t, string(data), `"topicQueueMappingInfoMap":{`+"\n\t\t"+`"T":{"bname":"b","currIdMap":{},"dirty":false,"epoch":5,"hostedQueues":{0:[`)
	n := NewTopicQueueMappingManager(dir, slog.New(slog.DiscardHandler))
	require.NoError(t, n.Load())
	require.Equal(t, m.Get("T"), n.Get("T"))
	require.Equal(t, m.DataVersion(), n.DataVersion())

	require.True(t, m.Delete("T"))
	require.False(t, m.Delete("T"))
	require.Nil(t, m.Get("T"))
}

func TestTopicQueueMappingItemChecks(t *testing.T) {
	item := func(gen int32, logic, start, end int64) codec.LogicQueueMappingItem {
		return codec.LogicQueueMappingItem{Gen: gen, Bname: "b", LogicOffset: logic, StartOffset: start, EndOffset: end}
	}
	for _, tc := range []struct {
		items []codec.LogicQueueMappingItem
		err   string
	}{
		{[]codec.LogicQueueMappingItem{item(0, 0, 0, -1)}, ""},
		{[]codec.LogicQueueMappingItem{item(0, 0, 0, 9), item(1, 10, 0, -1)}, ""},
		{[]codec.LogicQueueMappingItem{item(0, 0, -1, -1)}, "The field is illegal, should not be negative"},
		{[]codec.LogicQueueMappingItem{item(0, -1, 0, 10), item(1, 10, 0, -1)}, "The non-latest item has negative logic offset"},
		{[]codec.LogicQueueMappingItem{item(1, 0, 0, 10), item(1, 10, 0, -1)}, "The gen does not increase monotonically"},
		{[]codec.LogicQueueMappingItem{item(0, 0, 5, 4)}, "The endOffset is smaller than the start offset"},
		{[]codec.LogicQueueMappingItem{item(0, 10, 0, 1), item(1, 10, 0, -1)}, "The base logic offset does not increase monotonically"},
		{[]codec.LogicQueueMappingItem{item(0, 0, 0, 20), item(1, 10, 0, -1)}, "The max logic offset does not increase monotonically"},
	} {
		err := checkItemOffsets(tc.items)
		if tc.err == "" {
			require.NoError(t, err)
		} else {
			require.EqualError(t, err, tc.err)
		}
	}
}
