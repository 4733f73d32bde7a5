package main

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestPprofStaysOnLoopback(t *testing.T) {
	for _, a := range []string{"127.0.0.1:6060", "[::1]:6060", "localhost:6060"} {
		require.NoError(t, checkPprofAddr(a, false), a)
	}
	for _, a := range []string{":6060", "0.0.0.0:6060", "10.0.0.5:6060", "example.com:6060"} {
		require.Error(t, checkPprofAddr(a, false), a)
		require.NoError(t, checkPprofAddr(a, true), a)
	}
	require.Error(t, checkPprofAddr("6060", true))
}
