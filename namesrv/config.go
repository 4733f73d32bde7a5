// Package namesrv is rmqd's name server: the route table brokers register into
// and clients read topic routes from, its request processor (the codes of Java's
// DefaultRequestProcessor and ClientRequestProcessor), the KV config store and the
// broker liveness scan.
package namesrv

import (
	"fmt"
	"os"
	"path/filepath"
	"rmqd/compat"
	"strings"
	"time"
)

// Config is the name server's configuration under the key names of Java's
// NamesrvConfig (and of the NettyServerConfig keys the name server honours), so a
// namesrv.conf written for Apache RocketMQ applies unchanged.
type Config struct {
	RocketmqHome                      string `prop:"rocketmqHome"`
	KvConfigPath                      string `prop:"kvConfigPath"`    // default ~/namesrv/kvConfig.json
	ConfigStorePath                   string `prop:"configStorePath"` // where UPDATE_NAMESRV_CONFIG persists
	ProductEnvName                    string `prop:"productEnvName"`
	ClusterTest                       bool   `prop:"clusterTest"`        // (accepted, not implemented)
	OrderMessageEnable                bool   `prop:"orderMessageEnable"` // add orderTopicConf to routes
	ReturnOrderTopicConfigToBroker    bool   `prop:"returnOrderTopicConfigToBroker"`
	ClientRequestThreadPoolNums       int32  `prop:"clientRequestThreadPoolNums"` // workers for GET_ROUTEINFO_BY_TOPIC
	DefaultThreadPoolNums             int32  `prop:"defaultThreadPoolNums"`       // workers for the other codes
	ClientRequestThreadPoolQueueCap   int32  `prop:"clientRequestThreadPoolQueueCapacity"`
	DefaultThreadPoolQueueCapacity    int32  `prop:"defaultThreadPoolQueueCapacity"`
	ScanNotActiveBrokerInterval       int64  `prop:"scanNotActiveBrokerInterval"`   // ms
	UnRegisterBrokerQueueCapacity     int32  `prop:"unRegisterBrokerQueueCapacity"` // (unregistration is synchronous here)
	SupportActingMaster               bool   `prop:"supportActingMaster"`
	EnableAllTopicList                bool   `prop:"enableAllTopicList"`
	EnableTopicList                   bool   `prop:"enableTopicList"`
	NotifyMinBrokerIDChanged          bool   `prop:"notifyMinBrokerIdChanged"`  // (accepted, not implemented)
	EnableControllerInNamesrv         bool   `prop:"enableControllerInNamesrv"` // true is refused (compat.RefusedSetting)
	NeedWaitForService                bool   `prop:"needWaitForService"`
	WaitSecondsForService             int32  `prop:"waitSecondsForService"`
	DeleteTopicWithBrokerRegistration bool   `prop:"deleteTopicWithBrokerRegistration"`
	ConfigBlackList                   string `prop:"configBlackList"` // keys UPDATE_NAMESRV_CONFIG refuses

	ListenPort                      int32  `prop:"listenPort"`                      // NettyServerConfig; default 9876
	BindAddress                     string `prop:"bindAddress"`                     // NettyServerConfig; default 0.0.0.0
	ServerChannelMaxIdleTimeSeconds int32  `prop:"serverChannelMaxIdleTimeSeconds"` // NettyServerConfig

	// NetProperties are the server's NettyServerConfig keys rmqd binds outside
	// this struct (water marks, selector threads), with the values in force:
	// Java's GET_NAMESRV_CONFIG shows them beside NamesrvConfig. Not a property.
	NetProperties map[string]string

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

// ApplyProperties sets the fields named by props (Java key names) through the
// one config binder (compat.BindConfig). Keys that are not the name server's are
// returned for the caller to warn about (a combined config file may hold broker
// keys too); numbers that do not parse are reported together. A setting asking
// for a feature rmqd lacks (compat.RefusedSetting) is refused before anything
// is bound.
func (c *Config) ApplyProperties(props map[string]string) (unknown []string, err error) {
	if err := compat.RefusedSetting(props); err != nil {
		return nil, fmt.Errorf("namesrv config %w", err)
	}
	unknown, err = compat.BindConfig(props, c)
	if err != nil {
		err = fmt.Errorf("namesrv config: %w", err)
	}
	return unknown, err
}

// Properties returns every property with its current value: the content of
// GET_NAMESRV_CONFIG and of the persisted config file.
func (c *Config) Properties() map[string]string {
	return compat.ConfigPropertiesWith(c, c.NetProperties)
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
