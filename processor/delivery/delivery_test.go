package delivery

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestParseDelayLevels(t *testing.T) {
	l, err := ParseDelayLevels(DefaultMessageDelayLevel)
	require.NoError(t, err)
	require.Len(t, l, 18)
	require.Equal(t, time.Second, l[0])
	require.Equal(t, 2*time.Hour, l[17])
	_, err = ParseDelayLevels("1x")
	require.Error(t, err)
}

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
