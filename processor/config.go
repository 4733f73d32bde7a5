package processor

import (
	"errors"
	"fmt"
	"math"
	"net"
	"os"
	"path/filepath"
	"rmqd/codec"
	"rmqd/compat"
	"rmqd/processor/delivery"
	"rmqd/store"
	"strconv"
	"strings"
)

// BrokerConfig holds the broker settings a broker.conf can carry. Field names
// follow Java's BrokerConfig / NettyServerConfig / MessageStoreConfig so that
// ApplyProperties can take a broker.conf unchanged.
type BrokerConfig struct {
	BrokerName        string `prop:"brokerName"`
	BrokerClusterName string `prop:"brokerClusterName"`
	BrokerID          int64  `prop:"brokerId"`
	BrokerIP1         string `prop:"brokerIP1"` // the address clients dial
	BrokerIP2         string `prop:"brokerIP2"` // HA address
	ListenPort        int    `prop:"listenPort"`
	NamesrvAddr       string `prop:"namesrvAddr"` // ';' separated
	// Name servers looked up while running (addr_lookup.go): namesrvAddr's
	// host names resolved to all their addresses every
	// updateNameServerAddrPeriod, or, with no namesrvAddr, an address
	// server's list every fetchNamesrvAddrInterval. The address server is
	// named by JVM system properties in Java, by these keys in rmqd.
	FetchNameSrvAddrByDNSLookup     bool   `prop:"fetchNameSrvAddrByDnsLookup"`
	UpdateNameServerAddrPeriod      int64  `prop:"updateNameServerAddrPeriod"` // ms
	FetchNamesrvAddrByAddressServer bool   `prop:"fetchNamesrvAddrByAddressServer"`
	FetchNamesrvAddrInterval        int64  `prop:"fetchNamesrvAddrInterval"` // ms
	NamesrvDomain                   string `prop:"rocketmq.namesrv.domain"`
	NamesrvDomainSubgroup           string `prop:"rocketmq.namesrv.domain.subgroup"`
	AutoCreateTopicEnable           bool   `prop:"autoCreateTopicEnable"`
	AutoCreateSubscriptionGroup     bool   `prop:"autoCreateSubscriptionGroup"`
	ClusterTopicEnable              bool   `prop:"clusterTopicEnable"`
	BrokerTopicEnable               bool   `prop:"brokerTopicEnable"`
	DefaultTopicQueueNums           int32  `prop:"defaultTopicQueueNums"`
	EnablePropertyFilter            bool   `prop:"enablePropertyFilter"`
	BrokerPermission                int32  `prop:"brokerPermission"`
	RegisterNameServerPeriod        int64  `prop:"registerNameServerPeriod"` // ms, clamped to 10-60 s like Java
	RegisterBrokerTimeoutMills      int64  `prop:"registerBrokerTimeoutMills"`
	// CompressedRegister sends REGISTER_BROKER bodies zlib-compressed (Java's
	// key, default false; 5.x name servers read them, 4.x ones do not). A
	// table too large for a plain body is sent compressed regardless.
	CompressedRegister bool `prop:"compressedRegister"`
	// EnableSplitRegistration sends the whole-table registration in parts of
	// SplitRegistrationSize topics (Java's keys, defaults false and 800).
	EnableSplitRegistration     bool  `prop:"enableSplitRegistration"`
	SplitRegistrationSize       int32 `prop:"splitRegistrationSize"`
	FlushConsumerOffsetInterval int64 `prop:"flushConsumerOffsetInterval"` // ms
	LongPollingEnable           bool  `prop:"longPollingEnable"`
	ShortPollingTimeMills       int64 `prop:"shortPollingTimeMills"`
	// ForwardTimeout bounds, in ms, a static topic request forwarded to the
	// broker holding its mapping item (Java's key, default 3000).
	ForwardTimeout int64 `prop:"forwardTimeout"`
	// LitePullMessageEnable off refuses LITE_PULL_MESSAGE (Java's key, default true).
	LitePullMessageEnable bool `prop:"litePullMessageEnable"`
	// RejectPullConsumerEnable drops CONSUME_ACTIVELY (pull) consumers from
	// heartbeats and refuses pulls from connections not registered as push
	// consumers (Java's key, default false).
	RejectPullConsumerEnable bool `prop:"rejectPullConsumerEnable"`
	// NetProperties are Java's NettyServerConfig and NettyClientConfig keys
	// rmqd binds outside this struct (bindAddress, water marks, selector
	// threads, useTLS), with the values in force: Java's GET_BROKER_CONFIG
	// lists those objects beside BrokerConfig. Not a property.
	NetProperties map[string]string
	// EnableNetWorkFlowControl drops a found pull's answer when the consumer's
	// connection is not writable (past its write-buffer high-water mark): the
	// consumer's pull times out and is retried (Java's key, default false).
	EnableNetWorkFlowControl bool `prop:"enableNetWorkFlowControl"`
	// FilterSupportRetry judges a SQL92 subscription's retry messages by the
	// group's SQL92 filter of their original topic (Java's key, default false).
	FilterSupportRetry       bool `prop:"filterSupportRetry"`
	NotifyConsumerIdsChanged bool `prop:"notifyConsumerIdsChangedEnable"`
	RejectTransactionMessage bool `prop:"rejectTransactionMessage"`
	// EnableMixedMessageType lets a topic be made with message.type=MIXED
	// (Java's key, default false: such a create or update is refused).
	EnableMixedMessageType bool   `prop:"enableMixedMessageType"`
	MsgTraceTopicName      string `prop:"msgTraceTopicName"`
	TraceTopicEnable       bool   `prop:"traceTopicEnable"`
	TraceOn                bool   `prop:"traceOn"`
	// DisableConsumeIfConsumerReadSlowly: every 3 minutes a group whose last
	// pull of a queue left more than ConsumerFallbehindThreshold commitlog
	// bytes behind it gets consumeEnable=false (Java's protectBroker, keys and
	// defaults false and 16 GiB); an admin update of the group brings it back.
	DisableConsumeIfConsumerReadSlowly bool   `prop:"disableConsumeIfConsumerReadSlowly"`
	ConsumerFallbehindThreshold        int64  `prop:"consumerFallbehindThreshold"`
	RegionID                           string `prop:"regionId"`
	ReviveQueueNum                     int32  `prop:"reviveQueueNum"`
	TimerWheelEnable                   bool   `prop:"timerWheelEnable"`         // MessageStoreConfig
	ChannelExpiredTimeout              int64  `prop:"channelExpiredTimeout"`    // client heartbeat expiry (ms)
	TransactionCheckInterval           int64  `prop:"transactionCheckInterval"` // ms
	TransactionTimeOut                 int64  `prop:"transactionTimeOut"`       // ms
	TransactionCheckMax                int32  `prop:"transactionCheckMax"`
	// TimerMaxDelaySec bounds how far ahead a timer message (and a recall)
	// may be due (MessageStoreConfig, default 3 days); a send beyond it is
	// MESSAGE_ILLEGAL.
	TimerMaxDelaySec int64 `prop:"timerMaxDelaySec"`
	// TimerRollWindowSlot (s): a timer further than this from its store time
	// is stored again then, so keep it below fileReservedTime (delivery.Timer.SetRollWindow).
	TimerRollWindowSlot int64 `prop:"timerRollWindowSlot"`
	// TimerStopEnqueue holds the timer wheel from taking new timers: they
	// wait in rmq_sys_wheel_timer until it is cleared (MessageStoreConfig,
	// live; delivery.Timer.SetHolds).
	TimerStopEnqueue bool `prop:"timerStopEnqueue"`
	// TimerStopDequeue holds the wheel from delivering: due timers wait in
	// it until it is cleared (MessageStoreConfig, live).
	TimerStopDequeue bool `prop:"timerStopDequeue"`
	// TimerCongestNumEachSlot flow-controls timer sends whose slot already
	// holds more (MessageStoreConfig, default Integer.MAX_VALUE: none; live;
	// delivery.Timer.Congested).
	TimerCongestNumEachSlot int32 `prop:"timerCongestNumEachSlot"`
	// TimerPrecisionMs is the wheel's slot length: 100, 200, 500 or 1000
	// (default), other values taken down to one of them as Java's setter
	// does. Read at start (delivery.Timer.SetPrecision).
	TimerPrecisionMs int32 `prop:"timerPrecisionMs"`
	// StoreReplyMessageEnable stores a SEND_REPLY_MESSAGE besides pushing it
	// to its requester (Java's default true); off, it is only pushed.
	StoreReplyMessageEnable bool `prop:"storeReplyMessageEnable"`
	// ClearRetryTopicWhenDeleteTopic: DELETE_TOPIC also drops the POP retry
	// topics of the groups that consumed the topic (Java's key, default true).
	ClearRetryTopicWhenDeleteTopic bool `prop:"clearRetryTopicWhenDeleteTopic"`
	// ValidateSystemTopicWhenUpdateTopic refuses admin creates, updates and
	// deletes of system topics (Java's key, default true); off, they are let
	// through as Java does.
	ValidateSystemTopicWhenUpdateTopic bool `prop:"validateSystemTopicWhenUpdateTopic"`
	// EnableRegisterProducer off, with rejectTransactionMessage on, registers
	// no new producer from heartbeats (Java's key, default true).
	EnableRegisterProducer bool `prop:"enableRegisterProducer"`
	// EnableCreateSysGroup auto-creates the CID_RMQ_SYS_ groups even with
	// autoCreateSubscriptionGroup off (Java's key, default true).
	EnableCreateSysGroup bool `prop:"enableCreateSysGroup"`

	// Cold-data read flow control (coldctr.go; on with the store's
	// coldDataFlowControlEnable): the cold bytes a group, and the broker, may
	// read per 5 s; coldCtrStrategyEnable adapts the group thresholds, with
	// usePIDColdCtrStrategy's controller (read at start) or the simple one.
	CgColdReadThreshold     int64 `prop:"cgColdReadThreshold"`
	GlobalColdReadThreshold int64 `prop:"globalColdReadThreshold"`
	ColdCtrStrategyEnable   bool  `prop:"coldCtrStrategyEnable"`
	UsePIDColdCtrStrategy   bool  `prop:"usePIDColdCtrStrategy"`

	// SubscriptionExpiredTimeout (ms) drops compensated consumers (clients/compensate.go).
	SubscriptionExpiredTimeout int64 `prop:"subscriptionExpiredTimeout"`
	// RecallMessageEnable allows RECALL_MESSAGE (Java's default false);
	// AllowRecallWhenBrokerNotWriteable (default true) lets it through a
	// broker whose permission forbids writes.
	RecallMessageEnable               bool `prop:"recallMessageEnable"`
	AllowRecallWhenBrokerNotWriteable bool `prop:"allowRecallWhenBrokerNotWriteable"`
	// Server-side load balancing of POP consumers (QUERY_ASSIGNMENT):
	// serverLoadBalancerEnable (true), defaultMessageRequestMode (PULL or POP)
	// and defaultPopShareQueueNum (-1: a POP consumer pops every queue).
	ServerLoadBalancerEnable  bool   `prop:"serverLoadBalancerEnable"`
	DefaultMessageRequestMode string `prop:"defaultMessageRequestMode"`
	DefaultPopShareQueueNum   int32  `prop:"defaultPopShareQueueNum"`
	// BrokerConfigPath is the broker.conf the broker was started with (Java's
	// brokerConfigPath, set by BrokerStartup from -c): UPDATE_BROKER_CONFIG
	// writes changed settings back into it. Empty: updates are not persisted.
	BrokerConfigPath string `prop:"brokerConfigPath,omitempty"`
	// ConfigBlackList adds keys, ';'-separated, that UPDATE_BROKER_CONFIG
	// refuses (Java's configBlackList; rmqd's own list always applies).
	ConfigBlackList string `prop:"configBlackList,omitempty"`
	// UseServerSideResetOffset: an admin offset reset is kept by the broker
	// and handed out at the next pull (5.x); false pushes it to the clients
	// with RESET_CONSUMER_CLIENT_OFFSET, as 4.9.x brokers do.
	UseServerSideResetOffset bool `prop:"useServerSideResetOffset"`
	// RebalanceLockMaxLiveTime (ms) is how long an orderly consumer's queue
	// lock lives without renewal: Java's JVM property
	// -Drocketmq.broker.rebalance.lockMaxLiveTime, taken under that name too.
	// Read at start; <= 0 means the default, 60000.
	RebalanceLockMaxLiveTime int64 `prop:"rebalanceLockMaxLiveTime,rocketmq.broker.rebalance.lockMaxLiveTime"`
	// LockInStrictMode with TotalReplicas above 1 grants a queue lock only when
	// a quorum of the group's brokers took it (lock_strict.go).
	LockInStrictMode bool `prop:"lockInStrictMode"`
	TotalReplicas    int  `prop:"totalReplicas"`

	// Slave acting master (acting.go): the alive slave with the lowest
	// brokerId runs the master-only services while its master is gone.
	// EnableRemoteEscape lets those services send what they put back to a
	// live master of the topic; the other keys pace the group sync and the
	// lite heartbeat to the name servers (Java's names and defaults).
	EnableSlaveActingMaster      bool  `prop:"enableSlaveActingMaster"`
	EnableRemoteEscape           bool  `prop:"enableRemoteEscape"`
	SyncBrokerMemberGroupPeriod  int64 `prop:"syncBrokerMemberGroupPeriod"`  // ms
	BrokerNotActiveTimeoutMillis int64 `prop:"brokerNotActiveTimeoutMillis"` // ms
	SendHeartbeatTimeoutMillis   int64 `prop:"sendHeartbeatTimeoutMillis"`   // ms
	CompatibleWithOldNameSrv     bool  `prop:"compatibleWithOldNameSrv"`
	SkipPreOnline                bool  `prop:"skipPreOnline"` // preonline.go

	// AclEnable turns on ACL 1.0: every request is checked against
	// plain_acl.yml (processor/acl).
	AclEnable bool `prop:"aclEnable"`
	// AclPlainFile is the ACL file (Java's -Drocketmq.acl.plain.file, relative
	// to RocketmqHome); empty: $ROCKETMQ_HOME/conf/plain_acl.yml, else
	// <storePathRootDir>/../conf/plain_acl.yml.
	AclPlainFile string `prop:"aclPlainFile,rocketmq.acl.plain.file,omitempty"`
	RocketmqHome string `prop:"rocketmqHome,omitempty"` // default $ROCKETMQ_HOME
	// AuthenticationEnabled / AuthorizationEnabled are 5.3's ACL 2.0 switches
	// (processor/auth); exclusive with AclEnable.
	AuthenticationEnabled bool `prop:"authenticationEnabled"`
	AuthorizationEnabled  bool `prop:"authorizationEnabled"`
	// InitAuthenticationUser (JSON username/password: the super user made at
	// first start) and InnerClientAuthenticationCredentials (JSON
	// accessKey/secretKey the broker signs its own requests with) hold
	// secrets, so GET_BROKER_CONFIG does not show them.
	InitAuthenticationUser               string `prop:"initAuthenticationUser,secret"`
	InnerClientAuthenticationCredentials string `prop:"innerClientAuthenticationCredentials,secret"`
	AuthenticationWhitelist              string `prop:"authenticationWhitelist"` // request codes, comma separated
	AuthorizationWhitelist               string `prop:"authorizationWhitelist"`
	// MigrateAuthFromV1Enabled imports the ACL 1.0 accounts (plain_acl.yml and
	// the acl directory, as aclPlainFile resolves them) as ACL 2.0 users and
	// ACLs at start, skipping accounts whose user exists (auth.MigrateV1).
	MigrateAuthFromV1Enabled bool `prop:"migrateAuthFromV1Enabled"`
	// The provider classes: only Java's defaults are served (auth.CheckProviders).
	AuthenticationProvider         string `prop:"authenticationProvider,omitempty"`
	AuthenticationMetadataProvider string `prop:"authenticationMetadataProvider,omitempty"`
	AuthenticationStrategy         string `prop:"authenticationStrategy,omitempty"`
	AuthorizationProvider          string `prop:"authorizationProvider,omitempty"`
	AuthorizationMetadataProvider  string `prop:"authorizationMetadataProvider,omitempty"`
	AuthorizationStrategy          string `prop:"authorizationStrategy,omitempty"`
	// Fast failure (BrokerFastFailure): requests that waited longer than
	// these for a worker are answered SYSTEM_BUSY instead of run (ms).
	BrokerFastFailureEnable         bool  `prop:"brokerFastFailureEnable"`
	WaitTimeMillsInSendQueue        int64 `prop:"waitTimeMillsInSendQueue"`
	WaitTimeMillsInPullQueue        int64 `prop:"waitTimeMillsInPullQueue"`
	WaitTimeMillsInLitePullQueue    int64 `prop:"waitTimeMillsInLitePullQueue"`
	WaitTimeMillsInHeartbeatQueue   int64 `prop:"waitTimeMillsInHeartbeatQueue"`
	WaitTimeMillsInTransactionQueue int64 `prop:"waitTimeMillsInTransactionQueue"`
	// SlaveReadEnable lets a slave serve pulls (rejected otherwise, as Java).
	SlaveReadEnable bool `prop:"slaveReadEnable"`
	// MaxHeldPullRequests bounds the long-polling pulls held at once (rmqd's
	// own); past it a pull is answered PULL_NOT_FOUND at once.
	MaxHeldPullRequests int64 `prop:"maxHeldPullRequests"`
	// MaxClientGroups bounds the producer groups, and apart the consumer
	// groups, one heartbeat may carry and one connection may hold (rmqd's own;
	// Java has no bound); 0 or negative bounds nothing.
	MaxClientGroups int `prop:"maxClientGroups"`
	// Metrics (BrokerMetricsManager): only PROM is served; see cmd/rmqd/metrics.go.
	MetricsExporterType     string `prop:"metricsExporterType"`
	MetricsPromExporterHost string `prop:"metricsPromExporterHost"`
	MetricsPromExporterPort int    `prop:"metricsPromExporterPort"`
	MetricsLabel            string `prop:"metricsLabel"`
	MetricsInDelta          bool   `prop:"metricsInDelta"`
	// Store is the store's configuration (MessageStoreConfig): the same file
	// binds it, and the broker reads the few store keys it needs from here.
	Store store.Config `prop:",inline"`
	Pop   PopConfig    `prop:",inline"`
	// Controller is 5.x controller mode (controller.go).
	Controller ControllerConfig `prop:",inline"`
}

