package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	gamev1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/game/v1"
	matchmakingv1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/matchmaking/v1"
)

func TestSeatFlag(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]gamev1.Seat{"": 0, "red": gamev1.Seat_SEAT_RED, "Green": gamev1.Seat_SEAT_GREEN} {
		if got, err := seatFlag(in); err != nil || got != want {
			t.Errorf("seatFlag(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, bad := range []string{"purple", "unspecified", "1"} {
		if _, err := seatFlag(bad); err == nil {
			t.Errorf("seatFlag(%q) accepted", bad)
		}
	}
}

func TestBotSeats(t *testing.T) {
	t.Parallel()
	var b botSeats
	if err := b.Set("green=greedy"); err != nil {
		t.Fatal(err)
	}
	if len(b) != 1 || b[0].GetSeat() != gamev1.Seat_SEAT_GREEN || b[0].GetMode() != matchmakingv1.SeatMode_SEAT_MODE_BOT || b[0].GetBotLevel() != "greedy" {
		t.Errorf("bot seats = %v", b)
	}
	for _, bad := range []string{"green", "green=genius", "mauve=greedy"} {
		if err := b.Set(bad); err == nil {
			t.Errorf("--bot %s accepted", bad)
		}
	}
}

func TestTableNeedsASubcommandAndACode(t *testing.T) {
	t.Parallel()
	env := func(k string) string {
		if k == "FK_HOME" {
			return t.TempDir()
		}
		return ""
	}
	for _, args := range [][]string{{"table"}, {"table", "frobnicate"}, {"table", "join"}, {"table", "start", "A", "B"}} {
		var out bytes.Buffer
		if err := run(context.Background(), args, env, strings.NewReader(""), &out); err == nil {
			t.Errorf("fk %s succeeded", strings.Join(args, " "))
		}
	}
	var out bytes.Buffer
	if err := run(context.Background(), []string{"table", "help"}, env, strings.NewReader(""), &out); err != nil || !strings.Contains(out.String(), "--bots LEVEL") {
		t.Errorf("fk table help = %v:\n%s", err, out.String())
	}
}
