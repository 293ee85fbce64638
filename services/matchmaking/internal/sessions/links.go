package sessions

import (
	"cmp"
	"context"
	"fmt"

	"github.com/redis/go-redis/v9"

	"github.com/fourkingdoms/fourkingdoms/pkg/eventstream"
	"github.com/fourkingdoms/fourkingdoms/pkg/redisconn"
	eventsv1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/events/v1"
)

// LinkStream publishes PlayerLinked events (a guest linked to an account,
// AuthService.LinkGuest) to a Redis stream, in the entry layout of
// eventstream.PlayerLinked; the rating service consumes them.
type LinkStream struct {
	rdb    redis.UniversalClient
	key    string
	maxLen int64
	wait   Wait
}

// NewLinkStream returns a publisher to the stream key, capped at about
// maxLen entries (0: uncapped), whose events are confirmed by
// wait.Replicas replicas when that is > 0.
func NewLinkStream(rdb redis.UniversalClient, key string, maxLen int64, wait Wait) *LinkStream {
	return &LinkStream{rdb: rdb, key: key, maxLen: maxLen, wait: wait}
}

// Publish appends ev to the stream. With wait.Replicas > 0 the append and
// a WAIT share one connection ([redisconn.WriteAndWait]; the XADD is a
// write of its own, so it needs no barrier), and an append fewer replicas
// confirmed returns an error wrapping ErrNotReplicated: it may be in the
// stream or lost in a failover, and publishing again is safe (the rating
// service applies a link once).
func (l *LinkStream) Publish(ctx context.Context, ev *eventsv1.PlayerLinked) error {
	values, err := eventstream.PlayerLinked().Encode(ev)
	if err != nil {
		return err
	}
	args := &redis.XAddArgs{Stream: l.key, Values: values}
	if l.maxLen > 0 {
		args.MaxLen, args.Approx = l.maxLen, true
	}
	if l.wait.Replicas <= 0 {
		err = l.rdb.XAdd(ctx, args).Err()
	} else {
		var add *redis.StringCmd
		n, werr := redisconn.WriteAndWait(ctx, l.rdb, l.key, l.wait.Replicas, l.wait.Timeout, func(p redis.Pipeliner) {
			add = p.XAdd(ctx, args)
		})
		err = werr
		if add != nil {
			err = cmp.Or(add.Err(), redisconn.Confirmed(n, l.wait.Replicas, l.wait.Timeout, werr))
		}
	}
	if err != nil {
		return fmt.Errorf("publish link of %s to %s: %w", ev.GetGuestPlayerId(), ev.GetAccountPlayerId(), err)
	}
	return nil
}
