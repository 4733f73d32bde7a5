package processor

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"rmqd/codec"
	"rmqd/processor/acl"
)

// handlerSeed is one request as an official client or mqadmin sends it:
// header lines "key=value" and a body.
type handlerSeed struct {
	code int32
	ext  string
	body string
}

// fuzzFixture is what FuzzHandlers' broker holds before the first fuzzed
// request, so that seeds naming it reach past the "no such topic / group /
// message" answers.
type fuzzFixture struct {
	halfMsgID string // offset message id of a transaction half message at commit log offset 0
	msgID     string // offset message id of a message of fuzzTopic
	uniqKey   string // its UNIQ_KEY
}

const (
	fuzzTopic = "FT"
	fuzzGroup = "FG"
	fuzzProd  = "FP"
	fuzzCID   = "127.0.0.1@fuzz"
)

// makeFuzzFixture stores a half message (first, so at commit log offset 0),
// three messages of fuzzTopic queue 0 with keys and tags, and registers a
// producer and a consumer subscribed to fuzzTopic.
func makeFuzzFixture(f *testing.F, b *testBroker) fuzzFixture {
	f.Helper()
	h := b.Handlers()
	c := newTestConn(2)
	call := func(req *codec.RemotingCommand) *codec.RemotingCommand {
		n := len(c.responses())
		resp, err := h[req.Code].ProcessRequest(context.Background(), c, req)
		if err != nil {
			f.Fatalf("fixture code %d: %v", req.Code, err)
		}
		deadline := time.After(10 * time.Second)
		for resp == nil {
			if rs := c.responses(); len(rs) > n {
				resp = rs[n]
				break
			}
			select {
			case <-c.wrote:
			case <-deadline:
				f.Fatalf("fixture code %d: no response", req.Code)
			}
		}
		if resp.Code != codec.RespSuccess {
			f.Fatalf("fixture code %d: %d %s", req.Code, resp.Code, resp.Remark)
		}
		if resp.CustomHeader != nil { // read the typed header as a client would
			var d codec.RemotingCommand
			if err := codec.DecodeCommand(resp.Encode(nil)[4:], &d); err != nil {
				f.Fatal(err)
			}
			resp = &d
		}
		return resp
	}
	var fx fuzzFixture
	half := sendReq(fuzzTopic, 0, []byte("half"), "TRAN_MSG\x01true\x02PGROUP\x01"+fuzzProd+"\x02UNIQ_KEY\x01C0A8000100002A9F00000000000000AA\x02")
	half.Ext.Set("producerGroup", fuzzProd)
	half.Ext.Set("sysFlag", "4") // TRANSACTION_PREPARED_TYPE
	fx.halfMsgID, _ = call(half).Ext.Get("msgId")
	fx.uniqKey = "C0A8000100002A9F0000000000000001"
	for i := range 3 {
		r := call(sendReq(fuzzTopic, 0, []byte(fmt.Sprint("body", i)),
			"TAGS\x01tagA\x02KEYS\x01k1 k2\x02UNIQ_KEY\x01"+fx.uniqKey[:len(fx.uniqKey)-1]+fmt.Sprint(i+1)+"\x02WAIT\x01true\x02"))
		if i == 0 {
			fx.msgID, _ = r.Ext.Get("msgId")
		}
	}
	waitQueued(b, fuzzTopic, 3)
	hb := codec.HeartbeatData{ClientID: fuzzCID, ProducerDataSet: []codec.ProducerData{{GroupName: fuzzProd}}}
	hb.ConsumerDataSet = []codec.ConsumerData{{GroupName: fuzzGroup, ConsumeType: "CONSUME_PASSIVELY",
		MessageModel: "CLUSTERING", ConsumeFromWhere: "CONSUME_FROM_FIRST_OFFSET",
		SubscriptionDataSet: []codec.SubscriptionData{{Topic: fuzzTopic, SubString: "tagA", ExpressionType: "TAG",
			SubVersion: 1, CodeSet: codec.CodeSet{}, TagsSet: []string{"tagA"}}}}}
	body, err := json.Marshal(hb)
	if err != nil {
		f.Fatal(err)
	}
	req := codec.NewRequest(codec.ReqHeartBeat)
	req.Body = body
	call(req)
	return fx
}

