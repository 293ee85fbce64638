package server

import (
	"net/http"
	"net/http/pprof"
	"strings"

	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// adminHandler serves the operator endpoints:
//
//	/metrics  Prometheus exposition of every metric of the server
//	/healthz  liveness: 200 while the process runs (it never checks
//	          dependencies, so a Redis outage does not restart pods)
//	/readyz   readiness: 200 while every gRPC service is SERVING and no
//	          component (Redis, a worker) reports a failure; 503 otherwise,
//	          naming the failing components, and from the first moment of
//	          shutdown
//	/debug/pprof/  when Config.Pprof is set
func (s *Server) adminHandler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(s.tel.registry, promhttp.HandlerOpts{}))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Write([]byte("ok\n"))
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, _ *http.Request) {
		if !s.Ready() {
			msg := "not ready"
			if failing := s.notReady(); len(failing) > 0 {
				msg += ": " + strings.Join(failing, "; ")
			}
			http.Error(w, msg, http.StatusServiceUnavailable)
			return
		}
		w.Write([]byte("ready\n"))
	})
	if s.cfg.Pprof {
		mux.HandleFunc("/debug/pprof/", pprof.Index)
		mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
		mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
		mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
		mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	}
	return mux
}
