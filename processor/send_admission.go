package processor

import (
	"fmt"
	"runtime"
	"strconv"
	"time"

	"rmqd/codec"
	"rmqd/compat"
	"rmqd/remoting"
	"rmqd/store"
)

// Overload, as the Java broker answers it:
//
//   - every request pool has Java's queue capacity and, with
//     brokerFastFailureEnable, a wait limit (waitTimeMillsIn*Queue): a request
//     that waited longer for a worker is answered SYSTEM_BUSY
//     "[TIMEOUT_CLEAN_QUEUE]..." (BrokerFastFailure.cleanExpiredRequest);
//   - while the store is busy (a put has held the commitlog lock longer than
//     osPageCacheBusyTimeOutMills) new sends get "[REJECTREQUEST]..."
//     (SendMessageProcessor.rejectRequest), queued ones "[PCBUSY_CLEAN_QUEUE]..."
//     and a put that got through the door "[PC_SYNCHRONIZED]...";
//   - a full disk answers SERVICE_NOT_AVAILABLE naming the disk.
//
// Sends that run on the event loop (sendInline) go to the send pool instead
// while another put holds the commitlog lock for a millisecond or more, so a
// slow disk stalls at most the loop whose put meets it, not every loop queued
// on the lock.

// storeStatus is what the broker reads of a store's load beyond MessageStore;
// *store.DefaultStore implements it (test stores need not).
type storeStatus interface {
	IsOSPageCacheBusy() bool
	LockTimeMills() int64
	DispatchBehindBytes() int64
	DiskUsage() store.DiskUsage
}

// brokerPools are the request pools GET_BROKER_RUNTIME_INFO reports on, made
// by Register; nil before.
type brokerPools struct {
	send, pull, litePull, query, heartbeat, endTx *remoting.WorkerPool
}

// Java's queue capacities (BrokerConfig *ThreadPoolQueueCapacity).
const (
	sendQueueCapacity      = 10000
	pullQueueCapacity      = 100000
	litePullQueueCapacity  = 100000
	queryQueueCapacity     = 20000
	heartbeatQueueCapacity = 50000
	endTxQueueCapacity     = 100000
)

// inlineLockLimit: a send is not run on the event loop while another put
// has held the commitlog lock this long.
const inlineLockLimit = 2 // ms, so that at least one whole millisecond passed

func (b *Broker) status() storeStatus {
	st, _ := b.store.(storeStatus)
	return st
}

// storeBusy is isOSPageCacheBusy, false for stores that do not say.
func (b *Broker) storeBusy() bool {
	st := b.status()
	return st != nil && st.IsOSPageCacheBusy()
}

// lockHeldLong reports a put holding the commitlog lock for inlineLockLimit.
func (b *Broker) lockHeldLong() bool {
	st := b.status()
	return st != nil && st.LockTimeMills() >= inlineLockLimit
}

// fastFailure is a pool policy waiting at most *wait ms (read live), with busy
// refusing when set.
func (b *Broker) fastFailure(wait func(*BrokerConfig) int64, busy func() bool) remoting.FastFailure {
	return remoting.FastFailure{
		MaxWait: func() time.Duration {
			c := b.conf()
			if !c.BrokerFastFailureEnable {
				return 0
			}
			return compat.Millis(int64(wait(c)))
		},
		Busy: busy,
	}
}

// newPools makes the request pools with Java's capacities and fast-failure
// limits.
func (b *Broker) newPools() *brokerPools {
	p := &brokerPools{
		// Java's sendMessageThreadPoolNums: sends of every producer share a
		// few workers, so that appends do not queue up on the commitlog
		// lock; the common case does not even reach them (sendInline).
		send:      remoting.NewWorkerPool("send", min(runtime.NumCPU(), 4), sendQueueCapacity),
		pull:      remoting.NewWorkerPool("pull", 0, pullQueueCapacity),
		litePull:  remoting.NewWorkerPool("litePull", 0, litePullQueueCapacity),
		query:     remoting.NewWorkerPool("query", 0, queryQueueCapacity),
		heartbeat: remoting.NewWorkerPool("heartbeat", 0, heartbeatQueueCapacity),
		endTx:     remoting.NewWorkerPool("endTransaction", 0, endTxQueueCapacity),
	}
	p.send.SetFastFailure(b.fastFailure(func(c *BrokerConfig) int64 { return c.WaitTimeMillsInSendQueue }, b.storeBusy))
	p.pull.SetFastFailure(b.fastFailure(func(c *BrokerConfig) int64 { return c.WaitTimeMillsInPullQueue }, nil))
	p.litePull.SetFastFailure(b.fastFailure(func(c *BrokerConfig) int64 { return c.WaitTimeMillsInLitePullQueue }, nil))
	p.heartbeat.SetFastFailure(b.fastFailure(func(c *BrokerConfig) int64 { return c.WaitTimeMillsInHeartbeatQueue }, nil))
	p.endTx.SetFastFailure(b.fastFailure(func(c *BrokerConfig) int64 { return c.WaitTimeMillsInTransactionQueue }, nil))
	return p
}

