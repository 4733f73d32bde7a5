// Package namesrv is rmqd's name server: the route table brokers register into
// and clients read topic routes from, its request processor (the codes of Java's
// DefaultRequestProcessor and ClientRequestProcessor), the KV config store and the
// broker liveness scan.
package namesrv

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Config is the name server's configuration under the key names of Java's
// NamesrvConfig (and of the NettyServerConfig keys the name server honours), so a
// namesrv.conf written for Apache RocketMQ applies unchanged.
type Config struct {
	RocketmqHome                      string // rocketmqHome
	KvConfigPath                      string // kvConfigPath, default ~/namesrv/kvConfig.json
	ConfigStorePath                   string // configStorePath: where UPDATE_NAMESRV_CONFIG persists
	ProductEnvName                    string // productEnvName
	ClusterTest                       bool   // clusterTest (accepted, not implemented)
	OrderMessageEnable                bool   // orderMessageEnable: add orderTopicConf to routes
	ReturnOrderTopicConfigToBroker    bool   // returnOrderTopicConfigToBroker
	ClientRequestThreadPoolNums       int32  // clientRequestThreadPoolNums: workers for GET_ROUTEINFO_BY_TOPIC
	DefaultThreadPoolNums             int32  // defaultThreadPoolNums: workers for the other codes
	ClientRequestThreadPoolQueueCap   int32  // clientRequestThreadPoolQueueCapacity
	DefaultThreadPoolQueueCapacity    int32  // defaultThreadPoolQueueCapacity
	ScanNotActiveBrokerInterval       int64  // scanNotActiveBrokerInterval, ms
	UnRegisterBrokerQueueCapacity     int32  // unRegisterBrokerQueueCapacity (unregistration is synchronous here)
	SupportActingMaster               bool   // supportActingMaster
	EnableAllTopicList                bool   // enableAllTopicList
	EnableTopicList                   bool   // enableTopicList
	NotifyMinBrokerIDChanged          bool   // notifyMinBrokerIdChanged (accepted, not implemented)
	EnableControllerInNamesrv         bool   // enableControllerInNamesrv (accepted, not implemented)
	NeedWaitForService                bool   // needWaitForService
	WaitSecondsForService             int32  // waitSecondsForService
	DeleteTopicWithBrokerRegistration bool   // deleteTopicWithBrokerRegistration
	ConfigBlackList                   string // configBlackList: keys UPDATE_NAMESRV_CONFIG refuses

	ListenPort                      int32  // listenPort (NettyServerConfig), default 9876
	BindAddress                     string // bindAddress (NettyServerConfig), default 0.0.0.0
	ServerChannelMaxIdleTimeSeconds int32  // serverChannelMaxIdleTimeSeconds (NettyServerConfig)

	// Now is the clock of liveness and service-wait checks; nil means time.Now.
	// Tests inject a fake one. Not a property.
	Now func() time.Time
}

// DefaultConfig returns Java's defaults. Paths under the home directory follow
// System.getProperty("user.home").
func DefaultConfig() Config {
	home, err := os.UserHomeDir()
	if err != nil {
		home = "."
	}
	return Config{
		RocketmqHome:                    os.Getenv("ROCKETMQ_HOME"),
		KvConfigPath:                    filepath.Join(home, "namesrv", "kvConfig.json"),
		ConfigStorePath:                 filepath.Join(home, "namesrv", "namesrv.properties"),
		ProductEnvName:                  "center",
		ReturnOrderTopicConfigToBroker:  true,
		ClientRequestThreadPoolNums:     8,
		DefaultThreadPoolNums:           16,
		ClientRequestThreadPoolQueueCap: 50000,
		DefaultThreadPoolQueueCapacity:  10000,
		ScanNotActiveBrokerInterval:     5000,
		UnRegisterBrokerQueueCapacity:   3000,
		EnableAllTopicList:              true,
		EnableTopicList:                 true,
		WaitSecondsForService:           45,
		ConfigBlackList:                 "configBlackList;configStorePath;kvConfigPath",
		ListenPort:                      9876,
		BindAddress:                     "0.0.0.0",
		ServerChannelMaxIdleTimeSeconds: 120,
	}
}

// configField binds a property key to a Config field.
type configField struct {
	key string
	get func(*Config) string
	set func(*Config, string) error
}

func strField(key string, p func(*Config) *string) configField {
	return configField{key,
		func(c *Config) string { return *p(c) },
		func(c *Config, v string) error { *p(c) = v; return nil }}
}

// boolField parses like Boolean.parseBoolean: anything but "true" is false.
func boolField(key string, p func(*Config) *bool) configField {
	return configField{key,
		func(c *Config) string { return strconv.FormatBool(*p(c)) },
		func(c *Config, v string) error { *p(c) = strings.EqualFold(v, "true"); return nil }}
}