// DefaultBrokerConfig returns Java's defaults. BrokerIP1/2 default to the first
// non-loopback IPv4 address (else IPv6) as Java's NetworkUtil.getLocalAddress
// does; set them to 127.0.0.1 when the broker only listens on loopback.
func DefaultBrokerConfig() BrokerConfig {
	ip := localIP()
	return BrokerConfig{
		BrokerName:                  "broker-a",
		BrokerClusterName:           "DefaultCluster",
		BrokerID:                    0,
		BrokerIP1:                   ip,
		BrokerIP2:                   ip,
		ListenPort:                  10911,
		NamesrvAddr:                 os.Getenv("NAMESRV_ADDR"),
		UpdateNameServerAddrPeriod:  120000,
		FetchNamesrvAddrInterval:    10000,
		NamesrvDomain:               "jmenv.tbsite.net",
		NamesrvDomainSubgroup:       "nsaddr",
		AutoCreateTopicEnable:       true,
		AutoCreateSubscriptionGroup: true,
		ClusterTopicEnable:          true,
		BrokerTopicEnable:           true,
		DefaultTopicQueueNums:       8,
		BrokerPermission:            PermRead | PermWrite,
		RegisterNameServerPeriod:    30000,
		RegisterBrokerTimeoutMills:  24000,
		SplitRegistrationSize:       800,
		FlushConsumerOffsetInterval: 5000,
		LongPollingEnable:           true,
		ShortPollingTimeMills:       1000,
		ForwardTimeout:              3000,
		LitePullMessageEnable:       true,
		NotifyConsumerIdsChanged:    true,
		MsgTraceTopicName:           "RMQ_SYS_TRACE_TOPIC",
		TraceOn:                     true,
		StoreReplyMessageEnable:     true,
		ConsumerFallbehindThreshold: 16 << 30,
		CgColdReadThreshold:         3 << 20,
		GlobalColdReadThreshold:     100 << 20,
		UsePIDColdCtrStrategy:       true,
		RegionID:                    "DefaultRegion",
		ReviveQueueNum:              8,
		TimerWheelEnable:            true,
		TimerMaxDelaySec:            delivery.TimerMaxDelayMs / 1000,
		TimerRollWindowSlot:         2 * 86400,
		TimerCongestNumEachSlot:     math.MaxInt32,
		TimerPrecisionMs:            1000,
		ChannelExpiredTimeout:       120000,
		SubscriptionExpiredTimeout:  600000,
		TransactionCheckInterval:    30000,
		TransactionTimeOut:          6000,
		TransactionCheckMax:         15,
		UseServerSideResetOffset:    true,
		RebalanceLockMaxLiveTime:    DefaultLockMaxLiveTime.Milliseconds(),
		TotalReplicas:               1,
		RocketmqHome:                os.Getenv("ROCKETMQ_HOME"),
		MaxHeldPullRequests:         DefaultMaxHeldPulls,
		MaxClientGroups:             DefaultMaxClientGroups,
		MetricsExporterType:         "DISABLE",
		MetricsPromExporterPort:     5557,
		Store:                       store.DefaultConfig(),
		Pop:                         defaultPopConfig(),
		Controller:                  defaultControllerConfig(),

		BrokerFastFailureEnable:         true,
		WaitTimeMillsInSendQueue:        200,
		WaitTimeMillsInPullQueue:        5000,
		WaitTimeMillsInLitePullQueue:    5000,
		WaitTimeMillsInHeartbeatQueue:   31000,
		WaitTimeMillsInTransactionQueue: 3000,

		AllowRecallWhenBrokerNotWriteable: true,
		ServerLoadBalancerEnable:          true,
		DefaultMessageRequestMode:         "PULL",
		DefaultPopShareQueueNum:           -1,

		ClearRetryTopicWhenDeleteTopic:     true,
		ValidateSystemTopicWhenUpdateTopic: true,
		EnableRegisterProducer:             true,
		EnableCreateSysGroup:               true,

		SyncBrokerMemberGroupPeriod:  1000,
		BrokerNotActiveTimeoutMillis: 10000,
		SendHeartbeatTimeoutMillis:   1000,
		CompatibleWithOldNameSrv:     true,
	}
}

