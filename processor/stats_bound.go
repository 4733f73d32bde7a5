package processor

import (
	"fmt"
	"strconv"
)

// statsBodyMax bounds the body of GET_CONSUME_STATS and GET_TOPIC_STATS_INFO:
// a client refuses a frame above 16 MiB, so a larger answer only costs the
// broker its memory and time (Java builds it whatever its size).
const statsBodyMax = queryBodyMax

// mqSpan is a topic and how many queues of it an offsetTable lists.
type mqSpan struct {
	topic  string // the lookup name
	key    string // the name in the answer's MessageQueue keys
	queues int32
}

// offsetTableSize sizes the {MessageQueue: value} object an answer lists for
// the queues of spans, without building it, and says whether it fits in room
// bytes. The keys are sized exactly; the values are bounded from the zero
// value's encoding (each of its nums integers takes 1 to 20 characters), and
// only when the bounds straddle room is each queue looked up and its value
// encoded into one scratch buffer, stopping once room is passed.
func offsetTableSize[V any](b *Broker, spans []mqSpan, room, nums int,
	appendValue func([]byte, V) []byte, lookup func(topic string, q int32) V) (size int, fits bool) {
	var scratch []byte
	var zero V
	zeroLen := len(appendValue(scratch, zero))
	entries, keys := 0, 0
	for _, s := range spans {
		n := int(max(s.queues, 0))
		if n == 0 {
			continue
		}
		scratch = b.appendMQ(scratch[:0], mqKey{s.key, 0})
		keys += n*(len(scratch)-1) + digitsBelow(n)
		entries += n
	}
	frame := keys + 2 + max(2*entries-1, 0) // braces, ':' per entry, ',' between
	lo := frame + entries*zeroLen
	if lo > room {
		return lo, false
	}
	if hi := lo + entries*nums*19; hi <= room {
		return hi, true
	}
	size = frame
	for _, s := range spans {
		for q := int32(0); q < s.queues; q++ {
			scratch = appendValue(scratch[:0], lookup(s.topic, q))
			if size += len(scratch); size > room {
				return size, false
			}
		}
	}
	return size, true
}

// digitsBelow is how many decimal digits 0, 1, ..., n-1 take together.
func digitsBelow(n int) int {
	total := 0
	for lo, hi, d := 0, 10, 1; lo < n; lo, hi, d = hi, hi*10, d+1 {
		total += (min(n, hi) - lo) * d
	}
	return total
}

// statsTooLarge is the remark of a stats answer over statsBodyMax.
func statsTooLarge(what string, queues, size int) string {
	return fmt.Sprintf("%s of %d queues exceed the frame limit (%d bytes or more, max %d); ask per topic", what, queues, size, statsBodyMax)
}

// topicStat is one queue's entry of GET_TOPIC_STATS_INFO.
type topicStat struct{ min, max, last int64 }

func (b *Broker) topicStat(topic string, q int32) topicStat {
	s := topicStat{min: max(b.store.MinOffsetInQueue(topic, q), 0), max: max(b.store.MaxOffsetInQueue(topic, q), 0)}
	if s.max > 0 {
		s.last = b.store.MessageStoreTimestamp(topic, q, s.max-1)
	}
	return s
}

func appendTopicStat(dst []byte, s topicStat) []byte {
	dst = append(dst, `{"lastUpdateTimestamp":`...)
	dst = strconv.AppendInt(dst, s.last, 10)
	dst = append(dst, `,"maxOffset":`...)
	dst = strconv.AppendInt(dst, s.max, 10)
	dst = append(dst, `,"minOffset":`...)
	dst = strconv.AppendInt(dst, s.min, 10)
	return append(dst, '}')
}

// consumeStat is one queue's entry of GET_CONSUME_STATS.
// pull is where the group's last pull left the queue, not below consumer
// (Java's getConsumeStats: mqadmin prints pull - consumer as #Inflight).
type consumeStat struct{ broker, consumer, pull, last int64 }

// consumeStat is one queue's stats. A static topic's missing offset stays -1, as in Java: its "double read"
// (QUERY_CONSUMER_OFFSET over the items) takes 0 for a stored offset.
func (b *Broker) consumeStat(group, topic string, q int32) consumeStat {
	s := consumeStat{broker: max(b.store.MaxOffsetInQueue(topic, q), 0), consumer: b.offsets.Query(group, topic, q)}
	if b.mappings.Get(topic) == nil {
		s.consumer = max(s.consumer, 0)
	}
	s.pull = max(b.offsets.QueryPull(group, topic, q), s.consumer)
	if s.consumer > 0 {
		s.last = b.store.MessageStoreTimestamp(topic, q, s.consumer-1)
	}
	return s
}

func appendConsumeStat(dst []byte, s consumeStat) []byte {
	dst = append(dst, `{"brokerOffset":`...)
	dst = strconv.AppendInt(dst, s.broker, 10)
	dst = append(dst, `,"consumerOffset":`...)
	dst = strconv.AppendInt(dst, s.consumer, 10)
	dst = append(dst, `,"lastTimestamp":`...)
	dst = strconv.AppendInt(dst, s.last, 10)
	dst = append(dst, `,"pullOffset":`...)
	dst = strconv.AppendInt(dst, s.pull, 10)
	return append(dst, '}')
}
