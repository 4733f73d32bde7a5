package processor

import (
	"context"
	"slices"
	"strings"
	"time"

	"rmqd/codec"
)

// cleanStaticOldGens is Java's TopicQueueMappingCleanService
// .cleanItemListMoreThanSecondGen: at the store's deleteWhen hours, a broker
// whose mapping names another broker as a logical queue's leader asks the
// name server who leads it now (the route's mappings, highest epoch first)
// and that broker for its mapping (GET_TOPIC_CONFIG, lo=true); when the real
// leader's mapping has this one's epoch and total, names itself the queue's
// leader, and is not the leader this broker knows (the queue moved again
// since, leaving this broker's items two generations behind), the queue is
// dropped from this broker's mapping. It reports how many queues went.
func (b *Broker) cleanStaticOldGens(ctx context.Context, now time.Time) int {
	if !atHourOf(b.conf().Store.DeleteWhen, now) {
		return 0
	}
	dropped := 0
	for topic, d := range b.mappings.All() {
		if ctx.Err() != nil {
			break
		}
		if len(d.HostedQueues) == 0 || d.Bname != b.conf().BrokerName {
			continue
		}
		known := map[int32]string{} // logical id → the leader this mapping names, when not this broker
		for id, items := range d.HostedQueues {
			if n := len(items); n > 0 && items[n-1].Bname != d.Bname {
				known[id] = items[n-1].Bname
			}
		}
		if len(known) == 0 {
			continue
		}
		route, err := b.topicRoute(ctx, topic)
		if err != nil {
			b.log.Warn("static topic clean: route", "topic", topic, "err", err)
			continue
		}
		leaders := staticQueueLeaders(route, d.Scope)
		remote := map[string]*codec.TopicQueueMappingDetail{}
		for _, id := range codec.SortedKeys(known) {
			broker := leaders[id]
			if _, seen := remote[broker]; seen || broker == "" {
				continue
			}
			rd, err := b.remoteMapping(ctx, topic, broker)
			if err != nil {
				b.log.Warn("static topic clean: mapping of the leader", "topic", topic, "broker", broker, "err", err)
			}
			if rd != nil && rd.Bname != broker {
				rd = nil
			}
			remote[broker] = rd
		}
		var drop []int32
		for id, cur := range known {
			real := leaders[id]
			rd := remote[real]
			if rd == nil || rd.TotalQueues != d.TotalQueues || rd.Epoch != d.Epoch {
				continue
			}
			items := rd.HostedQueues[id]
			if len(items) == 0 || items[len(items)-1].Bname != real {
				continue
			}
			if real != cur {
				drop = append(drop, id)
				b.log.Info("static topic clean: queue led elsewhere two generations on dropped", "topic", topic,
					"queue", id, "knownLeader", cur, "leader", real, "items", len(d.HostedQueues[id]))
			}
		}
		if len(drop) > 0 {
			slices.Sort(drop)
			dropped += b.mappings.DropQueues(d, drop)
		}
	}
	return dropped
}

// staticQueueLeaders is the broker leading each logical queue of scope by a
// route's mappings (Java's ClientMetadata.topicRouteData2EndpointsForStaticTopic):
// the broker whose mapping of the highest epoch lists it; a queue below the
// largest totalQueues that none lists, or one above it, is absent.
func staticQueueLeaders(route *codec.TopicRouteData, scope string) map[int32]string {
	if scope == "" {
		scope = codec.MetadataScopeGlobal
	}
	type best struct {
		epoch int64
		name  string
	}
	seen := map[int32]best{}
	var total int32
	// Names in order: among equal epochs the last one wins, as in Java's
	// loop (whose order is a HashMap's), here the greatest name.
	for _, name := range codec.SortedKeys(route.TopicQueueMappingByBroker) {
		info := route.TopicQueueMappingByBroker[name]
		if info.Scope != scope {
			continue
		}
		total = max(total, info.TotalQueues)
		for id := range info.CurrIDMap {
			if old, ok := seen[id]; !ok || old.epoch <= info.Epoch {
				seen[id] = best{info.Epoch, info.Bname}
			}
		}
	}
	out := make(map[int32]string, len(seen))
	for id, bst := range seen {
		if id >= 0 && id < total && bst.name != "" && !strings.HasPrefix(bst.name, logicalMockBrokerPrefix) {
			out[id] = bst.name
		}
	}
	return out
}

// logicalMockBrokerPrefix is MixAll.LOGICAL_QUEUE_MOCK_BROKER_PREFIX: the
// names a client gives logical queues, never a broker's.
const logicalMockBrokerPrefix = "__syslo__"

// remoteMapping is broker's mapping of topic (GET_TOPIC_CONFIG with lo=true,
// as Java's RpcClient sends it), nil when the topic is not static there.
func (b *Broker) remoteMapping(ctx context.Context, topic, broker string) (*codec.TopicQueueMappingDetail, error) {
	req := codec.NewRequest(codec.ReqGetTopicConfig)
	req.Ext.Set("topic", topic)
	req.Ext.Set("lo", "true")
	req.Ext.Set("bname", broker)
	resp, err := b.forwardStatic(ctx, topic, broker, req)
	if err := remoteRefusal(resp, err); err != nil {
		return nil, err
	}
	return codec.DecodeTopicConfigMappingDetail(resp.Body)
}
