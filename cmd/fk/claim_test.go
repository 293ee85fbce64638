package main

import (
	"strings"
	"testing"

	gamev1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/game/v1"
)

// TestClaimOffered: fk offers "claim" exactly when docs/rules.md 8.3
// allows it: the rule set has claims, two live players, a lead of more
// than 20.
func TestClaimOffered(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name    string
		ruleSet string
		live    int // seats Red.. that stay live; the rest resigned
		red     int32
		green   int32 // Green stays live when live == 2 (Red and Green)
		seat    gamev1.Seat
		why     string // "" when offered, else a word of the refusal
		server  bool   // the snapshot's can_claim_win
	}{
		{"leader by 21", "chesscom-ffa", 2, 50, 29, gamev1.Seat_SEAT_RED, "", false},
		{"lead of 20", "chesscom-ffa", 2, 49, 29, gamev1.Seat_SEAT_RED, "more than 20", false},
		{"trailing player", "chesscom-ffa", 2, 50, 29, gamev1.Seat_SEAT_GREEN, "lead by -21", false},
		{"four live players", "chesscom-ffa", 4, 50, 29, gamev1.Seat_SEAT_RED, "exactly 2", false},
		{"rule set without claims", "fourkingdoms", 2, 50, 29, gamev1.Seat_SEAT_RED, "no claim win", false},
		{"match with claims turned on", "fourkingdoms", 2, 50, 29, gamev1.Seat_SEAT_RED, "", true},
		{"claims turned on, lead of 20", "fourkingdoms", 2, 49, 29, gamev1.Seat_SEAT_RED, "more than 20", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			m := startMatch(t)
			m.RuleSet, m.CanClaimWin = c.ruleSet, c.server
			for _, st := range m.Seats {
				switch st.GetSeat() {
				case gamev1.Seat_SEAT_RED:
					st.Points = c.red
				case gamev1.Seat_SEAT_GREEN:
					st.Points = c.green
				default:
					if c.live == 2 {
						st.Status = gamev1.SeatStatus_SEAT_STATUS_ZOMBIE
					}
				}
			}
			why := claimRefusal(m, c.seat)
			if (why == "") != (c.why == "") || !strings.Contains(why, c.why) {
				t.Errorf("claimRefusal = %q, want %q", why, c.why)
			}
		})
	}
}
