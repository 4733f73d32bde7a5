// Command loadgen drives a RocketMQ broker (rmqd or Apache) over the remoting protocol with rmqd's own codec:
// pipelined SEND_MESSAGE_V2 producers (closed loop or open loop at a fixed offered rate), PULL_MESSAGE
// catch-up consumers and an end-to-end latency run. Results are one JSON object on stdout.
//
//	loadgen send  -n 127.0.0.1:9876 -t T -size 1024 -inflight 64 -d 10s [-rate 5000] [-create 8]
//	loadgen pull  -n 127.0.0.1:9876 -t T -expect 100000
//	loadgen e2e   -n 127.0.0.1:9876 -t T -rate 2000 -d 10s
//	loadgen pop   -n 127.0.0.1:9876 -t T -expect 100000 [-batch-ack]   (POP_MESSAGE + ACK_MESSAGE / BATCH_ACK_MESSAGE)
//	loadgen count -n 127.0.0.1:9876 -t T            (GET_MAX_OFFSET summed over queues)
//	loadgen sink  -l 127.0.0.1:9880 [-queues 8]     (no store: answers sends SEND_OK; the wire ceiling, lg.Sink)
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"runtime/pprof"
	"time"

	"rmqd/integration/loadgen/lg"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: loadgen send|pull|e2e|pop|count|sink [flags]")
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, os.Args[1], os.Args[2:]); err != nil {
		fmt.Fprintln(os.Stderr, "loadgen:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, sub string, args []string) error {
	fs := flag.NewFlagSet(sub, flag.ExitOnError)
	ns := fs.String("n", "127.0.0.1:9876", "name server address")
	topic := fs.String("t", "LoadgenTopic", "topic")
	create := fs.Int("create", 0, "create the topic with this many queues on the broker first (needs -b)")
	broker := fs.String("b", "", "broker address for -create")
	size := fs.Int("size", 1024, "body bytes")
	inflight := fs.Int("inflight", 16, "requests in flight (producer threads)")
	conns := fs.Int("conns", 1, "connections")
	dur := fs.Duration("d", 10*time.Second, "measured duration")
	warm := fs.Duration("warmup", 2*time.Second, "warm-up before measuring")
	count := fs.Int64("count", 0, "stop after this many sends")
	rate := fs.Float64("rate", 0, "open loop offered rate, msg/s (0: closed loop)")
	expect := fs.Int64("expect", 0, "pull: messages to consume")
	binary := fs.Bool("binary", false, "ROCKETMQ binary headers")
	batchAck := fs.Bool("batch-ack", false, "pop: one BATCH_ACK_MESSAGE per pop instead of one ACK_MESSAGE per message")
	full := fs.Bool("full", false, "print every histogram bucket")
	timeout := fs.Duration("timeout", 5*time.Minute, "pull/e2e: bound")
	cpuprof := fs.String("cpuprofile", "", "write a CPU profile of the load generator here")
	listen := fs.String("l", "127.0.0.1:9880", "sink: listen address (name server and broker in one)")
	queues := fs.Int("queues", 8, "sink: queues in the route it answers")
	_ = fs.Parse(args)
	if sub == "sink" {
		s, err := lg.StartSink(ctx, *listen, *queues)
		if err != nil {
			return err
		}
		fmt.Println(s.Addr())
		<-ctx.Done()
		return s.Close()
	}
	if *cpuprof != "" {
		f, err := os.Create(*cpuprof)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}

	if *create > 0 {
		if *broker == "" {
			return fmt.Errorf("-create needs -b")
		}
		if err := lg.CreateTopic(ctx, *broker, *topic, *create); err != nil {
			return err
		}
	}
	rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	route, err := lg.WaitRoute(rctx, *ns, *topic)
	cancel()
	if err != nil {
		return err
	}
	var out any
	switch sub {
	case "send":
		out, err = lg.Send(ctx, lg.SendConfig{Route: route, Topic: *topic, Size: *size, InFlight: *inflight, Conns: *conns,
			Duration: *dur, Warmup: *warm, Count: *count, Rate: *rate, Binary: *binary, Full: *full})
	case "pull":
		out, err = lg.Pull(ctx, lg.PullConfig{Route: route, Topic: *topic, Expect: *expect, Timeout: *timeout, Binary: *binary, Full: *full})
	case "e2e":
		out, err = lg.EndToEnd(ctx, lg.E2EConfig{Route: route, Topic: *topic, Size: *size, Rate: *rate, Duration: *dur,
			InFlight: *inflight, Timeout: *timeout, Full: *full})
	case "pop":
		out, err = lg.Pop(ctx, lg.PopConfig{Route: route, Topic: *topic, Expect: *expect, BatchAck: *batchAck, Timeout: *timeout, Full: *full})
	case "count":
		var offs []int64
		var sum int64
		offs, sum, err = lg.MaxOffsets(ctx, route.BrokerAddr, *topic, route.Queues)
		out = map[string]any{"perQueue": offs, "sum": sum}
	default:
		return fmt.Errorf("unknown subcommand %q", sub)
	}
	if out != nil {
		b, _ := json.Marshal(out)
		fmt.Println(string(b))
	}
	return err
}
