package main

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/fourkingdoms/fourkingdoms/pkg/auth"
	"github.com/fourkingdoms/fourkingdoms/pkg/eventstream"
	eventsv1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/events/v1"
	gamev1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/game/v1"
	matchv1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/match/v1"
	"github.com/fourkingdoms/fourkingdoms/services/match/internal/store"
)

// TestUnratedMatchNeverReachesTheRatingStream finishes an unrated and a
// rated match in one instance: the rated one's MatchFinished reaches the
// global stream, the unrated one's never does, and no outbox keeps an
// entry behind.
func TestUnratedMatchNeverReachesTheRatingStream(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, e *env) {
		inst := e.start(nil)
		ctx := t.Context()
		unrated := e.create(inst.addr, func(r *matchv1.CreateMatchRequest) { r.Unrated = true })
		rated := e.create(inst.addr, nil)
		if !unrated.GetUnrated() || rated.GetUnrated() {
			t.Fatalf("created: unrated match has unrated=%v, rated match has unrated=%v", unrated.GetUnrated(), rated.GetUnrated())
		}
		// The unrated match finishes first, so that when the rated one's
		// record is on the stream, the unrated one's had every chance.
		for _, m := range []*matchv1.Match{unrated, rated} {
			for _, s := range []int{1, 2, 3} {
				c := e.client(inst.addr, e.token(players[s], auth.RolePlayer))
				if _, err := c.Resign(ctx, &matchv1.ResignRequest{MatchId: m.GetMatchId()}); err != nil {
					t.Fatalf("seat %d resigns in %s: %v", s, m.GetMatchId(), err)
				}
			}
		}
		red := e.client(inst.addr, e.token(players[0], auth.RolePlayer))
		got, err := red.GetMatch(ctx, &matchv1.GetMatchRequest{MatchId: unrated.GetMatchId()})
		if err != nil {
			t.Fatal(err)
		}
		if got.GetMatch().GetStatus() != matchv1.MatchStatus_MATCH_STATUS_FINISHED || !got.GetMatch().GetUnrated() {
			t.Fatalf("unrated match after the resignations: status %v unrated %v", got.GetMatch().GetStatus(), got.GetMatch().GetUnrated())
		}
		if mf := waitFinished(t, e, rated.GetMatchId()); mf.GetResult() == nil {
			t.Errorf("rated MatchFinished without a result: %v", mf)
		}
		// Both partitions' outboxes must drain: an unrated entry written
		// there would either be relayed (and found below) or stay stuck.
		rdb := e.rdb()
		for _, id := range []string{unrated.GetMatchId(), rated.GetMatchId()} {
			p, err := store.PartitionOf(id)
			if err != nil {
				t.Fatal(err)
			}
			outbox := fmt.Sprintf("%s{fk:p%02x}:outbox", e.prefix, p)
			deadline := time.Now().Add(10 * time.Second)
			for {
				n, err := rdb.XLen(ctx, outbox).Result()
				if err != nil {
					t.Fatal(err)
				}
				if n == 0 {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("outbox %s still holds %d entries", outbox, n)
				}
				time.Sleep(50 * time.Millisecond)
			}
		}
		fin := eventstream.MatchFinished()
		msgs, err := rdb.XRange(ctx, e.prefix+fin.Key(), "-", "+").Result()
		if err != nil {
			t.Fatal(err)
		}
		for _, msg := range msgs {
			mf, err := fin.Decode(msg.Values)
			if err != nil {
				t.Fatalf("stream entry %s: %v", msg.ID, err)
			}
			if mf.GetMatchId() == unrated.GetMatchId() {
				t.Fatalf("the unrated match %s reached the rating stream", unrated.GetMatchId())
			}
		}
		pgn, err := red.ExportGame(ctx, &matchv1.ExportGameRequest{MatchId: unrated.GetMatchId()})
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(pgn.GetPgn4(), "[Rated \"No\"]") {
			t.Errorf("unrated record has no Rated tag:\n%s", pgn.GetPgn4())
		}
		pgn, err = red.ExportGame(ctx, &matchv1.ExportGameRequest{MatchId: rated.GetMatchId()})
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(pgn.GetPgn4(), "[Rated ") {
			t.Errorf("rated record has a Rated tag:\n%s", pgn.GetPgn4())
		}
	})
}

// TestUnratedInTheCreationEvent checks that the stored creation event
// (the match's first event, which watchers replay) says the match is
// unrated, and that a repeated CreateMatch returns the match as created.
func TestUnratedInTheCreationEvent(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, e *env) {
		inst := e.start(nil)
		req := fmt.Sprintf("unrated-%d", prefixSeq.Add(1))
		m := e.create(inst.addr, func(r *matchv1.CreateMatchRequest) { r.RequestId = req; r.Unrated = true })
		again := e.create(inst.addr, func(r *matchv1.CreateMatchRequest) { r.RequestId = req }) // rated: ignored on a repeat
		if again.GetMatchId() != m.GetMatchId() || !again.GetUnrated() {
			t.Fatalf("repeated CreateMatch = %s unrated %v; want %s unrated", again.GetMatchId(), again.GetUnrated(), m.GetMatchId())
		}
		p, err := store.PartitionOf(m.GetMatchId())
		if err != nil {
			t.Fatal(err)
		}
		msgs, err := e.rdb().XRange(t.Context(), fmt.Sprintf("%s{fk:p%02x}:m:%s:ev", e.prefix, p, m.GetMatchId()), "1-0", "1-0").Result()
		if err != nil || len(msgs) != 1 {
			t.Fatalf("creation event: %v %v", msgs, err)
		}
		data, _ := msgs[0].Values["e"].(string)
		var ev eventsv1.MatchEvent
		if err := proto.Unmarshal([]byte(data), &ev); err != nil {
			t.Fatal(err)
		}
		mc := ev.GetMatchCreated()
		if mc == nil || !mc.GetUnrated() || len(mc.GetPlayers()) != 4 || mc.GetPlayers()[0].GetSeat() != gamev1.Seat_SEAT_RED {
			t.Fatalf("creation event = %v; want MatchCreated with unrated", &ev)
		}
	})
}
