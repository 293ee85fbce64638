package main

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/status"

	"github.com/fourkingdoms/fourkingdoms/cmd/internal/brain"
	"github.com/fourkingdoms/fourkingdoms/cmd/internal/client"
	"github.com/fourkingdoms/fourkingdoms/cmd/internal/matchcheck"
	"github.com/fourkingdoms/fourkingdoms/pkg/auth"
	"github.com/fourkingdoms/fourkingdoms/pkg/rules"
	matchv1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/match/v1"
	matchmakingv1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/matchmaking/v1"
)

// ack is a move the match service acknowledged to its player: the
// MoveApplied of a MakeMove answered OK.
type ack struct {
	player  string
	match   string
	version uint64
	ply     uint32
	move    string // as the MoveApplied says it
}

// ticketRec is what a player's client saw of one ticket.
type ticketRec struct {
	id, player string
	matches    map[string]bool // every match id the ticket was reported matched to
	final      string          // "matched", "cancelled", "expired" or "" (not seen)
}

// recorder keeps the client side's record: every acknowledged move and
// every ticket. The players' clients call it through their wrapped stubs.
type recorder struct {
	mu      sync.Mutex
	acks    []ack
	seen    map[string]bool // match/version of acks, against replayed answers
	tickets map[string]*ticketRec
	// playing counts players seated in a running game, sampled for the
	// games-running figure.
	playing atomic.Int64
	// errs counts what ended a player's wait or game early, by kind: a
	// gRPC code, "violation" from the client's event checker, or the
	// walk-aways.
	errs map[string]int
}

func newRecorder() *recorder {
	return &recorder{seen: map[string]bool{}, tickets: map[string]*ticketRec{}, errs: map[string]int{}}
}

