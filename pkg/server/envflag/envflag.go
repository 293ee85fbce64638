// Package envflag binds configuration fields to a command-line flag and an
// environment variable at once.
//
// Precedence is flag > environment > the field's current value (its
// default). The environment is read through a getenv function passed in by
// main, so nothing below main touches the process environment and tests can
// pass a map lookup.
package envflag

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
)

// Binder registers flags on a FlagSet and applies environment values.
// Environment parse errors are collected and reported by Err.
type Binder struct {
	fs     *flag.FlagSet
	getenv func(string) string
	errs   []error
}

// New returns a Binder for fs reading the environment through getenv.
func New(fs *flag.FlagSet, getenv func(string) string) *Binder {
	return &Binder{fs: fs, getenv: getenv}
}

// Err reports every environment variable that could not be parsed.
func (b *Binder) Err() error { return errors.Join(b.errs...) }

func (b *Binder) env(name string) (string, bool) {
	if name == "" || b.getenv == nil {
		return "", false
	}
	v := b.getenv(name)
	return v, v != ""
}

func usage(u, env string) string {
	if env == "" {
		return u
	}
	return fmt.Sprintf("%s (env %s)", u, env)
}

func bind[T any](b *Binder, p *T, flagName, envName, help string, parse func(string) (T, error), format func(T) string) {
	if v, ok := b.env(envName); ok {
		x, err := parse(v)
		if err != nil {
			b.errs = append(b.errs, fmt.Errorf("env %s=%q: %w", envName, v, err))
		} else {
			*p = x
		}
	}
	b.fs.Func(flagName, usage(help, envName)+" (default "+format(*p)+")", func(s string) error {
		x, err := parse(s)
		if err != nil {
			return err
		}
		*p = x
		return nil
	})
}

// String binds a string.
func (b *Binder) String(p *string, flagName, envName, help string) {
	bind(b, p, flagName, envName, help, func(s string) (string, error) { return s, nil }, strconv.Quote)
}

// Int binds an int.
func (b *Binder) Int(p *int, flagName, envName, help string) {
	bind(b, p, flagName, envName, help, strconv.Atoi, strconv.Itoa)
}

// Float64 binds a float64.
func (b *Binder) Float64(p *float64, flagName, envName, help string) {
	bind(b, p, flagName, envName, help,
		func(s string) (float64, error) { return strconv.ParseFloat(s, 64) },
		func(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) })
}

// Duration binds a time.Duration ("1.5s", "250ms").
func (b *Binder) Duration(p *time.Duration, flagName, envName, help string) {
	bind(b, p, flagName, envName, help, time.ParseDuration, time.Duration.String)
}

// Bool binds a bool ("true", "1", "false", ...). The flag may be given
// without a value.
func (b *Binder) Bool(p *bool, flagName, envName, help string) {
	if v, ok := b.env(envName); ok {
		x, err := strconv.ParseBool(v)
		if err != nil {
			b.errs = append(b.errs, fmt.Errorf("env %s=%q: %w", envName, v, err))
		} else {
			*p = x
		}
	}
	b.fs.BoolVar(p, flagName, *p, usage(help, envName))
}

// StringList binds a comma-separated list; empty elements are dropped.
func (b *Binder) StringList(p *[]string, flagName, envName, help string) {
	bind(b, p, flagName, envName, help, SplitList, func(l []string) string { return strconv.Quote(strings.Join(l, ",")) })
}

// SplitList splits a comma-separated list, trimming spaces and dropping
// empty elements.
func SplitList(s string) ([]string, error) {
	var out []string
	for part := range strings.SplitSeq(s, ",") {
		if part = strings.TrimSpace(part); part != "" {
			out = append(out, part)
		}
	}
	return out, nil
}

// Config is what [Load] needs of a service's configuration struct C: its
// pointer binds every field (through a [Binder]) and validates the result.
type Config[C any] interface {
	*C
	Bind(fs *flag.FlagSet, getenv func(string) string) error
	Validate() error
}

// Load is the one way a service reads its configuration: it starts from
// defaults, binds them to flags named for the program name and to the
// environment read through getenv, parses args and validates the result.
// Usage and flag errors are written to out.
func Load[C any, P Config[C]](name string, defaults C, args []string, getenv func(string) string, out io.Writer) (C, error) {
	cfg := defaults
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(out)
	if err := P(&cfg).Bind(fs, getenv); err != nil {
		return cfg, fmt.Errorf("config: %w", err)
	}
	if err := fs.Parse(args); err != nil {
		return cfg, fmt.Errorf("config: %w", err)
	}
	if err := P(&cfg).Validate(); err != nil {
		return cfg, fmt.Errorf("config: %w", err)
	}
	return cfg, nil
}
