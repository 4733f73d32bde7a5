package processor

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"slices"
	"strings"

	"rmqd/compat"
	"rmqd/store"
)

// liveConfigKeys are the broker's settings UPDATE_BROKER_CONFIG changes in the
// running broker at once, as Java's Configuration.update does for every field
// read at each use: the broker reads them from its configuration snapshot
// (b.conf()) per request, round or period, and the update swaps in a new
// snapshot. The store's live settings (store.IsLiveKey: retention, flushing,
// put waits, transfer limits) go the same way into the snapshot and, through
// syncStoreLive, into the store's own.
//
// Every other key (brokerName, listenPort, flushDiskType, mappedFileSize*,
// messageIndexEnable, registerNameServerPeriod, flushConsumerOffsetInterval,
// timerWheelEnable, maxMessageSize, ...) is captured when the broker or store
// starts, as Java captures it when it builds the service that uses it; it is
// shown by GET_BROKER_CONFIG and persisted at once, and takes effect at the
// next start.
var liveConfigKeys = map[string]func(dst, src *BrokerConfig){
	"autoCreateTopicEnable":          func(d, s *BrokerConfig) { d.AutoCreateTopicEnable = s.AutoCreateTopicEnable },
	"autoCreateSubscriptionGroup":    func(d, s *BrokerConfig) { d.AutoCreateSubscriptionGroup = s.AutoCreateSubscriptionGroup },
	"brokerPermission":               func(d, s *BrokerConfig) { d.BrokerPermission = s.BrokerPermission },
	"longPollingEnable":              func(d, s *BrokerConfig) { d.LongPollingEnable = s.LongPollingEnable },
	"shortPollingTimeMills":          func(d, s *BrokerConfig) { d.ShortPollingTimeMills = s.ShortPollingTimeMills },
	"forwardTimeout":                 func(d, s *BrokerConfig) { d.ForwardTimeout = s.ForwardTimeout },
	"litePullMessageEnable":          func(d, s *BrokerConfig) { d.LitePullMessageEnable = s.LitePullMessageEnable },
	"filterSupportRetry":             func(d, s *BrokerConfig) { d.FilterSupportRetry = s.FilterSupportRetry },
	"rejectPullConsumerEnable":       func(d, s *BrokerConfig) { d.RejectPullConsumerEnable = s.RejectPullConsumerEnable },
	"enableNetWorkFlowControl":       func(d, s *BrokerConfig) { d.EnableNetWorkFlowControl = s.EnableNetWorkFlowControl },
	"notifyConsumerIdsChangedEnable": func(d, s *BrokerConfig) { d.NotifyConsumerIdsChanged = s.NotifyConsumerIdsChanged },
	"enablePropertyFilter":           func(d, s *BrokerConfig) { d.EnablePropertyFilter = s.EnablePropertyFilter },
	"rejectTransactionMessage":       func(d, s *BrokerConfig) { d.RejectTransactionMessage = s.RejectTransactionMessage },
	"enableMixedMessageType":         func(d, s *BrokerConfig) { d.EnableMixedMessageType = s.EnableMixedMessageType },
	"registerBrokerTimeoutMills":     func(d, s *BrokerConfig) { d.RegisterBrokerTimeoutMills = s.RegisterBrokerTimeoutMills },
	"compressedRegister":             func(d, s *BrokerConfig) { d.CompressedRegister = s.CompressedRegister },
	"enableSplitRegistration":        func(d, s *BrokerConfig) { d.EnableSplitRegistration = s.EnableSplitRegistration },
	"splitRegistrationSize":          func(d, s *BrokerConfig) { d.SplitRegistrationSize = s.SplitRegistrationSize },
	"traceOn":                        func(d, s *BrokerConfig) { d.TraceOn = s.TraceOn },
	"disableConsumeIfConsumerReadSlowly": func(d, s *BrokerConfig) {
		d.DisableConsumeIfConsumerReadSlowly = s.DisableConsumeIfConsumerReadSlowly
	},
	"consumerFallbehindThreshold": func(d, s *BrokerConfig) { d.ConsumerFallbehindThreshold = s.ConsumerFallbehindThreshold },
	"useServerSideResetOffset":    func(d, s *BrokerConfig) { d.UseServerSideResetOffset = s.UseServerSideResetOffset },
	"storeReplyMessageEnable":     func(d, s *BrokerConfig) { d.StoreReplyMessageEnable = s.StoreReplyMessageEnable },
	// The transaction checker reads these at each round (delivery_wiring.go),
	// END_TRANSACTION the timeout at each request.
	"transactionTimeOut":  func(d, s *BrokerConfig) { d.TransactionTimeOut = s.TransactionTimeOut },
	"transactionCheckMax": func(d, s *BrokerConfig) { d.TransactionCheckMax = s.TransactionCheckMax },
	"transactionCheckInterval": func(d, s *BrokerConfig) {
		d.TransactionCheckInterval = s.TransactionCheckInterval
	},
	// Read at each pull, recall, assignment query or timer send, as Java reads them.
	"slaveReadEnable":                   func(d, s *BrokerConfig) { d.SlaveReadEnable = s.SlaveReadEnable },
	"recallMessageEnable":               func(d, s *BrokerConfig) { d.RecallMessageEnable = s.RecallMessageEnable },
	"allowRecallWhenBrokerNotWriteable": func(d, s *BrokerConfig) { d.AllowRecallWhenBrokerNotWriteable = s.AllowRecallWhenBrokerNotWriteable },
	"defaultMessageRequestMode":         func(d, s *BrokerConfig) { d.DefaultMessageRequestMode = s.DefaultMessageRequestMode },
	"defaultPopShareQueueNum":           func(d, s *BrokerConfig) { d.DefaultPopShareQueueNum = s.DefaultPopShareQueueNum },
	"serverLoadBalancerEnable":          func(d, s *BrokerConfig) { d.ServerLoadBalancerEnable = s.ServerLoadBalancerEnable },
	"timerMaxDelaySec":                  func(d, s *BrokerConfig) { d.TimerMaxDelaySec = s.TimerMaxDelaySec },
	// POP reads these per request (pop.Config).
	"enablePopMessageThreshold":   func(d, s *BrokerConfig) { d.Pop.EnablePopMessageThreshold = s.Pop.EnablePopMessageThreshold },
	"popInflightMessageThreshold": func(d, s *BrokerConfig) { d.Pop.PopInflightMessageThreshold = s.Pop.PopInflightMessageThreshold },
	"popResponseReturnActualRetryTopic": func(d, s *BrokerConfig) {
		d.Pop.PopResponseReturnActualRetryTopic = s.Pop.PopResponseReturnActualRetryTopic
	},
	// LOCK_BATCH_MQ reads them at each request (lock_strict.go).
	"lockInStrictMode":               func(d, s *BrokerConfig) { d.LockInStrictMode = s.LockInStrictMode },
	"totalReplicas":                  func(d, s *BrokerConfig) { d.TotalReplicas = s.TotalReplicas },
	"clearRetryTopicWhenDeleteTopic": func(d, s *BrokerConfig) { d.ClearRetryTopicWhenDeleteTopic = s.ClearRetryTopicWhenDeleteTopic },
	"validateSystemTopicWhenUpdateTopic": func(d, s *BrokerConfig) {
		d.ValidateSystemTopicWhenUpdateTopic = s.ValidateSystemTopicWhenUpdateTopic
	},
	"enableRegisterProducer": func(d, s *BrokerConfig) { d.EnableRegisterProducer = s.EnableRegisterProducer },
	"enableCreateSysGroup":   func(d, s *BrokerConfig) { d.EnableCreateSysGroup = s.EnableCreateSysGroup },
	"timerStopEnqueue":       func(d, s *BrokerConfig) { d.TimerStopEnqueue = s.TimerStopEnqueue },
	"timerStopDequeue":       func(d, s *BrokerConfig) { d.TimerStopDequeue = s.TimerStopDequeue },
	// Read at every timer send (Broker.parkTimer).
	"timerCongestNumEachSlot": func(d, s *BrokerConfig) { d.TimerCongestNumEachSlot = s.TimerCongestNumEachSlot },
	// The pools read these at every check (send_admission.go).
	"brokerFastFailureEnable":         func(d, s *BrokerConfig) { d.BrokerFastFailureEnable = s.BrokerFastFailureEnable },
	"waitTimeMillsInSendQueue":        func(d, s *BrokerConfig) { d.WaitTimeMillsInSendQueue = s.WaitTimeMillsInSendQueue },
	"waitTimeMillsInPullQueue":        func(d, s *BrokerConfig) { d.WaitTimeMillsInPullQueue = s.WaitTimeMillsInPullQueue },
	"waitTimeMillsInLitePullQueue":    func(d, s *BrokerConfig) { d.WaitTimeMillsInLitePullQueue = s.WaitTimeMillsInLitePullQueue },
	"waitTimeMillsInHeartbeatQueue":   func(d, s *BrokerConfig) { d.WaitTimeMillsInHeartbeatQueue = s.WaitTimeMillsInHeartbeatQueue },
	"waitTimeMillsInTransactionQueue": func(d, s *BrokerConfig) { d.WaitTimeMillsInTransactionQueue = s.WaitTimeMillsInTransactionQueue },

	// Cold-data flow control reads these at each pull and period (coldctr.go);
	// the store's three reach it through syncColdCheck.
	"cgColdReadThreshold":       func(d, s *BrokerConfig) { d.CgColdReadThreshold = s.CgColdReadThreshold },
	"globalColdReadThreshold":   func(d, s *BrokerConfig) { d.GlobalColdReadThreshold = s.GlobalColdReadThreshold },
	"coldCtrStrategyEnable":     func(d, s *BrokerConfig) { d.ColdCtrStrategyEnable = s.ColdCtrStrategyEnable },
	"coldDataFlowControlEnable": func(d, s *BrokerConfig) { d.Store.ColdDataFlowControlEnable = s.Store.ColdDataFlowControlEnable },
	"coldDataScanEnable":        func(d, s *BrokerConfig) { d.Store.ColdDataScanEnable = s.Store.ColdDataScanEnable },
	"accessMessageInMemoryHotRatio": func(d, s *BrokerConfig) {
		d.Store.AccessMessageInMemoryHotRatio = s.Store.AccessMessageInMemoryHotRatio
	},

	// Slave acting master: read at each put, heartbeat and registration (acting.go, escape.go).
	"enableRemoteEscape":           func(d, s *BrokerConfig) { d.EnableRemoteEscape = s.EnableRemoteEscape },
	"brokerNotActiveTimeoutMillis": func(d, s *BrokerConfig) { d.BrokerNotActiveTimeoutMillis = s.BrokerNotActiveTimeoutMillis },
	"sendHeartbeatTimeoutMillis":   func(d, s *BrokerConfig) { d.SendHeartbeatTimeoutMillis = s.SendHeartbeatTimeoutMillis },
	"compatibleWithOldNameSrv":     func(d, s *BrokerConfig) { d.CompatibleWithOldNameSrv = s.CompatibleWithOldNameSrv },
	// Every request to the name servers reads the list in force; the
	// registration loop registers with a new one at once (nameServersMoved).
	"namesrvAddr": func(d, s *BrokerConfig) { d.NamesrvAddr = s.NamesrvAddr },
}

