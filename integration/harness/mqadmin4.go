package harness

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// TryMqadmin4 runs mqadmin 4.9.7 (rocketmq-tools 4.9.7 in lib mqadmin4, which still has the ACL 1.0
// commands) against target with rocketmq.home.dir = home: 4.9.x needs home/conf/logback_tools.xml, and signs
// with the accessKey/secretKey of home/conf/tools.yml when that file exists (WriteMqadmin4Home writes both).
// It returns stdout, and an error when the JVM failed or mqadmin reported a failed command.
func TryMqadmin4(tb TB, target *Target, home string, args ...string) (string, error) {
	tb.Helper()
	RequireJars(tb, "mqadmin4")
	argv := append([]string{"-Drocketmq.home.dir=" + home, "rmqd.it.mqadmin.Admin"}, args...)
	if target != nil && !hasFlag(args, "-n") {
		argv = append(argv, "-n", target.NamesrvAddr)
	}
	sub := "help"
	if len(args) > 0 {
		sub = args[0]
	}
	name := fmt.Sprintf("mqadmin4-%02d-%s", javaSeq.Add(1), sub)
	stdout, logPath, err := runJVM(tb, name, filepath.Join(LibDir(tb, "mqadmin4"), "*"), JavaTimeout, argv)
	removeBodyFiles(stdout)
	if err != nil {
		return string(stdout), fmt.Errorf("mqadmin4 %s: %w; stderr %s:\n%s", strings.Join(args, " "), err, logPath, Tail(logPath, 20))
	}
	stderr, _ := os.ReadFile(logPath)
	for _, bad := range []string{"Exception", "command failed", "sub command " + sub + " not exist"} {
		if bytes.Contains(stderr, []byte(bad)) || bytes.Contains(stdout, []byte(bad)) {
			return string(stdout), fmt.Errorf("mqadmin4 %s failed (%q); stdout:\n%s\nstderr %s:\n%s",
				strings.Join(args, " "), bad, stdout, logPath, Tail(logPath, 20))
		}
	}
	return string(stdout), nil
}

// WriteMqadmin4Home makes a rocketmq home for TryMqadmin4 under dir: conf/logback_tools.xml (quiet) and, when
// accessKey is not empty, conf/tools.yml with the credentials mqadmin signs with.
func WriteMqadmin4Home(tb TB, dir, accessKey, secretKey string) string {
	tb.Helper()
	conf := filepath.Join(dir, "conf")
	if err := os.MkdirAll(conf, 0o755); err != nil {
		tb.Fatalf("harness: %v", err)
	}
	logback := `<configuration><root level="OFF"/></configuration>` + "\n"
	if err := os.WriteFile(filepath.Join(conf, "logback_tools.xml"), []byte(logback), 0o644); err != nil {
		tb.Fatalf("harness: %v", err)
	}
	if accessKey != "" {
		yml := fmt.Sprintf("accessKey: %s\nsecretKey: %s\n", accessKey, secretKey)
		if err := os.WriteFile(filepath.Join(conf, "tools.yml"), []byte(yml), 0o644); err != nil {
			tb.Fatalf("harness: %v", err)
		}
	}
	return dir
}
