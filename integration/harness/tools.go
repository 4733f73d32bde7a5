package harness

import (
	"os"
	"path/filepath"
)

// ToolsDir is integration/.tools, where make targets put the ecosystem's programs built from source for
// the tests that drive them (rocketmq-exporter, rocketmq-dashboard); git-ignored.
func ToolsDir(tb TB) string {
	tb.Helper()
	return filepath.Join(RepoRoot(tb), "integration", ".tools")
}

// RequireTool skips the test unless path exists, naming the make target that builds it. Tools fetched from
// outside the project's registries (GitHub) are optional: their tests run under their own make target.
func RequireTool(tb TB, path, makeTarget string) {
	tb.Helper()
	if _, err := os.Stat(path); err != nil {
		tb.Skipf("%s missing (%v); run `make %s`, which builds it", path, err, makeTarget)
	}
}

// StartTool runs argv as a server of the test (a monitoring tool pointed at a target): output to
// LogDir(tb)/name.log, working directory LogDir(tb), its process group stopped at cleanup.
func StartTool(tb TB, name string, argv ...string) *Proc {
	tb.Helper()
	dir := LogDir(tb)
	return startProc(tb, name, filepath.Join(dir, name+".log"), dir, nil, argv...)
}