// sendInlineRule picks the sends of code that run on the event loop. The ACL
// hook MACs the whole body where the request runs, after sorting the header's
// fields (up to 4 MiB of them), and a batch is a put per record: big bodies of
// those, and big headers of signed sends, stay off the loop.
func (b *Broker) sendInlineRule(code int32) func(*codec.RemotingCommand) bool {
	if b.acl != nil || b.auth != nil && b.auth.Authenticates() {
		return func(r *codec.RemotingCommand) bool {
			return len(r.Body)+extSize(r.Ext) <= inlineBodyMax && b.sendInline(r)
		}
	}
	if code == codec.ReqSendBatchMessage {
		return func(r *codec.RemotingCommand) bool { return len(r.Body) <= inlineBodyMax && b.sendInline(r) }
	}
	return b.sendInline
}

// extSize is the bytes of a header's keys and values.
func extSize(e codec.ExtFields) int {
	n := 0
	for _, f := range e {
		n += len(f.Key) + len(f.Value)
	}
	return n
}

// registerOptions says how the requests of code run.
func (b *Broker) registerOptions(p *brokerPools, code int32) []remoting.RegisterOption {
	switch code {
	case codec.ReqSendMessage, codec.ReqSendMessageV2, codec.ReqSendBatchMessage:
		return []remoting.RegisterOption{remoting.WithPool(p.send), remoting.InlineWhen(b.sendInlineRule(code))}
	case codec.ReqPullMessage:
		return []remoting.RegisterOption{remoting.WithPool(p.pull), remoting.InlineWhen(b.pullInline)}
	case codec.ReqLitePullMessage:
		return []remoting.RegisterOption{remoting.WithPool(p.litePull)}
	case codec.ReqQueryMessage, codec.ReqViewMessageById:
		return []remoting.RegisterOption{remoting.WithPool(p.query)}
	case codec.ReqHeartBeat:
		return []remoting.RegisterOption{remoting.WithPool(p.heartbeat)}
	case codec.ReqEndTransaction:
		return []remoting.RegisterOption{remoting.WithPool(p.endTx)}
	}
	return nil
}

// serviceNotAvailableRemark is SendMessageProcessor's remark for
// SERVICE_NOT_AVAILABLE, with diskUtil's figures, and when the disk is what
// refuses, which one (rmqd's addition: Java leaves the operator to guess).
func (b *Broker) serviceNotAvailableRemark() string {
	cl, cq, idx := -1.0, -1.0, -1.0
	var u store.DiskUsage
	if st := b.status(); st != nil {
		u = st.DiskUsage()
		cl, cq, idx = u.CommitLog, u.ConsumeQueue, u.Index
	}
	remark := fmt.Sprintf("service not available now. It may be caused by one of the following reasons: "+
		"the broker's disk is full [CL: %5.2f CQ: %5.2f INDEX: %5.2f], messages are put to the slave, "+
		"message store has been shut down, etc.", cl, cq, idx)
	if u.Full {
		ratio := max(u.CommitLog, u.ConsumeQueue)
		remark += fmt.Sprintf(" Disk full: the store at %s is %.0f%% used, above diskSpaceWarningLevelRatio %.0f%%.",
			u.CommitLogPath, ratio*100, u.WarningRatio*100)
	}
	return remark
}

// overloadRuntime fills GET_BROKER_RUNTIME_INFO's queue, lock and dispatch
// keys with the real figures (AdminBrokerProcessor.prepareRuntimeInfo).
func (b *Broker) overloadRuntime(t map[string]string) {
	pool := func(prefix string, p *remoting.WorkerPool, capacity int) {
		size, wait := 0, int64(0)
		if p != nil {
			size, wait, capacity = p.Queued(), p.HeadWait().Milliseconds(), p.Capacity()
		}
		t[prefix+"QueueSize"] = strconv.Itoa(size)
		t[prefix+"QueueCapacity"] = strconv.Itoa(capacity)
		t[prefix+"QueueHeadWaitTimeMills"] = strconv.FormatInt(wait, 10)
	}
	p := b.pools.Load()
	if p == nil {
		p = &brokerPools{}
	}
	pool("sendThreadPool", p.send, sendQueueCapacity)
	pool("pullThreadPool", p.pull, pullQueueCapacity)
	pool("litePullThreadPool", p.litePull, litePullQueueCapacity)
	pool("queryThreadPool", p.query, queryQueueCapacity)
	pool("ackThreadPool", nil, 100000) // no POP/ACK
	// Java names these two differently and reports no head wait for them.
	endSize, endCap := 0, endTxQueueCapacity
	if p.endTx != nil {
		endSize, endCap = p.endTx.Queued(), p.endTx.Capacity()
	}
	t["EndTransactionQueueSize"] = strconv.Itoa(endSize)
	t["EndTransactionThreadPoolQueueCapacity"] = strconv.Itoa(endCap)
	if st := b.status(); st != nil {
		t["pageCacheLockTimeMills"] = strconv.FormatInt(st.LockTimeMills(), 10)
		t["dispatchBehindBytes"] = strconv.FormatInt(st.DispatchBehindBytes(), 10)
	}
}
