// Package matchmaker forms matches from the tickets waiting in the queues.
//
// Every Interval, for each queue, a formation round:
//
//  1. takes over formations whose deadline passed (their instance died or
//     stalled) and finishes them: CreateMatch with the formation's request
//     id returns the match if it was already created, else creates it; if
//     that fails the tickets return to the queue with their enqueue time;
//  2. expires tickets that waited longer than the ticket TTL;
//  3. rates the tickets not rated yet in ONE Ratings call (unknown players
//     and an unavailable rating service give the default rating);
//  4. groups the tickets (package grouping), assigns seats with a recorded
//     random seed, claims each group atomically in Redis, creates the
//     matches concurrently and marks the tickets matched.
//
// Several matchmakers may run on the same queues: a ticket is claimed by at
// most one formation (the claim script checks all four tickets are still
// waiting), so the loser of a race simply forms nothing. The CreateMatch
// request id is derived from the four ticket ids, so whoever finishes a
// formation gets the same match.
package matchmaker

import (
	"cmp"
	"context"
	crand "crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	mrand "math/rand/v2"
	"slices"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/fourkingdoms/fourkingdoms/pkg/timecontrol"
	"github.com/fourkingdoms/fourkingdoms/services/matchmaking/internal/grouping"
	"github.com/fourkingdoms/fourkingdoms/services/matchmaking/internal/queues"
	"github.com/fourkingdoms/fourkingdoms/services/matchmaking/internal/store"
)

// Rating is a player's rating as the matchmaker uses it.
type Rating struct {
	Value       float64
	Provisional bool
	// Recent are the player's latest rated games, newest first (as many
	// as asked for).
	Recent []Game
}

// Game is one of a player's latest games.
type Game struct {
	MatchID string
	Ended   time.Time
	// CoPlayers are the other players.
	CoPlayers []string
}

// Ratings looks players' ratings up in a rule set's pool, with each
// player's latest recentGames rated games (none for 0). Players missing
// from the answer get the default rating.
type Ratings interface {
	BatchRatings(ctx context.Context, ruleSet string, playerIDs []string, recentGames int) (map[string]Rating, error)
}

// MatchRequest asks for a match; Players are in seat order (Red, Blue,
// Yellow, Green).
type MatchRequest struct {
	RequestID   string
	RuleSet     string
	TimeControl timecontrol.TimeControl
	Players     [4]store.Player
	Seed        uint64
	// Unrated keeps the match out of the ratings (private unrated tables).
	Unrated bool
}

// Match is a created match: its id and each player's seat (1-4).
type Match struct {
	ID    string
	Seats map[string]int
}

// Matches creates matches. CreateMatch must be idempotent by request id.
type Matches interface {
	CreateMatch(ctx context.Context, req MatchRequest) (Match, error)
}

// Config holds the matchmaker's settings.
type Config struct {
	// Interval is the time between formation rounds of a queue.
	Interval time.Duration
	// TicketTTL is how long a ticket may search before it expires.
	TicketTTL time.Duration
	// Window is the rating window of every queue.
	Window grouping.Window
	// DefaultRating is used for players the rating service does not know
	// or cannot be asked about.
	DefaultRating float64
	// RatingBatch caps the tickets rated per round (one Ratings call).
	RatingBatch int
	// CreateTimeout bounds one CreateMatch call. It must be shorter than
	// the store's formation timeout so a formation is never taken over
	// while its first attempt can still succeed.
	CreateTimeout time.Duration
	// Concurrency is the number of CreateMatch calls in flight.
	Concurrency int
}

// Matchmaker runs formation rounds. It is safe for concurrent use.
type Matchmaker struct {
	cfg     Config
	store   *store.Store
	ratings Ratings
	matches Matches
	log     *slog.Logger
	now     func() time.Time

	formed    metric.Int64Counter
	recovered metric.Int64Counter
	expired   metric.Int64Counter
	waiting   metric.Int64Gauge
	roundTime metric.Float64Histogram
	botsShort metric.Int64Gauge
}

