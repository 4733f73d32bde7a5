package processor

import (
	"encoding/binary"
	"encoding/hex"
	"math/rand/v2"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"rmqd/codec"
	"rmqd/processor/delivery"
)

// fixStoredProps is what the broker does to a sent message's properties
// (AbstractSendMessageProcessor.buildMsgContext, then the send): drop POP_CK,
// set MSG_REGION and TRACE_ON, add a UNIQ_KEY when the producer gave none, and
// set CLUSTER. POP_CK is the broker's receipt handle, which clients keep when a
// popped message has one: a stored one would make every ack of that message
// name the wrong pop (Java's clearReservedProperties). The
// result names each property once, as Java's re-encoding does. pv indexes the
// properties and is left indexing the result, so a send walks them once. The
// result is written into buf when it fits (nil: a new string).
func fixStoredProps(pv *codec.PropView, cfg *BrokerConfig, ids *uniqIDGen, dropPriority bool, liteLMQ string, buf []byte) string {
	e := codec.EditProperties(pv.Props())
	e.Into(buf)
	e.Delete(codec.PropPopCK)
	if dropPriority {
		e.Delete(codec.PropPriority)
	}
	if liteLMQ != "" {
		// Java 5.5's send of a lite message: its lite topic's queue is where it is dispatched.
		e.Set(codec.PropInnerMultiDispatch, liteLMQ)
	}
	e.Set(codec.PropMsgRegion, cfg.RegionID)
	e.Set(codec.PropTraceSwitch, strconv.FormatBool(cfg.TraceOn))
	if !pv.Has(codec.PropUniqKey) {
		e.Set(codec.PropUniqKey, ids.next())
	}
	e.Set(codec.PropCluster, cfg.BrokerClusterName)
	return e.StringView(pv)
}

// withCluster sets CLUSTER and nothing else (batch inner messages).
func withCluster(props, cluster string) string {
	e := codec.EditProperties(props)
	e.Set(codec.PropCluster, cluster)
	return e.String()
}

// uniqIDGen makes message ids shaped like MessageClientIDSetter's: 4-byte IP,
// 2-byte pid, 4-byte random, 4-byte ms since month start, 2-byte counter, as 32
// upper-case hex characters.
type uniqIDGen struct {
	mu         sync.Mutex
	prefix     [20]byte
	monthStart time.Time
	nextMonth  time.Time
	counter    uint16
}

func newUniqIDGen(ip string) *uniqIDGen {
	g := &uniqIDGen{}
	var raw [10]byte
	if a, err := netip.ParseAddr(ip); err == nil && a.Unmap().Is4() {
		b := a.Unmap().As4()
		copy(raw[:4], b[:])
	} else {
		binary.BigEndian.PutUint32(raw[:4], rand.Uint32())
	}
	binary.BigEndian.PutUint16(raw[4:], uint16(os.Getpid()))
	binary.BigEndian.PutUint32(raw[6:], rand.Uint32())
	hex.Encode(g.prefix[:], raw[:])
	copy(g.prefix[:], strings.ToUpper(string(g.prefix[:])))
	g.counter = uint16(rand.Uint32())
	return g
}

func (g *uniqIDGen) next() string {
	now := time.Now()
	g.mu.Lock()
	if !now.Before(g.nextMonth) {
		y, m, _ := now.Date()
		g.monthStart = time.Date(y, m, 1, 0, 0, 0, 0, now.Location())
		g.nextMonth = g.monthStart.AddDate(0, 1, 0)
	}
	g.counter++
	c := g.counter
	var raw [6]byte
	binary.BigEndian.PutUint32(raw[:4], uint32(now.Sub(g.monthStart).Milliseconds()))
	binary.BigEndian.PutUint16(raw[4:], c)
	var out [32]byte
	copy(out[:], g.prefix[:])
	g.mu.Unlock()
	const hx = "0123456789ABCDEF"
	for i, b := range raw {
		out[20+2*i], out[21+2*i] = hx[b>>4], hx[b&0xF]
	}
	return string(out[:])
}

// messagePriority is what Java 5.4's SendMessageProcessor does with a
// message's priority: a message of no other type (TopicMessageType.
// parseFromMessageProperty: not a transaction, delay or FIFO message) goes to
// the queue numbered by its priority, else the priority is dropped. prio is
// -1 when the message names none, or none Integer.parseInt reads (Java then
// leaves the property as it is).
func messagePriority(pv *codec.PropView) (prio int32, drop bool) {
	v, ok := pv.Get(codec.PropPriority)
	if !ok {
		return -1, false
	}
	n, err := strconv.ParseInt(v, 10, 32)
	if err != nil || n < 0 {
		return -1, false
	}
	tran, _ := pv.Get(codec.PropTranMsg)
	if parseJavaBool(tran) || pv.Has(codec.PropDelay) || delivery.HasTimerProps(pv) || pv.Has(codec.PropShardingKey) {
		return -1, true
	}
	return int32(n), false
}
