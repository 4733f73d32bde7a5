package processor

import (
	"context"
	"strconv"
	"strings"
	"time"

	"rmqd/codec"
)

// staticCleanInterval is how often Java's TopicQueueMappingCleanService looks.
const staticCleanInterval = 5 * time.Minute

// cleanStaticItems is Java's TopicQueueMappingCleanService.cleanItemExpired:
// at the store's deleteWhen hours, a logical queue this broker leads drops its
// earliest mapping item once that item's physical queue holds nothing (its max
// offset is its min, or 0): retention deleted its messages after a remapping,
// or none were ever stored there. Requests then no longer go to its broker.
// It reports how many items were dropped.
func (b *Broker) cleanStaticItems(ctx context.Context, now time.Time) int {
	if !atHourOf(b.conf().Store.DeleteWhen, now) {
		return 0
	}
	dropped := 0
	for topic, d := range b.mappings.All() {
		if ctx.Err() != nil {
			break
		}
		if d.Bname != b.conf().BrokerName {
			continue
		}
		var next *codec.TopicQueueMappingDetail
		for _, id := range codec.SortedKeys(d.HostedQueues) {
			items := d.HostedQueues[id]
			// While the next item's logic offset is undecided (a remapping
			// between its writes) the earliest one is all that serves reads.
			if len(items) < 2 || items[len(items)-1].Bname != d.Bname || items[1].LogicOffset < 0 {
				continue
			}
			s := &staticCtx{d: d, logical: id, items: items}
			hi, err := b.itemMax(ctx, s, &items[0])
			if err != nil {
				b.log.Warn("static topic clean: read the earliest item's max offset", "topic", topic, "queue", id, "err", err)
				continue
			}
			lo, err := b.itemMin(ctx, s, &items[0])
			if err != nil {
				b.log.Warn("static topic clean: read the earliest item's min offset", "topic", topic, "queue", id, "err", err)
				continue
			}
			if hi != lo && hi != 0 {
				continue
			}
			if next == nil {
				next = d.Clone() // a stored detail is never changed in place
			}
			next.HostedQueues[id] = next.HostedQueues[id][1:]
			dropped++
			b.log.Info("static topic clean: earliest item dropped", "topic", topic, "queue", id,
				"broker", items[0].Bname, "physicalQueue", items[0].QueueID, "minOffset", lo, "maxOffset", hi)
		}
		if next != nil {
			// Same epoch and leaders: Java's updateTopicQueueMapping as its clean calls it.
			if err := b.mappings.Update(next, false); err != nil {
				b.log.Warn("static topic clean: mapping not updated", "topic", topic, "err", err)
			}
		}
	}
	return dropped
}

// atHourOf reports whether now's hour is one of hours ("04", "04;16"):
// Java's UtilAll.isItTimeToDo.
func atHourOf(hours string, now time.Time) bool {
	for _, h := range strings.Split(hours, ";") {
		if n, err := strconv.Atoi(strings.TrimSpace(h)); err == nil && n == now.Hour() {
			return true
		}
	}
	return false
}
