package sessions

import (
	"context"
	"fmt"

	"github.com/redis/go-redis/v9"

	"github.com/fourkingdoms/fourkingdoms/pkg/eventstream"
	eventsv1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/events/v1"
)

// LinkStream publishes PlayerLinked events (a guest linked to an account,
// AuthService.LinkGuest) to a Redis stream, in the entry layout of
// eventstream.PlayerLinked; the rating service consumes them.
type LinkStream struct {
	rdb    redis.UniversalClient
	key    string
	maxLen int64
}

// NewLinkStream returns a publisher to the stream key, capped at about
// maxLen entries (0: uncapped).
func NewLinkStream(rdb redis.UniversalClient, key string, maxLen int64) *LinkStream {
	return &LinkStream{rdb: rdb, key: key, maxLen: maxLen}
}

// Publish appends ev to the stream.
func (l *LinkStream) Publish(ctx context.Context, ev *eventsv1.PlayerLinked) error {
	values, err := eventstream.PlayerLinked().Encode(ev)
	if err != nil {
		return err
	}
	args := &redis.XAddArgs{Stream: l.key, Values: values}
	if l.maxLen > 0 {
		args.MaxLen, args.Approx = l.maxLen, true
	}
	if err := l.rdb.XAdd(ctx, args).Err(); err != nil {
		return fmt.Errorf("publish link of %s to %s: %w", ev.GetGuestPlayerId(), ev.GetAccountPlayerId(), err)
	}
	return nil
}
