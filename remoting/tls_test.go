package remoting

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"rmqd/codec"
)

// testPKI is a CA made for one test, with PEM files of a server certificate
// for 127.0.0.1 and a client certificate it signed.
type testPKI struct {
	dir                   string
	caPath                string
	serverCert, serverKey string
	clientCert, clientKey string
}

func writePEM(t testing.TB, path, typ string, der []byte) {
	t.Helper()
	require.NoError(t, os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600))
}

// issue writes a key and a certificate signed by parent (self-signed when
// parent is nil) and returns them.
func issue(t testing.TB, dir, name string, tmpl *x509.Certificate, parent *x509.Certificate, parentKey *ecdsa.PrivateKey) (*x509.Certificate, *ecdsa.PrivateKey, string, string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl.SerialNumber = big.NewInt(time.Now().UnixNano())
	tmpl.NotBefore = time.Now().Add(-time.Hour)
	tmpl.NotAfter = time.Now().Add(24 * time.Hour)
	if parent == nil {
		parent, parentKey = tmpl, key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, &key.PublicKey, parentKey)
	require.NoError(t, err)
	cert, err := x509.ParseCertificate(der)
	require.NoError(t, err)
	kder, err := x509.MarshalPKCS8PrivateKey(key)
	require.NoError(t, err)
	certPath, keyPath := filepath.Join(dir, name+".crt"), filepath.Join(dir, name+".key")
	writePEM(t, certPath, "CERTIFICATE", der)
	writePEM(t, keyPath, "PRIVATE KEY", kder)
	return cert, key, certPath, keyPath
}

func newTestPKI(t testing.TB) *testPKI {
	t.Helper()
	dir := t.TempDir()
	caTmpl := &x509.Certificate{Subject: pkix.Name{CommonName: "test CA"}, IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature}
	ca, caKey, caPath, _ := issue(t, dir, "ca", caTmpl, nil, nil)
	p := &testPKI{dir: dir, caPath: caPath}
	_, _, p.serverCert, p.serverKey = issue(t, dir, "server", &x509.Certificate{Subject: pkix.Name{CommonName: "server"},
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}, ca, caKey)
	_, _, p.clientCert, p.clientKey = issue(t, dir, "client", &x509.Certificate{Subject: pkix.Name{CommonName: "client"},
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}, ca, caKey)
	return p
}

// rogueClient is a client key pair signed by a CA the server does not know.
func (p *testPKI) rogueClient(t *testing.T) (string, string) {
	t.Helper()
	dir := t.TempDir()
	caTmpl := &x509.Certificate{Subject: pkix.Name{CommonName: "rogue CA"}, IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature}
	ca, caKey, _, _ := issue(t, dir, "ca", caTmpl, nil, nil)
	_, _, c, k := issue(t, dir, "client", &x509.Certificate{Subject: pkix.Name{CommonName: "rogue"},
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}, ca, caKey)
	return c, k
}

func (p *testPKI) serverSettings(mode TLSMode, needClientAuth string) TLSSettings {
	return TLSSettings{ServerMode: mode, ServerCertPath: p.serverCert, ServerKeyPath: p.serverKey,
		ServerTrustCertPath: p.caPath, ServerNeedClientAuth: needClientAuth}
}

// clientTLS verifies the server against the test CA, presenting certPath's
// certificate when given.
func (p *testPKI) clientTLS(t testing.TB, certPath, keyPath string) *tls.Config {
	t.Helper()
	cfg, err := TLSSettings{ClientEnable: true, ClientAuthServer: true, ClientTrustCertPath: p.caPath,
		ClientCertPath: certPath, ClientKeyPath: keyPath}.ClientConfig()
	require.NoError(t, err)
	if len(cfg.Certificates) == 1 {
		// Always present it: Go clients otherwise leave out a certificate
		// whose issuer the server did not list, and the server must refuse
		// an unknown certificate itself.
		cert := cfg.Certificates[0]
		cfg.Certificates = nil
		cfg.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return &cert, nil }
	}
	return cfg
}