// ConfigDir is where the JSON config files live, as Java's
// StorePathConfigHelper puts them.
func (c *BrokerConfig) ConfigDir() string { return filepath.Join(c.Store.StorePathRootDir, "config") }

// BrokerAddr is brokerIP1:listenPort, the address registered with name servers
// and written as store host. An IPv6 brokerIP1 comes out bracketed,
// "[::1]:10911", where Java writes "::1:10911" (docs/compatibility.md).
func (c *BrokerConfig) BrokerAddr() string {
	return net.JoinHostPort(codec.BareHost(c.BrokerIP1), strconv.Itoa(c.ListenPort))
}

// ApplyProperties sets fields from broker.conf keys through the one config
// binder (compat.BindConfig), the store's included, and checks the store's
// values. It returns the keys neither binds (broker.conf also carries netty and
// name-server keys; the caller decides what to warn about).
func (c *BrokerConfig) ApplyProperties(props map[string]string) (unknown []string, err error) {
	if err := compat.RefusedSetting(props); err != nil {
		return nil, fmt.Errorf("broker config %w", err)
	}
	unknown, err = compat.BindConfig(props, c)
	if err != nil {
		return unknown, fmt.Errorf("broker config: %w", err)
	}
	c.TimerPrecisionMs = int32(delivery.TimerPrecision(int64(c.TimerPrecisionMs)))
	return unknown, c.Store.Validate()
}

