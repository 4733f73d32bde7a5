package codec

import (
	"errors"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"
)

// adminHeaders are every header DecodeHeader serves, fresh each call.
func adminHeaders() []any {
	return []any{&PopMessageRequestHeader{}, &PopLiteMessageRequestHeader{}, &LiteInfoRequestHeader{MaxCount: 1000}, &NotificationRequestHeader{}, &PeekMessageRequestHeader{},
		&AckMessageRequestHeader{}, &CreateTopicRequestHeader{}, &ConsumerSendMsgBackRequestHeader{},
		&ResetOffsetRequestHeader{QueueID: -1, Offset: -1}, &QueryConsumeQueueRequestHeader{},
		&QueryMessageRequestHeader{}, &EndTransactionRequestHeader{}, &UpdateConsumerOffsetRequestHeader{},
		&QueryConsumerOffsetRequestHeader{}, &RecallMessageRequestHeader{}, &ViewMessageRequestHeader{},
		&QueueRequestHeader{}, &SearchOffsetRequestHeader{}, &NotifyBrokerRoleChangedRequestHeader{MasterBrokerID: -1},
		&ChangeInvisibleTimeRequestHeader{}, &PollingInfoRequestHeader{}, &QueryTopicsByConsumerRequestHeader{},
		&QueryConsumeTimeSpanRequestHeader{}, &CloneGroupOffsetRequestHeader{}, &GetConsumeStatsInBrokerHeader{},
		&GetConsumerStatusRequestHeader{}, &TopicOnlyRequestHeader{}, &DeleteSubscriptionGroupRequestHeader{},
		&GetSubscriptionGroupConfigRequestHeader{}, &GetConsumeStatsRequestHeader{}, &ConsumerGroupRequestHeader{},
		&GetProducerConnectionListRequestHeader{}, &GetConsumerRunningInfoRequestHeader{},
		&ConsumeMessageDirectlyRequestHeader{}, &QuerySubscriptionByConsumerRequestHeader{},
		&UnregisterClientRequestHeader{}, &ViewBrokerStatsDataRequestHeader{}, &GetBrokerMemberGroupRequestHeader{},
		&UpdateGroupForbiddenRequestHeader{}, &ResetMasterFlushOffsetRequestHeader{}, &QueryCorrectionOffsetRequestHeader{},
		&ResumeCheckHalfMessageRequestHeader{}, &CheckRocksdbCqWriteProgressRequestHeader{}, &ExportRocksDBConfigToJSONRequestHeader{}}
}

// TestAdminHeadersListsEveryTaggedStruct keeps adminHeaders complete, so the
// cross-check (and FuzzDecodeCommand through it) covers every header the
// broker and name server decode with DecodeHeader.
func TestAdminHeadersListsEveryTaggedStruct(t *testing.T) {
	listed := map[string]bool{}
	for _, h := range adminHeaders() {
		listed[reflect.TypeOf(h).Elem().Name()] = true
	}
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			ts, ok := n.(*ast.TypeSpec)
			if !ok {
				return true
			}
			st, ok := ts.Type.(*ast.StructType)
			if !ok {
				return true
			}
			for _, fld := range st.Fields.List {
				if fld.Tag != nil && strings.Contains(fld.Tag.Value, `ext:"`) && !listed[ts.Name.Name] {
					t.Errorf("%s (%s) has ext tags but is not in adminHeaders", ts.Name.Name, name)
					break
				}
			}
			return true
		})
	}
}

// crossCheckHeader decodes ext into a fresh copy of each admin header and
// checks every field and the error against ExtReader, the field-by-field
// reader with the same rules: the two must never disagree.
func crossCheckHeader(t *testing.T, ext ExtFields) {
	t.Helper()
	for _, h := range adminHeaders() {
		v := reflect.ValueOf(h).Elem()
		def := v.Interface() // the defaults set before decoding
		err := DecodeHeader(ext, h)
		r := ExtReader{Ext: ext}
		for i := range v.NumField() {
			key, opt, _ := strings.Cut(v.Type().Field(i).Tag.Get("ext"), ",")
			req := opt == "required"
			f, d := v.Field(i), reflect.ValueOf(def).Field(i)
			var want any
			switch f.Kind() {
			case reflect.String:
				if req {
					want = r.ReqStr(key)
				} else {
					want = r.Str(key)
				}
			case reflect.Int32:
				if req {
					want = r.ReqInt32(key)
				} else {
					want = r.OptInt32(key, int32(d.Int()))
				}
			case reflect.Int64:
				if req {
					want = r.ReqInt64(key)
				} else {
					want = r.OptInt64(key, d.Int())
				}
			case reflect.Bool:
				if _, ok := ext.Get(key); req && !ok {
					r.keep(MissingField(key)) // ExtReader has no required bool
				}
				want = r.OptBool(key)
			case reflect.Pointer:
				var got any
				switch p := f.Interface().(type) {
				case *int32:
					if n, ok, err := ext.GetInt32(key); ok && err == nil {
						want = n
					}
					r.OptInt32(key, 0) // for the error it keeps
					if p != nil {
						got = *p
					}
				case *bool:
					if s, ok := ext.Get(key); ok {
						want = parseJavaBool(s)
					}
					if p != nil {
						got = *p
					}
				default:
					t.Fatalf("%T.%s: pointer kind without a check", h, key)
				}
				if !reflect.DeepEqual(got, want) {
					t.Fatalf("%T.%s = %v, ExtReader %v", h, key, got, want)
				}
				continue
			default:
				t.Fatalf("%T.%s: kind %s", h, key, f.Kind())
			}
			if got := f.Interface(); !reflect.DeepEqual(got, want) {
				t.Fatalf("%T.%s = %#v, ExtReader %#v (ext %q)", h, key, got, want, ext)
			}
		}
		if (err == nil) != (r.Err() == nil) || err != nil && err.Error() != r.Err().Error() {
			t.Fatalf("%T: error %v, ExtReader %v (ext %q)", h, err, r.Err(), ext)
		}
	}
}