// errConfigBlackList: an update names a black-listed key; the answer is
// NO_PERMISSION with configBlackListRemark.
var errConfigBlackList = errors.New("config key in black list")

// configBlackListRemark is Java's remark for errConfigBlackList, verbatim.
const configBlackListRemark = "Can not update config in black list."

// configBlackList is what Java's AdminBrokerProcessor refuses: its fixed
// entries plus BrokerConfig.configBlackList's default.
var configBlackList = map[string]bool{"configBlackList": true, "brokerConfigPath": true, "rocketmqHome": true}

// identityConfigKeys are refused as well, though Java takes them: they say
// where the broker keeps its data and who it is (persisted, they would move
// the store or the broker's identity at the next start). rmqd is stricter here;
// docs/security.md lists them. namesrvAddr is not among them: Java applies it
// live and operators use it to move name servers.
var identityConfigKeys = map[string]bool{
	"brokerName": true, "brokerClusterName": true, "brokerId": true, "brokerRole": true,
	"listenPort": true, "haListenPort": true, "namesrvListenPort": true, "bindAddress": true,
	"brokerIP1": true, "brokerIP2": true, "readOnlyCommitLogStorePaths": true,
}

// blackListed reports whether an admin may not change key remotely: Java's
// list, the identity keys and every path setting (storePath*, *Path, *Paths,
// *Dir: storePathRootDir, storePathCommitLog, storePathConsumeQueue,
// storePathIndex, storePathEpochFile, storePathBrokerIdentity, ...).
func blackListed(key string) bool {
	return configBlackList[key] || identityConfigKeys[key] || strings.HasPrefix(key, "storePath") ||
		strings.HasSuffix(key, "Path") || strings.HasSuffix(key, "Paths") || strings.HasSuffix(key, "Dir")
}

