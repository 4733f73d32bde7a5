package store

import (
	"context"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"
)

// Topics handed to PutMessage may alias a request buffer that is reused once the
// put returns. The offset table must not keep such a string: a later put to the
// same queue must not replace the table's key with the caller's.
func TestQueueOffsetTableOwnsTopicStrings(t *testing.T) {
	s := openStore(t, testConfig(t.TempDir()))
	defer s.Shutdown()
	buf := []byte("Aliased")
	aliased := unsafe.String(&buf[0], len(buf))
	for i := 0; i < 3; i++ {
		r := s.PutMessage(context.Background(), newMsg(aliased, 0, "x", nil))
		require.Equal(t, PutOK, r.Status)
		require.Equal(t, int64(i), r.QueueOffset)
	}
	copy(buf, "Garbage") // the request buffer is reused for another request
	r := s.PutMessage(context.Background(), newMsg("Aliased", 0, "x", nil))
	require.Equal(t, PutOK, r.Status)
	require.Equal(t, int64(3), r.QueueOffset, "the queue continued where it was")
}
