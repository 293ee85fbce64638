package main

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"sync"

	"github.com/redis/go-redis/v9"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/fourkingdoms/fourkingdoms/pkg/redisconn"
	eventsv1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/events/v1"
	gamev1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/game/v1"
	matchv1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/match/v1"
)

// The floor (-serve-floor) is the least a match service can do for the
// watched load, served by a plain grpc.Server: CreateMatch hands out an id;
// MakeMove makes one Redis round trip (EVALSHA of a one-key INCR script,
// with -floor-redis; the smallest possible commit), bumps the match's
// version and ply, and hands the event to the match's watch streams;
// WatchMatch sends a snapshot, then every event. No rules, no
// authentication, no telemetry, no keeper. Under the same loadgen run as
// the service, its latency and CPU per move are what the machine, gRPC,
// Redis and the load tool cost by themselves (docs/match.md
// "Performance"): the service cannot go below them.

// floorBuffer is the events a floor watch stream holds before it is cut
// (RESOURCE_EXHAUSTED), as the service's MATCH_WATCH_BUFFER.
const floorBuffer = 64

type floorServer struct {
	matchv1.UnimplementedMatchServiceServer
	rdb    redis.UniversalClient // nil: no Redis round trip
	script *redisconn.Script

	mu      sync.Mutex
	next    int
	matches map[string]*floorMatch
}

type floorMatch struct {
	version  uint64
	ply      uint32
	watchers map[chan *matchv1.WatchMatchResponse]struct{}
}

// serveFloor serves the floor on lis until ctx ends.
func serveFloor(ctx context.Context, lis net.Listener, redisAddr string) error {
	fs := &floorServer{matches: map[string]*floorMatch{}, script: redisconn.NewScript(`return redis.call('INCR', KEYS[1])`)}
	if redisAddr != "" {
		fs.rdb = redis.NewClient(&redis.Options{Addr: redisAddr})
		defer fs.rdb.Close()
	}
	srv := grpc.NewServer()
	matchv1.RegisterMatchServiceServer(srv, fs)
	return serveUntil(ctx, srv, lis)
}

func (fs *floorServer) CreateMatch(_ context.Context, _ *matchv1.CreateMatchRequest) (*matchv1.CreateMatchResponse, error) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	fs.next++
	id := "floor-" + strconv.Itoa(fs.next)
	fs.matches[id] = &floorMatch{watchers: map[chan *matchv1.WatchMatchResponse]struct{}{}}
	return &matchv1.CreateMatchResponse{Match: &matchv1.Match{MatchId: id}}, nil
}

func (fs *floorServer) match(id string) (*floorMatch, error) {
	m := fs.matches[id]
	if m == nil {
		return nil, status.Errorf(codes.NotFound, "no match %q", id)
	}
	return m, nil
}

func (fs *floorServer) MakeMove(ctx context.Context, req *matchv1.MakeMoveRequest) (*matchv1.MakeMoveResponse, error) {
	if fs.rdb != nil {
		if err := fs.script.Run(ctx, fs.rdb, []string{"floor:{" + req.GetMatchId() + "}"}).Err(); err != nil {
			return nil, status.Errorf(codes.Unavailable, "commit: %v", err)
		}
	}
	fs.mu.Lock()
	defer fs.mu.Unlock()
	m, err := fs.match(req.GetMatchId())
	if err != nil {
		return nil, err
	}
	m.version++
	m.ply++
	ev := &eventsv1.MatchEvent{MatchId: req.GetMatchId(), Version: m.version, Ply: m.ply,
		Event: &eventsv1.MatchEvent_MoveApplied{MoveApplied: &eventsv1.MoveApplied{Effects: &gamev1.MoveEffects{Move: req.GetMove()}}}}
	item := &matchv1.WatchMatchResponse{Version: m.version, Item: &matchv1.WatchMatchResponse_Event{Event: ev}}
	for w := range m.watchers {
		select {
		case w <- item:
		default:
			close(w) // too slow: the stream ends
			delete(m.watchers, w)
		}
	}
	return &matchv1.MakeMoveResponse{Events: []*eventsv1.MatchEvent{ev}, Version: m.version, Ply: m.ply}, nil
}

func (fs *floorServer) WatchMatch(req *matchv1.WatchMatchRequest, stream grpc.ServerStreamingServer[matchv1.WatchMatchResponse]) error {
	w := make(chan *matchv1.WatchMatchResponse, floorBuffer)
	fs.mu.Lock()
	m, err := fs.match(req.GetMatchId())
	if err != nil {
		fs.mu.Unlock()
		return err
	}
	m.watchers[w] = struct{}{}
	snap := &matchv1.WatchMatchResponse{Version: m.version,
		Item: &matchv1.WatchMatchResponse_Snapshot{Snapshot: &matchv1.Match{MatchId: req.GetMatchId(), Version: m.version}}}
	fs.mu.Unlock()
	defer func() {
		fs.mu.Lock()
		delete(m.watchers, w)
		fs.mu.Unlock()
	}()
	if err := stream.Send(snap); err != nil {
		return err
	}
	for {
		select {
		case <-stream.Context().Done():
			return nil
		case item, ok := <-w:
			if !ok {
				return status.Error(codes.ResourceExhausted, "watch stream too slow")
			}
			if err := stream.Send(item); err != nil {
				return fmt.Errorf("send: %w", err)
			}
		}
	}
}