// blackListError names the refused key.
type blackListError struct{ key string }

func (e *blackListError) Error() string { return "config key in black list: " + e.key }
func (e *blackListError) Unwrap() error { return errConfigBlackList }

// blackListRemark is the answer's remark: Java's text for Java's own keys and
// those of broker.conf's configBlackList; for the keys rmqd adds, Java's text
// with the key and what to do instead.
func blackListRemark(err error) string {
	var be *blackListError
	if !errors.As(err, &be) || configBlackList[be.key] || !blackListed(be.key) {
		return configBlackListRemark // Java's keys and the configured ones: Java's words
	}
	return configBlackListRemark + " " + be.key +
		" is a path or identity setting: change it in the broker's config file and restart."
}

// updateConfig is Configuration.update plus persist: it validates props, keeps
// only keys the broker knows (mergeIfExist), applies the live ones to a new configuration snapshot,
// records the rest as overrides and writes the changed keys into the broker's
// config file. It returns the keys applied and whether brokerPermission changed.
// Callers hold no lock; the update is serialized on admin.cfgMu as Java's
// handler is synchronized.
func (b *Broker) updateConfig(props map[string]string) (applied []string, permChanged bool, err error) {
	extra := strings.Split(b.conf().ConfigBlackList, ";")
	for _, k := range slices.Sorted(maps.Keys(props)) {
		if blackListed(k) || slices.Contains(extra, k) {
			return nil, false, &blackListError{key: k}
		}
	}
	b.admin.cfgMu.Lock()
	defer b.admin.cfgMu.Unlock()
	known := b.brokerPropertiesLocked()
	upd := map[string]string{}
	for k, v := range props {
		if _, ok := known[k]; ok {
			upd[strings.Clone(k)] = strings.Clone(v)
		}
	}
	if len(upd) == 0 {
		return nil, false, nil
	}
	// A value the start-up parsers would refuse is refused now, not at the next
	// start (where it would keep the broker from starting).
	merged := maps.Clone(known)
	maps.Copy(merged, upd)
	probe := *b.conf()
	if _, err := probe.ApplyProperties(merged); err != nil {
		return nil, false, err
	}
	if err := probe.CheckStart(); err != nil {
		return nil, false, err
	}
	if _, ok := upd["namesrvAddr"]; ok {
		if err := b.checkNamesrvMove(&probe); err != nil {
			return nil, false, err
		}
	}
	if b.admin.overrides == nil {
		b.admin.overrides = map[string]string{}
	}
	next := *b.conf()
	var storeKeys []string
	for k, v := range upd {
		if apply, ok := liveConfigKeys[k]; ok {
			apply(&next, &probe)
			delete(b.admin.overrides, k)
		} else if store.CopyLiveKey(k, &next.Store, &probe.Store) {
			delete(b.admin.overrides, k)
			storeKeys = append(storeKeys, k)
		} else {
			b.admin.overrides[k] = v
		}
		if k == "brokerPermission" {
			permChanged = true
		}
	}
	moved := next.NamesrvAddr != b.conf().NamesrvAddr
	b.cfg.Store(&next)
	if moved {
		b.nameServersMoved()
	}
	b.syncColdCheck()
	b.syncStoreLive(storeKeys)
	applied = slices.Sorted(maps.Keys(upd))
	if path := b.conf().BrokerConfigPath; path != "" {
		if err := mergePropertiesFile(path, upd); err != nil {
			return applied, permChanged, fmt.Errorf("persist broker config: %w", err)
		}
	}
	return applied, permChanged, nil
}

