package botpool

import (
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/fourkingdoms/fourkingdoms/cmd/internal/brain"
	"github.com/fourkingdoms/fourkingdoms/cmd/internal/client"
	gamev1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/game/v1"
	matchv1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/match/v1"
)

func TestHopeless(t *testing.T) {
	t.Parallel()
	red, blue := gamev1.Seat_SEAT_RED, gamev1.Seat_SEAT_BLUE
	match := func(redPieces int, redPoints, bluePoints int32) *matchv1.Match {
		m := &matchv1.Match{Seats: []*matchv1.SeatState{
			{Seat: red, Status: gamev1.SeatStatus_SEAT_STATUS_LIVE, ResultPoints: redPoints},
			{Seat: blue, Status: gamev1.SeatStatus_SEAT_STATUS_LIVE, ResultPoints: bluePoints},
		}}
		for range redPieces {
			m.Pieces = append(m.Pieces, &matchv1.PlacedPiece{Seat: red})
		}
		m.Pieces = append(m.Pieces, &matchv1.PlacedPiece{Seat: blue}, &matchv1.PlacedPiece{Seat: red, Dead: true})
		return m
	}
	tests := []struct {
		name string
		m    *matchv1.Match
		want bool
	}{
		{"bare king behind", match(1, 10, 30), true},
		{"bare king ahead", match(1, 40, 30), false},
		{"pieces left", match(3, 0, 30), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := hopeless(tt.m, red); got != tt.want {
				t.Errorf("hopeless = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestClockShareIsASmallPartOfTheClock(t *testing.T) {
	t.Parallel()
	m := &matchv1.Match{Clocks: []*gamev1.Clock{{Seat: gamev1.Seat_SEAT_GREEN, Remaining: durationpb.New(40 * time.Second)}}}
	if got := clockShare(m, gamev1.Seat_SEAT_GREEN); got != 2*time.Second {
		t.Errorf("clockShare = %v, want 2s", got)
	}
}

func TestConfigValidate(t *testing.T) {
	t.Parallel()
	ok := Config{
		Endpoints: client.Endpoints{Matchmaking: "a:1", Match: "a:2", Rating: "a:3"},
		Size:      1, Queues: []string{"fourkingdoms/5+5"}, Level: brain.Greedy, Tokens: GuestTokens(),
	}
	if err := ok.Validate(); err != nil {
		t.Fatalf("valid config: %v", err)
	}
	lobbyOnly := ok
	lobbyOnly.Queues, lobbyOnly.Lobby = nil, 1
	if err := lobbyOnly.Validate(); err != nil {
		t.Errorf("a pool waiting only in the lobby: %v", err)
	}
	for name, mutate := range map[string]func(*Config){
		"no size":      func(c *Config) { c.Size = 0 },
		"no queue":     func(c *Config) { c.Queues = nil },
		"bad level":    func(c *Config) { c.Level = "genius" },
		"no tokens":    func(c *Config) { c.Tokens = nil },
		"no match":     func(c *Config) { c.Endpoints.Match = "" },
		"neg think":    func(c *Config) { c.Think = -time.Second },
		"lobby > size": func(c *Config) { c.Lobby = 2 },
		"neg lobby":    func(c *Config) { c.Lobby = -1 },
	} {
		c := ok
		mutate(&c)
		if c.Validate() == nil {
			t.Errorf("%s: Validate accepted %+v", name, c)
		}
	}
}

func TestBotID(t *testing.T) {
	t.Parallel()
	tests := []struct{ name, want string }{
		{"Bot Greedy 4", "bot-greedy-4-2bf514"},
		{"Greedy  4", "bot-greedy-4-2bf514"},
		{"Botanist", "bot-botanist-2bf514"},
	}
	for _, tt := range tests {
		if got := botID(tt.name, 0xAB2BF514); got != tt.want {
			t.Errorf("botID(%q) = %q, want %q", tt.name, got, tt.want)
		}
	}
}
