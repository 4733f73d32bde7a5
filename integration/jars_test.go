package integration

import (
	"fmt"
	"path/filepath"
	"strings"

	"rmqd/integration/harness"
)

// libAtLeast reports whether the Java classpath folder lib holds artifact at version major.minor or newer:
// make integration-rocketmq55 puts newer RocketMQ jars there, and the tests of what 5.4 and 5.5 added read it.
func libAtLeast(tb harness.TB, lib, artifact string, major, minor int) bool {
	matches, _ := filepath.Glob(filepath.Join(harness.LibDir(tb, lib), artifact+"-*.jar"))
	for _, m := range matches {
		v := strings.TrimSuffix(strings.TrimPrefix(filepath.Base(m), artifact+"-"), ".jar")
		var ma, mi int
		if _, err := fmt.Sscanf(v, "%d.%d", &ma, &mi); err == nil && (ma > major || ma == major && mi >= minor) {
			return true
		}
	}
	return false
}