// liveStore is a store that takes the live store settings while it runs
// (*store.DefaultStore).
type liveStore interface {
	ApplyLive(c *store.Config, keys ...string)
}

// syncStoreLive hands the store the settings of keys in force; only those:
// the store may have been opened with settings the broker's view lacks.
func (b *Broker) syncStoreLive(keys []string) {
	if ls, ok := b.store.(liveStore); ok && len(keys) > 0 {
		ls.ApplyLive(&b.conf().Store, keys...)
	}
}

// brokerPropertiesLocked is brokerProperties with admin.cfgMu held.
func (b *Broker) brokerPropertiesLocked() map[string]string {
	props := b.conf().Properties()
	maps.Copy(props, b.admin.overrides)
	return props
}

// mergePropertiesFile writes upd into the Java properties file at path: the
// first entry of each key gets the new value in place, later duplicates are
// dropped, keys the file lacks are appended; comments, blank lines and every
// other entry stay as they were. (Java's Configuration.persist rewrites the file
// with every setting instead; the effective configuration at the next start is
// the same, and a file shared with the name server in standalone mode keeps its
// keys.) The file is replaced through tmp, fsync and rename; the old one is kept
// as path.bak, as Java's MixAll.string2File does.
func mergePropertiesFile(path string, upd map[string]string) error {
	old, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("read %s: %w", path, err)
	}
	return compat.WriteConfigFile(path, mergePropertiesText(old, upd))
}