func TestDecodeHeaderJavaRules(t *testing.T) {
	ext := ExtFields{{"topic", "T"}, {"group", "G"}, {"offset", "+42"}, {"delayLevel", "-1"},
		{"unitMode", "TRUE"}, {"maxReconsumeTimes", "16"}}
	var sb ConsumerSendMsgBackRequestHeader
	if err := DecodeHeader(ext, &sb); err != nil {
		t.Fatal(err)
	}
	if sb.Offset != 42 || sb.Group != "G" || sb.DelayLevel != -1 || !sb.UnitMode || sb.MaxReconsumeTimes == nil || *sb.MaxReconsumeTimes != 16 {
		t.Fatalf("%+v", sb) // Long.parseLong takes a '+'; parseBoolean ignores case
	}
	sb = ConsumerSendMsgBackRequestHeader{}
	if err := DecodeHeader(ext[:4], &sb); err != nil || sb.UnitMode || sb.MaxReconsumeTimes != nil {
		t.Fatalf("%v %+v", err, sb) // absent Integer stays null
	}

	var mf *MissingFieldError
	var fe *FieldError
	if err := DecodeHeader(ExtFields{{"group", "G"}}, &sb); !errors.As(err, &mf) || mf.Field != "offset" {
		t.Fatal(err)
	}
	if err := DecodeHeader(ExtFields{{"offset", "1"}, {"group", "G"}, {"delayLevel", "2147483648"}}, &sb); !errors.As(err, &fe) || fe.Field != "delayLevel" {
		t.Fatal(err) // past Integer.MAX_VALUE
	}
	r := ResetOffsetRequestHeader{QueueID: -1, Offset: -1}
	if err := DecodeHeader(ExtFields{{"topic", "T"}, {"group", "G"}, {"timestamp", "5"}, {"queueId", " 1"}}, &r); !errors.As(err, &fe) || fe.Field != "queueId" || r.QueueID != -1 || r.Offset != -1 {
		t.Fatal(err, r) // a malformed optional field is reported and keeps the default
	}
	if err := DecodeHeader(ExtFields{}, sb); err == nil {
		t.Fatal("a struct value, not a pointer, must be refused")
	}
	crossCheckHeader(t, ext)
	crossCheckHeader(t, ExtFields{{"queueId", "x"}, {"consumerGroup", ""}, {"setZeroIfNotFound", "false"}, {"maxReconsumeTimes", "q"}})
}

// The golden POP frame (Java's RemotingCommand with only consumerGroup set)
// decodes through the server's POP header: the group read, topic missing first.
func TestDecodeHeaderGoldenPop(t *testing.T) {
	for _, st := range []SerializeType{SerializeJSON, SerializeRocketMQ} {
		c := decodeFrame(t, readGolden(t, "pop_code", st))
		var h PopMessageRequestHeader
		var mf *MissingFieldError
		if err := DecodeHeader(c.Ext, &h); !errors.As(err, &mf) || mf.Field != "topic" || h.ConsumerGroup != "CG" {
			t.Fatalf("%v %+v", err, h)
		}
		crossCheckHeader(t, c.Ext)
	}
}

func TestDecodeHeaderDoesNotAllocate(t *testing.T) {
	ext := ExtFields{{"consumerGroup", "g"}, {"topic", "t"}, {"queueId", "1"}, {"maxMsgNums", "32"},
		{"invisibleTime", "60000"}, {"pollTime", "15000"}, {"bornTime", "1"}, {"initMode", "0"}, {"order", "false"}}
	var h PopMessageRequestHeader
	if n := testing.AllocsPerRun(100, func() { _ = DecodeHeader(ext, &h) }); n != 0 {
		t.Fatalf("%v allocs per POP header", n)
	}
}

// CopyOwned keeps no byte of the source frame and copies no string the
// recycled header already owns.
func TestPullHeaderCopyOwned(t *testing.T) {
	frame := []byte("G1T1*TAG")
	at := func(i, j int) string { return unsafe.String(&frame[i], j-i) }
	src := PullMessageRequestHeader{ConsumerGroup: at(0, 2), Topic: at(2, 4), Subscription: at(4, 5),
		ExpressionType: at(5, 8), QueueID: 3, QueueOffset: 42}
	var h PullMessageRequestHeader
	h.CopyOwned(&src)
	group := unsafe.StringData(h.ConsumerGroup)
	src.QueueOffset = 43
	h.CopyOwned(&src)
	require.Same(t, group, unsafe.StringData(h.ConsumerGroup), "an equal string is kept, not copied again")
	src.Topic = "T2"
	h.CopyOwned(&src)
	for i := range frame {
		frame[i] = 'x'
	}
	require.Equal(t, PullMessageRequestHeader{ConsumerGroup: "G1", Topic: "T2", Subscription: "*",
		ExpressionType: "TAG", QueueID: 3, QueueOffset: 43}, h)
}
