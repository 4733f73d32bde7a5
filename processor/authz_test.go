package processor

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"rmqd/codec"
	"rmqd/compat"
)

// offsetBrokers are a broker under ACL 1.0 and one under ACL 2.0, each with
// an identity aliceak allowed to publish to and consume "mine" with group g1
// and nothing on "secret".
func offsetBrokers(t *testing.T) map[string]*testBroker {
	yml := filepath.Join(t.TempDir(), "plain_acl.yml")
	require.NoError(t, os.WriteFile(yml, []byte(`accounts:
  - accessKey: aliceak
    secretKey: "12345678"
    defaultTopicPerm: DENY
    defaultGroupPerm: DENY
    topicPerms:
      - mine=PUB|SUB
    groupPerms:
      - g1=SUB
`), 0o644))
	v1 := newTestBroker(t, func(c *BrokerConfig) { c.AclEnable, c.AclPlainFile = true, yml })
	v2 := newTestBroker(t, func(c *BrokerConfig) {
		c.AuthenticationEnabled, c.AuthorizationEnabled = true, true
		c.InitAuthenticationUser = `{"username":"su","password":"supw"}`
	})
	h := v2.Handlers()
	for _, r := range []struct {
		code       int32
		key, value string
		body       string
	}{
		{codec.ReqAuthCreateUser, "username", "aliceak", `{"username":"aliceak","password":"12345678","userType":"Normal"}`},
		{codec.ReqAuthCreateAcl, "subject", "User:aliceak", `{"subject":"User:aliceak","policies":[{"policyType":"Custom","entries":[
			{"resource":"Topic:mine","actions":["Pub","Sub","Get"],"decision":"Allow"},{"resource":"Group:g1","actions":["Sub"],"decision":"Allow"}]}]}`},
	} {
		req := codec.NewRequest(r.code)
		req.Ext, req.Body = codec.ExtFields{{Key: r.key, Value: r.value}}, []byte(r.body)
		resp, err := h[r.code].ProcessRequest(context.Background(), nil, req)
		require.NoError(t, err)
		require.EqualValues(t, codec.RespSuccess, resp.Code, resp.Remark)
	}
	return map[string]*testBroker{"ACL 1.0": v1, "ACL 2.0": v2}
}

// as is req as the hook lets it through for aliceak (the handlers read the
// identity the hook checked).
func as(req *codec.RemotingCommand) *codec.RemotingCommand {
	req.Ext.Set("AccessKey", "aliceak")
	return req
}

// TestOffsetCodesAuthorizeTheRecordsTopic: VIEW_MESSAGE_BY_ID,
// CONSUMER_SEND_MSG_BACK and END_TRANSACTION name a commitlog offset, not
// (or not reliably) a topic; the topic of the record found is authorized for
// the caller, so that another topic's message is neither shown, copied into
// the caller's retry topic, nor committed or rolled back.
func TestOffsetCodesAuthorizeTheRecordsTopic(t *testing.T) {
	for name, b := range offsetBrokers(t) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			c := newTestConn(31)
			put := func(topic, props string, sysFlag string) (queueOffset, clOffset int64) {
				req := sendReq(topic, 0, []byte("in "+topic), props)
				req.Ext.Set("sysFlag", sysFlag)
				resp, err := b.handleSendMessage(ctx, c, req)
				require.NoError(t, err)
				require.EqualValues(t, codec.RespSuccess, resp.Code, resp.Remark)
				_, off, err := compat.DecodeOffsetMsgID(ext(t, resp, "msgId"))
				require.NoError(t, err)
				var q int64
				for _, ch := range ext(t, resp, "queueOffset") {
					q = q*10 + int64(ch-'0')
				}
				return q, off
			}
			_, mine := put("mine", "", "0")
			_, secret := put("secret", "", "0")
			q1, halfMine := put("mine", "TRAN_MSG\x01true\x02PGROUP\x01PG\x02", "4")
			q2, halfSecret := put("secret", "TRAN_MSG\x01true\x02PGROUP\x01PG\x02", "4")
			require.Eventually(t, func() bool { return b.st.MaxOffsetInQueue(TopicTransHalf, 0) == 2 }, 5*time.Second, 10*time.Millisecond)

			view := func(off int64) *codec.RemotingCommand {
				req := codec.NewRequest(codec.ReqViewMessageById)
				req.Ext.Set("offset", i64s(off))
				r, err := b.handleViewMessageByID(ctx, c, as(req))
				require.NoError(t, err)
				return r
			}
			r := view(secret)
			require.EqualValues(t, codec.RespNoPermission, r.Code, r.Remark)
			require.Empty(t, r.Body)
			r = view(mine)
			require.EqualValues(t, codec.RespSuccess, r.Code, r.Remark)
			require.Equal(t, "in mine", string(decodeBody(t, r.Body)[0].Body))

			back := func(off int64) *codec.RemotingCommand {
				r, err := b.handleConsumerSendMsgBack(ctx, c, as(sendBackReq(off, "g1", 1, 16)))
				require.NoError(t, err)
				return r
			}
			r = back(secret)
			require.EqualValues(t, codec.RespNoPermission, r.Code, r.Remark)
			r = back(mine)
			require.EqualValues(t, codec.RespSuccess, r.Code, r.Remark)

			end := func(q, off int64, kind int32) *codec.RemotingCommand {
				req := endTxReq("PG", q, off, kind)
				req.Ext.Set("topic", "mine") // the header's topic is the caller's word only
				r, err := b.handleEndTransaction(ctx, c, as(req))
				require.NoError(t, err)
				return r
			}
			for _, kind := range []int32{tranCommit, tranRollback} {
				r = end(q2, halfSecret, kind)
				require.EqualValues(t, codec.RespNoPermission, r.Code, r.Remark)
			}
			r = end(q1, halfMine, tranCommit)
			require.EqualValues(t, codec.RespSuccess, r.Code, r.Remark)
			require.Eventually(t, func() bool { return b.st.MaxOffsetInQueue("mine", 0) == 2 }, 5*time.Second, 10*time.Millisecond)
			require.EqualValues(t, 1, b.st.MaxOffsetInQueue("secret", 0), "nothing committed into secret")
		})
	}
}
