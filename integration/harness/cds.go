package harness

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// A run starts some 280 short client and mqadmin JVMs, each spending most of its second or two loading the
// same rocketmq, netty and fastjson classes from jars. A dynamic class-data archive (AppCDS, JDK 13+) per
// classpath and main class lets each map them instead: the first JVM of a kind writes the archive at its
// exit, the later ones use it. The JVM checks an archive against the classpath itself and runs without it
// when they disagree; the name also hashes each jar's size and time, so a rebuilt jar gets a new archive.

// cdsLogArgs send the JVM's own warnings to stderr, where on stdout, the default, they would mix with a
// runner's result line or an mqadmin output that is compared, and silence the archive's: writing one warns
// of every class it leaves out, names like MissingOptionException that mqadmin4's output check refuses.
var cdsLogArgs = []string{"-Xlog:disable", "-Xlog:all=warning:stderr", "-Xlog:cds*=off:stderr"}

// cdsArgs returns the JVM flags for classpath (a "<dir>/*" folder of jars) and main, and a function to call
// once the JVM exited: it keeps a newly written archive when the JVM succeeded. Without a usable archive
// and when another JVM is writing one, it returns only the log flags.
func cdsArgs(classpath, main string) (args []string, done func(ok bool)) {
	args = cloneArgs(cdsLogArgs)
	done = func(bool) {}
	if os.Getenv("RMQD_IT_NO_CDS") == "1" {
		return args, done
	}
	key, err := cdsKey(classpath, main)
	if err != nil {
		return args, done
	}
	dir := filepath.Join(filepath.Dir(filepath.Dir(strings.TrimSuffix(classpath, "/*"))), "cds")
	archive := filepath.Join(dir, key+".jsa")
	if _, err := os.Stat(archive); err == nil {
		return append(args, "-XX:SharedArchiveFile="+archive), done
	}
	if os.MkdirAll(dir, 0o755) != nil {
		return args, done
	}
	// One writer across processes: the lock file, unless a killed run left it long ago.
	lock := archive + ".lock"
	if fi, err := os.Stat(lock); err == nil && time.Since(fi.ModTime()) > 10*time.Minute {
		_ = os.Remove(lock)
	}
	lf, err := os.OpenFile(lock, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
	if err != nil {
		return args, done
	}
	_ = lf.Close()
	tmp := fmt.Sprintf("%s.%d.tmp", archive, os.Getpid())
	return append(args, "-XX:ArchiveClassesAtExit="+tmp), func(ok bool) {
		defer os.Remove(lock)
		// A JVM that failed leaves the archive to the next of its kind.
		if fi, err := os.Stat(tmp); ok && err == nil && fi.Size() > 0 && os.Rename(tmp, archive) == nil {
			return
		}
		_ = os.Remove(tmp)
	}
}

// cdsKey names an archive by main class, the java binary and every jar of classpath (name, size, time).
func cdsKey(classpath, main string) (string, error) {
	jars, err := filepath.Glob(classpath)
	if err != nil || len(jars) == 0 {
		return "", fmt.Errorf("harness: cds: no jars in %s", classpath)
	}
	h := sha256.New()
	fmt.Fprintf(h, "%s\n", main)
	if java, err := exec.LookPath("java"); err == nil {
		if real, err := filepath.EvalSymlinks(java); err == nil {
			java = real
		}
		if fi, err := os.Stat(java); err == nil {
			fmt.Fprintf(h, "%s %d %d\n", java, fi.Size(), fi.ModTime().UnixNano())
		}
	}
	for _, j := range jars {
		fi, err := os.Stat(j)
		if err != nil {
			return "", err
		}
		fmt.Fprintf(h, "%s %d %d\n", filepath.Base(j), fi.Size(), fi.ModTime().UnixNano())
	}
	return filepath.Base(filepath.Dir(jars[0])) + "-" + strings.ReplaceAll(main, "/", "_") + "-" + hex.EncodeToString(h.Sum(nil))[:16], nil
}
