package pop

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// A wildcard group's POP drops a lite topic it found empty only if no
// message marked it again meanwhile; the last client takes the group along.
func TestLiteWildMarks(t *testing.T) {
	l := newLiteSubs()
	newWild, err := l.addComplete("c1", "G", "P", []string{"%LMQ%$P$ignored"}, true, 100, nil)
	require.NoError(t, err)
	require.True(t, newWild)
	newWild, err = l.addComplete("c2", "G", "P", nil, true, 100, nil)
	require.NoError(t, err)
	require.False(t, newWild, "the group is known already")
	l.markDirty("P", "", []string{"%LMQ%$P$a", "%LMQ%$P$b"})
	l.markDirty("Q", "", []string{"%LMQ%$Q$a"}) // no wildcard group of Q

	qs, marks := l.queuesOf("c1", "G", "P")
	require.ElementsMatch(t, []string{"%LMQ%$P$a", "%LMQ%$P$b"}, qs)
	l.markDirty("P", "G", []string{"%LMQ%$P$a"}) // a message came while the POP read
	l.settleWild("P", "G", qs, marks)
	qs, _ = l.queuesOf("c2", "G", "P")
	require.Equal(t, []string{"%LMQ%$P$a"}, qs)

	l.forget(func(q string) bool { return q == "%LMQ%$P$a" })
	qs, _ = l.queuesOf("c1", "G", "P")
	require.Empty(t, qs)

	l.removeComplete("c1")
	require.EqualValues(t, 1, l.wilds.Load())
	l.removeComplete("c2")
	require.Zero(t, l.wilds.Load())
	require.Empty(t, l.wild)
	require.Zero(t, l.active)
}
