package delivery

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestDoneSetCommitPoint(t *testing.T) {
	var d doneSet
	d.reset(10)
	d.grow(300)
	d.mark(11)
	require.EqualValues(t, 10, d.base)
	d.mark(10)
	require.EqualValues(t, 12, d.base)
	for off := int64(299); off >= 12; off-- {
		d.mark(off)
	}
	require.EqualValues(t, 300, d.base)
	d.grow(301)
	require.EqualValues(t, 300, d.base)
	d.mark(300)
	require.EqualValues(t, 301, d.base)
	d.mark(5) // below base: ignored
	d.mark(400)
	require.EqualValues(t, 301, d.base)
}
