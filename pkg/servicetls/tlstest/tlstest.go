// Package tlstest makes a throwaway certificate authority and certificates
// signed by it, written to files as a Kubernetes Secret would mount them.
// Import it only from tests.
package tlstest

import (
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
	"testing"
	"time"
)

// CA is a certificate authority whose certificate is in CAFile.
type CA struct {
	CAFile string
	dir    string
	cert   *x509.Certificate
	key    *ecdsa.PrivateKey
}

// Pair is a certificate and its key, as files.
type Pair struct {
	CertFile, KeyFile string
}

// NewCA makes an authority valid for a day, its certificate written to a
// file in a temporary directory of tb.
func NewCA(tb testing.TB, name string) *CA {
	tb.Helper()
	key := newKey(tb)
	tmpl := &x509.Certificate{
		SerialNumber:          serial(tb),
		Subject:               pkix.Name{CommonName: name},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		tb.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		tb.Fatal(err)
	}
	dir := tb.TempDir()
	ca := &CA{CAFile: filepath.Join(dir, "ca.crt"), dir: dir, cert: cert, key: key}
	writePEM(tb, ca.CAFile, "CERTIFICATE", der)
	return ca
}

// Issue signs a server certificate for hosts (DNS names or IP addresses)
// and writes it and its key to dir/name.crt and dir/name.key (dir empty:
// the authority's directory). Issuing the same name again replaces the
// files, as a renewal does.
func (ca *CA) Issue(tb testing.TB, dir, name string, hosts ...string) Pair {
	tb.Helper()
	if dir == "" {
		dir = ca.dir
	}
	key := newKey(tb)
	tmpl := &x509.Certificate{
		SerialNumber: serial(tb),
		Subject:      pkix.Name{CommonName: name},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	for _, h := range hosts {
		if ip := net.ParseIP(h); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		tb.Fatal(err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		tb.Fatal(err)
	}
	p := Pair{CertFile: filepath.Join(dir, name+".crt"), KeyFile: filepath.Join(dir, name+".key")}
	writePEM(tb, p.CertFile, "CERTIFICATE", der)
	writePEM(tb, p.KeyFile, "PRIVATE KEY", keyDER)
	return p
}

func newKey(tb testing.TB) *ecdsa.PrivateKey {
	tb.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		tb.Fatal(err)
	}
	return key
}

func serial(tb testing.TB) *big.Int {
	tb.Helper()
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		tb.Fatal(err)
	}
	return n
}

// writePEM replaces path atomically, so a server reading it concurrently
// sees the old or the new file, never half of one.
func writePEM(tb testing.TB, path, typ string, der []byte) {
	tb.Helper()
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o644); err != nil {
		tb.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		tb.Fatal(err)
	}
}
