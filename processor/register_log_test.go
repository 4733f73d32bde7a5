package processor

import (
	"bytes"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestRegistrationLogsTransitions: one line when a name server's registration
// state changes, none while it stays the same.
func TestRegistrationLogsTransitions(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(slog.NewTextHandler(&buf, nil))
	var r registrationState
	down := errors.New("connection refused")
	for _, err := range []error{down, down, nil, nil, nil, down, nil} {
		r.note(log, "127.0.0.1:9876", err)
	}
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	require.Len(t, lines, 4, buf.String())
	require.Contains(t, lines[0], "registration with name server failed")
	require.Contains(t, lines[1], `msg="registered with name server" namesrv=127.0.0.1:9876`)
	require.Contains(t, lines[2], "failed")
	require.Contains(t, lines[3], "registered with name server")
}
