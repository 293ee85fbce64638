package match

import (
	"testing"
)

func FuzzRecordUnmarshal(f *testing.F) {
	f.Add((&record{Status: StatusActive}).marshal())
	f.Add([]byte{1})
	f.Fuzz(func(t *testing.T, b []byte) {
		var r record
		if err := r.unmarshal(b); err != nil {
			return
		}
		var again record
		if err := again.unmarshal(r.marshal()); err != nil {
			t.Fatalf("re-encoded record does not decode: %v", err)
		}
	})
}

func FuzzDecodeStoredReply(f *testing.F) {
	f.Add([]byte("h2-h3\x00"), "h2-h3")
	f.Fuzz(func(t *testing.T, b []byte, move string) {
		_, _ = decodeStoredReply(b, move) // must not panic
	})
}
