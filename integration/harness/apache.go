package harness

import (
	"path/filepath"
	"time"
)

// jvmServerOpts keep a JVM small and quick to start on a 2-core machine: fixed small heap, serial GC,
// C1 only. The --add-opens let the 5.x store reach the direct-buffer cleaner on Java 17.
var jvmServerOpts = []string{
	"-Xms256m", "-Xmx256m", "-XX:MaxDirectMemorySize=256m",
	"-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Xss512k",
	"-Djava.net.preferIPv4Stack=true",
	"--add-opens=java.base/java.nio=ALL-UNNAMED",
	"--add-opens=java.base/sun.nio.ch=ALL-UNNAMED",
	"--add-exports=java.base/sun.nio.ch=ALL-UNNAMED",
	"--add-opens=java.base/java.lang=ALL-UNNAMED",
}

// StartApache starts the Apache RocketMQ 5.3.3 name server and broker (NamesrvStartup, BrokerStartup from
// integration/java/target/lib/apache) on free loopback ports and waits until the name server serves the
// broker's route. Skips (naming DepsCommand) when the jars are missing.
//
// The JVMs get ROCKETMQ_HOME and user.home = <LogDir>/home, so their own log files land in
// <LogDir>/home/logs/rocketmqlogs/ next to namesrv.log and broker.log (stdout+stderr).
func StartApache(tb TB, opts Options) *Target {
	tb.Helper()
	RequireJars(tb, "apache")
	opts.defaults()
	t := newTarget(tb, KindApache, opts)
	jvm, env := apacheJVM(tb, t.LogDir, opts.JVMArgs)

	nsConf := writeConf(tb, filepath.Join(t.LogDir, "namesrv.conf"), t.namesrvConf(opts))
	ns := startProc(tb, "apache namesrv", filepath.Join(t.LogDir, "namesrv.log"), t.LogDir, env,
		append(cloneArgs(jvm), "org.apache.rocketmq.namesrv.NamesrvStartup", "-c", nsConf)...)
	t.Procs = append(t.Procs, ns)

	bConf := writeConf(tb, filepath.Join(t.LogDir, "broker.conf"), t.brokerConf(opts))
	b := startProc(tb, "apache broker", filepath.Join(t.LogDir, "broker.log"), t.LogDir, env,
		append(cloneArgs(jvm), "org.apache.rocketmq.broker.BrokerStartup", "-c", bConf)...)
	t.Procs = append(t.Procs, b)
	// The Apache broker's graceful stop takes 10 s and more; nothing of it is under test.
	ns.TermGrace, b.TermGrace = 2*time.Second, 2*time.Second

	t.waitReady(tb, opts.StartTimeout)
	return t
}

func cloneArgs(a []string) []string { return append([]string(nil), a...) }
