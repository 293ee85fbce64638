package server

import (
	"io"
	"log/slog"
)

// NewLogger returns the JSON logger every service uses, writing to w at
// level (see [ParseLevel]). Every record carries the service name.
func NewLogger(w io.Writer, level slog.Level, serviceName string) *slog.Logger {
	h := slog.NewJSONHandler(w, &slog.HandlerOptions{Level: level})
	return slog.New(h).With("service", serviceName)
}
