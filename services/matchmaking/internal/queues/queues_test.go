package queues

import (
	"testing"
	"time"

	"github.com/fourkingdoms/fourkingdoms/pkg/timecontrol"
)

func TestParse(t *testing.T) {
	t.Parallel()
	// Anti-teaming is on by default.
	def := func(q Queue) Queue { q.Apart, q.ApartGames = DefaultApart, DefaultApartGames; return q }
	tests := []struct {
		spec    string
		want    Queue
		name    string
		wantErr bool
	}{
		{spec: "fourkingdoms 5+5", want: def(Queue{RuleSet: "fourkingdoms", TimeControl: timecontrol.TimeControl{Initial: 5 * time.Minute, Increment: 5 * time.Second}}), name: "fourkingdoms/5+5"},
		{spec: "fourkingdoms 1|15 d", want: def(Queue{RuleSet: "fourkingdoms", TimeControl: timecontrol.TimeControl{Initial: time.Minute, Delay: 15 * time.Second}}), name: "fourkingdoms/1|15 d"},
		{spec: " chesscom-ffa  1+0 bots=20s ", want: def(Queue{RuleSet: "chesscom-ffa", TimeControl: timecontrol.TimeControl{Initial: time.Minute}, BotFillAfter: 20 * time.Second}), name: "chesscom-ffa/1+0"},
		{spec: "fourkingdoms 3|2 d bots=1m", want: def(Queue{RuleSet: "fourkingdoms", TimeControl: timecontrol.TimeControl{Initial: 3 * time.Minute, Delay: 2 * time.Second}, BotFillAfter: time.Minute}), name: "fourkingdoms/3|2 d"},
		{spec: "fourkingdoms 5+5 apart=30m apart-games=5", want: Queue{RuleSet: "fourkingdoms", TimeControl: timecontrol.TimeControl{Initial: 5 * time.Minute, Increment: 5 * time.Second}, Apart: 30 * time.Minute, ApartGames: 5}, name: "fourkingdoms/5+5"},
		{spec: "fourkingdoms 5+5 apart=0", want: Queue{RuleSet: "fourkingdoms", TimeControl: timecontrol.TimeControl{Initial: 5 * time.Minute, Increment: 5 * time.Second}, ApartGames: DefaultApartGames}, name: "fourkingdoms/5+5"},
		{spec: "fourkingdoms 5+5 apart=-1m", wantErr: true},
		{spec: "fourkingdoms 5+5 apart=soon", wantErr: true},
		{spec: "fourkingdoms 5+5 apart-games=0", wantErr: true},
		{spec: "fourkingdoms 5+5 apart-games=11", wantErr: true},
		{spec: "fourkingdoms", wantErr: true},
		{spec: "fourkingdoms 5", wantErr: true},
		{spec: "fourkingdoms 0+5", wantErr: true},
		{spec: "fourkingdoms 5+x", wantErr: true},
		{spec: "fourkingdoms 1|15", wantErr: true},
		{spec: "fourkingdoms 5+5 bots=soon", wantErr: true},
		{spec: "fourkingdoms 5+5 colour=red", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.spec, func(t *testing.T) {
			t.Parallel()
			got, err := Parse(tt.spec)
			if tt.wantErr {
				if err == nil {
					t.Fatalf("Parse(%q) = %+v, want an error", tt.spec, got)
				}
				return
			}
			if err != nil || got != tt.want || got.Name() != tt.name {
				t.Fatalf("Parse(%q) = %+v (%q), %v; want %+v (%q)", tt.spec, got, got.Name(), err, tt.want, tt.name)
			}
		})
	}
}

func TestParseList(t *testing.T) {
	t.Parallel()
	qs, err := ParseList("fourkingdoms 5+5; fourkingdoms 1|15 d\nchesscom-ffa 1+0;")
	if err != nil || len(qs) != 3 || qs[1].Name() != "fourkingdoms/1|15 d" {
		t.Fatalf("ParseList = %+v, %v", qs, err)
	}
	if _, err := ParseList("fourkingdoms 5+5;fourkingdoms  5+5"); err == nil {
		t.Error("duplicate queue accepted")
	}
	if _, err := ParseList(" ; "); err == nil {
		t.Error("empty list accepted")
	}
}
