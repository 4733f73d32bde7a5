package processor

import (
	"fmt"
	"maps"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// BrokerConfig holds the broker settings a broker.conf can carry. Field names
// follow Java's BrokerConfig / NettyServerConfig / MessageStoreConfig so that
// ApplyProperties can take a broker.conf unchanged.
type BrokerConfig struct {
	BrokerName                  string // brokerName
	BrokerClusterName           string // brokerClusterName
	BrokerID                    int64  // brokerId
	BrokerIP1                   string // brokerIP1: the address clients dial
	BrokerIP2                   string // brokerIP2: HA address
	ListenPort                  int    // listenPort
	NamesrvAddr                 string // namesrvAddr, ';' separated
	AutoCreateTopicEnable       bool   // autoCreateTopicEnable
	AutoCreateSubscriptionGroup bool   // autoCreateSubscriptionGroup
	ClusterTopicEnable          bool   // clusterTopicEnable
	BrokerTopicEnable           bool   // brokerTopicEnable
	DefaultTopicQueueNums       int32  // defaultTopicQueueNums
	EnablePropertyFilter        bool   // enablePropertyFilter
	BrokerPermission            int32  // brokerPermission
	RegisterNameServerPeriod    int64  // registerNameServerPeriod (ms, clamped to 10-60 s like Java)
	RegisterBrokerTimeoutMills  int64  // registerBrokerTimeoutMills
	FlushConsumerOffsetInterval int64  // flushConsumerOffsetInterval (ms)
	LongPollingEnable           bool   // longPollingEnable
	ShortPollingTimeMills       int64  // shortPollingTimeMills
	NotifyConsumerIdsChanged    bool   // notifyConsumerIdsChangedEnable
	RejectTransactionMessage    bool   // rejectTransactionMessage
	MaxMessageSize              int32  // maxMessageSize (MessageStoreConfig)
	StorePathRootDir            string // storePathRootDir (MessageStoreConfig); config files live in <root>/config
	MsgTraceTopicName           string // msgTraceTopicName
	TraceTopicEnable            bool   // traceTopicEnable
	TraceOn                     bool   // traceOn
	// ConsumerFallbehindThreshold is kept and shown (Java throttles slow
	// consumers with it when disableConsumeIfConsumerReadSlowly is on).
	ConsumerFallbehindThreshold int64 // consumerFallbehindThreshold
	// Others are the settings of the rest of the broker (the store's, keyed as
	// in broker.conf) that GET_BROKER_CONFIG shows beside the broker's own, as
	// Java's Configuration lists every registered config object.
	Others                   map[string]string
	RegionID                 string // regionId
	ReviveQueueNum           int32  // reviveQueueNum
	TimerWheelEnable         bool   // timerWheelEnable (MessageStoreConfig)
	ChannelExpiredTimeout    int64  // channelExpiredTimeout: client heartbeat expiry (ms)
	MessageDelayLevel        string // messageDelayLevel (MessageStoreConfig)
	TransactionCheckInterval int64  // transactionCheckInterval (ms)
	TransactionTimeOut       int64  // transactionTimeOut (ms)
	TransactionCheckMax      int32  // transactionCheckMax
	// BrokerConfigPath is the broker.conf the broker was started with (Java's
	// brokerConfigPath, set by BrokerStartup from -c): UPDATE_BROKER_CONFIG
	// writes changed settings back into it. Empty: updates are not persisted.
	BrokerConfigPath string // brokerConfigPath
	// ConfigBlackList adds keys, ';'-separated, that UPDATE_BROKER_CONFIG
	// refuses (Java's configBlackList; rmqd's own list always applies).
	ConfigBlackList string // configBlackList
	// UseServerSideResetOffset: an admin offset reset is kept by the broker
	// and handed out at the next pull (5.x); false pushes it to the clients
	// with RESET_CONSUMER_CLIENT_OFFSET, as 4.9.x brokers do.
	UseServerSideResetOffset bool // useServerSideResetOffset
	// AclEnable turns on ACL 1.0: every request is checked against
	// plain_acl.yml (processor/acl).
	AclEnable bool // aclEnable
	// AclPlainFile is the ACL file (Java's -Drocketmq.acl.plain.file, relative
	// to RocketmqHome); empty: $ROCKETMQ_HOME/conf/plain_acl.yml, else
	// <storePathRootDir>/../conf/plain_acl.yml.
	AclPlainFile string // aclPlainFile (rmqd) or rocketmq.acl.plain.file
	RocketmqHome string // rocketmqHome, default $ROCKETMQ_HOME
	// AuthenticationEnabled / AuthorizationEnabled are 5.3's ACL 2.0 switches
	// (processor/auth); exclusive with AclEnable.
	AuthenticationEnabled bool // authenticationEnabled
	AuthorizationEnabled  bool // authorizationEnabled
	// InitAuthenticationUser (JSON username/password: the super user made at
	// first start) and InnerClientAuthenticationCredentials (JSON
	// accessKey/secretKey the broker signs its own requests with) hold
	// secrets, so GET_BROKER_CONFIG does not show them.
	InitAuthenticationUser               string // initAuthenticationUser
	InnerClientAuthenticationCredentials string // innerClientAuthenticationCredentials
	AuthenticationWhitelist              string // authenticationWhitelist: request codes, comma separated
	AuthorizationWhitelist               string // authorizationWhitelist
	// AuthProviders holds authenticationProvider, authorizationStrategy and
	// the other provider class keys: only Java's defaults are served.
	AuthProviders map[string]string
}

// DefaultBrokerConfig returns Java's defaults. BrokerIP1/2 default to the first
// non-loopback IPv4 address as Java's NetworkUtil.getLocalAddress does; set them
// to 127.0.0.1 when the broker only listens on loopback.
func DefaultBrokerConfig() BrokerConfig {
	ip := localIPv4()
	home, _ := os.UserHomeDir()
	return BrokerConfig{
		BrokerName:                  "broker-a",
		BrokerClusterName:           "DefaultCluster",
		BrokerID:                    0,
		BrokerIP1:                   ip,
		BrokerIP2:                   ip,
		ListenPort:                  10911,
		NamesrvAddr:                 os.Getenv("NAMESRV_ADDR"),
		AutoCreateTopicEnable:       true,
		AutoCreateSubscriptionGroup: true,
		ClusterTopicEnable:          true,
		BrokerTopicEnable:           true,
		DefaultTopicQueueNums:       8,
		BrokerPermission:            PermRead | PermWrite,
		RegisterNameServerPeriod:    30000,
		RegisterBrokerTimeoutMills:  24000,
		FlushConsumerOffsetInterval: 5000,
		LongPollingEnable:           true,
		ShortPollingTimeMills:       1000,
		NotifyConsumerIdsChanged:    true,
		MaxMessageSize:              4 << 20,
		StorePathRootDir:            filepath.Join(home, "store"),
		MsgTraceTopicName:           "RMQ_SYS_TRACE_TOPIC",
		TraceOn:                     true,
		ConsumerFallbehindThreshold: 16 << 30,
		RegionID:                    "DefaultRegion",
		ReviveQueueNum:              8,
		TimerWheelEnable:            true,
		ChannelExpiredTimeout:       120000,
		MessageDelayLevel:           DefaultMessageDelayLevel,
		TransactionCheckInterval:    30000,
		TransactionTimeOut:          6000,
		TransactionCheckMax:         15,
		UseServerSideResetOffset:    true,
		RocketmqHome:                os.Getenv("ROCKETMQ_HOME"),
	}
}

// ConfigDir is where the JSON config files live, as Java's
// StorePathConfigHelper puts them.
func (c *BrokerConfig) ConfigDir() string { return filepath.Join(c.StorePathRootDir, "config") }

// BrokerAddr is brokerIP1:listenPort, the address registered with name servers
// and written as store host.
func (c *BrokerConfig) BrokerAddr() string {
	return net.JoinHostPort(c.BrokerIP1, strconv.Itoa(c.ListenPort))
}

// ApplyProperties sets fields from broker.conf keys. Unknown keys are ignored, as
// Java's MixAll.properties2Object does (broker.conf mixes store and netty keys);
// a malformed value of a known key is an error.
func (c *BrokerConfig) ApplyProperties(props map[string]string) error {
	keys := make([]string, 0, len(props))
	for k := range props {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		v := strings.TrimSpace(props[k])
		var err error
		switch k {
		case "brokerName":
			c.BrokerName = v
		case "brokerClusterName":
			c.BrokerClusterName = v
		case "brokerId":
			c.BrokerID, err = strconv.ParseInt(v, 10, 64)
		case "brokerIP1":
			c.BrokerIP1 = v
		case "brokerIP2":
			c.BrokerIP2 = v
		case "listenPort":
			c.ListenPort, err = strconv.Atoi(v)
		case "namesrvAddr":
			c.NamesrvAddr = v
		case "autoCreateTopicEnable":
			c.AutoCreateTopicEnable = parseJavaBool(v)
		case "autoCreateSubscriptionGroup":
			c.AutoCreateSubscriptionGroup = parseJavaBool(v)
		case "clusterTopicEnable":
			c.ClusterTopicEnable = parseJavaBool(v)
		case "brokerTopicEnable":
			c.BrokerTopicEnable = parseJavaBool(v)
		case "defaultTopicQueueNums":
			err = parseInt32(v, &c.DefaultTopicQueueNums)
		case "enablePropertyFilter":
			c.EnablePropertyFilter = parseJavaBool(v)
		case "brokerPermission":
			err = parseInt32(v, &c.BrokerPermission)
		case "registerNameServerPeriod":
			c.RegisterNameServerPeriod, err = strconv.ParseInt(v, 10, 64)
		case "registerBrokerTimeoutMills":
			c.RegisterBrokerTimeoutMills, err = strconv.ParseInt(v, 10, 64)
		case "flushConsumerOffsetInterval":
			c.FlushConsumerOffsetInterval, err = strconv.ParseInt(v, 10, 64)
		case "longPollingEnable":
			c.LongPollingEnable = parseJavaBool(v)
		case "shortPollingTimeMills":
			c.ShortPollingTimeMills, err = strconv.ParseInt(v, 10, 64)
		case "notifyConsumerIdsChangedEnable":
			c.NotifyConsumerIdsChanged = parseJavaBool(v)
		case "rejectTransactionMessage":
			c.RejectTransactionMessage = parseJavaBool(v)
		case "maxMessageSize":
			err = parseInt32(v, &c.MaxMessageSize)
		case "storePathRootDir":
			c.StorePathRootDir = v
		case "msgTraceTopicName":
			c.MsgTraceTopicName = v
		case "traceTopicEnable":
			c.TraceTopicEnable = parseJavaBool(v)
		case "traceOn":
			c.TraceOn = parseJavaBool(v)
		case "consumerFallbehindThreshold":
			c.ConsumerFallbehindThreshold, err = strconv.ParseInt(v, 10, 64)
		case "regionId":
			c.RegionID = v
		case "reviveQueueNum":
			err = parseInt32(v, &c.ReviveQueueNum)
		case "timerWheelEnable":
			c.TimerWheelEnable = parseJavaBool(v)
		case "transactionCheckInterval":
			c.TransactionCheckInterval, err = strconv.ParseInt(v, 10, 64)
		case "transactionTimeOut":
			c.TransactionTimeOut, err = strconv.ParseInt(v, 10, 64)
		case "transactionCheckMax":
			err = parseInt32(v, &c.TransactionCheckMax)
		case "messageDelayLevel":
			c.MessageDelayLevel = v
		case "useServerSideResetOffset":
			c.UseServerSideResetOffset = parseJavaBool(v)
		case "brokerConfigPath":
			c.BrokerConfigPath = v
		case "configBlackList":
			c.ConfigBlackList = v
		case "aclEnable":
			c.AclEnable = parseJavaBool(v)
		case "aclPlainFile", "rocketmq.acl.plain.file":
			c.AclPlainFile = v
		case "rocketmqHome":
			c.RocketmqHome = v
		case "authenticationEnabled":
			c.AuthenticationEnabled = parseJavaBool(v)
		case "authorizationEnabled":
			c.AuthorizationEnabled = parseJavaBool(v)
		case "initAuthenticationUser":
			c.InitAuthenticationUser = v
		case "innerClientAuthenticationCredentials":
			c.InnerClientAuthenticationCredentials = v
		case "authenticationWhitelist":
			c.AuthenticationWhitelist = v
		case "authorizationWhitelist":
			c.AuthorizationWhitelist = v
		case "authenticationProvider", "authenticationMetadataProvider", "authenticationStrategy",
			"authorizationProvider", "authorizationMetadataProvider", "authorizationStrategy":
			if c.AuthProviders == nil {
				c.AuthProviders = map[string]string{}
			}
			c.AuthProviders[k] = v
		case "channelExpiredTimeout":
			c.ChannelExpiredTimeout, err = strconv.ParseInt(v, 10, 64)
		}
		if err != nil {
			return fmt.Errorf("broker config %s=%q: %w", k, v, err)
		}
	}
	return nil
}

// Properties returns the settings under their Java key names (GET_BROKER_CONFIG),
// the broker's own over Others.
func (c *BrokerConfig) Properties() map[string]string {
	b := strconv.FormatBool
	i := func(v int64) string { return strconv.FormatInt(v, 10) }
	props := make(map[string]string, len(c.Others)+40)
	maps.Copy(props, c.Others)
	maps.Copy(props, map[string]string{
		"brokerName": c.BrokerName, "brokerClusterName": c.BrokerClusterName, "brokerId": i(c.BrokerID),
		"brokerIP1": c.BrokerIP1, "brokerIP2": c.BrokerIP2, "listenPort": strconv.Itoa(c.ListenPort),
		"namesrvAddr": c.NamesrvAddr, "autoCreateTopicEnable": b(c.AutoCreateTopicEnable),
		"autoCreateSubscriptionGroup": b(c.AutoCreateSubscriptionGroup), "clusterTopicEnable": b(c.ClusterTopicEnable),
		"brokerTopicEnable": b(c.BrokerTopicEnable), "defaultTopicQueueNums": i(int64(c.DefaultTopicQueueNums)),
		"enablePropertyFilter": b(c.EnablePropertyFilter), "brokerPermission": i(int64(c.BrokerPermission)),
		"registerNameServerPeriod": i(c.RegisterNameServerPeriod), "registerBrokerTimeoutMills": i(c.RegisterBrokerTimeoutMills),
		"flushConsumerOffsetInterval": i(c.FlushConsumerOffsetInterval), "longPollingEnable": b(c.LongPollingEnable),
		"shortPollingTimeMills": i(c.ShortPollingTimeMills), "notifyConsumerIdsChangedEnable": b(c.NotifyConsumerIdsChanged),
		"rejectTransactionMessage": b(c.RejectTransactionMessage), "maxMessageSize": i(int64(c.MaxMessageSize)),
		"storePathRootDir": c.StorePathRootDir, "msgTraceTopicName": c.MsgTraceTopicName,
		"traceTopicEnable": b(c.TraceTopicEnable), "traceOn": b(c.TraceOn), "regionId": c.RegionID,
		"reviveQueueNum": i(int64(c.ReviveQueueNum)), "timerWheelEnable": b(c.TimerWheelEnable),
		"channelExpiredTimeout": i(c.ChannelExpiredTimeout), "messageDelayLevel": c.MessageDelayLevel,
		"transactionCheckInterval": i(c.TransactionCheckInterval), "transactionTimeOut": i(c.TransactionTimeOut),
		"transactionCheckMax":         i(int64(c.TransactionCheckMax)),
		"consumerFallbehindThreshold": i(c.ConsumerFallbehindThreshold),
		"useServerSideResetOffset":    b(c.UseServerSideResetOffset),
		"aclEnable":                   b(c.AclEnable),
		"authenticationEnabled":       b(c.AuthenticationEnabled),
		"authorizationEnabled":        b(c.AuthorizationEnabled),
		"authenticationWhitelist":     c.AuthenticationWhitelist,
		"authorizationWhitelist":      c.AuthorizationWhitelist,
	})
	if c.AclPlainFile != "" {
		props["aclPlainFile"] = c.AclPlainFile
	}
	if c.RocketmqHome != "" {
		props["rocketmqHome"] = c.RocketmqHome
	}
	if c.BrokerConfigPath != "" {
		props["brokerConfigPath"] = c.BrokerConfigPath
	}
	if c.ConfigBlackList != "" {
		props["configBlackList"] = c.ConfigBlackList
	}
	return props
}

// parseJavaBool is Boolean.parseBoolean: only "true" (any case) is true.
func parseJavaBool(s string) bool { return strings.EqualFold(strings.TrimSpace(s), "true") }

func parseInt32(s string, dst *int32) error {
	v, err := strconv.ParseInt(s, 10, 32)
	if err != nil {
		return err
	}
	*dst = int32(v)
	return nil
}

// localIPv4 picks the first non-loopback, non-link-local IPv4 address, else
// 127.0.0.1.
func localIPv4() string {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return "127.0.0.1"
	}
	for _, a := range addrs {
		ipn, ok := a.(*net.IPNet)
		if !ok {
			continue
		}
		ip := ipn.IP.To4()
		if ip == nil || ip.IsLoopback() || ip.IsLinkLocalUnicast() {
			continue
		}
		return ip.String()
	}
	return "127.0.0.1"
}
