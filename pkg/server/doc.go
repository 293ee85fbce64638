// Package server is the bootstrap every Four Kingdoms service main uses: it
// owns listening, gRPC serving, health, reflection, interceptors
// (recovery, logging, authentication, rate limiting), telemetry, the admin
// HTTP listener and graceful shutdown.
//
// One port serves native gRPC and, through connectrpc.com/vanguard, the
// gRPC-Web and Connect protocols that browsers use; web apps served from
// another origin may call it from the exact origins listed in
// Config.CORSAllowedOrigins (see cors.go). A second port serves
// /metrics, /healthz, /readyz and optionally pprof.
//
// Readiness: the server is ready (gRPC health SERVING, /readyz 200) while
// every registered gRPC service is SERVING ([Server.SetServing]) and no
// component reports a failure ([Server.Report]). Services register a
// periodic check of their Redis connection with [Server.Check], and their
// background workers report each failed and each successful iteration, so
// a pod that cannot reach Redis leaves the load balancer's rotation and
// comes back by itself. Liveness (/healthz) never depends on them: an
// outage must not restart pods.
//
// Shutdown, when the context given to [Server.Serve] is cancelled:
//
//  1. every health status turns NOT_SERVING and /readyz answers 503;
//  2. after Config.ShutdownDrainDelay, background workers are cancelled,
//     health Watch streams end, the listener closes and new calls are
//     refused with UNAVAILABLE;
//  3. in-flight unary calls and streams (on both transports) run to
//     completion, bounded by Config.ShutdownTimeout;
//  4. when the deadline passes, the remaining calls are cancelled (Stop);
//  5. Serve waits for workers, stops the admin listener and flushes
//     telemetry, then returns.
package server