func int32Field(key string, p func(*Config) *int32) configField {
	return configField{key,
		func(c *Config) string { return strconv.FormatInt(int64(*p(c)), 10) },
		func(c *Config, v string) error {
			n, err := strconv.ParseInt(v, 10, 32)
			if err != nil {
				return err
			}
			*p(c) = int32(n)
			return nil
		}}
}

func int64Field(key string, p func(*Config) *int64) configField {
	return configField{key,
		func(c *Config) string { return strconv.FormatInt(*p(c), 10) },
		func(c *Config, v string) error {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				return err
			}
			*p(c) = n
			return nil
		}}
}

var configFields = []configField{
	strField("rocketmqHome", func(c *Config) *string { return &c.RocketmqHome }),
	strField("kvConfigPath", func(c *Config) *string { return &c.KvConfigPath }),
	strField("configStorePath", func(c *Config) *string { return &c.ConfigStorePath }),
	strField("productEnvName", func(c *Config) *string { return &c.ProductEnvName }),
	boolField("clusterTest", func(c *Config) *bool { return &c.ClusterTest }),
	boolField("orderMessageEnable", func(c *Config) *bool { return &c.OrderMessageEnable }),
	boolField("returnOrderTopicConfigToBroker", func(c *Config) *bool { return &c.ReturnOrderTopicConfigToBroker }),
	int32Field("clientRequestThreadPoolNums", func(c *Config) *int32 { return &c.ClientRequestThreadPoolNums }),
	int32Field("defaultThreadPoolNums", func(c *Config) *int32 { return &c.DefaultThreadPoolNums }),
	int32Field("clientRequestThreadPoolQueueCapacity", func(c *Config) *int32 { return &c.ClientRequestThreadPoolQueueCap }),
	int32Field("defaultThreadPoolQueueCapacity", func(c *Config) *int32 { return &c.DefaultThreadPoolQueueCapacity }),
	int64Field("scanNotActiveBrokerInterval", func(c *Config) *int64 { return &c.ScanNotActiveBrokerInterval }),
	int32Field("unRegisterBrokerQueueCapacity", func(c *Config) *int32 { return &c.UnRegisterBrokerQueueCapacity }),
	boolField("supportActingMaster", func(c *Config) *bool { return &c.SupportActingMaster }),
	boolField("enableAllTopicList", func(c *Config) *bool { return &c.EnableAllTopicList }),
	boolField("enableTopicList", func(c *Config) *bool { return &c.EnableTopicList }),
	boolField("notifyMinBrokerIdChanged", func(c *Config) *bool { return &c.NotifyMinBrokerIDChanged }),
	boolField("enableControllerInNamesrv", func(c *Config) *bool { return &c.EnableControllerInNamesrv }),
	boolField("needWaitForService", func(c *Config) *bool { return &c.NeedWaitForService }),
	int32Field("waitSecondsForService", func(c *Config) *int32 { return &c.WaitSecondsForService }),
	boolField("deleteTopicWithBrokerRegistration", func(c *Config) *bool { return &c.DeleteTopicWithBrokerRegistration }),
	strField("configBlackList", func(c *Config) *string { return &c.ConfigBlackList }),
	int32Field("listenPort", func(c *Config) *int32 { return &c.ListenPort }),
	strField("bindAddress", func(c *Config) *string { return &c.BindAddress }),
	int32Field("serverChannelMaxIdleTimeSeconds", func(c *Config) *int32 { return &c.ServerChannelMaxIdleTimeSeconds }),
}

// ApplyProperties sets the fields named by props (Java key names; values trimmed).
// Unknown keys are ignored, as Java's properties2Object ignores them (a combined
// config file may hold broker keys too). Booleans parse like Boolean.parseBoolean.
// Every valid key is applied; numbers that do not parse are reported together.
func (c *Config) ApplyProperties(props map[string]string) error {
	var errs []error
	for _, f := range configFields {
		v, ok := props[f.key]
		if !ok {
			continue
		}
		if err := f.set(c, strings.TrimSpace(v)); err != nil {
			errs = append(errs, fmt.Errorf("namesrv config %s=%q: %w", f.key, v, err))
		}
	}
	return errors.Join(errs...)
}

// Properties returns every property with its current value: the content of
// GET_NAMESRV_CONFIG and of the persisted config file.
func (c *Config) Properties() map[string]string {
	m := make(map[string]string, len(configFields))
	for _, f := range configFields {
		m[f.key] = f.get(c)
	}
	return m
}

// blackListed returns the first key of props that UPDATE_NAMESRV_CONFIG must
// refuse: the configured list plus the four keys Java always refuses.
func (c *Config) blackListed(props map[string]string) (string, bool) {
	fixed := []string{"configBlackList", "configStorePath", "kvConfigPath", "rocketmqHome"}
	for _, k := range append(fixed, strings.Split(c.ConfigBlackList, ";")...) {
		if _, ok := props[k]; ok && k != "" {
			return k, true
		}
	}
	return "", false
}

func (c *Config) now() time.Time {
	if c.Now != nil {
		return c.Now()
	}
	return time.Now()
}
