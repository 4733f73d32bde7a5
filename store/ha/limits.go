package ha

import (
	"log/slog"
	"net"
	"time"
)

// Bounds on what a peer of the HA port can hold. A broker group has a
// handful of slaves; Java accepts any number of connections and waits the
// housekeeping interval (20 s) for a silent one.
const (
	// DefaultMaxConnections is Config.MaxConnections's default.
	DefaultMaxConnections = 64
	// DefaultMaxConnectionsPerIP is Config.MaxConnectionsPerIP's default:
	// loopback is not exempt, a host running every broker of a group (tests,
	// a laptop) has fewer slaves than this.
	DefaultMaxConnectionsPerIP = 8
	// DefaultFirstFrameTimeout is Config.FirstFrameTimeout's default.
	DefaultFirstFrameTimeout = 5 * time.Second
	// refusedLogEvery spaces the log lines of refused connections.
	refusedLogEvery = 10 * time.Second
)

// connGate counts a master's HA connections, in total and per remote IP
// (under its owner's lock).
type connGate struct {
	total, perIPMax int
	n               int
	perIP           map[string]int
	refused         int
	lastLog         time.Time
}

func newConnGate(cfg *Config) connGate {
	return connGate{total: cfg.MaxConnections, perIPMax: cfg.MaxConnectionsPerIP, perIP: map[string]int{}}
}

func remoteIP(nc net.Conn) string {
	if ta, ok := nc.RemoteAddr().(*net.TCPAddr); ok {
		return ta.IP.String()
	}
	host, _, err := net.SplitHostPort(nc.RemoteAddr().String())
	if err != nil {
		return nc.RemoteAddr().String()
	}
	return host
}

// admit counts nc in, or says no (logging at most every refusedLogEvery).
func (g *connGate) admit(nc net.Conn, log *slog.Logger) bool {
	ip := remoteIP(nc)
	if g.n < g.total && g.perIP[ip] < g.perIPMax {
		g.n++
		g.perIP[ip]++
		return true
	}
	g.refused++
	if now := time.Now(); now.Sub(g.lastLog) >= refusedLogEvery {
		log.Warn("HA connections refused: too many", "remote", nc.RemoteAddr(), "refused", g.refused,
			"connections", g.n, "fromThisIP", g.perIP[ip], "max", g.total, "maxPerIP", g.perIPMax)
		g.lastLog, g.refused = now, 0
	}
	return false
}

// release counts an admitted nc out.
func (g *connGate) release(nc net.Conn) {
	ip := remoteIP(nc)
	g.n--
	if g.perIP[ip]--; g.perIP[ip] <= 0 {
		delete(g.perIP, ip)
	}
}