// New returns a matchmaker reporting its metrics to meter.
//
// Queues that fill with bots need bots waiting in them: bots are ordinary
// clients (cmd/internal/botpool) that enqueue with bot identities and
// learn their match through WatchTicket like anyone. The matchmaker does
// not summon them; the matchmaking.bots.short gauge shows when too few
// wait.
func New(cfg Config, st *store.Store, ratings Ratings, matches Matches, meter metric.Meter, log *slog.Logger) *Matchmaker {
	m := &Matchmaker{cfg: cfg, store: st, ratings: ratings, matches: matches, log: log, now: time.Now}
	// Instrument creation fails only for invalid names; these are constant.
	m.formed, _ = meter.Int64Counter("matchmaking.matches.formed", metric.WithDescription("Matches created and reported to their tickets."))
	m.recovered, _ = meter.Int64Counter("matchmaking.formations.recovered", metric.WithDescription("Overdue formations finished or released by this instance."))
	m.expired, _ = meter.Int64Counter("matchmaking.tickets.expired", metric.WithDescription("Tickets that waited longer than the ticket TTL."))
	m.waiting, _ = meter.Int64Gauge("matchmaking.tickets.waiting", metric.WithDescription("Tickets waiting at the start of the latest round."))
	m.roundTime, _ = meter.Float64Histogram("matchmaking.round.duration", metric.WithUnit("s"), metric.WithDescription("Duration of formation rounds."))
	m.botsShort, _ = meter.Int64Gauge("matchmaking.bots.short", metric.WithDescription("Bot tickets missing in the latest round to seat every human who waited past the queue's bot-fill delay."))
	// The counters exist from the start, so dashboards and rate() see the first increase.
	for _, c := range []metric.Int64Counter{m.formed, m.recovered, m.expired} {
		c.Add(context.Background(), 0)
	}
	return m
}

// Run runs formation rounds for the queues until ctx ends.
func (m *Matchmaker) Run(ctx context.Context, qs []queues.Queue) error {
	var wg sync.WaitGroup
	for _, q := range qs {
		wg.Go(func() {
			t := time.NewTicker(m.cfg.Interval)
			defer t.Stop()
			attrs := metric.WithAttributes(attribute.String("queue", q.Name()))
			for {
				start := time.Now()
				res, err := m.Round(ctx, q)
				m.roundTime.Record(ctx, time.Since(start).Seconds(), attrs)
				m.formed.Add(ctx, int64(res.Formed), attrs)
				m.recovered.Add(ctx, int64(res.Recovered), attrs)
				m.expired.Add(ctx, int64(res.Expired), attrs)
				if err != nil && ctx.Err() == nil {
					m.log.WarnContext(ctx, "formation round failed", "queue", q.Name(), "err", err)
				} else if err == nil {
					m.waiting.Record(ctx, int64(res.Waiting), attrs)
				}
				if res.Formed > 0 || res.Recovered > 0 {
					m.log.DebugContext(ctx, "formation round", "queue", q.Name(), "formed", res.Formed,
						"recovered", res.Recovered, "waiting", res.Waiting)
				}
				if res.More && ctx.Err() == nil {
					continue // unrated tickets left over: go again now
				}
				select {
				case <-ctx.Done():
					return
				case <-t.C:
				}
			}
		})
	}
	wg.Wait()
	return nil
}

// RoundResult summarises one formation round.
type RoundResult struct {
	Waiting   int // tickets waiting at the start
	Expired   int
	Formed    int // matches this round created and completed
	Lost      int // groups claimed by another instance first
	Recovered int // overdue formations finished or released
	// More is set when tickets were left unrated because of RatingBatch.
	More bool
}

