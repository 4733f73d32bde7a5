package processor

import (
	"context"
	"net/netip"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"rmqd/codec"
	"rmqd/compat"
	"rmqd/processor/acl"
)

const (
	acceptReviveTopic = "rmq_sys_REVIVE_LOG_DefaultCluster"
	innerCreds        = `{"accessKey":"inner","secretKey":"innerpass"}`
	validCk           = `{"bm":0,"bn":"broker-a","c":"G","d":[0],"it":60000,"n":1,"pt":1,"q":0,"reviveTime":60001,"ro":0,"so":0,"t":"T"}`
)

// reviveSend is an acting slave's send of a revive record (no deliver time:
// stored at once in the revive queue).
func reviveSend(tag, body string) *codec.RemotingCommand {
	return sendReq(acceptReviveTopic, 0, []byte(body), "TAGS\x01"+tag+"\x02WAIT\x01false\x02")
}

func reviveSendCode(t *testing.T, b *testBroker, req *codec.RemotingCommand) int32 {
	t.Helper()
	resp, err := b.handleSendMessage(context.Background(), newTestConn(41), req)
	require.NoError(t, err)
	return resp.Code
}

// A broker takes a send to its revive topic (an acting slave's POP record,
// EscapeBridge.putMessageToSpecificQueue) only from a broker: with ACL off,
// when it runs enableSlaveActingMaster; and only well-formed ck, ack and bAck
// records. It stores them as its own (born at its address), which its timer
// and reviver trust.
func TestReviveSendAcceptedFromBrokerACLOff(t *testing.T) {
	off := newTestBroker(t, nil)
	require.EqualValues(t, codec.RespNoPermission, reviveSendCode(t, off, reviveSend("ck", validCk)),
		"a client's send without the acting-master feature")

	b := newTestBroker(t, func(c *BrokerConfig) { c.EnableSlaveActingMaster = true })
	for _, bad := range [][2]string{
		{"ck", `{"c":"G","n":1}`},                   // no topic
		{"ck", `{"c":"G","n":40,"t":"T"}`},          // more than a POP's 32
		{"ck", `not json`},                          //
		{"ack", `{"ao":3,"pt":1,"q":0,"so":3}`},     // no group nor topic
		{"bAck", `{"c":"G","pt":1,"so":3,"t":"T"}`}, // no offsets
		{"x", validCk},                              // not a revive tag
		{"", validCk},
	} {
		require.EqualValues(t, codec.RespNoPermission, reviveSendCode(t, b, reviveSend(bad[0], bad[1])), "%q", bad)
	}
	batch := reviveSend("ck", validCk)
	batch.Code = codec.ReqSendBatchMessage
	require.NotEqualValues(t, codec.RespSuccess, reviveSendCode(t, b, batch), "a batch")
	other := sendReq("rmq_sys_REVIVE_LOG_OtherCluster", 0, []byte(validCk), "TAGS\x01ck\x02")
	require.EqualValues(t, codec.RespNoPermission, reviveSendCode(t, b, other), "another cluster's revive topic")

	for _, ok := range [][2]string{{"ck", validCk}, {"ack", `{"ao":0,"bn":"broker-a","c":"G","pt":1,"q":0,"so":0,"t":"T"}`},
		{"bAck", `{"aol":[0],"bn":"broker-a","c":"G","pt":1,"q":0,"so":0,"t":"T"}`}} {
		require.EqualValues(t, codec.RespSuccess, reviveSendCode(t, b, reviveSend(ok[0], ok[1])), "%q", ok)
	}
	require.Eventually(t, func() bool { return b.st.MaxOffsetInQueue(acceptReviveTopic, 0) == 3 }, 5*time.Second,
		5*time.Millisecond)
	msgs := pullAll(t, b, acceptReviveTopic, 0)
	require.Len(t, msgs, 3)
	for _, m := range msgs {
		require.Equal(t, b.storeHost, m.BornHost, "stored as the broker's own record")
		require.True(t, b.popRevive(&m))
	}
}

// With ACL 1.0 or 2.0 on, the send must be signed by the
// innerClientAuthenticationCredentials account (verified here: a white
// address passes the hook unsigned), whatever enableSlaveActingMaster says.
func TestReviveSendAcceptedFromBrokerACLOn(t *testing.T) {
	for name, mod := range map[string]func(*BrokerConfig){
		"acl2": func(c *BrokerConfig) { c.AuthenticationEnabled = true },
		"acl1": func(c *BrokerConfig) { c.AclEnable = true; c.RocketmqHome = "" },
	} {
		t.Run(name, func(t *testing.T) {
			b := newTestBroker(t, func(c *BrokerConfig) {
				mod(c)
				c.InnerClientAuthenticationCredentials = innerCreds
			})
			require.EqualValues(t, codec.RespNoPermission, reviveSendCode(t, b, reviveSend("ck", validCk)), "unsigned")
			req := reviveSend("ck", validCk)
			acl.SignRequest(req, "someone", "innerpass")
			require.EqualValues(t, codec.RespNoPermission, reviveSendCode(t, b, req), "another account")
			req = reviveSend("ck", validCk)
			acl.SignRequest(req, "inner", "wrong")
			require.EqualValues(t, codec.RespNoPermission, reviveSendCode(t, b, req), "bad signature")
			req = reviveSend("ck", `{"c":"G"}`)
			acl.SignRequest(req, "inner", "innerpass")
			require.EqualValues(t, codec.RespNoPermission, reviveSendCode(t, b, req), "signed but malformed")
			req = reviveSend("ck", validCk)
			acl.SignRequest(req, "inner", "innerpass")
			require.EqualValues(t, codec.RespSuccess, reviveSendCode(t, b, req))
		})
	}
	// Without inner credentials nothing is a broker's.
	b := newTestBroker(t, func(c *BrokerConfig) { c.AuthenticationEnabled = true; c.EnableSlaveActingMaster = true })
	req := reviveSend("ck", validCk)
	acl.SignRequest(req, "inner", "innerpass")
	require.EqualValues(t, codec.RespNoPermission, reviveSendCode(t, b, req))
}

// A store taken over from a broker at another address (Apache's, or rmqd's on
// another port) holds that broker's checkpoints in the timer wheel: born where
// they were stored, they are its own and still revive. A client's message, born
// at the client, is not, wherever it was stored.
func TestPopReviveTrustsThePreviousBrokersRecords(t *testing.T) {
	b := newTestBroker(t, nil)
	prev := netip.MustParseAddrPort("127.0.0.1:22639")
	m := codec.Message{Topic: compat.SysTopicRevivePrefix + b.conf().BrokerClusterName, BornHost: prev, StoreHost: prev}
	require.True(t, b.popRevive(&m), "the previous broker's checkpoint")
	m.BornHost = netip.MustParseAddrPort("127.0.0.1:51234")
	require.False(t, b.popRevive(&m), "a client's message stored by the previous broker")
	m.StoreHost = b.storeHost
	require.False(t, b.popRevive(&m), "a client's message stored by this broker")
	m.BornHost = prev
	require.False(t, b.popRevive(&m), "born at another broker, stored here, not accepted as a revive send")
	m.BornHost, m.StoreHost = netip.AddrPort{}, netip.AddrPort{}
	require.False(t, b.popRevive(&m), "no hosts")
}
