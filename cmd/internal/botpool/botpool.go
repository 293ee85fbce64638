// Package botpool runs computer players. A bot is an ordinary client of the
// public gRPC API: it signs in, enqueues, waits for its ticket to match,
// follows the match with WatchMatch, moves with MakeMove, resigns a hopeless
// position, and enqueues again.
//
// Bot fill: the matchmaker only ever puts bot tickets into the empty seats
// of players who have waited long enough (queues configured with
// "bots=<wait>"); bots never form a match among themselves. The pool keeps
// its bots waiting in the queues, so a person who waits is matched with
// them.
//
// Private tables: the matchmaker takes the bots of a table's bot seats from
// a hidden lobby queue per level ("bots/<level>", LobbyQueue), where nothing
// else forms matches; the pool keeps Config.Lobby of its bots waiting
// there. A bot reserved for a table sees its lobby ticket matched like any
// other and plays the match. Bots need bot identities (tokens with the "bot" claim): the pool
// mints them with the deployment's key set (see MintTokens), which only an
// operator holds; without it bots sign in as guests and are matched like
// people.
package botpool

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"strings"
	"sync"
	"time"

	"github.com/fourkingdoms/fourkingdoms/cmd/internal/brain"
	"github.com/fourkingdoms/fourkingdoms/cmd/internal/client"
	"github.com/fourkingdoms/fourkingdoms/pkg/auth"
	"github.com/fourkingdoms/fourkingdoms/pkg/rules"
	gamev1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/game/v1"
	matchv1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/match/v1"
)

// Identity is a signed-in bot.
type Identity struct {
	PlayerID string
	Name     string
	Token    string
}

// Tokens signs a bot in. name is the display name it should use.
type Tokens func(ctx context.Context, c *client.Client, name string) (Identity, error)

// MintTokens returns a token source that signs bot identities (role player,
// bot flag set) with keys, valid for ttl. Use it where the pool runs next
// to the services and holds their key set (the local cluster).
func MintTokens(keys *auth.KeySet, ttl time.Duration) Tokens {
	return func(_ context.Context, _ *client.Client, name string) (Identity, error) {
		id := botID(name, rand.Uint32())
		tok, _, err := keys.Sign(auth.Identity{Subject: id, Role: auth.RolePlayer, DisplayName: name, Bot: true}, time.Now(), ttl)
		if err != nil {
			return Identity{}, fmt.Errorf("mint bot token: %w", err)
		}
		return Identity{PlayerID: id, Name: name, Token: tok}, nil
	}
}

// botID is a bot's player id: its display name as a slug ("Bot Greedy 4"
// gives "bot-greedy-4"), with "bot-" in front only when the name lacks it,
// and a random suffix so that every run of the pool has new players.
func botID(name string, random uint32) string {
	slug := strings.ToLower(strings.Join(strings.Fields(name), "-"))
	if !strings.HasPrefix(slug, "bot-") {
		slug = "bot-" + slug
	}
	return fmt.Sprintf("%s-%06x", slug, random&0xFFFFFF)
}

// GuestTokens signs bots in with AuthService.GuestLogin: they play, but the
// matchmaker sees them as people.
func GuestTokens() Tokens {
	return func(ctx context.Context, c *client.Client, name string) (Identity, error) {
		resp, err := c.Login(ctx, name)
		if err != nil {
			return Identity{}, err
		}
		return Identity{PlayerID: resp.GetPlayerId(), Name: resp.GetDisplayName(), Token: resp.GetToken()}, nil
	}
}

// Config describes a pool.
type Config struct {
	// Endpoints are the services' addresses.
	Endpoints client.Endpoints
	// Size is the number of bots.
	Size int
	// Queues are the queues the bots wait in, spread round robin.
	Queues []string
	// Level is the bots' strength.
	Level brain.Level
	// Think is the least time a bot takes per move, so people can follow
	// the game; bots never think longer than a small share of their clock.
	Think time.Duration
	// Tokens signs the bots in.
	Tokens Tokens
	// Games stops each bot after this many games; 0 means no limit.
	Games int
	// Lobby is how many of the Size bots wait in the lobby of their level
	// (LobbyQueue), for private tables' bot seats, instead of in Queues.
	// Only bot identities may wait there (MintTokens): the matchmaker
	// answers NOT_FOUND to a guest enqueueing into a lobby.
	Lobby int
}

// LobbyQueue is the hidden queue where bots of level wait for private
// tables (the matchmaker's store.LobbyQueue: the same name on both sides).
func LobbyQueue(level brain.Level) string { return "bots/" + string(level) }

// Validate reports an unusable configuration.
func (c Config) Validate() error {
	var errs []error
	errs = append(errs, c.Endpoints.Validate())
	if c.Size < 1 {
		errs = append(errs, fmt.Errorf("bot pool size must be at least 1, got %d", c.Size))
	}
	if len(c.Queues) == 0 && c.Lobby < c.Size {
		errs = append(errs, errors.New("bot pool: no queue"))
	}
	if c.Lobby < 0 || c.Lobby > c.Size {
		errs = append(errs, fmt.Errorf("bot pool: lobby bots must be 0 to the pool size %d, got %d", c.Size, c.Lobby))
	}
	if _, err := brain.ParseLevel(string(c.Level)); err != nil {
		errs = append(errs, err)
	}
	if c.Think < 0 {
		errs = append(errs, fmt.Errorf("think time must be >= 0, got %v", c.Think))
	}
	if c.Tokens == nil {
		errs = append(errs, errors.New("bot pool: no token source"))
	}
	return errors.Join(errs...)
}

