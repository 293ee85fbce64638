// Package servicetls provides the transport security of the services' gRPC
// port and of the calls they make to each other: TLS with a certificate and
// key read from files (a Kubernetes Secret, renewed in place by
// cert-manager), and trust roots for the services a caller dials.
//
// TLS is the default. Plaintext happens only when [Config.Plaintext] is set
// explicitly (INTERNAL_PLAINTEXT=true): `make run` and tests set it, on
// loopback. A server with neither certificates nor that setting refuses to
// start, so a forgotten Secret cannot silently downgrade a deployment.
//
// The admin port (/metrics, /readyz, /healthz) is not covered: probes and
// scrapers speak plain HTTP to it, and it carries no player data.
package servicetls

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"os"
	"sync"
	"time"

	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/fourkingdoms/fourkingdoms/pkg/server/envflag"
)

// MinVersion is the oldest TLS version accepted on either side.
const MinVersion = tls.VersionTLS12

// Config selects how a service serves and dials gRPC.
type Config struct {
	// CertFile and KeyFile are the PEM certificate chain and private key of
	// the service's gRPC port. The certificate must name every address its
	// callers dial (MATCH_ADDR's host, the Kubernetes Service's DNS name).
	// Both are read again when they change on disk.
	CertFile, KeyFile string
	// CAFile holds the PEM certificates of the authorities that sign the
	// certificates of the services this one calls. Empty: the system's
	// roots. Read once at start; a new authority needs a restart.
	CAFile string
	// Plaintext serves and dials without TLS. Only for loopback and tests,
	// or behind a transport that encrypts on its own (a service mesh).
	Plaintext bool
}

// Bind registers the settings as flags on fs, after applying environment
// variables read through getenv.
func (c *Config) Bind(fs *flag.FlagSet, getenv func(string) string) error {
	b := envflag.New(fs, getenv)
	b.String(&c.CertFile, "tls-cert-file", "TLS_CERT_FILE", "PEM certificate (chain) of the gRPC port")
	b.String(&c.KeyFile, "tls-key-file", "TLS_KEY_FILE", "PEM private key of the gRPC port")
	b.String(&c.CAFile, "tls-ca-file", "TLS_CA_FILE", "PEM authorities trusted when calling other services (empty: system roots)")
	b.Bool(&c.Plaintext, "internal-plaintext", "INTERNAL_PLAINTEXT", "serve and dial gRPC without TLS (loopback and tests only)")
	return b.Err()
}

// ErrNoCertificate is returned by [Config.ValidateServer] when TLS is on
// and no certificate is configured.
var ErrNoCertificate = errors.New("TLS is on by default and needs a certificate: set TLS_CERT_FILE and TLS_KEY_FILE " +
	"(the tls.crt and tls.key of a mounted Secret), or set INTERNAL_PLAINTEXT=true to serve without TLS on loopback")

// ValidateServer reports settings a server cannot start with: TLS without
// a certificate and key, or certificates given together with plaintext
// (one of the two is a mistake).
func (c Config) ValidateServer() error {
	if c.Plaintext {
		if c.CertFile != "" || c.KeyFile != "" {
			return errors.New("INTERNAL_PLAINTEXT=true and TLS_CERT_FILE/TLS_KEY_FILE are both set: choose one")
		}
		return nil
	}
	if c.CertFile == "" || c.KeyFile == "" {
		return ErrNoCertificate
	}
	return nil
}

// ServerConfig returns the TLS configuration of the gRPC port, or nil when
// serving plaintext. It loads the certificate once to report a bad file at
// start; later handshakes pick up a renewed certificate (see [Config]).
func (c Config) ServerConfig() (*tls.Config, error) {
	if err := c.ValidateServer(); err != nil {
		return nil, err
	}
	if c.Plaintext {
		return nil, nil
	}
	r := &reloader{certFile: c.CertFile, keyFile: c.KeyFile, every: recheck}
	if _, err := r.load(); err != nil {
		return nil, err
	}
	return &tls.Config{
		MinVersion:     MinVersion,
		NextProtos:     []string{"h2", "http/1.1"},
		GetCertificate: r.get,
	}, nil
}

// ClientConfig returns the TLS configuration for dialing other services, or
// nil when dialing plaintext.
func (c Config) ClientConfig() (*tls.Config, error) {
	if c.Plaintext {
		return nil, nil
	}
	cfg := &tls.Config{MinVersion: MinVersion}
	if c.CAFile != "" {
		pem, err := os.ReadFile(c.CAFile)
		if err != nil {
			return nil, fmt.Errorf("TLS_CA_FILE: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("TLS_CA_FILE %s: no PEM certificate in it", c.CAFile)
		}
		cfg.RootCAs = pool
	}
	return cfg, nil
}

// ClientCredentials returns the gRPC transport credentials for dialing other
// services: TLS verified against CAFile (or the system roots), or insecure
// credentials when Plaintext is set.
func (c Config) ClientCredentials() (credentials.TransportCredentials, error) {
	cfg, err := c.ClientConfig()
	if err != nil {
		return nil, err
	}
	if cfg == nil {
		return insecure.NewCredentials(), nil
	}
	return credentials.NewTLS(cfg), nil
}

// reloader serves a certificate pair and reads it again when either file
// changes. cert-manager renews a certificate by replacing the Secret, which
// the kubelet swaps into the mounted directory: the next handshake sees it
// without a restart.
type reloader struct {
	certFile, keyFile string
	every             time.Duration // least time between two looks at the files

	mu      sync.Mutex
	cert    *tls.Certificate
	stamp   [2]fileStamp
	checked time.Time
}

type fileStamp struct {
	mod  time.Time
	size int64
}

// recheck bounds how often a busy server looks at the files: a stat per
// handshake is cheap, but many handshakes at once need not each pay it.
const recheck = time.Second

func stampOf(path string) (fileStamp, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return fileStamp{}, err
	}
	return fileStamp{mod: fi.ModTime(), size: fi.Size()}, nil
}

// load reads the pair if the files changed since the last load.
func (r *reloader) load() (*tls.Certificate, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := time.Now()
	if r.cert != nil && now.Sub(r.checked) < r.every {
		return r.cert, nil
	}
	r.checked = now
	var st [2]fileStamp
	var err error
	for i, f := range []string{r.certFile, r.keyFile} {
		if st[i], err = stampOf(f); err != nil {
			return r.keep(fmt.Errorf("TLS certificate: %w", err))
		}
	}
	if r.cert != nil && st == r.stamp {
		return r.cert, nil
	}
	cert, err := tls.LoadX509KeyPair(r.certFile, r.keyFile)
	if err != nil {
		return r.keep(fmt.Errorf("TLS certificate %s / key %s: %w", r.certFile, r.keyFile, err))
	}
	r.cert, r.stamp = &cert, st
	return r.cert, nil
}

// keep returns the certificate loaded before, if any, when a reload fails
// (files caught half-written): serving the old one until it expires beats
// refusing every handshake. The first load has nothing to keep.
func (r *reloader) keep(err error) (*tls.Certificate, error) {
	if r.cert != nil {
		return r.cert, nil
	}
	return nil, err
}

func (r *reloader) get(*tls.ClientHelloInfo) (*tls.Certificate, error) { return r.load() }
