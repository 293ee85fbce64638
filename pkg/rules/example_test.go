package rules_test

import (
	"fmt"

	"github.com/fourkingdoms/fourkingdoms/pkg/rules"
)

func Example() {
	rs, _ := rules.RuleSetByName("fourkingdoms")
	g, err := rules.NewGame(rs, 42, "")
	if err != nil {
		panic(err)
	}
	m, err := g.ParseMove("h2h4")
	if err != nil {
		panic(err)
	}
	eff, err := g.Play(rules.Red, m)
	if err != nil {
		panic(err)
	}
	// h2-h4 opens the diagonal g1-n8: Blue's pawn m7 is pinned.
	fmt.Println(eff.Moves[0].Text, "then", g.ToMove(), "to move with", len(g.LegalMoves(g.ToMove())), "moves")

	// Yellow resigns out of turn: its army becomes a zombie whose moves
	// the game plays from the seed when Yellow's turn comes.
	if _, err := g.Resign(rules.Yellow); err != nil {
		panic(err)
	}
	m, _ = g.ParseMove("m4-l4")
	eff, _ = g.Play(rules.Blue, m)
	fmt.Println(len(eff.Moves), "moves applied; zombie:", eff.Moves[1].Zombie, "; now", g.ToMove(), "to move")
	fmt.Println(g.Status(rules.Yellow))
	// Output:
	// h2-h4 then Blue to move with 18 moves
	// 2 moves applied; zombie: true ; now Green to move
	// zombie
}