// Round runs one formation round for q.
func (m *Matchmaker) Round(ctx context.Context, q queues.Queue) (RoundResult, error) {
	var res RoundResult
	name := q.Name()
	now := m.now()

	recovered, err := m.recover(ctx, q, now)
	res.Recovered = recovered
	if err != nil {
		return res, err
	}

	entries, err := m.store.Waiting(ctx, name)
	if err != nil {
		return res, err
	}
	res.Waiting = len(entries)

	// Expire, and find the tickets still to rate (bots need no rating).
	var expired []string
	var unrated []int
	live := entries[:0]
	for _, e := range entries {
		if !now.Before(e.ExpiresAt(m.cfg.TicketTTL)) {
			expired = append(expired, e.TicketID)
			continue
		}
		live = append(live, e)
	}
	entries = live
	if len(expired) > 0 {
		n, err := m.store.Expire(ctx, name, expired)
		res.Expired = n
		if err != nil {
			return res, err
		}
	}
	// Oldest first, so the cap on rating leaves the youngest for later.
	slices.SortFunc(entries, func(a, b store.Entry) int { return cmp.Compare(a.EnqueuedMs, b.EnqueuedMs) })
	for i, e := range entries {
		if !e.Rated && !e.Player.Bot {
			unrated = append(unrated, i)
		}
	}
	if len(unrated) > m.cfg.RatingBatch {
		unrated, res.More = unrated[:m.cfg.RatingBatch], true
	}
	if len(unrated) > 0 && !m.rate(ctx, q, entries, unrated, now) {
		// Defaults stand in for this round only: they are not recorded,
		// and the next round waits for the interval before asking again.
		unrated, res.More = nil, false
	}

	// Group the rated humans and the bots.
	var cands []int
	tickets := make([]grouping.Ticket, 0, len(entries))
	for i, e := range entries {
		if !e.Rated && !e.Player.Bot {
			continue
		}
		cands = append(cands, i)
		tickets = append(tickets, grouping.Ticket{
			Rating: e.Rating, Provisional: e.Provisional, Wait: now.Sub(e.EnqueuedAt()), Bot: e.Player.Bot,
		})
	}
	if q.Apart > 0 {
		group := make([]store.Entry, len(cands))
		for k, i := range cands {
			group[k] = entries[i]
		}
		for k, avoid := range Apart(group, now, q.Apart) {
			tickets[k].Avoid = avoid
		}
	}
	grouped := grouping.Form(tickets, grouping.Params{Window: m.cfg.Window, BotFillAfter: q.BotFillAfter})
	if q.BotFillAfter > 0 {
		m.botsShort.Record(ctx, int64(grouped.BotsNeeded), metric.WithAttributes(attribute.String("queue", name)))
	}
	fs := make([]*store.Formation, 0, len(grouped.Groups))
	inGroup := make([]bool, len(entries))
	for _, g := range grouped.Groups {
		var four [4]store.Entry
		for k, i := range g {
			four[k] = entries[cands[i]]
			inGroup[cands[i]] = true
		}
		fs = append(fs, newFormation(name, four, now))
	}
	// Record the new ratings of the tickets that keep waiting (the others
	// are about to be claimed), so later rounds and WatchTicket know them.
	var keep []store.Entry
	for _, i := range unrated {
		if !inGroup[i] {
			keep = append(keep, entries[i])
		}
	}
	if len(keep) > 0 {
		if err := m.store.SetRatings(ctx, name, keep); err != nil {
			// Only costs a new lookup next round.
			m.log.WarnContext(ctx, "recording ratings failed", "queue", name, "err", err)
		}
	}
	// Instances running the same round find the same groups; claiming
	// them in a random order lets them split the work instead of racing
	// for the same chunk. Every group of the round is claimed either way.
	mrand.Shuffle(len(fs), func(i, j int) { fs[i], fs[j] = fs[j], fs[i] })
	formed, lost, err := m.form(ctx, q, fs, now)
	res.Formed, res.Lost = formed, lost
	return res, err
}

// rate fetches the ratings of entries[idx] in one call. When the call fails
// it gives them the default rating and reports false. With anti-teaming it
// also sets their recent co-players: from the rated games the call
// returns, and from the matches this queue formed in the last hour that
// the rating service does not report (still running).
func (m *Matchmaker) rate(ctx context.Context, q queues.Queue, entries []store.Entry, idx []int, now time.Time) bool {
	ids := make([]string, len(idx))
	for k, i := range idx {
		ids[k] = entries[i].Player.ID
	}
	recent := 0
	var played map[string][]store.Played
	if q.Apart > 0 {
		// Twice the games counted, so that a match formed here and since
		// rated is found among them and not taken for a running one.
		recent = min(2*q.ApartGames, queues.MaxApartGames)
		var err error
		if played, err = m.store.Played(ctx, q.Name(), ids, now); err != nil {
			m.log.WarnContext(ctx, "matches formed by the queue unavailable: games still running do not count for anti-teaming this round",
				"queue", q.Name(), "err", err)
		}
	}
	got, err := m.ratings.BatchRatings(ctx, q.RuleSet, ids, recent)
	if err != nil {
		// Matchmaking goes on without the rating service: everyone is
		// treated as a default, provisional player, and only the queue's
		// own record of its matches counts for anti-teaming this round.
		m.log.WarnContext(ctx, "ratings unavailable, using the default rating; anti-teaming counts only the queue's own matches", "queue", q.Name(),
			"tickets", len(ids), "err", err)
	}
	for _, i := range idx {
		e := &entries[i]
		r, ok := got[e.Player.ID]
		if !ok {
			r = Rating{Value: m.cfg.DefaultRating, Provisional: true}
		}
		e.Rating, e.Provisional, e.Rated = r.Value, r.Provisional, true
		if q.Apart > 0 {
			e.CoPlayers = LatestCoPlayers(r.Recent, len(r.Recent) >= recent, played[e.Player.ID], now, q.ApartGames)
		}
	}
	return err == nil
}

