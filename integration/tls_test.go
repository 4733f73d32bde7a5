package integration

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"rmqd/codec"
	"rmqd/integration/harness"
	"rmqd/remoting"
)

// itPKI is a CA made for one test with a server certificate for 127.0.0.1
// and a client certificate, as PEM files (PKCS#8 keys, which Netty reads).
type itPKI struct {
	ca, serverCert, serverKey, clientCert, clientKey string
}

func newITPKI(t *testing.T) itPKI {
	t.Helper()
	return newITPKIFor(t, "127.0.0.1", []net.IP{net.IPv4(127, 0, 0, 1)})
}

// newITPKIFor is newITPKI with the server certificate's common name and IP addresses given.
func newITPKIFor(t *testing.T, serverCN string, serverIPs []net.IP) itPKI {
	t.Helper()
	dir := t.TempDir()
	serial := int64(1)
	write := func(name string, tmpl, parent *x509.Certificate, parentKey *ecdsa.PrivateKey) (*x509.Certificate, *ecdsa.PrivateKey, string, string) {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		serial++
		tmpl.SerialNumber = big.NewInt(serial)
		tmpl.NotBefore, tmpl.NotAfter = time.Now().Add(-time.Hour), time.Now().Add(24*time.Hour)
		if parent == nil {
			parent, parentKey = tmpl, key
		}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, &key.PublicKey, parentKey)
		if err != nil {
			t.Fatal(err)
		}
		cert, _ := x509.ParseCertificate(der)
		kder, err := x509.MarshalPKCS8PrivateKey(key)
		if err != nil {
			t.Fatal(err)
		}
		cp, kp := filepath.Join(dir, name+".crt"), filepath.Join(dir, name+".key")
		for path, b := range map[string]*pem.Block{cp: {Type: "CERTIFICATE", Bytes: der}, kp: {Type: "PRIVATE KEY", Bytes: kder}} {
			if err := os.WriteFile(path, pem.EncodeToMemory(b), 0o600); err != nil {
				t.Fatal(err)
			}
		}
		return cert, key, cp, kp
	}
	ca, caKey, caPath, _ := write("ca", &x509.Certificate{Subject: pkix.Name{CommonName: "it CA"}, IsCA: true,
		BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature}, nil, nil)
	p := itPKI{ca: caPath}
	_, _, p.serverCert, p.serverKey = write("server", &x509.Certificate{Subject: pkix.Name{CommonName: serverCN},
		IPAddresses: serverIPs, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}, ca, caKey)
	_, _, p.clientCert, p.clientKey = write("client", &x509.Certificate{Subject: pkix.Name{CommonName: "client"},
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}, ca, caKey)
	return p
}

// TestTLSJava: the Java 5.3.3 (and, against rmqd, 4.9.7) client with -Dtls.enable=true produces and consumes
// over TLS.
//
// rmqd runs tls.server.mode=permissive with its own CA's certificate and tls.server.need.client.auth=require:
// the client presents a certificate the CA signed and verifies the server's (tls.client.authServer); a TLS
// client without a certificate is refused, which also shows the accepted one really went over TLS; plain
// clients (the harness's probe, a raw client) are still served on the same port. Apache 5.3.3, the
// control, runs Java's defaults (permissive, test mode: a self-signed certificate, no client auth), so
// there the client uses test mode too.
//
//	RMQD_TARGET=rmqd go test -count=1 -v -run 'TestTLSJava' ./integration/
func TestTLSJava(t *testing.T) {
	harness.RequireJars(t, "client5")
	kinds := targetsFromEnv(t)
	for _, k := range kinds {
		if k == harness.KindApache {
			harness.RequireJars(t, "apache")
		}
	}
	for _, kind := range kinds {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			pki := newITPKI(t)
			opts := harness.Options{}
			tlsProps := []string{"-Dtls.enable=true"}
			if kind == harness.KindRmqd {
				opts.BrokerConf = map[string]string{
					"tls.server.mode":             "permissive",
					"tls.test.mode.enable":        "false",
					"tls.server.certPath":         pki.serverCert,
					"tls.server.keyPath":          pki.serverKey,
					"tls.server.trustCertPath":    pki.ca,
					"tls.server.authClient":       "true",
					"tls.server.need.client.auth": "require",
				}
				tlsProps = append(tlsProps, "-Dtls.test.mode.enable=false", "-Dtls.client.authServer=true",
					"-Dtls.client.trustCertPath="+pki.ca)
			}
			tg := harness.Start(t, kind, opts)
			withCert := append(append([]string(nil), tlsProps...), "-Dtls.client.certPath="+pki.clientCert,
				"-Dtls.client.keyPath="+pki.clientKey)
			if kind != harness.KindRmqd {
				withCert = tlsProps
			}
			clients := []string{"5"}
			if kind == harness.KindRmqd {
				clients = []string{"4", "5"} // 4.9.7 reads the same tls.* properties
			}
			topic := "IT_tls_" + kind
			for _, client := range clients {
				harness.RequireJars(t, "client"+client)
				topic = "IT_tls_" + kind + "_java" + client
				group := "IT_tls_cg_" + kind + "_java" + client
				sent := harness.RunJava(t, tg, client, "produce", append([]string{"--topic", topic, "--count", "8"}, withCert...)...)
				onlyOK(t, sent.Sent)
				got := harness.RunJava(t, tg, client, "consume", append([]string{"--topic", topic, "--group", group,
					"--count", "8"}, withCert...)...)
				expectDelivered(t, sent.Sent, got.Received, nil)
			}

			// Plain peers share the port in permissive mode.
			c := remoting.NewClient(remoting.ClientConfig{})
			defer c.Close()
			ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
			defer cancel()
			req := codec.NewRequest(codec.ReqGetRouteinfoByTopic)
			req.Ext.Set("topic", topic)
			resp, err := c.InvokeSync(ctx, tg.NamesrvAddr, req)
			if err != nil || resp.Code != codec.RespSuccess {
				t.Fatalf("plain route query: %v %+v", err, resp)
			}

			if kind != harness.KindRmqd {
				return
			}
			res, err := harness.TryJava(t, tg, "5", "produce", append([]string{"--topic", topic, "--count", "1",
				"--retries", "0"}, tlsProps...)...)
			if err != nil {
				t.Fatal(err)
			}
			if res.OK {
				t.Fatalf("a TLS client without a certificate was served though client auth is required")
			}
			t.Logf("refused as expected: %.200s", strings.TrimSpace(res.Error))

			// Java's defaults on both sides: rmqd permissive with its test-mode self-signed certificate, the
			// client with tls.enable=true only (test mode: it trusts any server).
			def := harness.Start(t, kind, harness.Options{})
			sent := harness.RunJava(t, def, "5", "produce", "--topic", "IT_tls_defaults", "--count", "4", "-Dtls.enable=true")
			onlyOK(t, sent.Sent)
		})
	}
}
