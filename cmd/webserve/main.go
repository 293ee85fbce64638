// Command webserve serves the web app's static files (web/dist) over plain
// HTTP: the program of the web image (deploy/images/web.Containerfile),
// behind the ingress that terminates the browser's TLS and routes the RPC
// paths to the services. It is the edge's file handler ([edge.NewStatic])
// and nothing else: screens of the single-page app get index.html, missing
// files 404, hashed assets are cached for a year.
//
// It stops on SIGTERM or SIGINT: it closes its listener, lets the requests
// in flight finish for up to ten seconds (less than the web Deployment's
// terminationGracePeriodSeconds) and exits.
//
// Usage:
//
//	webserve [--addr :8080] [--dir /srv/web]
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/fourkingdoms/fourkingdoms/pkg/edge"
	"github.com/fourkingdoms/fourkingdoms/pkg/server/envflag"
)

// shutdownTimeout bounds the drain of the requests in flight at shutdown;
// deploy/base/web.yaml gives the pod 15 seconds.
const shutdownTimeout = 10 * time.Second

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Getenv, os.Stderr, nil); err != nil {
		fmt.Fprintln(os.Stderr, "webserve:", err)
		os.Exit(1)
	}
}

// run serves until ctx ends. listening, when not nil, is told the bound
// address (tests listen on port 0).
func run(ctx context.Context, args []string, getenv func(string) string, logOut io.Writer, listening func(net.Addr)) error {
	addr, dir := ":8080", "/srv/web"
	fs := flag.NewFlagSet("webserve", flag.ContinueOnError)
	b := envflag.New(fs, getenv)
	b.String(&addr, "addr", "WEB_ADDR", "listen address")
	b.String(&dir, "dir", "WEB_DIR", "directory of the built web app (index.html, assets/)")
	if err := b.Err(); err != nil {
		return err
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	log := slog.New(slog.NewTextHandler(logOut, nil))

	l, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	if listening != nil {
		listening(l.Addr())
	}
	if _, err := os.Stat(filepath.Join(dir, "index.html")); err != nil {
		// Served anyway (every screen gets a 503 page, so the pod is never
		// ready), but an operator reading the log should know why.
		log.Warn("no web app to serve", "dir", dir, "error", err)
	}
	srv := &http.Server{
		Handler: edge.NewStatic(dir),
		// Only GET and HEAD of small files: no request needs long to send,
		// and the largest file is a bundle of a few hundred kilobytes.
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       10 * time.Second,
		WriteTimeout:      time.Minute,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	log.Info("serving the web app", "addr", l.Addr().String(), "dir", dir)
	done := make(chan error, 1)
	go func() { done <- srv.Serve(l) }()
	select {
	case err := <-done:
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	log.Info("shutting down")
	sctx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
	defer cancel()
	err = srv.Shutdown(sctx)
	if err != nil {
		err = errors.Join(fmt.Errorf("shutdown: %w", err), srv.Close())
	}
	if serr := <-done; !errors.Is(serr, http.ErrServerClosed) {
		err = errors.Join(err, serr)
	}
	return err
}
