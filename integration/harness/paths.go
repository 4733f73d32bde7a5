package harness

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"time"
)

// DepsCommand is what a developer runs to get the Java side; tests that need it skip naming it.
const DepsCommand = "make integration-deps"

var rootOnce = sync.OnceValues(func() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("harness: working directory: %w", err)
	}
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			if _, err := os.Stat(filepath.Join(d, "integration")); err == nil {
				return d, nil
			}
		}
		if filepath.Dir(d) == d {
			return "", fmt.Errorf("harness: no go.mod with an integration/ folder above %s", dir)
		}
	}
})

// RepoRoot is the module root (the folder holding go.mod and integration/).
func RepoRoot(tb TB) string {
	tb.Helper()
	root, err := rootOnce()
	if err != nil {
		tb.Fatalf("%v", err)
	}
	return root
}

// JavaTargetEnv names another Maven output folder than integration/java/target: make integration-rocketmq55
// builds the Java side with other RocketMQ 5 jars into one of its own and points the tests at it.
const JavaTargetEnv = "RMQD_JAVA_TARGET"

// LibDir is integration/java/target/lib/<name>, the classpath folder Maven fills:
// "apache" (namesrv + broker), "mqadmin", "client5", "client4".
func LibDir(tb TB, name string) string {
	tb.Helper()
	target := filepath.Join(RepoRoot(tb), "integration", "java", "target")
	if d := os.Getenv(JavaTargetEnv); d != "" {
		target = d
		if !filepath.IsAbs(d) {
			target = filepath.Join(RepoRoot(tb), d)
		}
	}
	return filepath.Join(target, "lib", name)
}

// RequireJars skips the test, naming DepsCommand, unless the Java classpath folders exist.
// It is the only skip the integration tests allow themselves.
func RequireJars(tb TB, names ...string) {
	tb.Helper()
	for _, n := range names {
		if m, _ := filepath.Glob(filepath.Join(LibDir(tb, n), marker(n))); len(m) == 0 {
			tb.Skipf("Java side missing (no %s in %s); run `%s` first (needs Maven Central once, offline after)",
				marker(n), LibDir(tb, n), DepsCommand)
		}
	}
}

// marker is one jar (a glob pattern) that must be in a lib folder for it to be usable.
func marker(lib string) string {
	switch lib {
	case "apache":
		return "rmqd-it-apache.jar"
	case "client4", "client5":
		return "rmqd-runner.jar"
	case "mqadmin":
		return "rmqd-it-mqadmin.jar"
	case "proxy":
		return "rocketmq-proxy-*.jar" // any version: the build may pin a newer one (docs/compatibility.md)
	case "grpcclient":
		return "rmqd-grpc-runner.jar"
	case "grpclite":
		return "rmqd-grpc-lite.jar"
	}
	return "."
}

var unsafeChars = regexp.MustCompile(`[^A-Za-z0-9._=/-]+`)

// LogDir is integration/.logs/<test name>/ (subtests nest as folders). The first time a top-level test asks in
// this process, its whole folder is emptied, so what is there belongs to the latest run of that test.
// The folder is git-ignored and kept after the run.
func LogDir(tb TB) string {
	tb.Helper()
	name := unsafeChars.ReplaceAllString(tb.Name(), "_")
	base := filepath.Join(RepoRoot(tb), "integration", ".logs")
	top, _, _ := strings.Cut(name, "/")
	logDirsMu.Lock()
	if !logDirsSeen[top] {
		logDirsSeen[top] = true
		_ = os.RemoveAll(filepath.Join(base, top))
	}
	if !logDirsTimed[name] {
		logDirsTimed[name] = true
		start := time.Now()
		tb.Cleanup(func() { recordDuration(base, tb.Name(), time.Since(start)) })
	}
	logDirsMu.Unlock()
	dir := filepath.Join(base, filepath.FromSlash(name))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		tb.Fatalf("harness: log dir: %v", err)
	}
	return dir
}

var (
	logDirsMu    sync.Mutex
	logDirsSeen  = map[string]bool{}
	logDirsTimed = map[string]bool{}
)

// recordDuration appends how long a test (or subtest) ran from its first harness use to
// integration/.logs/durations.txt, so that the slowest ones can be listed after a run
// (make integration-test prints them: the 40-minute bound of make test is spent there).
func recordDuration(base, name string, d time.Duration) {
	f, err := os.OpenFile(filepath.Join(base, "durations.txt"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return
	}
	defer f.Close()
	fmt.Fprintf(f, "%7.1f %s\n", d.Seconds(), name)
}
