package remoting

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/des"
	"crypto/hmac"
	"crypto/pbkdf2"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"crypto/tls"
	"encoding/asn1"
	"encoding/pem"
	"errors"
	"fmt"
	"hash"
	"os"
)

// Encrypted PKCS#8 private keys ("ENCRYPTED PRIVATE KEY"), what Java's broker takes with
// tls.server.keyPassword (Netty reads the key with that password). Go's standard library parses only
// plain PKCS#8, so PBES2 is decoded here: PBKDF2 with HMAC-SHA1/SHA-256/384/512 and AES-CBC or
// DES-EDE3-CBC, which covers `openssl pkcs8 -topk8 -v2 ...` and Java's keytool exports.

var (
	oidPBES2         = asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 5, 13}
	oidPBKDF2        = asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 5, 12}
	oidHMACWithSHA1  = asn1.ObjectIdentifier{1, 2, 840, 113549, 2, 7}
	oidHMACWithSHA2  = asn1.ObjectIdentifier{1, 2, 840, 113549, 2, 9}
	oidHMACWithSHA3  = asn1.ObjectIdentifier{1, 2, 840, 113549, 2, 10}
	oidHMACWithSHA5  = asn1.ObjectIdentifier{1, 2, 840, 113549, 2, 11}
	oidAES128CBC     = asn1.ObjectIdentifier{2, 16, 840, 1, 101, 3, 4, 1, 2}
	oidAES192CBC     = asn1.ObjectIdentifier{2, 16, 840, 1, 101, 3, 4, 1, 22}
	oidAES256CBC     = asn1.ObjectIdentifier{2, 16, 840, 1, 101, 3, 4, 1, 42}
	oidDESEDE3CBC    = asn1.ObjectIdentifier{1, 2, 840, 113549, 3, 7}
	errBadPassword   = errors.New("wrong password or corrupt key")
	errUnsupportedPB = errors.New("unsupported encryption (want PBES2 with PBKDF2 and AES-CBC or DES-EDE3-CBC)")
)

type algorithmIdentifier struct {
	Algorithm  asn1.ObjectIdentifier
	Parameters asn1.RawValue `asn1:"optional"`
}

type encryptedPrivateKeyInfo struct {
	Algorithm     algorithmIdentifier
	EncryptedData []byte
}

type pbes2Params struct {
	KeyDerivationFunc algorithmIdentifier
	EncryptionScheme  algorithmIdentifier
}

type pbkdf2Params struct {
	Salt           []byte
	IterationCount int
	KeyLength      int                 `asn1:"optional"`
	PRF            algorithmIdentifier `asn1:"optional"`
}

