package server

import (
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	testpb "google.golang.org/grpc/interop/grpc_testing"

	"github.com/fourkingdoms/fourkingdoms/pkg/auth"
	"github.com/fourkingdoms/fourkingdoms/pkg/auth/authtest"
	"github.com/fourkingdoms/fourkingdoms/pkg/servicetls"
	"github.com/fourkingdoms/fourkingdoms/pkg/servicetls/tlstest"
)

// With a certificate, the one port serves gRPC and browsers' HTTP/1.1 over
// TLS, and a plaintext client gets nothing.
func TestTLSPortServesGRPCAndBrowsers(t *testing.T) {
	t.Parallel()
	ca := tlstest.NewCA(t, "test CA")
	pair := ca.Issue(t, "", "test", "127.0.0.1")
	h := start(t, func(c *Config) {
		c.TLS = servicetls.Config{CertFile: pair.CertFile, KeyFile: pair.KeyFile}
	})
	client := servicetls.Config{CAFile: ca.CAFile}
	creds, err := client.ClientCredentials()
	if err != nil {
		t.Fatal(err)
	}
	tok := h.token(t, "p-tls")
	cc, err := grpc.NewClient(h.addr, grpc.WithTransportCredentials(creds), grpc.WithPerRPCCredentials(auth.BearerToken(tok, false)))
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	resp, err := unary(t.Context(), cc, "x")
	if err != nil || resp.GetUsername() != "p-tls" {
		t.Errorf("gRPC over TLS = %v, %v", resp, err)
	}

	tlsCfg, err := client.ClientConfig()
	if err != nil {
		t.Fatal(err)
	}
	tr := &http.Transport{TLSClientConfig: tlsCfg} // HTTP/1.1, as a proxy in front of browsers speaks it
	defer tr.CloseIdleConnections()
	req, _ := http.NewRequest("POST", "https://"+h.addr+"/grpc.testing.TestService/UnaryCall", strings.NewReader(`{}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Connect-Protocol-Version", "1")
	req.Header.Set("Authorization", "Bearer "+tok)
	r, err := (&http.Client{Transport: tr}).Do(req)
	if err != nil {
		t.Fatalf("Connect over TLS: %v", err)
	}
	body, _ := io.ReadAll(r.Body)
	r.Body.Close()
	if r.StatusCode != http.StatusOK || !strings.Contains(string(body), "p-tls") {
		t.Errorf("Connect over TLS: %d %s", r.StatusCode, body)
	}

	plain, err := grpc.NewClient(h.addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	if _, err := testpb.NewTestServiceClient(plain).EmptyCall(t.Context(), &testpb.Empty{}); err == nil {
		t.Error("a plaintext client got an answer from the TLS port")
	}
}

// newServer runs New with cfg and discards the server it may return.
func newServer(t *testing.T, cfg Config, opts Options) error {
	t.Helper()
	srv, err := New(t.Context(), cfg, slog.New(slog.DiscardHandler), opts)
	if err == nil {
		srv.discard()
	}
	return err
}

func TestNoCertificateIsAStartupError(t *testing.T) {
	t.Parallel()
	_, keyFile := authtest.PublicKeyFile(t)
	cfg := DefaultConfig("match")
	cfg.GRPCAddr, cfg.AdminAddr, cfg.AuthKeysFile = "127.0.0.1:0", "127.0.0.1:0", keyFile
	err := newServer(t, cfg, Options{})
	if !errors.Is(err, servicetls.ErrNoCertificate) {
		t.Fatalf("New without certificate nor INTERNAL_PLAINTEXT: %v, want ErrNoCertificate", err)
	}
	for _, want := range []string{"TLS_CERT_FILE", "TLS_KEY_FILE", "INTERNAL_PLAINTEXT=true"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the error does not say %q: %v", want, err)
		}
	}
}

// Only the service that mints tokens may hold private keys; it must hold one.
func TestKeyRoles(t *testing.T) {
	t.Parallel()
	keys, err := auth.GenerateKeySet("k1")
	if err != nil {
		t.Fatal(err)
	}
	signing, public := authtest.Files(t, keys)
	tests := []struct {
		name    string
		file    string
		mints   bool
		wantErr string // "" for a start
	}{
		{"verifier with public keys", public, false, ""},
		{"minter with the signing key", signing, true, ""},
		{"verifier given the private key", signing, false, "holds private keys"},
		{"minter given public keys only", public, true, "holds no private key"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := DefaultConfig("svc")
			cfg.GRPCAddr, cfg.AdminAddr, cfg.AuthKeysFile = "127.0.0.1:0", "127.0.0.1:0", tt.file
			cfg.TLS.Plaintext = true
			err := newServer(t, cfg, Options{MintsTokens: tt.mints})
			switch {
			case tt.wantErr == "" && err != nil:
				t.Errorf("New: %v", err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr) || !strings.Contains(err.Error(), tt.file)):
				t.Errorf("New: %v, want an error naming the file and saying %q", err, tt.wantErr)
			}
		})
	}
}
