// Package rules is the rules engine of Four Kingdoms, free-for-all chess for
// four players on the 160-square cross-shaped board. The rules it plays, of
// both rule sets, are written down in docs/rules.md; its design is in
// docs/rules-engine.md.
//
// It provides two layers:
//
//   - Position: the board, each seat's status (live, zombie or out: dead
//     pieces neither move nor attack), legal move generation for any seat,
//     make/unmake that restores the position exactly (hash included), and
//     perft. It allocates nothing per move. Of points it only holds what
//     FEN4 carries: each seat's points and the frozen result points of
//     seats that resigned or ran out of time (Game keeps its score there,
//     so that ParseFEN4 and FEN4 carry it). Make and Unmake never change
//     them and move generation never reads them; likewise it keeps the
//     no-progress ply clock but does not act on it. Scoring, the end of the
//     game and the result belong to Game.
//   - Game: a whole game on top of a Position: points, checks, immediate
//     mates of players who are not to move, king captures, eliminations,
//     stalemate on turn, resignation and time loss with zombie armies whose
//     random moves come from the game's seed, end-of-game bonuses, results
//     and ranking, FEN4, PGN4 and a compact binary encoding.
//
// Replay checks a game record (PGN4, such as the largest site's exports)
// move by move against the engine: legality, marks, captures, points and
// the ending.
//
// Every rule that differs between variants is a field of RuleSet; the
// default "fourkingdoms" and "chesscom-ffa" are provided by RuleSetByName.
//
// # Board representation
//
// Squares are indices into a padded mailbox of 16 columns by 20 rows. The 14
// files a..n sit in columns 0..13; columns 14 and 15 are off-board sentinels
// shared by the east and west edges (a knight jump off either edge lands on
// one of them). Three sentinel rows below rank 1 and above rank 14 absorb
// the longest knight jumps, and the twelve 3x3 corner squares are sentinels
// too, so move generation never checks bounds: a slider stops at the first
// non-empty cell and an off-board cell is never empty.
//
//	        col: 0  1  2  3  4  5  6  7  8  9 10 11 12 13 | 14 15
//	row 17-19    #  #  #  #  #  #  #  #  #  #  #  #  #  # |  #  #   sentinel rows
//	row 16 (14)  #  #  #  d  e  f  g  h  i  j  k  #  #  # |  #  #
//	row 15 (13)  #  #  #  d  .  .  .  .  .  .  k  #  #  # |  #  #
//	row 14 (12)  #  #  #  d  .  .  .  .  .  .  k  #  #  # |  #  #
//	row 13 (11)  a  b  c  d  .  .  .  .  .  .  k  l  m  n |  #  #
//	   ...                  (ranks 4..11: all 14 files)
//	row  6  (4)  a  b  c  d  .  .  .  .  .  .  k  l  m  n |  #  #
//	row  5  (3)  #  #  #  d  .  .  .  .  .  .  k  #  #  # |  #  #
//	row  4  (2)  #  #  #  d  .  .  .  .  .  .  k  #  #  # |  #  #
//	row  3  (1)  #  #  #  d  e  f  g  h  i  j  k  #  #  # |  #  #
//	row 0-2      #  #  #  #  #  #  #  #  #  #  #  #  #  # |  #  #   sentinel rows
//
//	index(file, rank) = (rank+3)*16 + file   (file a = 0, rank 1 = 0)
//	steps: north +16, south -16, east +1, west -1
//
// A cell holds 0 (empty), 0xFF (off board) or a piece byte:
// bits 0-2 the kind, bit 3 "promoted queen", bits 4-5 the owning seat.
//
// # Invariants
//
// Position.Make followed by Position.Unmake restores the position exactly:
// placement, rights, en passant squares, clock, seat to move and hash (only
// the internal order of the piece lists may differ, which no result depends
// on: Game sorts move lists before using an index into them). A Game's state is a pure function of its rule set, start
// position, seed and the list of applied actions (moves, resignations, time
// losses), which is what the binary encoding stores.
package rules