// CheckStart refuses settings that keep a broker from starting; an
// UPDATE_BROKER_CONFIG that would persist one is refused with it (Java takes
// them, and rmqd would then not start again until the file was edited).
func (c *BrokerConfig) CheckStart() error {
	switch c.MetricsExporterType {
	case "", "DISABLE", "0", "PROM", "2":
	default:
		return fmt.Errorf("metricsExporterType=%s: rmqd serves only PROM (or DISABLE)", c.MetricsExporterType)
	}
	if p := c.MetricsPromExporterPort; p < 0 || p > 65535 {
		return fmt.Errorf("metricsPromExporterPort=%d: not a port", p)
	}
	if (c.AuthenticationEnabled || c.AuthorizationEnabled) && c.AclEnable {
		// 5.3 has no ACL 1.0 and would silently ignore aclEnable.
		return errors.New("aclEnable (ACL 1.0) and authenticationEnabled/authorizationEnabled (ACL 2.0) are exclusive")
	}
	if err := checkNamesrvAddr(c.NamesrvAddr); err != nil {
		return err
	}
	if c.Controller.EnableControllerMode && len(c.Controller.addrs()) == 0 {
		return errors.New("controller mode: controllerAddr is empty")
	}
	return nil
}

// authProviders are the provider class keys that are set, for auth.CheckProviders.
func (c *BrokerConfig) authProviders() map[string]string {
	m := map[string]string{}
	for k, v := range map[string]string{
		"authenticationProvider": c.AuthenticationProvider, "authenticationMetadataProvider": c.AuthenticationMetadataProvider,
		"authenticationStrategy": c.AuthenticationStrategy, "authorizationProvider": c.AuthorizationProvider,
		"authorizationMetadataProvider": c.AuthorizationMetadataProvider, "authorizationStrategy": c.AuthorizationStrategy,
	} {
		if v != "" {
			m[k] = v
		}
	}
	return m
}