// handlerSeeds are valid requests of every code the broker serves, with the
// header fields and bodies the Java client, mqadmin and the dashboard send,
// naming what fx holds.
func handlerSeeds(fx fuzzFixture) []handlerSeed {
	now := fmt.Sprint(time.Now().UnixMilli())
	send := "producerGroup=" + fuzzProd + "\ntopic=" + fuzzTopic + "\ndefaultTopic=TBW102\ndefaultTopicQueueNums=4\nqueueId=0\nsysFlag=0\nbornTimestamp=" + now +
		"\nflag=0\nproperties=TAGS\x01tagA\x02KEYS\x01k1\x02UNIQ_KEY\x01C0A8000100002A9F0000000000000009\x02WAIT\x01true\x02\nreconsumeTimes=0\nunitMode=false\nmaxReconsumeTimes=16\nbatch=false\nbname=broker-a"
	sendV2 := "a=" + fuzzProd + "\nb=" + fuzzTopic + "\nc=TBW102\nd=4\ne=1\nf=0\ng=" + now + "\nh=0\ni=TAGS\x01tagB\x02WAIT\x01true\x02\nj=0\nk=false\nl=16\nm=false\nn=broker-a"
	var batch []byte
	for i := range 3 {
		batch = codec.AppendBatchEntry(batch, 0, []byte(fmt.Sprint("b", i)), "TAGS\x01tagA\x02UNIQ_KEY\x01C0A8000100002A9F00000000000000B"+fmt.Sprint(i)+"\x02")
	}
	pull := "consumerGroup=" + fuzzGroup + "\ntopic=" + fuzzTopic + "\nqueueId=0\nqueueOffset=0\nmaxMsgNums=32\nsysFlag=3\ncommitOffset=0\nsuspendTimeoutMillis=0\nsubscription=tagA\nsubVersion=1\nexpressionType=TAG\nmaxMsgBytes=1048576\nbname=broker-a"
	q := "topic=" + fuzzTopic + "\nqueueId=0"
	cg := "consumerGroup=" + fuzzGroup
	popExtra := "0 " + now + " 60000 0 0 broker-a 0 0"
	groupJSON := `{"groupName":"FG2","consumeEnable":true,"consumeFromMinEnable":true,"consumeBroadcastEnable":true,"consumeMessageOrderly":false,` +
		`"retryQueueNums":1,"retryMaxTimes":16,"groupRetryPolicy":{"type":"CUSTOMIZED","customizedRetryPolicy":{"next":[1000,5000]}},` +
		`"brokerId":0,"whichBrokerWhenConsumeSlowly":1,"notifyConsumerIdsChangedEnable":true,"groupSysFlag":0,"consumeTimeoutMinute":15,` +
		`"subscriptionDataSet":[{"topic":"` + fuzzTopic + `","expression":"tagA","tagType":"TAG"}],"attributes":{}}`
	topicJSON := `{"topicName":"FT3","readQueueNums":4,"writeQueueNums":4,"perm":6,"topicFilterType":"SINGLE_TAG","topicSysFlag":0,"order":false,"attributes":{"+message.type":"NORMAL"}}`
	mq := `{"brokerName":"broker-a","queueId":0,"topic":"` + fuzzTopic + `"}`
	staticMapping := `{"topic":"FST","scope":"__global__","totalQueues":1,"bname":"broker-a","epoch":` + now + `,"dirty":false,"currIdMap":{"0":0},` +
		`"hostedQueues":{"0":[{"bname":"broker-a","gen":0,"logicOffset":0,"queueId":0,"startOffset":0,"endOffset":-1,"timeOfStart":-1,"timeOfEnd":-1}]}}`
	recall := buildRecallHandle(fuzzTopic, "broker-a", now, fx.uniqKey)
	user := `{"username":"fu","password":"fpw","userType":"Normal","userStatus":"enable"}`
	aclBody := `{"subject":"User:fu","policies":[{"policyType":"Custom","entries":[{"resource":"Topic:` + fuzzTopic +
		`","actions":["Pub","Sub"],"sourceIps":["127.0.0.1/32"],"decision":"Allow"}]}]}`
	return []handlerSeed{
		{codec.ReqSendMessage, send, "hello"},
		{codec.ReqSendMessageV2, sendV2, "hello v2"},
		{codec.ReqSendBatchMessage, strings.Replace(sendV2, "m=false", "m=true", 1), string(batch)},
		{codec.ReqSendReplyMessage, strings.Replace(send, "properties=", "properties=CLUSTER\x01DefaultCluster\x02REPLY_TO_CLIENT\x01"+fuzzCID+"\x02CORRELATION_ID\x01cid\x02MSG_TYPE\x01reply\x02", 1), "reply"},
		{codec.ReqSendReplyMessageV2, strings.Replace(sendV2, "i=", "i=CLUSTER\x01DefaultCluster\x02REPLY_TO_CLIENT\x01"+fuzzCID+"\x02CORRELATION_ID\x01cid\x02MSG_TYPE\x01reply\x02", 1), "reply"},
		{codec.ReqPullMessage, pull, ""},
		{codec.ReqLitePullMessage, strings.Replace(pull, "sysFlag=3", "sysFlag=2", 1), ""},
		{codec.ReqQueryMessage, "topic=" + fuzzTopic + "\nkey=k1\nmaxNum=32\nbeginTimestamp=0\nendTimestamp=9223372036854775807", ""},
		{codec.ReqQueryMessage, "topic=" + fuzzTopic + "\nkey=" + fx.uniqKey + "\nmaxNum=32\nbeginTimestamp=0\nendTimestamp=9223372036854775807\n_UNIQUE_KEY_QUERY=true", ""},
		{codec.ReqQueryConsumerOffset, cg + "\n" + q + "\nsetZeroIfNotFound=true", ""},
		{codec.ReqUpdateConsumerOffset, cg + "\n" + q + "\ncommitOffset=1", ""},
		{codec.ReqUpdateAndCreateTopic, "topic=FT2\ndefaultTopic=TBW102\nreadQueueNums=4\nwriteQueueNums=4\nperm=6\ntopicFilterType=SINGLE_TAG\ntopicSysFlag=0\norder=false\nattributes=+message.type=NORMAL", ""},
		{codec.ReqUpdateAndCreateTopicList, "", `{"topicConfigList":[` + topicJSON + `]}`},
		{codec.ReqGetAllTopicConfig, "", ""},
		{codec.ReqUpdateBrokerConfig, "", "fileReservedTime=72\nmaxMessageSize=4194304\n"},
		{codec.ReqGetBrokerConfig, "", ""},
		{codec.ReqGetBrokerRuntimeInfo, "", ""},
		{codec.ReqSearchOffsetByTimestamp, q + "\ntimestamp=" + now + "\nboundaryType=LOWER", ""},
		{codec.ReqGetMaxOffset, q + "\ncommitted=true", ""},
		{codec.ReqGetMinOffset, q, ""},
		{codec.ReqGetEarliestMsgStoretime, q, ""},
		{codec.ReqViewMessageById, "offset=0", ""},
		{codec.ReqHeartBeat, "", `{"clientID":"` + fuzzCID + `","consumerDataSet":[{"consumeFromWhere":"CONSUME_FROM_LAST_OFFSET","consumeType":"CONSUME_ACTIVELY",` +
			`"groupName":"FG3","messageModel":"BROADCASTING","subscriptionDataSet":[{"classFilterMode":false,"codeSet":[],"expressionType":"SQL92",` +
			`"subString":"a > 1 AND b = 'x'","subVersion":1,"tagsSet":[],"topic":"` + fuzzTopic + `"}],"unitMode":false}],` +
			`"producerDataSet":[{"groupName":"` + fuzzProd + `"}],"heartbeatFingerprint":0,"withoutSub":false}`},
		{codec.ReqUnregisterClient, "clientID=" + fuzzCID + "2\nproducerGroup=" + fuzzProd + "\nconsumerGroup=" + fuzzGroup, ""},
		{codec.ReqConsumerSendMsgBack, "offset=0\ngroup=" + fuzzGroup + "\ndelayLevel=0\noriginMsgId=" + fx.uniqKey + "\noriginTopic=" + fuzzTopic + "\nunitMode=false\nmaxReconsumeTimes=16\nbname=broker-a", ""},
		{codec.ReqEndTransaction, "producerGroup=" + fuzzProd + "\ntranStateTableOffset=0\ncommitLogOffset=0\ncommitOrRollback=8\nfromTransactionCheck=false\nmsgId=" + fx.halfMsgID + "\ntransactionId=C0A8000100002A9F00000000000000AA", ""},
		{codec.ReqEndTransaction, "producerGroup=" + fuzzProd + "\ntranStateTableOffset=0\ncommitLogOffset=0\ncommitOrRollback=12\nfromTransactionCheck=true\nmsgId=" + fx.halfMsgID, ""},
		{codec.ReqGetConsumerListByGroup, cg, ""},
		{codec.ReqLockBatchMq, "", `{"clientId":"` + fuzzCID + `","consumerGroup":"` + fuzzGroup + `","mqSet":[` + mq + `],"onlyThisBroker":false}`},
		{codec.ReqUnlockBatchMq, "", `{"clientId":"` + fuzzCID + `","consumerGroup":"` + fuzzGroup + `","mqSet":[` + mq + `],"onlyThisBroker":true}`},
		{codec.ReqGetAllConsumerOffset, "", ""},
		{codec.ReqGetAllDelayOffset, "", ""},
		{codec.ReqCheckClientConfig, "", `{"clientId":"` + fuzzCID + `","group":"` + fuzzGroup + `","subscriptionData":{"classFilterMode":false,"codeSet":[],` +
			`"expressionType":"SQL92","subString":"a BETWEEN 1 AND 3 OR c IS NULL","subVersion":1,"tagsSet":[],"topic":"` + fuzzTopic + `"}}`},
		{acl.ReqUpdateAndCreateAclConfig, "accessKey=fuzzAK\nsecretKey=fuzzSK123\nwhiteRemoteAddress=192.168.0.*\nadmin=false\ndefaultTopicPerm=DENY\ndefaultGroupPerm=SUB\ntopicPerms=" + fuzzTopic + "=PUB|SUB\ngroupPerms=" + fuzzGroup + "=SUB", ""},
		{acl.ReqDeleteAclConfig, "accessKey=fuzzAK", ""},
		{acl.ReqGetBrokerClusterAclInfo, "", ""},
		{acl.ReqUpdateGlobalWhiteAddrs, "globalWhiteAddrs=10.10.103.*,192.168.0.*", ""},
		{acl.ReqGetBrokerClusterAclConfig, "", ""},
		{codec.ReqGetTimerCheckPoint, "", ""},
		{codec.ReqGetTimerMetrics, "", ""},
		{codec.ReqUpdateAndCreateSubscriptiongroup, "", groupJSON},
		{codec.ReqGetAllSubscriptiongroupConfig, "", ""},
		{codec.ReqGetTopicStatsInfo, "topic=" + fuzzTopic, ""},
		{codec.ReqGetConsumerConnectionList, cg, ""},
		{codec.ReqGetProducerConnectionList, "producerGroup=" + fuzzProd, ""},
		{codec.ReqDeleteSubscriptiongroup, "groupName=FG2\ncleanOffset=true", ""},
		{codec.ReqGetConsumeStats, cg + "\ntopic=" + fuzzTopic, ""},
		{codec.ReqDeleteTopicInBroker, "topic=FT2", ""},
		{codec.ReqInvokeBrokerToResetOffset, "topic=" + fuzzTopic + "\ngroup=" + fuzzGroup + "\ntimestamp=0\nisForce=true\nqueueId=-1\noffset=-1", ""},
		{codec.ReqInvokeBrokerToResetOffset, "topic=" + fuzzTopic + "\ngroup=" + fuzzGroup + "\ntimestamp=0\nisForce=true\nqueueId=0\noffset=1", ""},
		{codec.ReqInvokeBrokerToGetConsumerStatus, "topic=" + fuzzTopic + "\ngroup=" + fuzzGroup + "\nclientAddr=", ""},
		{codec.ReqUpdateAndCreateSubscriptiongroupList, "", `{"groupConfigList":[` + groupJSON + `]}`},
		{codec.ReqQueryTopicConsumeByWho, "topic=" + fuzzTopic, ""},
		{codec.ReqQueryConsumeTimeSpan, "topic=" + fuzzTopic + "\ngroup=" + fuzzGroup, ""},
		{codec.ReqGetSystemTopicListFromBroker, "", ""},
		{codec.ReqCleanExpiredConsumequeue, "", ""},
		{codec.ReqGetConsumerRunningInfo, cg + "\nclientId=" + fuzzCID + "\njstackEnable=false", ""},
		{codec.ReqConsumeMessageDirectly, cg + "\nclientId=" + fuzzCID + "\nmsgId=" + fx.msgID + "\nbrokerName=broker-a", ""},
		{codec.ReqCloneGroupOffset, "srcGroup=" + fuzzGroup + "\ndestGroup=FG4\ntopic=" + fuzzTopic + "\noffline=false", ""},
		{codec.ReqViewBrokerStatsData, "statsName=TOPIC_PUT_NUMS\nstatsKey=" + fuzzTopic, ""},
		{codec.ReqViewBrokerStatsData, "statsName=GROUP_GET_NUMS\nstatsKey=" + fuzzTopic + "@" + fuzzGroup, ""},
		{codec.ReqCleanUnusedTopic, "", ""},
		{codec.ReqGetBrokerConsumeStats, "isOrder=false", ""},
		{codec.ReqQueryConsumeQueue, q + "\nindex=0\ncount=10\nconsumerGroup=" + fuzzGroup, ""},
		{codec.ReqGetAllProducerInfo, "", ""},
		{codec.ReqDeleteExpiredCommitlog, "", ""},
		{codec.ReqQueryTopicsByConsumer, "group=" + fuzzGroup, ""},
		{codec.ReqQuerySubscriptionByConsumer, "group=" + fuzzGroup + "\ntopic=" + fuzzTopic, ""},
		{codec.ReqGetTopicConfig, "topic=" + fuzzTopic, ""},
		{codec.ReqGetSubscriptiongroupConfig, "group=" + fuzzGroup, ""},
		{codec.ReqUpdateAndGetGroupForbidden, "group=" + fuzzGroup + "\ntopic=" + fuzzTopic + "\nreadable=false", ""},
		{codec.ReqRecallMessage, "producerGroup=" + fuzzProd + "\ntopic=" + fuzzTopic + "\nrecallHandle=" + recall, ""},
		{codec.ReqQueryAssignment, "", `{"topic":"` + fuzzTopic + `","consumerGroup":"` + fuzzGroup + `","clientId":"` + fuzzCID + `","strategyName":"AVG","messageModel":"CLUSTERING"}`},
		{codec.ReqSetMessageRequestMode, "", `{"topic":"` + fuzzTopic + `","consumerGroup":"` + fuzzGroup + `","mode":"POP","popShareQueueNum":1}`},
		{codec.ReqGetAllMessageRequestMode, "", ""},
		{codec.ReqUpdateAndCreateStaticTopic, "topic=FST\nreadQueueNums=1\nwriteQueueNums=1\nperm=6\ntopicFilterType=SINGLE_TAG\ntopicSysFlag=0\norder=false\nforce=false", staticMapping},
		{codec.ReqNotifyMinBrokerIdChange, "minBrokerId=1\nbrokerName=broker-a\nminBrokerAddr=127.0.0.1:10921\nofflineBrokerAddr=127.0.0.1:10911\nhaBrokerAddr=127.0.0.1:10912", ""},
		{codec.ReqExchangeBrokerHaInfo, "masterHaAddress=127.0.0.1:10912\nmasterFlushOffset=0\nmasterAddress=127.0.0.1:10911", ""},
		{codec.ReqResetMasterFlushOffset, "masterFlushOffset=1024", ""},
		{codec.ReqPopRollback, "", ""},
		{codec.ReqQueryCorrectionOffset, "topic=" + fuzzTopic + "\ncompareGroup=" + fuzzGroup + "\nfilterGroups=FG2,FG3", ""},
		{codec.ReqResumeCheckHalfMessage, "topic=RMQ_SYS_TRANS_HALF_TOPIC\nmsgId=" + fx.halfMsgID, ""},
		{codec.ReqCheckRocksdbCqWriteProgress, "topic=" + fuzzTopic + "\ncheckStoreTime=" + now, ""},
		{codec.ReqExportRocksdbConfigToJson, "configType=topics;subscriptionGroups;consumerOffsets;", ""},
		{codec.ReqGetBrokerHaStatus, "", ""},
		{codec.ReqGetBrokerEpochCache, "", ""},
		{codec.ReqNotifyBrokerRoleChanged, "masterAddress=127.0.0.1:10911\nmasterEpoch=1\nsyncStateSetEpoch=1\nmasterBrokerId=0", `{"syncStateSet":[0]}`},
		{codec.ReqUpdateColdDataFlowCtrConfig, "", fuzzGroup + "=1000\n"},
		{codec.ReqRemoveColdDataFlowCtrConfig, "", fuzzGroup},
		{codec.ReqGetColdDataFlowCtrInfo, "", ""},
		{codec.ReqSetCommitlogReadMode, "READ_AHEAD_MODE=1", ""},
		{codec.ReqSetCommitlogReadMode, "READ_AHEAD_MODE=0", ""},
		{codec.ReqSwitchTimerEngine, "E_T=F", ""},
		{codec.ReqSwitchTimerEngine, "E_T=R", ""},
		{codec.ReqAuthCreateUser, "username=fu", user},
		{codec.ReqAuthUpdateUser, "username=fu", `{"username":"fu","password":"fpw2","userStatus":"disable"}`},
		{codec.ReqAuthGetUser, "username=fu", ""},
		{codec.ReqAuthListUser, "filter=f", ""},
		{codec.ReqAuthCreateAcl, "subject=User:fu", aclBody},
		{codec.ReqAuthUpdateAcl, "subject=User:fu", strings.Replace(aclBody, "Allow", "Deny", 1)},
		{codec.ReqAuthGetAcl, "subject=User:fu", ""},
		{codec.ReqAuthListAcl, "subjectFilter=User\nresourceFilter=Topic", ""},
		{codec.ReqAuthDeleteAcl, "subject=User:fu\npolicyType=Custom\nresource=Topic:" + fuzzTopic, ""},
		{codec.ReqAuthDeleteUser, "username=fu", ""},
		{codec.ReqPopMessage, cg + "\ntopic=" + fuzzTopic + "\nqueueId=-1\nmaxMsgNums=32\ninvisibleTime=60000\npollTime=0\nbornTime=" + now + "\ninitMode=0\nexpType=TAG\nexp=tagA\norder=false", ""},
		{codec.ReqPopMessage, cg + "\ntopic=" + fuzzTopic + "\nqueueId=0\nmaxMsgNums=1\ninvisibleTime=60000\npollTime=0\nbornTime=" + now + "\ninitMode=1\nexpType=TAG\nexp=*\norder=true\nattemptId=a1", ""},
		{codec.ReqAckMessage, cg + "\n" + q + "\nextraInfo=" + popExtra + "\noffset=0", ""},
		{codec.ReqPeekMessage, q + "\nmaxMsgNums=32\n" + cg, ""},
		{codec.ReqChangeMessageInvisibletime, cg + "\n" + q + "\nextraInfo=" + popExtra + "\noffset=0\ninvisibleTime=30000", ""},
		{codec.ReqNotification, cg + "\ntopic=" + fuzzTopic + "\nqueueId=-1\npollTime=0\nbornTime=" + now + "\norder=false", ""},
		{codec.ReqPollingInfo, cg + "\ntopic=" + fuzzTopic + "\nqueueId=-1", ""},
		{codec.ReqBatchAckMessage, "", `{"acks":[{"b":"AQ==","c":"` + fuzzGroup + `","it":60000,"pt":` + now + `,"q":0,"r":"0","rq":0,"so":0,"t":"` + fuzzTopic + `"}],"brokerName":"broker-a"}`},
		// Java 5.5's lite topics, as proxy 5.5 sends them.
		{codec.ReqLiteSubscriptionCtl, "", `{"subscriptionSet":[{"action":"PARTIAL_ADD","clientId":"c1","group":"` + fuzzGroup +
			`","liteTopicSet":["a","../b"],"offsetOption":{"type":"POLICY","value":1},"topic":"` + fuzzTopic + `","version":1}]}`},
		{codec.ReqGetBrokerLiteInfo, "", ""},
		{codec.ReqGetParentTopicInfo, "topic=" + fuzzTopic, ""},
		{codec.ReqGetLiteTopicInfo, "parentTopic=" + fuzzTopic + "\nliteTopic=a", ""},
		{codec.ReqGetLiteClientInfo, "parentTopic=" + fuzzTopic + "\ngroup=" + fuzzGroup + "\nclientId=c1\nmaxCount=2", ""},
		{codec.ReqGetLiteGroupInfo, "group=" + fuzzGroup + "\ntopK=3", ""},
		{codec.ReqTriggerLiteDispatch, "group=" + fuzzGroup + "\nclientId=c1", ""},
		{codec.ReqPopLiteMessage, "clientId=c1\n" + cg + "\ntopic=" + fuzzTopic + "\nmaxMsgNum=32\ninvisibleTime=60000\npollTime=0\nbornTime=" + now, ""},
		{codec.ReqAckMessage, cg + "\n" + q + "\nextraInfo=0 " + now + " 60000 999 0 broker-a 0 0\noffset=0\nliteTopic=a", ""},
		{codec.ReqChangeMessageInvisibletime, cg + "\n" + q + "\nextraInfo=0 " + now + " 60000 999 0 broker-a 0 0\noffset=0\ninvisibleTime=0\nliteTopic=a\nsuspend=true", ""},
	}
}
