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
)

// Property names the broker reads or writes (MessageConst).
const (
	PropUniqKey           = "UNIQ_KEY"
	PropCluster           = "CLUSTER"
	PropTags              = "TAGS"
	PropKeys              = "KEYS"
	PropTranMsg           = "TRAN_MSG"
	PropDelay             = "DELAY"
	PropRetryTopic        = "RETRY_TOPIC"
	PropReconsumeTime     = "RECONSUME_TIME"
	PropMaxReconsumeTimes = "MAX_RECONSUME_TIMES"
	PropMsgRegion         = "MSG_REGION"
	PropTraceSwitch       = "TRACE_ON"
)

const (
	propNameSep  = '\x01'
	propValueSep = '\x02'
)

// propGet finds key in an encoded properties string (name 0x01 value 0x02 …).
func propGet(props, key string) (string, bool) {
	for len(props) > 0 {
		end := strings.IndexByte(props, propValueSep)
		pair := props
		if end >= 0 {
			pair, props = props[:end], props[end+1:]
		} else {
			props = ""
		}
		if i := strings.IndexByte(pair, propNameSep); i > 0 && pair[:i] == key {
			return pair[i+1:], true
		}
	}
	return "", false
}

// propWithout drops every pair named key.
func propWithout(props, key string) string {
	if !strings.Contains(props, key) {
		return props
	}
	var b strings.Builder
	for len(props) > 0 {
		end := strings.IndexByte(props, propValueSep)
		pair := props
		if end >= 0 {
			pair, props = props[:end], props[end+1:]
		} else {
			props = ""
		}
		if i := strings.IndexByte(pair, propNameSep); i > 0 && pair[:i] == key {
			continue
		}
		if pair == "" {
			continue
		}
		b.WriteString(pair)
		b.WriteByte(propValueSep)
	}
	return b.String()
}

// propAppend appends one pair, keeping the trailing 0x02 Java writes.
func propAppend(b *strings.Builder, key, value string) {
	b.WriteString(key)
	b.WriteByte(propNameSep)
	b.WriteString(value)
	b.WriteByte(propValueSep)
}

// fixStoredProps is what the broker does to a sent message's properties
// (AbstractSendMessageProcessor.buildMsgContext, then the send): set MSG_REGION
// and TRACE_ON, add a UNIQ_KEY when the producer gave none, and set CLUSTER.
func fixStoredProps(props string, cfg *BrokerConfig, ids *uniqIDGen) string {
	_, hasUniq := propGet(props, PropUniqKey)
	for _, k := range [...]string{PropMsgRegion, PropTraceSwitch, PropCluster} {
		if _, ok := propGet(props, k); ok {
			props = propWithout(props, k)
		}
	}
	var b strings.Builder
	b.Grow(len(props) + len(cfg.RegionID) + len(cfg.BrokerClusterName) + 80)
	b.WriteString(props)
	if len(props) > 0 && props[len(props)-1] != propValueSep {
		b.WriteByte(propValueSep)
	}
	propAppend(&b, PropMsgRegion, cfg.RegionID)
	propAppend(&b, PropTraceSwitch, strconv.FormatBool(cfg.TraceOn))
	if !hasUniq {
		propAppend(&b, PropUniqKey, ids.next())
	}
	propAppend(&b, PropCluster, cfg.BrokerClusterName)
	return b.String()
}

// withCluster sets CLUSTER and nothing else (batch inner messages).
func withCluster(props, cluster string) string {
	if _, ok := propGet(props, PropCluster); ok {
		props = propWithout(props, PropCluster)
	}
	var b strings.Builder
	b.Grow(len(props) + len(cluster) + 10)
	b.WriteString(props)
	if len(props) > 0 && props[len(props)-1] != propValueSep {
		b.WriteByte(propValueSep)
	}
	propAppend(&b, PropCluster, cluster)
	return b.String()
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
