package remoting

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"net"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestEncryptedKeyPair loads keys encrypted by `openssl pkcs8 -topk8 -v2 ...` (testdata/enckey, password
// rmqd-pass) as Java's broker does with tls.server.keyPassword, and serves a handshake with each.
func TestEncryptedKeyPair(t *testing.T) {
	dir := filepath.Join("testdata", "enckey")
	for _, c := range []struct{ cert, key, plain string }{
		{"rsa.crt", "rsa-aes256-sha256.key", "rsa.key"},
		{"rsa.crt", "rsa-des3.key", "rsa.key"},
		{"ec.crt", "ec-aes128-sha1.key", "ec.key"},
	} {
		t.Run(c.key, func(t *testing.T) {
			cert, err := loadKeyPair(filepath.Join(dir, c.cert), filepath.Join(dir, c.key), "rmqd-pass")
			require.NoError(t, err)
			plain, err := tls.LoadX509KeyPair(filepath.Join(dir, c.cert), filepath.Join(dir, c.plain))
			require.NoError(t, err)
			require.Equal(t, plain.PrivateKey, cert.PrivateKey, "the decrypted key is the plain one")

			_, err = loadKeyPair(filepath.Join(dir, c.cert), filepath.Join(dir, c.key), "wrong")
			require.Error(t, err, "a wrong password is refused")
			_, err = loadKeyPair(filepath.Join(dir, c.cert), filepath.Join(dir, c.key), "")
			require.Error(t, err, "an encrypted key without its password is refused")

			leaf, err := x509.ParseCertificate(cert.Certificate[0])
			require.NoError(t, err)
			pool := x509.NewCertPool()
			pool.AddCert(leaf)
			a, b := net.Pipe()
			defer a.Close()
			defer b.Close()
			// No session tickets: the server would write them after its handshake into a pipe nobody reads.
			srv := tls.Server(a, &tls.Config{Certificates: []tls.Certificate{cert}, SessionTicketsDisabled: true})
			done := make(chan error, 1)
			go func() { done <- srv.Handshake() }()
			cli := tls.Client(b, &tls.Config{RootCAs: pool, ServerName: "rmqd-test"})
			require.NoError(t, cli.Handshake())
			require.NoError(t, <-done)
		})
	}
	_, err := loadKeyPair(filepath.Join(dir, "rsa.crt"), filepath.Join(dir, "rsa.key"), "rmqd-pass")
	require.ErrorContains(t, err, "no ENCRYPTED PRIVATE KEY block", "a password for a plain key says so")
}

// FuzzDecryptPKCS8: a key file is operator input, yet no byte of it may panic the broker at start.
func FuzzDecryptPKCS8(f *testing.F) {
	for _, name := range []string{"rsa-aes256-sha256.key", "rsa-des3.key", "ec-aes128-sha1.key"} {
		b, err := os.ReadFile(filepath.Join("testdata", "enckey", name))
		if err != nil {
			f.Fatal(err)
		}
		block, _ := pem.Decode(b)
		f.Add(block.Bytes, "rmqd-pass")
	}
	f.Fuzz(func(t *testing.T, der []byte, password string) {
		_, _ = decryptPKCS8(der, password)
	})
}
