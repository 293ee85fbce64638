package consumer

import (
	"errors"
	"fmt"

	"github.com/fourkingdoms/fourkingdoms/pkg/eventstream"
	eventsv1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/events/v1"
	gamev1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/game/v1"
	"github.com/fourkingdoms/fourkingdoms/services/rating/internal/ladder"
)

// errUnprocessable marks entries that can never be applied; they go to the
// dead-letter stream.
var errUnprocessable = errors.New("unprocessable event")

// Decode turns the fields of a stream entry into a validated match result.
// The entry's layout is the contract of eventstream.MatchFinished. Errors
// wrap errUnprocessable.
func Decode(values map[string]any) (ladder.Result, error) {
	ev, err := eventstream.MatchFinished().Decode(values)
	if err != nil {
		return ladder.Result{}, fmt.Errorf("%w: %v", errUnprocessable, err)
	}
	res, err := FromEvent(ev)
	if err != nil {
		return ladder.Result{}, fmt.Errorf("%w: %v", errUnprocessable, err)
	}
	return res, nil
}

// FromEvent validates a MatchFinished event and returns its result.
func FromEvent(ev *eventsv1.MatchFinished) (ladder.Result, error) {
	result := ev.GetResult()
	if result.GetTermination() == gamev1.Termination_TERMINATION_ABORTED {
		return ladder.Result{}, fmt.Errorf("match %q was aborted: it has no rating", ev.GetMatchId())
	}
	if !ev.GetFinishedAt().IsValid() {
		return ladder.Result{}, fmt.Errorf("match %q: finished_at missing or invalid", ev.GetMatchId())
	}
	// Arrays by seat, not maps: this runs for every event.
	var points [ladder.Seats]int
	var hasPoints [ladder.Seats]bool
	seats := 0
	for _, sp := range result.GetPoints() {
		s, err := seat(sp.GetSeat())
		if err != nil {
			return ladder.Result{}, fmt.Errorf("match %q: points: %w", ev.GetMatchId(), err)
		}
		if hasPoints[s] {
			return ladder.Result{}, fmt.Errorf("match %q: points of seat %v given twice", ev.GetMatchId(), s)
		}
		points[s], hasPoints[s] = int(sp.GetPoints()), true
		seats++
	}
	players := make([]ladder.Participant, 0, len(ev.GetPlayers()))
	for _, sp := range ev.GetPlayers() {
		s, err := seat(sp.GetSeat())
		if err != nil {
			return ladder.Result{}, fmt.Errorf("match %q: players: %w", ev.GetMatchId(), err)
		}
		pts, ok := points[s], hasPoints[s]
		if !ok {
			return ladder.Result{}, fmt.Errorf("match %q: no points for seat %v", ev.GetMatchId(), s)
		}
		players = append(players, ladder.Participant{
			PlayerID: sp.GetPlayer().GetPlayerId(),
			Name:     sp.GetPlayer().GetDisplayName(),
			Seat:     s,
			Points:   pts,
			Bot:      sp.GetPlayer().GetIsBot(),
		})
	}
	if seats != len(players) {
		return ladder.Result{}, fmt.Errorf("match %q: points for %d seats but %d players", ev.GetMatchId(), seats, len(players))
	}
	ranking := make([]ladder.Seat, 0, len(result.GetRanking()))
	for _, gs := range result.GetRanking() {
		s, err := seat(gs)
		if err != nil {
			return ladder.Result{}, fmt.Errorf("match %q: ranking: %w", ev.GetMatchId(), err)
		}
		ranking = append(ranking, s)
	}
	return ladder.NewResult(ev.GetMatchId(), ev.GetRuleSet(), ev.GetFinishedAt().AsTime(), players, ranking)
}

func seat(s gamev1.Seat) (ladder.Seat, error) {
	switch s {
	case gamev1.Seat_SEAT_RED:
		return ladder.Red, nil
	case gamev1.Seat_SEAT_BLUE:
		return ladder.Blue, nil
	case gamev1.Seat_SEAT_YELLOW:
		return ladder.Yellow, nil
	case gamev1.Seat_SEAT_GREEN:
		return ladder.Green, nil
	}
	return 0, fmt.Errorf("invalid seat %v", s)
}
