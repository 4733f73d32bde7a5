package remoting

import (
	"context"
	"crypto/x509"
	"crypto/x509/pkix"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestTLSClientChecksChainNotName: with tls.client.authServer and a trust path, the client takes a server
// certificate of the trusted CA that names a host and no IP address, as Java's client does (it checks the
// chain only); brokers dial each other by IP address, so a name check refused every such peer. A server
// certificate of another CA is still refused.
func TestTLSClientChecksChainNotName(t *testing.T) {
	dir := t.TempDir()
	caCert, caKey, caPath, _ := issue(t, dir, "ca", &x509.Certificate{Subject: pkix.Name{CommonName: "named CA"}, IsCA: true,
		BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature}, nil, nil)
	_, _, named, namedKey := issue(t, dir, "named", &x509.Certificate{Subject: pkix.Name{CommonName: "broker.example"},
		DNSNames: []string{"broker.example"}, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}, caCert, caKey)
	st := TLSSettings{ServerMode: TLSEnforcing, ServerCertPath: named, ServerKeyPath: namedKey}
	srv := startTLSServer(t, st, nil)

	cfg, err := TLSSettings{ClientEnable: true, ClientAuthServer: true, ClientTrustCertPath: caPath}.ClientConfig()
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	require.NoError(t, roundTrip(ctx, tlsClient(t, cfg), srv.Addr().String(), 100, []byte("named")))

	other := newTestPKI(t) // another CA
	cfg, err = TLSSettings{ClientEnable: true, ClientAuthServer: true, ClientTrustCertPath: other.caPath}.ClientConfig()
	require.NoError(t, err)
	require.Error(t, roundTrip(ctx, tlsClient(t, cfg), srv.Addr().String(), 100, []byte("rogue")))
}
