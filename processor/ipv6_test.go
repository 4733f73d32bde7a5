package processor

import (
	"context"
	"net"
	"net/netip"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"rmqd/codec"
	"rmqd/compat"
)

// A broker advertising IPv6 takes a send from an IPv6 client and stores what a
// Java broker would: both hosts 16 bytes with their SYSFLAG bits, a 56-character
// offsetMsgId naming the IPv6 store host, and VIEW_MESSAGE_BY_ID finds the
// record from it. brokerIP1 may be bracketed, as a Java broker accepts.
func TestIPv6BrokerAndClient(t *testing.T) {
	for _, ip := range []string{"::1", "[::1]"} {
		t.Run(ip, func(t *testing.T) {
			b := newTestBroker(t, func(c *BrokerConfig) { c.BrokerIP1, c.BrokerIP2 = ip, ip })
			require.Equal(t, "[::1]:10911", b.conf().BrokerAddr())
			require.Equal(t, "[::1]:10912", b.haServerAddr())
			storeHost := netip.MustParseAddrPort("[::1]:10911")

			c := newTestConn(0)
			c.remote = &net.TCPAddr{IP: net.ParseIP("::1"), Port: 40000}
			// An IPv4 client seen through a dual-stack listener.
			c4 := newTestConn(0)
			c4.remote = &net.TCPAddr{IP: net.ParseIP("::ffff:10.1.2.3"), Port: 40001}
			ctx := context.Background()
			var offs []int64
			for _, conn := range []*testConn{c, c4} {
				resp, err := b.handleSendMessage(ctx, conn, sendReq("T6", 0, []byte("v6"), clientSendProps))
				require.NoError(t, err)
				require.EqualValues(t, codec.RespSuccess, resp.Code, resp.Remark)
				id := ext(t, resp, "msgId")
				require.Len(t, id, 56)
				host, off, err := compat.DecodeOffsetMsgID(id)
				require.NoError(t, err)
				require.Equal(t, storeHost, host)
				offs = append(offs, off)
			}
			waitQueued(b, "T6", 2)

			for i, want := range []string{"[::1]:40000", "10.1.2.3:40001"} {
				view := codec.NewRequest(codec.ReqViewMessageById)
				view.Ext.Set("offset", strconv.FormatInt(offs[i], 10))
				r, err := b.handleViewMessageByID(ctx, c, view)
				require.NoError(t, err)
				require.EqualValues(t, codec.RespSuccess, r.Code, r.Remark)
				var m codec.Message
				n, err := codec.DecodeRecord(r.Body, &m)
				require.NoError(t, err)
				require.Equal(t, len(r.Body), n)
				require.Equal(t, want, m.BornHost.String())
				require.Equal(t, storeHost, m.StoreHost)
				require.Equal(t, offs[i], m.CommitLogOffset)
				flags := codec.SysFlagStoreHostV6
				if i == 0 {
					flags |= codec.SysFlagBornHostV6
				}
				require.Equal(t, flags, m.SysFlag&(codec.SysFlagBornHostV6|codec.SysFlagStoreHostV6))
				require.Less(t, m.StoreTimestamp, time.Now().UnixMilli()+1)
			}
		})
	}
}

// PUSH_REPLY_MESSAGE_TO_CLIENT names the hosts as Java's getHostAddress() +
// ":" + port: an IPv6 one unbracketed and unabbreviated.
func TestReplyPushNamesIPv6HostsAsJava(t *testing.T) {
	b := newTestBroker(t, func(c *BrokerConfig) { c.BrokerIP1, c.BrokerIP2 = "::1", "::1" })
	ctx := context.Background()
	requester := newTestConn(1)
	var pushed []*codec.RemotingCommand
	requester.answer = func(req *codec.RemotingCommand) *codec.RemotingCommand {
		pushed = append(pushed, req)
		return codec.NewResponse(req, codec.RespSuccess, "")
	}
	_, err := b.handleHeartBeat(ctx, requester, heartbeatReq(t, "req-1", "CG"))
	require.NoError(t, err)
	replier := newTestConn(0)
	replier.remote = &net.TCPAddr{IP: net.ParseIP("2001:db8::7"), Port: 40002}
	req := sendReq("DefaultCluster_REPLY_TOPIC", -1, []byte("pong"), "REPLY_TO_CLIENT\x01req-1\x02CORRELATION_ID\x01c1\x02")
	req.Code = codec.ReqSendReplyMessage
	resp, err := b.handleSendReplyMessage(ctx, replier, req)
	require.NoError(t, err)
	require.EqualValues(t, codec.RespSuccess, resp.Code, resp.Remark)
	require.Len(t, ext(t, resp, "msgId"), 56)
	require.Len(t, pushed, 1)
	born, _ := pushed[0].Ext.Get("bornHost")
	store, _ := pushed[0].Ext.Get("storeHost")
	require.Equal(t, "2001:db8:0:0:0:0:0:7:40002", born)
	require.Equal(t, "0:0:0:0:0:0:0:1:10911", store)
}

// brokerIP1's default falls back to an IPv6 address on a host without IPv4, as
// NetworkUtil.getLocalAddress does, rather than advertising 127.0.0.1.
func TestDefaultBrokerIPFallsBackToIPv6(t *testing.T) {
	cidr := func(s string) net.Addr {
		ip, n, err := net.ParseCIDR(s)
		require.NoError(t, err)
		n.IP = ip
		return n
	}
	require.Equal(t, "10.0.0.5", pickLocalIP([]net.Addr{cidr("127.0.0.1/8"), cidr("fd00::2/64"), cidr("10.0.0.5/24")}))
	require.Equal(t, "fd00::2", pickLocalIP([]net.Addr{cidr("127.0.0.1/8"), cidr("::1/128"), cidr("fe80::1/64"), cidr("fd00::2/64")}))
	require.Equal(t, "127.0.0.1", pickLocalIP([]net.Addr{cidr("::1/128"), cidr("fe80::1/64")}))
}

// A link-local brokerIP1 carries a zone ("fe80::1%lo") that no record keeps:
// the broker's own revive records, read back, are still recognised as its own.
func TestZonedBrokerIPRecognisesOwnReviveRecords(t *testing.T) {
	b := newTestBroker(t, func(c *BrokerConfig) { c.BrokerIP1, c.BrokerIP2 = "fe80::1%lo", "fe80::1%lo" })
	m := codec.Message{Topic: compat.SysTopicRevivePrefix + b.conf().BrokerClusterName, QueueID: 0,
		BornHost: b.storeHost, StoreHost: b.storeHost, Body: []byte("ck")}
	buf := make([]byte, codec.RecordSize(&m))
	codec.EncodeRecord(buf, &m)
	var back codec.Message
	_, err := codec.DecodeRecord(buf, &back)
	require.NoError(t, err)
	require.True(t, b.popRevive(&back))
	require.Len(t, compat.OffsetMsgID(b.storeHost, 1), 56)
}