// decryptPKCS8 returns the plain PKCS#8 DER inside an encrypted one.
func decryptPKCS8(der []byte, password string) ([]byte, error) {
	var info encryptedPrivateKeyInfo
	if rest, err := asn1.Unmarshal(der, &info); err != nil || len(rest) != 0 {
		return nil, fmt.Errorf("encrypted PKCS#8: malformed: %v", err)
	}
	if !info.Algorithm.Algorithm.Equal(oidPBES2) {
		return nil, errUnsupportedPB
	}
	var params pbes2Params
	if _, err := asn1.Unmarshal(info.Algorithm.Parameters.FullBytes, &params); err != nil {
		return nil, fmt.Errorf("encrypted PKCS#8: PBES2 parameters: %w", err)
	}
	if !params.KeyDerivationFunc.Algorithm.Equal(oidPBKDF2) {
		return nil, errUnsupportedPB
	}
	var kdf pbkdf2Params
	if _, err := asn1.Unmarshal(params.KeyDerivationFunc.Parameters.FullBytes, &kdf); err != nil {
		return nil, fmt.Errorf("encrypted PKCS#8: PBKDF2 parameters: %w", err)
	}
	if kdf.IterationCount <= 0 || kdf.IterationCount > 10_000_000 {
		return nil, fmt.Errorf("encrypted PKCS#8: PBKDF2 iteration count %d", kdf.IterationCount)
	}
	var prf func() hash.Hash
	switch a := kdf.PRF.Algorithm; {
	case len(a) == 0 || a.Equal(oidHMACWithSHA1):
		prf = sha1.New
	case a.Equal(oidHMACWithSHA2):
		prf = sha256.New
	case a.Equal(oidHMACWithSHA3):
		prf = sha512.New384
	case a.Equal(oidHMACWithSHA5):
		prf = sha512.New
	default:
		return nil, errUnsupportedPB
	}
	var keyLen int
	var newCipher func([]byte) (cipher.Block, error)
	switch a := params.EncryptionScheme.Algorithm; {
	case a.Equal(oidAES128CBC):
		keyLen, newCipher = 16, aes.NewCipher
	case a.Equal(oidAES192CBC):
		keyLen, newCipher = 24, aes.NewCipher
	case a.Equal(oidAES256CBC):
		keyLen, newCipher = 32, aes.NewCipher
	case a.Equal(oidDESEDE3CBC):
		keyLen, newCipher = 24, des.NewTripleDESCipher
	default:
		return nil, errUnsupportedPB
	}
	if kdf.KeyLength != 0 && kdf.KeyLength != keyLen {
		return nil, fmt.Errorf("encrypted PKCS#8: key length %d for a %d-byte cipher", kdf.KeyLength, keyLen)
	}
	var iv []byte
	if _, err := asn1.Unmarshal(params.EncryptionScheme.Parameters.FullBytes, &iv); err != nil {
		return nil, fmt.Errorf("encrypted PKCS#8: IV: %w", err)
	}
	key, err := pbkdf2.Key(prf, password, kdf.Salt, kdf.IterationCount, keyLen)
	if err != nil {
		return nil, fmt.Errorf("encrypted PKCS#8: %w", err)
	}
	block, err := newCipher(key)
	if err != nil {
		return nil, fmt.Errorf("encrypted PKCS#8: %w", err)
	}
	bs := block.BlockSize()
	data := info.EncryptedData
	if len(iv) != bs || len(data) == 0 || len(data)%bs != 0 {
		return nil, errBadPassword
	}
	plain := make([]byte, len(data))
	cipher.NewCBCDecrypter(block, iv).CryptBlocks(plain, data)
	// PKCS#7 padding, checked in full: a wrong password almost always breaks it.
	pad := int(plain[len(plain)-1])
	if pad == 0 || pad > bs {
		return nil, errBadPassword
	}
	want := make([]byte, pad)
	for i := range want {
		want[i] = byte(pad)
	}
	if !hmac.Equal(plain[len(plain)-pad:], want) {
		return nil, errBadPassword
	}
	return plain[:len(plain)-pad], nil
}

// loadEncryptedKeyPair is tls.LoadX509KeyPair for a key in an "ENCRYPTED PRIVATE KEY" PEM block.
func loadEncryptedKeyPair(certPath, keyPath, password string) (tls.Certificate, error) {
	certPEM, err := os.ReadFile(certPath)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("remoting: TLS certificate: %w", err)
	}
	keyPEM, err := os.ReadFile(keyPath)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("remoting: TLS key: %w", err)
	}
	var block *pem.Block
	for rest := keyPEM; ; {
		if block, rest = pem.Decode(rest); block == nil || block.Type == "ENCRYPTED PRIVATE KEY" {
			break
		}
	}
	if block == nil {
		return tls.Certificate{}, fmt.Errorf("remoting: TLS key %s: a key password is set (keyPassword) but the file has no ENCRYPTED PRIVATE KEY block", keyPath)
	}
	der, err := decryptPKCS8(block.Bytes, password)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("remoting: TLS key %s: %w", keyPath, err)
	}
	cert, err := tls.X509KeyPair(certPEM, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}))
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("remoting: TLS key pair %s, %s: %w", certPath, keyPath, err)
	}
	return cert, nil
}