func startTLSServer(t *testing.T, st TLSSettings, setup func(*Server)) *Server {
	t.Helper()
	cfg, err := st.ServerConfig()
	require.NoError(t, err)
	return startServer(t, ServerConfig{TLSMode: st.ServerMode, TLS: cfg}, func(s *Server) {
		s.Register(100, echo())
		s.Register(101, echo(), Inline())
		if setup != nil {
			setup(s)
		}
	})
}

func tlsClient(t testing.TB, cfg *tls.Config) *Client {
	t.Helper()
	c := NewClient(ClientConfig{Logger: testLogger(), TLS: cfg})
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// roundTrip sends a request of code with a body and checks the echo.
func roundTrip(ctx context.Context, c *Client, addr string, code int32, body []byte) error {
	req := codec.NewRequest(code)
	req.Ext.Set("k", "v")
	req.Body = body
	resp, err := c.InvokeSync(ctx, addr, req)
	if err != nil {
		return err
	}
	if v, _ := resp.Ext.Get("k"); resp.Code != 0 || !bytes.Equal(resp.Body, body) || v != "v" {
		return os.ErrInvalid
	}
	return nil
}

func TestTLSPermissiveServesPlainAndTLS(t *testing.T) {
	p := newTestPKI(t)
	s := startTLSServer(t, p.serverSettings(TLSPermissive, "none"), nil)
	addr := s.Addr().String()
	ctx := tctx(t, 10*time.Second)

	plain := newClient(t)
	require.NoError(t, roundTrip(ctx, plain, addr, 100, []byte("plain")))

	tc := tlsClient(t, p.clientTLS(t, "", ""))
	big := bytes.Repeat([]byte("0123456789abcdef"), 1<<16) // 1 MiB, many TLS records
	for i := 0; i < 20; i++ {
		require.NoError(t, roundTrip(ctx, tc, addr, 100, []byte("tls")))
		require.NoError(t, roundTrip(ctx, tc, addr, 101, []byte("inline")))
	}
	require.NoError(t, roundTrip(ctx, tc, addr, 100, big))
	// Unknown codes are answered on TLS too.
	resp, err := tc.InvokeSync(ctx, addr, codec.NewRequest(999))
	require.NoError(t, err)
	require.Equal(t, codec.RespRequestCodeNotSupported, resp.Code)
	require.Equal(t, 2, s.ConnCount())
}

func TestTLSEnforcingRefusesPlain(t *testing.T) {
	p := newTestPKI(t)
	s := startTLSServer(t, p.serverSettings(TLSEnforcing, "none"), nil)
	addr := s.Addr().String()
	ctx := tctx(t, 10*time.Second)

	plain := newClient(t)
	require.Error(t, roundTrip(ctx, plain, addr, 100, []byte("plain")))

	tc := tlsClient(t, p.clientTLS(t, "", ""))
	require.NoError(t, roundTrip(ctx, tc, addr, 100, []byte("tls")))
}

func TestTLSDisabledRefusesHandshake(t *testing.T) {
	p := newTestPKI(t)
	s := startServer(t, ServerConfig{}, func(s *Server) { s.Register(100, echo()) })
	ctx := tctx(t, 10*time.Second)
	tc := tlsClient(t, p.clientTLS(t, "", ""))
	require.Error(t, roundTrip(ctx, tc, s.Addr().String(), 100, []byte("tls")))
	require.NoError(t, roundTrip(ctx, newClient(t), s.Addr().String(), 100, []byte("plain")))
}

func TestTLSRequireClientCert(t *testing.T) {
	p := newTestPKI(t)
	s := startTLSServer(t, p.serverSettings(TLSEnforcing, "require"), nil)
	addr := s.Addr().String()
	ctx := tctx(t, 10*time.Second)

	// TLS 1.3 clients finish their handshake before the server checks their
	// certificate, so the refusal shows on the first call.
	require.Error(t, roundTrip(ctx, tlsClient(t, p.clientTLS(t, "", "")), addr, 100, []byte("x")), "no client certificate")
	rc, rk := p.rogueClient(t)
	require.Error(t, roundTrip(ctx, tlsClient(t, p.clientTLS(t, rc, rk)), addr, 100, []byte("x")), "unknown client certificate")
	require.NoError(t, roundTrip(ctx, tlsClient(t, p.clientTLS(t, p.clientCert, p.clientKey)), addr, 100, []byte("x")))
}

// A processor sees a TLS connection as any other: it answers later through
// WriteResponse, and the server invokes the client over it.
func TestTLSConnServerInvokeAndLateResponse(t *testing.T) {
	p := newTestPKI(t)
	var seen atomic.Pointer[Conn]
	events := make(chan bool, 16)
	s := startTLSServer(t, p.serverSettings(TLSPermissive, "none"), func(s *Server) {
		s.Register(200, ProcessorFunc(func(_ context.Context, c Conn, req *codec.RemotingCommand) (*codec.RemotingCommand, error) {
			seen.Store(&c)
			resp := codec.NewResponse(req, 0, "late")
			go func() { _ = c.WriteResponse(resp) }()
			return nil, nil
		}))
		s.AddConnListener(listenerFunc{open: func(Conn) { events <- true }, close: func(Conn) { events <- false }})
	})
	addr := s.Addr().String()
	ctx := tctx(t, 10*time.Second)
	c := tlsClient(t, p.clientTLS(t, "", ""))
	c.Register(300, echo())
	resp, err := c.InvokeSync(ctx, addr, codec.NewRequest(200))
	require.NoError(t, err)
	require.Equal(t, "late", resp.Remark)

	sc := *seen.Load()
	require.False(t, sc.Closed())
	require.Equal(t, "127.0.0.1", sc.RemoteAddr().(*net.TCPAddr).IP.String())
	req := codec.NewRequest(300)
	req.Body = []byte("from server")
	back, err := sc.Invoke(ctx, req)
	require.NoError(t, err)
	require.Equal(t, "from server", string(back.Body))

	c.CloseConn(addr)
	// The gnet connection opens and closes at the hand-off, then the TLS one.
	var got []bool
	for len(got) < 4 {
		select {
		case e := <-events:
			got = append(got, e)
		case <-ctx.Done():
			t.Fatalf("events so far %v", got)
		}
	}
	require.Equal(t, []bool{true, false, true, false}, got)
	require.True(t, sc.Closed())
}

type listenerFunc struct{ open, close func(Conn) }

func (l listenerFunc) OnConnect(c Conn) { l.open(c) }
func (l listenerFunc) OnClose(c Conn)   { l.close(c) }

// Java's defaults (permissive, test mode) serve a self-signed certificate;
// enforcing outside test mode needs a key pair.
func TestTLSSettingsServerConfig(t *testing.T) {
	st := TLSSettings{ServerMode: TLSPermissive, TestMode: true, ServerNeedClientAuth: "none"}
	cfg, err := st.ServerConfig()
	require.NoError(t, err)
	require.Len(t, cfg.Certificates, 1) // self-signed
	require.Equal(t, tls.NoClientCert, cfg.ClientAuth)

	st = TLSSettings{ServerMode: TLSEnforcing, ServerNeedClientAuth: "optional", ClientEnable: true}
	_, err = st.ServerConfig()
	require.Error(t, err, "no certificate outside test mode")
}

// A TLS connection idle for longer than IdleTimeout is closed like a plain
// one; a peer that starts a handshake with garbage is closed without harm to
// the server.
func TestTLSIdleAndBadHandshake(t *testing.T) {
	p := newTestPKI(t)
	scfg, err := p.serverSettings(TLSPermissive, "none").ServerConfig()
	require.NoError(t, err)
	s := startServer(t, ServerConfig{TLSMode: TLSPermissive, TLS: scfg, IdleTimeout: 200 * time.Millisecond},
		func(s *Server) { s.Register(100, echo()) })
	addr := s.Addr().String()
	ctx := tctx(t, 10*time.Second)

	c := tlsClient(t, p.clientTLS(t, "", ""))
	conn, err := c.Conn(ctx, addr)
	require.NoError(t, err)
	require.NoError(t, roundTrip(ctx, c, addr, 100, []byte("x")))
	for !conn.Closed() {
		select {
		case <-ctx.Done():
			t.Fatal("idle TLS connection not closed")
		case <-time.After(20 * time.Millisecond):
		}
	}

	raw, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	defer raw.Close()
	_, err = raw.Write([]byte{0x16, 0x03, 0x01, 0x00, 0x05, 'h', 'e', 'l', 'l', 'o'})
	require.NoError(t, err)
	require.NoError(t, raw.SetReadDeadline(time.Now().Add(5*time.Second)))
	buf := make([]byte, 64)
	for {
		if _, err := raw.Read(buf); err != nil {
			require.NotErrorIs(t, err, os.ErrDeadlineExceeded, "bad handshake not closed")
			break
		}
	}
	require.NoError(t, roundTrip(ctx, newClient(t), addr, 100, []byte("still serving")))
}

// TLS connections count against MaxConns as plain ones do.
func TestTLSMaxConns(t *testing.T) {
	p := newTestPKI(t)
	scfg, err := p.serverSettings(TLSPermissive, "none").ServerConfig()
	require.NoError(t, err)
	s := startServer(t, ServerConfig{TLSMode: TLSPermissive, TLS: scfg, MaxConns: 2},
		func(s *Server) { s.Register(100, echo()) })
	addr := s.Addr().String()
	ctx := tctx(t, 10*time.Second)
	for i := 0; i < 2; i++ {
		require.NoError(t, roundTrip(ctx, tlsClient(t, p.clientTLS(t, "", "")), addr, 100, []byte("x")))
	}
	require.Equal(t, 2, s.ConnCount())
	require.Error(t, roundTrip(ctx, newClient(t), addr, 100, []byte("over the limit")))
	require.Error(t, roundTrip(ctx, tlsClient(t, p.clientTLS(t, "", "")), addr, 100, []byte("over the limit")))
}

// A TLS connection that completes its handshake, then trickles a byte now and
// then, is closed FirstFrameTimeout after it opened, as a plain one is; one
// that sent a whole frame stays.
func TestTLSFirstFrameTimeout(t *testing.T) {
	p := newTestPKI(t)
	scfg, err := p.serverSettings(TLSEnforcing, "none").ServerConfig()
	require.NoError(t, err)
	s := startServer(t, ServerConfig{TLSMode: TLSEnforcing, TLS: scfg, FirstFrameTimeout: 400 * time.Millisecond},
		func(s *Server) { s.Register(100, echo()) })
	addr := s.Addr().String()
	ctx := tctx(t, 10*time.Second)
	good := tlsClient(t, p.clientTLS(t, "", ""))
	require.NoError(t, roundTrip(ctx, good, addr, 100, []byte("x")))

	tc, err := tls.Dial("tcp", addr, p.clientTLS(t, "", ""))
	require.NoError(t, err)
	defer tc.Close()
	require.NoError(t, tc.Handshake())
	frame := requestFrame(t, 100, 1, nil)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; i < len(frame)-1 && i < 100; i++ {
			if _, err := tc.Write(frame[i : i+1]); err != nil {
				return
			}
			time.Sleep(50 * time.Millisecond)
		}
	}()
	expectClosedByPeer(t, tc)
	<-done
	time.Sleep(500 * time.Millisecond) // past the first-frame bound of the good connection
	require.NoError(t, roundTrip(ctx, good, addr, 100, []byte("still served")))
}
