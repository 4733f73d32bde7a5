package store

import (
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

func TestResidentAsksTheKernel(t *testing.T) {
	m, err := unix.Mmap(-1, 0, 8*osPageSize, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	require.NoError(t, err)
	defer func() { _ = unix.Munmap(m) }()
	require.False(t, resident(m, m[osPageSize+10:osPageSize+20]), "a page never touched is not resident")
	m[osPageSize] = 1
	require.True(t, resident(m, m[osPageSize+10:osPageSize+20]), "an unaligned part of a touched page")
	require.False(t, resident(m, m[osPageSize+10:2*osPageSize+1]), "a part reaching into an untouched page")
	m[2*osPageSize] = 1
	require.True(t, resident(m, m[osPageSize:3*osPageSize]))
	require.True(t, resident(m, m[5:5]), "nothing to read")
}

func TestPullResident(t *testing.T) {
	s := openStore(t, testConfig(t.TempDir()))
	// Shut down before the directory goes: the flushers may still be writing.
	t.Cleanup(func() { require.NoError(t, s.Shutdown()) })
	putN(t, s, "P", 2, 200)
	waitDispatched(t, s, "P", 1, 100)
	require.True(t, s.PullResident("P", 0, 0, 32), "just written: in the page cache")
	require.True(t, s.PullResident("P", 0, 90, 32), "the tail of the queue")
	require.True(t, s.PullResident("P", 0, 100, 32), "caught up: reads nothing")
	require.True(t, s.PullResident("P", 0, 5000, 32), "past the end: reads nothing")
	require.True(t, s.PullResident("nope", 0, 0, 32), "unknown queue: reads nothing")
	// It runs on the event loop for every pull.
	require.Zero(t, testing.AllocsPerRun(100, func() { s.PullResident("P", 0, 0, 32) }))
}
