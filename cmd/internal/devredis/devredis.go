// Package devredis serves an in-process Redis-compatible store
// (github.com/alicebob/miniredis) on a loopback port: the default store of
// the local cluster when no real Redis is configured. It is for `make run`
// only, never for tests of the services or production.
//
// miniredis lacks sharded pub/sub, which the match service uses to tell
// watchers about new events; this package adds SPUBLISH, SSUBSCRIBE and
// SUNSUBSCRIBE on top of miniredis's ordinary channels (one Redis node owns
// every slot, so sharded and ordinary channels behave the same). Its Lua
// lacks Redis's built-in struct library, so the services' scripts do not use
// it. miniredis also does not enforce CROSSSLOT, so it cannot catch a script touching keys
// of two hash slots: that is what the real-Redis integration tests are for.
//
// miniredis keeps no data across restarts; Save and Load (snapshot.go) write
// the whole store to a file and read it back, so that `make run` keeps its
// ratings and games.
package devredis

import (
	"fmt"
	"sync"

	"github.com/alicebob/miniredis/v2"
	"github.com/alicebob/miniredis/v2/server"
)

// Start serves a new empty store on addr ("127.0.0.1:0" for a free port).
// Close the returned store when done.
func Start(addr string) (*miniredis.Miniredis, error) {
	m := miniredis.NewMiniRedis()
	if err := m.StartAddr(addr); err != nil {
		return nil, fmt.Errorf("embedded store on %s: %w", addr, err)
	}
	// The commands can only be added to a started server; nobody knows its
	// address yet, so no client can have used them before.
	if err := addShardedPubSub(m); err != nil {
		m.Close()
		return nil, fmt.Errorf("embedded store: %w", err)
	}
	return m, nil
}

func addShardedPubSub(m *miniredis.Miniredis) error {
	srv := m.Server()
	// SPUBLISH is PUBLISH: it reaches the sharded subscribers below, which
	// are ordinary miniredis subscribers. Scripts call it too (redis.call
	// dispatches through the server).
	if err := srv.Register("SPUBLISH", func(c *server.Peer, _ string, args []string) {
		srv.Dispatch(c, append([]string{"PUBLISH"}, args...))
	}); err != nil {
		return err
	}
	subs := &shardSubs{m: m, peers: map[*server.Peer]*shardSub{}}
	if err := srv.Register("SSUBSCRIBE", subs.subscribe); err != nil {
		return err
	}
	return srv.Register("SUNSUBSCRIBE", subs.unsubscribe)
}

// shardSubs tracks the sharded subscriptions of every connection.
type shardSubs struct {
	m     *miniredis.Miniredis
	mu    sync.Mutex
	peers map[*server.Peer]*shardSub
}

// shardSub is one connection's sharded subscriptions: a miniredis
// subscriber whose messages a goroutine writes to the connection as
// "smessage" pushes.
type shardSub struct {
	sub  *miniredis.Subscriber
	done chan struct{}
}

func (s *shardSubs) get(c *server.Peer) *shardSub {
	s.mu.Lock()
	defer s.mu.Unlock()
	if ss := s.peers[c]; ss != nil {
		return ss
	}
	ss := &shardSub{sub: s.m.NewSubscriber(), done: make(chan struct{})}
	s.peers[c] = ss
	go func() {
		for {
			select {
			case msg := <-ss.sub.Messages():
				c.Block(func(w *server.Writer) {
					w.WritePushLen(3)
					w.WriteBulk("smessage")
					w.WriteBulk(msg.Channel)
					w.WriteBulk(msg.Message)
					w.Flush()
				})
			case <-ss.done:
				return
			}
		}
	}()
	c.OnDisconnect(func() {
		s.mu.Lock()
		delete(s.peers, c)
		s.mu.Unlock()
		// miniredis publishes while holding its lock and blocks until the
		// message is received, so keep draining until no channel is left
		// (Unsubscribe waits for a publish in flight), then stop. The
		// subscriber object stays registered but empty: a few bytes per
		// closed connection, acceptable for a development store.
		go func() {
			for _, ch := range ss.sub.Channels() {
				ss.sub.Unsubscribe(ch)
			}
			close(ss.done)
		}()
	})
	return ss
}

func (s *shardSubs) subscribe(c *server.Peer, cmd string, args []string) {
	if len(args) == 0 {
		c.WriteError("ERR wrong number of arguments for '" + cmd + "' command")
		return
	}
	ss := s.get(c)
	for _, ch := range args {
		n := ss.sub.Subscribe(ch)
		c.Block(func(w *server.Writer) {
			w.WritePushLen(3)
			w.WriteBulk("ssubscribe")
			w.WriteBulk(ch)
			w.WriteInt(n)
		})
	}
}

func (s *shardSubs) unsubscribe(c *server.Peer, _ string, args []string) {
	ss := s.get(c)
	if len(args) == 0 {
		args = ss.sub.Channels()
	}
	for _, ch := range args {
		n := ss.sub.Unsubscribe(ch)
		c.Block(func(w *server.Writer) {
			w.WritePushLen(3)
			w.WriteBulk("sunsubscribe")
			w.WriteBulk(ch)
			w.WriteInt(n)
		})
	}
}