// LatestCoPlayers returns the co-players of a player's latest n games:
// the rated ones (rated, newest first, as the rating service reports them)
// and the matches the queue formed for the player that the rating service
// does not report (played): those still run, or have just ended and are
// not rated yet, and count as ending now, so they are the latest. When the
// rated list is full (as long as asked for: older rated games may exist), a
// formed match older than the end of the oldest rated game listed is taken
// for a rated game beyond the list (a player of short games plays more
// than the list holds in the hour the queue remembers), not for a running
// one. (Not when the list is shorter: a player who left a game early plays
// the next one while it runs, so a running game is often older than the
// end of a rated one.)
func LatestCoPlayers(rated []Game, full bool, played []store.Played, now time.Time, n int) []store.CoPlayer {
	var games []Game
	// Newest first (played is oldest first): the sort below keeps this
	// order among running games, which all end now.
	for _, p := range slices.Backward(played) {
		if full && len(rated) > 0 && p.FormedMs < rated[len(rated)-1].Ended.UnixMilli() {
			continue
		}
		if !slices.ContainsFunc(rated, func(g Game) bool { return g.MatchID == p.MatchID }) {
			games = append(games, Game{MatchID: p.MatchID, Ended: now, CoPlayers: p.CoPlayers})
		}
	}
	games = append(games, rated...)
	slices.SortStableFunc(games, func(a, b Game) int { return b.Ended.Compare(a.Ended) })
	var out []store.CoPlayer
	for _, g := range games[:min(n, len(games))] {
		for _, id := range g.CoPlayers {
			out = append(out, store.CoPlayer{PlayerID: id, FinishedMs: g.Ended.UnixMilli()})
		}
	}
	return out
}

// Apart returns, for each entry, the indices of the other entries whose
// player shared one of its latest games with it, that game having ended
// less than apart before now: the pairs anti-teaming keeps out of one
// group (grouping.Ticket.Avoid). The co-players come with each ticket's
// rating, looked up once when the ticket is first rated, so a round makes
// no call for them. A game reported to end in the future (clock skew)
// counts as just ended. Bots are never kept apart.
func Apart(entries []store.Entry, now time.Time, apart time.Duration) [][]int {
	out := make([][]int, len(entries))
	var byPlayer map[string]int
	since := now.Add(-apart).UnixMilli()
	for i, e := range entries {
		if e.Player.Bot {
			continue
		}
		for _, c := range e.CoPlayers {
			if c.FinishedMs <= since {
				continue
			}
			if byPlayer == nil {
				byPlayer = make(map[string]int, len(entries))
				for j, o := range entries {
					if !o.Player.Bot {
						byPlayer[o.Player.ID] = j
					}
				}
			}
			if j, ok := byPlayer[c.PlayerID]; ok && j != i && !slices.Contains(out[i], j) {
				out[i] = append(out[i], j)
			}
		}
	}
	return out
}

// newFormation seats four entries at random. The seed is recorded in the
// formation and passed to the match, so the seating can be reproduced.
func newFormation(queue string, four [4]store.Entry, now time.Time) *store.Formation {
	var b [8]byte
	crand.Read(b[:]) // never fails (crypto/rand documents it)
	seed := binary.LittleEndian.Uint64(b[:])
	return store.NewFormation(queue, Seat(four, seed), seed, now)
}

// Seat orders four entries by seat (Red, Blue, Yellow, Green) using seed.
func Seat(four [4]store.Entry, seed uint64) [4]store.Entry {
	r := mrand.New(mrand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	r.Shuffle(len(four), func(i, j int) { four[i], four[j] = four[j], four[i] })
	return four
}

// form claims the formations and creates their matches, in chunks; a few
// chunks run at once so the claim script of one overlaps the CreateMatch
// calls of another.
func (m *Matchmaker) form(ctx context.Context, q queues.Queue, fs []*store.Formation, now time.Time) (formed, lost int, err error) {
	var (
		mu   sync.Mutex
		errs []error
		wg   sync.WaitGroup
		sem  = make(chan struct{}, chunksInFlight)
		// One limit on CreateMatch calls for all chunks.
		calls = make(chan struct{}, max(m.cfg.Concurrency, 1))
	)
	for chunk := range slices.Chunk(fs, formChunk) {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			claimed, err := m.store.Claim(ctx, q.Name(), chunk, now)
			if err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
				return
			}
			var mine []*store.Formation
			for i, ok := range claimed {
				if ok {
					mine = append(mine, chunk[i])
				}
			}
			n, err := m.finish(ctx, q, mine, calls)
			mu.Lock()
			defer mu.Unlock()
			formed += n
			lost += len(chunk) - len(mine)
			if err != nil {
				errs = append(errs, err)
			}
		})
	}
	wg.Wait()
	return formed, lost, errors.Join(errs...)
}

