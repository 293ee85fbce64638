package server

import (
	"context"
	"errors"
	"fmt"
	"regexp"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"go.opentelemetry.io/contrib/instrumentation/google.golang.org/grpc/otelgrpc"
	"go.opentelemetry.io/contrib/instrumentation/google.golang.org/grpc/otelgrpc/filters"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetricgrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	"go.opentelemetry.io/otel/propagation"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
	"google.golang.org/grpc/stats"
)

// telemetry owns the per-server OpenTelemetry providers. Nothing is
// installed globally (no otel.SetTracerProvider): services get the
// providers from the Server and pass them on explicitly.
type telemetry struct {
	registry *prometheus.Registry
	tracer   *sdktrace.TracerProvider
	meter    *sdkmetric.MeterProvider
	prop     propagation.TextMapPropagator
	// exporting: an OTLP endpoint is set, so recorded spans go somewhere.
	exporting bool
}

func newTelemetry(ctx context.Context, cfg Config) (*telemetry, error) {
	res := resource.NewSchemaless(attribute.String("service.name", cfg.ServiceName))
	reg := prometheus.NewRegistry()
	// Besides the default Go metrics: the garbage collector's CPU (mark
	// assists are time the handlers lose to GC), its stop-the-world
	// pauses and the scheduling latencies, as histograms, so that a
	// latency tail can be told apart from GC (scripts/match-load.sh reads
	// them).
	goRuntime := collectors.GoRuntimeMetricsRule{Matcher: regexp.MustCompile(`^/(cpu/classes/|sched/latencies:|sched/pauses/total/gc:)`)}
	reg.MustRegister(collectors.NewGoCollector(collectors.WithGoCollectorRuntimeMetrics(goRuntime)),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	promExp, err := otelprom.New(otelprom.WithRegisterer(reg))
	if err != nil {
		return nil, fmt.Errorf("prometheus exporter: %w", err)
	}
	mopts := []sdkmetric.Option{sdkmetric.WithResource(res), sdkmetric.WithReader(promExp)}
	topts := []sdktrace.TracerProviderOption{sdktrace.WithResource(res), sdktrace.WithSampler(sdktrace.NeverSample())}
	if cfg.OTLPEndpoint != "" {
		// The exporters connect lazily: an unreachable collector does not
		// block startup, it only drops telemetry.
		texp, err := otlptracegrpc.New(ctx, otlptracegrpc.WithEndpointURL(cfg.OTLPEndpoint))
		if err != nil {
			return nil, fmt.Errorf("otlp trace exporter: %w", err)
		}
		mexp, err := otlpmetricgrpc.New(ctx, otlpmetricgrpc.WithEndpointURL(cfg.OTLPEndpoint))
		if err != nil {
			return nil, errors.Join(fmt.Errorf("otlp metric exporter: %w", err), texp.Shutdown(ctx))
		}
		topts = append(topts, sdktrace.WithBatcher(texp),
			sdktrace.WithSampler(sdktrace.ParentBased(sdktrace.TraceIDRatioBased(cfg.TraceSampleRatio))))
		mopts = append(mopts, sdkmetric.WithReader(sdkmetric.NewPeriodicReader(mexp)))
	}
	return &telemetry{
		registry:  reg,
		tracer:    sdktrace.NewTracerProvider(topts...),
		meter:     sdkmetric.NewMeterProvider(mopts...),
		prop:      propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{}),
		exporting: cfg.OTLPEndpoint != "",
	}, nil
}

func (t *telemetry) statsHandler() stats.Handler {
	// Without an exporter no span goes anywhere, yet the SDK's tracer (even
	// never sampling) starts one per call with fresh random IDs: about 3%
	// of a MakeMove's CPU. The no-op tracer only passes on the caller's
	// span context.
	var tp trace.TracerProvider = noop.NewTracerProvider()
	if t.exporting {
		tp = t.tracer
	}
	return otelgrpc.NewServerHandler(
		otelgrpc.WithTracerProvider(tp),
		otelgrpc.WithMeterProvider(t.meter),
		otelgrpc.WithPropagators(t.prop),
		// Probes poll health constantly; tracing them is noise.
		otelgrpc.WithFilter(filters.Not(filters.HealthCheck())),
	)
}

// shutdown flushes and stops the providers.
func (t *telemetry) shutdown(ctx context.Context) error {
	return errors.Join(t.tracer.Shutdown(ctx), t.meter.Shutdown(ctx))
}
