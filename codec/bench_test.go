package codec

import "testing"

// Hot-path benchmarks: run with -benchmem; every one should show 0 allocs/op.

func benchDecode(b *testing.B, st SerializeType) {
	frame := readGolden(b, "send_v2_request", st)[4:]
	var cmd RemotingCommand
	b.SetBytes(int64(len(frame)))
	b.ReportAllocs()
	for b.Loop() {
		if err := DecodeCommand(frame, &cmd); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDecodeSendRequestJSON decodes a Java SEND_MESSAGE_V2 frame (JSON
// header, properties with \u0001/\u0002 escapes) into a reused command.
func BenchmarkDecodeSendRequestJSON(b *testing.B) { benchDecode(b, SerializeJSON) }

// BenchmarkDecodeSendRequestBinary is the same request with the ROCKETMQ header.
func BenchmarkDecodeSendRequestBinary(b *testing.B) { benchDecode(b, SerializeRocketMQ) }

// BenchmarkDecodeSendHeader decodes the typed send header from decoded ext fields.
func BenchmarkDecodeSendHeader(b *testing.B) {
	for _, name := range []string{"send_v2_request", "send_v1_request"} {
		b.Run(name, func(b *testing.B) {
			var cmd RemotingCommand
			if err := DecodeCommand(readGolden(b, name, SerializeJSON)[4:], &cmd); err != nil {
				b.Fatal(err)
			}
			var h SendMessageRequestHeader
			b.ReportAllocs()
			for b.Loop() {
				if err := h.DecodeSend(cmd.Code, cmd.Ext); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkDecodePullHeader decodes the pull request header the server reads
// on every pull, from a Java client's frame.
func BenchmarkDecodePullHeader(b *testing.B) {
	var cmd RemotingCommand
	if err := DecodeCommand(readGolden(b, "pull_request", SerializeJSON)[4:], &cmd); err != nil {
		b.Fatal(err)
	}
	var h PullMessageRequestHeader
	b.ReportAllocs()
	for b.Loop() {
		if err := h.Decode(cmd.Ext); err != nil {
			b.Fatal(err)
		}
	}
}

var serializeNames = [...]string{SerializeJSON: "json", SerializeRocketMQ: "rocketmq"}

// BenchmarkEncodePullResponseHeader writes a pull response header (the body is
// sent separately from mapped memory) into a reused buffer.
func BenchmarkEncodePullResponseHeader(b *testing.B) {
	for _, st := range []SerializeType{SerializeJSON, SerializeRocketMQ} {
		b.Run(serializeNames[st], func(b *testing.B) {
			req := &RemotingCommand{Opaque: 12345, SerializeType: st}
			h := PullMessageResponseHeader{SuggestWhichBrokerID: 0, NextBeginOffset: 1234567890124,
				MinOffset: 0, MaxOffset: 1234567890200}
			resp := NewResponse(req, RespSuccess, "FOUND")
			resp.CustomHeader = &h
			buf := make([]byte, 0, 512)
			b.ReportAllocs()
			for b.Loop() {
				h.NextBeginOffset++
				buf = resp.EncodeHeader(buf[:0], 65536)
			}
		})
	}
}

// BenchmarkEncodeSendResponse writes a whole send response frame.
func BenchmarkEncodeSendResponse(b *testing.B) {
	for _, st := range []SerializeType{SerializeJSON, SerializeRocketMQ} {
		b.Run(serializeNames[st], func(b *testing.B) {
			req := &RemotingCommand{Opaque: 12345, SerializeType: st}
			h := goldenSendResponse()
			resp := NewResponse(req, RespSuccess, "")
			resp.CustomHeader = &h
			buf := make([]byte, 0, 512)
			b.ReportAllocs()
			for b.Loop() {
				h.QueueOffset++
				buf = resp.Encode(buf[:0])
			}
		})
	}
}