// mergePropertiesText is mergePropertiesFile's text edit.
func mergePropertiesText(old []byte, upd map[string]string) []byte {
	var out bytes.Buffer
	done := map[string]bool{}
	entries := propertyEntries(old)
	last := "" // the last entry written as it was
	for i, entry := range entries {
		if key, ok := entryKey(entry); ok {
			if v, ok := upd[key]; ok {
				if !done[key] {
					done[key] = true
					out.Write(compat.FormatProperties(map[string]string{key: v}))
					last = ""
				}
				continue
			}
		}
		if i == len(entries)-1 && continuesAtEOF(entry) {
			// "k=v\" at the end of the file: the backslash continues into
			// nothing; it must not swallow a line appended after it.
			entry = entry[:len(entry)-1]
		}
		out.WriteString(entry)
		last = entry
	}
	rest := map[string]string{}
	for k, v := range upd {
		if !done[k] {
			rest[k] = v
		}
	}
	if len(rest) > 0 {
		if b := out.Bytes(); len(b) > 0 && b[len(b)-1] != '\n' && b[len(b)-1] != '\r' {
			out.WriteByte('\n')
		}
		if continuesPastEOF(last) {
			// "k=v\" and a line end as the last line: the entry continues onto
			// whatever comes next. A blank line ends it (java.util.Properties),
			// so the appended keys stay keys of their own. After a lone "\r" the
			// blank line ends in "\r" too: "\n" would pair with it into one "\r\n".
			if b := out.Bytes(); b[len(b)-1] == '\r' {
				out.WriteByte('\r')
			} else {
				out.WriteByte('\n')
			}
		}
		out.Write(compat.FormatProperties(rest))
	}
	return out.Bytes()
}

