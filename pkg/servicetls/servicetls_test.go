package servicetls

import (
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/fourkingdoms/fourkingdoms/pkg/servicetls/tlstest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// serve starts a gRPC health server on loopback whose listener uses cfg
// (plaintext when nil) and returns its address.
func serve(t *testing.T, cfg *tls.Config) string {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	if cfg != nil {
		lis = tls.NewListener(lis, cfg)
	}
	s := grpc.NewServer()
	healthpb.RegisterHealthServer(s, health.NewServer())
	go s.Serve(lis)
	t.Cleanup(s.Stop)
	return lis.Addr().String()
}

// check makes one health call to addr with creds.
func check(t *testing.T, addr string, creds credentials.TransportCredentials) error {
	t.Helper()
	cc, err := grpc.NewClient(addr, grpc.WithTransportCredentials(creds))
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	_, err = healthpb.NewHealthClient(cc).Check(ctx, &healthpb.HealthCheckRequest{}, grpc.WaitForReady(false))
	return err
}

func TestHandshakeWithTheServicesCA(t *testing.T) {
	ca := tlstest.NewCA(t, "test CA")
	pair := ca.Issue(t, "", "match", "localhost", "127.0.0.1")
	srvCfg, err := Config{CertFile: pair.CertFile, KeyFile: pair.KeyFile}.ServerConfig()
	if err != nil {
		t.Fatal(err)
	}
	addr := serve(t, srvCfg)

	trusting, err := Config{CAFile: ca.CAFile}.ClientCredentials()
	if err != nil {
		t.Fatal(err)
	}
	if err := check(t, addr, trusting); err != nil {
		t.Errorf("a client trusting the services' CA: %v", err)
	}
	// Dialled by name, as in a cluster: the certificate names localhost.
	_, port, _ := net.SplitHostPort(addr)
	if err := check(t, "localhost:"+port, trusting); err != nil {
		t.Errorf("a client dialling localhost: %v", err)
	}

	other := tlstest.NewCA(t, "another CA")
	stranger, err := Config{CAFile: other.CAFile}.ClientCredentials()
	if err != nil {
		t.Fatal(err)
	}
	if err := check(t, addr, stranger); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Errorf("a client trusting another CA: err = %v, want a certificate error", err)
	}
	plain, err := Config{Plaintext: true}.ClientCredentials()
	if err != nil {
		t.Fatal(err)
	}
	if err := check(t, addr, plain); err == nil {
		t.Error("a plaintext client got an answer from a TLS server")
	}
}

func TestCertificateNotNamingTheAddressIsRefused(t *testing.T) {
	ca := tlstest.NewCA(t, "test CA")
	pair := ca.Issue(t, "", "rating", "rating.fourkingdoms.svc")
	srvCfg, err := Config{CertFile: pair.CertFile, KeyFile: pair.KeyFile}.ServerConfig()
	if err != nil {
		t.Fatal(err)
	}
	addr := serve(t, srvCfg)
	creds, err := Config{CAFile: ca.CAFile}.ClientCredentials()
	if err != nil {
		t.Fatal(err)
	}
	if err := check(t, addr, creds); err == nil || !strings.Contains(err.Error(), "127.0.0.1") {
		t.Errorf("dialling 127.0.0.1 with a certificate for rating.fourkingdoms.svc: err = %v, want a name mismatch", err)
	}
}

func TestValidateServer(t *testing.T) {
	tests := []struct {
		name    string
		cfg     Config
		wantErr string // "" for valid
	}{
		{"certificate and key", Config{CertFile: "tls.crt", KeyFile: "tls.key"}, ""},
		{"explicit plaintext", Config{Plaintext: true}, ""},
		{"nothing set: TLS without a certificate", Config{}, "INTERNAL_PLAINTEXT=true"},
		{"key without certificate", Config{KeyFile: "tls.key"}, "TLS_CERT_FILE"},
		{"certificate without key", Config{CertFile: "tls.crt"}, "TLS_KEY_FILE"},
		{"plaintext and a certificate", Config{Plaintext: true, CertFile: "tls.crt", KeyFile: "tls.key"}, "choose one"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.cfg.ValidateServer()
			switch {
			case tt.wantErr == "" && err != nil:
				t.Errorf("ValidateServer() = %v, want nil", err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Errorf("ValidateServer() = %v, want an error naming %q", err, tt.wantErr)
			}
			if _, err2 := tt.cfg.ServerConfig(); tt.wantErr != "" && err2 == nil {
				t.Errorf("ServerConfig() = nil error, want %v", err)
			}
		})
	}
	if err := (Config{}).ValidateServer(); !errors.Is(err, ErrNoCertificate) {
		t.Errorf("the default config: %v, want ErrNoCertificate", err)
	}
}