func (r *recorder) ackMove(player, match, requested string, resp *matchv1.MakeMoveResponse) {
	var a ack
	for _, ev := range resp.GetEvents() {
		if mv := ev.GetMoveApplied(); mv != nil && !mv.GetEffects().GetIsZombieMove() {
			a = ack{player: player, match: match, version: ev.GetVersion(), ply: ev.GetPly(), move: mv.GetEffects().GetMove()}
			break
		}
	}
	if a.match == "" {
		// An OK answer without the caller's MoveApplied breaks the
		// contract; record it so the check reports it as lost.
		a = ack{player: player, match: match, move: requested}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	key := fmt.Sprintf("%s/%d", a.match, a.version)
	if a.version != 0 && r.seen[key] {
		return // a retry answered from the stored reply: one move
	}
	r.seen[key] = true
	r.acks = append(r.acks, a)
}

func (r *recorder) ticket(id, player string) *ticketRec {
	t := r.tickets[id]
	if t == nil {
		t = &ticketRec{id: id, player: player, matches: map[string]bool{}}
		r.tickets[id] = t
	}
	return t
}

func (r *recorder) noteTicket(id, player, state, match string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	t := r.ticket(id, player)
	if match != "" {
		t.matches[match] = true
	}
	if state != "" {
		t.final = state
	}
}

func (r *recorder) countErr(kind string) {
	r.mu.Lock()
	r.errs[kind]++
	r.mu.Unlock()
}

// recMatch records the acknowledged moves of one player.
type recMatch struct {
	matchv1.MatchServiceClient
	rec    *recorder
	player string
}

func (m recMatch) MakeMove(ctx context.Context, in *matchv1.MakeMoveRequest, opts ...grpc.CallOption) (*matchv1.MakeMoveResponse, error) {
	resp, err := m.MatchServiceClient.MakeMove(ctx, in, opts...)
	if err == nil {
		m.rec.ackMove(m.player, in.GetMatchId(), in.GetMove(), resp)
	}
	return resp, err
}

// recMM records one player's tickets.
type recMM struct {
	matchmakingv1.MatchmakingServiceClient
	rec    *recorder
	player string
}

func (m recMM) Enqueue(ctx context.Context, in *matchmakingv1.EnqueueRequest, opts ...grpc.CallOption) (*matchmakingv1.EnqueueResponse, error) {
	resp, err := m.MatchmakingServiceClient.Enqueue(ctx, in, opts...)
	if err == nil {
		tk := resp.GetTicket()
		state := ""
		if tk.GetState() == matchmakingv1.TicketState_TICKET_STATE_MATCHED {
			state = "matched"
		}
		m.rec.noteTicket(tk.GetTicketId(), m.player, state, tk.GetMatchId())
	}
	return resp, err
}

func (m recMM) WatchTicket(ctx context.Context, in *matchmakingv1.WatchTicketRequest, opts ...grpc.CallOption) (grpc.ServerStreamingClient[matchmakingv1.WatchTicketResponse], error) {
	st, err := m.MatchmakingServiceClient.WatchTicket(ctx, in, opts...)
	if err != nil {
		return nil, err
	}
	return recTicketStream{ServerStreamingClient: st, rec: m.rec, id: in.GetTicketId(), player: m.player}, nil
}

type recTicketStream struct {
	grpc.ServerStreamingClient[matchmakingv1.WatchTicketResponse]
	rec        *recorder
	id, player string
}

func (s recTicketStream) Recv() (*matchmakingv1.WatchTicketResponse, error) {
	u, err := s.ServerStreamingClient.Recv()
	if err == nil {
		s.rec.noteTicket(s.id, s.player, ticketUpdateState(u), u.GetMatched().GetMatchId())
	}
	return u, err
}

// ticketUpdateState names a final ticket update ("" for searching).
func ticketUpdateState(u *matchmakingv1.WatchTicketResponse) string {
	switch u.GetUpdate().(type) {
	case *matchmakingv1.WatchTicketResponse_Matched:
		return "matched"
	case *matchmakingv1.WatchTicketResponse_Cancelled:
		return "cancelled"
	case *matchmakingv1.WatchTicketResponse_Expired:
		return "expired"
	}
	return ""
}

// playerID is the id of player i of a run.
func playerID(seed int, i int) string { return fmt.Sprintf("chaos-%d-%03d", seed, i) }

// player is one simulated person: it queues, plays its match through the
// public API (as the bots of cmd/internal/botpool do, but minted as a
// person so that the matchmaker groups players among themselves and the
// matches are rated), and queues again, until ctx ends.
type player struct {
	id    string
	token string
	ep    client.Endpoints
	queue string
	think time.Duration
	rec   *recorder
	brain *brain.Brain
	// abandon is the chance that the player walks away from a game at a
	// random ply and lets its clock run out: the flags the checks time.
	abandon float64
	rng     *rand.Rand
}

// errAbandon, from a player's chooser, walks away from the game.
var errAbandon = errors.New("player walks away")

func newPlayer(ks *auth.KeySet, ep client.Endpoints, queue string, level brain.Level, think time.Duration, abandon float64, rec *recorder, seed int, i int) (*player, error) {
	id := playerID(seed, i)
	tok, _, err := ks.Sign(auth.Identity{Subject: id, Role: auth.RolePlayer, DisplayName: fmt.Sprintf("Chaos %d", i)}, time.Now(), 24*time.Hour)
	if err != nil {
		return nil, err
	}
	return &player{id: id, token: tok, ep: ep, queue: queue, think: think, rec: rec, abandon: abandon,
		brain: brain.New(level, rand.New(rand.NewPCG(uint64(seed), uint64(i)))),
		rng:   rand.New(rand.NewPCG(uint64(seed), uint64(i)+1<<32))}, nil
}

func (p *player) run(ctx context.Context) {
	c, err := client.Dial(p.ep)
	if err != nil {
		p.rec.countErr("dial")
		return
	}
	defer c.Close()
	c.SetToken(p.token)
	c.Match = recMatch{MatchServiceClient: c.Match, rec: p.rec, player: p.id}
	c.Matchmaking = recMM{MatchmakingServiceClient: c.Matchmaking, rec: p.rec, player: p.id}
	for ctx.Err() == nil {
		found, err := c.FindMatch(ctx, p.queue, nil)
		if err != nil {
			if ctx.Err() == nil {
				p.rec.countErr("queue " + errCode(err))
				sleepCtx(ctx, 500*time.Millisecond)
			}
			continue
		}
		p.rec.playing.Add(1)
		leaveAt := -1
		if p.rng.Float64() < p.abandon {
			leaveAt = 4 + p.rng.IntN(60)
		}
		_, err = c.PlayAuto(ctx, found.MatchID, found.Seat, p.choose(found, leaveAt), nil)
		if errors.Is(err, errAbandon) {
			// Gone from the board but still watching, as a person whose
			// client shows the game: its clock runs out, then the game
			// goes on (or ends) without it.
			p.rec.countErr("walked away (by design)")
			_, err = c.Follow(ctx, found.MatchID, client.FollowOptions{Check: true, Seat: found.Seat}, func(client.Update) error { return nil })
		}
		p.rec.playing.Add(-1)
		if err != nil && ctx.Err() == nil {
			p.rec.countErr("play " + errCode(err))
			sleepCtx(ctx, 500*time.Millisecond)
		}
	}
}

func (p *player) choose(found client.Found, leaveAt int) client.Chooser {
	seat := rules.Seat(found.Seat - 1)
	return func(ctx context.Context, m *matchv1.Match) (string, error) {
		if leaveAt >= 0 && int(m.GetPly()) >= leaveAt {
			return "", errAbandon
		}
		start := time.Now()
		move, err := p.brain.Choose(brain.Turn{RuleSet: m.GetRuleSet(), FEN4: m.GetFen4(), Seat: seat, Legal: m.GetLegalMoves(), Game: m.GetMatchId()})
		if err != nil {
			return "", err
		}
		// Never more than a twentieth of the clock: the players mean to
		// play on, so a flag comes from the system, not from them.
		share := p.think
		for _, cl := range m.GetClocks() {
			if cl.GetSeat() == found.Seat {
				share = min(share, cl.GetRemaining().AsDuration()/20)
			}
		}
		sleepCtx(ctx, share-time.Since(start))
		return move, nil
	}
}

// errCode names a failed call for the report: its gRPC code, or
// "violation" when the client's event checker refused what it was sent.
func errCode(err error) string {
	if errors.Is(err, matchcheck.ErrViolation) {
		return "violation"
	}
	return status.Code(err).String()
}
