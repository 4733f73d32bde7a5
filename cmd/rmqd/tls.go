package main

import (
	"crypto/tls"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"strings"

	"rmqd/remoting"
)

// tlsSettings reads Java's tls.* keys: those of the -c file (where a Java
// broker has JVM system properties), overridden by the tls.config.file
// properties file when it exists, as TlsHelper does (default
// /etc/rocketmq/tls.properties).
func tlsSettings(props map[string]string) (remoting.TLSSettings, error) {
	merged := make(map[string]string)
	for k, v := range props {
		if strings.HasPrefix(k, "tls.") {
			merged[k] = v
		}
	}
	path := remoting.DefaultTLSConfigFile
	if p := strings.TrimSpace(props[remoting.KeyTLSConfigFile]); p != "" {
		path = p
	}
	fileProps, err := loadProperties(path)
	switch {
	case err == nil:
		maps.Copy(merged, fileProps)
	case errors.Is(err, fs.ErrNotExist):
		// Java skips a missing file silently.
	default:
		return remoting.TLSSettings{}, fmt.Errorf("%s: %w", remoting.KeyTLSConfigFile, err)
	}
	return remoting.TLSSettingsFromProperties(merged)
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