// continuesAtEOF reports a key=value entry ending in an unpaired backslash
// with no line end after it.
func continuesAtEOF(entry string) bool {
	if entry == "" || entry[len(entry)-1] == '\n' || entry[len(entry)-1] == '\r' {
		return false
	}
	if t := strings.TrimLeft(entry, " \t\f"); t == "" || t[0] == '#' || t[0] == '!' {
		return false
	}
	return (len(entry)-len(strings.TrimRight(entry, `\`)))%2 == 1
}

// continuesPastEOF reports a key=value entry whose last line ends in an unpaired
// backslash followed by a line end: a continuation still open at the end of the
// text.
func continuesPastEOF(entry string) bool {
	body := strings.TrimRight(entry, "\r\n")
	if len(body) == len(entry) {
		return false
	}
	if t := strings.TrimLeft(entry, " \t\f"); t == "" || t[0] == '#' || t[0] == '!' {
		return false
	}
	return (len(body)-len(strings.TrimRight(body, `\`)))%2 == 1
}

// propertyEntries splits properties text into logical entries with their line
// ends: a comment or blank line alone, a key=value line together with its
// continuation lines (an odd number of trailing backslashes continues a line;
// not in comments, as in java.util.Properties).
func propertyEntries(data []byte) []string {
	var entries []string
	var cur strings.Builder
	for len(data) > 0 {
		n, tok, _ := scanLinesKeepEnd(data, true)
		line := string(tok)
		data = data[n:]
		body := strings.TrimRight(line, "\r\n")
		if cur.Len() == 0 {
			t := strings.TrimLeft(body, " \t\f")
			if t == "" || t[0] == '#' || t[0] == '!' {
				entries = append(entries, line)
				continue
			}
		}
		cur.WriteString(line)
		if n := len(body) - len(strings.TrimRight(body, `\`)); n%2 == 1 && len(line) > len(body) {
			continue
		}
		entries = append(entries, cur.String())
		cur.Reset()
	}
	if cur.Len() > 0 {
		entries = append(entries, cur.String())
	}
	return entries
}

// scanLinesKeepEnd cuts the first line off data at "\n", "\r\n" or a lone
// "\r" (the line ends of java.util.Properties), keeping them so entries are
// written back byte for byte (a bufio.SplitFunc).
func scanLinesKeepEnd(data []byte, atEOF bool) (int, []byte, error) {
	i := bytes.IndexAny(data, "\r\n")
	switch {
	case i < 0:
		if atEOF && len(data) > 0 {
			return len(data), data, nil
		}
		return 0, nil, nil
	case data[i] == '\n':
		return i + 1, data[:i+1], nil
	case i+1 < len(data):
		if data[i+1] == '\n' {
			return i + 2, data[:i+2], nil
		}
		return i + 1, data[:i+1], nil
	case atEOF:
		return i + 1, data[:i+1], nil
	}
	return 0, nil, nil // a "\r" at the end of the buffer: "\r\n" may follow
}

// entryKey is the key of one logical key=value entry.
func entryKey(entry string) (string, bool) {
	props, err := compat.ParseProperties(strings.NewReader(entry))
	if err != nil || len(props) != 1 {
		return "", false
	}
	for k := range props {
		return k, true
	}
	return "", false
}
