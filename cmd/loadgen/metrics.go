package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
)

// metrics is one scrape of a Prometheus text exposition: each series
// ("name{labels}") and its value.
type metrics map[string]float64

// scrape reads the service's /metrics.
func scrape(ctx context.Context, url string) (metrics, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return parseMetrics(resp.Body)
}

// parseMetrics reads the sample lines of the text format (no timestamps,
// which the service does not write).
func parseMetrics(r io.Reader) (metrics, error) {
	m := metrics{}
	sc := bufio.NewScanner(r)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if i < 0 {
			continue
		}
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			continue
		}
		m[line[:i]] = v
	}
	return m, sc.Err()
}

// histogram is a cumulative histogram: counts by upper bound, ascending.
type histogram struct {
	le     []float64
	counts []float64
}

// histogramDelta sums the buckets of every series of name whose labels
// contain all of match, over the window from a to b.
func histogramDelta(a, b metrics, name string, match ...string) histogram {
	byLE := map[float64]float64{}
	for series, v := range b {
		rest, ok := strings.CutPrefix(series, name+"_bucket{")
		if !ok || !containsAll(rest, match) {
			continue
		}
		i := strings.Index(rest, `le="`)
		if i < 0 {
			continue
		}
		leText, _, _ := strings.Cut(rest[i+4:], `"`)
		le, err := strconv.ParseFloat(leText, 64)
		if err != nil {
			continue
		}
		byLE[le] += v - a[series]
	}
	var h histogram
	for le := range byLE {
		h.le = append(h.le, le)
	}
	slices.Sort(h.le)
	for _, le := range h.le {
		h.counts = append(h.counts, byLE[le])
	}
	return h
}

func containsAll(s string, subs []string) bool {
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			return false
		}
	}
	return true
}

func (h histogram) total() float64 {
	if len(h.counts) == 0 {
		return 0
	}
	return h.counts[len(h.counts)-1]
}

// bound is the upper bound of the bucket holding quantile q: the quantile
// is at most that.
func (h histogram) bound(q float64) float64 {
	for i, c := range h.counts {
		if c >= q*h.total() {
			return h.le[i]
		}
	}
	return math.Inf(1)
}

// maxBound is the upper bound of the highest bucket with an observation.
func (h histogram) maxBound() float64 {
	for i := range h.counts {
		if h.counts[i] >= h.total() {
			return h.le[i]
		}
	}
	return math.Inf(1)
}

func seconds(s float64) string {
	if math.IsInf(s, 1) {
		return "+Inf"
	}
	return time.Duration(s * float64(time.Second)).Round(time.Microsecond).String()
}

// reportService prints what the service's own metrics say about the
// measured window: its MakeMove histogram (otelgrpc), its garbage
// collection (cycles, stop-the-world pauses, mark assists and all GC work
// against the process's CPU) and its scheduling latency.
func reportService(out io.Writer, a, b metrics) {
	mm := histogramDelta(a, b, "rpc_server_call_duration_seconds", `rpc_method="fourkingdoms.match.v1.MatchService/MakeMove"`)
	if n := mm.total(); n > 0 {
		var share []string
		for i, le := range mm.le {
			if le > 0 && le <= 0.25 {
				share = append(share, fmt.Sprintf("<=%s %.1f%%", seconds(le), 100*mm.counts[i]/n))
			}
		}
		fmt.Fprintf(out, "service MakeMove histogram: calls=%.0f %s; p99 <= %s\n", n, strings.Join(share, " "), seconds(mm.bound(0.99)))
	}
	d := func(name string) float64 { return b[name] - a[name] }
	pauses := histogramDelta(a, b, "go_sched_pauses_total_gc_seconds")
	cpu := d("process_cpu_seconds_total")
	fmt.Fprintf(out, "service GC: cycles=%.0f stop-the-world pauses=%.0f total=%s max<=%s; GC CPU %.2fs (mark assist %.2fs, pause %.2fs) of %.2fs process CPU = %.1f%% (assist %.1f%%)\n",
		d("go_gc_duration_seconds_count"), pauses.total(), seconds(d("go_sched_pauses_total_gc_seconds_sum")), seconds(pauses.maxBound()),
		d("go_cpu_classes_gc_total_cpu_seconds_total"), d("go_cpu_classes_gc_mark_assist_cpu_seconds_total"), d("go_cpu_classes_gc_pause_cpu_seconds_total"),
		cpu, 100*d("go_cpu_classes_gc_total_cpu_seconds_total")/cpu, 100*d("go_cpu_classes_gc_mark_assist_cpu_seconds_total")/cpu)
	sl := histogramDelta(a, b, "go_sched_latencies_seconds")
	if sl.total() > 0 {
		fmt.Fprintf(out, "service scheduling latency (runnable to running): p90<=%s p99<=%s p99.9<=%s max<=%s\n",
			seconds(sl.bound(0.9)), seconds(sl.bound(0.99)), seconds(sl.bound(0.999)), seconds(sl.maxBound()))
	}
}