// Properties returns the settings under their Java key names (GET_BROKER_CONFIG,
// rmqd -p), the store's included, and NetProperties where no field has the key.
func (c *BrokerConfig) Properties() map[string]string {
	return compat.ConfigPropertiesWith(c, c.NetProperties)
}

// parseJavaBool is Boolean.parseBoolean: only "true" (any case) is true.
func parseJavaBool(s string) bool { return strings.EqualFold(strings.TrimSpace(s), "true") }

// localIP picks the first non-loopback, non-link-local IPv4 address; on a host
// without one, the first such IPv6 address, as NetworkUtil.getLocalAddress
// falls back to IPv6; else 127.0.0.1.
func localIP() string {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return "127.0.0.1"
	}
	return pickLocalIP(addrs)
}

func pickLocalIP(addrs []net.Addr) string {
	v6 := ""
	for _, a := range addrs {
		ipn, ok := a.(*net.IPNet)
		if !ok || ipn.IP.IsLoopback() || ipn.IP.IsLinkLocalUnicast() || ipn.IP.IsUnspecified() {
			continue
		}
		if ip := ipn.IP.To4(); ip != nil {
			return ip.String()
		}
		if v6 == "" {
			v6 = ipn.IP.String()
		}
	}
	if v6 != "" {
		return v6
	}
	return "127.0.0.1"
}
