package match

import (
	"errors"
	"fmt"
)

// Errors of the match service. The transport maps them to gRPC status codes
// in one place; the engine's sentinel errors (rules.ErrNotYourTurn, ...) pass
// through wrapped and are mapped there too.
var (
	// ErrInvalid: the request is malformed (the message names the field).
	ErrInvalid = errors.New("invalid request")
	// ErrNotFound: no match with that id (or it expired).
	ErrNotFound = errors.New("match not found")
	// ErrNotPlayer: the caller holds no seat in the match.
	ErrNotPlayer = errors.New("caller holds no seat in this match")
	// ErrForbidden: the caller's role may not do this.
	ErrForbidden = errors.New("not allowed")
	// ErrFinished: the match is over.
	ErrFinished = errors.New("match is over")
	// ErrTimeRanOut: the caller's clock ran out before the move arrived; the
	// time loss has been recorded instead.
	ErrTimeRanOut = errors.New("your time ran out")
	// ErrConflict: concurrent changes kept winning the race; retry.
	ErrConflict = errors.New("match changed concurrently, retry")
	// ErrMoveIDReused: a client move id was reused for a different move.
	ErrMoveIDReused = errors.New("client_move_id was already used for a different move")
	// ErrFutureVersion: a watcher asked to resume after a version the match
	// has not reached.
	ErrFutureVersion = errors.New("from_version is ahead of the match")
)

// PlyMismatchError reports an expected ply that is not the current one.
type PlyMismatchError struct {
	Expected, Current int
}

func (e *PlyMismatchError) Error() string {
	return fmt.Sprintf("expected ply %d, the match is at ply %d", e.Expected, e.Current)
}
