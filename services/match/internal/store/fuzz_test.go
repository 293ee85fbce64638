package store_test

import (
	"testing"

	"github.com/fourkingdoms/fourkingdoms/services/match/internal/store"
)

func FuzzDecodeBatch(f *testing.F) {
	f.Add([]byte{0, 0, 0, 1, 'a'})
	f.Fuzz(func(t *testing.T, b []byte) {
		evs, err := store.DecodeBatch(b)
		if err != nil {
			return
		}
		n := 0
		for _, e := range evs {
			n += 4 + len(e)
		}
		if n != len(b) {
			t.Fatalf("decoded %d bytes of %d", n, len(b))
		}
	})
}

func FuzzPartitionOf(f *testing.F) {
	f.Add(store.NewID(17))
	f.Fuzz(func(t *testing.T, id string) {
		p, err := store.PartitionOf(id)
		if err == nil && (p < 0 || p >= store.Partitions) {
			t.Fatalf("partition %d of %q", p, id)
		}
	})
}
