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

// Logger returns the service's logger (see [NewLogger]) at c.LogLevel, or
// the error that makes the level unusable: a bad LOG_LEVEL stops the
// service instead of being replaced by a default.
func (c Config) Logger(w io.Writer) (*slog.Logger, error) {
	level, err := ParseLevel(c.LogLevel)
	if err != nil {
		return nil, err
	}
	return NewLogger(w, level, c.ServiceName), nil
}
