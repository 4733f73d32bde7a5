package store

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// autoMessageVersionOnTopicLen=false keeps every record V1: a topic V1's
// one-byte length cannot carry is refused, where Java would write a record
// with a truncated length that no reader decodes.
func TestV1OnlyRefusesLongTopic(t *testing.T) {
	long, short := strings.Repeat("L", 128), strings.Repeat("S", 127)
	for _, auto := range []bool{true, false} {
		cfg := testConfig(t.TempDir())
		cfg.AutoMessageVersionOnTopicLen = auto
		s := openStore(t, cfg)
		ctx := context.Background()
		require.Equal(t, PutOK, s.PutMessage(ctx, newMsg(short, 0, "x", nil)).Status, "auto=%v", auto)
		want := PutOK
		if !auto {
			want = PutMessageIllegal
		}
		require.Equal(t, want, s.PutMessage(ctx, newMsg(long, 0, "x", nil)).Status, "auto=%v", auto)
		require.NoError(t, s.Shutdown())
	}
}
