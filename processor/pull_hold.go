package processor

import (
	"context"
	"sync"
	"time"

	"rmqd/remoting"
	"rmqd/store"
)

// heldPull is a PULL_MESSAGE that found nothing and waits for a message
// (Java's PullRequest).
type heldPull struct {
	conn     remoting.Conn
	header   pullHeader
	reply    pullReply
	filter   store.MessageFilter
	deadline time.Time
}

type topicQueue struct {
	topic string
	queue int32
}

// pullHoldService is PullRequestHoldService: held pulls per queue, woken by the
// store's arriving listener, re-checked on a tick for deadlines and for messages
// a notification missed.
type pullHoldService struct {
	b     *Broker
	tick  time.Duration
	mu    sync.Mutex
	held  map[topicQueue][]*heldPull
	count int
}

func newPullHoldService(b *Broker) *pullHoldService {
	return &pullHoldService{b: b, tick: 500 * time.Millisecond, held: map[topicQueue][]*heldPull{}}
}

// suspend parks a pull. A message may have arrived between the read and the
// park, so the queue is checked once more right away.
func (s *pullHoldService) suspend(p *heldPull) {
	k := topicQueue{p.header.topic, p.header.queueID}
	s.mu.Lock()
	s.held[k] = append(s.held[k], p)
	s.count++
	s.mu.Unlock()
	if s.b.store.MaxOffsetInQueue(k.topic, k.queue) > p.header.queueOffset {
		s.notify(k.topic, k.queue, -1, 0, "", false)
	}
}

// arriving is the store's ArrivingListener. As in Java's
// NotifyMessageArrivingListener, maxOffset is the queue's new max offset (the
// arrived message's offset + 1).
func (s *pullHoldService) arriving(topic string, queueID int32, maxOffset int64, tagsCode int64, _ int64, props string) {
	s.mu.Lock()
	empty := s.count == 0
	s.mu.Unlock()
	if empty {
		return
	}
	s.notify(topic, queueID, maxOffset, tagsCode, props, true)
}

// notify wakes the held pulls of a queue that can now see a message (newest is
// the queue's max offset, -1 to ask the store) and those past their deadline.
func (s *pullHoldService) notify(topic string, queueID int32, newest int64, tagsCode int64, props string, haveTags bool) {
	k := topicQueue{topic, queueID}
	now := time.Now()
	var wake []*heldPull
	s.mu.Lock()
	list := s.held[k]
	if len(list) == 0 {
		s.mu.Unlock()
		return
	}
	keep := list[:0]
	for _, p := range list {
		n := newest
		if n <= p.header.queueOffset {
			n = s.b.store.MaxOffsetInQueue(topic, queueID)
		}
		ready := n > p.header.queueOffset
		if ready && haveTags && newest > p.header.queueOffset && p.filter != nil {
			ready = p.filter.MatchTagsCode(tagsCode)
			if pm, ok := p.filter.(propsMatcher); ok && ready {
				ready = pm.MatchEncodedProperties(props)
			}
		}
		if ready || !now.Before(p.deadline) || p.conn.Closed() {
			wake = append(wake, p)
		} else {
			keep = append(keep, p)
		}
	}
	for i := len(keep); i < len(list); i++ {
		list[i] = nil
	}
	if len(keep) == 0 {
		delete(s.held, k)
	} else {
		s.held[k] = keep
	}
	s.count -= len(wake)
	s.mu.Unlock()
	if len(wake) > 0 {
		go s.execute(wake)
	}
}

// execute re-runs woken pulls without suspension and answers them.
func (s *pullHoldService) execute(ps []*heldPull) {
	for _, p := range ps {
		if p.conn.Closed() {
			continue
		}
		resp, err := s.b.pull(p.conn, &p.header, p.reply, p.filter, false, 0)
		if err != nil {
			resp = p.reply.response(1, err.Error())
		}
		if resp != nil {
			if err := p.conn.WriteResponse(resp); err != nil {
				s.b.log.Debug("write held pull response", "remote", p.conn.RemoteAddr(), "err", err)
			}
		}
	}
}

// run checks every held queue each tick until ctx ends.
func (s *pullHoldService) run(ctx context.Context) {
	t := time.NewTicker(s.tick)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			s.mu.Lock()
			keys := make([]topicQueue, 0, len(s.held))
			for k := range s.held {
				keys = append(keys, k)
			}
			s.mu.Unlock()
			for _, k := range keys {
				s.notify(k.topic, k.queue, -1, 0, "", false)
			}
		}
	}
}

// wakeAll answers every held pull (shutdown).
func (s *pullHoldService) wakeAll() {
	s.mu.Lock()
	var all []*heldPull
	for k, l := range s.held {
		all = append(all, l...)
		delete(s.held, k)
	}
	s.count = 0
	s.mu.Unlock()
	s.execute(all)
}