func TestBadFilesAreStartupErrors(t *testing.T) {
	dir := t.TempDir()
	junk := filepath.Join(dir, "junk.pem")
	if err := os.WriteFile(junk, []byte("not a certificate"), 0o644); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(dir, "missing.pem")
	if _, err := (Config{CertFile: missing, KeyFile: missing}).ServerConfig(); err == nil || !strings.Contains(err.Error(), "missing.pem") {
		t.Errorf("missing certificate: %v, want an error naming the file", err)
	}
	if _, err := (Config{CertFile: junk, KeyFile: junk}).ServerConfig(); err == nil || !strings.Contains(err.Error(), "junk.pem") {
		t.Errorf("junk certificate: %v, want an error naming the file", err)
	}
	if _, err := (Config{CAFile: junk}).ClientConfig(); err == nil || !strings.Contains(err.Error(), "no PEM certificate") {
		t.Errorf("junk CA: %v", err)
	}
	if _, err := (Config{CAFile: missing}).ClientConfig(); err == nil || !strings.Contains(err.Error(), "TLS_CA_FILE") {
		t.Errorf("missing CA: %v", err)
	}
}

// A renewed certificate (cert-manager replaces the Secret's files) is served
// from the next handshake on, without a restart; files caught half-written
// keep the previous certificate in service.
func TestRenewedCertificateIsServed(t *testing.T) {
	ca := tlstest.NewCA(t, "test CA")
	dir := t.TempDir()
	pair := ca.Issue(t, dir, "tls", "first.example")
	r := &reloader{certFile: pair.CertFile, keyFile: pair.KeyFile} // every 0: look at the files on each handshake
	name := func() string {
		t.Helper()
		c, err := r.get(nil)
		if err != nil {
			t.Fatal(err)
		}
		return c.Leaf.DNSNames[0]
	}
	if got := name(); got != "first.example" {
		t.Fatalf("serving %q", got)
	}
	ca.Issue(t, dir, "tls", "second.example")
	// The same size and a coarse clock could hide the change: make the new
	// files' times differ for sure.
	later := time.Now().Add(time.Minute)
	for _, f := range []string{pair.CertFile, pair.KeyFile} {
		if err := os.Chtimes(f, later, later); err != nil {
			t.Fatal(err)
		}
	}
	if got := name(); got != "second.example" {
		t.Errorf("after renewal serving %q, want second.example", got)
	}
	if err := os.WriteFile(pair.KeyFile, []byte("half"), 0o600); err != nil {
		t.Fatal(err)
	}
	if got := name(); got != "second.example" {
		t.Errorf("with a broken key file serving %q, want the previous certificate", got)
	}
}

func TestBindReadsEnvironmentAndFlags(t *testing.T) {
	var c Config
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	env := map[string]string{"TLS_CERT_FILE": "/tls/tls.crt", "TLS_KEY_FILE": "/tls/tls.key", "TLS_CA_FILE": "/tls/ca.crt"}
	if err := c.Bind(fs, func(k string) string { return env[k] }); err != nil {
		t.Fatal(err)
	}
	if err := fs.Parse([]string{"-tls-ca-file", "/other/ca.crt"}); err != nil {
		t.Fatal(err)
	}
	want := Config{CertFile: "/tls/tls.crt", KeyFile: "/tls/tls.key", CAFile: "/other/ca.crt"}
	if c != want {
		t.Errorf("config = %+v, want %+v", c, want)
	}
}