const (
	// formChunk is the number of groups claimed by one script call.
	formChunk = 256
	// chunksInFlight is the number of chunks being formed at once.
	chunksInFlight = 4
)

// finish creates the matches of claimed formations, concurrently, and
// completes those created. A formation whose CreateMatch fails stays open:
// after its deadline any instance retries it with the same request id, and
// releases its tickets if that fails too.
func (m *Matchmaker) finish(ctx context.Context, q queues.Queue, fs []*store.Formation, sem chan struct{}) (int, error) {
	outs := m.createAll(ctx, q, fs, sem, "create match failed; the formation will be retried")
	var done []store.Outcome
	for _, o := range outs {
		if o != nil {
			done = append(done, *o)
		}
	}
	if len(done) == 0 {
		return 0, nil
	}
	// Completing must not be skipped because the round's caller went away:
	// the matches exist.
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), m.cfg.CreateTimeout)
	defer cancel()
	completed, err := m.store.Complete(cctx, q.Name(), done, m.now())
	n := 0
	for _, c := range completed {
		if c {
			n++
		}
	}
	return n, err
}

// create calls CreateMatch for a formation and maps the seats back.
func (m *Matchmaker) create(ctx context.Context, q queues.Queue, f *store.Formation) (*store.Outcome, error) {
	req := MatchRequest{RequestID: f.RequestID(), RuleSet: q.RuleSet, TimeControl: q.TimeControl, Seed: f.Seed}
	for i, e := range f.Entries {
		req.Players[i] = e.Player
	}
	// A call once started runs to its own timeout even when the round is
	// cancelled (shutdown): finishing the formation now spares its players
	// the wait for recovery.
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), m.cfg.CreateTimeout)
	defer cancel()
	match, err := m.matches.CreateMatch(cctx, req)
	if err != nil {
		return nil, err
	}
	o := &store.Outcome{Formation: f, MatchID: match.ID}
	for i, e := range f.Entries {
		seat, ok := match.Seats[e.Player.ID]
		if !ok || seat < 1 || seat > 4 {
			return nil, fmt.Errorf("match %s has no seat for player %s", match.ID, e.Player.ID)
		}
		o.Seats[i] = seat
	}
	return o, nil
}

// createAll creates the formations' matches concurrently (sem bounds the calls in flight) and returns
// their outcomes by index, nil where CreateMatch failed; failures are logged with failMsg.
func (m *Matchmaker) createAll(ctx context.Context, q queues.Queue, fs []*store.Formation, sem chan struct{}, failMsg string) []*store.Outcome {
	outs := make([]*store.Outcome, len(fs))
	var wg sync.WaitGroup
	for i, f := range fs {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			o, err := m.create(ctx, q, f)
			if err != nil {
				m.log.WarnContext(ctx, failMsg, "queue", q.Name(), "formation", f.ID, "err", err)
				return
			}
			outs[i] = o
		})
	}
	wg.Wait()
	return outs
}

// recover finishes or releases the queue's overdue formations.
func (m *Matchmaker) recover(ctx context.Context, q queues.Queue, now time.Time) (int, error) {
	n := 0
	for {
		fs, err := m.store.LeaseOverdue(ctx, q.Name(), now, 256)
		if err != nil {
			return n, err
		}
		if len(fs) == 0 {
			return n, nil
		}
		n += len(fs)
		sem := make(chan struct{}, max(m.cfg.Concurrency, 1))
		outs := m.createAll(ctx, q, fs, sem, "recovering formation: create match failed, releasing its tickets")
		var done []store.Outcome
		for i, o := range outs {
			if o != nil {
				done = append(done, *o)
				continue
			}
			if _, err := m.store.Release(ctx, fs[i]); err != nil {
				return n, err
			}
		}
		if len(done) > 0 {
			if _, err := m.store.Complete(ctx, q.Name(), done, m.now()); err != nil {
				return n, err
			}
		}
		m.log.InfoContext(ctx, "recovered overdue formations", "queue", q.Name(),
			"completed", len(done), "released", len(fs)-len(done))
		if len(fs) < 256 {
			return n, nil
		}
	}
}
