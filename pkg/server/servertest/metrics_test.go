package servertest

import (
	"slices"
	"testing"
)

func TestQueryMetrics(t *testing.T) {
	tests := []struct {
		expr string
		want []string
	}{
		{`up`, []string{"up"}},
		{`sum by (rpc_method) (rate(rpc_server_call_duration_seconds_count{job="match",rpc_response_status_code!="OK"}[5m]))`,
			[]string{"rpc_server_call_duration_seconds_count"}},
		{`histogram_quantile(0.99, sum by (le) (rate(rpc_server_call_duration_seconds_bucket{rpc_method="fourkingdoms.match.v1.MatchService/MakeMove"}[$__rate_interval])))`,
			[]string{"rpc_server_call_duration_seconds_bucket"}},
		{`sum(a_total) / ignoring(outcome) group_left sum(b_total) > 1e3`, []string{"a_total", "b_total"}},
		{`max_over_time(server_component_failing{component="redis"}[2m]) == 1 and on (pod) server_ready == 0`,
			[]string{"server_component_failing", "server_ready"}},
		{`label_replace(x, "dst", "$1", "src", "(.*)")`, []string{"x"}},
		{`sum(rate(c[5m] offset 1h))`, []string{"c"}},
	}
	for _, tt := range tests {
		if got := QueryMetrics(tt.expr); !slices.Equal(got, tt.want) {
			t.Errorf("QueryMetrics(%q) = %q, want %q", tt.expr, got, tt.want)
		}
	}
}

func TestSampleNamesAndValue(t *testing.T) {
	body := "# HELP h x\n# TYPE h histogram\nh_bucket{le=\"1\"} 2\nh_sum 3\nh_count 2\nup{job=\"a\"} 1\nup{job=\"b\"} 0\nplain 7\n"
	got := SampleNames(body)
	for _, n := range []string{"h_bucket", "h_sum", "h_count", "up", "plain"} {
		if !got[n] {
			t.Errorf("SampleNames lacks %s", n)
		}
	}
	if got["h"] || got["#"] {
		t.Errorf("SampleNames has comment names: %v", got)
	}
	if v, ok := Value(body, "up", `job="b"`); !ok || v != "0" {
		t.Errorf(`Value(up, job="b") = %q, %v; want "0", true`, v, ok)
	}
	if v, ok := Value(body, "plain"); !ok || v != "7" {
		t.Errorf("Value(plain) = %q, %v; want 7", v, ok)
	}
	if _, ok := Value(body, "h"); ok {
		t.Error("Value(h) found a sample of h_bucket")
	}
}