// Run runs the pool until ctx ends (or every bot played Config.Games
// games). A bot that fails waits and starts over; Run returns nil when ctx
// ends.
func Run(ctx context.Context, cfg Config, log *slog.Logger) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	var wg sync.WaitGroup
	for i := range cfg.Size {
		name := fmt.Sprintf("Bot %s %d", titled(string(cfg.Level)), i+1)
		queue := LobbyQueue(cfg.Level)
		if i >= cfg.Lobby {
			queue = cfg.Queues[(i-cfg.Lobby)%len(cfg.Queues)]
		}
		b := &bot{cfg: cfg, name: name, queue: queue, log: log.With("bot", name),
			brain: brain.New(cfg.Level, rand.New(rand.NewPCG(rand.Uint64(), uint64(i))))}
		wg.Go(func() { b.run(ctx) })
	}
	wg.Wait()
	return nil
}

func titled(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

type bot struct {
	cfg   Config
	name  string
	queue string
	log   *slog.Logger
	brain *brain.Brain
}

func (b *bot) run(ctx context.Context) {
	c, err := client.Dial(b.cfg.Endpoints)
	if err != nil {
		b.log.Error("bot cannot dial", "err", err)
		return
	}
	defer c.Close()
	var id Identity
	games := 0
	for ctx.Err() == nil && (b.cfg.Games == 0 || games < b.cfg.Games) {
		if id.Token == "" {
			if id, err = b.cfg.Tokens(ctx, c, b.name); err != nil {
				b.log.Warn("bot sign-in failed", "err", err)
				sleep(ctx, 2*time.Second)
				continue
			}
			c.SetToken(id.Token)
		}
		found, err := c.FindMatch(ctx, b.queue, nil)
		if err != nil {
			if ctx.Err() == nil && !errors.Is(err, client.ErrTicketEnded) {
				b.log.Warn("bot queue wait failed", "queue", b.queue, "err", err)
				id.Token = "" // perhaps the token expired: sign in again
				sleep(ctx, 2*time.Second)
			}
			continue
		}
		b.log.Info("bot matched", "match", found.MatchID, "seat", found.Seat.String())
		final, err := b.play(ctx, c, found)
		if err != nil && ctx.Err() == nil {
			b.log.Warn("bot game failed", "match", found.MatchID, "err", err)
			sleep(ctx, time.Second)
		}
		if missed, err := c.FirstMoveMissed(ctx, final); err == nil && missed != gamev1.Seat_SEAT_UNSPECIFIED && missed != found.Seat {
			// Another seat missed its first move: the matchmaker put this
			// bot back in the queue with its original ticket, which
			// FindMatch picks up again. Not a game played.
			if tk, err := c.Requeue(ctx, b.queue); err == nil {
				b.log.Info("bot back in the queue after a first-move abort", "match", found.MatchID, "missed", missed.String(),
					"ticket", tk.GetTicketId(), "waiting_since", tk.GetCreatedAt().AsTime())
			}
			continue
		}
		if client.Over(final) {
			games++
			b.log.Info("bot game over", "match", found.MatchID, "ranking", rankingText(final))
		}
	}
}

// play plays one match to its end.
func (b *bot) play(ctx context.Context, c *client.Client, found client.Found) (*matchv1.Match, error) {
	seat := rules.Seat(found.Seat - 1)
	choose := func(ctx context.Context, m *matchv1.Match) (string, error) {
		start := time.Now()
		if hopeless(m, found.Seat) {
			return "", client.ErrResign
		}
		move, err := b.brain.Choose(brain.Turn{RuleSet: m.GetRuleSet(), FEN4: m.GetFen4(), Seat: seat, Legal: m.GetLegalMoves(), Game: m.GetMatchId()})
		if err != nil {
			return "", err
		}
		if wait := min(b.cfg.Think, clockShare(m, found.Seat)) - time.Since(start); wait > 0 {
			sleep(ctx, wait)
		}
		return move, nil
	}
	return c.PlayAuto(ctx, found.MatchID, found.Seat, choose, nil)
}

// hopeless reports a bare king that cannot win on points: resigning then
// ends a lost game sooner, which is what a sensible player does.
func hopeless(m *matchv1.Match, seat gamev1.Seat) bool {
	pieces := 0
	for _, p := range m.GetPieces() {
		if p.GetSeat() == seat && !p.GetDead() {
			pieces++
		}
	}
	if pieces != 1 {
		return false
	}
	mine, best := int32(0), int32(0)
	for _, s := range m.GetSeats() {
		if s.GetSeat() == seat {
			mine = s.GetResultPoints()
		} else if s.GetStatus() == gamev1.SeatStatus_SEAT_STATUS_LIVE {
			best = max(best, s.GetResultPoints())
		}
	}
	return mine < best
}

// clockShare is the most a bot spends on one move: a twentieth of its
// remaining time, so it never flags.
func clockShare(m *matchv1.Match, seat gamev1.Seat) time.Duration {
	for _, c := range m.GetClocks() {
		if c.GetSeat() == seat {
			return c.GetRemaining().AsDuration() / 20
		}
	}
	return 0
}

func rankingText(m *matchv1.Match) string {
	var parts []string
	for _, s := range m.GetResult().GetRanking() {
		parts = append(parts, s.String())
	}
	return strings.Join(parts, ",")
}

func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}
