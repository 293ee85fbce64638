package envflag

import (
	"errors"
	"flag"
	"io"
	"slices"
	"strings"
	"testing"
	"time"
)

type cfg struct {
	Addr  string
	N     int
	Rate  float64
	Wait  time.Duration
	Debug bool
	Hosts []string
}

func bindAll(env map[string]string, args []string) (cfg, error) {
	c := cfg{Addr: ":1", N: 1, Rate: 1, Wait: time.Second}
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	b := New(fs, func(k string) string { return env[k] })
	b.String(&c.Addr, "addr", "ADDR", "")
	b.Int(&c.N, "n", "N", "")
	b.Float64(&c.Rate, "rate", "RATE", "")
	b.Duration(&c.Wait, "wait", "WAIT", "")
	b.Bool(&c.Debug, "debug", "DEBUG", "")
	b.StringList(&c.Hosts, "hosts", "HOSTS", "")
	if err := b.Err(); err != nil {
		return c, err
	}
	return c, fs.Parse(args)
}

func TestPrecedence(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		env  map[string]string
		args []string
		want cfg
	}{
		{"defaults", nil, nil, cfg{Addr: ":1", N: 1, Rate: 1, Wait: time.Second}},
		{"env", map[string]string{"ADDR": ":2", "N": "2", "RATE": "2.5", "WAIT": "2s", "DEBUG": "true", "HOSTS": "a, b,,c"}, nil,
			cfg{Addr: ":2", N: 2, Rate: 2.5, Wait: 2 * time.Second, Debug: true, Hosts: []string{"a", "b", "c"}}},
		{"flag beats env", map[string]string{"ADDR": ":2", "N": "2", "DEBUG": "true"}, []string{"-addr=:3", "-n=3", "-debug=false", "-hosts=x"},
			cfg{Addr: ":3", N: 3, Rate: 1, Wait: time.Second, Hosts: []string{"x"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := bindAll(tt.env, tt.args)
			if err != nil {
				t.Fatal(err)
			}
			if got.Addr != tt.want.Addr || got.N != tt.want.N || got.Rate != tt.want.Rate || got.Wait != tt.want.Wait ||
				got.Debug != tt.want.Debug || !slices.Equal(got.Hosts, tt.want.Hosts) {
				t.Fatalf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestBadEnv(t *testing.T) {
	t.Parallel()
	for _, env := range []map[string]string{{"N": "x"}, {"WAIT": "5"}, {"DEBUG": "maybe"}, {"RATE": "fast"}} {
		if _, err := bindAll(env, nil); err == nil {
			t.Errorf("env %v: no error", env)
		}
	}
}

// loadable is a configuration as a service declares one.
type loadable struct {
	Port int
	Name string
}

func (c *loadable) Bind(fs *flag.FlagSet, getenv func(string) string) error {
	b := New(fs, getenv)
	b.Int(&c.Port, "port", "PORT", "the port")
	b.String(&c.Name, "name", "NAME", "the name")
	return b.Err()
}

func (c loadable) Validate() error {
	if c.Port <= 0 {
		return errors.New("port must be positive")
	}
	return nil
}

func TestLoad(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		args    []string
		env     map[string]string
		want    loadable
		wantErr string
	}{
		{name: "defaults", want: loadable{Port: 80, Name: "d"}},
		{name: "environment over default", env: map[string]string{"PORT": "81"}, want: loadable{Port: 81, Name: "d"}},
		{name: "flag over environment", args: []string{"-port", "82"}, env: map[string]string{"PORT": "81"}, want: loadable{Port: 82, Name: "d"}},
		{name: "bad environment value", env: map[string]string{"PORT": "x"}, wantErr: "PORT"},
		{name: "unknown flag", args: []string{"-nope"}, wantErr: "nope"},
		{name: "invalid result", args: []string{"-port", "0"}, wantErr: "port must be positive"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var out strings.Builder
			got, err := Load("svc", loadable{Port: 80, Name: "d"}, tt.args, func(k string) string { return tt.env[k] }, &out)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) || !strings.HasPrefix(err.Error(), "config: ") {
					t.Fatalf("Load = %+v, %v; want an error with %q", got, err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("Load = %+v, %v; want %+v", got, err, tt.want)
			}
		})
	}
}
