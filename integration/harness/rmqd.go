package harness

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"time"
)

type rmqdBuildOnce struct {
	once sync.Once
	path string
	err  error
}

var rmqdBuild, rmqdFailpointBuild rmqdBuildOnce

// RmqdBinary builds ./cmd/rmqd once per test binary into integration/.logs/.bin/ and returns its path.
func RmqdBinary(tb TB) string {
	tb.Helper()
	return buildRmqd(tb, &rmqdBuild, "")
}

// RmqdFailpointBinary builds ./cmd/rmqd with -tags failpoint (the store's fault hooks compiled in, see
// store/failpoint.go) once per test binary, as integration/.logs/.bin/rmqd-failpoint.
func RmqdFailpointBinary(tb TB) string {
	tb.Helper()
	return buildRmqd(tb, &rmqdFailpointBuild, "failpoint")
}

func buildRmqd(tb TB, rmqdBuild *rmqdBuildOnce, tags string) string {
	tb.Helper()
	root := RepoRoot(tb)
	rmqdBuild.once.Do(func() {
		dir := filepath.Join(root, "integration", ".logs", ".bin")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			rmqdBuild.err = err
			return
		}
		// Build to a private name, then rename: test binaries of several packages may build at once.
		tmp, err := os.CreateTemp(dir, "rmqd-*")
		if err != nil {
			rmqdBuild.err = err
			return
		}
		_ = tmp.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		args := []string{"build", "-o", tmp.Name()}
		if tags != "" {
			args = append(args, "-tags", tags)
		}
		cmd := exec.CommandContext(ctx, "go", append(args, "./cmd/rmqd")...)
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0") // the binary `make build` ships
		cmd.Dir = root
		out, err := cmd.CombinedOutput()
		if err != nil {
			_ = os.Remove(tmp.Name())
			rmqdBuild.err = fmt.Errorf("go build -tags %q ./cmd/rmqd: %w\n%s", tags, err, out)
			return
		}
		final := filepath.Join(dir, "rmqd")
		if tags != "" {
			final += "-" + tags
		}
		if err := os.Rename(tmp.Name(), final); err != nil {
			rmqdBuild.err = err
			return
		}
		rmqdBuild.path = final
	})
	if rmqdBuild.err != nil {
		tb.Fatalf("harness: %v", rmqdBuild.err)
	}
	return rmqdBuild.path
}

// StartRmqd builds ./cmd/rmqd (once per test binary) and starts it on free loopback ports: standalone
// (`rmqd -c broker.conf`, name server port in namesrvListenPort) or, with opts.Split, `rmqd namesrv -c
// namesrv.conf` plus `rmqd broker -c broker.conf -n <namesrv>`. It waits until the name server serves the
// broker's route. Logs (stderr) go to <LogDir>/rmqd.log, or namesrv.log and broker.log when split.
func StartRmqd(tb TB, opts Options) *Target {
	tb.Helper()
	opts.defaults()
	bin := RmqdBinary(tb)
	var env []string
	t := newTarget(tb, KindRmqd, opts)
	if err := mkdirs(t.StoreDir); err != nil {
		tb.Fatalf("harness: %v", err)
	}
	if opts.Failpoints {
		bin = RmqdFailpointBinary(tb)
		t.FailpointsFile = filepath.Join(t.LogDir, "failpoints")
		if err := os.WriteFile(t.FailpointsFile, nil, 0o644); err != nil {
			tb.Fatalf("harness: %v", err)
		}
		env = []string{"RMQD_FAILPOINTS=" + t.FailpointsFile}
	}
	bc := t.brokerConf(opts)
	if !opts.Split {
		bc["namesrvListenPort"] = fmt.Sprint(t.ports[0])
		conf := writeConf(tb, filepath.Join(t.LogDir, "broker.conf"), bc)
		t.Procs = append(t.Procs, startProc(tb, "rmqd", filepath.Join(t.LogDir, "rmqd.log"), t.LogDir, env,
			bin, "-c", conf))
	} else {
		nsConf := writeConf(tb, filepath.Join(t.LogDir, "namesrv.conf"), t.namesrvConf(opts))
		t.Procs = append(t.Procs, startProc(tb, "rmqd namesrv", filepath.Join(t.LogDir, "namesrv.log"), t.LogDir, env,
			bin, "namesrv", "-c", nsConf))
		conf := writeConf(tb, filepath.Join(t.LogDir, "broker.conf"), bc)
		t.Procs = append(t.Procs, startProc(tb, "rmqd broker", filepath.Join(t.LogDir, "broker.log"), t.LogDir, env,
			bin, "broker", "-c", conf, "-n", t.NamesrvAddr))
	}
	t.waitReady(tb, opts.StartTimeout)
	return t
}

func mkdirs(dirs ...string) error {
	for _, d := range dirs {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return fmt.Errorf("harness: %w", err)
		}
	}
	return nil
}

// JVMHome is the system properties that keep a JVM's files under home: user.home, rocketmq.home.dir
// and java.io.tmpdir. Without the last, every TLS start (Netty's self-signed certificate) and every
// mqadmin static-topic command (its .before/.after mapping backups) leaves files in the machine's /tmp.
func JVMHome(home string) ([]string, error) {
	tmp := filepath.Join(home, "tmp")
	if err := mkdirs(tmp); err != nil {
		return nil, err
	}
	return []string{"-Duser.home=" + home, "-Drocketmq.home.dir=" + home, "-Djava.io.tmpdir=" + tmp}, nil
}
