package main

import (
	"crypto/tls"
	"errors"
	"fmt"
	"io/fs"

	"rmqd/compat"
	"rmqd/remoting"
)

// defaultTLSConfigFile is where Java looks for tls.config.file.
const defaultTLSConfigFile = "/etc/rocketmq/tls.properties"

// tlsConfig is Java's TlsSystemConfig: JVM system properties there, broker.conf
// keys or a tls.config.file properties file here. Defaults are Java's: server
// mode permissive, test mode on (a throwaway self-signed certificate, clients
// that trust any server).
type tlsConfig struct {
	ServerMode           string `prop:"tls.server.mode"`
	ConfigFile           string `prop:"tls.config.file"`
	TestMode             bool   `prop:"tls.test.mode.enable"`
	ServerNeedClientAuth string `prop:"tls.server.need.client.auth"`
	ServerCertPath       string `prop:"tls.server.certPath,omitempty"`
	ServerKeyPath        string `prop:"tls.server.keyPath,omitempty"`
	ServerKeyPassword    string `prop:"tls.server.keyPassword,secret"`
	ServerAuthClient     bool   `prop:"tls.server.authClient"`
	ServerTrustCertPath  string `prop:"tls.server.trustCertPath,omitempty"`

	ClientEnable        bool   `prop:"tls.enable,useTLS"` // useTLS: NettyClientConfig's key for the same switch
	ClientCertPath      string `prop:"tls.client.certPath,omitempty"`
	ClientKeyPath       string `prop:"tls.client.keyPath,omitempty"`
	ClientKeyPassword   string `prop:"tls.client.keyPassword,secret"`
	ClientAuthServer    bool   `prop:"tls.client.authServer"`
	ClientTrustCertPath string `prop:"tls.client.trustCertPath,omitempty"`
}

func defaultTLSConfig() tlsConfig {
	return tlsConfig{ServerMode: "permissive", ConfigFile: defaultTLSConfigFile, TestMode: true, ServerNeedClientAuth: "none"}
}

// settings hands remoting the plain settings; an unknown need.client.auth
// value means none there, as in Java.
func (c tlsConfig) settings() (remoting.TLSSettings, error) {
	mode, err := remoting.ParseTLSMode(c.ServerMode)
	if err != nil {
		return remoting.TLSSettings{}, err
	}
	return remoting.TLSSettings{
		ServerMode: mode, TestMode: c.TestMode, ServerNeedClientAuth: c.ServerNeedClientAuth,
		ServerCertPath: c.ServerCertPath, ServerKeyPath: c.ServerKeyPath, ServerKeyPassword: c.ServerKeyPassword,
		ServerAuthClient: c.ServerAuthClient, ServerTrustCertPath: c.ServerTrustCertPath,
		ClientEnable: c.ClientEnable, ClientCertPath: c.ClientCertPath, ClientKeyPath: c.ClientKeyPath,
		ClientKeyPassword: c.ClientKeyPassword, ClientAuthServer: c.ClientAuthServer,
		ClientTrustCertPath: c.ClientTrustCertPath,
	}, nil
}

// tlsSettings reads Java's tls.* keys: those of the -c file (where a Java
// broker has JVM system properties), overridden by the tls.config.file
// properties file when it exists, as TlsHelper does.
func tlsSettings(props map[string]string) (remoting.TLSSettings, error) {
	c := defaultTLSConfig()
	if _, err := compat.BindConfig(props, &c); err != nil {
		return remoting.TLSSettings{}, err
	}
	fileProps, err := loadProperties(c.ConfigFile)
	switch {
	case err == nil:
		// The binder sets only the keys present, so the file's keys win.
		if _, err := compat.BindConfig(fileProps, &c); err != nil {
			return remoting.TLSSettings{}, fmt.Errorf("tls.config.file %s: %w", c.ConfigFile, err)
		}
	case errors.Is(err, fs.ErrNotExist):
		// Java skips a missing file silently.
	default:
		return remoting.TLSSettings{}, fmt.Errorf("tls.config.file: %w", err)
	}
	return c.settings()
}

// applyServerTLS sets a server's TLS mode and certificate from st.
func applyServerTLS(st remoting.TLSSettings, cfg *remoting.ServerConfig) error {
	tcfg, err := st.ServerConfig()
	if err != nil {
		return err
	}
	cfg.TLSMode, cfg.TLS = st.ServerMode, tcfg
	return nil
}

// clientTLS is the TLS config of the broker's own connections (to the name
// server), nil unless tls.enable=true.
func clientTLS(st remoting.TLSSettings) (*tls.Config, error) {
	return st.ClientConfig()
}
