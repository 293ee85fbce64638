package servertest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fourkingdoms/fourkingdoms/pkg/server"
)

// Scrape returns the Prometheus text exposition srv serves on /metrics.
func Scrape(t testing.TB, srv *server.Server) string {
	t.Helper()
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	c := &http.Client{Transport: tr, Timeout: 5 * time.Second}
	code, body := get(t, c, "http://"+srv.AdminAddr().String()+"/metrics")
	if code != http.StatusOK {
		t.Fatalf("/metrics: status %d", code)
	}
	return string(body)
}

// SampleNames returns the names of the samples in a text exposition: a
// histogram h gives h_bucket, h_sum and h_count, as a query sees them.
func SampleNames(exposition string) map[string]bool {
	names := make(map[string]bool)
	for line := range strings.Lines(exposition) {
		if line == "" || line[0] == '#' {
			continue
		}
		if i := strings.IndexAny(line, "{ "); i > 0 {
			names[line[:i]] = true
		}
	}
	return names
}

// Value returns the value of the first sample of metric name whose labels
// contain every one of the given label pairs (`k="v"`), and whether there
// is one.
func Value(exposition, name string, labels ...string) (string, bool) {
	for line := range strings.Lines(exposition) {
		rest, ok := strings.CutPrefix(line, name)
		if !ok || rest == "" || (rest[0] != '{' && rest[0] != ' ') {
			continue
		}
		if !allIn(rest, labels) {
			continue
		}
		fields := strings.Fields(rest)
		return fields[len(fields)-1], true
	}
	return "", false
}

func allIn(s string, parts []string) bool {
	for _, p := range parts {
		if !strings.Contains(s, p) {
			return false
		}
	}
	return true
}

var (
	promStrings  = regexp.MustCompile(`"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'`)
	promBraces   = regexp.MustCompile(`\{[^}]*\}|\[[^\]]*\]`)
	promGrouping = regexp.MustCompile(`\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)`)
	promIdent    = regexp.MustCompile(`[a-zA-Z_:][a-zA-Z0-9_:]*`)
	promKeywords = map[string]bool{"and": true, "or": true, "unless": true, "bool": true, "offset": true,
		"by": true, "without": true, "on": true, "ignoring": true, "group_left": true, "group_right": true,
		"inf": true, "nan": true, "Inf": true, "NaN": true}
)

// QueryMetrics returns the metric names a PromQL expression reads: every
// identifier that is not a function, keyword, label name or inside label
// matchers, ranges or strings. Good enough for dashboards and alerts, not a
// PromQL parser.
func QueryMetrics(expr string) []string {
	s := promStrings.ReplaceAllString(expr, `""`)
	s = promBraces.ReplaceAllString(s, " ")
	s = promGrouping.ReplaceAllString(s, " ")
	var out []string
	for _, loc := range promIdent.FindAllStringIndex(s, -1) {
		name := s[loc[0]:loc[1]]
		if loc[0] > 0 && (s[loc[0]-1] >= '0' && s[loc[0]-1] <= '9' || s[loc[0]-1] == '.' || s[loc[0]-1] == '$') {
			continue // a number's exponent or unit, a dashboard variable
		}
		if promKeywords[name] || strings.HasPrefix(strings.TrimLeft(s[loc[1]:], " \t\n"), "(") {
			continue
		}
		if !slices.Contains(out, name) {
			out = append(out, name)
		}
	}
	return out
}

// Dashboard is the part of a Grafana dashboard the checks read.
type Dashboard struct {
	Title  string  `json:"title"`
	UID    string  `json:"uid"`
	Panels []Panel `json:"panels"`
}

// Panel is a dashboard panel; rows nest panels.
type Panel struct {
	Title   string   `json:"title"`
	Targets []Target `json:"targets"`
	Panels  []Panel  `json:"panels"`
}

// Target is one query of a panel.
type Target struct {
	Expr string `json:"expr"`
}

// ReadDashboard reads a Grafana dashboard JSON file.
func ReadDashboard(path string) (*Dashboard, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var d Dashboard
	if err := json.Unmarshal(b, &d); err != nil {
		return nil, fmt.Errorf("dashboard %s: %w", path, err)
	}
	return &d, nil
}

// Exprs returns every query of every panel, nested ones included, with the
// title of its panel.
func (d *Dashboard) Exprs() map[string]string {
	out := make(map[string]string)
	var walk func([]Panel)
	walk = func(ps []Panel) {
		for _, p := range ps {
			for _, t := range p.Targets {
				out[t.Expr] = p.Title
			}
			walk(p.Panels)
		}
	}
	walk(d.Panels)
	return out
}

// CheckDashboard fails t for every metric a panel of the dashboard at path
// queries that the exposition lacks, and for a panel without a query.
func CheckDashboard(t testing.TB, path, exposition string) {
	t.Helper()
	d, err := ReadDashboard(path)
	if err != nil {
		t.Fatal(err)
	}
	have := SampleNames(exposition)
	exprs := d.Exprs()
	if len(exprs) == 0 {
		t.Fatalf("dashboard %s has no queries", path)
	}
	for expr, panel := range exprs {
		names := QueryMetrics(expr)
		if len(names) == 0 {
			t.Errorf("dashboard %s, panel %q: query %q reads no metric", path, panel, expr)
		}
		for _, n := range names {
			if !have[n] {
				t.Errorf("dashboard %s, panel %q: metric %s is not on /metrics", path, panel, n)
			}
		}
	}
}

// WaitMetric scrapes srv until the first sample of name with the given
// label pairs (`k="v"`) has the value want, and fails t after 10 s.
func WaitMetric(t testing.TB, srv *server.Server, name, want string, labels ...string) {
	t.Helper()
	var got string
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		v, ok := Value(Scrape(t, srv), name, labels...)
		if ok && v == want {
			return
		}
		got = v
	}
	t.Fatalf("%s%v = %q after 10s, want %s", name, labels, got, want)
}
