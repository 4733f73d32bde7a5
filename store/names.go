package store

import (
	"errors"
	"fmt"
)

// maxTopicDirLen is the longest topic the store makes a directory for: NAME_MAX
// of the usual file systems.
const maxTopicDirLen = 255

// ErrUnsafeTopic is returned (or logged) when a topic cannot be one directory
// name under consumequeue/.
var ErrUnsafeTopic = errors.New("store: topic is not a single safe path element")

// checkTopicDir is the store's own check, whatever the broker in front of it
// validated: a topic becomes consumequeue/<topic>, so it must be one path
// element that stays there (not empty, ".", "..", no '/', '\\' or NUL, at most
// 255 bytes). The broker's names are narrower still (^[%|a-zA-Z0-9_-]+$).
func checkTopicDir(topic string) error {
	if !safeTopicDir(topic) {
		return fmt.Errorf("%w: %.300q", ErrUnsafeTopic, topic)
	}
	return nil
}

// safeTopicDir is checkTopicDir without the error (hot paths: no allocation).
func safeTopicDir(topic string) bool {
	if topic == "" || topic == "." || topic == ".." || len(topic) > maxTopicDirLen {
		return false
	}
	for i := 0; i < len(topic); i++ {
		switch topic[i] {
		case '/', '\\', 0:
			return false
		}
	}
	return true
}
