package store

import (
	"fmt"
	"testing"

	"github.com/fourkingdoms/fourkingdoms/pkg/redisconn"
	"github.com/fourkingdoms/fourkingdoms/pkg/redisconn/scripttest"
	"github.com/fourkingdoms/fourkingdoms/pkg/redistest"
)

// scriptOf is a script with its layout and Lua body.
type scriptOf struct {
	layout redisconn.Layout
	body   string
	script *redisconn.Script
}

// TestScriptLayouts checks, for every script, that its Lua refers only to
// the slots its layout declares, that its Go builder fills exactly those,
// and that one run on real Redis accepts what the builder passes.
func TestScriptLayouts(t *testing.T) {
	for _, kind := range redistest.Kinds() {
		t.Run(kind.Name, func(t *testing.T) {
			t.Parallel()
			rdb, prefix := kind.Client(t)
			tag := prefix + "{mm:q}:"
			ids := [4]string{"t1", "t2", "t3", "t4"}
			tickets := [4]string{tag + "t:t1", tag + "t:t2", tag + "t:t3", tag + "t:t4"}
			var cases []scripttest.Case
			add := func(name string, s scriptOf, keys []string, args []any) {
				cases = append(cases, scripttest.Case{Name: name, Layout: s.layout, Body: s.body, Script: s.script, Keys: keys, Args: args})
			}
			for i, id := range ids {
				k, a := enqueueArgs(tag+"w", tickets[i], id, []byte(`{}`), "p"+id, 1000, 60000)
				add("enqueue", scriptOf{enqueueLayout, enqueueLua, enqueueScript}, k, a)
			}
			k, a := rateArgs(tag+"w", tag+"r", 2)
			a = append(a, "t1", "1500", "t2", "1600")
			add("rate", scriptOf{rateLayout, rateLua, rateScript}, k, a)
			k, a = claimArgs(tag+"w", tag+"r", tag+"forming", 5000, 60000, 1)
			k, a = claimGroup(k, a, tag+"f:f1", "f1", []byte(`{}`), tickets, ids)
			add("claim", scriptOf{claimLayout, claimLua, claimScript}, k, a)
			k, a = leaseArgs(tag+"forming", tag+"f:f1", "f1", 5000, 6000)
			add("lease", scriptOf{leaseLayout, leaseLua, leaseScript}, k, a)
			k, a = releaseArgs(tag+"forming", tag+"w", tag+"f:f1", "f1", tickets, ids, [4][]byte{[]byte("1"), []byte("2"), []byte("3"), []byte("4")})
			add("release", scriptOf{releaseLayout, releaseLua, releaseScript}, k, a)
			k, a = claimArgs(tag+"w", tag+"r", tag+"forming", 5000, 60000, 1)
			k, a = claimGroup(k, a, tag+"f:f2", "f2", []byte(`{}`), tickets, ids)
			add("claim again", scriptOf{claimLayout, claimLua, claimScript}, k, a)
			k, a = completeArgs(tag+"forming", tag+"waits", tag+"formed", tag+"played:1", 60000, 60000, 100, 60000, 60000, 1)
			k, a = completeGroup(k, a, tag+"f:f2", tag+"match:m1", "f2", "m1", tickets, [4]int{1, 2, 3, 4}, [4]string{"1:1", "1:2", "1:3", "1:4"},
				[4]string{"p1", "p2", "p3", "p4"}, [4]string{`{"m":"m1"}`, `{"m":"m1"}`, "", `{"m":"m1"}`})
			add("complete", scriptOf{completeLayout, completeLua, completeScript}, k, a)
			k, a = enqueueArgs(tag+"w", tag+"t:t5", "t5", []byte(`{}`), "p5", 1000, 60000)
			add("enqueue t5", scriptOf{enqueueLayout, enqueueLua, enqueueScript}, k, a)
			k, a = finishArgs(tag+"w", tag+"r", Cancelled, 60000, []string{tag + "t:t5", tag + "t:t1"}, []string{"t5", "t1"})
			add("finish", scriptOf{finishLayout, finishLua, finishScript}, k, a)
			ptr := prefix + "mm:player:{p1}"
			if err := rdb.Set(t.Context(), ptr, "t1|1", 0).Err(); err != nil {
				t.Fatal(err)
			}
			k, a = replacePointerArgs(ptr, "t1|1", "t9|2", 60000)
			add("replace pointer", scriptOf{replacePointerLayout, replacePointerLua, replacePointerScript}, k, a)
			k, a = dropPointerArgs(ptr, "t9")
			add("drop pointer", scriptOf{dropPointerLayout, dropPointerLua, dropPointerScript}, k, a)

			lobby := prefix + "{mm:bots/greedy}:"
			k, a = enqueueArgs(lobby+"w", lobby+"t:b1", "b1", []byte(`{}`), "pb1", 1000, 60000)
			add("enqueue bot", scriptOf{enqueueLayout, enqueueLua, enqueueScript}, k, a)
			k, a = reserveArgs(lobby+"w", lobby+"res:h", 1, "h", 60000, []string{lobby + "t:b1"}, []string{"b1"})
			add("reserve bots", scriptOf{reserveLayout, reserveLua, reserveScript}, k, a)
			k, a = releaseBotsArgs(lobby+"w", lobby+"res:h", "h", []string{lobby + "t:b1"}, []string{"b1"}, []string{`{}`})
			add("release bots", scriptOf{releaseBotsLayout, releaseBotsLua, releaseBotsScript}, k, a)
			k, a = reserveArgs(lobby+"w", lobby+"res:h", 1, "h", 60000, []string{lobby + "t:b1"}, []string{"b1"})
			add("reserve bots again", scriptOf{reserveLayout, reserveLua, reserveScript}, k, a)
			k, a = completeBotsArgs("h", "m1", 60000, []string{lobby + "t:b1"}, []int{2})
			add("complete bots", scriptOf{completeBotsLayout, completeBotsLua, completeBotsScript}, k, a)

			table := prefix + "mm:table:{T}"
			if err := rdb.Set(t.Context(), table, `{"code":"T","host":"h","st":"O","v":1,"seq":1,"seats":[{"pl":{"p":"h"},"j":1},{},{"bot":true,"lvl":"greedy"},{}]}`, 0).Err(); err != nil {
				t.Fatal(err)
			}
			k, a = joinArgs(table, []byte(`{"p":"a"}`), "a", 0, 1000, 60000)
			add("join table", scriptOf{joinLayout, joinLua, joinScript}, k, a)
			k, a = leaveArgs(table, "a", 1000, 60000, 1000)
			add("leave table", scriptOf{leaveLayout, leaveLua, leaveScript}, k, a)
			k, a = beginStartArgs(table, "h", 3, []byte(`{"rid":"r","seed":"1"}`), 1000, 60000)
			add("begin start", scriptOf{beginStartLayout, beginStartLua, beginStartScript}, k, a)
			k, a = finishStartArgs(table, "m1", 1000, 60000)
			add("finish start", scriptOf{finishStartLayout, finishStartLua, finishStartScript}, k, a)
			k, a = guessArgs(prefix+"mm:guess:{p}", 60000)
			add("count guess", scriptOf{guessLayout, guessLua, guessScript}, k, a)
			k, a = requeueArgs(tag+"match:m1", tag+"w", tag+"t:t6", "r:p1", "t6", []byte(`{}`), "p1", 1000, 70000, 60000)
			add("requeue", scriptOf{requeueLayout, requeueLua, requeueScript}, k, a)
			k, a = adoptArgs(tag+"match:m1", tag+"w", tag+"t:t6", "r:p2", "t6", []byte(`{}`), []byte(`{"e":1}`), 1, 60000)
			add("adopt", scriptOf{adoptLayout, adoptLua, adoptScript}, k, a)

			got := scripttest.Run(t, rdb, cases...)
			want := []string{"1", "1", "1", "1", "1", "[1]", "{}", "1", "[1]", "[1]", "1", "[1 0]", "1", "1",
				"1", `[["b1","{}"]]`, "1", `[["b1","{}"]]`, "1"}
			want = append(want, make([]string, len(cases)-2-len(want))...) // "": the tables' and the guess's replies are not checked
			want = append(want, "1", "1")
			for i := range cases {
				if g := fmt.Sprint(got[i]); i < len(want) && want[i] != "" && g != want[i] {
					t.Errorf("%s: reply %s, want %s", cases[i].Name, g, want[i])
				}
			}
		})
	}
}
