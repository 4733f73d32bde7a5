package processor

import (
	"context"
	"time"
)

// The delivery services (delay levels, timer wheel) tick every 100 ms while they hold messages, as Java's
// do. With nothing to deliver they sleep up to idleTick and are woken by the dispatch of a message to their
// topic instead: an idle broker should not wake ten times a second per service (issue 22: idle CPU). The
// sleep is a safety net only (every hold and every dispatch to their topics kicks them): 10 s, not 1 s.
const idleTick = 10 * time.Second

// arriving is the store's ArrivingListener: held pulls first, then held POPs, then the delivery service
// whose topic got the message.
func (b *Broker) arriving(topic string, queueID int32, logicOffset, tagsCode, storeTimestamp int64, properties string) {
	b.hold.arriving(topic, queueID, logicOffset, tagsCode, storeTimestamp, properties)
	b.popArriving(topic, queueID, tagsCode, properties)
	switch topic {
	case TopicSchedule:
		kick(b.schedule.kick)
	case TopicTimer:
		kick(b.timer.kick)
	}
}

func kick(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}

// tickUntilIdle calls f every busy while it reports pending work; otherwise the next call comes after
// idle, or one busy period after a kick (not at once: the ticks keep their period, as a fixed ticker's
// would, so work kicked in does not run twice in quick succession).
func tickUntilIdle(ctx context.Context, busy, idle time.Duration, wake <-chan struct{}, f func(context.Context) (pending bool)) {
	t := time.NewTimer(busy)
	defer t.Stop()
	idling := false
	for {
		select {
		case <-ctx.Done():
			return
		case <-wake:
			if idling {
				idling = false
				t.Reset(busy)
			}
			continue
		case <-t.C:
		}
		idling = !f(ctx)
		if idling {
			t.Reset(idle)
		} else {
			t.Reset(busy)
		}
	}
}
