package lg

import (
	"encoding/binary"
	"encoding/hex"
	"strings"
	"testing"

	"rmqd/codec"
	"rmqd/compat"
)

func TestCommitLogOffsetOf(t *testing.T) {
	var raw [16]byte
	copy(raw[:4], []byte{127, 0, 0, 1})
	binary.BigEndian.PutUint32(raw[4:8], 10911)
	binary.BigEndian.PutUint64(raw[8:], 0x1234_5678_9abc)
	id := strings.ToUpper(hex.EncodeToString(raw[:]))
	if _, off, err := compat.DecodeOffsetMsgID(id); err != nil || off != 0x1234_5678_9abc {
		t.Fatalf("offset of %s = %#x, %v", id, off, err)
	}
	for _, bad := range []string{"", "00", strings.Repeat("Z", 32)} {
		if _, _, err := compat.DecodeOffsetMsgID(bad); err == nil {
			t.Errorf("offset of %q: no error", bad)
		}
	}
}

// TestTxnEndFrame decodes the END_TRANSACTION the load generator writes after a half message's SEND_OK.
func TestTxnEndFrame(t *testing.T) {
	resp := codec.NewResponse(codec.NewRequest(codec.ReqSendMessageV2), codec.RespSuccess, "")
	resp.Ext.Set("msgId", "7F00000100002A9F0000000000001000")
	resp.Ext.Set("queueOffset", "42")
	resp.Ext.Set("transactionId", "TX1")
	var end txnEnd
	end.hdr = codec.EndTransactionRequestHeader{ProducerGroup: "pg", CommitOrRollback: tranCommitType}
	end.topic, end.brokerName = "T", "b"
	end.fromResponse(resp)
	if end.err != nil {
		t.Fatal(end.err)
	}
	copy(end.msgID[:], "0123456789ABCDEF0123456789ABCDEF")
	req := codec.NewRequest(codec.ReqEndTransaction)
	req.Flag |= codec.FlagOneway
	req.CustomHeader = &end
	frame := req.Encode(nil)
	var got codec.RemotingCommand
	if err := codec.DecodeCommand(frame[4:], &got); err != nil {
		t.Fatal(err)
	}
	if !got.IsOneway() || got.Code != codec.ReqEndTransaction {
		t.Fatalf("code %d oneway %v", got.Code, got.IsOneway())
	}
	for k, want := range map[string]string{"producerGroup": "pg", "tranStateTableOffset": "42", "commitLogOffset": "4096",
		"commitOrRollback": "8", "msgId": "0123456789ABCDEF0123456789ABCDEF", "transactionId": "TX1", "topic": "T", "brokerName": "b"} {
		if v, _ := got.Ext.Get(k); v != want {
			t.Errorf("%s = %q, want %q", k, v, want)
		}
	}
}

func TestAppendKeyUpperHex(t *testing.T) {
	raw := [16]byte{0xab, 0xcd}
	got := string(appendKey(nil, &raw))
	if want := "UNIQ_KEY\x01ABCD" + strings.Repeat("0", 28) + "\x02"; got != want {
		t.Fatalf("%q, want %q", got, want)
	}
}
