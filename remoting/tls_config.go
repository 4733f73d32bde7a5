package remoting

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"math/big"
	"os"
	"strings"
	"time"
)

// TLSSettings are Java's TLS settings (TlsSystemConfig), read from
// configuration by the caller.
type TLSSettings struct {
	ServerMode           TLSMode
	TestMode             bool
	ServerNeedClientAuth string // none | optional | require
	ServerCertPath       string
	ServerKeyPath        string
	ServerKeyPassword    string
	ServerAuthClient     bool
	ServerTrustCertPath  string

	ClientEnable        bool
	ClientCertPath      string
	ClientKeyPath       string
	ClientKeyPassword   string
	ClientAuthServer    bool
	ClientTrustCertPath string
}

// ServerConfig builds the server's tls.Config, or nil when the mode is
// disabled.
//
// Where rmqd differs from Java, it is stricter: configured certificate paths
// are used even in test mode (Java then ignores them for a self-signed
// certificate), and a trust path verifies client certificates whether or not
// tls.server.authClient is set (Java accepts any client certificate unless
// it is).
func (s TLSSettings) ServerConfig() (*tls.Config, error) {
	if s.ServerMode == TLSDisabled {
		return nil, nil
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if s.ServerCertPath == "" && s.ServerKeyPath == "" {
		if !s.TestMode {
			return nil, fmt.Errorf("remoting: TLS %v needs tls.server.certPath and tls.server.keyPath (or tls.test.mode.enable=true)", s.ServerMode)
		}
		cert, err := selfSignedCert()
		if err != nil {
			return nil, err
		}
		cfg.Certificates = []tls.Certificate{cert}
	} else {
		cert, err := loadKeyPair(s.ServerCertPath, s.ServerKeyPath, s.ServerKeyPassword)
		if err != nil {
			return nil, err
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	verify := s.ServerAuthClient || s.ServerTrustCertPath != ""
	if s.ServerTrustCertPath != "" {
		pool, err := loadCertPool(s.ServerTrustCertPath)
		if err != nil {
			return nil, err
		}
		cfg.ClientCAs = pool
	}
	switch strings.ToLower(s.ServerNeedClientAuth) {
	case "optional":
		cfg.ClientAuth = tls.RequestClientCert
		if verify {
			cfg.ClientAuth = tls.VerifyClientCertIfGiven
		}
	case "require":
		cfg.ClientAuth = tls.RequireAnyClientCert
		if verify {
			cfg.ClientAuth = tls.RequireAndVerifyClientCert
		}
	default:
		cfg.ClientAuth = tls.NoClientCert
	}
	return cfg, nil
}

// ClientConfig builds the client's tls.Config (tls.enable), or nil when TLS
// is off for clients. In test mode, or without tls.client.authServer, the
// server's certificate is not verified, as Java's clients do.
func (s TLSSettings) ClientConfig() (*tls.Config, error) {
	if !s.ClientEnable {
		return nil, nil
	}
	// Go's name check is off in every case: Java's client (Netty 4.1's
	// newHandler without a peer host) checks the server's chain only, and
	// brokers dial each other and the name servers by IP address, which
	// certificates naming a host do not list.
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, InsecureSkipVerify: true}
	if !s.TestMode && s.ClientAuthServer {
		var roots *x509.CertPool // nil: the system's
		if s.ClientTrustCertPath != "" {
			pool, err := loadCertPool(s.ClientTrustCertPath)
			if err != nil {
				return nil, err
			}
			roots = pool
		}
		cfg.VerifyConnection = func(cs tls.ConnectionState) error { return verifyServerChain(cs.PeerCertificates, roots) }
	}
	if !s.TestMode && s.ClientCertPath != "" {
		cert, err := loadKeyPair(s.ClientCertPath, s.ClientKeyPath, s.ClientKeyPassword)
		if err != nil {
			return nil, err
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	return cfg, nil
}

// verifyServerChain checks that the server's certificate chains to roots
// and may serve TLS, without matching its names against the address dialed.
func verifyServerChain(certs []*x509.Certificate, roots *x509.CertPool) error {
	if len(certs) == 0 {
		return errors.New("remoting: TLS server sent no certificate")
	}
	inter := x509.NewCertPool()
	for _, c := range certs[1:] {
		inter.AddCert(c)
	}
	if _, err := certs[0].Verify(x509.VerifyOptions{Roots: roots, Intermediates: inter}); err != nil {
		return fmt.Errorf("remoting: TLS server certificate: %w", err)
	}
	return nil
}

func loadKeyPair(certPath, keyPath, password string) (tls.Certificate, error) {
	if password != "" {
		return loadEncryptedKeyPair(certPath, keyPath, password)
	}
	cert, err := tls.LoadX509KeyPair(certPath, keyPath)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("remoting: TLS key pair %s, %s: %w", certPath, keyPath, err)
	}
	return cert, nil
}

func loadCertPool(path string) (*x509.CertPool, error) {
	pem, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("remoting: TLS trust certificates: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("remoting: TLS trust certificates %s: no PEM certificate found", path)
	}
	return pool, nil
}

// selfSignedCert is test mode's throwaway server certificate (Java's
// SelfSignedCertificate).
func selfSignedCert() (tls.Certificate, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("remoting: self-signed TLS key: %w", err)
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("remoting: self-signed TLS serial: %w", err)
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: "rmqd"},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.AddDate(1, 0, 0),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("remoting: self-signed TLS certificate: %w", err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, nil
}
